//! Walking benchmark suites (extractor descriptions in extractors/), pairing naive and optimized kernels, provenance.

#[derive(Debug, clap::Args)]
pub struct ExtractArgs {
    /// Root of the suite tree.
    pub suite_dir: std::path::PathBuf,
}

pub fn run_extract(_args: ExtractArgs) -> anyhow::Result<u8> {
    anyhow::bail!("extract is not implemented yet")
}
