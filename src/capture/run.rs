//! Building and running one program under the injection library: its commands from the
//! suite's recipe (or the defaults), a scratch copy of the tree, a timeout on every
//! process group, output kept bounded, and a record of what happened.

use super::{ProgramRecord, ProgramStatus, RunRecord};
use crate::suite::desc::{CaptureRecipe, ExtraRuns};
use std::collections::{BTreeMap, VecDeque};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// `-D` renames for runtime API names CUDA 12/13 removed, as CUDA's deprecation notes give
/// their replacements: old benchmark trees (Rodinia, PolyBench-ACC) call them in host code.
/// Capture builds get them through `NVCC_APPEND_FLAGS` (a define of a name no header
/// declares any more changes nothing else).
pub const REMOVED_API_RENAMES: &str = "-DcudaThreadSynchronize=cudaDeviceSynchronize -DcudaThreadExit=cudaDeviceReset -DdeviceOverlap=asyncEngineCount";

/// A run may take this long unless the recipe or `--timeout-s` says otherwise.
pub const DEFAULT_RUN_TIMEOUT: Duration = Duration::from_secs(120);
/// A build may take this long.
pub const BUILD_TIMEOUT: Duration = Duration::from_secs(900);
/// Bytes of a process's output kept (its end).
const KEEP_OUTPUT: usize = 64 * 1024;

/// One program to capture.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    /// Root-relative folder (or file, for one program per file): the record's name.
    pub id: String,
    /// Root-relative folder the commands run in.
    pub dir: String,
    /// The file, for a per-file program.
    pub file: Option<String>,
    pub build: String,
    /// Each run command, `{arg}` already replaced; runs of one `each` sequence share a group.
    pub runs: Vec<(usize, String)>,
    pub timeout: Duration,
    pub env: BTreeMap<String, String>,
}

/// The programs of a tree, in a stable order: from the recipe's globs, or every folder
/// holding a Makefile and `.cu` files.
pub fn discover(root: &Path, recipe: Option<&CaptureRecipe>) -> Vec<Program> {
    let default = CaptureRecipe::default();
    let r = recipe.unwrap_or(&default);
    let timeout = r
        .timeout_s
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_RUN_TIMEOUT);
    let extras = extra_runs(r);
    let mut out = Vec::new();
    let rel = |p: &Path| {
        p.strip_prefix(root)
            .unwrap_or(p)
            .to_string_lossy()
            .replace('\\', "/")
    };
    let entries: Vec<PathBuf> = walkdir::WalkDir::new(root)
        .follow_links(false)
        .sort_by_file_name()
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| !e.path().components().any(|c| c.as_os_str() == ".git"))
        .map(|e| e.into_path())
        .collect();
    if r.programs.is_empty() {
        for d in entries.iter().filter(|p| p.is_dir()) {
            let makefile = ["Makefile", "makefile", "GNUmakefile"]
                .iter()
                .map(|m| d.join(m))
                .find(|m| m.is_file());
            let Some(mk) = makefile else { continue };
            let has_cu = std::fs::read_dir(d)
                .map(|rd| {
                    rd.filter_map(|e| e.ok())
                        .any(|e| e.path().extension().is_some_and(|x| x == "cu"))
                })
                .unwrap_or(false);
            if !has_cu {
                continue;
            }
            let has_run = std::fs::read_to_string(&mk)
                .map(|t| t.lines().any(|l| l.starts_with("run:")))
                .unwrap_or(false);
            let runs = match (r.run.is_empty(), has_run) {
                (false, _) => expand(&r.run, &r.each),
                (true, true) => vec![(0, "make run".to_string())],
                // The executables the build makes, found after it (`{exes}`).
                (true, false) => vec![(0, EXES.to_string())],
            };
            let id = rel(d);
            let runs = with_extra_runs(&extras, &id, runs);
            out.push(Program {
                id: if id.is_empty() {
                    ".".into()
                } else {
                    id.clone()
                },
                dir: id,
                file: None,
                build: r.build.clone().unwrap_or_else(|| "make".into()),
                runs,
                timeout,
                env: r.env.clone(),
            });
        }
        return out;
    }
    let mut globs = globset::GlobSetBuilder::new();
    for g in &r.programs {
        if let Ok(g) = globset::GlobBuilder::new(g).literal_separator(true).build() {
            globs.add(g);
        }
    }
    let Ok(set) = globs.build() else { return out };
    // The recipe's `each_stated`, compiled once; a pattern that is not a regex is the
    // recipe's mistake, which must not lose runs: every value runs.
    let stated = r
        .each_stated
        .as_deref()
        .and_then(|pat| match regex::Regex::new(pat) {
            Ok(re) => Some(re),
            Err(e) => {
                tracing::warn!(
                    "capture recipe: each_stated `{pat}` is not a regex ({e}); every value runs"
                );
                None
            }
        });
    for p in &entries {
        let id = rel(p);
        if id.is_empty() || !set.is_match(&id) {
            continue;
        }
        // A file program is a CUDA source; other files a folder glob meets are not programs.
        if p.is_file() && p.extension().is_none_or(|x| x != "cu") {
            continue;
        }
        let (dir, file) = match p.is_file() {
            true => (
                rel(p.parent().unwrap_or(root)),
                p.file_name().map(|f| f.to_string_lossy().into_owned()),
            ),
            false => (id.clone(), None),
        };
        let each = match (&stated, p.is_file()) {
            (Some(re), true) => stated_values(
                &r.each,
                re,
                &String::from_utf8_lossy(&std::fs::read(p).unwrap_or_default()),
            ),
            _ => r.each.clone(),
        };
        let runs = match r.run.is_empty() {
            true => vec![(0, "make run".into())],
            false => expand(&r.run, &each),
        };
        out.push(Program {
            runs: with_extra_runs(&extras, &id, runs),
            id,
            dir,
            file,
            build: r.build.clone().unwrap_or_else(|| "make".into()),
            timeout,
            env: r.env.clone(),
        });
    }
    out
}

/// Stands for "each executable the build made" among the default runs.
pub const EXES: &str = "{exes}";

/// The values of `each` that `source` states in `re`'s first group (in `each`'s order);
/// the first value alone when the pattern matches nothing.
pub fn stated_values(each: &[String], re: &regex::Regex, source: &str) -> Vec<String> {
    let stated: std::collections::BTreeSet<&str> = re
        .captures_iter(source)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .collect();
    match stated.is_empty() {
        true => each.iter().take(1).cloned().collect(),
        false => each
            .iter()
            .filter(|v| stated.contains(v.as_str()))
            .cloned()
            .collect(),
    }
}

/// The recipe's `[[capture.also]]` entries with their `programs` globs compiled once. A glob
/// that does not parse matches nothing (the recipe's mistake costs only those runs).
fn extra_runs(r: &CaptureRecipe) -> Vec<(globset::GlobSet, &ExtraRuns)> {
    r.also
        .iter()
        .map(|extra| {
            let mut set = globset::GlobSetBuilder::new();
            for g in &extra.programs {
                if let Ok(g) = globset::GlobBuilder::new(g).literal_separator(true).build() {
                    set.add(g);
                }
            }
            (
                set.build().unwrap_or_else(|_| globset::GlobSet::empty()),
                extra,
            )
        })
        .collect()
}

/// `runs` followed by the extra runs whose globs match program `id`, each entry's commands
/// in groups after the ones already there.
fn with_extra_runs(
    extras: &[(globset::GlobSet, &ExtraRuns)],
    id: &str,
    mut runs: Vec<(usize, String)>,
) -> Vec<(usize, String)> {
    for (_, extra) in extras.iter().filter(|(set, _)| set.is_match(id)) {
        let next = runs.iter().map(|(g, _)| g + 1).max().unwrap_or(0);
        runs.extend(
            expand(&extra.run, &extra.each)
                .into_iter()
                .map(|(g, cmd)| (g + next, cmd)),
        );
    }
    runs
}

