//! Compile check: every unit compiled alone with NVRTC (no GPU needed), in parallel.

use crate::gpu::nvrtc::{self, CompileRequest, NvrtcError};
use crate::record::{content_id, CompileCheck, Diagnostic, KernelUnit, Level};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::path::PathBuf;

/// Where compile-check results are kept between runs, keyed by content hash.
#[derive(Debug, Clone)]
pub struct CheckCache {
    dir: Option<PathBuf>,
}

impl CheckCache {
    /// No disk cache: every run compiles.
    pub fn none() -> Self {
        CheckCache { dir: None }
    }

    pub fn at(dir: PathBuf) -> Self {
        CheckCache { dir: Some(dir) }
    }

    /// `$KERNELPAIR_CACHE_DIR/compile-check`, else the XDG cache folder
    /// (`~/.cache/kernelpair/compile-check`); none when no home is known.
    pub fn default_location() -> Self {
        let base = std::env::var_os("KERNELPAIR_CACHE_DIR")
            .map(PathBuf::from)
            .or_else(|| {
                std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("kernelpair"))
            })
            .or_else(|| {
                std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache/kernelpair"))
            });
        CheckCache {
            dir: base.map(|b| b.join("compile-check")),
        }
    }

    fn get(&self, key: &str) -> Option<CompileCheck> {
        let dir = self.dir.as_ref()?;
        let text = std::fs::read_to_string(dir.join(format!("{key}.json"))).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// The version of the NVRTC library at `lib`, as remembered from an earlier run that
    /// loaded the same file (same size and modification time). Loading NVRTC costs
    /// 10–15 ms of relocations, more than a whole warm run on a small tree; with every
    /// result cached, nothing needs it.
    fn nvrtc_version(&self, lib: &std::path::Path) -> Option<String> {
        let dir = self.dir.as_ref()?;
        let memo: NvrtcMemo =
            serde_json::from_str(&std::fs::read_to_string(dir.join(NVRTC_MEMO)).ok()?).ok()?;
        (memo.library == library_identity(lib)?).then_some(memo.version)
    }

    fn remember_nvrtc_version(&self, lib: &std::path::Path, version: &str) {
        let (Some(dir), Some(library)) = (&self.dir, library_identity(lib)) else {
            return;
        };
        let memo = NvrtcMemo {
            library,
            version: version.to_string(),
        };
        let _ = crate::jsonl::write_atomic(&dir.join(NVRTC_MEMO), |w| {
            serde_json::to_writer(w, &memo).map_err(std::io::Error::other)
        });
    }

    /// Best effort: a cache that cannot be written only costs a compile next time.
    fn put(&self, key: &str, check: &CompileCheck) {
        let Some(dir) = &self.dir else { return };
        let _ = crate::jsonl::write_atomic(&dir.join(format!("{key}.json")), |w| {
            serde_json::to_writer(w, check).map_err(std::io::Error::other)
        });
    }
}

