//! `kernelpair capture`: build each program of a tree with its own build system, run it
//! once under the injection library (`libkernelpair.so`, loaded by the CUDA driver through
//! `CUDA_INJECTION64_PATH`), and keep every launch it makes: a TOML manifest per launch and
//! the bytes of every allocation it could reach, before and after
//! ([`crate::gpu::capture`]). Replay ([`replay`]) turns a manifest into a harness for
//! verify and self-check. Capture runs a suite's own programs, so it runs only on trees a
//! user gives to `capture` (or `build`), each run in a scratch copy of the tree, with a
//! timeout and bounded output; never for `validate`'s folders or LLM output.
//!
//! Layout of a capture folder: `programs.jsonl` (one [`ProgramRecord`] per finished
//! program, appended as each finishes: the journal a rerun resumes from),
//! `launches/<program>/run-<k>/p<pid>-<seq>-<kernel>.toml`, `blobs/`, and `work/` (the
//! scratch copy).

pub mod index;
pub mod replay;
pub mod run;

use crate::exit;
use crate::progress::Progress;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub use index::CaptureIndex;

/// Journal format version.
pub const RECORD_VERSION: u32 = 1;

/// A run ends once this many launches in a row brought nothing new (`--quiet-launches`).
pub const QUIET_LAUNCHES: u64 = 2000;
/// Or once such launches went on for this many seconds (`--quiet-seconds`).
pub const QUIET_SECONDS: f64 = 10.0;

#[derive(Debug, clap::Args)]
pub struct CaptureArgs {
    /// Root of the tree whose programs are built and run.
    pub root: PathBuf,
    /// The capture folder (manifests, blobs, journal); a rerun resumes it.
    #[arg(short, long)]
    pub out: PathBuf,
    /// Suite description (parboil, rodinia, cuda-samples, llm-c, generic, or auto); its
    /// `[capture]` recipe says how programs are built and run.
    #[arg(long, default_value = "auto")]
    pub suite: String,
    /// Only programs whose id contains one of these.
    #[arg(long)]
    pub only: Vec<String>,
    /// Only programs holding one of these files (root-relative paths of kernels): a
    /// folder program holds the files under its folder, a file program its own file.
    /// `build` sets it to the fast kernels of the pairs it can verify.
    #[arg(skip)]
    pub holding: Option<Vec<String>>,
    /// Folder of input files the programs read (`{data}` in recipes; Rodinia's data).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Snapshot the first K launches of each kernel (per process); later ones only count.
    #[arg(long, default_value_t = 1)]
    pub first: u64,
    /// Bytes one launch may snapshot (allocations and globals); over it the launch is a
    /// named skip with its sizes.
    #[arg(long, default_value_t = 1 << 30)]
    pub max_bytes: u64,
    /// Seconds each run may take (else the recipe's, else 120).
    #[arg(long = "timeout-s")]
    pub timeout_s: Option<u64>,
    /// Programs built at once (default: the machine's cores).
    #[arg(long)]
    pub jobs: Option<usize>,
    /// Runs at once on the GPU (separate processes; capture syncs only its own context).
    #[arg(long = "runs-per-gpu", default_value_t = 8)]
    pub runs_per_gpu: usize,
    /// End a run once this many launches in a row brought nothing new to snapshot (a
    /// benchmark loop after the first launches); the run records that it stopped early.
    /// 0 lets every run finish.
    #[arg(long = "quiet-launches", default_value_t = QUIET_LAUNCHES)]
    pub quiet_launches: u64,
    /// Or once such launches have gone on for this many seconds (at least 20 of them;
    /// pauses over 5 s between them, the program's own work, do not count): a naive
    /// kernel's benchmark loop of 50 ms launches would reach the count only after 100 s.
    /// 0 turns the time rule off.
    #[arg(long = "quiet-seconds", default_value_t = QUIET_SECONDS)]
    pub quiet_seconds: f64,
    /// The injection library (default: libkernelpair.so beside this binary).
    #[arg(long)]
    pub inject: Option<PathBuf>,
    /// Folder holding libcupti.so (default: $CUDA_HOME/extras/CUPTI/lib64, the CUDA
    /// install's lib64, or the PyPI nvidia-cuda-cupti wheel's nvidia/cu13/lib).
    #[arg(long)]
    pub cupti: Option<PathBuf>,
    /// Recapture programs the journal already has.
    #[arg(long)]
    pub fresh: bool,
    /// Program folders or `.cu` files (root-relative globs), instead of the suite's recipe.
    #[arg(long)]
    pub programs: Vec<String>,
    /// The build command, instead of the recipe's (`make`).
    #[arg(long)]
    pub build: Option<String>,
    /// A run command (repeatable), instead of the recipe's; `{arg}` takes each `--each`.
    #[arg(long)]
    pub run: Vec<String>,
    /// Values for `{arg}` in run commands (comma list: `--each 1,2,3`).
    #[arg(long, value_delimiter = ',')]
    pub each: Vec<String>,
}

