//! The verify stage: worker processes per GPU, a watchdog, and the validate command.

pub mod check;
pub mod engine;
pub mod plan;

#[derive(Debug, clap::Args)]
pub struct VerifyArgs {
    #[arg(long = "in")]
    pub input: std::path::PathBuf,
    #[arg(long = "out")]
    pub output: std::path::PathBuf,
}

#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    #[arg(long, default_value_t = 0)]
    pub device: usize,
}

#[derive(Debug, clap::Args)]
pub struct ValidateArgs {
    pub dir: std::path::PathBuf,
}

pub fn run_verify(_args: VerifyArgs) -> anyhow::Result<u8> {
    anyhow::bail!("verify is not implemented yet")
}

pub fn run_worker(_args: WorkerArgs) -> anyhow::Result<u8> {
    anyhow::bail!("worker is not implemented yet")
}

pub fn run_validate(_args: ValidateArgs) -> anyhow::Result<u8> {
    anyhow::bail!("validate is not implemented yet")
}
