pub mod docker;
pub mod harness;
pub mod hostile;
pub mod openwebui;
pub mod peers;
pub mod stack;
