pub mod clients;
pub mod docker;
pub mod harness;
pub mod hostile;
pub mod openwebui;
pub mod peers;
pub mod shell;
pub mod stack;
