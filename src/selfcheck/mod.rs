//! `kernelpair harness selfcheck`: a harness proves itself before any pair uses it. The fast
//! kernel runs against itself (an identity control) through the verify workers, for each
//! seed × size set, with canaries and poisoned outputs, no timing, and zero tolerance except
//! on outputs the kernel writes through float atomics. Checks: the harness loads and
//! resolves; the kernel runs clean (compiles, no crash, timeout or canary damage); every
//! `out` element is written; reruns agree bit for bit; the output is not degenerate; the
//! output changes with the seed. Hand-written and inferred harnesses get the same check.
//!
//! This module sits above both `harness` (the file model) and `verify` (the workers): the
//! GPU-proving parts of harness work live here, with [`complete`] (an LLM fills a draft's
//! TODOs, repaired from its self-check) and the `kernelpair harness` [`commands`].

pub mod commands;
pub mod complete;
pub mod phase;
pub mod replay;
pub mod sanitize;

use crate::exit;
use crate::harness::infer_kernel::{body_facts, WriteKind};
use crate::harness::{ResolvedArg, Tolerance};
use crate::record::{HarnessOrigin, Pair, Record, Status, Verification};
use crate::verify::engine::{Job, RunOptions};
use crate::verify::{pool, resolve};
pub use commands::HarnessCommand;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// One check's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckResult {
    Pass,
    Fail,
    /// An earlier check failed, so this one was not reached.
    NotRun,
}

/// The checks, in the order they are decided.
pub const CHECKS: [&str; 6] = [
    "harness",
    "runs_clean",
    "writes_every_output",
    "deterministic",
    "non_degenerate",
    "seed_dependent",
];

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Check {
    /// One of [`CHECKS`], or a sanitizer tool's name.
    pub name: std::borrow::Cow<'static, str>,
    pub result: CheckResult,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
}

/// One pair's self-check report (a line of `--out`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub pair_id: String,
    pub benchmark: String,
    pub kernel: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub origin: Option<HarnessOrigin>,
    pub pass: bool,
    /// A named failure category (see [`category`]), when it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    pub checks: Vec<Check>,
    /// The worker's wall time for the pair, milliseconds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ms: Option<f64>,
    /// What the GPU check ran on (the pair, its harness file's bytes, the options), hashed:
    /// a rerun reuses a report from the partial file only for the same inputs.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub inputs: String,
}

/// Check results from the first failing check: the ones before pass, the ones after were
/// not run. `failed` = None: all of the engine's checks passed.
pub fn checks_from(failed: Option<(&'static str, String)>) -> Vec<Check> {
    let mut out = Vec::new();
    let mut after = false;
    for name in CHECKS {
        let (result, detail) = match &failed {
            _ if after => (CheckResult::NotRun, String::new()),
            Some((f, why)) if *f == name => {
                after = true;
                (CheckResult::Fail, why.clone())
            }
            _ => (CheckResult::Pass, String::new()),
        };
        out.push(Check {
            name: name.into(),
            result,
            detail,
        });
    }
    out
}

/// Which check an engine status fails.
pub fn failed_check(status: Status) -> Option<&'static str> {
    Some(match status {
        Status::Verified | Status::NotFaster => return None,
        Status::Unwritten => "writes_every_output",
        Status::Mismatch => "deterministic",
        Status::Degenerate => "non_degenerate",
        Status::NoHarness | Status::HarnessError | Status::NeedsHostLoop | Status::MissingSlow => {
            "harness"
        }
        _ => "runs_clean",
    })
}

/// Outputs whose fast-kernel hash is the same for every seed of a size set (from the
/// verification evidence's `checks`): the output does not depend on the input.
pub fn seed_independent(evidence: &crate::evidence::Evidence) -> Vec<(String, String)> {
    let mut hashes: BTreeMap<(String, String), BTreeSet<String>> = BTreeMap::new();
    let mut seeds: BTreeMap<(String, String), usize> = BTreeMap::new();
    for c in &evidence.checks {
        let Some(h) = &c.fast_hash else {
            continue;
        };
        let k = (c.size_set.clone(), c.output.clone());
        hashes.entry(k.clone()).or_default().insert(h.clone());
        *seeds.entry(k).or_default() += 1;
    }
    hashes
        .into_iter()
        .filter(|(k, h)| h.len() == 1 && seeds[k] > 1)
        .map(|((set, out), _)| (out, set))
        .collect()
}

