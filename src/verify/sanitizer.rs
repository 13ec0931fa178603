//! The optional compute-sanitizer pass of `verify --sanitizer memcheck,racecheck`.
//!
//! After the normal verification of a batch, each pair whose kernels ran is run once
//! more per requested tool, in a worker started under
//! `compute-sanitizer --tool <tool> --error-exitcode 86 --log-file <tmp> … kernelpair worker`,
//! as a check-only job ([`check_job`]: one seed, the smallest size set, no timing, no
//! canary zones). The pass runs after the batch, never beside it, so an instrumented
//! process never shares the GPU with a pair being timed. The tool writes its report to
//! a log file, so it stays off the worker's JSON stdout; [`parse`] turns the report
//! into evidence (`evidence.sanitizer`, typed in [`crate::evidence::sanitizer`]), and [`apply`] turns a verified pair with
//! errors into `sanitizer_error`. Warnings alone leave a pair verified.
//!
//! Instrumented runs are 10–100× slower than plain ones, so the watchdog deadline of a
//! sanitized job is the pair's deadline × [`SLOWDOWN`].

use super::engine::Job;
use super::pool::{Launcher, ProcessGroup, Worker};
pub use crate::evidence::sanitizer::{
    Message, SanitizerEvidence, SanitizerRun, Severity, Tool, ToolRun,
};
use crate::harness::{Resolved, ResolvedArg};
use crate::record::{Status, Verification};
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

/// The executable's name.
pub const BINARY: &str = "compute-sanitizer";
/// Where the CUDA toolkit puts it when nothing else says.
pub const DEFAULT_DIR: &str = "/usr/local/cuda/bin";
/// The exit code asked of compute-sanitizer when its tool reports errors (distinct
/// from the worker's own codes, 0 and 1).
pub const ERROR_EXIT: i32 = 86;
/// Watchdog deadline multiplier for instrumented runs (they are 10–100× slower; the
/// check-only job does a fraction of a normal pair's work, so 20× suffices).
pub const SLOWDOWN: f64 = 20.0;
/// Messages kept per tool in the evidence; the first is usually the cause, the rest cascades.
const MAX_MESSAGES: usize = 5;
/// Detail lines kept per message (address, thread, allocation).
const MAX_DETAIL: usize = 4;

impl Tool {
    /// Flags for this tool besides `--tool`.
    fn flags(self) -> &'static [&'static str] {
        match self {
            // One analysed report per race rather than every hazard pair.
            Tool::Racecheck => &["--racecheck-report", "analysis"],
            Tool::Memcheck | Tool::Initcheck | Tool::Synccheck => &[],
        }
    }
}

/// Find compute-sanitizer: `explicit` if given, else in PATH, `$CUDA_HOME/bin`,
/// `$CUDA_PATH/bin` and [`DEFAULT_DIR`], in that order. On failure, the message says
/// where it looked.
pub fn locate(explicit: Option<&Path>) -> Result<PathBuf, String> {
    locate_in(
        explicit,
        std::env::var_os("PATH"),
        std::env::var_os("CUDA_HOME"),
        std::env::var_os("CUDA_PATH"),
    )
}

