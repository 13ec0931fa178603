//! Pairing naive and optimized kernels of one benchmark by the rules of its suite
//! description (docs/pairing.md, "## Pairing rules").

use super::desc::{PairingMode, Rule, SuiteDesc, RULE_NO_NAIVE};
use crate::record::{KernelUnit, Origin, Pair, Unpaired};
use std::collections::{BTreeMap, BTreeSet};

/// The pairs and leftovers of one benchmark.
#[derive(Debug, Default)]
pub struct Paired {
    pub pairs: Vec<Pair>,
    pub unpaired: Vec<Unpaired>,
}

/// Whether two kernels are the same code (after normalization).
pub type SameCode<'a> = &'a (dyn Fn(&KernelUnit, &KernelUnit) -> bool + Sync);

/// Pair the units of one benchmark (any order; the result is sorted by path and line).
pub fn pair_benchmark(desc: &SuiteDesc, units: &[&KernelUnit], same: SameCode) -> Paired {
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
                    format!(
                        "no naive variant pairs with `{opt}` (naive variants here: {})",
                        present
                            .iter()
                            .filter(|v| desc.is_naive(v))
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
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
            out.pairs.push(make_pair(
                Some(slow[si]),
                fast[fi],
                rule.as_str(),
                identical,
            ));
        }
        for (f, _) in fast.iter().zip(&fast_done).filter(|(_, d)| !**d) {
            out.unpaired.push(unpaired(
                f,
                format!("no kernel in {naive} matches by name, parameters or file role"),
            ));
        }
    }
    for (naive, slow) in by_variant.iter().filter(|(v, _)| desc.is_naive(v)) {
        for s in slow.iter().filter(|s| !used_slow.contains(s.id.as_str())) {
            let reason = match served.get(naive) {
                Some(opts) => format!(
                    "no kernel in {} matches by name, parameters or file role",
                    opts.join(", ")
                ),
                None => format!("no optimized variant pairs with `{naive}`"),
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

fn make_pair(slow: Option<&KernelUnit>, fast: &KernelUnit, rule: &str, identical: bool) -> Pair {
    Pair {
        id: Pair::make_id(slow, fast),
        suite: fast.suite.clone(),
        benchmark: fast.benchmark.clone(),
        kernel: fast.kernel.clone(),
        slow: slow.cloned(),
        fast: fast.clone(),
        origin: if slow.is_some() {
            Origin::Natural
        } else {
            Origin::Pending
        },
        rule: rule.to_string(),
        identical,
        techniques: Vec::new(),
        description: None,
        harness: None,
        harness_origin: None,
        verification: None,
        synth: None,
    }
}

fn unpaired(u: &KernelUnit, reason: String) -> Unpaired {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Features, Param, Provenance, Pulled};

    fn unit(variant: &str, file: &str, kernel: &str, types: &[&str], source: &str) -> KernelUnit {
        let path = format!("benchmarks/b/src/{variant}/{file}");
        KernelUnit {
            id: crate::record::content_id(&[variant, &path, kernel, source]),
            suite: "parboil".into(),
            benchmark: "b".into(),
            variant: variant.into(),
            path,
            line: 1,
            kernel: kernel.into(),
            params: types
                .iter()
                .enumerate()
                .map(|(i, t)| Param {
                    name: format!("p{i}"),
                    ty: t.to_string(),
                })
                .collect(),
            template_params: vec![],
            source: source.into(),
            symbol: kernel.into(),
            pulled: Pulled::default(),
            features: Features::default(),
            launch_sites: vec![],
            provenance: Provenance::default(),
            compile: None,
            diagnostics: vec![],
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
                    p.slow.as_ref().map(|s| s.variant.as_str()).unwrap_or("-"),
                    p.slow.as_ref().map(|s| s.kernel.as_str()).unwrap_or("-"),
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
        assert!(
            p.unpaired[0].reason.contains("no kernel in cuda matches"),
            "{}",
            p.unpaired[0].reason
        );
        assert!(p.pairs.iter().all(|p| p.origin == Origin::Natural));
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
            assert_eq!(
                role_path(pair.slow.as_ref().unwrap()),
                role_path(&pair.fast)
            );
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
            .all(|p| p.origin == Origin::Pending && p.slow.is_none()));
        // Rodinia: pending mode regardless of variant names.
        let r = SuiteDesc::builtin("rodinia").unwrap();
        let u = unit("cuda_base", "x.cu", "k", &[], "a");
        let p = pair_benchmark(&r, &[&u], &same);
        assert_eq!(p.pairs.len(), 1);
        assert_eq!(p.pairs[0].origin, Origin::Pending);
        assert!(p.unpaired.is_empty());
    }

    #[test]
    fn naive_variant_without_optimized_is_unpaired_with_reason() {
        let units = vec![unit("cuda_base", "k.cu", "k", &[], "a")];
        let p = run(&units);
        assert!(p.pairs.is_empty());
        assert_eq!(
            p.unpaired[0].reason,
            "no optimized variant pairs with `cuda_base`"
        );
    }
}
