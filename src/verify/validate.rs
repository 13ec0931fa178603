//! `kernelpair validate <DIR>...`: a contributed pair folder (slow.cu, fast.cu, a
//! harness, optional `pair.toml` manifest and README) goes through compile, agreement
//! and timing in a worker, and gets a verdict: a JSON report and a human summary;
//! exit 0 when accepted, `exit::REJECTED` otherwise. Manifest paths cannot leave the
//! folder (no `..`, no absolute paths, no symlinks pointing out).

use super::engine::tool_version;
use crate::exit;
use crate::harness::Variant;
use crate::record::{
    KernelUnit, Pair, PairRule, Record, Slow, Status, UnitBody, UnitPlace, Verification,
};
use anyhow::Context;
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};

#[derive(Debug, Clone, clap::Args)]
pub struct ValidateArgs {
    /// Pair folders (each: slow.cu, fast.cu, harness, optional pair.toml).
    #[arg(required = true)]
    pub dirs: Vec<PathBuf>,
    /// Where to write the JSON verdict report.
    #[arg(long, default_value = "verdict.json")]
    pub report: PathBuf,
    /// Also write the pairs built from the folders as JSONL (for `verify`).
    #[arg(long = "write-pairs")]
    pub write_pairs: Option<PathBuf>,
    /// Build and check the folders, write --write-pairs, but run nothing.
    #[arg(long = "no-run")]
    pub no_run: bool,
    #[arg(long = "timeout-s", default_value_t = super::DEFAULT_TIMEOUT_S)]
    pub timeout_s: f64,
    #[arg(long, default_value_t = super::DEFAULT_SEEDS)]
    pub seeds: u32,
    #[arg(long = "min-speedup", default_value_t = super::DEFAULT_MIN_SPEEDUP)]
    pub min_speedup: f64,
    #[arg(long = "cache-dir")]
    pub cache_dir: Option<PathBuf>,
    /// Also run the pair under these compute-sanitizer tools (comma list: memcheck,
    /// racecheck, initcheck, synccheck); errors reject it as `sanitizer_error`.
    #[arg(long, value_delimiter = ',', value_name = "TOOLS")]
    pub sanitizer: Vec<super::sanitizer::Tool>,
}

#[derive(Debug, thiserror::Error)]
pub enum ValidateError {
    #[error("{dir}: {path:?} {why}")]
    Escape {
        dir: PathBuf,
        path: String,
        why: &'static str,
    },
    #[error(transparent)]
    Io(#[from] crate::path_io::PathIo),
    #[error("{path}: {message}")]
    Manifest { path: PathBuf, message: String },
    #[error("{path}: no sole __global__ kernel ({found}); name it with `{key}` (or `kernel`) in pair.toml")]
    NoKernel {
        path: PathBuf,
        found: String,
        key: &'static str,
    },
    #[error("{path}: cannot isolate kernel: {message}")]
    Isolation { path: PathBuf, message: String },
}

/// `pair.toml`; every field optional.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub benchmark: Option<String>,
    #[serde(default = "slow_default")]
    pub slow: String,
    #[serde(default = "fast_default")]
    pub fast: String,
    /// Harness file; default `harness.toml`.
    pub harness: Option<String>,
    /// Kernel name of both sides when they share it (default: each file's sole
    /// `__global__` function).
    pub kernel: Option<String>,
    /// The slow side's kernel when it differs from `kernel`: a name (`transposeNaive`) or
    /// a name expression (`reduce0<int>`, `matvec<256>`); the name is the part before `<`.
    /// `slow_symbol` is the older spelling of the same key.
    #[serde(alias = "slow_symbol")]
    pub slow_kernel: Option<String>,
    /// The fast side's kernel, as `slow_kernel` (alias `fast_symbol`).
    #[serde(alias = "fast_symbol")]
    pub fast_kernel: Option<String>,
    /// For fixtures: the status this pair is expected to get.
    pub expect: Option<Status>,
}

fn slow_default() -> String {
    "slow.cu".into()
}
fn fast_default() -> String {
    "fast.cu".into()
}