/// [`locate`] with the environment passed in (for tests).
pub fn locate_in(
    explicit: Option<&Path>,
    path: Option<OsString>,
    cuda_home: Option<OsString>,
    cuda_path: Option<OsString>,
) -> Result<PathBuf, String> {
    let not_found = |looked: String| format!("{BINARY} not found (looked in {looked})");
    if let Some(e) = explicit {
        return if is_executable(e) {
            Ok(e.to_path_buf())
        } else {
            Err(not_found(e.display().to_string()))
        };
    }
    let mut dirs: Vec<PathBuf> = path
        .as_ref()
        .map(|p| std::env::split_paths(p).collect())
        .unwrap_or_default();
    let mut looked = vec!["PATH".to_string()];
    for (var, value) in [("CUDA_HOME", &cuda_home), ("CUDA_PATH", &cuda_path)] {
        match value {
            Some(v) if !v.is_empty() => {
                let d = PathBuf::from(v).join("bin");
                looked.push(format!("${var}/bin = {}", d.display()));
                dirs.push(d);
            }
            _ => looked.push(format!("${var}/bin (unset)")),
        }
    }
    dirs.push(PathBuf::from(DEFAULT_DIR));
    looked.push(DEFAULT_DIR.to_string());
    dirs.iter()
        .map(|d| d.join(BINARY))
        .find(|c| is_executable(c))
        .ok_or_else(|| not_found(looked.join(", ")))
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A parsed compute-sanitizer report.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Report {
    /// The tool's summary line (`ERROR SUMMARY: 3 errors`, `RACECHECK SUMMARY: …`),
    /// present when the tool ran to the end.
    pub summary: Option<String>,
    /// Errors per the summary (racecheck: its error count), or, without a summary,
    /// the error reports that name a kernel.
    pub errors: u64,
    pub warnings: u64,
    /// The first `MAX_MESSAGES` reports.
    pub messages: Vec<Message>,
    /// All reports seen, including those not kept.
    pub total_messages: usize,
    /// The tool found no usable GPU (`no CUDA-capable device is detected`).
    pub no_device: bool,
}

impl Report {
    /// The first error that names a kernel, else the first error.
    pub fn first_error(&self) -> Option<&Message> {
        let errs = || {
            self.messages
                .iter()
                .filter(|m| m.severity == Severity::Error)
        };
        errs()
            .find(|m| m.kernel.is_some())
            .or_else(|| errs().next())
    }
}

const PREFIX: &str = "=========";

/// Parse compute-sanitizer's text report (as written with `--log-file`, or mixed
/// with the application's own output on stdout: lines without the prefix are skipped).
pub fn parse(text: &str) -> Report {
    let mut r = Report::default();
    let mut counted_errors = 0u64;
    let mut counted_warnings = 0u64;
    let mut summary_errors: Option<u64> = None;
    let mut summary_warnings: Option<u64> = None;
    // The report being read: index into `messages`, or not kept (past the limit).
    let mut current: Option<Option<usize>> = None;
    for line in text.lines() {
        let lower = line.to_ascii_lowercase();
        if lower.contains("no cuda-capable device")
            || line.contains("CUDA_ERROR_NO_DEVICE")
            || line.contains("cudaErrorNoDevice")
        {
            r.no_device = true;
        }
        let Some(rest) = line.strip_prefix(PREFIX) else {
            continue;
        };
        let body = rest.trim();
        if body.is_empty() {
            current = None;
            continue;
        }
        let indent = rest.len() - rest.trim_start().len();
        if indent > 1 {
            // A detail line of the current report.
            if let Some(Some(i)) = current {
                let m = &mut r.messages[i];
                if body.starts_with("Host Frame")
                    || body.starts_with("Device Frame")
                    || body.starts_with("Saved host backtrace")
                    || body.starts_with("in /")
                {
                    continue;
                }
                if m.kernel.is_none() {
                    m.kernel = kernel_in(body);
                }
                if m.detail.len() < MAX_DETAIL {
                    m.detail.push(body.to_string());
                }
            }
            continue;
        }
        current = None;
        if body == "COMPUTE-SANITIZER" {
            continue;
        }
        if let Some(s) = body.strip_prefix("ERROR SUMMARY:") {
            summary_errors = Some(summary_errors.unwrap_or(0) + first_number(s).unwrap_or(0));
            r.summary = Some(body.to_string());
            continue;
        }
        if let Some(s) = body.strip_prefix("RACECHECK SUMMARY:") {
            // `N hazards displayed (E errors, W warnings)`
            let inner = s.split_once('(').map(|(_, x)| x).unwrap_or("");
            let (e, w) = inner.split_once(',').unwrap_or((inner, ""));
            summary_errors = Some(
                summary_errors.unwrap_or(0) + first_number(e).or(first_number(s)).unwrap_or(0),
            );
            summary_warnings = Some(summary_warnings.unwrap_or(0) + first_number(w).unwrap_or(0));
            r.summary = Some(body.to_string());
            continue;
        }
        if body.starts_with("LEAK SUMMARY:") {
            continue;
        }
        let (severity, text) = if let Some(t) = body.strip_prefix("Warning:") {
            (Severity::Warning, t.trim())
        } else if let Some(t) = body.strip_prefix("Error:") {
            (Severity::Error, t.trim())
        } else {
            (Severity::Error, body)
        };
        let kernel = kernel_in(text);
        match (severity, &kernel) {
            (Severity::Error, Some(_)) => counted_errors += 1,
            (Severity::Warning, _) => counted_warnings += 1,
            _ => {}
        }
        r.total_messages += 1;
        if r.messages.len() < MAX_MESSAGES {
            r.messages.push(Message {
                severity,
                text: text.to_string(),
                kernel,
                detail: Vec::new(),
            });
            current = Some(Some(r.messages.len() - 1));
        } else {
            current = Some(None);
        }
    }
    // Detail lines name the kernel of headlines that do not (memcheck's `at k+0x90`).
    counted_errors = counted_errors.max(
        r.messages
            .iter()
            .filter(|m| m.severity == Severity::Error && m.kernel.is_some())
            .count() as u64,
    );
    r.errors = summary_errors.unwrap_or(counted_errors);
    r.warnings = summary_warnings.unwrap_or(counted_warnings);
    if r.no_device {
        r.errors = 0;
    }
    r
}

fn first_number(s: &str) -> Option<u64> {
    let digits: String = s
        .trim_start()
        .chars()
        .skip_while(|c| !c.is_ascii_digit())
        .take_while(|c| c.is_ascii_digit() || *c == ',')
        .filter(|c| *c != ',')
        .collect();
    digits.parse().ok()
}

/// The kernel a report line names: `at k+0x90`, `at k(const float *, int)+0x70 in
/// f.cu:6`, `at void k<256>(float *)+0x10`, or the older `at 0xd80 in f.cu:162:void k(…)`.
pub fn kernel_in(line: &str) -> Option<String> {
    let start = if let Some(r) = line.strip_prefix("at ") {
        r
    } else {
        let i = line.find(" at ")?;
        &line[i + 4..]
    };
    let sig = if start.starts_with("0x") {
        // `0xd80 in /path/f.cu:162:void k<…>(…)`: the signature follows `file:line:`;
        // without line information, `0x70 in k(float*)`.
        let (_, loc) = start.split_once(" in ")?;
        let mut parts = loc.splitn(3, ':');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(_), Some(n), Some(sig))
                if !n.is_empty() && n.chars().all(|c| c.is_ascii_digit()) =>
            {
                sig
            }
            _ => loc,
        }
    } else {
        start.split_once("+0x")?.0
    };
    let sig = sig.trim();
    let sig = sig.strip_prefix("void ").unwrap_or(sig);
    // The name without its parameter list.
    let name = match sig.find('(') {
        Some(0) | None => sig,
        Some(i) => &sig[..i],
    };
    let name = name.trim();
    (!name.is_empty()).then(|| name.to_string())
}

