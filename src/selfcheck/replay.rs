//! `kernelpair replay`: every unit whose kernel a capture recorded is replayed on the GPU
//! from its captured inputs, and must reproduce what the real program's launch wrote
//! (fidelity), twice alike (determinism), inside its buffers (canaries), with a clean
//! run: the self-check of a captured harness. One JSON line per unit is written as each
//! finishes, so an interrupted run keeps what it did; a rerun skips units already there.

use crate::capture::{replay, CaptureIndex};
use crate::exit;
use crate::progress::Progress;
use crate::record::{KernelUnit, Record, Status};
use crate::verify::engine::{Job, RunOptions};
use crate::verify::pool;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Debug, clap::Args)]
pub struct ReplayArgs {
    /// The capture folder (`kernelpair capture -o`).
    pub captures: PathBuf,
    /// Units of the same tree, as extract writes them.
    #[arg(long)]
    pub units: PathBuf,
    /// One JSON line per unit with a capture.
    #[arg(short, long)]
    pub out: PathBuf,
    /// Seconds one replay may take.
    #[arg(long = "timeout-s", default_value_t = 30.0)]
    pub timeout_s: f64,
    /// Worker processes per GPU. A replay is a self-check, never timed, so replays may
    /// share a device; each worker holds its own context and the captured buffers of one
    /// launch at a time.
    #[arg(long = "workers-per-gpu", default_value_t = 4)]
    pub workers_per_gpu: usize,
    /// Command to start a worker instead of this binary (`{device}` is replaced). For tests.
    #[arg(long = "worker-cmd", hide = true)]
    pub worker_cmd: Option<String>,
}

/// The outcome of one unit's replay.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    pub unit: String,
    pub kernel: String,
    pub path: String,
    /// The manifest replayed (empty when none was usable).
    pub manifest: String,
    /// `verified` when the self-check passed; else why not.
    pub status: Status,
    pub pass: bool,
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ms: Option<f64>,
    /// Launches the replay ran: more than one for a host loop replayed as it ran.
    #[serde(default = "one")]
    pub launches: usize,
}

fn one() -> usize {
    1
}

fn read_done(path: &std::path::Path) -> BTreeMap<String, ReplayReport> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<ReplayReport>(l).ok())
        .map(|r| (r.unit.clone(), r))
        .collect()
}

pub fn run_replay(args: ReplayArgs) -> anyhow::Result<u8> {
    let idx = CaptureIndex::open(&args.captures);
    for (p, why) in &idx.unreadable {
        eprintln!("warning: {}: unreadable manifest: {why}", p.display());
    }
    let units: Vec<KernelUnit> = crate::jsonl::read_records(&args.units)?
        .into_iter()
        .filter_map(|r| match r {
            Record::Unit(u) => Some(*u),
            _ => None,
        })
        .collect();
    let done = read_done(&args.out);
    let mut out = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&args.out)?;
    let mut write = |r: &ReplayReport| -> std::io::Result<()> {
        writeln!(
            out,
            "{}",
            serde_json::to_string(r).map_err(std::io::Error::other)?
        )?;
        out.flush()
    };
    let mut jobs = Vec::new();
    let mut meta: BTreeMap<usize, (&KernelUnit, String, usize)> = BTreeMap::new();
    let mut settled = 0usize;
    for (i, u) in units.iter().enumerate() {
        if done.contains_key(&u.id) {
            continue;
        }
        match replay::for_pair(&idx, u, u) {
            Err(replay::ReplayError::NotCaptured(_)) => continue,
            Ok(r) => {
                let manifest = r.manifest.display().to_string();
                let launches = r.sets.first().map_or(1, |s| s.fast.len());
                meta.insert(i, (u, manifest.clone(), launches));
                let src = crate::verify::resolve::source(u);
                jobs.push((
                    i,
                    Job {
                        pair_id: u.id.clone(),
                        slow: src.clone(),
                        fast: src,
                        harness: manifest,
                        sets: r.sets,
                        options: RunOptions {
                            seeds: 1,
                            selfcheck: true,
                            ..RunOptions::default()
                        },
                    },
                ));
            }
            Err(e) => {
                settled += 1;
                write(&ReplayReport {
                    unit: u.id.clone(),
                    kernel: u.kernel.clone(),
                    path: u.path.clone(),
                    manifest: String::new(),
                    status: Status::HarnessError,
                    pass: false,
                    reason: e.to_string(),
                    ms: None,
                    launches: 0,
                })?;
            }
        }
    }
    eprintln!(
        "replay: {} unit(s) with a captured launch ({} already reported, {settled} not replayable), {} to run",
        done.len() + settled + jobs.len(),
        done.len(),
        jobs.len()
    );
    if !jobs.is_empty() {
        let launch = pool::launcher_for(args.worker_cmd.as_deref(), Vec::new());
        let devices = match crate::gpu::probe() {
            crate::gpu::Probe::Ready { devices } => devices,
            crate::gpu::Probe::NoGpu(why) if args.worker_cmd.is_none() => {
                anyhow::bail!("replay needs a GPU: {why}")
            }
            crate::gpu::Probe::NoGpu(_) => 1,
        };
        let hello = Duration::from_secs(60);
        let per = args.workers_per_gpu.max(1).min(jobs.len());
        let workers: Vec<pool::Worker> = (0..devices)
            .flat_map(|d| std::iter::repeat_n(d, per))
            .filter_map(|d| pool::Worker::spawn(&launch, d, hello, pool::ProcessGroup::Parent).ok())
            .collect();
        if workers.is_empty() {
            anyhow::bail!("replay: no GPU worker could be started");
        }
        let progress = Progress::new("replay", jobs.len());
        let mut failed = None;
        let label = |i: usize| {
            meta.get(&i)
                .map_or(format!("unit {i}"), |(u, _, _)| u.kernel.clone())
        };
        pool::run_all(
            workers,
            jobs,
            launch,
            Duration::from_secs_f64(args.timeout_s),
            hello,
            (&progress, &label),
            |i, v| {
                let Some((u, manifest, launches)) = meta.get(&i) else {
                    return;
                };
                let r = ReplayReport {
                    unit: u.id.clone(),
                    kernel: u.kernel.clone(),
                    path: u.path.clone(),
                    manifest: manifest.clone(),
                    pass: v.status == Status::Verified,
                    status: v.status,
                    reason: v.reason.clone(),
                    ms: v.evidence.phases_ms.get("total").copied(),
                    launches: *launches,
                };
                if let Err(e) = write(&r) {
                    failed = Some(e);
                }
            },
        );
        progress.done();
        if let Some(e) = failed {
            return Err(e.into());
        }
    }
    let all = read_done(&args.out);
    let pass = all.values().filter(|r| r.pass).count();
    let kernels: BTreeSet<&str> = idx
        .manifests
        .iter()
        .filter(|(_, m)| m.skipped.is_none())
        .map(|(_, m)| m.kernel.as_str())
        .collect();
    let mut by: BTreeMap<String, usize> = BTreeMap::new();
    for r in all.values().filter(|r| !r.pass) {
        *by.entry(format!("{:?}", r.status).to_lowercase())
            .or_default() += 1;
    }
    println!(
        "replay: {pass} of {} unit(s) with a captured launch pass the self-check ({} kernel name(s) snapshotted); failures: {}",
        all.len(),
        kernels.len(),
        if by.is_empty() {
            "none".to_string()
        } else {
            by.iter().map(|(k, v)| format!("{v} {k}")).collect::<Vec<_>>().join(", ")
        }
    );
    Ok(if pass == all.len() {
        exit::OK
    } else {
        exit::PARTIAL
    })
}
