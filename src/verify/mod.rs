//! The verify stage: worker processes per GPU, a watchdog, and the validate command.
//!
//! `verify` reads pairs, settles on the CPU what needs no GPU (`artificial_slowdown` from [`slowdown`], `missing_slow`,
//! `no_harness`, `needs_host_loop`, `harness_error`), resolves each remaining pair's
//! harness for the device the workers report ([`crate::harness::Resolved`] per size set), and hands the
//! jobs to [`pool`]. Results are appended to `<out>.partial` as they finish; the final
//! output is written atomically in input order.

pub mod compare;
pub mod engine;
pub mod history;
pub mod launches;
pub mod pool;
pub mod precompile;
pub mod protocol;
pub mod resolve;
pub mod sanitizer;
mod second;
pub mod settings;
pub mod slowdown;
pub mod stats;
pub mod techniques;
pub mod validate;
pub mod verdict;

use crate::exit;
use crate::gpu::{self, Probe};
use crate::progress::Progress;
use crate::record::{Flag, HarnessOrigin, Pair, Record, Status, Verification};
use anyhow::Context;
use engine::{tool_version, Job, RunOptions};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Defaults shared by `verify`, `validate` and `build` (one place each): seconds a pair may
/// go without finishing a step before its worker is killed, input seeds per size set, and the CI low bound a
/// speedup must reach.
pub const DEFAULT_TIMEOUT_S: f64 = 60.0;
pub const DEFAULT_SEEDS: u32 = 3;
pub const DEFAULT_MIN_SPEEDUP: f64 = 1.1;
/// Wall-clock timing budget per size set (both variants), milliseconds.
pub const DEFAULT_TIME_BUDGET_MS: f64 = 250.0;

pub use settings::{Settings, VerifyError};

pub use validate::{run_validate, ValidateArgs};

#[derive(Debug, Clone, clap::Args)]
pub struct VerifyArgs {
    #[command(flatten)]
    pub files: crate::dataset::StageFiles,
    /// Folders to look for harnesses in (`<benchmark>.toml`, `<benchmark>/harness.toml`,
    /// `benchmarks/<benchmark>/harness.toml`, and the harness module's naming).
    #[arg(long = "harness-dir")]
    pub harness_dirs: Vec<PathBuf>,
    /// Root of the suite the pairs came from: `harness*.toml` files next to the kernels
    /// (as the fixtures keep them) are found there.
    #[arg(long = "suite-root")]
    pub suite_root: Option<PathBuf>,
    /// Inferred harnesses (`kernelpair harness infer -o DIR`: `<pair-id>.toml`), used for
    /// pairs no hand-written harness covers; each pair records its harness origin.
    #[arg(long = "inferred-dir")]
    pub inferred_dir: Option<PathBuf>,
    /// A capture folder (`kernelpair capture -o`): pairs without a hand-written harness
    /// replay their fast kernel's captured launch (before any inferred or LLM harness).
    #[arg(long)]
    pub captures: Option<PathBuf>,
    /// Seconds a pair may go without finishing a step (a compile, a seed's check, a timing
    /// round) before its worker is killed (`timeout`); a pair still finishing steps may run
    /// 3× this in all; one whose first check shows it would pass that stops then, as a `timeout` that says why.
    #[arg(long = "timeout-s", default_value_t = DEFAULT_TIMEOUT_S)]
    pub timeout_s: f64,
    /// Input seeds per size set.
    #[arg(long, default_value_t = DEFAULT_SEEDS)]
    pub seeds: u32,
    /// The speedup's 95% CI low bound must reach this, or the pair is `not_faster`.
    #[arg(long = "min-speedup", default_value_t = DEFAULT_MIN_SPEEDUP)]
    pub min_speedup: f64,
    /// Wall-clock timing budget per size set (both variants), milliseconds.
    #[arg(long = "time-budget-ms", default_value_t = DEFAULT_TIME_BUDGET_MS)]
    pub time_budget_ms: f64,
    /// Stop timing a size set early (after 20 runs of each variant) once both medians'
    /// 95% CI widths are within this fraction of the median; 0 uses the whole budget.
    #[arg(long, default_value_t = crate::verify::engine::DEFAULT_PRECISION)]
    pub precision: f64,
    /// On-disk compile cache (CUBIN + metadata keyed by content hash).
    #[arg(long = "cache-dir")]
    pub cache_dir: Option<PathBuf>,
    /// Number of workers (default: one per visible GPU). For tests.
    #[arg(long, hide = true)]
    pub gpus: Option<usize>,
    /// Command to start a worker instead of this binary (`{device}` is replaced). For tests.
    #[arg(long = "worker-cmd", hide = true)]
    pub worker_cmd: Option<String>,
    /// After verification, run each pair whose kernels ran once more under these
    /// compute-sanitizer tools (comma list: memcheck, racecheck, initcheck, synccheck);
    /// errors turn a verified pair into `sanitizer_error`. Skipped with one line when
    /// compute-sanitizer is not installed.
    #[arg(long, value_delimiter = ',', value_name = "TOOLS")]
    pub sanitizer: Vec<sanitizer::Tool>,
    /// The compute-sanitizer binary (default: looked up in PATH, $CUDA_HOME/bin,
    /// $CUDA_PATH/bin, /usr/local/cuda/bin).
    #[arg(long = "compute-sanitizer", value_name = "PATH")]
    pub compute_sanitizer: Option<PathBuf>,
    /// Keep the verdicts a killed run left in `<out>.partial` (give the same input and
    /// flags: each kept verdict must match its pair's id) and verify only the rest.
    #[arg(long)]
    pub resume: bool,
    /// Run a pair replayed from its capture only under the capture, not also under the
    /// inferred or LLM-completed harness that covers it (by default that harness's verdict
    /// is kept beside the captured one, and a different status is flagged
    /// `harness_disagreement`).
    #[arg(long = "no-second-opinion")]
    pub no_second_opinion: bool,
}