/// The check-only job for `job`: one seed, the smallest size set (fewest buffer
/// bytes), no timing, no canaries.
pub fn check_job(job: &Job) -> Job {
    let mut j = job.clone();
    if let Some(small) = job.sets.iter().min_by_key(|s| buffer_bytes(s)) {
        j.sets = vec![small.clone()];
    }
    j.options.seeds = 1;
    j.options.check_only = true;
    j
}

fn buffer_bytes(r: &Resolved) -> usize {
    r.args
        .iter()
        .map(|a| match a {
            ResolvedArg::Buffer { elem, len, .. } => len * elem.size_of(),
            ResolvedArg::Scalar { .. } | ResolvedArg::Struct { .. } | ResolvedArg::Bytes { .. } => {
                0
            }
        })
        .sum()
}

/// Whether a pair's kernels ran, so a sanitizer pass has something to look at (not
/// compile or harness errors, not hangs: a hang under instrumentation only waits longer).
pub fn worth_sanitizing(status: Status) -> bool {
    matches!(
        status,
        Status::Verified
            | Status::NotFaster
            | Status::Reversed
            | Status::Mismatch
            | Status::OutOfBounds
            | Status::Unwritten
            | Status::Degenerate
            | Status::Crashed
    )
}

impl ToolRun {
    /// Build from the parsed report and how the process ended.
    pub fn from_report(rep: Report, exit_code: Option<i32>, problem: Option<String>) -> ToolRun {
        let mut run = ToolRun {
            ran: rep.summary.is_some() && !rep.no_device && problem.is_none(),
            errors: rep.errors,
            warnings: rep.warnings,
            messages: rep.messages,
            summary: rep.summary,
            exit_code,
            problem,
            ..ToolRun::default()
        };
        if rep.no_device {
            run.problem
                .get_or_insert_with(|| "compute-sanitizer found no CUDA-capable device".into());
        } else if exit_code == Some(ERROR_EXIT) && run.errors == 0 {
            run.errors = 1;
            run.problem.get_or_insert_with(|| {
                format!("exit code {ERROR_EXIT} (errors found), but no error could be read from the report")
            });
        } else if run.problem.is_none() && run.summary.is_none() {
            run.problem = Some("the report has no summary line (the tool did not finish)".into());
        }
        run
    }
}

