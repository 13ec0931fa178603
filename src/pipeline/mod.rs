//! The resumable end-to-end build and the merge of sharded outputs.

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    pub config: std::path::PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    pub inputs: Vec<std::path::PathBuf>,
    #[arg(short, long)]
    pub output: std::path::PathBuf,
}

pub fn run_build(_args: BuildArgs) -> anyhow::Result<u8> {
    anyhow::bail!("build is not implemented yet")
}

pub fn run_merge(_args: MergeArgs) -> anyhow::Result<u8> {
    anyhow::bail!("merge is not implemented yet")
}
