//! Training-file export: chat, prompt-completion, preference, sharegpt; splits, filters, dataset card.

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    #[arg(long = "in")]
    pub input: std::path::PathBuf,
    #[arg(long = "out")]
    pub output: std::path::PathBuf,
}

pub fn run_export(_args: ExportArgs) -> anyhow::Result<u8> {
    anyhow::bail!("export is not implemented yet")
}
