//! Worker processes and the watchdog: one worker per GPU, fed jobs from a shared
//! queue; a job past its deadline gets its worker killed (`timeout`), a worker that
//! dies or reports a sticky CUDA error is restarted (`crashed`), and every job gets
//! an answer, so the batch always completes.

use super::engine::{tool_version, Job};
use super::protocol::{decode, encode, Request, Response};
use crate::gpu::Props;
use crate::record::{DeviceInfo, Status, Verification};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A pair that keeps reporting steps may run this many times its timeout in all.
pub const MAX_EXTEND: f64 = 3.0;

#[derive(Debug, thiserror::Error)]
pub enum PoolError {
    #[error("could not start worker {device}: {message}")]
    Spawn { device: usize, message: String },
    #[error("worker {device} sent no hello: {message}")]
    Hello { device: usize, message: String },
    #[error("{0}")]
    NoGpu(String),
}

/// How to start worker `device` (the real one is `current_exe() worker --device N`;
/// tests substitute a script).
pub type Launcher = Arc<dyn Fn(usize) -> Command + Send + Sync>;

/// The launcher a command asks for: its test override (`--worker-cmd`, `{device}`
/// replaced), else this binary's `worker` with `extra` arguments.
pub fn launcher_for(worker_cmd: Option<&str>, extra: Vec<String>) -> Launcher {
    let Some(cmd) = worker_cmd else {
        return default_launcher(extra);
    };
    let cmd = cmd.to_string();
    Arc::new(move |device| {
        let line = cmd.replace("{device}", &device.to_string());
        let mut parts = line.split_whitespace();
        let mut c = Command::new(parts.next().unwrap_or("false"));
        c.args(parts);
        c
    })
}

pub fn default_launcher(extra: Vec<String>) -> Launcher {
    Arc::new(move |device| {
        let exe = std::env::current_exe().unwrap_or_else(|_| "kernelpair".into());
        let mut c = Command::new(exe);
        c.arg("worker").arg("--device").arg(device.to_string());
        c.args(&extra);
        c
    })
}

#[derive(Debug, Clone)]
pub struct Hello {
    pub device: DeviceInfo,
    pub props: Props,
    pub arch: String,
    pub nvrtc_version: String,
    /// Measured copy bandwidth, GB/s (absent from workers that do not measure it).
    pub bandwidth_gbs: Option<f64>,
}

pub struct Worker {
    pub device: usize,
    pub hello: Hello,
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<String>,
    stderr_tail: Arc<Mutex<VecDeque<String>>>,
    /// Started as the leader of its own process group (a worker under
    /// compute-sanitizer is a grandchild): a kill takes the whole group.
    grouped: bool,
}

/// How a worker started in [`ProcessGroup::Own`] ended its one job.
#[derive(Debug)]
pub struct OneJob {
    /// The worker's answer, if it gave one before its deadline.
    pub verification: Option<Verification>,
    /// It ran past its deadline and was killed.
    pub timed_out: bool,
    /// Exit status of the process (None when it had to be killed).
    pub exit: Option<ExitStatus>,
    /// Its last stderr lines.
    pub stderr_tail: Vec<String>,
}

const STDERR_LINES: usize = 20;

/// Where a worker's process stands: in its parent's process group, or in one of its own
/// (for wrappers such as compute-sanitizer whose child is the real worker, so that the
/// whole group can be ended).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessGroup {
    Parent,
    Own,
}