/// Put the pass's evidence into `v` (`evidence.sanitizer`) and, when `v` was verified (or
/// reversed: both are exportable) and a tool reported errors, make it `sanitizer_error`
/// with the tool, kernel and first error as its reason.
pub fn apply(v: &mut Verification, evidence: SanitizerEvidence, runs: &BTreeMap<Tool, ToolRun>) {
    v.evidence.sanitizer = Some(evidence);
    if !matches!(v.status, Status::Verified | Status::Reversed) {
        return;
    }
    let Some((tool, run)) = runs.iter().find(|(_, r)| r.errors > 0) else {
        return;
    };
    v.reason = format!("{}, but {}", v.status.as_str(), error_line(*tool, run));
    v.status = Status::SanitizerError;
}

/// The sanitizer's line for a run with errors: the tool, the count, and the first error
/// with its kernel and address detail (`compute-sanitizer memcheck reported 1 error(s) in
/// kernel k: Invalid __global__ read of size 4 bytes (Access to 0x… is out of bounds)`).
pub fn error_line(tool: Tool, run: &ToolRun) -> String {
    let first = run
        .messages
        .iter()
        .filter(|m| m.severity == Severity::Error)
        .find(|m| m.kernel.is_some())
        .or_else(|| run.messages.iter().find(|m| m.severity == Severity::Error));
    let what = match first {
        Some(m) => {
            let detail = m
                .detail
                .iter()
                .find(|d| d.contains("out of bounds") || d.contains("nearest allocation"))
                .map(|d| format!(" ({d})"))
                .unwrap_or_default();
            format!(
                " in kernel {}: {}{detail}",
                m.kernel.as_deref().unwrap_or("(not named)"),
                m.text
            )
        }
        None => format!(": {}", run.problem.as_deref().unwrap_or("no message")),
    };
    format!(
        "compute-sanitizer {} reported {} error(s){what}",
        tool.as_str(),
        run.errors
    )
}

/// The evidence of a pass that could not run (compute-sanitizer missing).
pub fn skipped(why: &str) -> SanitizerEvidence {
    SanitizerEvidence::Skipped {
        skipped: format!("{why}; --sanitizer skipped"),
    }
}

/// What one pair's pass did, for the evidence.
pub fn pass_evidence(
    binary: &Path,
    job: &Job,
    deadline: Duration,
    runs: &BTreeMap<Tool, ToolRun>,
) -> SanitizerEvidence {
    SanitizerEvidence::Ran(SanitizerRun {
        binary: binary.display().to_string(),
        deadline_s: deadline.as_secs_f64(),
        seeds: job.options.seeds,
        size_set: job.sets.first().map(|s| s.size_set.clone()),
        tools: runs.clone(),
    })
}

/// How to run the pass.
pub struct Pass {
    pub binary: PathBuf,
    pub tools: Vec<Tool>,
    /// Workers to run at once (one per GPU).
    pub devices: usize,
    /// Starts a plain worker for a device; the pass wraps its command.
    pub worker: Launcher,
    /// Deadline of a sanitized job (already scaled by [`SLOWDOWN`]).
    pub timeout: Duration,
    pub hello_timeout: Duration,
}

/// The command running `base` under `tool`, its report going to `log`.
pub fn sanitized_command(binary: &Path, tool: Tool, log: &Path, base: &Command) -> Command {
    let mut c = Command::new(binary);
    c.args(["--tool", tool.as_str()])
        .args(["--error-exitcode", &ERROR_EXIT.to_string()])
        .arg("--log-file")
        .arg(log)
        // API errors are the worker's business (probes, optional symbols), not the kernels'.
        .args(["--report-api-errors", "no"])
        .args(tool.flags())
        .arg(base.get_program())
        .args(base.get_args());
    c
}

static LOG_SEQ: AtomicUsize = AtomicUsize::new(0);