impl CaptureArgs {
    /// The suite's recipe with the command line's overrides.
    fn recipe(
        &self,
        suite: Option<crate::suite::desc::CaptureRecipe>,
    ) -> Option<crate::suite::desc::CaptureRecipe> {
        let given = !self.programs.is_empty()
            || self.build.is_some()
            || !self.run.is_empty()
            || !self.each.is_empty();
        if !given {
            return suite;
        }
        let mut r = suite.unwrap_or_default();
        if !self.programs.is_empty() {
            r.programs = self.programs.clone();
        }
        if let Some(b) = &self.build {
            r.build = Some(b.clone());
        }
        if !self.run.is_empty() {
            r.run = self.run.clone();
        }
        if !self.each.is_empty() {
            r.each = self.each.clone();
        }
        Some(r)
    }
}

/// How capturing one program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProgramStatus {
    /// At least one launch was captured (a run may still have failed later).
    Captured,
    /// Every run exited 0 and launched no kernel.
    NoLaunches,
    CaptureBuildFailed,
    CaptureRunFailed,
    Timeout,
}

impl ProgramStatus {
    pub fn name(self) -> &'static str {
        match self {
            ProgramStatus::Captured => "captured",
            ProgramStatus::NoLaunches => "no_launches",
            ProgramStatus::CaptureBuildFailed => "capture_build_failed",
            ProgramStatus::CaptureRunFailed => "capture_run_failed",
            ProgramStatus::Timeout => "timeout",
        }
    }
}

/// One process of a program's runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRecord {
    pub command: String,
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub seconds: f64,
    /// Manifests it wrote.
    pub launches: usize,
    /// An input file the run said it could not open, which does not exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<String>,
    /// For a failed run that names no missing input: relative file paths the program's own
    /// sources state as string literals (`file_name = "input/NYR_input.dat"`, a default a
    /// crash after a NULL `fopen` never prints) that do not exist beside it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub named_in_source: Vec<String>,
    /// The capture library ended the run after `--quiet-launches` launches brought nothing new.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_early: bool,
}

/// What capture did with one program (a line of `programs.jsonl`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProgramRecord {
    pub version: u32,
    pub program: String,
    pub status: ProgramStatus,
    pub reason: String,
    pub launches: usize,
    pub build_seconds: f64,
    pub seconds: f64,
    pub runs: Vec<RunRecord>,
    /// The end of the failing build's or run's output.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub log_tail: String,
    /// The `--data` folder the program ran with: a rerun with other data runs it again
    /// when its runs failed or launched nothing, and one with the same data does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// Makefiles of the scratch copy retargeted to `-arch=native` because the toolkit
    /// refused their architecture, before the build ran again (0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub retargeted_makefiles: usize,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl ProgramRecord {
    pub fn new(program: &str) -> ProgramRecord {
        ProgramRecord {
            version: RECORD_VERSION,
            program: program.to_string(),
            status: ProgramStatus::CaptureRunFailed,
            reason: String::new(),
            launches: 0,
            build_seconds: 0.0,
            seconds: 0.0,
            runs: Vec::new(),
            log_tail: String::new(),
            data: None,
            retargeted_makefiles: 0,
        }
    }
}

/// Whether program `p` holds the root-relative file `f`: its own file, or a file under its
/// folder (every file, for a program at the root).
pub fn holds(p: &run::Program, f: &str) -> bool {
    match &p.file {
        Some(file) if p.dir.is_empty() => f == file,
        Some(file) => {
            f.strip_prefix(p.dir.as_str())
                .and_then(|r| r.strip_prefix('/'))
                == Some(file)
        }
        None => {
            p.dir.is_empty()
                || f.strip_prefix(p.dir.as_str())
                    .is_some_and(|r| r.starts_with('/'))
        }
    }
}

