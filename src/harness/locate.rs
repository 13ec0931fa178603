//! Finding a pair's harness file: candidate names and the walk through harness folders
//! and the suite tree; [`prepare`] loads it and checks it against the pair's units, or
//! says which status settles the pair without a GPU (`missing_slow`, `no_harness`,
//! `needs_host_loop`, `harness_error`).

use super::*;
use crate::record::Status;

/// File names a pair's harness may have, most specific first:
/// `{stem}.{kernel}.{variant}.toml`, `{stem}.{kernel}.toml`, `{stem}.{variant}.toml`,
/// `{stem}.toml` (kernel and variant of the fast unit).
pub fn candidate_names(pair: &Pair, stem: &str) -> Vec<String> {
    let (k, v) = (&pair.fast.kernel, &pair.fast.variant);
    let mut out = vec![format!("{stem}.{k}.{v}.toml"), format!("{stem}.{k}.toml")];
    // One harness per progression file (llm.c: `dev/cuda.softmax_forward.toml`).
    if let Some(file) = Path::new(&pair.fast.path).file_stem() {
        out.push(format!("{stem}.{}.toml", file.to_string_lossy()));
    }
    if !v.is_empty() {
        out.push(format!("{stem}.{v}.toml"));
    }
    out.push(format!("{stem}.toml"));
    out
}