/// A failure's named category, from the check and its reason, for the tables.
pub fn category(check: &str, reason: &str) -> String {
    let r = reason.to_ascii_lowercase();
    let c = match check {
        "harness" if r.contains("struct field") => "size read from a struct filled at run time",
        "harness" if r.contains("not an element type") => "struct or struct-of-pointers input",
        "harness" if r.contains("command-line argument") => {
            "size from the command line, no run script"
        }
        "harness" if r.contains("no launch site") => "no launch site recorded",
        "harness" if r.starts_with("launch") => "launch configuration not translatable",
        "harness" if r.contains("passed to") => "buffer passed to an opaque call",
        "harness"
            if r.contains("no definition")
                || r.contains("calls ")
                || r.contains("is not arithmetic") =>
        {
            "size computed at run time (data-dependent host code)"
        }
        "harness" if r.contains("no cudamalloc") => {
            "allocation not visible (wrapper or other file)"
        }
        "harness" => "harness incomplete or invalid",
        "runs_clean"
            if r.contains("out of bounds") || r.contains("wrote") || r.contains("canary") =>
        {
            "out-of-bounds access (index structure the generator cannot make)"
        }
        "runs_clean" if r.starts_with("no_gpu") => "not run: no GPU",
        "runs_clean" if r.contains("compile") => "does not compile",
        "runs_clean" if r.contains("timeout") || r.contains("timed out") => {
            "timeout (data-dependent loop)"
        }
        "runs_clean" => "crash",
        "writes_every_output" => {
            "output not fully written (launch covers part, or data-dependent writes)"
        }
        "deterministic" => "nondeterministic output (races or atomics)",
        "non_degenerate" if r.contains("nan output") || r.contains("equals nan") => {
            "NaN output (random inputs outside the kernel's domain)"
        }
        "non_degenerate" => "degenerate output (inputs the kernel ignores)",
        "seed_dependent" => "output independent of the inputs",
        _ => "other",
    };
    c.to_string()
}

/// Turn a pair into its identity control and its resolved sets into self-check sets:
/// slow launches = fast launches, zero tolerance except outputs written by float atomics.
pub fn identity_sets(pair: &Pair, sets: &mut [crate::harness::Resolved]) {
    let names: Vec<String> = pair.fast.params.iter().map(|p| p.name.clone()).collect();
    let facts = body_facts(&pair.fast.source, &pair.fast.kernel, &names).unwrap_or_default();
    for r in sets.iter_mut() {
        r.slow = r.fast.clone();
        for a in r.args.iter_mut() {
            if let ResolvedArg::Buffer {
                name, elem, tol, ..
            } = a
            {
                let atomic_float =
                    facts.writes.get(name.as_str()) == Some(&WriteKind::Atomic) && elem.is_float();
                if !atomic_float {
                    *tol = Tolerance {
                        atol: 0.0,
                        rtol: 0.0,
                        l2: 0.0,
                        scale: 0.0,
                    };
                }
            }
        }
    }
}

/// The identity control's harness: the slow side runs the fast kernel, so it takes the fast
/// side's launch list and the fast side's data layouts. Without this, a harness whose slow
/// and fast launches differ (sgemm's tiles, stencil's naive kernel) runs the fast kernel
/// under the slow launches, or is refused because those launches name the slow kernel.
pub fn identity_harness(mut h: crate::harness::Harness) -> crate::harness::Harness {
    h.slow = h.fast.clone();
    for a in h.args.iter_mut() {
        if let crate::harness::ArgSpec::Buffer { layout, .. } = a {
            let fast: Vec<_> = layout
                .iter()
                .filter(|(v, _)| *v == crate::harness::Variant::Fast)
                .cloned()
                .collect();
            *layout = fast
                .iter()
                .cloned()
                .chain(
                    fast.iter()
                        .map(|(_, l)| (crate::harness::Variant::Slow, l.clone())),
                )
                .collect();
        }
    }
    h
}

/// Options of a self-check run.
#[derive(Debug, Clone)]
pub struct SelfcheckConfig {
    pub harness_dirs: Vec<PathBuf>,
    /// Inferred harnesses (`<pair-id>.toml`), used where no hand-written one is found.
    pub inferred_dir: Option<PathBuf>,
    pub suite_root: Option<PathBuf>,
    pub seeds: u32,
    pub timeout: Duration,
    pub worker_cmd: Option<String>,
    pub gpus: Option<usize>,
    /// compute-sanitizer tools to run every harness whose kernel ran under (`--sanitizer`).
    pub sanitizer: Vec<crate::verify::sanitizer::Tool>,
    pub compute_sanitizer: Option<PathBuf>,
    /// Each report is appended here as it is made (one JSON line), so an interrupted run
    /// keeps what it did (`harness selfcheck --out` writes `<out>.partial`).
    pub partial: Option<PathBuf>,
}