impl Worker {
    pub fn spawn(
        launcher: &Launcher,
        device: usize,
        hello_timeout: Duration,
        group: ProcessGroup,
    ) -> Result<Worker, PoolError> {
        let grouped = group == ProcessGroup::Own;
        let mut cmd = launcher(device);
        if grouped {
            cmd.process_group(0);
        }
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().map_err(|e| PoolError::Spawn {
            device,
            message: e.to_string(),
        })?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(stdout).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        let stderr_tail = Arc::new(Mutex::new(VecDeque::new()));
        let tail = stderr_tail.clone();
        std::thread::spawn(move || {
            for l in BufReader::new(stderr).lines() {
                let Ok(l) = l else { break };
                let mut t = tail.lock().expect("not poisoned");
                if t.len() == STDERR_LINES {
                    t.pop_front();
                }
                t.push_back(l);
            }
        });
        let mut w = Worker {
            device,
            hello: Hello {
                device: DeviceInfo {
                    name: String::new(),
                    sm_count: 0,
                    compute_capability: String::new(),
                    driver_version: String::new(),
                    cuda_version: String::new(),
                    sm_clock_mhz: None,
                    mem_clock_mhz: None,
                },
                props: Props {
                    sm_count: 0,
                    max_threads_per_block: 0,
                    max_shared_per_block_optin: 0,
                    l2_bytes: 0,
                    cc_major: 0,
                    cc_minor: 0,
                },
                arch: String::new(),
                nvrtc_version: String::new(),
                bandwidth_gbs: None,
            },
            child,
            stdin,
            lines,
            stderr_tail,
            grouped,
        };
        // Lines before the hello that are not protocol (a wrapper's banner) are skipped.
        let deadline = Instant::now() + hello_timeout;
        let line = loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match w.lines.recv_timeout(left) {
                Ok(l) if decode::<Response>(&l).is_err() && l.trim_start().starts_with('=') => {
                    continue
                }
                Ok(l) => break l,
                Err(e) => {
                    // Give the stderr reader a moment to drain the last lines.
                    std::thread::sleep(Duration::from_millis(50));
                    let tail = w.tail();
                    w.kill();
                    return Err(PoolError::Hello {
                        device,
                        message: format!("{e:?}; stderr: {}", tail.join(" | ")),
                    });
                }
            }
        };
        match decode::<Response>(&line) {
            Ok(Response::Hello {
                device: d,
                props,
                arch,
                nvrtc_version,
                bandwidth_gbs,
            }) => {
                w.hello = Hello {
                    device: d,
                    props,
                    arch,
                    nvrtc_version,
                    bandwidth_gbs,
                };
                Ok(w)
            }
            Ok(Response::NoGpu { reason }) => {
                w.kill();
                Err(PoolError::NoGpu(reason))
            }
            Ok(other) => {
                w.kill();
                Err(PoolError::Hello {
                    device,
                    message: format!("unexpected first message {other:?}"),
                })
            }
            Err(e) => {
                w.kill();
                Err(PoolError::Hello {
                    device,
                    message: format!("{e}: {line}"),
                })
            }
        }
    }

    fn tail(&self) -> Vec<String> {
        self.stderr_tail
            .lock()
            .expect("not poisoned")
            .iter()
            .cloned()
            .collect()
    }

    fn kill(&mut self) {
        if self.grouped && matches!(self.child.try_wait(), Ok(None)) {
            // The child is not reaped yet, so the group id is still its own.
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", self.child.id())])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Run one job, then let the process end on its own (a wrapper such as
    /// compute-sanitizer writes its report as it exits): send `shutdown`, close
    /// stdin, wait up to `grace`, and kill it only after that. A job past `timeout`
    /// is killed at once.
    pub fn run_to_exit(mut self, job: &Job, timeout: Duration, grace: Duration) -> OneJob {
        let line = encode(Request::Job {
            job: Box::new(job.clone()),
        });
        let _ = writeln!(self.stdin, "{line}").and_then(|_| self.stdin.flush());
        let (verification, timed_out) = match self.answer(&job.pair_id, timeout) {
            Answer::Result { verification, .. } => (Some(*verification), false),
            Answer::Timeout(_) => (None, true),
            Answer::Gone => (None, false),
        };
        let mut exit = None;
        if timed_out {
            self.kill();
        } else {
            let _ = writeln!(self.stdin, "{}", encode(Request::Shutdown));
            let _ = self.stdin.flush();
            let end = Instant::now() + grace;
            loop {
                match self.child.try_wait() {
                    Ok(Some(s)) => {
                        exit = Some(s);
                        break;
                    }
                    Ok(None) if Instant::now() < end => {
                        std::thread::sleep(Duration::from_millis(20))
                    }
                    _ => {
                        self.kill();
                        break;
                    }
                }
            }
        }
        std::thread::sleep(Duration::from_millis(50));
        OneJob {
            verification,
            timed_out,
            exit,
            stderr_tail: self.tail(),
        }
    }

    /// Tell the worker to stop and wait briefly; kill it if it lingers.
    pub fn shutdown(mut self) {
        let _ = writeln!(self.stdin, "{}", encode(Request::Shutdown));
        let _ = self.stdin.flush();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.kill();
    }

    /// Run one job under the watchdog. Returns the verification and whether this
    /// worker is still usable.
    pub fn run(&mut self, job: &Job, timeout: Duration) -> (Verification, bool) {
        let fail = |status, reason: String, tail: Vec<String>, device: &DeviceInfo| Verification {
            status,
            reason,
            device: Some(device.clone()),
            evidence: crate::evidence::Evidence {
                worker_stderr: tail,
                ..Default::default()
            },
            speedup: None,
            tool_version: tool_version(),
            flags: vec![],
        };
        let line = encode(Request::Job {
            job: Box::new(job.clone()),
        });
        if writeln!(self.stdin, "{line}")
            .and_then(|_| self.stdin.flush())
            .is_err()
        {
            let status = self.child.try_wait().ok().flatten();
            let v = fail(
                Status::Crashed,
                format!(
                    "worker {} was gone before the pair was sent ({status:?})",
                    self.device
                ),
                self.tail(),
                &self.hello.device,
            );
            return (v, false);
        }
        match self.answer(&job.pair_id, timeout) {
            Answer::Result {
                verification,
                sticky,
            } => {
                if sticky {
                    // It exits on its own after a sticky error; make sure.
                    self.kill();
                }
                (*verification, !sticky)
            }
            Answer::Timeout(why) => {
                self.kill();
                let v = fail(
                    Status::Timeout,
                    format!(
                        "pair {} {why}; worker {} killed and restarted",
                        job.pair_id, self.device
                    ),
                    self.tail(),
                    &self.hello.device,
                );
                (v, false)
            }
            Answer::Gone => {
                let status = self.child.wait().ok();
                // Give the stderr reader a moment to drain the last lines.
                std::thread::sleep(Duration::from_millis(50));
                let tail = self.tail();
                let last = tail.last().cloned().unwrap_or_default();
                let v = fail(
                    Status::Crashed,
                    format!(
                        "worker {} died while running pair {} ({}){}",
                        self.device,
                        job.pair_id,
                        status.map(|s| s.to_string()).unwrap_or_default(),
                        if last.is_empty() {
                            String::new()
                        } else {
                            format!(": {last}")
                        }
                    ),
                    tail,
                    &self.hello.device,
                );
                (v, false)
            }
        }
    }

    /// Wait up to `timeout` for the result of pair `pair_id`, skipping stray output (a
    /// kernel's printf reaching stdout, say) and other pairs' lines.
    ///
    /// `timeout` is a no-progress limit: each step the worker reports (a compile, a seed's
    /// check, a timing round) starts it again, so a pair whose kernels are slow but run
    /// finishes, while a hung kernel is cut off `timeout` after its last step. A pair still
    /// reporting steps is cut off at [`MAX_EXTEND`] times `timeout` in all.
    fn answer(&self, pair_id: &str, timeout: Duration) -> Answer {
        let start = Instant::now();
        let cap = start + timeout.mul_f64(MAX_EXTEND);
        let mut deadline = start + timeout;
        let mut last_step: Option<String> = None;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(l) => match decode::<Response>(&l) {
                    Ok(Response::Result {
                        pair_id: id,
                        verification,
                        sticky,
                    }) if id == pair_id => {
                        return Answer::Result {
                            verification,
                            sticky,
                        }
                    }
                    Ok(Response::Progress { pair_id: id, step }) if id == pair_id => {
                        deadline = (Instant::now() + timeout).min(cap);
                        last_step = Some(step);
                    }
                    _ => continue,
                },
                Err(RecvTimeoutError::Timeout) => {
                    let secs = timeout.as_secs_f64();
                    let why = match (&last_step, Instant::now() >= cap) {
                        (Some(s), true) => format!(
                            "was still running after {:.0} s ({MAX_EXTEND}× the {secs:.0} s timeout; last step: {s})",
                            secs * MAX_EXTEND
                        ),
                        (Some(s), false) => {
                            format!("made no progress for {secs:.0} s after its last step ({s})")
                        }
                        (None, _) => format!("did not finish within {secs:.0} s"),
                    };
                    return Answer::Timeout(why);
                }
                Err(RecvTimeoutError::Disconnected) => return Answer::Gone,
            }
        }
    }
}