fn expand(runs: &[String], each: &[String]) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    for (g, r) in runs.iter().enumerate() {
        match each.is_empty() || !r.contains("{arg}") {
            true => out.push((g, r.clone())),
            false => out.extend(each.iter().map(|a| (g, r.replace("{arg}", a)))),
        }
    }
    out
}

/// Replace `{root}`, `{dir}`, `{file}`, `{stem}`, `{data}` in a command.
fn fill(cmd: &str, root: &Path, p: &Program, data: Option<&Path>) -> String {
    let file = p.file.clone().unwrap_or_default();
    let stem = Path::new(&file)
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default();
    cmd.replace("{root}", &root.display().to_string())
        .replace("{dir}", &root.join(&p.dir).display().to_string())
        .replace("{file}", &file)
        .replace("{stem}", &stem)
        .replace(
            "{data}",
            &data.map(|d| d.display().to_string()).unwrap_or_default(),
        )
}

/// What one process did.
#[derive(Debug, Clone)]
pub struct Ran {
    pub exit: Option<i32>,
    pub timed_out: bool,
    pub seconds: f64,
    /// The end of its output (stdout and stderr, interleaved as read).
    pub tail: String,
}

/// Run `sh -c cmd` in `cwd` under coreutils' `timeout`, which puts the command in a
/// process group of its own and kills the whole group (the program, and whatever `make`
/// started) after `timeout`; output kept to its last [`KEEP_OUTPUT`] bytes. (The procps
/// `kill` binary is not used for the group: version 4.0.2 misreads `kill -KILL -PGID`.)
pub fn run_shell(
    cmd: &str,
    cwd: &Path,
    env: &BTreeMap<String, String>,
    timeout: Duration,
) -> std::io::Result<Ran> {
    let t = Instant::now();
    let mut c = Command::new("timeout");
    c.args([
        "-s",
        "KILL",
        &format!("{:.3}", timeout.as_secs_f64()),
        "sh",
        "-c",
    ])
    .arg(cmd)
    .current_dir(cwd)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    for (k, v) in env {
        c.env(k, v);
    }
    let mut child = c.spawn()?;
    let tail = std::sync::Arc::new(std::sync::Mutex::new(VecDeque::<u8>::new()));
    let readers: Vec<_> = [
        child
            .stdout
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
        child
            .stderr
            .take()
            .map(|s| Box::new(s) as Box<dyn Read + Send>),
    ]
    .into_iter()
    .flatten()
    .map(|mut r| {
        let tail = tail.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 8192];
            while let Ok(n) = r.read(&mut buf) {
                if n == 0 {
                    break;
                }
                if let Ok(mut t) = tail.lock() {
                    t.extend(&buf[..n]);
                    let over = t.len().saturating_sub(KEEP_OUTPUT);
                    t.drain(..over);
                }
            }
        })
    })
    .collect();
    let mut backstop = false;
    let status = loop {
        if let Some(s) = child.try_wait()? {
            break Some(s);
        }
        // `timeout` itself stuck: kill it (its group may then linger).
        if t.elapsed() > timeout + Duration::from_secs(10) {
            backstop = true;
            let _ = child.kill();
            break child.wait().ok();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    // `timeout -s KILL` sends the signal to its whole group, itself included: it ends by
    // SIGKILL (a program killed by SIGKILL on its own reads the same; both count as a
    // timeout here).
    let killed = status.is_some_and(|s| {
        use std::os::unix::process::ExitStatusExt;
        s.signal() == Some(9) || s.code() == Some(137)
    });
    let timed_out = backstop || killed;
    if !backstop {
        for r in readers {
            let _ = r.join();
        }
    }
    let bytes: Vec<u8> = tail
        .lock()
        .map(|t| t.iter().copied().collect())
        .unwrap_or_default();
    Ok(Ran {
        exit: if timed_out {
            None
        } else {
            status.and_then(|s| s.code())
        },
        timed_out,
        seconds: t.elapsed().as_secs_f64(),
        tail: String::from_utf8_lossy(&bytes).into_owned(),
    })
}

/// The last `n` lines of `text`.
pub fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// Words of a program's output that say a file could not be opened.
static OPEN: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)(no such file|cannot open|can't open|could not open|couldn't open|unable to open|failed to open|failure to open|error opening|error reading|not opened|cannot be opened|could not be opened|can not open|file error|cannot find|file not found|does not exist)",
    )
    .expect("valid")
});

/// Whether a run's output says a file could not be opened.
fn says_open_failed(output: &str) -> bool {
    OPEN.is_match(output)
}

/// Shells whose first argument is the script a run command runs (`sh run`).
const SHELLS: [&str; 4] = ["sh", "bash", "/bin/sh", "/bin/bash"];

/// Input files a run command names that do not exist (relative to `cwd`), for a failed run
/// whose output names none (`Error Reading graph file`, or a crash after a NULL `fopen`).
/// Looked at: the command's words, and the lines of the shell script it runs (`sh run`,
/// `./run.sh`); a word counts when it names a file ([`looks_like_file`]: a path with a
/// folder, or a name with a short extension), is not an option, and is not the target of
/// an output redirection (`> out/result.txt`). An existing input that lists other inputs
/// one per line adds the listed ones that are missing.
pub fn missing_from_command(cmd: &str, cwd: &Path) -> Vec<String> {
    let mut lines: Vec<String> = vec![cmd.to_string()];
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let script = match words.as_slice() {
        [sh, f, ..] if SHELLS.contains(sh) => Some(*f),
        [f, ..] => Some(*f),
        [] => None,
    };
    if let Some(f) = script.map(|f| cwd.join(f)).filter(|f| f.is_file()) {
        let small = f.metadata().is_ok_and(|m| m.len() <= 64 * 1024);
        if let Some(text) = small.then(|| std::fs::read(&f).ok()).flatten() {
            // A script is text; an executable is not.
            if !text.contains(&0) {
                lines.extend(
                    String::from_utf8_lossy(&text)
                        .lines()
                        .map(|l| l.split('#').next().unwrap_or("").to_string()),
                );
            }
        }
    }
    let mut out: Vec<String> = Vec::new();
    let mut note = |w: &str| {
        if !cwd.join(w).exists() && !out.iter().any(|o| o == w) {
            out.push(w.to_string());
        }
    };
    for line in &lines {
        let mut skip_next = false;
        // The first word is the program (or the script itself), not an input.
        for w in line.split_whitespace().skip(1) {
            if std::mem::take(&mut skip_next) {
                continue;
            }
            if [">", ">>", "2>", "&>", "1>"].contains(&w) {
                skip_next = true;
                continue;
            }
            let w = w.trim_matches(|c| c == '"' || c == '\'' || c == ';' || c == ')');
            // An output redirection with its target attached (`2>/dev/null`, `>>log`,
            // `&>out`) names no input; an input one (`<feed.txt`) does.
            let fd = w.trim_start_matches(|c: char| c.is_ascii_digit());
            if fd.starts_with(['>', '&']) {
                continue;
            }
            let w = w.strip_prefix('<').unwrap_or(w);
            if w.starts_with(['-', '>'])
                || w.contains("://")
                || w.contains(['$', '*', '?'])
                || w.starts_with("/dev/")
            {
                continue;
            }
            // A comma-joined list of inputs (Parboil's `-i a.txt,b.txt`) is each of them.
            let parts: Vec<&str> = match w.contains(',') && !cwd.join(w).exists() {
                true => w.split(',').filter(|p| !p.is_empty()).collect(),
                false => vec![w],
            };
            for p in parts {
                if looks_like_file(p) && !names_an_output(p) {
                    note(p);
                }
            }
            // An input that lists other inputs, one per line (Rodinia nn's `filelist_4`).
            for listed in listed_paths(&cwd.join(w)) {
                note(&listed);
            }
        }
    }
    out
}

/// A file word that names what a run writes, not what it reads: `output.out`,
/// `result.txt`, `out_512.bin`.
fn names_an_output(w: &str) -> bool {
    let name = w.rsplit('/').next().unwrap_or(w).to_ascii_lowercase();
    let stem = name.split('.').next().unwrap_or("");
    name.ends_with(".out")
        || ["out", "output", "result", "results"]
            .iter()
            .any(|o| stem == *o || stem.starts_with(&format!("{o}_")))
}

