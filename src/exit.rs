//! Exit codes, in one place, so every outcome maps to exactly one of them.

/// Every selected check passed (or is a known failure that still fails).
pub const OK: i32 = 0;
/// A check failed: the deployment violates its contract, or the baseline is stale.
pub const CHECK_FAILED: i32 = 1;
/// Bad command line, or an invalid scenario or suite file.
pub const USAGE: i32 = 2;
/// The harness could not get an answer: engine unreachable, namespace not enterable, or a
/// check still unreachable when the suite's deadline passed.
pub const INFRASTRUCTURE: i32 = 3;
/// Ctrl-C: the run was interrupted and what cordon had made was undone (128 + SIGINT, as
/// a shell reports a process that SIGINT ended).
pub const INTERRUPTED: i32 = 130;
