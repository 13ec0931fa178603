//! The command line: clap parses, then each command's `run` in its stage module does the work.

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "kernelpair",
    version,
    about = "Build verified slow/fast CUDA kernel pair datasets"
)]
pub struct Cli {
    /// Log level filter (error, warn, info, debug, trace); RUST_LOG overrides.
    #[arg(long, global = true, default_value = "warn")]
    pub log: String,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Walk a suite, isolate every __global__ kernel into a self-contained unit, pair naive/optimized kernels.
    Extract(crate::suite::ExtractArgs),
    /// Build and run a tree's programs once under the injection library, recording every
    /// kernel launch with the memory it reads and writes (a GPU and a CUDA toolkit needed).
    Capture(crate::capture::CaptureArgs),
    /// Replay each captured launch of the units' kernels on the GPU: it must reproduce
    /// what the real program wrote (the self-check of a captured harness).
    Replay(crate::selfcheck::replay::ReplayArgs),
    /// Print the isolated unit of each kernel in one .cu file and what it pulled in.
    Inspect(crate::cuda::InspectArgs),
    /// Draft or check harness files.
    #[command(subcommand)]
    Harness(crate::selfcheck::HarnessCommand),
    /// Fill empty slow slots with LLM-synthesized naive variants.
    Synth(Box<crate::synth::SynthArgs>),
    /// Compile, run and time pairs on the GPU(s).
    Verify(crate::verify::VerifyArgs),
    /// Internal: the per-GPU worker process `verify` talks to over stdin/stdout.
    #[command(hide = true)]
    Worker(crate::verify::WorkerArgs),
    /// Internal: a compile-check worker process (extract runs one per core: NVRTC
    /// compiles one program at a time per process).
    #[command(hide = true, name = "compile-worker")]
    CompileWorker,
    /// Check a contributed pair folder (slow.cu, fast.cu, harness.toml) and give a verdict.
    Validate(crate::verify::ValidateArgs),
    /// Write training files (chat, prompt-completion, preference, sharegpt) from verified pairs.
    Export(crate::export::ExportArgs),
    /// Run extract → synth → verify → export from one config, resumably.
    Build(crate::pipeline::BuildArgs),
    /// Join the outputs of sharded runs into one deterministic file.
    Merge(crate::pipeline::MergeArgs),
}

pub fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                crate::exit::USAGE
            } else {
                0
            });
        }
    };
    init_tracing(&cli.log);
    let result = match cli.command {
        Command::Extract(a) => crate::suite::run_extract(a),
        Command::Capture(a) => crate::capture::run_capture(a),
        Command::Replay(a) => crate::selfcheck::replay::run_replay(a),
        Command::Inspect(a) => crate::cuda::run_inspect(a),
        Command::Harness(c) => crate::selfcheck::commands::run(c),
        Command::Synth(a) => crate::synth::run_synth(*a),
        Command::Verify(a) => crate::verify::run_verify(a),
        Command::Worker(a) => crate::verify::run_worker(a),
        Command::CompileWorker => crate::suite::compile::serve(),
        Command::Validate(a) => crate::verify::run_validate(a),
        Command::Export(a) => crate::export::run_export(a),
        Command::Build(a) => crate::pipeline::run_build(a),
        Command::Merge(a) => crate::pipeline::run_merge(a),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(crate::exit::FATAL)
        }
    }
}

fn init_tracing(level: &str) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}