impl VerifyArgs {
    /// The library settings these flags ask for.
    pub fn settings(&self) -> Settings {
        Settings {
            harness_dirs: self.harness_dirs.clone(),
            suite_root: self.suite_root.clone(),
            inferred_dir: self.inferred_dir.clone(),
            captures: self.captures.clone(),
            timeout_s: self.timeout_s,
            seeds: self.seeds,
            min_speedup: self.min_speedup,
            time_budget_ms: self.time_budget_ms,
            precision: self.precision,
            cache_dir: self.cache_dir.clone(),
            sanitizer: self.sanitizer.clone(),
            compute_sanitizer: self.compute_sanitizer.clone(),
            gpus: self.gpus,
            worker_cmd: self.worker_cmd.clone(),
            resume: self.resume,
            second_opinions: !self.no_second_opinion,
        }
    }
}

#[derive(Debug, clap::Args)]
pub struct WorkerArgs {
    #[arg(long, default_value_t = 0)]
    pub device: usize,
    #[arg(long = "cache-dir")]
    pub cache_dir: Option<PathBuf>,
}

/// A status decided without a GPU.
fn cpu_verdict(status: Status, reason: impl Into<String>) -> Verification {
    Verification {
        status,
        reason: reason.into(),
        device: None,
        evidence: Default::default(),
        speedup: None,
        tool_version: tool_version(),
        flags: vec![],
    }
}

pub fn run_worker(args: WorkerArgs) -> anyhow::Result<u8> {
    use protocol::{decode, encode, Request, Response};
    use std::io::BufRead;
    let stdout = std::io::stdout();
    let say = |r: Response| -> anyhow::Result<()> {
        let mut o = stdout.lock();
        writeln!(o, "{}", encode(r))?;
        o.flush()?;
        Ok(())
    };
    if let Probe::NoGpu(reason) = gpu::probe() {
        say(Response::NoGpu { reason })?;
        return Ok(exit::OK);
    }
    let nvrtc = match gpu::nvrtc::load() {
        Ok(n) => n.version_string(),
        Err(e) => {
            say(Response::NoGpu {
                reason: format!("GPU present but {e}"),
            })?;
            return Ok(exit::FATAL);
        }
    };
    let mut g =
        gpu::Gpu::open(args.device).with_context(|| format!("opening device {}", args.device))?;
    // 256 MiB each way, median of 10: about 2 ms on an H100; a failure only leaves
    // `suspect_slow` without its bound.
    let bandwidth_gbs = g.copy_bandwidth(256 << 20, 10).ok().map(|b| b / 1e9);
    say(Response::Hello {
        device: g.info.clone(),
        props: g.props,
        arch: g.arch(),
        nvrtc_version: nvrtc,
        bandwidth_gbs,
    })?;
    let mut cache = gpu::cache::CompileCache::new(args.cache_dir);
    let mut memo = engine::SlowMemo::default();
    for line in std::io::stdin().lock().lines() {
        let line = line?;
        if line.trim().is_empty() {
            continue;
        }
        match decode::<Request>(&line) {
            Ok(Request::Shutdown) => break,
            Ok(Request::Job { job }) => {
                // Steps are reported at most once a second: enough to restart the
                // parent's no-progress timeout, few lines for a fast pair.
                let mut last: Option<std::time::Instant> = None;
                let mut step = |what: &str| {
                    if last.is_some_and(|t| t.elapsed() < std::time::Duration::from_secs(1)) {
                        return;
                    }
                    last = Some(std::time::Instant::now());
                    let _ = say(Response::Progress {
                        pair_id: job.pair_id.clone(),
                        step: what.to_string(),
                    });
                };
                let out = engine::run_job(&mut g, &mut cache, &mut memo, &job, &mut step);
                say(Response::Result {
                    pair_id: job.pair_id.clone(),
                    verification: Box::new(out.verification),
                    sticky: out.sticky,
                })?;
                if out.sticky {
                    // The context is unusable; the parent starts a fresh worker.
                    return Ok(exit::FATAL);
                }
            }
            Err(e) => eprintln!("worker: ignoring a line that is not a request: {e}"),
        }
    }
    Ok(exit::OK)
}

/// The worker launcher for `args`: this binary, or the test override.
fn launcher(args: &Settings) -> pool::Launcher {
    let mut extra = Vec::new();
    if let Some(d) = &args.cache_dir {
        extra.push("--cache-dir".to_string());
        extra.push(d.display().to_string());
    }
    pool::launcher_for(args.worker_cmd.as_deref(), extra)
}

pub fn run_verify(args: VerifyArgs) -> anyhow::Result<u8> {
    let settings = args.settings();
    let mut records = args.files.read()?;
    let base = args
        .files
        .input
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    if let Some(d) = &args.inferred_dir {
        let (hand, inferred) = crate::harness::infer::attach_inferred(
            &mut records,
            &base,
            &args.harness_dirs,
            args.suite_root.as_deref(),
            d,
        );
        eprintln!("harnesses: {hand} hand-written, {inferred} inferred");
    }
    let partial = partial_path(&args.files.output);
    let results = verify_records(&records, &base, &settings, Some(&partial))?;
    let out: Vec<Record> = records
        .iter()
        .enumerate()
        .map(|(i, r)| match (r, results.get(&i)) {
            (Record::Pair(p), Some(v)) => {
                let mut p = p.clone();
                origin_of_verdict(&mut p, v, args.captures.as_deref());
                p.verification = Some(v.clone());
                fill_techniques(&mut p);
                Record::Pair(p)
            }
            _ => r.clone(),
        })
        .collect();
    crate::jsonl::write_records(&args.files.output, &out)?;
    let _ = std::fs::remove_file(&partial);
    let n_pairs = records
        .iter()
        .filter(|r| matches!(r, Record::Pair(_)))
        .count();
    print_summary(n_pairs, &results);
    Ok(exit::OK)
}