/// The lines of a run's output that are commands a build tool echoed before running them:
/// a program started from the working folder (`./main 512 ../data/power_512`).
fn echoed_commands(output: &str) -> impl Iterator<Item = &str> {
    output
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("./") && l.len() > 2)
}

/// A word that names a file: it has a folder in it, or a short extension with a letter
/// (`192.bmp`, `graph4096.txt`; not `0.5` or `1e-3`).
fn looks_like_file(w: &str) -> bool {
    if !w.chars().any(|c| c.is_ascii_alphanumeric()) {
        return false;
    }
    w.contains('/')
        || w.rsplit_once('.').is_some_and(|(stem, ext)| {
            !stem.is_empty()
                && (1..=5).contains(&ext.len())
                && ext.chars().all(|c| c.is_ascii_alphanumeric())
                && ext.chars().any(|c| c.is_ascii_alphabetic())
        })
}

/// The paths a small text file lists, one per line, when every non-empty line is one
/// file-like word; else none.
fn listed_paths(f: &Path) -> Vec<String> {
    let small = f.is_file() && f.metadata().is_ok_and(|m| m.len() <= 64 * 1024);
    let Some(text) = small.then(|| std::fs::read(f).ok()).flatten() else {
        return Vec::new();
    };
    if text.contains(&0) {
        return Vec::new();
    }
    let text = String::from_utf8_lossy(&text);
    let words: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let all_paths = !words.is_empty()
        && words
            .iter()
            .all(|l| !l.contains(char::is_whitespace) && looks_like_file(l));
    match all_paths {
        true => words.into_iter().map(String::from).collect(),
        false => Vec::new(),
    }
}

/// `sh run` where the folder has no `run` but has `run.sh` (Rodinia's dwt2d): the same
/// command with the script that exists; None when the command needs no change.
pub fn script_fallback(cmd: &str, cwd: &Path) -> Option<String> {
    let words: Vec<&str> = cmd.split_whitespace().collect();
    let [sh, f, rest @ ..] = words.as_slice() else {
        return None;
    };
    if !SHELLS.contains(sh) || cwd.join(f).exists() {
        return None;
    }
    let alt = format!("{f}.sh");
    cwd.join(&alt).is_file().then(|| {
        let mut w = vec![sh.to_string(), alt];
        w.extend(rest.iter().map(|s| s.to_string()));
        w.join(" ")
    })
}

/// Relative file paths that string literals in the sources of the program in `cwd` state
/// and that do not exist there (at most [`SOURCE_NAMES`], in file and line order): the
/// inputs a program opens by a default path of its own (Chai's `file_name =
/// "input/NYR_input.dat"`) when neither its output nor its command line names them (a crash
/// after a NULL `fopen`). Looked at: C, C++ and CUDA files up to two folders below `cwd`,
/// each at most 256 KiB. A literal counts when it is one file-like word ([`looks_like_file`])
/// with a folder or an extension: not an `#include`, an absolute path, a URL, a format
/// string (`%`), a word with white space in it, or a bare name some file below has.
pub fn missing_from_source(cwd: &Path) -> Vec<String> {
    static LITERAL: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#""([^"\\\s%:]{1,200})""#).expect("static regex")
    });
    let below: Vec<walkdir::DirEntry> = walkdir::WalkDir::new(cwd)
        .max_depth(3)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .collect();
    // A bare name found anywhere below (cuda-samples' `teapot512.pgm` in `data/`, which
    // `sdkFindFilePath` searches) is not missing.
    let names: std::collections::HashSet<std::ffi::OsString> =
        below.iter().map(|e| e.file_name().to_os_string()).collect();
    let mut files: Vec<std::path::PathBuf> = below
        .into_iter()
        .filter(|e| e.metadata().is_ok_and(|m| m.len() <= 256 * 1024))
        .map(|e| e.into_path())
        .filter(|p| {
            p.extension()
                .and_then(|x| x.to_str())
                .is_some_and(|x| ["c", "cc", "cpp", "cxx", "cu", "h", "hpp", "cuh"].contains(&x))
        })
        .collect();
    files.sort();
    let mut out: Vec<String> = Vec::new();
    for f in files {
        let Ok(text) = crate::path_io::read_text(&f) else {
            continue;
        };
        for line in text.lines() {
            let code = line.trim_start();
            if code.starts_with('#') || code.starts_with("//") {
                continue;
            }
            for c in LITERAL.captures_iter(line) {
                let w = &c[1];
                let file = looks_like_file(w) && !w.starts_with('/') && !w.ends_with('/');
                let elsewhere = !w.contains('/') && names.contains(std::ffi::OsStr::new(w));
                if file && !elsewhere && !out.iter().any(|o| o == w) && !cwd.join(w).exists() {
                    out.push(w.to_string());
                    if out.len() == SOURCE_NAMES {
                        return out;
                    }
                }
            }
        }
    }
    out
}

/// How many paths [`missing_from_source`] names at the most.
const SOURCE_NAMES: usize = 4;

/// A file a failed run says it could not open, when it names one that does not exist
/// (relative to `cwd`): `Error: cannot open data/input.bin`.
pub fn missing_input(output: &str, cwd: &Path) -> Option<String> {
    static PATHLIKE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"[A-Za-z0-9_.~/\-]*[/.][A-Za-z0-9_.~/\-]*[A-Za-z0-9_]"#).expect("valid")
    });
    for line in output.lines().rev() {
        if !OPEN.is_match(line) {
            continue;
        }
        for m in PATHLIKE.find_iter(line) {
            let s = m.as_str().trim_end_matches(['.', ':']);
            let looks = s.contains('/') || s.rsplit_once('.').is_some_and(|(_, e)| e.len() <= 5);
            let dots = s.starts_with("..") && !s.starts_with("../");
            if looks && !dots && !cwd.join(s).exists() {
                return Some(s.to_string());
            }
        }
    }
    None
}

/// The newest architecture number CUDA 13 no longer compiles for (sm_72; sm_75 is its
/// oldest): a build refused for an architecture retargets every one up to this.
const LAST_DROPPED_ARCH: u32 = 72;

/// The architecture number nvcc refused in a build's output (`nvcc fatal : Unsupported gpu
/// architecture 'compute_60'`), if it did.
fn unsupported_arch(log: &str) -> Option<u32> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"Unsupported gpu architecture '(?:sm|compute)_(\d+)[a-z]?'")
            .expect("static regex")
    });
    RE.captures(log)?.get(1)?.as_str().parse().ok()
}

/// Rewrite, in the Makefiles under `dir` (a scratch copy), every architecture numbered at
/// most `upto` to the machine's own (`native`): `-arch`/`--gpu-architecture`/`--gpu-name`
/// values, `-gencode arch=…,code=…` pairs, `--gpu-code` values (dropped), and make
/// variables whose name holds `ARCH` set to one such architecture (`ARCH = sm_60`). The
/// number of files changed.
fn retarget_makefiles(dir: &Path, upto: u32) -> usize {
    use regex::{Captures, Regex};
    use std::sync::LazyLock;
    static GENCODE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r#"-gencode[= ]+"?arch=compute_(\d+)[a-z]?,\s*code=(\[[^\]]*\]|"[^"]*"|[^\s"]+)"?"#,
        )
        .expect("static regex")
    });
    static FLAG: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(-arch[= ]+|--gpu-architecture[= ]+|--gpu-name[= ]+)(?:sm|compute)_(\d+)[a-z]?\b",
        )
        .expect("static regex")
    });
    static CODE: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(r"--gpu-code[= ]+(?:(?:sm|compute)_(\d+)[a-z]?,?)+").expect("static regex")
    });
    static VAR: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?m)^(\s*[A-Za-z_]*ARCH[A-Za-z_0-9]*\s*[:?+]?=\s*)(?:sm|compute)_(\d+)[a-z]?[ \t]*$",
        )
        .expect("static regex")
    });
    let old = |c: &Captures, i: usize| c[i].parse::<u32>().is_ok_and(|n| n <= upto);
    let mut changed = 0;
    for e in walkdir::WalkDir::new(dir)
        .max_depth(3)
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
    {
        let name = e.file_name().to_string_lossy();
        let makefile = matches!(&*name, "Makefile" | "makefile" | "GNUmakefile")
            || name.ends_with(".mk")
            || name == "make.config";
        if !makefile {
            continue;
        }
        let Ok(text) = std::fs::read_to_string(e.path()) else {
            continue;
        };
        let t = GENCODE.replace_all(&text, |c: &Captures| match old(c, 1) {
            true => "-arch=native".to_string(),
            false => c[0].to_string(),
        });
        let t = FLAG.replace_all(&t, |c: &Captures| match old(c, 2) {
            true => format!("{}native", &c[1]),
            false => c[0].to_string(),
        });
        let t = CODE.replace_all(&t, |c: &Captures| match old(c, 1) {
            true => String::new(),
            false => c[0].to_string(),
        });
        let t = VAR.replace_all(&t, |c: &Captures| match old(c, 2) {
            true => format!("{}native", &c[1]),
            false => c[0].to_string(),
        });
        if t != text && std::fs::write(e.path(), t.as_bytes()).is_ok() {
            changed += 1;
        }
    }
    changed
}