/// How waiting for a job's result ended.
enum Answer {
    Result {
        verification: Box<Verification>,
        sticky: bool,
    },
    /// Nothing came within the timeout: why, in words ("did not finish within 60 s").
    Timeout(String),
    /// The worker's stdout closed: it died.
    Gone,
}

/// What a worker thread tells the pool's caller: a job went to a worker, its proof was
/// decided, or it finished.
enum Event {
    Start(usize),
    Proved(usize, Proved),
    Done(usize, Box<Verification>),
}

/// A job's first phase: a job of its own (a harness proving itself: the fast kernel against
/// itself) that runs on the same worker just before it, on the modules that worker then
/// has compiled. When the proof says stop, the job never runs: its answer is
/// `harness_error` with the proof's reason.
pub struct Proof {
    /// What the proof runs on: pairs with one key (candidates of one fast kernel under one
    /// harness) are proved once per batch.
    pub key: String,
    pub job: Job,
    /// Why the job must not run, from the proof's verification (None: it goes on).
    pub stops: Judge,
}

/// Why a job must not run, from its proof's verification (None: it goes on).
pub type Judge = Box<dyn Fn(&Verification) -> Option<String> + Send + Sync>;

/// A proof's outcome, as the caller gets it before the job's own answer.
#[derive(Debug, Clone)]
pub struct Proved {
    pub key: String,
    pub verification: Box<Verification>,
    /// The reason the job was stopped, if it was.
    pub stopped: Option<String>,
    /// Taken from an earlier job's proof of the same key in this batch.
    pub shared: bool,
}

