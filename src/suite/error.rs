//! The suite stage's errors.

use std::path::PathBuf;

/// Errors of the suite stage (descriptions and the suite root); per-file problems are
/// `Skipped` records, never errors.
#[derive(Debug, thiserror::Error)]
pub enum SuiteError {
    #[error("suite directory {0} does not exist")]
    NoSuchDir(PathBuf),
    #[error("{0} is not a directory (extract takes the root folder of a suite)")]
    NotADir(PathBuf),
    #[error("unknown suite `{0}` (known: parboil, rodinia, cuda-samples, llm-c, generic, auto; or --extractor FILE)")]
    UnknownSuite(String),
    #[error("suite description {origin}: {message}")]
    Description { origin: String, message: String },
    #[error("no suite description recognises the tree")]
    NotDetected,
}
