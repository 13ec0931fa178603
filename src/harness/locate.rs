//! Finding a pair's harness file: candidate names and the walk through harness folders
//! and the suite tree.

use super::*;

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

/// Follow `#define NAME type` and `typedef type NAME;` in a unit's source (a few levels).
pub(super) fn resolve_alias(base: &str, source: &str) -> String {
    let mut cur = base.to_string();
    for _ in 0..4 {
        if cur.is_empty() || !is_ident(&cur.replace(' ', "_")) {
            break;
        }
        let next = source.lines().find_map(|l| {
            let l = l.split("//").next().unwrap_or("").trim();
            if let Some(rest) = l.strip_prefix("#define") {
                let mut it = rest.trim().splitn(2, char::is_whitespace);
                if it.next() == Some(cur.as_str()) {
                    let body = it.next().unwrap_or("").trim();
                    return (!body.is_empty()).then(|| c_base_type(body));
                }
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