/// Find a pair's harness: first in `harness_dir` (e.g. `extractors/parboil/`, files named
/// after the benchmark: `sgemm.toml`, `stencil.cuda_fermi.toml`), then in the suite tree,
/// from the fast kernel's folder up to `suite_root` (files named `harness….toml`, as the
/// fixtures keep them in `benchmarks/<app>/harness.toml`).
pub fn locate(
    pair: &Pair,
    harness_dir: Option<&Path>,
    suite_root: Option<&Path>,
) -> Option<PathBuf> {
    if let Some(d) = harness_dir {
        for n in candidate_names(pair, &pair.benchmark) {
            let p = d.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    let root = suite_root?;
    let mut dir = Path::new(&pair.fast.path).parent();
    while let Some(d) = dir {
        for n in candidate_names(pair, "harness") {
            let p = root.join(d).join(n);
            if p.is_file() {
                return Some(p);
            }
        }
        if d.as_os_str().is_empty() {
            break;
        }
        dir = d.parent();
    }
    None
}

/// Whether a C parameter type can take an arg of element type `elem`.
/// `source` is the unit's isolated source, where `#define REAL float` and
/// `typedef unsigned long hist_t;` give names their meaning.
pub(super) fn type_matches(
    c_type: &str,
    elem: ElemType,
    declared: Option<&str>,
    source: &str,
) -> Result<(), String> {
    let base = c_base_type(c_type);
    let resolved = resolve_alias(&base, source);
    if let Some(d) = declared {
        let d = c_base_type(d);
        return if d == base || d == resolved || resolve_alias(&d, source) == resolved {
            Ok(())
        } else {
            Err(format!(
                "declared c_type {d:?} but the parameter is {base:?}"
            ))
        };
    }
    match ElemType::from_c_type(&resolved) {
        Some(e) if e == elem => Ok(()),
        // `int` params commonly take unsigned sizes and vice versa: same width is fine for scalars
        // only when the harness says so explicitly, so report it.
        Some(e) => Err(format!(
            "the parameter holds {} but the arg is {}",
            e.name(),
            elem.name()
        )),
        None if base == "void" => Ok(()),
        None => Err(format!(
            "unknown C type {base:?}: set `c_type = {base:?}` on the arg to accept it"
        )),
    }
}

/// Follow `#define NAME type` and `typedef type NAME;` in a unit's source (a few levels),
/// as NVRTC compiles it: a typedef in an inactive `#if` branch (llm.c's `floatX`, a bf16 or
/// half under `ENABLE_BF16`/`ENABLE_FP16`, else float) is not the type.
pub(crate) fn resolve_alias(base: &str, source: &str) -> String {
    let unit = crate::cuda::syntax::unit(source);
    let source = unit.text.as_str();
    let mut cur = base.to_string();
    for _ in 0..4 {
        if cur.is_empty() || !is_ident(&cur.replace(' ', "_")) {
            break;
        }
        let next = source.lines().find_map(|l| {
            let l = l.split("//").next().unwrap_or("").trim();
            if let Some(d) = crate::cuda::ppcond::defines(l).next() {
                return (d.name == cur && d.params.is_none() && !d.body.is_empty())
                    .then(|| c_base_type(d.body));
            }
            let t = l.strip_prefix("typedef ")?.strip_suffix(';')?.trim();
            let (ty, name) = t.rsplit_once(char::is_whitespace)?;
            (name == cur).then(|| c_base_type(ty))
        });
        match next {
            Some(n) if n != cur => cur = n,
            _ => break,
        }
    }
    cur
}

/// A pair's harness, found and parsed.
#[derive(Debug, Clone)]
pub struct Found {
    pub path: PathBuf,
    pub harness: Harness,
}

type Verdict = (Status, String);

/// Where a pair's harness may be, in order: `pair.harness` (relative to the input file's
/// folder, then to the working directory), then in each harness dir
/// `<benchmark>.toml`, `<benchmark>/harness.toml`, `benchmarks/<benchmark>/harness.toml`.
pub fn candidates(pair: &Pair, base: &Path, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(h) = &pair.harness {
        let p = PathBuf::from(h);
        if p.is_absolute() {
            v.push(p);
        } else {
            v.push(base.join(&p));
            v.push(p);
        }
    }
    let b = &pair.benchmark;
    for d in dirs {
        for rel in [
            format!("{b}.toml"),
            format!("{b}/harness.toml"),
            format!("benchmarks/{b}/harness.toml"),
        ] {
            v.push(d.join(rel));
        }
    }
    v
}

pub fn prepare(
    pair: &Pair,
    base: &Path,
    dirs: &[PathBuf],
    suite_root: Option<&Path>,
) -> Result<Found, Verdict> {
    prepare_with(pair, base, dirs, suite_root, |h| h)
}

/// [`prepare`], with the loaded harness adjusted before it is checked against the units
/// (the self-check's identity control gives the slow side the fast side's launches).
pub fn prepare_with(
    pair: &Pair,
    base: &Path,
    dirs: &[PathBuf],
    suite_root: Option<&Path>,
    adjust: impl FnOnce(Harness) -> Harness,
) -> Result<Found, Verdict> {
    if pair.slow.is_pending() {
        return Err((
            Status::MissingSlow,
            format!(
                "pair {} ({}) has no slow kernel yet (run synth)",
                pair.id, pair.kernel
            ),
        ));
    }
    // The pair's own path first; then the harness module's naming, which knows
    // variant- and kernel-specific files (`stencil.cuda_fermi.toml`) and the suite tree;
    // then the plain per-benchmark layouts.
    let own = candidates(pair, base, &[]);
    let located = own
        .into_iter()
        .find(|p| p.is_file())
        .or_else(|| {
            // Without an explicit suite root, a harness dir may itself be a suite
            // (`build` passes each suite's folder), with harnesses beside the kernels.
            dirs.iter()
                .find_map(|d| locate(pair, Some(d), suite_root.or(Some(d))))
                .or_else(|| locate(pair, None, suite_root))
        })
        .or_else(|| {
            candidates(pair, base, dirs)
                .into_iter()
                .find(|p| p.is_file())
        });
    let path = located.ok_or_else(|| {
        (
            Status::NoHarness,
            format!(
                "no harness for {}/{} (pair.harness {:?}; looked in {} harness dir(s){})",
                pair.benchmark,
                pair.kernel,
                pair.harness,
                dirs.len(),
                if suite_root.is_some() {
                    " and the suite tree"
                } else {
                    ""
                }
            ),
        )
    })?;
    let harness = load(&path)
        .and_then(|h| h.for_record(pair))
        .map(adjust)
        .map_err(|e| (Status::HarnessError, e.to_string()))?;
    if let Some(why) = &harness.needs_host_loop {
        return Err((Status::NeedsHostLoop, format!("{}: {why}", path.display())));
    }
    // Units from extract know their parameters; check the harness binds them right.
    if pair.slow.unit().is_some_and(|u| !u.params.is_empty()) && !pair.fast.params.is_empty() {
        harness
            .check_against(pair.slow.unit(), &pair.fast)
            .map_err(|e| (Status::HarnessError, e.to_string()))?;
    }
    Ok(Found { path, harness })
}