/// Reports as they are made: into their slot, and onto the partial file when there is one.
/// The reports a killed run left there are kept for the run to reuse ([`Sink::earlier`]).
struct Sink {
    file: Option<std::sync::Mutex<std::fs::File>>,
    earlier: BTreeMap<String, Report>,
}

/// The reports a file of report lines holds, by what each ran on (`inputs`); a report
/// without `inputs` (a run that never reached the GPU) is not kept.
fn reports_by_inputs(path: Option<&Path>) -> BTreeMap<String, Report> {
    path.and_then(|p| std::fs::read_to_string(p).ok())
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Report>(l).ok())
        .filter(|r| !r.inputs.is_empty())
        .map(|r| (r.inputs.clone(), r))
        .collect()
}

impl Sink {
    fn open(path: Option<&Path>) -> Sink {
        let earlier = reports_by_inputs(path);
        Sink {
            file: path
                .and_then(|p| std::fs::File::create(p).ok())
                .map(std::sync::Mutex::new),
            earlier,
        }
    }

    /// The report an earlier, interrupted run made for the same inputs.
    fn earlier(&self, inputs: &str) -> Option<Report> {
        self.earlier.get(inputs).cloned()
    }

    fn put(&self, reports: &mut [Option<Report>], i: usize, r: Report) {
        if let Some(f) = &self.file {
            if let (Ok(mut f), Ok(line)) = (f.lock(), serde_json::to_string(&r)) {
                use std::io::Write;
                let _ = writeln!(f, "{line}");
                let _ = f.flush();
            }
        }
        reports[i] = Some(r);
    }
}

/// Find a pair's harness (hand first, then inferred) and prepare its identity control.
fn prepare(
    pair: &Pair,
    base: &Path,
    cfg: &SelfcheckConfig,
) -> (
    Pair,
    Result<resolve::Found, (Status, String)>,
    Option<HarnessOrigin>,
) {
    let mut ip = pair.clone();
    ip.slow = crate::record::Slow::natural(pair.fast.clone());
    let hand = resolve::prepare_with(
        &ip,
        base,
        &cfg.harness_dirs,
        cfg.suite_root.as_deref(),
        identity_harness,
    );
    match hand {
        Err((Status::NoHarness, why)) => {
            let inferred = cfg
                .inferred_dir
                .as_ref()
                .map(|d| d.join(format!("{}.toml", pair.id)))
                .filter(|p| p.is_file());
            match inferred {
                Some(p) => {
                    ip.harness = Some(p.display().to_string());
                    let r = resolve::prepare_with(&ip, base, &[], None, identity_harness);
                    (ip, r, Some(HarnessOrigin::Inferred))
                }
                None => (ip, Err((Status::NoHarness, why)), None),
            }
        }
        r => (ip, r, Some(HarnessOrigin::Hand)),
    }
}

/// Self-check every pair: returns one report per pair, in input order.
pub fn selfcheck_pairs(pairs: &[Pair], base: &Path, cfg: &SelfcheckConfig) -> Vec<Report> {
    let mut reports: Vec<Option<Report>> = vec![None; pairs.len()];
    let sink = Sink::open(cfg.partial.as_deref());
    let mut pending = Vec::new();
    for (i, p) in pairs.iter().enumerate() {
        let (ip, found, origin) = prepare(p, base, cfg);
        match found {
            Ok(f) => pending.push((i, ip, f, origin)),
            Err((status, why)) => {
                let check = failed_check(status).unwrap_or("harness");
                // An inferred harness says what it left open: that is the reason to report.
                let why = match (origin, &ip.harness) {
                    (Some(HarnessOrigin::Inferred), Some(h)) => first_unknown(Path::new(h))
                        .map(|u| format!("{u} ({why})"))
                        .unwrap_or(why),
                    _ => why,
                };
                sink.put(
                    &mut reports,
                    i,
                    report(p, ip.harness.clone(), origin, Some((check, why)), None),
                );
            }
        }
    }
    if !pending.is_empty() {
        run_on_workers(pairs, pending, cfg, &mut reports, &sink);
    }
    reports.into_iter().flatten().collect()
}

