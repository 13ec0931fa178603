//! The resumable end-to-end build and the merge of sharded outputs.
//!
//! Library entry points: [`build::build`] (with the stage seams in [`stages`]) and
//! `kernelpair merge` over [`crate::dataset::merge::merge`]; the stages' `--shard i/n`
//! is [`crate::dataset::Shard`].

pub mod build;
pub mod capture;
pub mod config;
pub mod harnesses;
pub mod journal;
pub mod stages;

use crate::dataset::{merge, Shard};

use anyhow::Context;
use std::path::PathBuf;

#[derive(Debug, clap::Args)]
pub struct BuildArgs {
    /// Build config (TOML; see examples/build.toml and schemas/build-config.schema.json).
    pub config: PathBuf,
    /// Work on shard i of n (0-based) of the pairs, up to verify; outputs go to
    /// `<output>/shards/<i>-of-<n>/` for `kernelpair merge` and `kernelpair export`.
    #[arg(long)]
    pub shard: Option<Shard>,
}

#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// Shard outputs (JSONL records) to join.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    #[arg(short, long)]
    pub output: PathBuf,
}

pub fn run_build(args: BuildArgs) -> anyhow::Result<u8> {
    let cfg = config::BuildConfig::load(&args.config)?;
    let report = build::build(&cfg, args.shard, &stages::Library)
        .with_context(|| format!("build {}", args.config.display()))?;
    eprint!("{}", report.table());
    eprintln!("output: {}", report.output.display());
    Ok(report.exit)
}

pub fn run_merge(args: MergeArgs) -> anyhow::Result<u8> {
    let mut lists = Vec::new();
    let mut code = crate::exit::OK;
    for p in &args.inputs {
        match crate::jsonl::read_records(p) {
            Ok(r) => lists.push(r),
            Err(e) => {
                eprintln!("warning: skipped input {e}");
                code = crate::exit::PARTIAL;
            }
        }
    }
    if lists.is_empty() {
        anyhow::bail!("none of the {} inputs could be read", args.inputs.len());
    }
    let read = lists.len();
    let m = merge::merge(lists);
    crate::jsonl::write_records(&args.output, &m.records)?;
    eprintln!(
        "merged {read} files into {} records ({} duplicates dropped, {} ids with differing copies resolved)",
        m.records.len(),
        m.duplicates,
        m.conflicts.len()
    );
    for id in &m.conflicts {
        eprintln!("  differing copies of {id}: kept the one furthest along the pipeline");
    }
    Ok(code)
}
