//! The one table of exit codes every command uses (also in the README).

use std::process::ExitCode;

/// Everything ran and every input was processed.
pub const OK: u8 = 0;
/// The command could not run: a missing path, an unreadable config, an I/O error on output.
pub const FATAL: u8 = 1;
/// The command line was wrong (clap's own code).
pub const USAGE: u8 = 2;
/// The run completed, but some inputs were skipped or failed (each is named in the output).
pub const PARTIAL: u8 = 3;
/// `validate`: the contributed pair was rejected.
pub const REJECTED: u8 = 4;

pub fn code(c: u8) -> ExitCode {
    ExitCode::from(c)
}