/// The first entry of an inferred harness's `# Unknowns:` header.
pub fn first_unknown(path: &Path) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    let mut lines = text.lines().skip_while(|l| !l.starts_with("# Unknowns:"));
    lines.next()?;
    lines
        .next()
        .and_then(|l| l.strip_prefix("#   "))
        .map(str::to_string)
}

fn report(
    p: &Pair,
    harness: Option<String>,
    origin: Option<HarnessOrigin>,
    failed: Option<(&'static str, String)>,
    ms: Option<f64>,
) -> Report {
    let category = failed.as_ref().map(|(c, why)| category(c, why));
    Report {
        pair_id: p.id.clone(),
        benchmark: p.benchmark.clone(),
        kernel: p.kernel.clone(),
        harness,
        origin,
        pass: failed.is_none(),
        category,
        checks: checks_from(failed),
        ms,
        inputs: String::new(),
    }
}

/// The key of what a pair's GPU check runs on: the pair, its harness file's bytes, the
/// seeds and the sanitizer tools.
fn inputs_key(pair: &Pair, harness: &Path, cfg: &SelfcheckConfig) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(pair).unwrap_or_default());
    h.update([0u8]);
    h.update(std::fs::read(harness).unwrap_or_default());
    h.update([0u8]);
    h.update(format!(
        "{} {:?} {}",
        cfg.seeds,
        cfg.sanitizer,
        env!("CARGO_PKG_VERSION")
    ));
    hex::encode(h.finalize())
}

/// Interpret a worker's verification of an identity job. `flags` are the outputs the
/// harness allows to be degenerate (a mask the kernel only clears): they need not depend on
/// the seed, as long as some output does.
pub fn judge(v: &Verification, flags: &BTreeSet<String>) -> Option<(&'static str, String)> {
    if let Some(c) = failed_check(v.status) {
        return Some((c, format!("{}: {}", v.status.as_str(), v.reason)));
    }
    let outputs: BTreeSet<&str> = v
        .evidence
        .checks
        .iter()
        .filter(|c| c.fast_hash.is_some())
        .map(|c| c.output.as_str())
        .collect();
    let same = seed_independent(&v.evidence);
    let none_depends =
        !outputs.is_empty() && outputs.iter().all(|o| same.iter().any(|(out, _)| out == o));
    let same: Vec<String> = same
        .into_iter()
        .filter(|(out, _)| none_depends || !flags.contains(out))
        .map(|(out, set)| format!("{out} (size set {set})"))
        .collect();
    (!same.is_empty()).then(|| {
        (
            "seed_dependent",
            format!("the same output for every seed: {}", same.join(", ")),
        )
    })
}

/// The outputs a resolved harness lets be degenerate (`allow_degenerate = true`).
pub fn degenerate_allowed(sets: &[crate::harness::Resolved]) -> BTreeSet<String> {
    sets.iter()
        .flat_map(|r| &r.args)
        .filter_map(|a| match a {
            ResolvedArg::Buffer {
                name,
                allow_degenerate: true,
                ..
            } => Some(name.clone()),
            _ => None,
        })
        .collect()
}

type Pending = (usize, Pair, resolve::Found, Option<HarnessOrigin>);