/// Executable regular files under `dir` (not descending into `.git`), root-relative.
fn executables(dir: &Path) -> Vec<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    walkdir::WalkDir::new(dir)
        .max_depth(3)
        .sort_by_file_name()
        .into_iter()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_file())
        .filter(|e| {
            e.metadata()
                .map(|m| m.permissions().mode() & 0o111 != 0)
                .unwrap_or(false)
        })
        .map(|e| e.into_path())
        .collect()
}

/// What the run step needs besides the program.
pub struct RunEnv<'a> {
    /// The scratch copy of the tree.
    pub scratch: &'a Path,
    pub data: Option<&'a Path>,
    /// Environment of every run (the injection library and its settings).
    pub inject_env: BTreeMap<String, String>,
    /// Where this program's launch manifests go.
    pub launches: &'a Path,
    /// Taken around each run; builds run freely.
    pub slots: &'a GpuSlots,
}

/// A counting semaphore for runs on the GPU.
pub struct GpuSlots {
    free: std::sync::Mutex<usize>,
    cv: std::sync::Condvar,
}

/// A taken slot, given back on drop.
pub struct SlotGuard<'a>(&'a GpuSlots);

impl Drop for SlotGuard<'_> {
    fn drop(&mut self) {
        if let Ok(mut f) = self.0.free.lock() {
            *f += 1;
        }
        self.0.cv.notify_one();
    }
}

impl GpuSlots {
    pub fn new(n: usize) -> GpuSlots {
        GpuSlots {
            free: std::sync::Mutex::new(n.max(1)),
            cv: std::sync::Condvar::new(),
        }
    }

    /// Wait for a free slot.
    pub fn take(&self) -> SlotGuard<'_> {
        let mut f = self.free.lock().unwrap_or_else(|e| e.into_inner());
        while *f == 0 {
            f = self.cv.wait(f).unwrap_or_else(|e| e.into_inner());
        }
        *f -= 1;
        SlotGuard(self)
    }
}

