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
    let done: BTreeMap<&str, CompileCheck> = unique
        .into_par_iter()
        .map(|(key, i)| {
            let check = cached.get(key).cloned().unwrap_or_else(|| {
                let c = std::panic::catch_unwind(|| compile_one(&units[i], arch, &version))
                    .unwrap_or_else(|p| CompileCheck {
                        ok: false,
                        arch: arch.to_string(),
                        log: format!("the compile check failed: {}", super::units::panic_text(&p)),
                        millis: 0.0,
                        nvrtc_version: version.clone(),
                    });
                cache.put(key, &c);
                c
            });
            // Progress as each compile ends (a unit shared by identical pairs counts once
            // here and its copies after).
            tick();
            (key, check)
        })
        .collect();
    for _ in done.len()..units.len() {
        tick();
    }
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