/// A pair's harness origin as its verdict shows it: `captured` where a replayed capture
/// ran (its manifest is the evidence's harness); a pair chosen as captured whose verdict
/// came from its inferred harness instead (the capture could not be replayed, or could
/// not judge the pair) is `inferred`.
pub fn origin_of_verdict(p: &mut Pair, v: &Verification, captures: Option<&Path>) {
    let ran_capture = captures.is_some_and(|c| {
        !v.evidence.harness.is_empty() && Path::new(&v.evidence.harness).starts_with(c)
    });
    let chosen = p.harness_origin.as_ref().map(|h| h.origin);
    if ran_capture {
        p.set_harness_origin(HarnessOrigin::Captured);
    } else if chosen == Some(HarnessOrigin::Captured) && !v.evidence.harness.is_empty() {
        p.set_harness_origin(HarnessOrigin::Inferred);
    }
}

/// Verify every pair among `records` (relative harness paths resolve against
/// `base`); returns record index → verification, each with its harness's launches
/// (`evidence.launch`, [`launches`]). With `partial`, each result is appended there as
/// it finishes, so a crash of this process loses nothing done.
pub fn verify_records(
    records: &[Record],
    base: &Path,
    args: &Settings,
    partial: Option<&Path>,
) -> Result<BTreeMap<usize, Verification>, VerifyError> {
    verify_records_proved(records, base, args, partial, None)
}

/// The first phase of a pair's GPU pass ([`pool::Proof`]): what `build` asks of a pair
/// before verifying it, on the same worker (its harness's self-check,
/// `crate::selfcheck::FirstPhase`). Asked only of pairs with a harness file: a captured
/// harness proves itself in the replay.
pub trait Prover {
    /// What pair `p` (record index `i`) must pass first on a worker that said `hello`;
    /// `Ok(None)`: nothing; `Err(reason)`: it stops now (`harness_error`), with no GPU time.
    fn proof(&self, i: usize, p: &Pair, hello: &pool::Hello)
        -> Result<Option<pool::Proof>, String>;
    /// Pair `i`'s proof was decided (on a worker, or shared with another pair of its key).
    fn proved(&self, i: usize, p: &Pair, outcome: &pool::Proved);
}

/// [`verify_records`] with a first phase per pair ([`Prover`]).
pub fn verify_records_proved(
    records: &[Record],
    base: &Path,
    args: &Settings,
    partial: Option<&Path>,
    prover: Option<&dyn Prover>,
) -> Result<BTreeMap<usize, Verification>, VerifyError> {
    let mut results = run_records(records, base, args, partial, prover)?;
    launches::attach(
        records,
        base,
        &args.harness_dirs,
        args.suite_root.as_deref(),
        &mut results,
    );
    Ok(results)
}

/// One worker per device; the reason a GPU is missing when a worker says so.
fn spawn_workers(
    launch: &pool::Launcher,
    devices: usize,
    hello_timeout: Duration,
) -> (Vec<pool::Worker>, Option<String>) {
    let mut workers = Vec::new();
    let mut no_gpu = None;
    for d in 0..devices {
        match pool::Worker::spawn(launch, d, hello_timeout, pool::ProcessGroup::Parent) {
            Ok(w) => workers.push(w),
            Err(pool::PoolError::NoGpu(r)) => no_gpu = Some(r),
            Err(e) => eprintln!("warning: {e}"),
        }
    }
    (workers, no_gpu)
}

/// What [`jobs_for`] hands the batch.
struct Jobs {
    jobs: Vec<(usize, Job)>,
    primaries: BTreeMap<usize, String>,
    /// Per shadow index: the second opinion's harness origin and file.
    seconds: BTreeMap<usize, (HarnessOrigin, String)>,
    early: Vec<(usize, crate::evidence::SecondOpinion)>,
    /// Captured pairs whose slow kernel runs under the fast kernel's launch, not its own
    /// ([`borrowed_launch_crash`]).
    borrowed: std::collections::BTreeSet<usize>,
}

/// A slow kernel that crashed under the fast kernel's captured launch (its geometry and
/// scalars, borrowed because its own could not be used: `SlowLaunch::Fast`) says nothing
/// about the kernel: the launch was not its own. The verdict becomes `harness_error`, so
/// the pair's inferred harness judges it where it can ([`second::falls_back`]).
fn borrowed_launch_crash(v: &mut Verification) {
    if v.status == Status::Crashed && v.reason.contains("slow kernel:") {
        v.status = Status::HarnessError;
        v.reason = format!(
            "the slow kernel crashed under the fast kernel's captured launch, which is not its \
             own (its own capture could not be used): {}",
            v.reason
        );
    }
}

/// The primary size set of a harness file.
fn primary_of(found: &resolve::Found) -> Option<String> {
    let set = found.harness.size_sets().iter().find(|s| s.primary)?;
    Some(set.name.clone())
}

