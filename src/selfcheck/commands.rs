//! The `kernelpair harness` subcommands: draft, check and infer (the harness module's work)
//! and selfcheck and complete (this module's, on the GPU).

use super::complete;
use crate::exit;
use crate::harness::draft;
use std::path::{Path, PathBuf};

/// The `harness` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum HarnessCommand {
    /// Draft a harness for a pair from its units and recorded launch sites.
    Draft {
        /// JSONL file holding the pair (and its units).
        units: PathBuf,
        /// Pair id (a unique prefix is enough).
        pair_id: String,
        /// Write the draft here instead of stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Parse and validate harness files, optionally against a pair's units.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// JSONL file holding the pair to check against.
        #[arg(long)]
        units: Option<PathBuf>,
        /// Pair id (a unique prefix) in `--units`.
        #[arg(long)]
        pair: Option<String>,
    },
    /// Infer a harness for every pair from the host code and kernel bodies: DIR/<pair-id>.toml.
    Infer {
        /// JSONL file holding the pairs (and their units), as extract writes it.
        units: PathBuf,
        /// Folder for the inferred harnesses.
        #[arg(short, long)]
        output: PathBuf,
        /// Suite root the units' paths are relative to (to read the host code); without
        /// it only the definitions extract recorded at each launch are used.
        #[arg(long)]
        root: Option<PathBuf>,
        /// Only the pair with this id (a prefix).
        #[arg(long)]
        pair: Option<String>,
        /// Give sizes the host code does not determine this value (and float scalars 0.5),
        /// marked ASSUMED in the file, instead of a TODO.
        #[arg(long)]
        assume_size: Option<i64>,
    },
    /// Show a captured launch (a manifest file), or with `--units` and `--pair` the harness
    /// a pair gets from a capture folder: its buffers, where their bytes come from, and each
    /// side's launches.
    Show {
        /// A manifest (`CAPDIR/launches/…/*.toml`), or a capture folder with `--pair`.
        path: PathBuf,
        /// JSONL file holding the pair.
        #[arg(long)]
        units: Option<PathBuf>,
        /// Pair id (a unique prefix) in `--units`.
        #[arg(long)]
        pair: Option<String>,
    },
    /// Let an LLM fill the TODOs of inferred harnesses (synth's client, cache and key
    /// handling; bounded repair turns): OUT/<pair-id>.toml.
    Complete(complete::CompleteCmd),
    /// Prove harnesses on the GPU: each pair's fast kernel against itself, 2 seeds × each
    /// size set; pass/fail per check (runs clean, writes every output, deterministic,
    /// non-degenerate, depends on the seed).
    Selfcheck {
        /// JSONL file holding the pairs.
        units: PathBuf,
        /// Folders with hand-written harnesses (as `verify --harness-dir`).
        #[arg(long = "harness-dir")]
        harness_dirs: Vec<PathBuf>,
        /// Folder of inferred harnesses (`<pair-id>.toml`), used where no hand-written one exists.
        #[arg(long = "inferred-dir")]
        inferred_dir: Option<PathBuf>,
        #[arg(long = "suite-root")]
        suite_root: Option<PathBuf>,
        /// Only the pair with this id (a prefix).
        #[arg(long)]
        pair: Option<String>,
        /// Seeds per size set (at least 2: the output must change with the seed).
        #[arg(long, default_value_t = 2)]
        seeds: u32,
        #[arg(long = "timeout-s", default_value_t = 30.0)]
        timeout_s: f64,
        /// Write one JSON report per pair here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write the input records here with each pair's harness path and provenance
        /// (origin + self-check result) set, for `verify --in`.
        #[arg(long = "records-out")]
        records_out: Option<PathBuf>,
        /// Command to start a worker instead of this binary (`{device}` is replaced). For tests.
        #[arg(long = "worker-cmd", hide = true)]
        worker_cmd: Option<String>,
        #[arg(long, hide = true)]
        gpus: Option<usize>,
        /// Also run each harness whose kernel ran under these compute-sanitizer tools
        /// (memcheck catches reads past a too-short buffer); one more check per tool.
        #[arg(long, value_delimiter = ',')]
        sanitizer: Vec<crate::verify::sanitizer::Tool>,
        /// compute-sanitizer's path (else PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin).
        #[arg(long = "compute-sanitizer")]
        compute_sanitizer: Option<PathBuf>,
    },
}

