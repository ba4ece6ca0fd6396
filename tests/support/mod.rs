pub mod peers;
pub mod harness;
pub mod docker;
pub mod stack;