/// The verification of a job its failed proof stopped.
pub fn stopped_by_proof(reason: &str, proof: &Verification) -> Verification {
    Verification {
        status: Status::HarnessError,
        reason: reason.to_string(),
        device: proof.device.clone(),
        evidence: Default::default(),
        speedup: None,
        tool_version: tool_version(),
        flags: vec![],
    }
}

/// A decided proof: its verification and why it stops its job, if it does.
type Decided = (Box<Verification>, Option<String>);

/// The proofs of a batch by key: decided ones, and the keys a worker is proving now
/// (another job of that key waits for it rather than running it again).
#[derive(Default)]
struct ProofBoard {
    state: Mutex<std::collections::HashMap<String, Option<Decided>>>,
    changed: std::sync::Condvar,
}

impl ProofBoard {
    /// Run `proof` on `w`, or take the outcome of the same key from the board. Returns the
    /// outcome and whether the worker is still usable.
    fn prove(&self, proof: Proof, w: &mut Worker, timeout: Duration) -> (Proved, bool) {
        let mut state = self.state.lock().expect("not poisoned");
        loop {
            match state.get(&proof.key) {
                Some(Some((v, stopped))) => {
                    let outcome = Proved {
                        key: proof.key.clone(),
                        verification: v.clone(),
                        stopped: stopped.clone(),
                        shared: true,
                    };
                    return (outcome, true);
                }
                Some(None) => {
                    state = self.changed.wait(state).expect("not poisoned");
                }
                None => break,
            }
        }
        state.insert(proof.key.clone(), None);
        drop(state);
        let (v, alive) = w.run(&proof.job, timeout);
        let stopped = (proof.stops)(&v);
        let v = Box::new(v);
        self.state
            .lock()
            .expect("not poisoned")
            .insert(proof.key.clone(), Some((v.clone(), stopped.clone())));
        self.changed.notify_all();
        let outcome = Proved {
            key: proof.key,
            verification: v,
            stopped,
            shared: false,
        };
        (outcome, alive)
    }
}

/// A batch's progress and each job's name in it: jobs are named in its lines while they
/// run on a worker, and counted as they finish.
pub type InFlight<'a> = (&'a crate::progress::Progress, &'a dyn Fn(usize) -> String);

/// Run every job on the given workers; `on_done(index, verification)` is called on
/// the calling thread as each finishes (in completion order).
pub fn run_all(
    workers: Vec<Worker>,
    jobs: Vec<(usize, Job)>,
    launcher: Launcher,
    timeout: Duration,
    hello_timeout: Duration,
    progress: InFlight<'_>,
    on_done: impl FnMut(usize, Verification),
) {
    let groups = jobs.into_iter().map(|j| vec![j]).collect();
    run_groups(
        workers,
        groups,
        launcher,
        timeout,
        hello_timeout,
        progress,
        on_done,
    )
}

/// [`run_all`] over groups of jobs: a worker that takes a group runs all of its jobs, in
/// order (pairs sharing a slow side, which the worker's memo then times once).
pub fn run_groups(
    workers: Vec<Worker>,
    groups: Vec<Vec<(usize, Job)>>,
    launcher: Launcher,
    timeout: Duration,
    hello_timeout: Duration,
    progress: InFlight<'_>,
    on_done: impl FnMut(usize, Verification),
) {
    run_proved_groups(
        workers,
        groups,
        std::collections::HashMap::new(),
        (launcher, timeout, hello_timeout),
        progress,
        |_, _| {},
        on_done,
    )
}

