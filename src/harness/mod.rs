//! Harness files: sizes, arguments, launches; drafting them from launch sites.

#[derive(Debug, clap::Subcommand)]
pub enum HarnessCommand {
    /// Draft a harness for a pair from its units and recorded launch sites.
    Draft {
        units: std::path::PathBuf,
        pair_id: String,
    },
}

pub fn run(_cmd: HarnessCommand) -> anyhow::Result<u8> {
    anyhow::bail!("harness is not implemented yet")
}