/// Resolve `rel` inside `dir`, refusing anything that could leave it.
pub fn inside(dir: &Path, rel: &str) -> Result<PathBuf, ValidateError> {
    let esc = |why| ValidateError::Escape {
        dir: dir.to_path_buf(),
        path: rel.to_string(),
        why,
    };
    let p = Path::new(rel);
    if p.is_absolute() || p.has_root() {
        return Err(esc("is absolute"));
    }
    if p.components()
        .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
    {
        return Err(esc("leaves the folder (`..`)"));
    }
    let root = dir.canonicalize().map_err(|source| {
        ValidateError::Io(crate::path_io::PathIo::new(dir.to_path_buf(), source))
    })?;
    let full = root.join(p);
    if let Ok(real) = full.canonicalize() {
        if !real.starts_with(&root) {
            return Err(esc("is a symlink pointing outside the folder"));
        }
        return Ok(real);
    }
    Ok(full)
}

fn read(path: &Path) -> Result<String, ValidateError> {
    std::fs::read_to_string(path).map_err(|source| {
        ValidateError::Io(crate::path_io::PathIo::new(path.to_path_buf(), source))
    })
}

/// Local headers a pair folder's kernels may include (`*.cuh`, `*.h`, `*.hpp`), read
/// through [`inside`] so a symlink cannot pull in a file from elsewhere.
fn folder_sources(dir: &Path) -> Result<Vec<(String, String)>, ValidateError> {
    let rd = std::fs::read_dir(dir).map_err(|source| {
        ValidateError::Io(crate::path_io::PathIo::new(dir.to_path_buf(), source))
    })?;
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if [".cuh", ".h", ".hpp"].iter().any(|x| name.ends_with(x)) {
            let p = inside(dir, &name)?;
            out.push((name, read(&p)?));
        }
    }
    out.sort();
    Ok(out)
}

/// The `__global__` kernel names defined in a source text, in order.
fn kernel_names(src: &str) -> Vec<String> {
    let re = regex::Regex::new(r"__global__\s+(?:__launch_bounds__\s*\([^)]*\)\s*)?void\s+(\w+)")
        .expect("valid regex");
    re.captures_iter(src).map(|c| c[1].to_string()).collect()
}

fn sole_kernel(src: &str) -> Option<String> {
    let names = kernel_names(src);
    let first = names.first()?.clone();
    names.iter().all(|n| *n == first).then_some(first)
}

/// One side's kernel: the name isolation looks for and, for a name expression, the
/// symbol the module is searched by.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideKernel {
    pub name: String,
    pub symbol: Option<String>,
}

impl SideKernel {
    /// `reduce0<int>` → name `reduce0`, symbol `reduce0<int>`; `k` → name `k`.
    pub fn parse(text: &str) -> SideKernel {
        let text = text.trim();
        match text.find('<') {
            Some(i) => SideKernel {
                name: text[..i].trim().to_string(),
                symbol: Some(text.to_string()),
            },
            None => SideKernel {
                name: text.to_string(),
                symbol: None,
            },
        }
    }
}

/// Which kernel of a side's file to use: the side's own key (`slow_kernel`), then the
/// shared `kernel`, then the file's sole `__global__` function. A whole sample file
/// with several kernels needs one of the keys; the error lists the kernels it has.
fn side_kernel(
    own: Option<&str>,
    shared: Option<&str>,
    src: &str,
    path: &Path,
    key: &'static str,
) -> Result<SideKernel, ValidateError> {
    if let Some(k) = own.or(shared) {
        return Ok(SideKernel::parse(k));
    }
    sole_kernel(src)
        .map(|name| SideKernel { name, symbol: None })
        .ok_or_else(|| {
            let names = kernel_names(src);
            ValidateError::NoKernel {
                path: path.to_path_buf(),
                found: if names.is_empty() {
                    "none found".into()
                } else {
                    format!("it has {}", names.join(", "))
                },
                key,
            }
        })
}

