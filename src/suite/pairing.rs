//! Pairing naive and optimized kernels of one benchmark by the rules of its suite
//! description (docs/pairing.md, "## Pairing rules").

use super::desc::{PairingMode, Rule, SuiteDesc, RULE_NO_NAIVE};
use super::progression::{Progression, Steps};
use crate::cuda::lex;
use crate::record::{KernelUnit, Pair, PairRule, Slow, Unpaired, UnpairedReason};
use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};

/// The pairs and leftovers of one benchmark.
#[derive(Debug, Default)]
pub struct Paired {
    pub pairs: Vec<Pair>,
    pub unpaired: Vec<Unpaired>,
}

/// Whether two kernels are the same code (after normalization).
pub type SameCode<'a> = &'a (dyn Fn(&KernelUnit, &KernelUnit) -> bool + Sync);

/// Pair the units of one benchmark (any order; the result is sorted by path and line):
/// variant folders or pending slots by the suite's mode, then progressions inside each
/// file where the description has `[pairing.progression]`.
pub fn pair_benchmark(desc: &SuiteDesc, units: &[&KernelUnit], same: SameCode) -> Paired {
    let mut out = pair_by_mode(desc, units, same);
    if let Some(prog) = &desc.progression {
        let found = prog.pair(units, same);
        // A kernel in a progression has natural partners: it no longer awaits synthesis.
        out.pairs
            .retain(|p| !p.slow.is_pending() || !found.members.contains(p.fast.id.as_str()));
        out.pairs.extend(found.pairs);
        out.unpaired.extend(found.unpaired);
        let key = |p: &Pair| {
            (
                p.fast.path.clone(),
                p.fast.line,
                p.fast.kernel.clone(),
                p.slow.unit().map(|s| (s.path.clone(), s.line)),
            )
        };
        out.pairs.sort_by_key(key);
        out.unpaired
            .sort_by(|a, b| (&a.path, &a.kernel).cmp(&(&b.path, &b.kernel)));
    }
    out
}

fn pair_by_mode(desc: &SuiteDesc, units: &[&KernelUnit], same: SameCode) -> Paired {
    let mut out = Paired::default();
    let mut by_variant: BTreeMap<&str, Vec<&KernelUnit>> = BTreeMap::new();
    for u in units {
        by_variant.entry(u.variant.as_str()).or_default().push(u);
    }
    for list in by_variant.values_mut() {
        list.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    }
    let present: Vec<String> = by_variant.keys().map(|s| s.to_string()).collect();
    let has_naive = present.iter().any(|v| desc.is_naive(v));
    if desc.mode == PairingMode::Pending || !has_naive {
        // No naive code for this benchmark: every kernel awaits a synthesized slow variant.
        for u in by_variant.values().flatten() {
            out.pairs.push(make_pair(None, u, RULE_NO_NAIVE, false));
        }
        return out;
    }
    // Which optimized variants each naive variant served, and which naive kernels paired.
    let mut served: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    let mut used_slow: BTreeSet<&str> = BTreeSet::new();
    for (opt, fast) in by_variant.iter().filter(|(v, _)| !desc.is_naive(v)) {
        let Some(naive) = desc.naive_for(opt, &present) else {
            for f in fast {
                out.unpaired.push(unpaired(
                    f,
                    UnpairedReason::NoNaive {
                        optimized: opt.to_string(),
                        naive_here: present
                            .iter()
                            .filter(|v| desc.is_naive(v))
                            .map(|v| v.to_string())
                            .collect(),
                    },
                ));
            }
            continue;
        };
        served.entry(naive.as_str()).or_default().push(opt);
        let slow = &by_variant[naive.as_str()];
        let matches = match_kernels(slow, fast, &desc.rules);
        let mut fast_done = vec![false; fast.len()];
        for (si, fi, rule) in matches {
            fast_done[fi] = true;
            used_slow.insert(&slow[si].id);
            let identical = same(slow[si], fast[fi]);
            out.pairs
                .push(make_pair(Some(slow[si]), fast[fi], rule.into(), identical));
        }
        for (f, _) in fast.iter().zip(&fast_done).filter(|(_, d)| !**d) {
            out.unpaired.push(unpaired(
                f,
                UnpairedReason::NoMatch {
                    variants: vec![naive.to_string()],
                },
            ));
        }
    }
    for (naive, slow) in by_variant.iter().filter(|(v, _)| desc.is_naive(v)) {
        for s in slow.iter().filter(|s| !used_slow.contains(s.id.as_str())) {
            let reason = match served.get(naive) {
                Some(opts) => UnpairedReason::NoMatch {
                    variants: opts.iter().map(|o| o.to_string()).collect(),
                },
                None => UnpairedReason::NoOptimizedVariant {
                    naive: naive.to_string(),
                },
            };
            out.unpaired.push(unpaired(s, reason));
        }
    }
    out.pairs.sort_by(|a, b| {
        (&a.fast.path, a.fast.line, &a.fast.kernel).cmp(&(
            &b.fast.path,
            b.fast.line,
            &b.fast.kernel,
        ))
    });
    out.unpaired
        .sort_by(|a, b| (&a.path, &a.kernel).cmp(&(&b.path, &b.kernel)));
    out
}

fn make_pair(
    slow: Option<&KernelUnit>,
    fast: &KernelUnit,
    rule: PairRule,
    identical: bool,
) -> Pair {
    let slow = slow.cloned().map_or(Slow::PENDING, Slow::natural);
    Pair {
        identical,
        ..Pair::new(slow, fast.clone(), rule)
    }
}

fn unpaired(u: &KernelUnit, reason: UnpairedReason) -> Unpaired {
    Unpaired {
        suite: u.suite.clone(),
        benchmark: u.benchmark.clone(),
        variant: u.variant.clone(),
        path: u.path.clone(),
        kernel: u.kernel.clone(),
        unit_id: u.id.clone(),
        reason,
    }
}

/// A host launcher version of `path` that found no partner; `unit` is one of the file's
/// kernels (for the suite, benchmark and variant it shares with the version).
fn unpaired_version(
    unit: &KernelUnit,
    path: &str,
    version: &str,
    reason: UnpairedReason,
) -> Unpaired {
    Unpaired {
        suite: unit.suite.clone(),
        benchmark: unit.benchmark.clone(),
        variant: unit.variant.clone(),
        path: path.to_string(),
        kernel: version.to_string(),
        unit_id: crate::record::content_id(&["version", path, version]),
        reason,
    }
}

/// The file's path inside its variant folder (`sub/kernel.cu`): files in the same
/// role have the same one in both variants.
fn role_path(u: &KernelUnit) -> &str {
    if u.variant.is_empty() {
        return &u.path;
    }
    let needle = format!("/{}/", u.variant);
    match u.path.rfind(&needle) {
        Some(i) => &u.path[i + needle.len()..],
        None => u
            .path
            .strip_prefix(&format!("{}/", u.variant))
            .unwrap_or(&u.path),
    }
}

/// Parameter types without names or spacing, for comparing signatures.
fn signature(u: &KernelUnit) -> Vec<String> {
    u.params
        .iter()
        .map(|p| p.ty.split_whitespace().collect::<Vec<_>>().join(""))
        .collect()
}