/// The journal of a capture folder.
pub fn journal_path(out: &Path) -> PathBuf {
    out.join("programs.jsonl")
}

/// Finished programs in a capture folder's journal (a torn last line is ignored: the
/// program it was writing is captured again).
pub fn read_journal(out: &Path) -> Vec<ProgramRecord> {
    let Ok(text) = std::fs::read_to_string(journal_path(out)) else {
        return Vec::new();
    };
    let mut latest: BTreeMap<String, ProgramRecord> = BTreeMap::new();
    for line in text.lines() {
        if let Ok(r) = serde_json::from_str::<ProgramRecord>(line) {
            latest.insert(r.program.clone(), r);
        }
    }
    latest.into_values().collect()
}

/// The launch folder of the program at the tree's root (id `.`).
pub const ROOT_DIR: &str = "_root";

/// A program's launch folder: its id with `/` kept as folders.
pub fn launches_dir(out: &Path, program: &str) -> PathBuf {
    if program == "." || program.is_empty() {
        return out.join("launches").join(ROOT_DIR);
    }
    let safe: String = program
        .chars()
        .map(|c| match c {
            '/' => '/',
            c if c.is_ascii_alphanumeric() || "._-".contains(c) => c,
            _ => '_',
        })
        .collect();
    out.join("launches").join(safe.trim_start_matches('/'))
}

/// The injection library: `--inject`, `KERNELPAIR_INJECT`, or `libkernelpair.so` beside
/// this binary (or one folder up, where test binaries live).
pub fn locate_inject(given: Option<&Path>) -> Result<PathBuf, String> {
    if let Some(p) = given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("KERNELPAIR_INJECT").map(PathBuf::from))
    {
        return match p.is_file() {
            true => Ok(p.canonicalize().unwrap_or(p)),
            false => Err(format!("injection library {} does not exist", p.display())),
        };
    }
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut dir = exe.parent();
    for _ in 0..2 {
        let Some(d) = dir else { break };
        let p = d.join("libkernelpair.so");
        if p.is_file() {
            return Ok(p);
        }
        dir = d.parent();
    }
    Err(format!(
        "libkernelpair.so is not beside {} (cargo build makes it; or give --inject)",
        exe.display()
    ))
}

/// The folder holding `nvcc`: on PATH, else `$CUDA_HOME/bin`, else `/usr/local/cuda/bin`.
pub fn nvcc_dir() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(std::env::var_os("CUDA_HOME").map(|h| PathBuf::from(h).join("bin")))
        .chain([PathBuf::from("/usr/local/cuda/bin")])
        .find(|d| d.join("nvcc").is_file())
}

/// The folder holding libcupti: `--cupti`, `KERNELPAIR_CUPTI`, then the CUDA install.
pub fn locate_cupti(given: Option<&Path>) -> Result<PathBuf, String> {
    let has = |d: &Path| {
        std::fs::read_dir(d)
            .map(|rd| {
                rd.filter_map(|e| e.ok())
                    .any(|e| e.file_name().to_string_lossy().starts_with("libcupti.so"))
            })
            .unwrap_or(false)
    };
    if let Some(d) = given
        .map(Path::to_path_buf)
        .or_else(|| std::env::var_os("KERNELPAIR_CUPTI").map(PathBuf::from))
    {
        return match has(&d) {
            true => Ok(d),
            false => Err(format!("no libcupti.so* in {}", d.display())),
        };
    }
    let mut tried = Vec::new();
    for base in [
        std::env::var_os("CUDA_HOME").map(PathBuf::from),
        std::env::var_os("CUDA_PATH").map(PathBuf::from),
        Some(PathBuf::from("/usr/local/cuda")),
    ]
    .into_iter()
    .flatten()
    {
        for sub in ["extras/CUPTI/lib64", "lib64", "targets/x86_64-linux/lib"] {
            let d = base.join(sub);
            if has(&d) {
                return Ok(d);
            }
            tried.push(d.display().to_string());
        }
    }
    Err(format!(
        "libcupti.so not found (looked in {}); `pip install nvidia-cuda-cupti` and give --cupti .../nvidia/cu13/lib",
        tried.join(", ")
    ))
}

