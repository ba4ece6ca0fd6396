//! The kit the check families share, and import instead of each other: how a name is
//! resolved as a client's libc resolves it, a TCP connect and what its silence proves,
//! where a check looks from (vantages, replicas), MCP sessions in every era and the
//! answers they give, and the wire form of plans a carrier runs. Nothing here knows a
//! family.

pub mod answers;
pub mod connect;
pub mod door;
pub mod name;
pub mod name_tries;
pub mod presented;
pub mod refusal;
pub mod sessions;
#[cfg(test)]
pub mod testing;
pub mod upstream;
pub mod vantage;
pub mod wire;