/// Match slow to fast kernels by the rules in order; each kernel is used at most once.
/// Returns (slow index, fast index, rule).
pub fn match_kernels(
    slow: &[&KernelUnit],
    fast: &[&KernelUnit],
    rules: &[Rule],
) -> Vec<(usize, usize, Rule)> {
    let mut slow_free = vec![true; slow.len()];
    let mut fast_free = vec![true; fast.len()];
    let mut out = Vec::new();
    for &rule in rules {
        match rule {
            Rule::NameAndParams | Rule::Name => {
                for fi in 0..fast.len() {
                    if !fast_free[fi] {
                        continue;
                    }
                    let f = fast[fi];
                    let ok = |s: &KernelUnit| {
                        s.kernel == f.kernel && (rule == Rule::Name || signature(s) == signature(f))
                    };
                    let candidates: Vec<usize> = (0..slow.len())
                        .filter(|&si| slow_free[si] && ok(slow[si]))
                        .collect();
                    // Same-named kernels in several files: prefer the file in the same role.
                    let pick = candidates
                        .iter()
                        .copied()
                        .find(|&si| role_path(slow[si]) == role_path(f))
                        .or_else(|| candidates.first().copied());
                    if let Some(si) = pick {
                        slow_free[si] = false;
                        fast_free[fi] = false;
                        out.push((si, fi, rule));
                    }
                }
            }
            Rule::RenamedSoleKernel => {
                let left = |units: &[&KernelUnit], free: &[bool]| {
                    let mut m: BTreeMap<String, Vec<usize>> = BTreeMap::new();
                    for (i, u) in units.iter().enumerate().filter(|(i, _)| free[*i]) {
                        m.entry(role_path(u).to_string()).or_default().push(i);
                    }
                    m
                };
                let slow_left = left(slow, &slow_free);
                let fast_left = left(fast, &fast_free);
                // Files correspond by role path; failing that, when exactly one file on
                // each side still has unpaired kernels, those two correspond.
                let mut corr: Vec<(&String, &String)> = fast_left
                    .keys()
                    .filter(|k| slow_left.contains_key(*k))
                    .map(|k| (k, k))
                    .collect();
                let s_rest: Vec<&String> = slow_left
                    .keys()
                    .filter(|k| !fast_left.contains_key(*k))
                    .collect();
                let f_rest: Vec<&String> = fast_left
                    .keys()
                    .filter(|k| !slow_left.contains_key(*k))
                    .collect();
                if s_rest.len() == 1 && f_rest.len() == 1 {
                    corr.push((s_rest[0], f_rest[0]));
                }
                for (sk, fk) in corr {
                    let (s, f) = (&slow_left[sk], &fast_left[fk]);
                    if s.len() == 1 && f.len() == 1 {
                        slow_free[s[0]] = false;
                        fast_free[f[0]] = false;
                        out.push((s[0], f[0], rule));
                    }
                }
            }
        }
    }
    out.sort_by_key(|&(_, fi, _)| fi);
    out
}

// ---------------------------------------------------------------------------------------
// Progressions: one file holding a naive kernel and its optimized successors.

/// Rule of a pair of consecutive series members.
pub const RULE_STEP: PairRule = PairRule::ProgressionStep;
/// Rule of a pair of the series' first member and a later, non-adjacent one.
pub const RULE_FROM_FIRST: PairRule = PairRule::ProgressionFromFirst;
/// Rule of a naive-named kernel and an optimized-named one with the same stem.
pub const RULE_NAMING: PairRule = PairRule::NamingPair;

/// What progression pairing found in one benchmark.
#[derive(Debug, Default)]
pub struct Found {
    pub pairs: Vec<Pair>,
    pub unpaired: Vec<Unpaired>,
    /// Ids of every unit that is a side of some progression pair.
    pub members: BTreeSet<String>,
}

// The rules are read and checked in `progression`; applying them is pairing.
impl Progression {
    /// Progression pairs among the units of one benchmark, file by file.
    pub fn pair(&self, units: &[&KernelUnit], same: SameCode) -> Found {
        let mut by_file: BTreeMap<(&str, &str), Vec<&KernelUnit>> = BTreeMap::new();
        for u in units {
            by_file.entry((&u.variant, &u.path)).or_default().push(u);
        }
        let mut found = Found::default();
        let mut outputs: BTreeMap<String, Option<Outputs>> = BTreeMap::new();
        let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
        let mut push = |found: &mut Found, s: &KernelUnit, f: &KernelUnit, rule: PairRule| {
            if s.id == f.id || !seen.insert((s.id.clone(), f.id.clone())) {
                return;
            }
            found.members.insert(s.id.clone());
            found.members.insert(f.id.clone());
            found.pairs.push(make_pair(Some(s), f, rule, same(s, f)));
        };
        for list in by_file.values_mut() {
            list.sort_by_key(|u| u.line);
            // Numbered series: same stem, rest and parameter types.
            let mut series: BTreeMap<(String, String), Vec<(u64, &KernelUnit)>> = BTreeMap::new();
            for u in list.iter() {
                if let Some((stem, rest, n)) = self.series_key(&u.kernel) {
                    series.entry((stem, rest)).or_default().push((n, u));
                }
            }
            for ((stem, rest), mut members) in series {
                if members.len() < 2 {
                    continue;
                }
                members.sort_by_key(|(n, u)| (*n, u.line));
                let mut groups: Vec<Vec<&KernelUnit>> = Vec::new();
                for (_, u) in &members {
                    match groups.iter_mut().find(|g| compatible(g[0], u)) {
                        Some(g) => g.push(u),
                        None => groups.push(vec![u]),
                    }
                }
                let main = groups.iter().map(Vec::len).max().unwrap_or(0);
                for g in &groups {
                    if g.len() < 2 {
                        if main >= 2 {
                            found.unpaired.push(unpaired(
                                g[0],
                                UnpairedReason::SeriesParamsDiffer {
                                    series: format!("{stem}N{rest}"),
                                    params: g[0]
                                        .params
                                        .iter()
                                        .map(|p| p.ty.as_str())
                                        .collect::<Vec<_>>()
                                        .join(", "),
                                },
                            ));
                        }
                        continue;
                    }
                    for i in 1..g.len() {
                        let mut candidates = Vec::new();
                        if self.steps != Steps::First || i == 1 {
                            candidates.push((g[i - 1], RULE_STEP));
                        }
                        if self.steps != Steps::Predecessor && i >= 2 {
                            candidates.push((g[0], RULE_FROM_FIRST));
                        }
                        for (s, rule) in candidates {
                            // Evidence before any GPU time: both bodies write the same
                            // outputs, or the numbers name steps of one algorithm.
                            match not_a_progression(s, g[i], &mut outputs) {
                                None => push(&mut found, s, g[i], rule),
                                Some(why) => found.unpaired.push(unpaired(
                                    g[i],
                                    UnpairedReason::NotAProgression {
                                        slow: s.kernel.clone(),
                                        why,
                                    },
                                )),
                            }
                        }
                    }
                }
            }
            // Naming pairs: naive-named vs optimized-named kernels with the same stem.
            if self.slow_words.is_empty() || self.fast_words.is_empty() {
                continue;
            }
            let slow: Vec<(String, &KernelUnit)> = list
                .iter()
                .filter_map(|u| Some((Self::named_stem(&self.slow_words, &u.kernel)?, *u)))
                .collect();
            let fast: Vec<(String, &KernelUnit)> = list
                .iter()
                .filter_map(|u| Some((Self::named_stem(&self.fast_words, &u.kernel)?, *u)))
                .collect();
            for (ss, s) in &slow {
                for (fs, f) in &fast {
                    if ss != fs {
                        continue;
                    }
                    if compatible(s, f) {
                        push(&mut found, s, f, RULE_NAMING);
                    } else {
                        found.unpaired.push(unpaired(
                            f,
                            UnpairedReason::NamingParamsDiffer {
                                stem: ss.clone(),
                                naive: s.kernel.clone(),
                            },
                        ));
                    }
                }
            }
        }
        found
    }
}

