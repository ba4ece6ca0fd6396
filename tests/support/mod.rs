pub mod peers;
pub mod harness;