/// Compile every unit for `arch`, recording the result on the unit. Units with the same
/// source (identical pairs) compile once; results found in `cache` are not compiled
/// again (their `millis` is that of the compile that produced them). `Err` only when
/// NVRTC itself is unavailable (then no unit is touched).
pub fn compile_units(
    units: &mut [KernelUnit],
    arch: &str,
    cache: &CheckCache,
    tick: &(dyn Fn() + Sync),
) -> Result<(), NvrtcError> {
    // The version is part of every key: take it from the memo of an earlier run when the
    // library file is the same, and load NVRTC only when something must be compiled.
    let lib = nvrtc::find_library().ok_or(NvrtcError::Missing)?;
    let version = match cache.nvrtc_version(&lib) {
        Some(v) => v,
        None => {
            let v = nvrtc::load()?.version_string();
            cache.remember_nvrtc_version(&lib, &v);
            v
        }
    };
    let keys: Vec<String> = units.iter().map(|u| check_key(u, arch, &version)).collect();
    let mut unique: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, k) in keys.iter().enumerate() {
        unique.entry(k.as_str()).or_insert(i);
    }
    let cached: BTreeMap<&str, CompileCheck> = unique
        .keys()
        .filter_map(|k| cache.get(k).map(|c| (*k, c)))
        .collect();
    if cached.len() < unique.len() {
        nvrtc::load()?;
    }
    let todo: Vec<(&str, usize)> = unique
        .iter()
        .filter(|(k, _)| !cached.contains_key(**k))
        .map(|(k, i)| (*k, *i))
        .collect();
    // NVRTC compiles one program at a time per process (threads queue on it: two threads
    // take as long as one), so a large batch goes to worker processes, one per core.
    let procs = compile_processes().min(todo.len() / 2);
    let compiled: BTreeMap<&str, CompileCheck> = if procs >= 2 {
        in_processes(&todo, units, arch, &version, procs, cache, tick)
    } else {
        todo.par_iter()
            .map(|&(key, i)| {
                let c = compile_guarded(&units[i], arch, &version);
                cache.put(key, &c);
                tick();
                (key, c)
            })
            .collect()
    };
    // Progress for results from the cache and for units shared by identical pairs.
    for _ in compiled.len()..units.len() {
        tick();
    }
    let mut done = cached;
    done.extend(compiled);
    for (u, key) in units.iter_mut().zip(&keys) {
        let check = done[key.as_str()].clone();
        if check.ok && !u.template_params.is_empty() {
            u.diagnostics.push(Diagnostic::new(
                Level::Info,
                "template_not_instantiated",
                "template kernel checked without instantiation: its arguments come from the harness",
            ));
        }
        if !check.ok {
            let first = first_error(&check.log);
            u.diagnostics.push(Diagnostic::new(
                Level::Error,
                "compile_failed",
                format!("NVRTC ({arch}) rejected the unit: {first}"),
            ));
            for h in missing_headers(&check.log) {
                u.diagnostics.push(Diagnostic::new(
                    Level::Error,
                    "missing_cuda_header",
                    nvrtc::missing_header_hint(&h),
                ));
            }
        }
        u.compile = Some(check);
    }
    Ok(())
}

/// File of the NVRTC version memo in the cache folder.
const NVRTC_MEMO: &str = "nvrtc-version.memo";

/// Which NVRTC library a version was read from.
#[derive(serde::Serialize, serde::Deserialize)]
struct NvrtcMemo {
    library: String,
    version: String,
}

/// A library file's path, size and modification time: a new install changes it.
fn library_identity(lib: &std::path::Path) -> Option<String> {
    let m = std::fs::metadata(lib).ok()?;
    let t = m
        .modified()
        .ok()?
        .duration_since(std::time::UNIX_EPOCH)
        .ok()?
        .as_nanos();
    Some(format!("{} {} {t}", lib.display(), m.len()))
}

/// Everything the result of a check depends on.
fn check_key(u: &KernelUnit, arch: &str, nvrtc_version: &str) -> String {
    let resolve = if u.template_params.is_empty() {
        "resolve"
    } else {
        "template"
    };
    content_id(&[
        "compile-check-v1",
        &nvrtc::include_options().join(" "),
        &u.source,
        &u.kernel,
        &u.symbol,
        resolve,
        &u.build_flags.join(" "),
        arch,
        nvrtc_version,
    ])
}

/// Deepest bracket nesting NVRTC is given in-process. Real kernels nest a few dozen
/// levels; NVRTC compiled 100,000-deep parentheses on an extraction worker's 512 MiB stack
/// and overflowed it at 400,000, which no `catch_unwind` can stop (the process aborts).
pub const MAX_NESTING: usize = 20_000;