/// Link every entry of the data folder `src` into `dst` (made if missing), merging into
/// folders `dst` already has (Rodinia's tree ships an empty `data/`); a file the data folder
/// has replaces the tree's. Idempotent, so a resumed capture links again safely.
fn link_data(src: &Path, dst: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(dst)?;
    for e in std::fs::read_dir(src)? {
        let e = e?;
        let from = e.path();
        let to = dst.join(e.file_name());
        let meta = std::fs::symlink_metadata(&to);
        let is_real_dir = meta.as_ref().is_ok_and(|m| m.is_dir());
        if is_real_dir && from.is_dir() {
            link_data(&from, &to)?;
            continue;
        }
        match meta {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&to)?,
            Ok(_) => std::fs::remove_file(&to)?,
            Err(_) => {}
        }
        std::os::unix::fs::symlink(&from, &to)?;
    }
    Ok(())
}

/// Copy `root` to `dst` (regular files and folders; `.git` and symbolic links left out),
/// once: an existing copy is kept, so a resumed capture builds where it built before.
fn scratch_copy(root: &Path, dst: &Path) -> std::io::Result<()> {
    let done = dst.join(".kernelpair-copied");
    if done.is_file() {
        return Ok(());
    }
    for e in walkdir::WalkDir::new(root).follow_links(false) {
        let e = e.map_err(std::io::Error::other)?;
        let rel = e.path().strip_prefix(root).unwrap_or(e.path());
        if rel.components().any(|c| c.as_os_str() == ".git") {
            continue;
        }
        let to = dst.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to)?;
        } else if e.file_type().is_file() {
            std::fs::copy(e.path(), &to)?;
        }
    }
    std::fs::write(done, "")
}

/// Global names the units use (`__constant__`/`__device__` tables), for the injector to
/// snapshot at each launch.
fn global_names(root: &Path, suite: &str) -> (Vec<String>, String) {
    match crate::suite::extract_suite(root, suite, None, "", false) {
        Ok(ex) => (globals_of(&ex.units), ex.suite),
        Err(_) => (Vec::new(), suite.to_string()),
    }
}