/// The worker jobs of the pairs whose harness was found (each pair's units resolved for
/// the workers' device), with each harness's primary size set; pairs that fail to resolve
/// go to `rejected` with their CPU verdict. A captured pair with a second opinion gets a
/// second job under its shadow index ([`second::Shadows`]); one whose other harness does
/// not resolve gets that verdict as its opinion at once (`early`).
fn jobs_for(
    pending: &[Waiting],
    hello: &pool::Hello,
    args: &Settings,
    shadows: second::Shadows,
    rejected: &mut Vec<(usize, Verification)>,
) -> Jobs {
    let options = RunOptions {
        seeds: args.seeds.max(1),
        min_speedup: args.min_speedup,
        time_budget_ms: args.time_budget_ms,
        precision: args.precision,
        pair_budget_ms: args.timeout_s * pool::MAX_EXTEND * 1e3,
        ..RunOptions::default()
    };
    let mut out = Jobs {
        jobs: Vec::new(),
        primaries: BTreeMap::new(),
        seconds: BTreeMap::new(),
        early: Vec::new(),
        borrowed: Default::default(),
    };
    for (i, p, h) in pending {
        let found = match h {
            Harnessed::File(found) => found,
            Harnessed::Captured(r, second) => {
                let Some(slow) = p.slow.unit() else { continue };
                out.primaries.insert(*i, "captured".to_string());
                if r.slow_launch == crate::capture::replay::SlowLaunch::Fast {
                    out.borrowed.insert(*i);
                }
                out.jobs.push((
                    *i,
                    Job {
                        pair_id: p.id.clone(),
                        slow: resolve::source(slow),
                        fast: resolve::source(&p.fast),
                        harness: r.manifest.display().to_string(),
                        sets: r.sets.clone(),
                        options: options.clone(),
                    },
                ));
                // `build` gives a captured pair its inferred harness beside the capture.
                let origin = match p.harness_origin.as_ref().map(|h| h.origin) {
                    Some(HarnessOrigin::Llm) => HarnessOrigin::Llm,
                    _ => HarnessOrigin::Inferred,
                };
                let found = match second {
                    None => continue,
                    Some(Ok(found)) => found,
                    Some(Err((status, reason))) => {
                        let v = cpu_verdict(*status, reason.clone());
                        let harness = p.harness.clone().unwrap_or_default();
                        out.early.push((*i, second::opinion(origin, &harness, &v)));
                        continue;
                    }
                };
                let harness = found.path.display().to_string();
                match resolve::resolve(p, found, hello) {
                    Ok((slow, fast, sets)) => {
                        let j = shadows.of(*i);
                        if let Some(set) = primary_of(found) {
                            out.primaries.insert(j, set);
                        }
                        out.seconds.insert(j, (origin, harness.clone()));
                        out.jobs.push((
                            j,
                            Job {
                                pair_id: format!("{}:second", p.id),
                                slow,
                                fast,
                                harness,
                                sets,
                                options: options.clone(),
                            },
                        ));
                    }
                    Err((status, reason)) => {
                        let v = cpu_verdict(status, reason);
                        out.early.push((*i, second::opinion(origin, &harness, &v)));
                    }
                }
                continue;
            }
        };
        if let Some(set) = primary_of(found) {
            out.primaries.insert(*i, set);
        }
        match resolve::resolve(p, found, hello) {
            Ok((slow, fast, sets)) => out.jobs.push((
                *i,
                Job {
                    pair_id: p.id.clone(),
                    slow,
                    fast,
                    harness: found.path.display().to_string(),
                    sets,
                    options: options.clone(),
                },
            )),
            Err((status, reason)) => rejected.push((*i, cpu_verdict(status, reason))),
        }
    }
    out
}

/// Jobs grouped by their slow side ([`engine::SlowMemo::slow_side`]), each group where
/// its first job was, its jobs in their order.
fn shared_slow_sides(jobs: Vec<(usize, Job)>) -> Vec<Vec<(usize, Job)>> {
    let mut groups: Vec<Vec<(usize, Job)>> = Vec::new();
    let mut at: std::collections::HashMap<u64, usize> = Default::default();
    for (i, job) in jobs {
        let key = engine::SlowMemo::slow_side(&job);
        match at.get(&key) {
            Some(&g) => groups[g].push((i, job)),
            None => {
                at.insert(key, groups.len());
                groups.push(vec![(i, job)]);
            }
        }
    }
    groups
}

/// A group may always hold this many pairs, whatever a worker's share of the batch: a few
/// pairs on one worker unbalance nothing, and split they would each run the naive kernel.
const GROUP_FLOOR: usize = 8;

/// A pair taking at least this long is worth keeping with the others of its slow side:
/// twice the default hard cap, past which a slow side's samples are shared.
const LONG_PAIR_S: f64 = 4.0;

/// Groups kept only where they pay: one whose pairs all took under [`LONG_PAIR_S`] last
/// time (the memo shares nothing below the hard cap) goes back to single pairs, which
/// any worker may take; a group with no history stays whole. No group is longer than
/// `most` pairs (the batch's share of one worker), so no worker is left with all of it.
fn split_short_groups(
    groups: Vec<Vec<(usize, Job)>>,
    seconds: &BTreeMap<String, f64>,
    most: usize,
) -> Vec<Vec<(usize, Job)>> {
    let mut out = Vec::new();
    for g in groups {
        let known: Vec<f64> = g
            .iter()
            .filter_map(|(_, j)| seconds.get(&j.pair_id).copied())
            .collect();
        let short = !known.is_empty() && known.iter().all(|&s| s < LONG_PAIR_S);
        if g.len() > 1 && short {
            out.extend(g.into_iter().map(|j| vec![j]));
            continue;
        }
        let mut g = g;
        while g.len() > most.max(1) {
            let rest = g.split_off(most.max(1));
            out.push(g);
            g = rest;
        }
        out.push(g);
    }
    out
}

/// compute-sanitizer's path when `--sanitizer` asks for a pass (or why it cannot run,
/// said at once so the line comes before the batch); None without `--sanitizer`.
fn locate_sanitizer(args: &Settings) -> Option<Result<PathBuf, String>> {
    match args.sanitizer.is_empty() {
        true => None,
        false => Some(
            sanitizer::locate(args.compute_sanitizer.as_deref()).inspect_err(|why| {
                eprintln!("{why}; --sanitizer skipped");
            }),
        ),
    }
}