/// Run `job` (a [`check_job`]) once under `tool` on `device`.
pub fn run_tool(pass: &Pass, tool: Tool, device: usize, job: &Job) -> ToolRun {
    let log = std::env::temp_dir().join(format!(
        "kernelpair-sanitizer-{}-{}-{}-{}.log",
        std::process::id(),
        LOG_SEQ.fetch_add(1, Ordering::Relaxed),
        job.pair_id,
        tool.as_str()
    ));
    let _ = std::fs::remove_file(&log);
    let (binary, worker, log2) = (pass.binary.clone(), pass.worker.clone(), log.clone());
    let launcher: Launcher = Arc::new(move |d| sanitized_command(&binary, tool, &log2, &worker(d)));
    let t0 = Instant::now();
    let (mut exit_code, mut problem, mut verdict) = (None, None, None);
    match Worker::spawn(&launcher, device, pass.hello_timeout, ProcessGroup::Own) {
        Err(e) => problem = Some(format!("the worker did not start under {BINARY}: {e}")),
        Ok(w) => {
            let one = w.run_to_exit(job, pass.timeout, Duration::from_secs(120));
            exit_code = one.exit.and_then(|s| s.code());
            if one.timed_out {
                problem = Some(format!(
                    "did not finish within {:.0} s; killed",
                    pass.timeout.as_secs_f64()
                ));
            } else if one.verification.is_none() {
                let last = one.stderr_tail.last().cloned().unwrap_or_default();
                problem = Some(format!("the worker gave no answer: {last}"));
            }
            verdict = one.verification;
        }
    }
    let wall_ms = t0.elapsed().as_secs_f64() * 1e3;
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_file(&log);
    let mut run = ToolRun::from_report(parse(&text), exit_code, problem);
    run.wall_ms = wall_ms;
    if let Some(v) = verdict {
        run.worker_status = Some(v.status);
        run.worker_reason = Some(v.reason);
    }
    run
}