/// The `__constant__`/`__device__` globals `units` use, by plain name, sorted and unique.
pub fn globals_of<'a>(
    units: impl IntoIterator<Item = &'a crate::record::KernelUnit>,
) -> Vec<String> {
    let names: BTreeSet<String> = units
        .into_iter()
        .flat_map(|u| u.pulled.globals.iter().cloned())
        .filter(|g| g.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .collect();
    names.into_iter().collect()
}

pub fn run_capture(args: CaptureArgs) -> anyhow::Result<u8> {
    let all = capture_tree(&args, None)?;
    let out = args.out.canonicalize()?;
    print_summary(&all, &out);
    let failed = all
        .iter()
        .any(|r| r.status != ProgramStatus::Captured && r.status != ProgramStatus::NoLaunches);
    Ok(if failed { exit::PARTIAL } else { exit::OK })
}

/// What a caller that already extracted the tree knows (`build`): the suite description
/// (its `[capture]` recipe) and the global names its units use, so capture need not
/// extract the tree again.
pub struct Known {
    pub desc: Option<crate::suite::SuiteDesc>,
    pub globals: Vec<String>,
}

/// Capture every program of `args.root` not yet in the journal (see [`run_capture`]);
/// returns the journal's records afterwards (every program, this run's and earlier ones).
pub fn capture_tree(
    args: &CaptureArgs,
    known: Option<Known>,
) -> anyhow::Result<Vec<ProgramRecord>> {
    let slots = run::GpuSlots::new(args.runs_per_gpu);
    capture_tree_sharing(args, known, &slots, "capture")
}

/// [`capture_tree`] with GPU run slots shared by other trees captured at the same time
/// (`build` captures its suites side by side) and a progress label naming the tree.
pub fn capture_tree_sharing(
    args: &CaptureArgs,
    known: Option<Known>,
    slots: &run::GpuSlots,
    label: &str,
) -> anyhow::Result<Vec<ProgramRecord>> {
    let root = args
        .root
        .canonicalize()
        .map_err(|e| anyhow::anyhow!("{}: {e}", args.root.display()))?;
    std::fs::create_dir_all(&args.out)?;
    let out = args.out.canonicalize()?;
    let inject = locate_inject(args.inject.as_deref()).map_err(anyhow::Error::msg)?;
    let cupti = locate_cupti(args.cupti.as_deref());
    if let Err(why) = &cupti {
        eprintln!("warning: {why}; programs run, but nothing is captured");
    }
    let (globals, suite, desc) = match known {
        Some(k) => {
            let name = k
                .desc
                .as_ref()
                .map_or("generic".to_string(), |d| d.name.clone());
            (k.globals, name, k.desc)
        }
        None => {
            let (g, suite) = global_names(&root, &args.suite);
            let desc = crate::suite::SuiteDesc::builtin(&suite).ok();
            (g, suite, desc)
        }
    };
    let recipe = args.recipe(desc.as_ref().and_then(|d| d.capture.clone()));
    let mut programs = run::discover(&root, recipe.as_ref());
    // Recipes call `nvcc`: where it is installed but not on PATH, their commands get it.
    let on_path = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("nvcc").is_file()));
    if let (false, Some(bin)) = (on_path, nvcc_dir()) {
        let old = std::env::var("PATH").unwrap_or_default();
        let path = format!("{}:{old}", bin.display());
        for p in &mut programs {
            p.env.entry("PATH".into()).or_insert_with(|| path.clone());
        }
    }
    // Old trees call runtime APIs CUDA 13 removed; their documented replacements, unless
    // the recipe sets nvcc's extra flags itself.
    for p in &mut programs {
        p.env
            .entry("NVCC_APPEND_FLAGS".into())
            .or_insert_with(|| run::REMOVED_API_RENAMES.into());
    }
    if !args.only.is_empty() {
        programs.retain(|p| args.only.iter().any(|o| p.id.contains(o.as_str())));
    }
    if let Some(files) = &args.holding {
        let before = programs.len();
        programs.retain(|p| files.iter().any(|f| holds(p, f)));
        eprintln!(
            "{label}: {} of {before} program(s) hold a kernel of a pair this build can verify",
            programs.len()
        );
    }
    if let Some(t) = args.timeout_s {
        for p in &mut programs {
            p.timeout = std::time::Duration::from_secs(t);
        }
    }
    // A rerun resumes: finished programs are not run again, except, when `--data` gives
    // other data than they ran with, those whose runs failed or launched nothing (an input
    // the data may hold now; Rodinia's nn names no file, its bfs exits 0 without its
    // graph). The same data again changes nothing: a warm rerun runs no program.
    let data_now = args.data.as_ref().map(|d| d.display().to_string());
    let done: BTreeSet<String> = match args.fresh {
        true => BTreeSet::new(),
        false => read_journal(&out)
            .into_iter()
            .filter(|r| {
                let ran_badly = matches!(
                    r.status,
                    ProgramStatus::CaptureRunFailed | ProgramStatus::NoLaunches
                );
                !(ran_badly && data_now.is_some() && r.data != data_now)
            })
            .map(|r| r.program)
            .collect(),
    };
    let todo: Vec<run::Program> = programs
        .iter()
        .filter(|p| !done.contains(&p.id))
        .cloned()
        .collect();
    eprintln!(
        "capture: {} program(s) in {} (suite {suite}), {} already in the journal, {} to run",
        programs.len(),
        root.display(),
        programs.len() - todo.len(),
        todo.len()
    );
    if todo.is_empty() {
        // A warm rerun: nothing to build or run, so no scratch copy of the tree either.
        return Ok(read_journal(&out));
    }
    let scratch = out.join("work").join("tree");
    scratch_copy(&root, &scratch)?;
    if let Some(d) = &args.data {
        let at = recipe.as_ref().and_then(|r| r.data_at.as_deref());
        if let Some(at) = at {
            let d = d
                .canonicalize()
                .map_err(|e| anyhow::anyhow!("--data {}: {e}", d.display()))?;
            link_data(&d, &scratch.join(at))?;
            eprintln!(
                "capture: --data {} linked at {at}/ in the scratch copy",
                d.display()
            );
        }
    }
    let mut inject_env: BTreeMap<String, String> = BTreeMap::new();
    use crate::gpu::capture::inject as inj;
    inject_env.insert("CUDA_INJECTION64_PATH".into(), inject.display().to_string());
    inject_env.insert(
        inj::ENV_BLOBS.into(),
        out.join("blobs").display().to_string(),
    );
    inject_env.insert(inj::ENV_FIRST.into(), args.first.to_string());
    inject_env.insert(inj::ENV_MAX_BYTES.into(), args.max_bytes.to_string());
    inject_env.insert(inj::ENV_GLOBALS.into(), globals.join(","));
    inject_env.insert(inj::ENV_QUIET.into(), args.quiet_launches.to_string());
    inject_env.insert(
        inj::ENV_QUIET_SECONDS.into(),
        args.quiet_seconds.to_string(),
    );
    if let Ok(d) = &cupti {
        let old = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
        let joined = match old.is_empty() {
            true => d.display().to_string(),
            false => format!("{}:{old}", d.display()),
        };
        inject_env.insert("LD_LIBRARY_PATH".into(), joined);
    }
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    let progress = Progress::new(label, todo.len());
    let journal = Mutex::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(journal_path(&out))?,
    );
    let queue = Mutex::new(todo.into_iter().collect::<std::collections::VecDeque<_>>());
    std::thread::scope(|s| {
        for _ in 0..jobs {
            s.spawn(|| loop {
                let Some(p) = queue.lock().ok().and_then(|mut q| q.pop_front()) else {
                    return;
                };
                progress.start(&p.id);
                let launches = launches_dir(&out, &p.id);
                let env = run::RunEnv {
                    scratch: &scratch,
                    data: args.data.as_deref(),
                    inject_env: inject_env.clone(),
                    launches: &launches,
                    slots,
                };
                let rec = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    run::capture_program(&p, &env)
                }))
                .unwrap_or_else(|_| {
                    let mut r = ProgramRecord::new(&p.id);
                    r.reason = "capture panicked on this program".into();
                    r
                });
                if let Ok(mut j) = journal.lock() {
                    if let Ok(line) = serde_json::to_string(&rec) {
                        let _ = writeln!(j, "{line}");
                        let _ = j.flush();
                    }
                }
                progress.finish(&p.id);
                if rec.status != ProgramStatus::Captured {
                    eprintln!("{}: {}: {}", p.id, rec.status.name(), rec.reason);
                }
            });
        }
    });
    progress.done();
    Ok(read_journal(&out))
}

