//! Walking benchmark suites (extractor descriptions in extractors/), pairing naive and
//! optimized kernels, provenance, and the `extract` command.
//!
//! The `extract` orchestration lands with the cuda isolation API (branch `cuda`); the
//! parts below do not depend on it.

pub mod compile;
pub mod desc;
mod error;
pub mod pairing;
pub mod provenance;
pub mod walk;

pub use desc::SuiteDesc;
pub use error::SuiteError;
pub use walk::SourceFile;

#[derive(Debug, clap::Args)]
pub struct ExtractArgs {
    /// Root of the suite tree.
    pub suite_dir: std::path::PathBuf,
}

pub fn run_extract(_args: ExtractArgs) -> anyhow::Result<u8> {
    anyhow::bail!("extract is not implemented yet (waits for the cuda isolation API)")
}