/// Build and run one program; its record. Never panics on a bad program.
pub fn capture_program(p: &Program, env: &RunEnv<'_>) -> ProgramRecord {
    let t = Instant::now();
    let cwd = env.scratch.join(&p.dir);
    let mut rec = ProgramRecord::new(&p.id);
    rec.data = env.data.map(|d| d.display().to_string());
    let _ = std::fs::remove_dir_all(env.launches);
    if let Err(e) = std::fs::create_dir_all(env.launches) {
        rec.status = ProgramStatus::CaptureRunFailed;
        rec.reason = format!("{}: {e}", env.launches.display());
        return rec;
    }
    let before: std::collections::BTreeSet<PathBuf> = executables(&cwd).into_iter().collect();
    let build = fill(&p.build, env.scratch, p, env.data);
    let mut built = run_shell(&build, &cwd, &p.env, BUILD_TIMEOUT);
    // A Makefile written for a GPU architecture this toolkit no longer compiles for
    // (CUDA 13 dropped everything below sm_75) is built once more for the machine's own.
    let mut retargeted = 0;
    if let Ok(r) = &built {
        if let Some(n) = (r.exit != Some(0))
            .then(|| unsupported_arch(&r.tail))
            .flatten()
        {
            retargeted = retarget_makefiles(&cwd, n.max(LAST_DROPPED_ARCH));
            if retargeted > 0 {
                let first = r.seconds;
                built = run_shell(&build, &cwd, &p.env, BUILD_TIMEOUT).map(|mut r| {
                    r.seconds += first;
                    r
                });
            }
        }
    }
    rec.retargeted_makefiles = retargeted;
    let retarget_note = match retargeted {
        0 => String::new(),
        n => format!(
            " (after {n} Makefile(s) were retargeted to -arch=native: the toolkit refused their architecture)"
        ),
    };
    match built {
        Ok(r) if r.exit == Some(0) => rec.build_seconds = r.seconds,
        Ok(r) => {
            rec.build_seconds = r.seconds;
            rec.status = ProgramStatus::CaptureBuildFailed;
            let label = command_label(&build);
            rec.reason = match r.timed_out {
                true => format!("`{label}` did not finish in {} s", BUILD_TIMEOUT.as_secs()),
                false => {
                    let first = first_error(&r.tail)
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default();
                    format!("`{label}` exited with {:?}{retarget_note}{first}", r.exit)
                }
            };
            rec.log_tail = last_lines(&r.tail, 20);
            rec.seconds = t.elapsed().as_secs_f64();
            return rec;
        }
        Err(e) => {
            rec.status = ProgramStatus::CaptureBuildFailed;
            rec.reason = format!("`{build}` could not start: {e}");
            return rec;
        }
    }
    let mut runs: Vec<(usize, String)> = Vec::new();
    for (g, r) in &p.runs {
        if r == EXES {
            let made: Vec<PathBuf> = executables(&cwd)
                .into_iter()
                .filter(|e| !before.contains(e))
                .collect();
            runs.extend(made.iter().map(|e| {
                let rel = e.strip_prefix(&cwd).unwrap_or(e);
                (*g, format!("./{}", rel.display()))
            }));
        } else {
            runs.push((*g, fill(r, env.scratch, p, env.data)));
        }
    }
    if runs.is_empty() {
        rec.status = ProgramStatus::CaptureRunFailed;
        rec.reason = "the build made no executable and the recipe names no run".into();
        rec.seconds = t.elapsed().as_secs_f64();
        return rec;
    }
    let mut run_env = p.env.clone();
    run_env.extend(env.inject_env.clone());
    // Runs start in order, each as soon as a GPU slot is free, so a program's versions run
    // side by side (llm.c: ten versions of 25-60 s each, mostly the CPU reference). A
    // group stops at its first run that fails with nothing captured once an earlier run of
    // the group captured something (numbered kernel versions run out): later runs of the
    // group not yet started are skipped. A run records its result before it gives its
    // slot back, so with one slot this is exactly the sequential order.
    let groups: Mutex<BTreeMap<usize, GroupState>> = Mutex::new(BTreeMap::new());
    let results: Mutex<Vec<RunDone>> = Mutex::new(Vec::new());
    let stopped = |g: usize, k: usize| {
        groups
            .lock()
            .map(|m| {
                m.get(&g)
                    .and_then(GroupState::stop_after)
                    .is_some_and(|s| k > s)
            })
            .unwrap_or(false)
    };
    std::thread::scope(|sc| {
        for (k, (g, cmd)) in runs.iter().enumerate() {
            if stopped(*g, k) {
                continue;
            }
            let slot = env.slots.take();
            if stopped(*g, k) {
                continue;
            }
            let (groups, results, run_env, cwd) = (&groups, &results, &run_env, &cwd);
            sc.spawn(move || {
                let _slot = slot;
                let (rr, tail) = one_run(k, cmd, cwd, run_env, env, p.timeout);
                if let Ok(mut m) = groups.lock() {
                    let st = m.entry(*g).or_default();
                    if rr.launches > 0 {
                        st.captured.push(k);
                    } else if rr.exit != Some(0) {
                        st.failed_empty.push(k);
                    }
                }
                if let Ok(mut r) = results.lock() {
                    r.push((k, rr, tail));
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap_or_else(|e| e.into_inner());
    results.sort_by_key(|(k, _, _)| *k);
    for (_, rr, tail) in results {
        match tail {
            Err(why) => rec.reason = why,
            Ok(t) if rr.exit != Some(0) && (rec.log_tail.is_empty() || rr.launches == 0) => {
                rec.log_tail = last_lines(&t, 20)
            }
            Ok(_) => {}
        }
        rec.runs.push(rr);
    }
    rec.launches = rec.runs.iter().map(|r| r.launches).sum();
    rec.status = if rec.launches > 0 {
        ProgramStatus::Captured
    } else if rec.runs.iter().any(|r| r.timed_out) {
        ProgramStatus::Timeout
    } else if rec.runs.iter().all(|r| r.exit == Some(0)) {
        ProgramStatus::NoLaunches
    } else {
        ProgramStatus::CaptureRunFailed
    };
    if rec.reason.is_empty() {
        rec.reason = summarize(&rec, env.data.is_some());
    }
    rec.seconds = t.elapsed().as_secs_f64();
    rec
}

/// A finished run: its index among the program's runs, its record, and its output tail (or
/// why it could not start).
type RunDone = (usize, RunRecord, Result<String, String>);

/// Where one group of runs (the versions of one run command) stands.
#[derive(Default)]
struct GroupState {
    captured: Vec<usize>,
    failed_empty: Vec<usize>,
}

impl GroupState {
    /// Runs after this one are not started: the group's first run that failed with nothing
    /// captured after a run that captured something.
    fn stop_after(&self) -> Option<usize> {
        let first = *self.captured.iter().min()?;
        self.failed_empty
            .iter()
            .copied()
            .filter(|&f| f > first)
            .min()
    }
}

/// One run of a built program, in its own manifest folder: its record, and its output tail
/// (or why it could not start).
fn one_run(
    k: usize,
    cmd: &str,
    cwd: &Path,
    run_env: &BTreeMap<String, String>,
    env: &RunEnv<'_>,
    timeout: Duration,
) -> (RunRecord, Result<String, String>) {
    let dir = env.launches.join(format!("run-{k}"));
    let _ = std::fs::create_dir_all(&dir);
    let mut e = run_env.clone();
    e.insert(
        crate::gpu::capture::inject::ENV_OUT.into(),
        dir.display().to_string(),
    );
    let fallback = script_fallback(cmd, cwd);
    let cmd = fallback.as_deref().unwrap_or(cmd);
    let ran = run_shell(cmd, cwd, &e, timeout);
    let stopped_early = std::fs::read_dir(&dir).is_ok_and(|rd| {
        rd.filter_map(|e| e.ok()).any(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with(crate::gpu::capture::inject::STOPPED_FILE)
        })
    });
    let mut rr = RunRecord {
        command: cmd.to_string(),
        exit: None,
        timed_out: false,
        seconds: 0.0,
        launches: count_manifests(&dir),
        missing: None,
        named_in_source: Vec::new(),
        stopped_early,
    };
    match ran {
        Ok(r) => {
            rr.exit = r.exit;
            rr.timed_out = r.timed_out;
            rr.seconds = r.seconds;
            if r.exit != Some(0) || (rr.launches == 0 && says_open_failed(&r.tail)) {
                rr.missing = missing_input(&r.tail, cwd).or_else(|| {
                    let mut m = missing_from_command(cmd, cwd);
                    // `make run` echoes each recipe line before it runs it: the program's
                    // own command line names its inputs.
                    for line in echoed_commands(&r.tail) {
                        for w in missing_from_command(line, cwd) {
                            if !m.contains(&w) {
                                m.push(w);
                            }
                        }
                    }
                    (!m.is_empty()).then(|| m.join(", "))
                });
                if rr.missing.is_none() {
                    rr.named_in_source = missing_from_source(cwd);
                }
            }
            (rr, Ok(r.tail))
        }
        Err(e) => (rr, Err(format!("`{cmd}` could not start: {e}"))),
    }
}

/// A build command as a reason shows it: one line, at most 120 characters (a recipe's
/// multi-line shell, Parboil's, would bury the error after it).
fn command_label(cmd: &str) -> String {
    let one: Vec<&str> = cmd
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let one = one.join("; ");
    match one.char_indices().nth(120) {
        Some((i, _)) => format!("{}…", &one[..i]),
        None => one,
    }
}

/// The first line of a build log that reports an error (`k.cu(3): error: …`, `nvcc fatal
/// : …`, `make: *** … Error 2` only when nothing names the cause), at most 200 characters.
fn first_error(log: &str) -> Option<String> {
    let lines: Vec<&str> = log.lines().map(str::trim).collect();
    let cause = lines.iter().find(|l| {
        let low = l.to_ascii_lowercase();
        (low.contains("error") || low.contains("fatal")) && !l.starts_with("make")
    });
    let line = cause.or_else(|| lines.iter().find(|l| l.contains("Error")))?;
    Some(match line.char_indices().nth(200) {
        Some((i, _)) => format!("{}…", &line[..i]),
        None => line.to_string(),
    })
}

fn summarize(rec: &ProgramRecord, data_given: bool) -> String {
    let missing: Vec<&str> = rec
        .runs
        .iter()
        .filter_map(|r| r.missing.as_deref())
        .collect();
    let failed = rec.runs.iter().filter(|r| r.exit != Some(0)).count();
    let timed = rec.runs.iter().filter(|r| r.timed_out).count();
    let mut parts = vec![format!(
        "{} launch(es) captured in {} run(s)",
        rec.launches,
        rec.runs.len()
    )];
    let early = rec.runs.iter().filter(|r| r.stopped_early).count();
    if early > 0 {
        parts.push(format!(
            "{early} run(s) ended early once launches brought nothing new (--quiet-launches)"
        ));
    }
    if failed > 0 {
        parts.push(format!("{failed} run(s) exited non-zero"));
    }
    if timed > 0 {
        parts.push(format!("{timed} timed out"));
    }
    if let Some(m) = missing.first() {
        parts.push(match data_given {
            false => format!("needs input file {m}, which the tree lacks (give --data)"),
            true => format!("needs input file {m}, which neither the tree nor --data has"),
        });
    } else if let Some(r) = rec.runs.iter().find(|r| !r.named_in_source.is_empty()) {
        parts.push(format!(
            "its sources name files that do not exist beside it: {} (an input it opens by default?{})",
            r.named_in_source.join(", "),
            if data_given { "" } else { " give --data" }
        ));
    }
    parts.join("; ")
}

/// Launch manifests in a run folder.
pub fn count_manifests(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(|e| e.ok())
                .filter(|e| {
                    let n = e.file_name().to_string_lossy().into_owned();
                    n.ends_with(".toml")
                        && !n.ends_with(crate::gpu::capture::inject::COUNTS_FILE)
                        && !n.ends_with(crate::gpu::capture::inject::STOPPED_FILE)
                })
                .count()
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn missing_inputs_are_named_only_when_they_do_not_exist() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("here.txt"), "x").unwrap();
        assert_eq!(
            missing_input("reading...\nError: cannot open data/input.bin\n", d.path()),
            Some("data/input.bin".into())
        );
        assert_eq!(
            missing_input(
                "fopen failed: No such file or directory: graph4096.txt",
                d.path()
            ),
            Some("graph4096.txt".into())
        );
        assert_eq!(missing_input("cannot open here.txt", d.path()), None);
        assert_eq!(missing_input("segmentation fault", d.path()), None);
    }

    /// A program that opens a default path of its own and crashes on the NULL `fopen`
    /// prints nothing: the paths its sources state that do not exist are named, and
    /// includes, formats, absolute paths, URLs and files that exist are not.
    #[test]
    fn files_a_programs_sources_name_that_do_not_exist_are_listed() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("support")).unwrap();
        std::fs::create_dir_all(d.path().join("input")).unwrap();
        std::fs::write(d.path().join("input/control.txt"), "1\n").unwrap();
        std::fs::write(
            d.path().join("main.cpp"),
            "#include \"support/absent.h\"\n\
             // p.file = \"input/commented.dat\";\n\
             p.file_name = \"input/NYR_input.dat\";\n\
             p.control = \"input/control.txt\";\n\
             printf(\"%d items\\n\", n); printf(\"done.\");\n\
             fopen(\"/dev/null\", \"w\"); url = \"http://x.org/a.html\";\n\
             p.out = \"output/NYR_bfs.out\"; mode = \"rb\";\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("support/verify.h"),
            "FILE *f = fopen(\"ref/golden.bin\", \"rb\");\n\
             path = sdkFindFilePath(\"teapot.pgm\", argv[0]);\n",
        )
        .unwrap();
        std::fs::create_dir_all(d.path().join("data")).unwrap();
        std::fs::write(d.path().join("data/teapot.pgm"), "P5").unwrap();
        assert_eq!(
            missing_from_source(d.path()),
            [
                "input/NYR_input.dat",
                "output/NYR_bfs.out",
                "ref/golden.bin"
            ]
        );
        let rec = ProgramRecord {
            runs: vec![RunRecord {
                command: "./bfs".into(),
                exit: Some(139),
                timed_out: false,
                seconds: 0.1,
                launches: 0,
                missing: None,
                named_in_source: missing_from_source(d.path()),
                stopped_early: false,
            }],
            ..ProgramRecord::new("BFS")
        };
        let why = summarize(&rec, false);
        assert!(
            why.contains("its sources name files that do not exist beside it: input/NYR_input.dat, output/NYR_bfs.out, ref/golden.bin"),
            "{why}"
        );
    }

    #[test]
    fn a_missing_run_script_falls_back_to_its_dot_sh_sibling() {
        let d = tempfile::tempdir().unwrap();
        assert_eq!(script_fallback("sh run", d.path()), None);
        std::fs::write(d.path().join("run.sh"), "./prog 192.bmp\n").unwrap();
        assert_eq!(
            script_fallback("sh run", d.path()).as_deref(),
            Some("sh run.sh")
        );
        assert_eq!(
            script_fallback("bash run -v", d.path()).as_deref(),
            Some("bash run.sh -v")
        );
        std::fs::write(d.path().join("run"), "./prog\n").unwrap();
        assert_eq!(script_fallback("sh run", d.path()), None);
        assert_eq!(script_fallback("./prog 1", d.path()), None);
    }

    #[test]
    fn inputs_a_run_script_names_are_found_and_outputs_and_options_are_not() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("prog"), "\x7fELF\0binary").unwrap();
        std::fs::create_dir_all(d.path().join("in")).unwrap();
        std::fs::write(d.path().join("in/there.txt"), "x").unwrap();
        std::fs::write(
            d.path().join("run"),
            "# ./prog ../../data/old/commented.txt\n\
             ./prog 512 ../../data/hotspot/temp_512 in/there.txt -o=x/y > out/result.txt\n\
             ./prog -f ../../data/hotspot/power_512 >>logs/all.txt 2> err/e.txt\n",
        )
        .unwrap();
        assert_eq!(
            missing_from_command("sh run", d.path()),
            [
                "../../data/hotspot/temp_512",
                "../../data/hotspot/power_512"
            ]
        );
        // A command line of its own; a binary first word is not read as a script.
        assert_eq!(
            missing_from_command("./prog ../../data/bfs/graph.txt", d.path()),
            ["../../data/bfs/graph.txt"]
        );
        assert!(missing_from_command("./prog 2048 10", d.path()).is_empty());
        // Redirections: outputs and /dev/ are no inputs, an input redirection is; a glob
        // names no one file.
        assert_eq!(
            missing_from_command(
                "x=$(ls -d in/*/input 2>/dev/null | head -n 1); ./prog data/x.bin 2>/dev/null \
                 >>logs/run.txt 2>&1 <in/feed.txt",
                d.path()
            ),
            ["data/x.bin", "in/feed.txt"]
        );
        // A file name without a folder, by its extension; numbers are not files.
        assert_eq!(
            missing_from_command("./prog 192.bmp -d 192x192 -f -5 -l 0.5", d.path()),
            ["192.bmp"]
        );
        // An input listing other inputs, one per line: the listed ones that are missing.
        std::fs::write(
            d.path().join("filelist_4"),
            "../../data/nn/cane4_0.db\nin/there.txt\n../../data/nn/cane4_1.db\n",
        )
        .unwrap();
        assert_eq!(
            missing_from_command("./prog filelist_4 -r 5 -lat 30", d.path()),
            ["../../data/nn/cane4_0.db", "../../data/nn/cane4_1.db"]
        );
        // A file of prose is not a list.
        std::fs::write(d.path().join("README"), "see data/x.txt for\nthe inputs\n").unwrap();
        assert!(missing_from_command("./prog README", d.path()).is_empty());
        // Output naming a file wins; `../` paths are named too.
        assert_eq!(
            missing_input("Error: no such file (../../data/kmeans/kdd_cup)", d.path()),
            Some("../../data/kmeans/kdd_cup".into())
        );
    }

    #[test]
    fn a_run_past_its_timeout_is_killed_with_its_children() {
        let d = tempfile::tempdir().unwrap();
        let r = run_shell(
            "echo start; sleep 30 & sleep 30; echo never",
            d.path(),
            &BTreeMap::new(),
            Duration::from_millis(300),
        )
        .unwrap();
        assert!(r.timed_out && r.exit.is_none(), "{r:?}");
        assert!(r.seconds < 10.0, "{r:?}");
        assert!(
            r.tail.contains("start") && !r.tail.contains("never"),
            "{r:?}"
        );
    }

    #[test]
    fn output_is_kept_to_its_end() {
        let d = tempfile::tempdir().unwrap();
        let r = run_shell(
            "i=0; while [ $i -lt 20000 ]; do echo line $i; i=$((i+1)); done",
            d.path(),
            &BTreeMap::new(),
            Duration::from_secs(60),
        )
        .unwrap();
        assert_eq!(r.exit, Some(0));
        assert!(r.tail.len() <= KEEP_OUTPUT, "{}", r.tail.len());
        assert!(r.tail.trim_end().ends_with("line 19999"));
    }

    /// Parboil's recipe runs a program as Parboil's driver runs a dataset: `-i` with the
    /// DESCRIPTION's inputs (comma-joined, in the dataset's folder), `-o` in the program's
    /// folder, `--` and its parameters; with no dataset the run names the DESCRIPTION it
    /// lacks.
    /// Put an executable `kp_parboil` with `script` as its text in `cwd`: the program the
    /// Parboil recipe's run starts, stood in for by a shell script.
    fn stand_in_parboil(cwd: &Path, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let bin = cwd.join("kp_parboil");
        std::fs::write(&bin, script).unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    }

    #[test]
    fn parboils_recipe_runs_a_dataset_as_its_driver_does_and_names_a_missing_one() {
        let desc = crate::suite::SuiteDesc::builtin("parboil").unwrap();
        let recipe = desc.capture.expect("parboil has a [capture] recipe");
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        for v in ["cuda", "cuda_base"] {
            std::fs::create_dir_all(root.join("benchmarks/sgemm/src").join(v)).unwrap();
        }
        std::fs::create_dir_all(root.join("benchmarks/sgemm/src/opencl_base")).unwrap();
        let ps = discover(root, Some(&recipe));
        let ids: Vec<&str> = ps.iter().map(|p| p.id.as_str()).collect();
        assert_eq!(
            ids,
            [
                "benchmarks/sgemm/src/cuda",
                "benchmarks/sgemm/src/cuda_base"
            ]
        );
        let p = &ps[0];
        let cwd = root.join(&p.dir);
        // A stand-in program that prints its arguments one per line.
        stand_in_parboil(
            &cwd,
            "#!/bin/sh\nfor a in \"$@\"; do echo \"arg:$a\"; done\n",
        );
        let run = fill(&p.runs[0].1, root, p, None);
        let ran = run_shell(&run, &cwd, &BTreeMap::new(), Duration::from_secs(30)).unwrap();
        assert_eq!(ran.exit, Some(2), "{}", ran.tail);
        assert_eq!(
            missing_input(&ran.tail, &cwd).as_deref(),
            Some("datasets/sgemm/small/input/DESCRIPTION"),
            "{}",
            ran.tail
        );
        let ds = root.join("datasets/sgemm/small/input");
        std::fs::create_dir_all(&ds).unwrap();
        std::fs::write(
            ds.join("DESCRIPTION"),
            "A small dataset.\nInputs: matrix1.txt matrix2t.txt\nParameters: 64 8\n",
        )
        .unwrap();
        for f in ["matrix1.txt", "matrix2t.txt"] {
            std::fs::write(ds.join(f), "2 2\n1 2 3 4\n").unwrap();
        }
        // A second dataset is not taken while `small` exists.
        std::fs::create_dir_all(root.join("datasets/sgemm/medium/input")).unwrap();
        let ran = run_shell(&run, &cwd, &BTreeMap::new(), Duration::from_secs(30)).unwrap();
        assert_eq!(ran.exit, Some(0), "{}", ran.tail);
        let args: Vec<&str> = ran
            .tail
            .lines()
            .filter_map(|l| l.strip_prefix("arg:"))
            .collect();
        let inputs = format!("{0}/matrix1.txt,{0}/matrix2t.txt", ds.display());
        let out = format!("{}/kp_parboil.out", cwd.display());
        assert_eq!(args, ["-i", &inputs, "-o", &out, "--", "64", "8"]);
        // A run that fails with its dataset there blames no file on the recipe's own text
        // (its `2>/dev/null`, its globs) nor on the line it echoes.
        assert_eq!(missing_from_command(&run, &cwd), Vec::<String>::new());
        let echoed: Vec<&str> = echoed_commands(&ran.tail).collect();
        assert_eq!(echoed.len(), 1, "{}", ran.tail);
        assert_eq!(missing_from_command(echoed[0], &cwd), Vec::<String>::new());
        // One file of the list gone: that file is named.
        std::fs::remove_file(ds.join("matrix2t.txt")).ok();
        assert_eq!(
            missing_from_command(echoed[0], &cwd),
            [format!("{}/matrix2t.txt", ds.display())]
        );
        // A dataset with one input file and no DESCRIPTION: that file, no parameters.
        std::fs::remove_dir_all(root.join("datasets/sgemm")).unwrap();
        let ds = root.join("datasets/sgemm/large/input");
        std::fs::create_dir_all(&ds).unwrap();
        std::fs::write(ds.join("in.bin"), [1u8, 2, 3]).unwrap();
        let ran = run_shell(&run, &cwd, &BTreeMap::new(), Duration::from_secs(30)).unwrap();
        let args: Vec<&str> = ran
            .tail
            .lines()
            .filter_map(|l| l.strip_prefix("arg:"))
            .collect();
        let only = format!("{}/in.bin", ds.display());
        assert_eq!(args, ["-i", &only, "-o", &out], "{}", ran.tail);
        assert_eq!(recipe.data_at.as_deref(), Some("datasets"));
    }

    /// `scripts/parboil_data.py` writes, the same for the same seed, datasets that the
    /// Parboil recipe's run finds: every input it passes exists, and the parameters are the
    /// DESCRIPTION's.
    #[test]
    fn parboil_data_makes_datasets_the_parboil_recipe_runs_with() {
        let d = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/parboil_data.py");
        let make = |out: &Path| {
            let o = Command::new("python3")
                .arg(&script)
                .arg(out)
                .args(["--seed", "7", "--check"])
                .output()
                .expect("python3 runs (the scripts need it)");
            assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        };
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        make(&a);
        make(&b);
        let files = |root: &Path| -> Vec<(PathBuf, Vec<u8>)> {
            walkdir::WalkDir::new(root)
                .sort_by_file_name()
                .into_iter()
                .filter_map(|e| e.ok())
                .filter(|e| e.file_type().is_file())
                .map(|e| {
                    let rel = e.path().strip_prefix(root).unwrap().to_path_buf();
                    (rel, std::fs::read(e.path()).unwrap())
                })
                .collect()
        };
        let fa = files(&a);
        assert!(
            fa.len() >= 8,
            "{:?}",
            fa.iter().map(|f| &f.0).collect::<Vec<_>>()
        );
        assert!(fa == files(&b), "the same seed gives the same files");
        let recipe = crate::suite::SuiteDesc::builtin("parboil")
            .unwrap()
            .capture
            .unwrap();
        let root = d.path().join("tree");
        let apps: Vec<String> = std::fs::read_dir(&a)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        // Every application of Parboil 2.5's benchmarks/ has a dataset.
        assert_eq!(apps.len(), 18, "{apps:?}");
        for app in &apps {
            std::fs::create_dir_all(root.join("benchmarks").join(app).join("src/cuda")).unwrap();
        }
        std::os::unix::fs::symlink(&a, root.join("datasets")).unwrap();
        for p in discover(&root, Some(&recipe)) {
            let cwd = root.join(&p.dir);
            // A stand-in that checks every `-i` file exists and prints what follows `--`.
            stand_in_parboil(
                &cwd,
                "#!/bin/sh\nwhile [ $# -gt 0 ]; do case $1 in\n\
                 -i) for f in $(echo $2 | tr , ' '); do [ -f $f ] || { echo no $f; exit 3; }; \
                 done; shift 2;;\n--) shift; echo params: $*; exit 0;;\n*) shift;;\nesac; done\n\
                 echo params:\n",
            );
            let run = fill(&p.runs[0].1, &root, &p, None);
            let ran = run_shell(&run, &cwd, &BTreeMap::new(), Duration::from_secs(30)).unwrap();
            assert_eq!(ran.exit, Some(0), "{}: {}", p.id, ran.tail);
            let app = p.id.split('/').nth(1).unwrap();
            let text =
                std::fs::read_to_string(a.join(app).join("small/input/DESCRIPTION")).unwrap();
            let want = text
                .lines()
                .find_map(|l| l.strip_prefix("Parameters:"))
                .unwrap_or("")
                .trim();
            let got = ran.tail.lines().find_map(|l| l.strip_prefix("params:"));
            assert_eq!(got.map(str::trim), Some(want), "{}: {}", p.id, ran.tail);
        }
    }

    #[test]
    fn a_failed_builds_reason_is_one_line_with_its_first_error() {
        let cmd = "c=x; [ -f $c ] || cp a $c\nmake -f common/mk/Makefile SRCDIR=src/cuda";
        assert_eq!(
            command_label(cmd),
            "c=x; [ -f $c ] || cp a $c; make -f common/mk/Makefile SRCDIR=src/cuda"
        );
        assert!(command_label(&"x".repeat(300)).chars().count() == 121);
        let log = "nvcc src/main.cu -c\nsrc/spmv_jds.h(13): error: texture is not a template\n\
                   1 error detected\nmake: *** [cuda.mk:128: main.o] Error 2\n";
        assert_eq!(
            first_error(log).as_deref(),
            Some("src/spmv_jds.h(13): error: texture is not a template")
        );
        assert_eq!(
            first_error("cc x.c\nmake: *** [Makefile:3: all] Error 1\n").as_deref(),
            Some("make: *** [Makefile:3: all] Error 1")
        );
        assert_eq!(first_error("all fine\n"), None);
    }

    #[test]
    fn per_file_recipes_expand_each_value_and_fill_names() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("dev/cuda")).unwrap();
        std::fs::write(d.path().join("dev/cuda/gelu.cu"), "").unwrap();
        std::fs::write(d.path().join("dev/cuda/common.h"), "").unwrap();
        let r = CaptureRecipe {
            programs: vec!["dev/cuda/*.cu".into()],
            build: Some("nvcc {file} -o {stem}".into()),
            run: vec!["./{stem} {arg}".into()],
            each: vec!["1".into(), "2".into()],
            ..Default::default()
        };
        let ps = discover(d.path(), Some(&r));
        assert_eq!(ps.len(), 1);
        let p = &ps[0];
        assert_eq!(
            (p.id.as_str(), p.dir.as_str()),
            ("dev/cuda/gelu.cu", "dev/cuda")
        );
        assert_eq!(
            p.runs,
            vec![(0, "./{stem} 1".to_string()), (0, "./{stem} 2".to_string())]
        );
        assert_eq!(fill(&p.build, d.path(), p, None), "nvcc gelu.cu -o gelu");
        assert_eq!(fill(&p.runs[1].1, d.path(), p, None), "./gelu 2");
    }

    #[test]
    fn extra_runs_join_only_the_programs_they_name_in_groups_of_their_own() {
        let d = tempfile::tempdir().unwrap();
        for s in [
            "Samples/a/reduction",
            "Samples/a/reductionMultiBlockCG",
            "Samples/b/gemm",
        ] {
            std::fs::create_dir_all(d.path().join(s)).unwrap();
        }
        let r: CaptureRecipe = toml::from_str(
            r#"
programs = ["Samples/*/*"]
run = ["./kp_sample"]
[[also]]
programs = ["Samples/*/reduction"]
run = ["./kp_sample --kernel={arg}"]
each = ["0", "1"]
[[also]]
programs = ["Samples/b/*", "[bad"]
run = ["./kp_sample -kernel=2", "./kp_sample -kernel=3"]
"#,
        )
        .unwrap();
        let ps = discover(d.path(), Some(&r));
        let runs = |id: &str| ps.iter().find(|p| p.id == id).unwrap().runs.clone();
        let s = |g: usize, c: &str| (g, c.to_string());
        assert_eq!(
            runs("Samples/a/reduction"),
            vec![
                s(0, "./kp_sample"),
                s(1, "./kp_sample --kernel=0"),
                s(1, "./kp_sample --kernel=1")
            ]
        );
        // The glob is a whole path component: reductionMultiBlockCG keeps its one run.
        assert_eq!(
            runs("Samples/a/reductionMultiBlockCG"),
            vec![s(0, "./kp_sample")]
        );
        // Two commands of one entry are two groups; a glob that does not parse matches nothing.
        assert_eq!(
            runs("Samples/b/gemm"),
            vec![
                s(0, "./kp_sample"),
                s(1, "./kp_sample -kernel=2"),
                s(2, "./kp_sample -kernel=3")
            ]
        );
    }

    #[test]
    fn only_the_versions_a_source_dispatches_are_run() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("dev/cuda")).unwrap();
        // Versions 1, 2 and 4 are dispatched; 32 is a block size of another switch, not a
        // value of `each`; the second file dispatches nothing (one run serves).
        std::fs::write(
            d.path().join("dev/cuda/a.cu"),
            "switch (bs) { case 32: break; }\nswitch (kernel_num) {\n case 1: f1(); break;\n case 2 : f2(); break;\n case 4: f4(); break;\n default: exit(1);\n}\n",
        )
        .unwrap();
        std::fs::write(
            d.path().join("dev/cuda/b.cu"),
            "int main() { k<<<1,1>>>(); }",
        )
        .unwrap();
        let r = CaptureRecipe {
            programs: vec!["dev/cuda/*.cu".into()],
            run: vec!["./{stem} {arg}".into()],
            each: (1..=10).map(|i| i.to_string()).collect(),
            each_stated: Some(r"case\s+([0-9]+)\s*:".into()),
            ..Default::default()
        };
        let ps = discover(d.path(), Some(&r));
        let runs: Vec<Vec<&str>> = ps
            .iter()
            .map(|p| p.runs.iter().map(|(_, c)| c.as_str()).collect())
            .collect();
        assert_eq!(
            runs,
            vec![
                vec!["./{stem} 1", "./{stem} 2", "./{stem} 4"],
                vec!["./{stem} 1"]
            ]
        );
        // A broken pattern loses no run.
        let broken = CaptureRecipe {
            each_stated: Some("case (".into()),
            ..r
        };
        let ps = discover(d.path(), Some(&broken));
        assert!(ps.iter().all(|p| p.runs.len() == 10), "{ps:?}");
    }

    /// A build nvcc refused for an architecture it dropped names that architecture; the
    /// Makefiles' old architectures (flags, -gencode pairs, --gpu-code, an ARCH variable)
    /// become the machine's own, and newer ones and other files stay as written.
    #[test]
    fn old_architectures_in_makefiles_are_retargeted_to_the_machines_own() {
        assert_eq!(
            unsupported_arch("nvcc fatal   : Unsupported gpu architecture 'compute_60'\n"),
            Some(60)
        );
        assert_eq!(unsupported_arch("error: identifier undefined"), None);
        let d = tempfile::tempdir().unwrap();
        let mk = "CC = nvcc\nARCH      = sm_60\nGPU_ARCH := sm_90\nCFLAGS = -arch=$(ARCH) -O3\n\
                  old: ; nvcc -arch sm_35 --gpu-code=sm_35,compute_35 a.cu\n\
                  gen: ; nvcc -gencode arch=compute_70,code=sm_70 -gencode=arch=compute_90,code=sm_90 b.cu\n\
                  new: ; nvcc --gpu-architecture=compute_80 c.cu\n";
        std::fs::write(d.path().join("Makefile"), mk).unwrap();
        std::fs::create_dir(d.path().join("sub")).unwrap();
        std::fs::write(d.path().join("sub/rules.mk"), "NVFLAGS += -arch=sm_52\n").unwrap();
        let src = "// -arch=sm_60 in a comment of a source file\n";
        std::fs::write(d.path().join("a.cu"), src).unwrap();
        assert_eq!(retarget_makefiles(d.path(), 72), 2);
        let got = std::fs::read_to_string(d.path().join("Makefile")).unwrap();
        assert_eq!(
            got,
            "CC = nvcc\nARCH      = native\nGPU_ARCH := sm_90\nCFLAGS = -arch=$(ARCH) -O3\n\
             old: ; nvcc -arch native  a.cu\n\
             gen: ; nvcc -arch=native -gencode=arch=compute_90,code=sm_90 b.cu\n\
             new: ; nvcc --gpu-architecture=compute_80 c.cu\n"
        );
        assert_eq!(
            std::fs::read_to_string(d.path().join("sub/rules.mk")).unwrap(),
            "NVFLAGS += -arch=native\n"
        );
        assert_eq!(std::fs::read_to_string(d.path().join("a.cu")).unwrap(), src);
        // Nothing old left: nothing changes.
        assert_eq!(retarget_makefiles(d.path(), 72), 0);
    }

    /// `make run` echoes the program's command line: a failed run whose output names no
    /// file is named by the inputs that line gives and that do not exist; "cannot be
    /// opened" is an open failure too.
    #[test]
    fn inputs_on_the_command_line_make_echoed_are_named() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("power_ok"), "1").unwrap();
        let tail = "./main 512 8 5000 ../data/hotspot3D/power_512x8 power_ok output.out\nError: The file was not opened\nmake: *** [Makefile:58: run] Segmentation fault\n";
        assert_eq!(missing_input(tail, d.path()), None);
        let echoed: Vec<&str> = echoed_commands(tail).collect();
        assert_eq!(echoed.len(), 1);
        // Neither the input that exists nor the output file is named.
        assert_eq!(
            missing_from_command(echoed[0], d.path()),
            vec!["../data/hotspot3D/power_512x8"]
        );
        assert_eq!(
            missing_input(
                "./main 10\nFile input.hpp cannot be opened for read.\n",
                d.path()
            ),
            Some("input.hpp".to_string())
        );
    }
}