/// Programs per status and launches captured, from the journal.
fn print_summary(all: &[ProgramRecord], out: &Path) {
    let mut by: BTreeMap<&str, usize> = BTreeMap::new();
    for r in all {
        *by.entry(r.status.name()).or_default() += 1;
    }
    let launches: usize = all.iter().map(|r| r.launches).sum();
    let idx = CaptureIndex::open(out);
    let skipped = idx
        .manifests
        .iter()
        .filter(|m| m.1.skipped.is_some())
        .count();
    let kernels = idx.kernels_captured();
    println!(
        "capture: {} program(s): {}",
        all.len(),
        by.iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "capture: {launches} launch manifest(s), {} kernel(s) with a snapshot, {skipped} launch(es) skipped (budget or replay limits) in {}",
        kernels.len(),
        out.display()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_program_holds_its_own_file_or_the_files_under_its_folder() {
        let prog = |dir: &str, file: Option<&str>| run::Program {
            id: String::new(),
            dir: dir.into(),
            file: file.map(String::from),
            build: String::new(),
            runs: vec![],
            timeout: std::time::Duration::from_secs(1),
            env: Default::default(),
        };
        let per_file = prog("dev/cuda", Some("adamw.cu"));
        assert!(holds(&per_file, "dev/cuda/adamw.cu"));
        assert!(!holds(&per_file, "dev/cuda/gelu_forward.cu"));
        assert!(!holds(&per_file, "llmc/adamw.cu"));
        let folder = prog("cuda/srad", None);
        assert!(holds(&folder, "cuda/srad/srad_v1/reduce_kernel.cu"));
        assert!(
            !holds(&folder, "cuda/srad_v3/k.cu"),
            "a name prefix is not a folder"
        );
        assert!(
            holds(&prog("", None), "anything/k.cu"),
            "the root program holds all"
        );
        assert!(holds(&prog("", Some("k.cu")), "k.cu"));
    }

    #[test]
    fn the_root_program_and_nested_programs_get_their_own_launch_folders() {
        let out = Path::new("/cap");
        assert_eq!(launches_dir(out, "."), Path::new("/cap/launches/_root"));
        assert_eq!(
            launches_dir(out, "dev/cuda/gelu_forward.cu"),
            Path::new("/cap/launches/dev/cuda/gelu_forward.cu")
        );
        assert_eq!(launches_dir(out, "a b/c"), Path::new("/cap/launches/a_b/c"));
    }
}