/// Read a pair folder into a manifest and a pair record (harness path absolute).
pub fn load_folder(dir: &Path) -> Result<(Manifest, Pair), ValidateError> {
    let mpath = dir.join("pair.toml");
    let manifest: Manifest = if mpath.exists() {
        let m = inside(dir, "pair.toml")?;
        toml::from_str(&read(&m)?).map_err(|e| ValidateError::Manifest {
            path: mpath.clone(),
            message: e.to_string(),
        })?
    } else {
        Manifest {
            slow: slow_default(),
            fast: fast_default(),
            ..Manifest::default()
        }
    };
    let slow_path = inside(dir, &manifest.slow)?;
    let fast_path = inside(dir, &manifest.fast)?;
    let harness = inside(dir, manifest.harness.as_deref().unwrap_or("harness.toml"))?;
    let slow_src = read(&slow_path)?;
    let fast_src = read(&fast_path)?;
    let headers = folder_sources(dir)?;
    let slow_side = side_kernel(
        manifest.slow_kernel.as_deref(),
        manifest.kernel.as_deref(),
        &slow_src,
        &slow_path,
        "slow_kernel",
    )?;
    let fast_side = side_kernel(
        manifest.fast_kernel.as_deref(),
        manifest.kernel.as_deref(),
        &fast_src,
        &fast_path,
        "fast_kernel",
    )?;
    let benchmark = manifest.benchmark.clone().unwrap_or_else(|| {
        dir.canonicalize()
            .ok()
            .and_then(|d| d.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| "contrib".into())
    });
    // Isolation drops host code (main, I/O, launches) and keeps what the kernel needs,
    // exactly as extract does for suites; only NVRTC-compiled device code ever runs.
    let unit = |variant: &str, file: &str, path: &Path, src: String, side: &SideKernel| {
        let kernel = &side.name;
        let mut files = std::collections::BTreeMap::new();
        for (name, text) in &headers {
            files.insert(name.clone(), crate::cuda::index_file(name, text));
        }
        files.insert(file.to_string(), crate::cuda::index_file(file, &src));
        let scope = crate::cuda::Scope::new(&files);
        let iso =
            crate::cuda::isolate(&scope, file, kernel).map_err(|e| ValidateError::Isolation {
                path: path.to_path_buf(),
                message: e.to_string(),
            })?;
        let symbol = side.symbol.clone().unwrap_or(iso.symbol);
        let place = UnitPlace {
            suite: "contrib",
            benchmark: &benchmark,
            variant,
            path: file,
        };
        Ok::<KernelUnit, ValidateError>(KernelUnit::new(place, UnitBody { symbol, ..iso }))
    };
    let slow = unit("slow", &manifest.slow, &slow_path, slow_src, &slow_side)?;
    let fast = unit("fast", &manifest.fast, &fast_path, fast_src, &fast_side)?;
    let shared_launches = shared_launches(&harness, &slow, &fast);
    let pair = Pair {
        suite: "contrib".into(),
        benchmark,
        kernel: fast_side.name.clone(),
        harness: Some(harness.display().to_string()),
        shared_launches,
        ..Pair::new(Slow::natural(slow), fast, PairRule::Validate)
    };
    Ok((manifest, pair))
}

/// Contributors write one harness launch for the kernel they optimized: when the two
/// sides' kernels differ but take the same parameter list, and every launch of the harness
/// names one of them, those launches serve both sides (the side whose kernel they name).
/// A harness that does not load is left for verify to report.
fn shared_launches(harness: &Path, slow: &KernelUnit, fast: &KernelUnit) -> Option<Variant> {
    if slow.kernel == fast.kernel || !same_parameter_list(slow, fast) {
        return None;
    }
    let h = crate::harness::load(harness).ok()?;
    let named = h.sole_launched_kernel()?;
    [(Variant::Slow, slow), (Variant::Fast, fast)]
        .into_iter()
        .find(|(_, u)| u.kernel == named)
        .map(|(side, _)| side)
}