/// How workers are (re)started and waited for: the launcher, a job's timeout, the
/// hello timeout.
pub type Watch = (Launcher, Duration, Duration);

/// [`run_groups`] where some jobs have a [`Proof`] to pass first, on the same worker
/// (by record index). `on_proved(index, outcome)` comes on the calling thread before that
/// job's `on_done`. A proof is run once per key in the batch; a second job of the same key
/// takes its outcome (or waits for it while another worker runs it).
pub fn run_proved_groups(
    workers: Vec<Worker>,
    groups: Vec<Vec<(usize, Job)>>,
    proofs: std::collections::HashMap<usize, Proof>,
    (launcher, timeout, hello_timeout): Watch,
    progress: InFlight<'_>,
    mut on_proved: impl FnMut(usize, Proved),
    mut on_done: impl FnMut(usize, Verification),
) {
    let queue = Arc::new(Mutex::new(groups.into_iter().collect::<VecDeque<_>>()));
    let proofs = Arc::new(Mutex::new(proofs));
    let decided: Arc<ProofBoard> = Arc::default();
    let (tx, rx) = mpsc::channel::<Event>();
    let mut handles = Vec::new();
    for w in workers {
        let queue = queue.clone();
        let proofs = proofs.clone();
        let decided = decided.clone();
        let tx = tx.clone();
        let launcher = launcher.clone();
        handles.push(std::thread::spawn(move || {
            let device = w.device;
            let info = w.hello.device.clone();
            let mut worker = Some(w);
            let mut mine: VecDeque<(usize, Job)> = VecDeque::new();
            loop {
                if mine.is_empty() {
                    match queue.lock().expect("not poisoned").pop_front() {
                        Some(g) => mine.extend(g),
                        None => break,
                    }
                }
                let Some((i, job)) = mine.pop_front() else {
                    continue;
                };
                if worker.is_none() {
                    // Restart after a crash or timeout; three tries, then give the
                    // job an answer anyway so the batch completes.
                    let mut last = String::new();
                    for _ in 0..3 {
                        match Worker::spawn(&launcher, device, hello_timeout, ProcessGroup::Parent)
                        {
                            Ok(w) => {
                                worker = Some(w);
                                break;
                            }
                            Err(e) => last = e.to_string(),
                        }
                    }
                    if worker.is_none() {
                        let v = Verification {
                            status: Status::Crashed,
                            reason: format!("worker {device} could not be restarted: {last}"),
                            device: Some(info.clone()),
                            evidence: Default::default(),
                            speedup: None,
                            tool_version: tool_version(),
                            flags: vec![],
                        };
                        let _ = tx.send(Event::Done(i, Box::new(v)));
                        continue;
                    }
                }
                let w = worker.as_mut().expect("spawned above");
                let _ = tx.send(Event::Start(i));
                let proof = proofs.lock().expect("not poisoned").remove(&i);
                if let Some(proof) = proof {
                    let (outcome, alive) = decided.prove(proof, w, timeout);
                    if !alive {
                        worker = None;
                    }
                    let stop = outcome
                        .stopped
                        .clone()
                        .map(|why| stopped_by_proof(&why, &outcome.verification));
                    let _ = tx.send(Event::Proved(i, outcome));
                    if let Some(v) = stop {
                        if tx.send(Event::Done(i, Box::new(v))).is_err() {
                            break;
                        }
                        continue;
                    }
                    if worker.is_none() {
                        // The proof took the worker down but passed (a hand harness is
                        // only reported): the job goes back to the front, for a restart.
                        mine.push_front((i, job));
                        continue;
                    }
                }
                let w = worker.as_mut().expect("spawned above");
                let (v, alive) = w.run(&job, timeout);
                if !alive {
                    worker = None;
                }
                if tx.send(Event::Done(i, Box::new(v))).is_err() {
                    break;
                }
            }
            if let Some(w) = worker {
                w.shutdown();
            }
        }));
    }
    drop(tx);
    let (bar, label) = progress;
    let mut named: std::collections::BTreeMap<usize, String> = Default::default();
    for e in rx {
        match e {
            Event::Start(i) => {
                let name = label(i);
                bar.start(&name);
                named.insert(i, name);
            }
            Event::Proved(i, outcome) => on_proved(i, outcome),
            Event::Done(i, v) => {
                match named.remove(&i) {
                    Some(name) => bar.finish(&name),
                    None => bar.inc(1, ""),
                }
                on_done(i, *v);
            }
        }
    }
    for h in handles {
        let _ = h.join();
    }
}