/// Run every (pair, tool) of `targets` (record index, normal job), `pass.devices` at
/// a time; `on_done(index, check job, runs)` is called on the calling thread once all
/// of a pair's tools are done.
pub fn run_pass(
    pass: &Pass,
    targets: Vec<(usize, Job)>,
    mut on_done: impl FnMut(usize, &Job, BTreeMap<Tool, ToolRun>),
) {
    let jobs: BTreeMap<usize, Job> = targets.iter().map(|(i, j)| (*i, check_job(j))).collect();
    let queue: VecDeque<(usize, Tool)> = targets
        .iter()
        .flat_map(|(i, _)| pass.tools.iter().map(move |t| (*i, *t)))
        .collect();
    let queue = Mutex::new(queue);
    let mut pending: BTreeMap<usize, BTreeMap<Tool, ToolRun>> = BTreeMap::new();
    let (tx, rx) = mpsc::channel::<(usize, Tool, ToolRun)>();
    std::thread::scope(|s| {
        for device in 0..pass.devices.max(1) {
            let tx = tx.clone();
            let (queue, jobs) = (&queue, &jobs);
            s.spawn(move || loop {
                let Some((i, tool)) = queue.lock().expect("not poisoned").pop_front() else {
                    break;
                };
                let run = run_tool(pass, tool, device, &jobs[&i]);
                if tx.send((i, tool, run)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        for (i, tool, run) in rx {
            let runs = pending.entry(i).or_default();
            runs.insert(tool, run);
            if runs.len() == pass.tools.len() {
                let runs = pending.remove(&i).unwrap_or_default();
                on_done(i, &jobs[&i], runs);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    /// memcheck on an off-by-one store, as compute-sanitizer prints it for an NVRTC
    /// kernel without line information (the CUDA 12/13 wording).
    const MEMCHECK_OOB: &str = "\
========= COMPUTE-SANITIZER
========= Invalid __global__ write of size 4 bytes
=========     at affine+0x1b0
=========     by thread (3,0,0) in block (3906,0,0)
=========     Access to 0x7f3a4e3d0a0c is out of bounds
=========     and is 1 bytes after the nearest allocation at 0x7f3a4e000000 of size 4,000,012 bytes
=========     Saved host backtrace up to driver entry point at kernel launch time
=========         Host Frame: cuLaunchKernel [0x2f1e35] in libcuda.so.1
=========         Host Frame: kernelpair::gpu::driver::Gpu::launch [0x4a21c0] in kernelpair
=========
========= Invalid __global__ write of size 4 bytes
=========     at affine+0x1b0
=========     by thread (4,0,0) in block (3906,0,0)
=========     Access to 0x7f3a4e3d0a10 is out of bounds
=========     and is 5 bytes after the nearest allocation at 0x7f3a4e000000 of size 4,000,012 bytes
=========
========= ERROR SUMMARY: 2 errors
";

    /// racecheck (analysis report) on a reduction missing a `__syncthreads()`.
    const RACECHECK_HAZARD: &str = "\
========= COMPUTE-SANITIZER
========= Error: Race reported between Write access at block_sum(const float *, float *, int)+0x2f0 in reduce.cu:14
=========     and Read access at block_sum(const float *, float *, int)+0x310 in reduce.cu:16 [248 hazards]
=========
========= Warning: Race reported between Read access at block_sum(const float *, float *, int)+0x340 in reduce.cu:18
=========     and Write access at block_sum(const float *, float *, int)+0x2f0 in reduce.cu:14 [8 hazards]
=========
========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)
";

    const CLEAN: &str = "\
========= COMPUTE-SANITIZER
========= ERROR SUMMARY: 0 errors
";

    const RACECHECK_CLEAN: &str = "\
========= COMPUTE-SANITIZER
========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)
";

    /// A machine whose driver sees no GPU (API error reporting left on).
    const NO_DEVICE: &str = "\
========= COMPUTE-SANITIZER
========= Program hit CUDA_ERROR_NO_DEVICE (error 100) due to \"no CUDA-capable device is detected\" on CUDA API call to cuInit.
=========     Saved host backtrace up to driver entry point at error
=========         Host Frame: cuInit [0x1b2f31] in libcuda.so.1
=========
========= ERROR SUMMARY: 1 error
";

    /// The older wording (CUDA 11): `at 0x… in file:line:signature`.
    const MEMCHECK_OLD: &str = "\
========= Invalid __global__ read of size 4 bytes
=========     at 0x00000070 in /tmp/k.cu:6:void scale<float>(float*, float)
=========     by thread (255,0,0) in block (3,0,0)
=========     Address 0x7f5c2a0003fc is out of bounds
=========
========= ERROR SUMMARY: 1 error
";

    #[test]
    fn memcheck_errors_name_the_kernel_and_the_address() {
        let r = parse(MEMCHECK_OOB);
        assert_eq!(r.errors, 2);
        assert_eq!(r.warnings, 0);
        assert_eq!(r.total_messages, 2);
        assert_eq!(r.summary.as_deref(), Some("ERROR SUMMARY: 2 errors"));
        let m = r.first_error().unwrap();
        assert_eq!(m.text, "Invalid __global__ write of size 4 bytes");
        assert_eq!(m.kernel.as_deref(), Some("affine"));
        assert_eq!(m.detail.len(), MAX_DETAIL);
        assert!(m.detail[3].contains("1 bytes after the nearest allocation"));
        assert!(m.detail.iter().all(|d| !d.contains("Host Frame")));
        assert!(!r.no_device);
    }

    #[test]
    fn racecheck_counts_errors_and_warnings_from_its_summary() {
        let r = parse(RACECHECK_HAZARD);
        assert_eq!((r.errors, r.warnings), (1, 1));
        assert_eq!(r.messages.len(), 2);
        assert_eq!(r.messages[0].severity, Severity::Error);
        assert_eq!(r.messages[1].severity, Severity::Warning);
        assert_eq!(r.messages[0].kernel.as_deref(), Some("block_sum"));
        assert!(r.messages[0].detail[0].contains("[248 hazards]"));
        let c = parse(RACECHECK_CLEAN);
        assert_eq!((c.errors, c.warnings), (0, 0));
        assert!(c.summary.is_some() && c.messages.is_empty());
    }

    #[test]
    fn clean_runs_and_missing_devices_count_no_errors() {
        let c = parse(CLEAN);
        assert_eq!((c.errors, c.warnings, c.messages.len()), (0, 0, 0));
        assert_eq!(c.summary.as_deref(), Some("ERROR SUMMARY: 0 errors"));
        let n = parse(NO_DEVICE);
        assert!(n.no_device);
        assert_eq!(
            n.errors, 0,
            "no device is the machine's problem, not the kernel's"
        );
        let run = ToolRun::from_report(n, Some(ERROR_EXIT), None);
        assert!(!run.ran);
        assert_eq!(run.errors, 0);
        assert!(run.problem.unwrap().contains("no CUDA-capable device"));
    }

    #[test]
    fn older_wording_and_interleaved_application_output_parse() {
        let mixed = format!("{{\"version\":1,\"type\":\"hello\"}}\n{MEMCHECK_OLD}a printf line\n");
        let r = parse(&mixed);
        assert_eq!(r.errors, 1);
        assert_eq!(
            r.first_error().unwrap().kernel.as_deref(),
            Some("scale<float>")
        );
    }

    #[test]
    fn without_a_summary_errors_are_counted_and_the_run_is_not_complete() {
        let cut = MEMCHECK_OOB
            .split("========= ERROR SUMMARY")
            .next()
            .unwrap();
        let r = parse(cut);
        assert_eq!(r.errors, 2);
        assert!(r.summary.is_none());
        let run = ToolRun::from_report(r, None, None);
        assert!(!run.ran);
        assert!(run.problem.unwrap().contains("no summary"));
        // The exit code says errors, the report shows none: still an error.
        let run = ToolRun::from_report(parse(CLEAN), Some(ERROR_EXIT), None);
        assert_eq!(run.errors, 1);
    }

    #[test]
    fn kernel_names_come_from_every_location_form() {
        assert_eq!(kernel_in("at copy+0x90").as_deref(), Some("copy"));
        assert_eq!(
            kernel_in("at saxpy(const float *, float *, int)+0x70 in a.cu:72").as_deref(),
            Some("saxpy")
        );
        assert_eq!(
            kernel_in("at void matvec<256>(const float *, float *)+0x10").as_deref(),
            Some("matvec<256>")
        );
        assert_eq!(
            kernel_in("Race reported between Write access at k+0x140").as_deref(),
            Some("k")
        );
        assert_eq!(
            kernel_in("at 0x00000070 in ns::scale(float*, float)").as_deref(),
            Some("ns::scale")
        );
        assert_eq!(
            kernel_in("at 0x70 in /p/f.cu:6:ns::k<2>(float*)").as_deref(),
            Some("ns::k<2>")
        );
        // Not kernel locations.
        assert_eq!(
            kernel_in("and is 1 bytes after the nearest allocation at 0x7f00 of size 4 bytes"),
            None
        );
        assert_eq!(kernel_in("by thread (3,0,0) in block (1,0,0)"), None);
        assert_eq!(
            kernel_in("Potential WAW hazard detected at __shared__ 0x0 in block (0,0,0) :"),
            None
        );
    }

    #[test]
    fn lookup_goes_path_then_cuda_home_then_cuda_path() {
        use std::os::unix::fs::PermissionsExt;
        let t = tempfile::tempdir().unwrap();
        let mk = |dir: &str, exec: bool| {
            let d = t.path().join(dir);
            std::fs::create_dir_all(d.join("bin")).unwrap();
            let f = d.join("bin").join(BINARY);
            std::fs::write(&f, "#!/bin/sh\n").unwrap();
            let mode = if exec { 0o755 } else { 0o644 };
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
            d
        };
        let on_path = mk("p", true);
        let home = mk("home", true);
        let not_exec = mk("noexec", false);
        let empty = t.path().join("empty");
        std::fs::create_dir_all(&empty).unwrap();
        let os = |p: &Path| Some(p.as_os_str().to_owned());
        let path = std::env::join_paths([empty.clone(), on_path.join("bin")]).unwrap();
        assert_eq!(
            locate_in(None, Some(path), os(&home), None).unwrap(),
            on_path.join("bin").join(BINARY)
        );
        // A file that is not executable is passed over.
        let path = std::env::join_paths([not_exec.join("bin")]).unwrap();
        assert_eq!(
            locate_in(None, Some(path), os(&home), None).unwrap(),
            home.join("bin").join(BINARY)
        );
        assert_eq!(
            locate_in(None, os(&empty), os(&empty), os(&home)).unwrap(),
            home.join("bin").join(BINARY)
        );
        // An explicit path is taken as is, or refused.
        let explicit = home.join("bin").join(BINARY);
        assert_eq!(
            locate_in(Some(&explicit), None, None, None).unwrap(),
            explicit
        );
        let e = locate_in(Some(&empty.join(BINARY)), None, None, None).unwrap_err();
        assert!(
            e.starts_with("compute-sanitizer not found (looked in "),
            "{e}"
        );
        if !Path::new(DEFAULT_DIR).join(BINARY).exists() {
            let e = locate_in(None, os(&empty), None, os(&empty)).unwrap_err();
            assert!(e.contains("PATH"), "{e}");
            assert!(e.contains("$CUDA_HOME/bin (unset)"), "{e}");
            assert!(
                e.contains(&format!("$CUDA_PATH/bin = {}", empty.join("bin").display())),
                "{e}"
            );
            assert!(e.contains(DEFAULT_DIR), "{e}");
        }
    }

    #[test]
    fn the_check_job_is_one_seed_of_the_smallest_size_set_untimed() {
        let path =
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/planted/good_copy/harness.toml");
        let h = crate::harness::load(&path).unwrap();
        let dev = crate::harness::DeviceProps::h100();
        let sets: Vec<Resolved> = h
            .size_sets()
            .iter()
            .map(|s| h.resolve(s, &dev).unwrap())
            .collect();
        assert_eq!(sets[0].size_set, "64M", "the largest set comes first here");
        let src = super::super::engine::Source {
            name: "k.cu".into(),
            source: String::new(),
            symbol: "copy".into(),
            flags: vec![],
        };
        let job = Job {
            pair_id: "p".into(),
            slow: src.clone(),
            fast: src,
            harness: path.display().to_string(),
            sets,
            options: Default::default(),
        };
        let c = check_job(&job);
        assert_eq!(c.sets.len(), 1);
        assert_eq!(c.sets[0].size_set, "odd");
        assert_eq!(c.options.seeds, 1);
        assert!(c.options.check_only && !job.options.check_only);
        // Old workers and jobs without the field read as full runs.
        let mut j = serde_json::to_value(&job.options).unwrap();
        j.as_object_mut().unwrap().remove("check_only");
        let o: super::super::engine::RunOptions = serde_json::from_value(j).unwrap();
        assert!(!o.check_only);
    }

    fn verified() -> Verification {
        Verification {
            status: Status::Verified,
            reason: "agrees".into(),
            device: None,
            evidence: crate::evidence::Evidence {
                harness: "h.toml".into(),
                ..Default::default()
            },
            speedup: None,
            tool_version: "t".into(),
            flags: vec![],
        }
    }

    #[test]
    fn errors_make_a_verified_pair_sanitizer_error_and_warnings_do_not() {
        let mut runs = BTreeMap::new();
        runs.insert(
            Tool::Racecheck,
            ToolRun::from_report(
                parse(&RACECHECK_HAZARD.replace("(1 error, 1 warning)", "(0 errors, 2 warnings)")),
                Some(0),
                None,
            ),
        );
        let ev = |runs: &BTreeMap<Tool, ToolRun>| {
            SanitizerEvidence::Ran(SanitizerRun {
                binary: "cs".into(),
                deadline_s: 40.0,
                seeds: 1,
                size_set: None,
                tools: runs.clone(),
            })
        };
        let mut v = verified();
        apply(&mut v, ev(&runs), &runs);
        assert_eq!(v.status, Status::Verified, "warnings only");
        assert_eq!(
            v.evidence.harness, "h.toml",
            "the worker's evidence is kept"
        );
        assert_eq!(v.evidence.sanitizer, Some(ev(&runs)));

        runs.insert(
            Tool::Memcheck,
            ToolRun::from_report(parse(MEMCHECK_OOB), Some(ERROR_EXIT), None),
        );
        let mut v = verified();
        apply(&mut v, ev(&runs), &runs);
        assert_eq!(v.status, Status::SanitizerError);
        assert!(v.reason.contains("memcheck"), "{}", v.reason);
        assert!(v.reason.contains("kernel affine"), "{}", v.reason);
        assert!(
            v.reason
                .contains("Invalid __global__ write of size 4 bytes"),
            "{}",
            v.reason
        );
        // A reversed pair is exported too, so its errors count the same.
        let mut v = verified();
        v.status = Status::Reversed;
        apply(&mut v, ev(&runs), &runs);
        assert_eq!(v.status, Status::SanitizerError);
        assert!(v.reason.starts_with("reversed, but "), "{}", v.reason);
        // A pair that already failed keeps its status; the evidence is added.
        let mut v = verified();
        v.status = Status::OutOfBounds;
        v.evidence = Default::default();
        apply(&mut v, skipped("x"), &runs);
        assert_eq!(v.status, Status::OutOfBounds);
        assert_eq!(v.evidence.sanitizer, Some(skipped("x")));
    }

    #[test]
    fn the_command_wraps_the_worker_and_sends_the_report_to_a_file() {
        let mut base = Command::new("/bin/kernelpair");
        base.args(["worker", "--device", "1"]);
        let c = sanitized_command(
            Path::new("/cs"),
            Tool::Racecheck,
            Path::new("/tmp/l.log"),
            &base,
        );
        let args: Vec<String> = c
            .get_args()
            .map(|a| a.to_string_lossy().into_owned())
            .collect();
        assert_eq!(c.get_program(), "/cs");
        let joined = args.join(" ");
        assert!(
            joined.starts_with("--tool racecheck --error-exitcode 86 --log-file /tmp/l.log"),
            "{joined}"
        );
        assert!(joined.contains("--racecheck-report analysis"), "{joined}");
        assert!(
            joined.ends_with("/bin/kernelpair worker --device 1"),
            "{joined}"
        );
    }
}