/// Rule of one kernel in sibling files or folders, a naive-named and an optimized-named one.
pub const RULE_SIBLING: PairRule = PairRule::SiblingVariant;

/// Sibling variants across the whole suite (`[pairing.progression] siblings = true`):
/// tutorials keep a naive kernel and its optimized successors in sibling folders or files
/// (`matmul/baseline/mm.cu`, `matmul/tiled/mm.cu`; `reduce.cu`, `reduce_opt.cu`). Two units
/// pair when they define the same kernel name with compatible parameters, their paths
/// differ in exactly one folder name or file stem (same depth, same extension), that name
/// marks the slow side (a `slow_words` word; or it is plain and the other is it plus a
/// `fast_words` word) and the other the fast side with the same stem, and both bodies
/// write the same outputs (else `not_a_progression`). Several optimized siblings of one
/// naive one each pair with it.
pub fn pair_siblings(prog: &Progression, units: &[KernelUnit], same: SameCode) -> Found {
    let mut found = Found::default();
    if !prog.siblings {
        return found;
    }
    let mut by_kernel: BTreeMap<&str, Vec<&KernelUnit>> = BTreeMap::new();
    for u in units {
        by_kernel.entry(u.kernel.as_str()).or_default().push(u);
    }
    let mut outputs: BTreeMap<String, Option<Outputs>> = BTreeMap::new();
    for list in by_kernel.values() {
        if list.len() < 2 {
            continue;
        }
        for s in list {
            for f in list {
                if s.path == f.path || s.variant != f.variant {
                    continue;
                }
                if !sibling_direction(prog, &s.path, &f.path) || !compatible(s, f) {
                    continue;
                }
                match not_a_progression(s, f, &mut outputs) {
                    None => {
                        found.members.insert(s.id.clone());
                        found.members.insert(f.id.clone());
                        found
                            .pairs
                            .push(make_pair(Some(s), f, RULE_SIBLING, same(s, f)));
                    }
                    Some(why) => found.unpaired.push(unpaired(
                        f,
                        UnpairedReason::NotAProgression {
                            slow: format!("{}:{}", s.path, s.kernel),
                            why,
                        },
                    )),
                }
            }
        }
    }
    found
}

/// Whether `slow` → `fast` are sibling variants by their paths: the same depth and
/// extension, one differing folder name or file stem, naive-named on the slow side and
/// optimized-named on the fast side with the same stem (or plain on the slow side and
/// the fast side's stem).
fn sibling_direction(prog: &Progression, slow: &str, fast: &str) -> bool {
    let parts = |p: &str| -> Option<(Vec<String>, String)> {
        let path = std::path::Path::new(p);
        let ext = path.extension()?.to_str()?.to_string();
        let mut c: Vec<String> = path
            .parent()
            .into_iter()
            .flat_map(|d| d.iter())
            .map(|x| x.to_string_lossy().into_owned())
            .collect();
        c.push(path.file_stem()?.to_string_lossy().into_owned());
        Some((c, ext))
    };
    let (Some((a, ea)), Some((b, eb))) = (parts(slow), parts(fast)) else {
        return false;
    };
    if a.len() != b.len() || ea != eb {
        return false;
    }
    let diff: Vec<usize> = (0..a.len()).filter(|&i| a[i] != b[i]).collect();
    let [i] = diff[..] else {
        return false;
    };
    let Some(fast_stem) = super::progression::component_stem(&prog.fast_words, &b[i]) else {
        return false;
    };
    // The fast side must not also read as naive (`naive_tiled_fix` vs `naive`).
    if super::progression::component_stem(&prog.slow_words, &b[i]).is_some() {
        return false;
    }
    match super::progression::component_stem(&prog.slow_words, &a[i]) {
        Some(slow_stem) => slow_stem == fast_stem,
        None => {
            super::progression::name_words(&a[i]).join("_") == fast_stem
                && super::progression::component_stem(&prog.fast_words, &a[i]).is_none()
        }
    }
}

/// What a kernel writes, by parameter position, as read from its body.
#[derive(Debug, Clone)]
struct Outputs {
    /// Stored to or updated atomically.
    written: BTreeSet<usize>,
    /// Passed to a function the unit does not define, which may write through it.
    maybe: BTreeSet<usize>,
}

fn outputs_of(u: &KernelUnit) -> Option<Outputs> {
    let names: Vec<String> = u.params.iter().map(|p| p.name.clone()).collect();
    let facts = crate::harness::infer_kernel::body_facts(&u.source, &u.kernel, &names)?;
    let pos = |n: &String| names.iter().position(|x| x == n);
    Some(Outputs {
        written: facts.writes.keys().filter_map(pos).collect(),
        maybe: facts.opaque.keys().filter_map(pos).collect(),
    })
}

/// Why `slow` → `fast` (parameter lists compatible) is no progression: the two bodies
/// write different outputs (a parameter one writes that the other neither writes nor
/// hands to a function it cannot see). None when the outputs agree or a body cannot be
/// read (no evidence against the candidate). `memo` keeps each unit's outputs by id.
fn not_a_progression(
    slow: &KernelUnit,
    fast: &KernelUnit,
    memo: &mut BTreeMap<String, Option<Outputs>>,
) -> Option<String> {
    let mut get = |u: &KernelUnit| {
        memo.entry(u.id.clone())
            .or_insert_with(|| outputs_of(u))
            .clone()
    };
    let (a, b) = (get(slow)?, get(fast)?);
    let only = |x: &Outputs, y: &Outputs| {
        x.written
            .iter()
            .any(|i| !y.written.contains(i) && !y.maybe.contains(i))
    };
    if !only(&a, &b) && !only(&b, &a) {
        return None;
    }
    let names = |u: &KernelUnit, o: &Outputs| {
        let v: Vec<&str> = o
            .written
            .iter()
            .filter_map(|&i| u.params.get(i).map(|p| p.name.as_str()))
            .collect();
        if v.is_empty() {
            "no parameter".to_string()
        } else {
            format!("({})", v.join(", "))
        }
    };
    Some(format!(
        "`{}` writes {} and `{}` writes {}: different outputs, so the numbers name different computations, not versions of one",
        slow.kernel,
        names(slow, &a),
        fast.kernel,
        names(fast, &b)
    ))
}

/// Same parameter types in order (names, spacing, `const`, `__restrict__` aside; pointer
/// depth counts).
fn compatible(a: &KernelUnit, b: &KernelUnit) -> bool {
    let norm = |u: &KernelUnit| -> Vec<(String, usize)> {
        u.params
            .iter()
            .map(|p| {
                (
                    crate::harness::c_base_type(&p.ty),
                    p.ty.matches(['*', '[']).count(),
                )
            })
            .collect()
    };
    norm(a) == norm(b)
}

// ---------------------------------------------------------------------------------------
// Versions: a numbered series of host launchers (llm.c's `layernorm_forward1..6`), each
// launching a fixed sequence of kernels. A version launching several kernels becomes a
// pair side holding all of them; single-kernel versions are the kernel pairs above.