/// Where a waiting pair's harness comes from.
enum Harnessed {
    /// A harness file (hand-written, inferred or LLM-completed); boxed: the larger variant.
    File(Box<resolve::Found>),
    /// The fast kernel's captured launch, replayed for both sides, and the inferred or
    /// LLM-completed harness that also covers the pair (its second opinion), if any.
    Captured(crate::capture::replay::Replay, Option<Second>),
}

/// The other harness of a captured pair: found (to run), or found and refused before any
/// GPU time (its verdict is the opinion).
type Second = Result<Box<resolve::Found>, (Status, String)>;

/// A pair that waits for the GPU: its record index, the pair and its harness.
type Waiting<'a> = (usize, &'a Pair, Harnessed);

/// A pair's captured harness, when `captures` has its fast kernel's launch and no
/// hand-written harness comes first; `Err` when the capture exists but cannot be replayed.
fn captured_for(
    p: &Pair,
    idx: Option<&crate::capture::CaptureIndex>,
) -> Option<Result<crate::capture::replay::Replay, String>> {
    use crate::capture::replay::{for_pair, ReplayError};
    let idx = idx?;
    let slow = p.slow.unit()?;
    match for_pair(idx, slow, &p.fast) {
        Ok(r) => Some(Ok(r)),
        Err(ReplayError::NotCaptured(_)) => None,
        Err(e) => Some(Err(e.to_string())),
    }
}

/// The pairs settled before any GPU time (a padded slow kernel, no harness, …) with
/// their verdicts, in record order, and the pairs that go on, each with its harness.
fn triage<'a>(
    records: &'a [Record],
    base: &Path,
    args: &Settings,
) -> (Vec<(usize, Verification)>, Vec<Waiting<'a>>) {
    let mut settled = Vec::new();
    let mut pending = Vec::new();
    let captures = args
        .captures
        .as_deref()
        .map(crate::capture::CaptureIndex::open);
    for (i, r) in records.iter().enumerate() {
        let Record::Pair(p) = r else { continue };
        // Before anything else, and before any GPU time: a padded slow kernel is refused.
        if let Some(v) = slowdown::check(p) {
            settled.push((i, v));
            continue;
        }
        // hand > captured > inferred > llm: a harness that is not hand-written gives way
        // to a capture of the fast kernel.
        let not_hand = p
            .harness_origin
            .as_ref()
            .is_some_and(|h| h.origin != HarnessOrigin::Hand);
        let found = resolve::prepare(p, base, &args.harness_dirs, args.suite_root.as_deref());
        let wants_capture = not_hand || matches!(found, Err((Status::NoHarness, _)));
        match (
            found,
            wants_capture
                .then(|| captured_for(p, captures.as_ref()))
                .flatten(),
        ) {
            (found, Some(Ok(r))) => {
                // A harness the pair has but that cannot run is an opinion too.
                let second = match found {
                    _ if !args.second_opinions => None,
                    Err((Status::NoHarness, _)) => None,
                    found => Some(found.map(Box::new)),
                };
                pending.push((i, &**p, Harnessed::Captured(r, second)))
            }
            (Ok(found), _) => pending.push((i, &**p, Harnessed::File(Box::new(found)))),
            (Err((Status::NoHarness, _)), Some(Err(why))) => {
                settled.push((i, cpu_verdict(Status::HarnessError, why)))
            }
            (Err((status, reason)), _) => settled.push((i, cpu_verdict(status, reason))),
        }
    }
    (settled, pending)
}

/// Every verdict as it comes, by record index, appended to the `.partial` file when
/// there is one. Within a batch the first write error is kept and returned when the
/// batch ends ([`Verdicts::settle`]), so the batch still runs to its end.
struct Verdicts {
    results: BTreeMap<usize, Verification>,
    partial: Option<Partial>,
    io_err: Option<VerifyError>,
    /// Second opinions that came before their pair's verdict.
    waiting: second::Waiting,
}

impl Verdicts {
    fn record(&mut self, i: usize, mut v: Verification) -> Result<(), VerifyError> {
        self.waiting.join(i, &mut v);
        let r = self.partial.as_mut().map_or(Ok(()), |f| f.append(i, &v));
        self.results.insert(i, v);
        r
    }

    /// A verdict inside a batch, counted on the batch's progress with its status.
    /// A verdict of a batch whose progress the pool keeps (it counts the pair).
    fn record_in_batch(&mut self, i: usize, v: Verification) {
        if let Err(e) = self.record(i, v) {
            self.io_err.get_or_insert(e);
        }
    }

    /// Pair `i`'s second opinion: joined to its verdict now (stored again) when that is
    /// in, else when it comes.
    fn second(
        &mut self,
        i: usize,
        op: crate::evidence::SecondOpinion,
        full: Option<Verification>,
    ) -> Result<(), VerifyError> {
        match self.waiting.arrive(i, (op, full), self.results.get(&i)) {
            Some(v) => self.record(i, v),
            None => Ok(()),
        }
    }

    /// The end of a batch: its progress closed, its first write error returned.
    fn settle(&mut self, bar: Progress) -> Result<(), VerifyError> {
        bar.done();
        self.io_err.take().map_or(Ok(()), Err)
    }

    /// Every pair that waits for a GPU is `no_gpu`, for `reason`.
    fn no_gpu(&mut self, pending: &[Waiting], reason: &str) -> Result<(), VerifyError> {
        eprintln!("{reason}; marking {} pair(s) no_gpu", pending.len());
        for (i, _, _) in pending {
            self.record(*i, cpu_verdict(Status::NoGpu, reason))?;
        }
        Ok(())
    }
}