fn run_on_workers(
    pairs: &[Pair],
    pending: Vec<Pending>,
    cfg: &SelfcheckConfig,
    reports: &mut [Option<Report>],
    sink: &Sink,
) {
    // A killed run's reports for the same inputs are kept, not checked again (the plain
    // self-check only: a sanitizer pass adds its checks after the partial line is written).
    let mut keys: BTreeMap<usize, String> = BTreeMap::new();
    let mut reused = 0;
    let mut pending = pending;
    if cfg.sanitizer.is_empty() {
        pending.retain(|(i, _, found, _)| {
            let key = inputs_key(&pairs[*i], &found.path, cfg);
            match sink.earlier(&key) {
                Some(r) => {
                    sink.put(reports, *i, r);
                    reused += 1;
                    false
                }
                None => {
                    keys.insert(*i, key);
                    true
                }
            }
        });
    }
    if reused > 0 {
        eprintln!("self-check: {reused} report(s) reused from the interrupted run's partial file");
    }
    if pending.is_empty() {
        return;
    }
    let launch = pool::launcher_for(cfg.worker_cmd.as_deref(), Vec::new());
    let devices = match cfg.gpus {
        Some(n) => n,
        None => match crate::gpu::probe() {
            crate::gpu::Probe::Ready { devices } => devices,
            crate::gpu::Probe::NoGpu(reason) => {
                for (i, _, f, o) in pending {
                    let why = format!("no_gpu: {reason}");
                    let path = Some(f.path.display().to_string());
                    let r = report(&pairs[i], path, o, Some(("runs_clean", why)), None);
                    sink.put(reports, i, r);
                }
                return;
            }
        },
    };
    let hello_timeout = Duration::from_secs(60);
    let workers: Vec<pool::Worker> = (0..devices)
        .filter_map(|d| {
            pool::Worker::spawn(&launch, d, hello_timeout, pool::ProcessGroup::Parent).ok()
        })
        .collect();
    let Some(hello) = workers.first().map(|w| w.hello.clone()) else {
        for (i, _, f, o) in pending {
            let why = "no_gpu: no worker could be started".to_string();
            let path = Some(f.path.display().to_string());
            let r = report(&pairs[i], path, o, Some(("runs_clean", why)), None);
            sink.put(reports, i, r);
        }
        return;
    };
    let options = RunOptions {
        seeds: cfg.seeds.max(2),
        selfcheck: true,
        ..RunOptions::default()
    };
    let mut jobs = Vec::new();
    let mut meta: BTreeMap<usize, (String, Option<HarnessOrigin>, BTreeSet<String>)> =
        BTreeMap::new();
    for (i, ip, found, origin) in pending {
        let path = found.path.display().to_string();
        match resolve::resolve(&ip, &found, &hello) {
            Ok((slow, fast, mut sets)) => {
                identity_sets(&ip, &mut sets);
                meta.insert(i, (path.clone(), origin, degenerate_allowed(&sets)));
                jobs.push((
                    i,
                    Job {
                        pair_id: ip.id.clone(),
                        slow,
                        fast,
                        harness: path,
                        sets,
                        options: options.clone(),
                    },
                ));
            }
            Err((status, why)) => {
                let c = failed_check(status).unwrap_or("harness");
                let r = report(&pairs[i], Some(path), origin, Some((c, why)), None);
                sink.put(reports, i, r);
            }
        }
    }
    let sanitize_jobs = (!cfg.sanitizer.is_empty()).then(|| jobs.clone());
    let mut ran = BTreeSet::new();
    let progress = crate::progress::Progress::new("self-check", jobs.len());
    let label = |i: usize| format!("{}/{}", pairs[i].benchmark, pairs[i].fast.kernel);
    pool::run_all(
        workers,
        jobs,
        launch.clone(),
        cfg.timeout,
        hello_timeout,
        (&progress, &label),
        |i, v| {
            if crate::verify::sanitizer::worth_sanitizing(v.status) {
                ran.insert(i);
            }
            let (path, origin, flags) = meta.get(&i).cloned().unwrap_or_default();
            let ms = v.evidence.phases_ms.get("total").copied();
            let mut r = report(&pairs[i], Some(path), origin, judge(&v, &flags), ms);
            // Only a run on the GPU is worth keeping for a rerun: a worker lost to a crash
            // or a missing GPU is asked again.
            if v.status != Status::NoGpu {
                r.inputs = keys.get(&i).cloned().unwrap_or_default();
            }
            sink.put(reports, i, r);
        },
    );
    progress.done();
    if let Some(jobs) = sanitize_jobs {
        let targets = jobs.into_iter().filter(|(i, _)| ran.contains(i)).collect();
        let o = sanitize::Options {
            tools: &cfg.sanitizer,
            binary: cfg.compute_sanitizer.as_deref(),
            devices,
            launch,
            timeout: cfg.timeout,
            hello_timeout,
        };
        sanitize::sanitize(&o, targets, reports);
    }
}