/// Run one `harness` subcommand.
pub fn run(cmd: HarnessCommand) -> anyhow::Result<u8> {
    match cmd {
        HarnessCommand::Draft {
            units,
            pair_id,
            output,
        } => {
            let pair = draft::find_pair(&units, &pair_id)?;
            let text = draft::draft(&pair);
            match output {
                Some(p) => crate::jsonl::write_atomic(&p, |w| {
                    use std::io::Write;
                    w.write_all(text.as_bytes())
                })?,
                None => print!("{text}"),
            }
            Ok(exit::OK)
        }
        HarnessCommand::Check { files, units, pair } => {
            let pair = match (&units, &pair) {
                (Some(u), Some(id)) => Some(draft::find_pair(u, id)?),
                (None, None) => None,
                _ => anyhow::bail!("--units and --pair go together"),
            };
            let mut failed = 0;
            for f in &files {
                let result = crate::harness::load(f).and_then(|h| {
                    if let Some(p) = &pair {
                        // A progression harness: the pair's two sides' launch lists
                        // (one side's launches for both, where the pair shares them).
                        let h = h.for_record(p)?;
                        h.check_against(p.slow.unit(), &p.fast)?;
                        return Ok(h);
                    }
                    Ok(h)
                });
                match result {
                    Ok(h) => {
                        let sets: Vec<&str> =
                            h.size_sets().iter().map(|s| s.name.as_str()).collect();
                        match &h.needs_host_loop {
                            Some(why) => println!("{}: ok, needs_host_loop: {why}", f.display()),
                            None => {
                                println!("{}: ok (size sets: {})", f.display(), sets.join(", "))
                            }
                        }
                    }
                    Err(e) => {
                        failed += 1;
                        eprintln!("{e}");
                    }
                }
            }
            Ok(if failed == 0 { exit::OK } else { exit::PARTIAL })
        }
        HarnessCommand::Infer {
            units,
            output,
            root,
            pair,
            assume_size,
        } => infer(
            &units,
            &output,
            root.as_deref(),
            pair.as_deref(),
            assume_size,
        ),
        HarnessCommand::Show { path, units, pair } => {
            match (&units, &pair) {
                (Some(u), Some(id)) => {
                    let p = draft::find_pair(u, id)?;
                    let idx = crate::capture::index::CaptureIndex::open(&path);
                    let slow = p
                        .slow
                        .unit()
                        .ok_or_else(|| anyhow::anyhow!("pair {} has no slow kernel yet", p.id))?;
                    let r = crate::capture::replay::for_pair(&idx, slow, &p.fast)
                        .map_err(|e| anyhow::anyhow!("pair {}: {e}", p.id))?;
                    print!("{}", crate::capture::replay::describe(&r));
                }
                (None, None) => {
                    let text = std::fs::read_to_string(&path)
                        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
                    let m: crate::gpu::capture::Manifest = toml::from_str(&text).map_err(|e| {
                        anyhow::anyhow!("{}: not a capture manifest: {e}", path.display())
                    })?;
                    print!("{}", m.summary());
                }
                _ => anyhow::bail!("--units and --pair go together"),
            }
            Ok(exit::OK)
        }
        c @ HarnessCommand::Selfcheck { .. } => super::run(c),
        HarnessCommand::Complete(c) => complete::run(c),
    }
}

/// `harness infer`: one line per pair (complete, or its first unknown), a summary on stderr.
fn infer(
    units: &Path,
    output: &Path,
    root: Option<&Path>,
    pair: Option<&str>,
    assume_size: Option<i64>,
) -> anyhow::Result<u8> {
    use crate::harness::infer::{infer_all, InferOptions};
    let t0 = std::time::Instant::now();
    let opts = InferOptions { assume_size };
    let res = infer_all(units, output, root, pair, &opts)?;
    let complete = res.iter().filter(|r| r.2.complete()).count();
    for (id, name, inf) in &res {
        if inf.complete() && !inf.assumed.is_empty() {
            println!("{id} {name}: complete, {} assumed", inf.assumed.len());
        } else if inf.complete() {
            println!("{id} {name}: complete");
        } else {
            let first = &inf.unknowns[0];
            println!(
                "{id} {name}: {} unknown(s), first {}: {}",
                inf.unknowns.len(),
                first.field,
                first.reason
            );
        }
    }
    eprintln!(
        "inferred {} harnesses into {} ({} complete, {} with TODOs) in {:.2} s",
        res.len(),
        output.display(),
        complete,
        res.len() - complete,
        t0.elapsed().as_secs_f64()
    );
    Ok(exit::OK)
}