/// Test hook: a worker command (a fake worker) and one GPU slot for every verify run of
/// this process whose settings name no worker, so `build`'s process tests can kill and
/// resume verify chunks on machines without a GPU.
pub const TEST_WORKER_ENV: &str = "KERNELPAIR_TEST_WORKER_CMD";

fn run_records(
    records: &[Record],
    base: &Path,
    args: &Settings,
    partial: Option<&Path>,
    prover: Option<&dyn Prover>,
) -> Result<BTreeMap<usize, Verification>, VerifyError> {
    let hooked;
    let args = match (std::env::var(TEST_WORKER_ENV).ok(), &args.worker_cmd) {
        (Some(cmd), None) => {
            hooked = Settings {
                worker_cmd: Some(cmd),
                gpus: Some(1),
                ..args.clone()
            };
            &hooked
        }
        _ => args,
    };
    let (settled, mut pending) = triage(records, base, args);
    // With `resume`, what an interrupted run already wrote to the partial file is kept
    // (and written again), and only the other pairs run.
    let earlier = match (partial, args.resume) {
        (Some(p), true) => Partial::earlier(p, records),
        _ => BTreeMap::new(),
    };
    let mut verdicts = Verdicts {
        results: BTreeMap::new(),
        partial: partial.map(|p| Partial::create(p, records)).transpose()?,
        io_err: None,
        waiting: second::Waiting::default(),
    };
    if !earlier.is_empty() {
        eprintln!(
            "verify: {} pair(s) already verified by an interrupted run (kept)",
            earlier.len()
        );
    }
    for (i, v) in settled {
        if !earlier.contains_key(&i) {
            verdicts.record(i, v)?;
        }
    }
    pending.retain(|(i, _, _)| !earlier.contains_key(i));
    for (i, v) in earlier {
        verdicts.record(i, v)?;
    }
    if pending.is_empty() {
        return Ok(verdicts.results);
    }
    let devices = match args.gpus {
        Some(n) => n,
        None => match gpu::probe() {
            Probe::Ready { devices } => devices,
            Probe::NoGpu(reason) => {
                verdicts.no_gpu(&pending, &reason)?;
                return Ok(verdicts.results);
            }
        },
    };
    let launch = launcher(args);
    let hello_timeout = Duration::from_secs(60);
    let (workers, no_gpu) = spawn_workers(&launch, devices, hello_timeout);
    if workers.is_empty() {
        let reason = no_gpu.unwrap_or_else(|| "no GPU: no worker could be started".into());
        verdicts.no_gpu(&pending, &reason)?;
        return Ok(verdicts.results);
    }
    let hello = workers[0].hello.clone();
    let mut rejected = Vec::new();
    let shadows = second::Shadows::new(records.len());
    let Jobs {
        jobs,
        primaries,
        seconds: second_harness,
        early,
        borrowed,
    } = jobs_for(&pending, &hello, args, shadows, &mut rejected);
    // Pairs whose slow kernel is a synthesized plain variant (they may come back `reversed`).
    let synthesized: std::collections::BTreeSet<usize> = pending
        .iter()
        .filter(|(_, p, _)| matches!(p.slow, crate::record::Slow::Synthesized { .. }))
        .map(|(i, _, _)| *i)
        .collect();
    for (i, v) in rejected {
        verdicts.record(i, v)?;
    }
    for (i, op) in early {
        verdicts.second(i, op, None)?;
    }
    // The first phase of the pairs with a harness file (the prover's self-check), asked
    // now: a pair it stops at once takes no GPU time.
    let mut proofs = std::collections::HashMap::new();
    let by_index: BTreeMap<usize, &Pair> = pending.iter().map(|(i, p, _)| (*i, *p)).collect();
    let filed: std::collections::BTreeSet<usize> = pending
        .iter()
        .filter(|(_, _, h)| matches!(h, Harnessed::File(_)))
        .map(|(i, _, _)| *i)
        .collect();
    let mut jobs = jobs;
    if let Some(prover) = prover {
        let mut stopped = Vec::new();
        for (i, _) in jobs.iter().filter(|(i, _)| filed.contains(i)) {
            match prover.proof(*i, by_index[i], &hello) {
                Ok(Some(proof)) => {
                    proofs.insert(*i, proof);
                }
                Ok(None) => {}
                Err(why) => stopped.push((*i, cpu_verdict(Status::HarnessError, why))),
            }
        }
        jobs.retain(|(i, _)| !stopped.iter().any(|(s, _)| s == i));
        for (i, v) in stopped {
            verdicts.record(i, v)?;
        }
    }
    // Pairs sharing a slow side go to one worker, whose memo times that side once; the
    // groups go longest first, from what each pair took last time, so several workers end
    // together rather than waiting on one long pair started last.
    let seconds = args
        .cache_dir
        .as_deref()
        .map(history::load)
        .unwrap_or_default();
    let most = jobs.len().div_ceil(devices.max(1)).max(GROUP_FLOOR);
    let mut groups = split_short_groups(shared_slow_sides(jobs), &seconds, most);
    history::longest_first_groups(&mut groups, |(_, j)| j.pair_id.as_str(), &seconds);
    let jobs: Vec<&(usize, Job)> = groups.iter().flatten().collect();
    // The batch's NVRTC compiles on the cores the workers leave idle, ahead of them, into
    // the cache they read: a worker then holds its GPU only to run.
    // (A test's stand-in worker compiles nothing.)
    let background = args
        .cache_dir
        .as_ref()
        .filter(|_| args.worker_cmd.is_none())
        .map(|dir| {
            let js: Vec<&Job> = jobs.iter().map(|(_, j)| j).collect();
            precompile::Background::start(
                precompile::requests(&js),
                &hello.arch,
                dir,
                precompile::threads_for(devices),
            )
        });
    let mut took = history::Recorder::open(args.cache_dir.as_deref());
    let bar = Progress::new("verify", jobs.len());
    let timeout = Duration::from_secs_f64(args.timeout_s.max(0.1));
    // Said before the batch runs, so the line comes at once; the pass runs after it.
    let sanitizer = locate_sanitizer(args);
    let sanitize_jobs: Option<Vec<(usize, Job)>> = sanitizer.as_ref().map(|_| {
        jobs.iter()
            .filter(|(i, _)| shadows.record(*i).is_none())
            .map(|&j| j.clone())
            .collect()
    });
    let mut names: BTreeMap<usize, String> = pending
        .iter()
        .map(|(i, p, _)| (*i, format!("{}/{}", p.benchmark, p.fast.kernel)))
        .collect();
    for (j, (origin, _)) in &second_harness {
        if let Some(n) = shadows.record(*j).and_then(|i| names.get(&i)) {
            let label = format!("{n} ({origin:?} harness, second opinion)");
            names.insert(*j, label);
        }
    }
    let ids: BTreeMap<usize, String> = jobs.iter().map(|(i, j)| (*i, j.pair_id.clone())).collect();
    let label = |i: usize| {
        names
            .get(&i)
            .cloned()
            .unwrap_or_else(|| format!("pair {i}"))
    };
    pool::run_proved_groups(
        workers,
        groups,
        proofs,
        (launch.clone(), timeout, hello_timeout),
        (&bar, &label),
        |i, outcome| {
            if let (Some(prover), Some(p)) = (prover, by_index.get(&i)) {
                prover.proved(i, p, &outcome);
            }
        },
        |j, mut v| {
            if let Some(id) = ids.get(&j) {
                took.record(id, history::seconds_of(&v, args.timeout_s));
            }
            // A shadow index is a pair's second opinion ([`second`]).
            let of = shadows.record(j);
            verdict::finish(
                &mut v,
                &verdict::Context {
                    primary: primaries.get(&j).map(String::as_str),
                    min_speedup: args.min_speedup,
                    seeds: args.seeds.max(1),
                    bandwidth_gbs: hello.bandwidth_gbs,
                    synthesized: synthesized.contains(&of.unwrap_or(j)),
                },
            );
            if borrowed.contains(&j) {
                borrowed_launch_crash(&mut v);
            }
            match (of, second_harness.get(&j)) {
                (Some(i), Some((origin, harness))) => {
                    let op = second::opinion(*origin, harness, &v);
                    if let Err(e) = verdicts.second(i, op, Some(v)) {
                        verdicts.io_err.get_or_insert(e);
                    }
                }
                _ => verdicts.record_in_batch(j, v),
            }
        },
    );
    if let Some(bg) = background {
        let done = bg.finish();
        tracing::debug!(?done, "background compile");
    }
    verdicts.settle(bar)?;
    if let (Some(found), Some(sjobs)) = (sanitizer, sanitize_jobs) {
        let pass = |binary| sanitizer::Pass {
            binary,
            tools: args.sanitizer.clone(),
            devices,
            worker: launch,
            timeout: timeout.mul_f64(sanitizer::SLOWDOWN),
            hello_timeout: hello_timeout * 2,
        };
        sanitize(found, sjobs, pass, &mut verdicts)?;
    }
    Ok(verdicts.results)
}