/// The deepest `(`/`[`/`{` nesting of a source, outside comments and literals.
pub fn nesting_depth(source: &str) -> usize {
    let masked = crate::cuda::lex::mask(source);
    let (mut depth, mut max) = (0usize, 0usize);
    for b in masked.bytes() {
        match b {
            b'(' | b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b')' | b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

/// [`compile_one`], a panic inside NVRTC's binding turned into a failed check.
fn compile_guarded(u: &KernelUnit, arch: &str, version: &str) -> CompileCheck {
    std::panic::catch_unwind(|| compile_one(u, arch, version)).unwrap_or_else(|p| CompileCheck {
        ok: false,
        arch: arch.to_string(),
        log: format!("the compile check failed: {}", super::units::panic_text(&p)),
        millis: 0.0,
        nvrtc_version: version.to_string(),
    })
}

/// Processes the compile check may use: `KERNELPAIR_COMPILE_PROCS`, else one per core; 0
/// where this executable is not `kernelpair` (a test binary cannot serve as a worker).
pub fn compile_processes() -> usize {
    if let Some(n) = std::env::var("KERNELPAIR_COMPILE_PROCS")
        .ok()
        .and_then(|v| v.parse::<usize>().ok())
    {
        return n;
    }
    let ours = std::env::current_exe()
        .ok()
        .and_then(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
        .is_some_and(|s| s == "kernelpair");
    match ours {
        true => std::thread::available_parallelism().map_or(1, |n| n.get()),
        false => 0,
    }
}

/// One compile request to a worker process (`kernelpair compile-worker`), one JSON line.
#[derive(serde::Serialize, serde::Deserialize)]
struct Request {
    unit: KernelUnit,
    arch: String,
    version: String,
}

/// Serve compile checks: one [`Request`] per stdin line, one [`CompileCheck`] per stdout
/// line, until stdin closes (the hidden `kernelpair compile-worker`).
pub fn serve() -> anyhow::Result<u8> {
    // NVRTC recurses with the input's nesting: the same deep stack as extract's workers.
    std::thread::Builder::new()
        .stack_size(super::WORKER_STACK)
        .spawn(serve_lines)?
        .join()
        .map_err(|p| anyhow::anyhow!("{}", super::units::panic_text(&p)))?
}

fn serve_lines() -> anyhow::Result<u8> {
    use std::io::{BufRead, Write};
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        let req: Request = serde_json::from_str(&line?)?;
        let c = compile_guarded(&req.unit, &req.arch, &req.version);
        writeln!(out, "{}", serde_json::to_string(&c)?)?;
        out.flush()?;
    }
    Ok(crate::exit::OK)
}

/// One worker process and its pipes.
struct Child {
    proc: std::process::Child,
    stdin: std::process::ChildStdin,
    stdout: std::io::BufReader<std::process::ChildStdout>,
}

impl Child {
    fn spawn() -> std::io::Result<Child> {
        let exe = std::env::current_exe()?;
        let mut proc = std::process::Command::new(exe)
            .arg("compile-worker")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()?;
        let stdin = proc
            .stdin
            .take()
            .ok_or_else(|| std::io::Error::other("no stdin"))?;
        let stdout = proc
            .stdout
            .take()
            .ok_or_else(|| std::io::Error::other("no stdout"))?;
        Ok(Child {
            proc,
            stdin,
            stdout: std::io::BufReader::new(stdout),
        })
    }

    fn check(&mut self, req: &str) -> std::io::Result<CompileCheck> {
        use std::io::{BufRead, Write};
        writeln!(self.stdin, "{req}")?;
        self.stdin.flush()?;
        let mut line = String::new();
        if self.stdout.read_line(&mut line)? == 0 {
            return Err(std::io::Error::other("the worker exited"));
        }
        serde_json::from_str(&line).map_err(std::io::Error::other)
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.proc.kill();
        let _ = self.proc.wait();
    }
}

/// Compile `todo` in `procs` worker processes, each result cached as it comes. A worker
/// that dies (NVRTC crashing on a unit) fails that unit's check with the reason, and a new
/// worker takes the rest; where no worker starts, the units compile in this process.
fn in_processes<'k>(
    todo: &[(&'k str, usize)],
    units: &[KernelUnit],
    arch: &str,
    version: &str,
    procs: usize,
    cache: &CheckCache,
    tick: &(dyn Fn() + Sync),
) -> BTreeMap<&'k str, CompileCheck> {
    let queue = std::sync::Mutex::new(
        todo.iter()
            .copied()
            .collect::<std::collections::VecDeque<_>>(),
    );
    let results = std::sync::Mutex::new(BTreeMap::new());
    std::thread::scope(|s| {
        for _ in 0..procs {
            s.spawn(|| {
                let mut child = Child::spawn()
                    .map_err(|e| {
                        eprintln!("warning: a compile worker could not start ({e}); its share compiles in this process");
                    })
                    .ok();
                while let Some((key, i)) = queue.lock().ok().and_then(|mut q| q.pop_front()) {
                    let u = &units[i];
                    let req = serde_json::to_string(&Request {
                        unit: u.clone(),
                        arch: arch.to_string(),
                        version: version.to_string(),
                    })
                    .expect("requests serialize");
                    let c = match child.as_mut().map(|c| c.check(&req)) {
                        Some(Ok(c)) => c,
                        Some(Err(e)) => {
                            child = Child::spawn().ok();
                            CompileCheck {
                                ok: false,
                                arch: arch.to_string(),
                                log: format!("the compile check's worker process died on this unit ({e}): NVRTC crashed"),
                                millis: 0.0,
                                nvrtc_version: version.to_string(),
                            }
                        }
                        None => compile_guarded(u, arch, version),
                    };
                    cache.put(key, &c);
                    tick();
                    if let Ok(mut r) = results.lock() {
                        r.insert(key, c);
                    }
                }
            });
        }
    });
    results.into_inner().unwrap_or_default()
}

fn compile_one(u: &KernelUnit, arch: &str, version: &str) -> CompileCheck {
    let depth = nesting_depth(&u.source);
    if depth > MAX_NESTING {
        return CompileCheck {
            ok: false,
            arch: arch.to_string(),
            log: format!(
                "not compiled: brackets nest {depth} deep, over the limit of {MAX_NESTING} \
                 (NVRTC would overflow its stack and take the whole run down)"
            ),
            millis: 0.0,
            nvrtc_version: version.to_string(),
        };
    }
    let name = format!("{}.cu", u.kernel);
    // Asking for the kernel's lowered name proves the symbol the GPU stage will look up
    // exists. A template's symbol is its bare name (the harness supplies `<…>`), which
    // names nothing until instantiated, so templates compile without one.
    let exprs = [u.symbol.clone()];
    let resolve = !u.symbol.is_empty() && u.template_params.is_empty();
    let req = CompileRequest {
        source: &u.source,
        name: &name,
        arch,
        name_expressions: if resolve { &exprs } else { &[] },
        cubin: false,
        extra_options: &u.build_flags,
    };
    match nvrtc::compile(&req) {
        Ok(c) => CompileCheck {
            ok: c.ok,
            arch: arch.to_string(),
            log: c.log,
            millis: (c.millis * 1000.0).round() / 1000.0,
            nvrtc_version: version.to_string(),
        },
        Err(e) => CompileCheck {
            ok: false,
            arch: arch.to_string(),
            log: match e {
                NvrtcError::UnknownName { .. } => {
                    format!("compiled, but symbol `{}` was not found: {e}", u.symbol)
                }
                e => e.to_string(),
            },
            millis: 0.0,
            nvrtc_version: version.to_string(),
        },
    }
}

/// Headers NVRTC could not open, as named in its log.
pub fn missing_headers(log: &str) -> Vec<String> {
    static RE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"could not open source file "([^"]+)""#).expect("static regex")
    });
    let mut v: Vec<String> = RE.captures_iter(log).map(|c| c[1].to_string()).collect();
    v.dedup();
    v
}

/// The first `error` line of an NVRTC log (or its first line).
pub fn first_error(log: &str) -> String {
    log.lines()
        .find(|l| l.contains("error"))
        .or_else(|| log.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("(empty log)")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(source: &str, symbol: &str) -> KernelUnit {
        KernelUnit {
            id: "x".into(),
            suite: "s".into(),
            path: "p.cu".into(),
            symbol: symbol.into(),
            ..KernelUnit::for_test("k", &[], source)
        }
    }

    /// The NVRTC version is remembered per library file, and forgotten when the file
    /// changes (a new install), so a fully cached run never has to load NVRTC.
    #[test]
    fn nvrtc_version_memo_follows_the_library_file() {
        let dir = tempfile::tempdir().unwrap();
        let lib = dir.path().join("libnvrtc.so.13");
        std::fs::write(&lib, b"one").unwrap();
        let cache = CheckCache::at(dir.path().join("cc"));
        assert_eq!(cache.nvrtc_version(&lib), None);
        cache.remember_nvrtc_version(&lib, "13.0");
        assert_eq!(cache.nvrtc_version(&lib).as_deref(), Some("13.0"));
        std::fs::write(&lib, b"another build").unwrap();
        assert_eq!(cache.nvrtc_version(&lib), None);
        assert_eq!(CheckCache::none().nvrtc_version(&lib), None);
    }

    #[test]
    fn first_error_line() {
        let log = "k.cu(3): warning: x\nk.cu(4): error: identifier \"q\" is undefined\n";
        assert_eq!(
            first_error(log),
            "k.cu(4): error: identifier \"q\" is undefined"
        );
        assert_eq!(first_error(""), "(empty log)");
    }

    /// Runs where NVRTC is installed; otherwise checks the missing library is an error,
    /// not a panic.
    #[test]
    fn compiles_units_or_reports_missing_nvrtc() {
        let mut units = vec![
            unit(
                "extern \"C\" __global__ void k(float *x) { x[0] = 1; }",
                "k",
            ),
            unit("__global__ void k(float *x) { nope(x); }", "k"),
            {
                let src = "template <int B> __global__ void k(float *x) { x[B] = 1; }";
                let mut t = unit(src, "k");
                t.template_params = vec!["int B".into()];
                t
            },
            unit("__global__ void k(float *x) { x[0] = 1; }", "other"),
        ];
        match compile_units(&mut units, "sm_90", &CheckCache::none(), &|| {}) {
            Err(NvrtcError::Missing) => assert!(units.iter().all(|u| u.compile.is_none())),
            Err(e) => panic!("{e}"),
            Ok(()) => {
                let ok: Vec<bool> = units
                    .iter()
                    .map(|u| u.compile.as_ref().unwrap().ok)
                    .collect();
                assert_eq!(ok, [true, false, true, false]);
                assert!(units[1].diagnostics[0].message.contains("nope"));
                assert!(units[3].compile.as_ref().unwrap().log.contains("other"));
                assert_eq!(units[0].compile.as_ref().unwrap().arch, "sm_90");
                assert_eq!(units[2].diagnostics[0].code, "template_not_instantiated");
            }
        }
    }

    /// Where NVRTC is installed: a second run reads every result from the cache (a
    /// planted entry proves no compile happened), and equal sources compile once.
    #[test]
    fn cached_results_are_reused() {
        if nvrtc::load().is_err() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let cache = CheckCache::at(dir.path().to_path_buf());
        let src = "extern \"C\" __global__ void k(float *x) { x[0] = 2; }";
        let mut units = vec![unit(src, "k"), unit(src, "k")];
        let ticks = std::sync::atomic::AtomicUsize::new(0);
        let tick = || {
            ticks.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        };
        compile_units(&mut units, "sm_90", &cache, &tick).unwrap();
        // Progress counts every unit, the copy too.
        assert_eq!(ticks.load(std::sync::atomic::Ordering::Relaxed), 2);
        let files: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .collect();
        assert_eq!(files.len(), 1, "two equal units, one entry");
        // The NVRTC version is remembered beside the results.
        assert!(dir.path().join(NVRTC_MEMO).is_file());
        let mut planted: CompileCheck = units[0].compile.clone().unwrap();
        assert!(planted.ok);
        planted.log = "from the cache".into();
        std::fs::write(files[0].path(), serde_json::to_string(&planted).unwrap()).unwrap();
        let mut again = vec![unit(src, "k")];
        compile_units(&mut again, "sm_90", &cache, &|| {}).unwrap();
        assert_eq!(again[0].compile.as_ref().unwrap().log, "from the cache");
    }
}