/// The same parameters as a launch passes them: count, types (without `const` and
/// `__restrict__`, which change no argument) and template parameter count.
fn same_parameter_list(a: &KernelUnit, b: &KernelUnit) -> bool {
    use crate::synth::checks::launch_type;
    a.params.len() == b.params.len()
        && a.template_params.len() == b.template_params.len()
        && a.params
            .iter()
            .zip(&b.params)
            .all(|(x, y)| launch_type(x) == launch_type(y))
}

/// The one line that says a pair's launches serve both sides.
fn shared_launches_note(p: &Pair) -> Option<String> {
    let from = p.shared_launches?;
    let slow = p.slow.unit()?;
    let (named, other, other_side) = match from {
        Variant::Fast => (&p.fast.kernel, &slow.kernel, Variant::Slow),
        Variant::Slow => (&slow.kernel, &p.fast.kernel, Variant::Fast),
    };
    Some(format!(
        "the harness launches only {named} ({from}); the {other_side} side runs {other} with the same launches (same parameter list)"
    ))
}

#[derive(Debug, Serialize)]
struct Verdict {
    dir: String,
    accepted: bool,
    status: Status,
    reason: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    expected: Option<Status>,
    verification: Verification,
}

pub fn run_validate(args: ValidateArgs) -> anyhow::Result<u8> {
    let mut records = Vec::new();
    let mut verdicts: Vec<Option<Verdict>> = Vec::new();
    let mut expects = Vec::new();
    for dir in &args.dirs {
        match load_folder(dir) {
            Ok((m, p)) => {
                if let Some(note) = shared_launches_note(&p) {
                    eprintln!("{}: {note}", dir.display());
                }
                records.push(Record::Pair(Box::new(p)));
                expects.push(m.expect);
                verdicts.push(None);
            }
            Err(e) => {
                let v = Verification {
                    status: Status::HarnessError,
                    reason: e.to_string(),
                    device: None,
                    evidence: Default::default(),
                    speedup: None,
                    tool_version: tool_version(),
                    flags: vec![],
                };
                verdicts.push(Some(Verdict {
                    dir: dir.display().to_string(),
                    accepted: false,
                    status: v.status,
                    reason: v.reason.clone(),
                    expected: None,
                    verification: v,
                }));
            }
        }
    }
    if let Some(w) = &args.write_pairs {
        crate::jsonl::write_records(w, &records)?;
    }
    if args.no_run {
        for v in verdicts.iter().flatten() {
            eprintln!("{}: {}", v.dir, v.reason);
        }
        return Ok(if verdicts.iter().any(Option::is_some) {
            exit::REJECTED
        } else {
            exit::OK
        });
    }
    let vargs = super::Settings {
        timeout_s: args.timeout_s,
        seeds: args.seeds,
        min_speedup: args.min_speedup,
        cache_dir: args.cache_dir.clone(),
        sanitizer: args.sanitizer.clone(),
        ..super::Settings::default()
    };
    let results = super::verify_records(&records, Path::new(""), &vargs, None)?;
    let mut ri = 0;
    for (slot, dir) in verdicts.iter_mut().zip(&args.dirs) {
        if slot.is_some() {
            continue;
        }
        let v = results
            .get(&ri)
            .cloned()
            .context("every pair gets a result")?;
        *slot = Some(Verdict {
            dir: dir.display().to_string(),
            accepted: v.status == Status::Verified,
            status: v.status,
            reason: v.reason.clone(),
            expected: expects[ri],
            verification: v,
        });
        ri += 1;
    }
    let verdicts: Vec<Verdict> = verdicts.into_iter().flatten().collect();
    crate::jsonl::write_atomic(&args.report, |w| {
        serde_json::to_writer_pretty(&mut *w, &verdicts).map_err(std::io::Error::other)?;
        std::io::Write::write_all(w, b"\n")
    })?;
    for v in &verdicts {
        let word = if v.accepted { "ACCEPTED" } else { "REJECTED" };
        let exp = match v.expected {
            Some(e) if e == v.status => " (as expected)".to_string(),
            Some(e) => format!(" (EXPECTED {})", e.as_str()),
            None => String::new(),
        };
        println!(
            "{word} {} [{}]{exp}: {}",
            v.dir,
            v.status.as_str(),
            v.reason
        );
    }
    Ok(if verdicts.iter().all(|v| v.accepted) {
        exit::OK
    } else {
        exit::REJECTED
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manifest_paths_cannot_escape() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(d.path().join("slow.cu"), "x").unwrap();
        assert!(inside(d.path(), "slow.cu").is_ok());
        assert!(inside(d.path(), "sub/../slow.cu").is_err());
        assert!(inside(d.path(), "../etc/passwd").is_err());
        assert!(inside(d.path(), "/etc/passwd").is_err());
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("secret.cu"), "x").unwrap();
        std::os::unix::fs::symlink(outside.path().join("secret.cu"), d.path().join("link.cu"))
            .unwrap();
        let e = inside(d.path(), "link.cu").unwrap_err().to_string();
        assert!(e.contains("symlink"), "{e}");
    }

    #[test]
    fn sole_kernel_is_found_or_refused() {
        assert_eq!(
            sole_kernel("extern \"C\" __global__ void k(float* x) {}").as_deref(),
            Some("k")
        );
        assert_eq!(
            sole_kernel("__global__ __launch_bounds__(256) void k2(int n) {}").as_deref(),
            Some("k2")
        );
        assert_eq!(
            sole_kernel("__global__ void a() {} __global__ void b() {}"),
            None
        );
    }

    #[test]
    fn side_kernels_parse_names_and_name_expressions() {
        assert_eq!(
            SideKernel::parse(" reduce0<int> "),
            SideKernel {
                name: "reduce0".into(),
                symbol: Some("reduce0<int>".into())
            }
        );
        assert_eq!(SideKernel::parse("transposeNaive").symbol, None);
    }

    /// Whole sample files (host code, helper headers, several kernels) as both sides,
    /// each side's kernel named in pair.toml; the template pair's harness has no c_type.
    #[test]
    fn renamed_kernels_from_one_whole_file() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/planted");
        for (dir, slow, fast, slow_sym, fast_sym) in [
            (
                "renamed_transpose_file",
                "transposeSimple",
                "transposeShared",
                "transposeSimple",
                "transposeShared",
            ),
            (
                "renamed_reduce_template",
                "reduceInterleaved",
                "reduceUnrolled",
                "reduceInterleaved<int>",
                "reduceUnrolled<int, 256>",
            ),
        ] {
            let (m, p) = load_folder(&root.join(dir)).unwrap();
            assert_eq!(m.slow, m.fast, "{dir}: one file serves both sides");
            let s = p.slow.unit().unwrap();
            assert_eq!((s.kernel.as_str(), s.symbol.as_str()), (slow, slow_sym));
            assert_eq!(
                (p.fast.kernel.as_str(), p.fast.symbol.as_str()),
                (fast, fast_sym)
            );
            assert_eq!(p.kernel, fast);
            // Host code is gone; the other kernels of the file are not pulled in.
            for u in [s, &p.fast] {
                assert!(!u.source.contains("int main"), "{dir}: {}", u.source);
                assert!(!u.source.contains("checkCudaErrors"), "{dir}");
                assert_eq!(u.source.matches("__global__").count(), 1, "{dir}");
            }
            let h = crate::harness::load(Path::new(p.harness.as_deref().unwrap())).unwrap();
            h.check_against(Some(s), &p.fast)
                .unwrap_or_else(|e| panic!("{dir}: {e}"));
        }
        // Without the template arguments in the launch name, T stays unknown: the error
        // says how to bind it.
        let (_, p) = load_folder(&root.join("renamed_reduce_template")).unwrap();
        let text = std::fs::read_to_string(p.harness.as_deref().unwrap())
            .unwrap()
            .replace(
                "kernel = \"reduceInterleaved<int>\"",
                "kernel = \"reduceInterleaved\"",
            );
        let h = crate::harness::parse(&text, "t").unwrap();
        let e = h
            .check_against(p.slow.unit(), &p.fast)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("unknown C type \"T\"") && e.contains("reduceInterleaved<…>"),
            "{e}"
        );
        // The pair id depends on which kernels were named.
        let d = tempfile::tempdir().unwrap();
        let src = root.join("renamed_transpose_file");
        for f in ["transpose_sample.cu", "harness.toml", "pair.toml"] {
            std::fs::copy(src.join(f), d.path().join(f)).unwrap();
        }
        let (_, a) = load_folder(d.path()).unwrap();
        let text = std::fs::read_to_string(d.path().join("pair.toml"))
            .unwrap()
            .replace("\"transposeSimple\"", "\"copyMatrix\"");
        std::fs::write(d.path().join("pair.toml"), text).unwrap();
        let (_, b) = load_folder(d.path()).unwrap();
        assert_ne!(a.id, b.id);
        assert_eq!(b.slow.unit().unwrap().kernel, "copyMatrix");
    }

    #[test]
    fn several_kernels_without_a_name_are_refused_with_the_names() {
        let d = tempfile::tempdir().unwrap();
        let two = "__global__ void a(int *x) {} __global__ void b(int *x) {}";
        std::fs::write(d.path().join("slow.cu"), two).unwrap();
        std::fs::write(d.path().join("fast.cu"), "__global__ void b(int *x) {}").unwrap();
        std::fs::write(d.path().join("harness.toml"), "").unwrap();
        let e = load_folder(d.path()).unwrap_err().to_string();
        assert!(
            e.contains("it has a, b") && e.contains("slow_kernel"),
            "{e}"
        );
        std::fs::write(d.path().join("pair.toml"), "slow_kernel = \"a\"\n").unwrap();
        let (_, p) = load_folder(d.path()).unwrap();
        assert_eq!(p.slow.unit().unwrap().kernel, "a");
        assert_eq!(p.fast.kernel, "b");
        // `slow_symbol` is the older spelling of the same key; giving both is an error.
        std::fs::write(d.path().join("pair.toml"), "slow_symbol = \"a\"\n").unwrap();
        assert_eq!(
            load_folder(d.path()).unwrap().1.slow.unit().unwrap().kernel,
            "a"
        );
        std::fs::write(
            d.path().join("pair.toml"),
            "slow_symbol = \"a\"\nslow_kernel = \"a\"\n",
        )
        .unwrap();
        assert!(load_folder(d.path()).is_err());
    }

    /// Regression (cuda-samples transpose as contributed): the harness's one launch names
    /// `transposeCoalesced`, pair.toml names `transposeNaive` as the slow kernel. The two
    /// take one parameter list, so the launch serves both sides and the pair says so; it
    /// was refused as "launch[0] runs transposeCoalesced, but the slow unit's kernel is
    /// transposeNaive".
    #[test]
    fn one_kernels_launches_serve_both_sides() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/planted");
        let (_, p) = load_folder(&root.join("shared_launch_transpose")).unwrap();
        assert_eq!(p.shared_launches, Some(Variant::Fast));
        assert_eq!(
            shared_launches_note(&p).as_deref(),
            Some("the harness launches only transposeCoalesced (fast); the slow side runs transposeNaive with the same launches (same parameter list)")
        );
        let h = crate::harness::load(Path::new(p.harness.as_deref().unwrap())).unwrap();
        let e = h
            .check_against(p.slow.unit(), &p.fast)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("launch[0] runs \"transposeCoalesced\", but the slow unit's kernel is \"transposeNaive\""),
            "as written, each side's launch must name its kernel: {e}"
        );
        let shared = h.for_record(&p).unwrap();
        let (slow, fast) = (&shared.slow[..], &shared.fast[..]);
        assert_eq!((slow.len(), fast.len()), (1, 1));
        assert_eq!(slow[0].kernel, "transposeNaive");
        assert_eq!(fast[0].kernel, "transposeCoalesced");
        let same = crate::harness::LaunchSpec {
            kernel: fast[0].kernel.clone(),
            ..slow[0].clone()
        };
        assert_eq!(same, fast[0], "the same grid, block and args");
        shared.check_against(p.slow.unit(), &p.fast).unwrap();
        // verify prepares the pair's harness the same way.
        let found = crate::harness::prepare(&p, Path::new(""), &[], None).unwrap();
        assert_eq!(found.harness.slow[0].kernel, "transposeNaive");
        // A harness with a launch per kernel keeps its own.
        let (_, own) = load_folder(&root.join("renamed_transpose_file")).unwrap();
        assert_eq!(own.shared_launches, None);
        assert_eq!(shared_launches_note(&own), None);
    }

    /// Launches are shared only between two kernels with one parameter list, from the side
    /// whose kernel every launch names: either side.
    #[test]
    fn launches_are_shared_only_between_kernels_with_one_parameter_list() {
        let d = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(d.path().join(name), text).unwrap();
        let harness = |kernel: &str| {
            format!(
                "[sizes]\nn = 1024\n[[size_sets]]\nname = \"s\"\n\
                 [[args]]\nname = \"out\"\ntype = \"f32\"\nlen = \"n\"\nrole = \"out\"\n\
                 [[args]]\nname = \"in\"\ntype = \"f32\"\nlen = \"n\"\nrole = \"in\"\n\
                 init = {{ kind = \"uniform\", lo = -1.0, hi = 1.0 }}\n\
                 [[args]]\nname = \"n\"\ntype = \"i32\"\nvalue = \"n\"\n\
                 [[launch]]\nkernel = \"{kernel}\"\ngrid = [\"ceil_div(n, 256)\"]\nblock = [256]\n"
            )
        };
        let body = "{ int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = in[i]; }";
        write(
            "slow.cu",
            &format!("__global__ void a(float* out, float* in, int n) {body}"),
        );
        write(
            "fast.cu",
            &format!("__global__ void b(float* __restrict__ out, const float* __restrict__ in, int n) {body}"),
        );
        // The slow kernel's launch serves the fast side too (const and __restrict__ change
        // no argument).
        write("harness.toml", &harness("a"));
        let (_, p) = load_folder(d.path()).unwrap();
        assert_eq!(p.shared_launches, Some(Variant::Slow));
        let h = crate::harness::load(&d.path().join("harness.toml")).unwrap();
        let shared = h.for_record(&p).unwrap();
        assert_eq!(
            (
                shared.slow[0].kernel.as_str(),
                shared.fast[0].kernel.as_str()
            ),
            ("a", "b")
        );
        shared.check_against(p.slow.unit(), &p.fast).unwrap();
        // A launch naming neither kernel is left for the harness check to refuse.
        write("harness.toml", &harness("c"));
        assert_eq!(load_folder(d.path()).unwrap().1.shared_launches, None);
        // Another parameter list: each side needs its own launch.
        write("harness.toml", &harness("b"));
        write(
            "slow.cu",
            &format!("__global__ void a(float* out, float* in, int n, int m) {body}"),
        );
        assert_eq!(load_folder(d.path()).unwrap().1.shared_launches, None);
        write(
            "slow.cu",
            &format!("__global__ void a(double* out, float* in, int n) {body}"),
        );
        assert_eq!(load_folder(d.path()).unwrap().1.shared_launches, None);
        // One kernel name on both sides needs no sharing.
        write(
            "slow.cu",
            &format!("__global__ void b(float* out, float* in, int n) {body}"),
        );
        assert_eq!(load_folder(d.path()).unwrap().1.shared_launches, None);
    }

    #[test]
    fn planted_folders_load_with_their_expectations() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/planted");
        let (m, p) = load_folder(&root.join("good_matvec")).unwrap();
        assert_eq!(m.expect, Some(Status::Verified));
        assert_eq!(p.slow.unit().unwrap().symbol, "matvec<256>");
        assert_eq!(p.fast.symbol, "matvec");
        assert!(p.harness.unwrap().ends_with("harness.toml"));
        let (m, _) = load_folder(&root.join("hang")).unwrap();
        assert_eq!(m.expect, Some(Status::Timeout));
    }
}