/// The compute-sanitizer pass over the jobs whose verdict is worth it, or, when
/// compute-sanitizer was not found, why it was skipped, on each of them.
fn sanitize(
    found: Result<PathBuf, String>,
    jobs: Vec<(usize, Job)>,
    pass: impl FnOnce(PathBuf) -> sanitizer::Pass,
    verdicts: &mut Verdicts,
) -> Result<(), VerifyError> {
    let targets: Vec<(usize, Job)> = jobs
        .into_iter()
        .filter(|(i, _)| {
            verdicts
                .results
                .get(i)
                .is_some_and(|v| sanitizer::worth_sanitizing(v.status))
        })
        .collect();
    let pass = match found {
        Ok(binary) => pass(binary),
        Err(why) => {
            for (i, _) in &targets {
                let mut v = verdicts.results[i].clone();
                sanitizer::apply(&mut v, sanitizer::skipped(&why), &BTreeMap::new());
                verdicts.record(*i, v)?;
            }
            return Ok(());
        }
    };
    let bar = Progress::new("sanitize", targets.len() * pass.tools.len());
    sanitizer::run_pass(&pass, targets, |i, job, runs| {
        let mut v = verdicts.results[&i].clone();
        let ev = sanitizer::pass_evidence(&pass.binary, job, pass.timeout, &runs);
        sanitizer::apply(&mut v, ev, &runs);
        bar.inc(runs.len(), v.status.as_str());
        verdicts.record_in_batch(i, v);
    });
    verdicts.settle(bar)
}

/// Techniques for every verified-or-not pair, natural ones too: those synth recorded,
/// else the slow → fast difference ([`crate::synth::techniques::detect_pair`]).
pub fn fill_techniques(p: &mut Pair) {
    if p.techniques.is_empty() && p.slow.unit().is_some() {
        p.techniques = techniques::techniques(p);
    }
}

pub fn partial_path(out: &Path) -> PathBuf {
    let mut s = out.as_os_str().to_owned();
    s.push(".partial");
    PathBuf::from(s)
}

/// The `.partial` file: each result as it finishes, so a crash loses nothing done.
struct Partial {
    path: PathBuf,
    file: std::fs::File,
    /// Each record index's pair id, written with its verdict.
    ids: BTreeMap<usize, String>,
}

impl Partial {
    fn create(path: &Path, records: &[Record]) -> Result<Partial, VerifyError> {
        let file = std::fs::File::create(path).map_err(|source| VerifyError::Partial {
            path: path.to_path_buf(),
            source,
        })?;
        let ids = records
            .iter()
            .enumerate()
            .filter_map(|(i, r)| match r {
                Record::Pair(p) => Some((i, p.id.clone())),
                _ => None,
            })
            .collect();
        Ok(Partial {
            path: path.to_path_buf(),
            file,
            ids,
        })
    }