/// Rule of consecutive usable versions of a launcher series.
pub const RULE_VERSION_STEP: PairRule = PairRule::VersionStep;
/// Rule of the series' first usable version and a later, non-adjacent one.
pub const RULE_VERSION_FROM_FIRST: PairRule = PairRule::VersionFromFirst;

/// A host function's name, parameter text, first line and body.
#[derive(Debug, Clone)]
struct HostFn<'a> {
    name: String,
    params: String,
    line: u32,
    body: &'a str,
}

/// `void name(params) { body }` host functions (not `__global__`/`__device__`) of a file.
fn host_functions(text: &str) -> Vec<HostFn<'_>> {
    static RE: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"(?m)^[ \t]*(?:static[ \t]+|inline[ \t]+)*void[ \t]+([A-Za-z_]\w*)[ \t]*\(")
            .expect("valid regex")
    });
    let mut out = Vec::new();
    for c in RE.captures_iter(text) {
        let m = c.get(0).expect("match");
        let open = m.end() - 1;
        let Some(close) = lex::matching(text, open, b'(', b')') else {
            continue;
        };
        let after = text[close + 1..].trim_start();
        if !after.starts_with('{') {
            continue;
        }
        let bopen = text.len() - after.len();
        let Some(bclose) = lex::matching(text, bopen, b'{', b'}') else {
            continue;
        };
        out.push(HostFn {
            name: c[1].to_string(),
            params: text[open + 1..close]
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" "),
            line: text[..m.start()].matches('\n').count() as u32 + 1,
            body: &text[bopen..=bclose],
        });
    }
    out
}

/// What a version body does: the kernels it launches in order, or why it is no pair side.
fn version_launches(body: &str) -> Result<Vec<(String, usize)>, String> {
    static LIB: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"\b((cublasLt|cublas|cudnn|cufft|curand|cusparse|cutlass)\w*)\s*[(:<]")
            .expect("valid regex")
    });
    static LAUNCH: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"\b([A-Za-z_]\w*)\s*(?:<(?:[^;<>]|<[^;<>]*>)*>)?\s*<<<").expect("valid regex")
    });
    static LOOP: std::sync::LazyLock<Regex> = std::sync::LazyLock::new(|| {
        Regex::new(r"\b(for|while|if|switch)\s*\(|\belse\b").expect("valid regex")
    });
    // The library call itself, not an error-check macro around it (`cublasCheck(cublasSgemm(…))`).
    let lib_call = LIB
        .captures_iter(body)
        .find(|c| !c[1].to_ascii_lowercase().ends_with("check"))
        .or_else(|| LIB.captures(body));
    if let Some(c) = lib_call {
        let lib = match &c[2] {
            "cublasLt" => "cuBLASLt",
            "cublas" => "cuBLAS",
            "cudnn" => "cuDNN",
            "cufft" => "cuFFT",
            "curand" => "cuRAND",
            "cusparse" => "cuSPARSE",
            _ => "CUTLASS",
        };
        return Err(format!("calls the host library {lib} (`{}`)", &c[1]));
    }
    let launches: Vec<(String, usize)> = LAUNCH
        .captures_iter(body)
        .map(|c| (c[1].to_string(), c.get(0).expect("match").start()))
        .collect();
    if launches.is_empty() {
        return Err("launches no kernel itself".into());
    }
    for l in LOOP.find_iter(body) {
        let word = l.as_str().trim_end_matches('(').trim();
        // The statement governed: after the `(…)` header, or right after `else`.
        let after = if word == "else" {
            l.end()
        } else {
            let Some(close) = lex::matching(body, l.end() - 1, b'(', b')') else {
                continue;
            };
            close + 1
        };
        let rest = &body[after..];
        let start = after + (rest.len() - rest.trim_start().len());
        let end = if body[start..].starts_with('{') {
            lex::matching(body, start, b'{', b'}').unwrap_or(body.len())
        } else {
            start + body[start..].find(';').unwrap_or(body.len() - start)
        };
        if let Some((k, _)) = launches.iter().find(|(_, at)| (start..=end).contains(at)) {
            return Err(match word {
                "for" | "while" => format!(
                    "launches {k} inside a host `{word}` loop: not a fixed sequence of launches"
                ),
                _ => format!(
                    "launches {k} under a host `{word}`: which kernels run depends on the host's data"
                ),
            });
        }
    }
    Ok(launches)
}

/// Join isolated units into one source, each top-level chunk (a function with its
/// `template` line, a type, a `#define`, a declaration) kept once, in first-seen order.
pub fn merge_sources(sources: &[&str]) -> String {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut out = String::new();
    for src in sources {
        for chunk in top_level_chunks(src) {
            let key: String = chunk.split_whitespace().collect::<Vec<_>>().join(" ");
            // Conditional directives are structure, not declarations: each copy stays so
            // every `#if` keeps its `#endif` (a repeated block is left empty, still valid).
            let conditional = ["#if", "#elif", "#else", "#endif"]
                .iter()
                .any(|d| key.starts_with(d));
            if key.is_empty() || (!conditional && !seen.insert(key)) {
                continue;
            }
            out.push_str(chunk.trim_matches('\n'));
            out.push_str("\n\n");
        }
    }
    out
}

