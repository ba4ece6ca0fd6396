pub mod docker;
pub mod harness;
pub mod peers;
pub mod stack;
pub mod hostile;