    /// The verdicts an earlier, interrupted run wrote to `path` for these same records: a
    /// line counts only where its index holds a pair with the same id. A torn last line
    /// (the process killed mid-write) is skipped.
    fn earlier(path: &Path, records: &[Record]) -> BTreeMap<usize, Verification> {
        #[derive(serde::Deserialize)]
        struct Line {
            index: usize,
            #[serde(default)]
            pair_id: String,
            verification: Verification,
        }
        let Ok(text) = std::fs::read_to_string(path) else {
            return BTreeMap::new();
        };
        text.lines()
            .filter_map(|l| serde_json::from_str::<Line>(l).ok())
            .filter(|l| matches!(records.get(l.index), Some(Record::Pair(p)) if p.id == l.pair_id))
            .map(|l| (l.index, l.verification))
            .collect()
    }

    fn append(&mut self, index: usize, v: &Verification) -> Result<(), VerifyError> {
        let line = serde_json::json!({ "index": index, "pair_id": self.ids.get(&index), "verification": v });
        writeln!(self.file, "{line}")
            .and_then(|_| self.file.flush())
            .map_err(|source| VerifyError::Partial {
                path: self.path.clone(),
                source,
            })
    }
}

fn print_summary(n_pairs: usize, results: &BTreeMap<usize, Verification>) {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for v in results.values() {
        *counts.entry(v.status.as_str()).or_default() += 1;
    }
    println!("{:<16} {:>6}", "status", "pairs");
    for (s, n) in &counts {
        println!("{s:<16} {n:>6}");
    }
    println!("{:<16} {:>6}", "total", n_pairs);
    let disagree = results
        .values()
        .filter(|v| {
            v.flags
                .iter()
                .any(|f| matches!(f, Flag::HarnessDisagreement { .. }))
        })
        .count();
    if disagree > 0 {
        println!(
            "{disagree} pair(s) replayed from a capture got another status under their inferred or LLM harness (flag harness_disagreement)"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use precompile::tests::job;

    /// A slow kernel that crashed under a borrowed launch is the harness's failure, so the
    /// inferred harness's verdict replaces it; a fast-side crash, and verdicts that judge,
    /// stay as they are.
    #[test]
    fn a_slow_crash_under_the_fast_launch_is_a_harness_error_the_inferred_verdict_replaces() {
        let crash = |side: &str| {
            cpu_verdict(
                Status::Crashed,
                format!("size set captured, seed 0, {side} kernel: cuEventSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS"),
            )
        };
        let mut v = crash("slow");
        borrowed_launch_crash(&mut v);
        assert_eq!(v.status, Status::HarnessError);
        assert!(v
            .reason
            .starts_with("the slow kernel crashed under the fast kernel's captured launch"));
        assert!(v.reason.ends_with("CUDA_ERROR_ILLEGAL_ADDRESS"));
        let inferred = cpu_verdict(Status::NotFaster, "agrees, but 1.00x");
        assert!(second::falls_back(v.status, inferred.status));
        let mut fast = crash("fast");
        borrowed_launch_crash(&mut fast);
        assert_eq!(fast.status, Status::Crashed);
        let mut m = cpu_verdict(Status::Mismatch, "slow kernel output differs");
        borrowed_launch_crash(&mut m);
        assert_eq!(m.status, Status::Mismatch);
    }

    /// Pairs against one naive kernel (a progression's versions 2, 3, … against version
    /// 1) go to one worker, in their order; another slow side is its own group.
    #[test]
    fn pairs_sharing_a_slow_side_form_one_group_in_order() {
        let mut other_launch = job("d", "naive", "fast4");
        other_launch.sets[0].slow[0].grid = [2, 1, 1];
        let jobs = vec![
            (0, job("a", "naive", "fast1")),
            (1, job("b", "plain", "fast2")),
            (2, job("c", "naive", "fast3")),
            (3, other_launch),
        ];
        let groups = shared_slow_sides(jobs);
        let ids: Vec<Vec<usize>> = groups
            .iter()
            .map(|g| g.iter().map(|(i, _)| *i).collect())
            .collect();
        // The same naive code launched another way is another slow side.
        assert_eq!(ids, vec![vec![0, 2], vec![1], vec![3]]);
    }

    /// A group stays whole when a pair of it was long last time or none was timed yet;
    /// one of short pairs is split; none is longer than a worker's share.
    #[test]
    fn only_groups_that_pay_stay_whole_and_none_passes_a_workers_share() {
        let group = |ids: &[&str]| -> Vec<(usize, Job)> {
            ids.iter()
                .enumerate()
                .map(|(i, id)| (i, job(id, "naive", id)))
                .collect()
        };
        let secs: BTreeMap<String, f64> = [("a", 40.0), ("b", 2.0), ("c", 1.0), ("d", 0.5)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        let lens = |gs: Vec<Vec<(usize, Job)>>| -> Vec<usize> { gs.iter().map(Vec::len).collect() };
        assert_eq!(
            lens(split_short_groups(vec![group(&["a", "b"])], &secs, 10)),
            [2]
        );
        assert_eq!(
            lens(split_short_groups(vec![group(&["c", "d"])], &secs, 10)),
            [1, 1]
        );
        assert_eq!(
            lens(split_short_groups(vec![group(&["x", "y", "z"])], &secs, 10)),
            [3]
        );
        assert_eq!(
            lens(split_short_groups(
                vec![group(&["a", "x", "y", "z", "w"])],
                &secs,
                2
            )),
            [2, 2, 1]
        );
    }
}