fn top_level_chunks(src: &str) -> Vec<&str> {
    let b = src.as_bytes();
    let (mut out, mut start, mut depth, mut i) = (Vec::new(), 0usize, 0i32, 0usize);
    let mut line_start = true;
    while i < b.len() {
        let c = b[i];
        if line_start && depth == 0 && src[i..].trim_start_matches([' ', '\t']).starts_with('#') {
            // A preprocessor line (with its continuations) is a chunk of its own.
            if src[start..i].trim().is_empty() {
                let mut j = i;
                loop {
                    let e = src[j..].find('\n').map_or(b.len(), |e| j + e);
                    if e > 0 && e <= b.len() && b[e - 1] == b'\\' && e < b.len() {
                        j = e + 1;
                        continue;
                    }
                    j = e;
                    break;
                }
                out.push(&src[start..j]);
                start = j;
                i = j;
                continue;
            }
        }
        line_start = c == b'\n';
        match c {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i = src[i..].find('\n').map_or(b.len(), |e| i + e);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                i = src[i + 2..].find("*/").map_or(b.len(), |e| i + 2 + e + 2);
                continue;
            }
            b'"' | b'\'' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != c {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                i = j + 1;
                continue;
            }
            b'{' => depth += 1,
            b'}' => {
                depth -= 1;
                if depth == 0 {
                    let mut j = i + 1;
                    let rest = &src[j..];
                    let t = rest.trim_start_matches([' ', '\t']);
                    if t.starts_with(';') {
                        j += rest.len() - t.len() + 1;
                    } else if !t.starts_with('\n') && !t.is_empty() {
                        // `} name;` (a variable of an inline struct type): up to the `;`.
                        j += rest.find(';').map_or(0, |e| e + 1);
                    }
                    out.push(&src[start..j]);
                    start = j;
                    i = j;
                    continue;
                }
            }
            b';' if depth == 0 => {
                out.push(&src[start..=i]);
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    if !src[start..].trim().is_empty() {
        out.push(&src[start..]);
    }
    out
}

/// Host launcher series of every file: pairs of versions launching several kernels, and
/// the versions that cannot be a side (host library, host loop) with the reason.
pub fn pair_versions<'a>(
    prog: &Progression,
    units: &[KernelUnit],
    files: impl IntoIterator<Item = (&'a str, &'a str)>,
    same: SameCode,
) -> Found {
    let mut by_path: BTreeMap<&str, Vec<&KernelUnit>> = BTreeMap::new();
    for u in units {
        by_path.entry(u.path.as_str()).or_default().push(u);
    }
    let mut found = Found::default();
    for (path, text) in files {
        let Some(kernels) = by_path.get(path) else {
            continue;
        };
        let mut series: BTreeMap<(String, String, String), Vec<(u64, HostFn)>> = BTreeMap::new();
        for f in host_functions(text) {
            if kernels.iter().any(|k| k.kernel == f.name) {
                continue;
            }
            if let Some((stem, rest, n)) = prog.series_key(&f.name) {
                series
                    .entry((stem, rest, f.params.clone()))
                    .or_default()
                    .push((n, f));
            }
        }
        // Members alone with their parameters: reported, as for kernel series.
        let mut sizes: BTreeMap<(String, String), usize> = BTreeMap::new();
        for ((stem, rest, _), m) in &series {
            let e = sizes.entry((stem.clone(), rest.clone())).or_default();
            *e = (*e).max(m.len());
        }
        let first = kernels[0];
        for ((stem, rest, _), mut members) in series {
            if members.len() < 2 {
                if sizes[&(stem.clone(), rest.clone())] >= 2 {
                    let f = &members[0].1;
                    // A library call or a host loop says more than the parameters.
                    let (version, series) = (f.name.clone(), format!("{stem}N{rest}"));
                    let why = match version_launches(f.body) {
                        Err(why) => UnpairedReason::VersionUnusable {
                            version,
                            series,
                            why,
                        },
                        Ok(_) => UnpairedReason::VersionParamsDiffer {
                            version,
                            series,
                            params: f.params.clone(),
                        },
                    };
                    found
                        .unpaired
                        .push(unpaired_version(first, path, &f.name, why));
                }
                continue;
            }
            members.sort_by_key(|(n, f)| (*n, f.line));
            let mut usable: Vec<(HostFn, Vec<&KernelUnit>)> = Vec::new();
            for (_, f) in members {
                let why = version_launches(f.body).and_then(|ls| {
                    ls.iter()
                        .map(|(k, _)| {
                            kernels
                                .iter()
                                .copied()
                                .find(|u| u.kernel == *k)
                                .ok_or_else(|| {
                                    format!("launches {k}, which is not a kernel of this file")
                                })
                        })
                        .collect::<Result<Vec<_>, _>>()
                });
                match why {
                    Ok(ks) => usable.push((f, ks)),
                    Err(reason) => {
                        let why = UnpairedReason::VersionUnusable {
                            version: f.name.clone(),
                            series: format!("{stem}N{rest}"),
                            why: reason,
                        };
                        found
                            .unpaired
                            .push(unpaired_version(first, path, &f.name, why));
                    }
                }
            }
            let units: Vec<KernelUnit> = usable
                .iter()
                .map(|(f, ks)| version_unit(path, f, ks))
                .collect();
            let multi = |i: usize| usable[i].1.len() > 1;
            let mut push = |s: usize, f: usize, rule: PairRule| {
                if multi(s) || multi(f) {
                    // The kernels of a paired version are sides through it.
                    for i in [s, f] {
                        found.members.insert(units[i].id.clone());
                        found
                            .members
                            .extend(usable[i].1.iter().map(|k| k.id.clone()));
                    }
                    let identical = same(&units[s], &units[f]);
                    found
                        .pairs
                        .push(make_pair(Some(&units[s]), &units[f], rule, identical));
                }
            };
            for i in 1..units.len() {
                if prog.steps != Steps::First || i == 1 {
                    push(i - 1, i, RULE_VERSION_STEP);
                }
                if prog.steps != Steps::Predecessor && i >= 2 {
                    push(0, i, RULE_VERSION_FROM_FIRST);
                }
            }
        }
    }
    found
}

/// A version as a unit: every kernel it launches (merged, each helper once), named after
/// its launcher; a `version` diagnostic lists the launch order.
fn version_unit(path: &str, f: &HostFn, kernels: &[&KernelUnit]) -> KernelUnit {
    let mut distinct: Vec<&KernelUnit> = Vec::new();
    for k in kernels {
        if !distinct.iter().any(|d| d.id == k.id) {
            distinct.push(k);
        }
    }
    let source = if distinct.len() == 1 {
        distinct[0].source.clone()
    } else {
        merge_sources(
            &distinct
                .iter()
                .map(|u| u.source.as_str())
                .collect::<Vec<_>>(),
        )
    };
    let first = kernels[0];
    let mut features = first.features;
    let mut pulled = first.pulled.clone();
    for k in &distinct[1..] {
        let g = k.features;
        features.shared_memory |= g.shared_memory;
        features.dynamic_shared_memory |= g.dynamic_shared_memory;
        features.constant_memory |= g.constant_memory;
        features.texture_references |= g.texture_references;
        features.atomics |= g.atomics;
        features.templates |= g.templates;
        features.warp_primitives |= g.warp_primitives;
        features.vector_types |= g.vector_types;
        for (dst, src) in [
            (&mut pulled.helpers, &k.pulled.helpers),
            (&mut pulled.globals, &k.pulled.globals),
            (&mut pulled.macros, &k.pulled.macros),
            (&mut pulled.types, &k.pulled.types),
            (&mut pulled.headers, &k.pulled.headers),
            (&mut pulled.local_files, &k.pulled.local_files),
        ] {
            for x in src {
                if !dst.contains(x) {
                    dst.push(x.clone());
                }
            }
        }
    }
    let names: Vec<&str> = kernels.iter().map(|k| k.kernel.as_str()).collect();
    let params = crate::harness::template::split_params(&f.params);
    KernelUnit {
        id: crate::record::content_id(&[
            "version",
            &first.suite,
            &first.benchmark,
            path,
            &f.name,
            &source,
        ]),
        suite: first.suite.clone(),
        benchmark: first.benchmark.clone(),
        variant: first.variant.clone(),
        path: path.to_string(),
        line: f.line,
        kernel: f.name.clone(),
        params,
        template_params: vec![],
        source,
        symbol: f.name.clone(),
        pulled,
        features,
        launch_sites: vec![],
        provenance: first.provenance.clone(),
        build_flags: first.build_flags.clone(),
        compile: None,
        diagnostics: std::iter::once(
            crate::record::Diagnostic::new(
                crate::record::Level::Info,
                "version",
                format!(
                    "host launcher `{}` ({path}:{}) launches {} in this order",
                    f.name,
                    f.line,
                    names.join(", ")
                ),
            )
            .at(f.line),
        )
        // What isolation changed only for NVRTC in each merged kernel's unit, so export
        // gives back the text as the suite wrote it (`compile_only::source_text`).
        .chain(distinct.iter().flat_map(|u| {
            u.diagnostics
                .iter()
                .filter(|d| d.code == crate::cuda::compile_only::CODE)
                .cloned()
        }))
        .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(variant: &str, file: &str, kernel: &str, types: &[&str], source: &str) -> KernelUnit {
        let path = format!("benchmarks/b/src/{variant}/{file}");
        let names: Vec<String> = (0..types.len()).map(|i| format!("p{i}")).collect();
        let params: Vec<(&str, &str)> = types
            .iter()
            .copied()
            .zip(names.iter().map(String::as_str))
            .collect();
        KernelUnit {
            id: crate::record::content_id(&[variant, &path, kernel, source]),
            suite: "parboil".into(),
            variant: variant.into(),
            path,
            ..KernelUnit::for_test(kernel, &params, source)
        }
    }

    fn same(a: &KernelUnit, b: &KernelUnit) -> bool {
        a.source.split_whitespace().eq(b.source.split_whitespace())
    }

    fn run(units: &[KernelUnit]) -> Paired {
        let desc = SuiteDesc::builtin("parboil").unwrap();
        let refs: Vec<&KernelUnit> = units.iter().collect();
        pair_benchmark(&desc, &refs, &same)
    }

    fn summary(p: &Paired) -> Vec<String> {
        p.pairs
            .iter()
            .map(|p| {
                format!(
                    "{}:{}->{}:{} {}{}",
                    p.slow.unit().map(|s| s.variant.as_str()).unwrap_or("-"),
                    p.slow.unit().map(|s| s.kernel.as_str()).unwrap_or("-"),
                    p.fast.variant,
                    p.fast.kernel,
                    p.rule,
                    if p.identical { " identical" } else { "" }
                )
            })
            .collect()
    }

    #[test]
    fn name_params_then_name_then_renamed() {
        let units = vec![
            unit("cuda_base", "k.cu", "add", &["float *", "int"], "a"),
            unit("cuda_base", "k.cu", "scale", &["float *", "float"], "x  y"),
            unit("cuda_base", "k.cu", "only_base", &["int"], "z"),
            unit("cuda_base", "mm.cu", "mm_naive", &["float *"], "m"),
            unit("cuda", "k.cu", "add", &["float*", "int"], "b"),
            unit("cuda", "k.cu", "scale", &["double *", "float"], "x y"),
            unit("cuda", "mm.cu", "mm_tiled", &["float *"], "t"),
        ];
        let p = run(&units);
        assert_eq!(
            summary(&p),
            [
                "cuda_base:add->cuda:add name_and_params",
                "cuda_base:scale->cuda:scale name identical",
                "cuda_base:mm_naive->cuda:mm_tiled renamed_sole_kernel",
            ]
        );
        assert_eq!(p.unpaired.len(), 1);
        assert_eq!(p.unpaired[0].kernel, "only_base");
        assert_eq!(
            p.unpaired[0].reason,
            UnpairedReason::NoMatch {
                variants: vec!["cuda".into()]
            }
        );
        assert!(p.unpaired[0]
            .reason
            .to_string()
            .starts_with("no kernel in cuda matches"));
        assert!(p
            .pairs
            .iter()
            .all(|p| matches!(p.slow, Slow::Natural { .. })));
    }

    #[test]
    fn renamed_across_differently_named_sole_files() {
        // Parboil's cutcp: cutoff.cu ↔ cutoff6overlap.cu, one kernel each.
        let units = vec![
            unit("cuda_base", "cutoff.cu", "lattice", &["int"], "a"),
            unit(
                "cuda",
                "cutoff6overlap.cu",
                "lattice6overlap",
                &["int"],
                "b",
            ),
        ];
        assert_eq!(
            summary(&run(&units)),
            ["cuda_base:lattice->cuda:lattice6overlap renamed_sole_kernel"]
        );
    }

    #[test]
    fn two_renamed_kernels_in_one_file_stay_unpaired() {
        let units = vec![
            unit("cuda_base", "k.cu", "a1", &[], "a"),
            unit("cuda_base", "k.cu", "b1", &[], "b"),
            unit("cuda", "k.cu", "a2", &[], "c"),
            unit("cuda", "k.cu", "b2", &[], "d"),
        ];
        let p = run(&units);
        assert!(p.pairs.is_empty());
        assert_eq!(p.unpaired.len(), 4);
    }

    #[test]
    fn variant_rules_tex_fermi_dash_base() {
        let units = vec![
            unit("cuda_base", "k.cu", "st", &[], "n"),
            unit("cuda", "k.cu", "st_opt", &[], "o"),
            unit("cuda_fermi", "k.cu", "st_reg", &[], "f"),
            unit("cuda_base_tex", "t.cu", "tx", &[], "n"),
            unit("cuda_tex", "t.cu", "tx", &[], "n"),
        ];
        assert_eq!(
            summary(&run(&units)),
            [
                "cuda_base:st->cuda:st_opt renamed_sole_kernel",
                "cuda_base:st->cuda_fermi:st_reg renamed_sole_kernel",
                "cuda_base_tex:tx->cuda_tex:tx name_and_params identical",
            ]
        );
        let dash = vec![
            unit("cuda-base", "g.cu", "k", &["int"], "a"),
            unit("cuda", "g.cu", "k", &["int"], "b"),
        ];
        assert_eq!(
            summary(&run(&dash)),
            ["cuda-base:k->cuda:k name_and_params"]
        );
    }

    #[test]
    fn same_name_in_two_files_prefers_same_file_role() {
        let units = vec![
            unit("cuda_base", "a.cu", "k", &["int"], "1"),
            unit("cuda_base", "b.cu", "k", &["int"], "2"),
            unit("cuda", "a.cu", "k", &["int"], "3"),
            unit("cuda", "b.cu", "k", &["int"], "4"),
        ];
        let p = run(&units);
        for pair in &p.pairs {
            assert_eq!(role_path(pair.slow.unit().unwrap()), role_path(&pair.fast));
        }
        assert_eq!(p.pairs.len(), 2);
    }

    #[test]
    fn no_naive_variant_gives_pending_pairs() {
        let units = vec![
            unit("cuda", "q.cu", "q1", &[], "a"),
            unit("cuda", "q.cu", "q2", &[], "b"),
        ];
        let p = run(&units);
        assert_eq!(
            summary(&p),
            [
                "-:-->cuda:q1 no_naive_variant",
                "-:-->cuda:q2 no_naive_variant"
            ]
        );
        assert!(p
            .pairs
            .iter()
            .all(|p| p.slow == Slow::PENDING && p.rule == PairRule::NoNaiveVariant));
        // Rodinia: pending mode regardless of variant names.
        let r = SuiteDesc::builtin("rodinia").unwrap();
        let u = unit("cuda_base", "x.cu", "k", &[], "a");
        let p = pair_benchmark(&r, &[&u], &same);
        assert_eq!(p.pairs.len(), 1);
        assert_eq!(p.pairs[0].slow, Slow::PENDING);
        assert!(p.unpaired.is_empty());
    }

    #[test]
    fn naive_variant_without_optimized_is_unpaired_with_reason() {
        let units = vec![unit("cuda_base", "k.cu", "k", &[], "a")];
        let p = run(&units);
        assert!(p.pairs.is_empty());
        assert_eq!(
            p.unpaired[0].reason.to_string(),
            "no optimized variant pairs with `cuda_base`"
        );
        assert!(matches!(
            &p.unpaired[0].reason,
            UnpairedReason::NoOptimizedVariant { naive } if naive == "cuda_base"
        ));
    }

    fn prog_desc(steps: &str) -> SuiteDesc {
        let text = include_str!("../../extractors/generic.toml")
            .replace("steps = \"both\"", &format!("steps = \"{steps}\""));
        SuiteDesc::parse(&text, "t").unwrap()
    }

    fn gunit(file: &str, line: u32, kernel: &str, types: &[&str], source: &str) -> KernelUnit {
        let mut u = unit("", file, kernel, types, source);
        u.path = format!("app/{file}");
        u.line = line;
        u.id = crate::record::content_id(&[&u.path, kernel, source]);
        u
    }

    /// The progression rows of `prog_summary`.
    fn progressions(p: &Paired) -> Vec<String> {
        let mut rows = prog_summary(p);
        rows.retain(|s| s.contains("progression"));
        rows
    }

    fn prog_summary(p: &Paired) -> Vec<String> {
        p.pairs
            .iter()
            .map(|p| {
                format!(
                    "{}->{} {}{}",
                    p.slow.unit().map(|s| s.kernel.as_str()).unwrap_or("-"),
                    p.fast.kernel,
                    p.rule,
                    if p.identical { " identical" } else { "" }
                )
            })
            .collect()
    }

    fn reduce_units() -> Vec<KernelUnit> {
        let t = &["T *", "T *", "unsigned int"];
        vec![
            gunit("r.cu", 10, "reduce0", t, "a"),
            gunit(
                "r.cu",
                20,
                "reduce1",
                &["T*", "T *__restrict__", "unsigned int"],
                "b",
            ),
            gunit("r.cu", 30, "reduce2", t, "c"),
            gunit("r.cu", 40, "reduce3", &["T *", "int"], "d"),
            gunit(
                "r.cu",
                50,
                "reduce4",
                &["const T *", "T *", "unsigned int"],
                "e",
            ),
            gunit("r.cu", 60, "helper", &["int"], "h"),
            // Another file: its own series, never mixed with r.cu's.
            gunit("s.cu", 1, "reduce9", t, "z"),
        ]
    }

    /// Issue 26: a numbered-series candidate needs the same written outputs, read from
    /// both bodies. Phases of one algorithm (`step1` writes `p0`, `step2` writes `p1`)
    /// are refused as `not_a_progression` with the reason; versions of one computation
    /// (naive and tiled scale, both writing `p1`, names of their own) are accepted.
    #[test]
    fn numbered_steps_writing_other_outputs_are_not_a_progression() {
        let t = &["float *", "float *", "int"];
        let units = [
            gunit(
                "p.cu",
                1,
                "step1",
                t,
                "__global__ void step1(float *p0, float *p1, int p2) { int i = threadIdx.x; if (i < p2) p0[i] = p1[i] * 2.0f; }",
            ),
            gunit(
                "p.cu",
                2,
                "step2",
                t,
                "__global__ void step2(float *p0, float *p1, int p2) { int i = threadIdx.x; if (i < p2) p1[i] = p0[i] + 1.0f; }",
            ),
            gunit(
                "q.cu",
                1,
                "scale1",
                t,
                "__global__ void scale1(float *in, float *out, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) out[i] = 3.0f * in[i]; }",
            ),
            gunit(
                "q.cu",
                2,
                "scale2",
                t,
                "__global__ void scale2(float *src, float *dst, int n) { for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) dst[i] = 3.0f * src[i]; }",
            ),
        ];
        let refs: Vec<&KernelUnit> = units.iter().collect();
        let p = pair_benchmark(&prog_desc("both"), &refs, &same);
        assert_eq!(progressions(&p), ["scale1->scale2 progression_step"]);
        let refused: Vec<&Unpaired> = p
            .unpaired
            .iter()
            .filter(|u| u.reason.code() == Some("not_a_progression"))
            .collect();
        assert_eq!(refused.len(), 1, "{:?}", p.unpaired);
        assert_eq!(refused[0].kernel, "step2");
        assert_eq!(
            refused[0].reason.to_string(),
            "not_a_progression: after `step1`, `step1` writes (p0) and `step2` writes (p1): different outputs, so the numbers name different computations, not versions of one"
        );
        // A body that cannot be read is no evidence against a candidate.
        let mut unread = units[1].clone();
        unread.source = "garbled".into();
        unread.id = "unread".into();
        let refs = vec![&units[0], &unread];
        let p = pair_benchmark(&prog_desc("both"), &refs, &same);
        assert_eq!(progressions(&p), ["step1->step2 progression_step"]);
    }

    #[test]
    fn numbered_series_pair_by_steps_with_compatible_parameters() {
        let units = reduce_units();
        let refs: Vec<&KernelUnit> = units.iter().collect();
        let p = pair_benchmark(&prog_desc("both"), &refs, &same);
        assert_eq!(
            prog_summary(&p),
            [
                "reduce0->reduce1 progression_step",
                "reduce0->reduce2 progression_from_first",
                "reduce1->reduce2 progression_step",
                "-->reduce3 no_naive_variant",
                "reduce0->reduce4 progression_from_first",
                "reduce2->reduce4 progression_step",
                "-->helper no_naive_variant",
                "-->reduce9 no_naive_variant",
            ]
        );
        // reduce3 changed its parameters: left out of the series with the reason, and
        // still awaits synthesis.
        assert_eq!(p.unpaired.len(), 1);
        assert_eq!(p.unpaired[0].kernel, "reduce3");
        assert!(
            matches!(
                &p.unpaired[0].reason,
                UnpairedReason::SeriesParamsDiffer { series, params }
                    if series == "reduceN" && params.contains("T *, int")
            ),
            "{}",
            p.unpaired[0].reason
        );
        assert!(p
            .pairs
            .iter()
            .all(|q| q.slow.is_pending() == (q.rule == PairRule::NoNaiveVariant)));
        let pred = pair_benchmark(&prog_desc("predecessor"), &refs, &same);
        assert_eq!(
            progressions(&pred),
            [
                "reduce0->reduce1 progression_step",
                "reduce1->reduce2 progression_step",
                "reduce2->reduce4 progression_step"
            ]
        );
        let first = pair_benchmark(&prog_desc("first"), &refs, &same);
        assert_eq!(
            progressions(&first),
            [
                "reduce0->reduce1 progression_step",
                "reduce0->reduce2 progression_from_first",
                "reduce0->reduce4 progression_from_first"
            ]
        );
    }

    /// Sibling variants: one kernel name in two paths that differ in one folder or file name,
    /// naive-marked (or plain) against optimized-marked with the same stem; same outputs.
    #[test]
    fn sibling_folders_and_files_pair_by_their_names_and_outputs() {
        let desc = prog_desc("both");
        let prog = desc.progression.as_ref().unwrap();
        let t = &["const float *", "float *", "int"];
        let body = |w: &str| {
            format!("__global__ void k(const float* p0, float* p1, int p2) {{ int i = threadIdx.x; if (i < p2) {w}[i] = p0[i] * 2.0f; }}")
        };
        let at = |path: &str, src: &str| {
            let mut u = gunit("x.cu", 1, "k", t, src);
            u.path = path.to_string();
            u.id = crate::record::content_id(&[path, src]);
            u
        };
        let units = vec![
            at("mm/baseline/mm.cu", &body("p1")),
            at("mm/tiled/mm.cu", &body("p1 ")),
            at("mm/rectangular/mm.cu", &body("p1  ")),
            at("red/reduce.cu", &body("p1")),
            at("red/reduce_opt.cu", &body("(p1)")),
            at("conv/1d_naive/c.cu", &body("p1")),
            at("conv/1d_shared/c.cu", &body("p1")),
            at("conv/2d_tiled/c.cu", &body("p1")),
            // Writes its input: different outputs, so no progression.
            at("sc/naive/s.cu", &body("p1")),
            at("sc/coalesced/s.cu", "__global__ void k(const float* p0, float* p1, int p2) { ((float*)p0)[threadIdx.x] = 1.0f; }"),
            // Two folders apart: not siblings.
            at("deep/naive/a/x.cu", &body("p1")),
            at("deep/tiled/b/x.cu", &body("p1")),
        ];
        let f = pair_siblings(prog, &units, &same);
        let mut got: Vec<String> = f
            .pairs
            .iter()
            .map(|p| {
                format!(
                    "{} -> {} {}{}",
                    p.slow.unit().unwrap().path,
                    p.fast.path,
                    p.rule.as_str(),
                    if p.identical { " identical" } else { "" }
                )
            })
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                "conv/1d_naive/c.cu -> conv/1d_shared/c.cu sibling_variant identical",
                "mm/baseline/mm.cu -> mm/tiled/mm.cu sibling_variant",
                "red/reduce.cu -> red/reduce_opt.cu sibling_variant",
            ]
        );
        let refused: Vec<String> = f.unpaired.iter().map(|u| u.reason.to_string()).collect();
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(
            refused[0].starts_with("not_a_progression: after `sc/naive/s.cu:k`"),
            "{refused:?}"
        );
        assert_eq!(f.members.len(), 6);
        // Off unless the description asks.
        let mut off = prog.clone();
        off.siblings = false;
        assert!(pair_siblings(&off, &units, &same).pairs.is_empty());
    }

    #[test]
    fn naming_pairs_share_a_stem_and_identical_texts_are_marked() {
        let t = &["float *", "float *", "int", "int"];
        let units = [
            gunit("t.cu", 1, "transposeNaive", t, "n"),
            gunit("t.cu", 2, "transposeCoalesced", t, "c"),
            gunit("t.cu", 3, "transposeNoBankConflicts", t, "c"),
            gunit("t.cu", 4, "copySharedMem", t, "s"),
            gunit("t.cu", 5, "mm_naive", &["float *"], "m"),
            gunit("t.cu", 6, "mm_tiled", &["double *"], "x"),
            gunit("t.cu", 7, "scale_v1", &["float *"], "v"),
            gunit("t.cu", 8, "scale_v2", &["float *"], "v"),
        ];
        let refs: Vec<&KernelUnit> = units.iter().collect();
        let p = pair_benchmark(&prog_desc("both"), &refs, &same);
        let got = prog_summary(&p);
        for want in [
            "transposeNaive->transposeCoalesced naming_pair",
            "transposeNaive->transposeNoBankConflicts naming_pair",
            "-->copySharedMem no_naive_variant",
            "scale_v1->scale_v2 progression_step identical",
        ] {
            assert!(got.contains(&want.to_string()), "{want} not in {got:#?}");
        }
        // Naming pairs have no order among the optimized kernels: none pairs with another.
        assert!(!got.iter().any(|s| s.starts_with("transposeCoalesced->")));
        // mm: the parameters differ, so no pair; the reason is recorded.
        assert!(!got.iter().any(|s| s.starts_with("mm_naive->")));
        assert!(p.unpaired.iter().any(|u| u.kernel == "mm_tiled"
            && matches!(u.reason, UnpairedReason::NamingParamsDiffer { .. })));
        assert_eq!(
            got.iter()
                .filter(|s| s.contains("no_naive_variant"))
                .count(),
            3,
            "{got:#?}"
        );
    }

    #[test]
    fn bad_progression_rules_name_the_key() {
        let base = include_str!("../../extractors/generic.toml");
        let e = SuiteDesc::parse(&base.replace("(?P<n>", "(?P<num>"), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("numbered[0]") && e.contains("`n`"), "{e}");
        let e = SuiteDesc::parse(&base.replace("steps = \"both\"", "steps = \"all\""), "t")
            .unwrap_err()
            .to_string();
        assert!(e.contains("all"), "{e}");
    }

    #[test]
    fn merged_versions_keep_each_chunk_once() {
        let a = "#include <cooperative_groups.h>\n#define B 4\n// helper\ntemplate <class T>\n__device__ T sq(T x) { return x * x; }\nstruct P { int a; };\n__global__ void k1(float *o) { o[0] = sq(1.f) + B; }\n";
        let b = "#include <cooperative_groups.h>\n#define B 4\n// helper\ntemplate <class T>\n__device__ T sq(T x) { return x * x; }\n__global__ void k2(float *o) { o[1] = sq(2.f); }\n";
        let m = merge_sources(&[a, b]);
        assert_eq!(
            m.matches("#include <cooperative_groups.h>").count(),
            1,
            "{m}"
        );
        assert_eq!(m.matches("#define B 4").count(), 1, "{m}");
        assert_eq!(m.matches("__device__ T sq").count(), 1, "{m}");
        assert_eq!(m.matches("struct P { int a; };").count(), 1, "{m}");
        assert!(m.find("void k1").unwrap() < m.find("void k2").unwrap());
        // Conditional blocks keep their directives; their repeated contents go.
        let c = "#if defined(X)\ntypedef int T;\n#else\ntypedef float T;\n#endif\n__global__ void k3() {}\n";
        let d = "#if defined(X)\ntypedef int T;\n#else\ntypedef float T;\n#endif\n__global__ void k4() {}\n";
        let m2 = merge_sources(&[c, d]);
        assert_eq!(m2.matches("#if defined(X)").count(), 2, "{m2}");
        assert_eq!(m2.matches("#endif").count(), 2, "{m2}");
        assert_eq!(m2.matches("typedef float T;").count(), 1, "{m2}");
        // The template line stays with its function.
        assert!(m.contains("template <class T>\n__device__ T sq"), "{m}");
    }

    #[test]
    fn version_bodies_are_sequences_or_say_why_not() {
        assert_eq!(
            version_launches("{ a<<<1, 2>>>(x); b<float, 4><<<g, b, 0, s>>>(y); }")
                .unwrap()
                .iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>(),
            ["a", "b"]
        );
        let e = version_launches("{ cublasCheck(cublasSgemm(h, 1)); k<<<1,1>>>(); }").unwrap_err();
        assert!(e.contains("cuBLAS (`cublasSgemm`)"), "{e}");
        let e = version_launches("{ for (int i = 0; i < n; i++) { k<<<1,1>>>(i); } }").unwrap_err();
        assert!(e.contains("inside a host `for` loop"), "{e}");
        let e = version_launches("{ if (n > 4) a<<<1,1>>>(); else b<<<1,1>>>(); }").unwrap_err();
        assert!(e.contains("under a host `if`"), "{e}");
        let e = version_launches("{ if (n > 4) { x = 1; } else { b<<<1,1>>>(); } }").unwrap_err();
        assert!(e.contains("launches b under a host `else`"), "{e}");
        // A loop that launches nothing does not matter.
        assert!(version_launches("{ for (int i = 0; i < 3; i++) x += i; k<<<1,1>>>(); }").is_ok());
        assert!(version_launches("{ cudaMemset(p, 0, n); }")
            .unwrap_err()
            .contains("launches no kernel"));
        let fns = host_functions(
            "__global__ void k(int x) {}\nvoid run1(float* o, int n) {\n  k<<<1,1>>>(n);\n}\n",
        );
        assert_eq!(fns.len(), 1);
        assert_eq!(
            (fns[0].name.as_str(), fns[0].params.as_str(), fns[0].line),
            ("run1", "float* o, int n", 2)
        );
    }
}