pub fn run(cmd: HarnessCommand) -> anyhow::Result<u8> {
    let HarnessCommand::Selfcheck {
        units,
        harness_dirs,
        inferred_dir,
        suite_root,
        pair,
        seeds,
        timeout_s,
        out,
        records_out,
        worker_cmd,
        gpus,
        sanitizer,
        compute_sanitizer,
    } = cmd
    else {
        anyhow::bail!("not a selfcheck command");
    };
    let records = crate::jsonl::read_records(&units)?;
    let pairs: Vec<Pair> = records
        .iter()
        .cloned()
        .filter_map(|r| match r {
            Record::Pair(p) => Some(*p),
            _ => None,
        })
        .filter(|p| pair.as_deref().is_none_or(|id| p.id.starts_with(id)))
        .collect();
    let cfg = SelfcheckConfig {
        harness_dirs,
        inferred_dir,
        suite_root,
        seeds,
        timeout: Duration::from_secs_f64(timeout_s.max(0.1)),
        worker_cmd,
        gpus,
        sanitizer,
        compute_sanitizer,
        partial: out.as_deref().map(crate::verify::partial_path),
    };
    let base = units.parent().map(Path::to_path_buf).unwrap_or_default();
    let reports = selfcheck_pairs(&pairs, &base, &cfg);
    for r in &reports {
        let origin = r
            .origin
            .map(|o| format!("{o:?}").to_lowercase())
            .unwrap_or_else(|| "none".into());
        match r.checks.iter().find(|c| c.result == CheckResult::Fail) {
            None => println!(
                "{} {}/{} [{origin}]: PASS ({} checks{})",
                &r.pair_id,
                r.benchmark,
                r.kernel,
                r.checks.len(),
                r.ms.map(|m| format!(", {m:.0} ms")).unwrap_or_default()
            ),
            Some(c) => println!(
                "{} {}/{} [{origin}]: FAIL {} ({}): {}",
                &r.pair_id,
                r.benchmark,
                r.kernel,
                c.name,
                r.category.as_deref().unwrap_or(""),
                c.detail.lines().next().unwrap_or("")
            ),
        }
    }
    let passed = reports.iter().filter(|r| r.pass).count();
    eprintln!("self-check: {passed} of {} harnesses pass", reports.len());
    if let Some(o) = out {
        crate::jsonl::write_atomic(&o, |w| {
            use std::io::Write;
            for r in &reports {
                writeln!(
                    w,
                    "{}",
                    serde_json::to_string(r).map_err(std::io::Error::other)?
                )?;
            }
            Ok(())
        })?;
        // The whole report is written: the lines kept as they came are no longer needed.
        if let Some(p) = &cfg.partial {
            let _ = std::fs::remove_file(p);
        }
    }
    if let Some(o) = records_out {
        let out = with_provenance(records, &reports);
        crate::jsonl::write_records(&o, &out)?;
    }
    Ok(if passed == reports.len() {
        exit::OK
    } else {
        exit::PARTIAL
    })
}

