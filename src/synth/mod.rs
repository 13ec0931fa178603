//! LLM synthesis of naive variants over an OpenAI-compatible API, with checks and a cache.

#[derive(Debug, clap::Args)]
pub struct SynthArgs {
    #[arg(long = "in")]
    pub input: std::path::PathBuf,
    #[arg(long = "out")]
    pub output: std::path::PathBuf,
}

pub fn run_synth(_args: SynthArgs) -> anyhow::Result<u8> {
    anyhow::bail!("synth is not implemented yet")
}
pub mod checks;
pub mod client;
pub mod config;
pub mod prompts;
mod syntax;
pub mod techniques;