/// Records with each self-checked pair's harness path and provenance set from its report.
pub fn with_provenance(records: Vec<Record>, reports: &[Report]) -> Vec<Record> {
    let by_id: BTreeMap<&str, &Report> = reports.iter().map(|r| (r.pair_id.as_str(), r)).collect();
    records
        .into_iter()
        .map(|r| match r {
            Record::Pair(mut p) => {
                if let Some(rep) = by_id.get(p.id.as_str()) {
                    if let (Some(h), Some(origin)) = (&rep.harness, rep.origin) {
                        p.harness = Some(h.clone());
                        let failure = rep
                            .checks
                            .iter()
                            .find(|c| c.result == CheckResult::Fail)
                            .map(|c| {
                                format!("{}: {}", c.name, c.detail.lines().next().unwrap_or(""))
                            });
                        p.harness_origin = Some(crate::record::HarnessProvenance {
                            origin,
                            selfcheck_pass: Some(rep.pass),
                            selfcheck_failure: failure,
                        });
                    }
                }
                Record::Pair(p)
            }
            other => other,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_reach_the_partial_file_as_they_are_made() {
        let d = tempfile::tempdir().unwrap();
        let partial = d.path().join("report.jsonl.partial");
        let sink = Sink::open(Some(&partial));
        let mut reports: Vec<Option<Report>> = vec![None, None];
        let r = Report {
            inputs: String::new(),
            pair_id: "p1".into(),
            benchmark: "b".into(),
            kernel: "k".into(),
            harness: None,
            origin: None,
            pass: false,
            category: Some("harness".into()),
            checks: checks_from(Some(("harness", "no harness".into()))),
            ms: None,
        };
        sink.put(&mut reports, 1, r);
        // On disk before the run ends: a crash now keeps this report.
        let text = std::fs::read_to_string(&partial).unwrap();
        assert_eq!(text.lines().count(), 1);
        assert!(text.contains("\"pair_id\":\"p1\""), "{text}");
        assert!(reports[1].is_some() && reports[0].is_none());
        // Without a file, reports only fill their slots.
        let mut again: Vec<Option<Report>> = vec![None];
        Sink::open(None).put(&mut again, 0, reports[1].clone().unwrap());
        assert!(again[0].is_some());
    }

    /// A run that writes NaN from finite inputs is a NaN output (the worker reports it
    /// `degenerate` before comparing the two runs), not a race; where the inputs hold NaN
    /// themselves, NaN in both runs agrees, and one NaN against a number stays a
    /// nondeterminism.
    #[test]
    fn nan_outputs_are_degenerate_not_a_race() {
        use crate::harness::{ElemType, HostBuffer};
        use crate::verify::compare;
        let tol = Tolerance {
            atol: 0.0,
            rtol: 0.0,
            l2: 0.0,
            scale: 0.0,
        };
        let f32s = |v: &[f64]| HostBuffer::from_f64s(ElemType::F32, v);
        let verification =
            |status: Status, reason: String, c: Option<crate::evidence::Comparison>| Verification {
                status,
                reason,
                device: None,
                evidence: crate::evidence::Evidence {
                    checks: c
                        .into_iter()
                        .map(|comparison| crate::evidence::CheckEvidence {
                            size_set: "default".into(),
                            seed: 0,
                            output: "y".into(),
                            fast_hash: None,
                            slow_from_earlier_pair: false,
                            comparison,
                        })
                        .collect(),
                    ..Default::default()
                },
                speedup: None,
                tool_version: String::new(),
                flags: Vec::new(),
            };
        let run = f32s(&[1.0, f64::NAN, f64::NAN]);
        let d = compare::non_finite(&run, true, false).unwrap();
        let v = verification(
            d.status(),
            format!(
                "size set default, seed 0, fast kernel: output y: {}",
                d.describe()
            ),
            None,
        );
        let (check, why) = judge(&v, &BTreeSet::new()).unwrap();
        assert_eq!(check, "non_degenerate");
        assert!(
            why.contains("2 elements are NaN, the first at index 1"),
            "{why}"
        );
        assert_eq!(
            category(check, &why),
            "NaN output (random inputs outside the kernel's domain)"
        );
        // NaN inputs: the same NaN twice agrees; NaN against a number is a race.
        let c = compare::compare(&run, &run, &tol);
        assert!(c.pass && c.both_nan == 2, "{c:?}");
        let c = compare::compare(&f32s(&[1.0, 2.0, f64::NAN]), &run, &tol);
        assert!(!c.pass);
        let v = verification(Status::Mismatch, compare::describe(&c), Some(c));
        assert_eq!(judge(&v, &BTreeSet::new()).unwrap().0, "deterministic");
    }

    #[test]
    fn checks_after_the_first_failure_are_not_run() {
        let c = checks_from(Some(("deterministic", "differs".into())));
        let r: Vec<CheckResult> = c.iter().map(|c| c.result).collect();
        assert_eq!(
            r,
            [
                CheckResult::Pass,
                CheckResult::Pass,
                CheckResult::Pass,
                CheckResult::Fail,
                CheckResult::NotRun,
                CheckResult::NotRun
            ]
        );
        assert!(checks_from(None)
            .iter()
            .all(|c| c.result == CheckResult::Pass));
    }

    #[test]
    fn statuses_map_to_checks() {
        assert_eq!(failed_check(Status::NotFaster), None);
        assert_eq!(failed_check(Status::Verified), None);
        assert_eq!(failed_check(Status::Unwritten), Some("writes_every_output"));
        assert_eq!(failed_check(Status::Mismatch), Some("deterministic"));
        assert_eq!(failed_check(Status::OutOfBounds), Some("runs_clean"));
        assert_eq!(failed_check(Status::HarnessError), Some("harness"));
    }

    #[test]
    fn seed_independence_is_read_from_hashes() {
        use crate::evidence::{CheckEvidence, Evidence};
        // Checks as the worker records them: a real comparison of two equal buffers.
        let buf = crate::harness::HostBuffer {
            elem: crate::harness::ElemType::F32,
            bytes: 1.0f32.to_le_bytes().to_vec(),
        };
        let cmp = crate::verify::compare::compare(
            &buf,
            &buf,
            &Tolerance::default_for(crate::harness::ElemType::F32),
        );
        let check = |seed, output: &str, hash: &str| CheckEvidence {
            size_set: "default".into(),
            seed,
            output: output.into(),
            fast_hash: Some(hash.into()),
            slow_from_earlier_pair: false,
            comparison: cmp.clone(),
        };
        let ev = Evidence {
            checks: vec![
                check(0, "o", "aa"),
                check(1, "o", "aa"),
                check(0, "p", "aa"),
                check(1, "p", "bb"),
            ],
            ..Evidence::default()
        };
        assert_eq!(
            seed_independent(&ev),
            vec![("o".to_string(), "default".to_string())]
        );
        assert!(seed_independent(&Evidence::default()).is_empty());
        // A flag the harness lets be degenerate need not depend on the seed while another
        // output does; when no output depends on it, the check fails all the same.
        let verdict = |checks: Vec<CheckEvidence>, flags: &[&str]| {
            let v = Verification {
                status: Status::Verified,
                reason: String::new(),
                device: None,
                evidence: Evidence {
                    checks,
                    ..Evidence::default()
                },
                speedup: None,
                tool_version: String::new(),
                flags: Vec::new(),
            };
            judge(&v, &flags.iter().map(|f| f.to_string()).collect())
        };
        let both = || {
            vec![
                check(0, "o", "aa"),
                check(1, "o", "aa"),
                check(0, "p", "aa"),
                check(1, "p", "bb"),
            ]
        };
        assert_eq!(verdict(both(), &[]).unwrap().0, "seed_dependent");
        assert_eq!(verdict(both(), &["o"]), None);
        let neither = vec![check(0, "o", "aa"), check(1, "o", "aa")];
        assert_eq!(verdict(neither, &["o"]).unwrap().0, "seed_dependent");
    }

    #[test]
    fn categories_name_the_cause() {
        assert_eq!(
            category(
                "harness",
                "sizes.in: `net->input_n` reads a struct field of `net`"
            ),
            "size read from a struct filled at run time"
        );
        assert_eq!(
            category("runs_clean", "out_of_bounds: fast wrote past the end of x"),
            "out-of-bounds access (index structure the generator cannot make)"
        );
        assert_eq!(
            category("seed_dependent", ""),
            "output independent of the inputs"
        );
        // The field decides: a size named `blocks` is not a launch problem.
        assert_eq!(
            category(
                "harness",
                "sizes.blocks: `nb` has no definition in the host code"
            ),
            "size computed at run time (data-dependent host code)"
        );
        assert_eq!(
            category(
                "harness",
                "launch.grid: host text \"g\": unknown function divRndUp()"
            ),
            "launch configuration not translatable"
        );
        assert_eq!(
            category("runs_clean", "no_gpu: no CUDA driver"),
            "not run: no GPU"
        );
    }
}

#[cfg(test)]
mod identity_tests {
    use super::*;
    use crate::harness::{parse, DeviceProps};

    /// Slow and fast launch differently (another kernel, grid, block, shared memory) and
    /// the fast side reads a transposed layout: the identity control must run the fast
    /// kernel with the fast side's launches and layout on both sides.
    const DIFFERENT_SIDES: &str = r#"
[sizes]
n = 64
[[size_sets]]
name = "default"
[[args]]
name = "x"
type = "f32"
len = "n * 4"
init = { kind = "uniform", lo = -1.0, hi = 1.0 }
role = "in"
layout.fast = { kind = "transpose", rows = "n", cols = "4", offset = "0" }
[[args]]
name = "y"
type = "f32"
len = "n * 4"
role = "out"
[[variants.slow.launch]]
kernel = "naive"
grid = ["n", 1]
block = 1
[[variants.fast.launch]]
kernel = "tiled"
grid = ["n / 16"]
block = [16, 4]
shared_mem = "16 * 4 * 4"
"#;

    #[test]
    fn identity_control_runs_the_fast_side_launches_and_layouts() {
        let h = parse(DIFFERENT_SIDES, "t.toml").unwrap();
        let before = h.resolve(&h.size_sets()[0], &DeviceProps::h100()).unwrap();
        // The file's own plan: the two sides differ (else this test proves nothing).
        assert_ne!(before.slow, before.fast);
        let id = identity_harness(h);
        let r = [id
            .resolve(&id.size_sets()[0], &DeviceProps::h100())
            .unwrap()];
        assert_eq!(
            r[0].slow, before.fast,
            "slow side = the fast side's launches"
        );
        assert_eq!(r[0].fast, before.fast);
        assert_eq!(r[0].slow[0].kernel, "tiled");
        assert_eq!(
            (
                r[0].slow[0].grid,
                r[0].slow[0].block,
                r[0].slow[0].shared_mem
            ),
            ([4, 1, 1], [16, 4, 1], 256)
        );
        let ResolvedArg::Buffer { layout, .. } = &r[0].args[0] else {
            panic!("x is a buffer")
        };
        assert!(
            layout.slow.is_some() && layout.slow == layout.fast,
            "{layout:?}"
        );
    }
}
