//! Verdicts in the open, settled in the parent once a worker has timed a pair: the
//! status stands on the main size set (the harness's `primary = true`, else the one
//! with the most bytes); the reason lists every size set's speedup; a pair verified at
//! the main size but slower (CI high < 1) at another is flagged `size_dependent`, naming
//! those sizes; and a verified pair whose slow kernel takes far longer than its own
//! memory traffic needs at the device's measured bandwidth, while the fast kernel runs
//! near that bound, is flagged `suspect_slow` for a human look (never rejected: naive
//! kernels can honestly be that slow). Flags never change the status.

use crate::evidence::{Roofline, RooflineSet};
use crate::record::{Flag, Speedup, Status, Verification};

/// `suspect_slow` when the slow kernel takes more than this many times the time its
/// buffers' bytes need at the measured copy bandwidth ...
///
/// Measured on the H100 (benches/RESULTS.md, run 19): among verified pairs whose fast
/// kernel is near the bound (`fast_x` ≤ 2), honest naive kernels reach `slow_x` up to 25.9
/// (an uncoalesced copy at 64M elements; median 17.7, the clock64-free twin 17.8). K sits
/// 1.5× above that, so no honest pair measured is flagged, while a spin that multiplies
/// the time by 2 or more over such a kernel is.
pub const SUSPECT_SLOW_K: f64 = 40.0;

/// ... while the fast kernel takes at most this many times it (a memory-bound kernel
/// near the bandwidth: only then is a huge slow multiple unexplained by the work).
pub const FAST_NEAR_BOUND: f64 = 2.0;

/// What the parent knows beyond the worker's verification.
#[derive(Debug, Clone, Default)]
pub struct Context<'a> {
    /// The harness's `primary = true` size set, if any.
    pub primary: Option<&'a str>,
    pub min_speedup: f64,
    pub seeds: u32,
    /// The worker's measured copy bandwidth, GB/s.
    pub bandwidth_gbs: Option<f64>,
    /// The slow kernel is a synthesized plain variant: one faster than the original is
    /// `reversed` rather than `not_faster`.
    pub synthesized: bool,
}

/// What the checks covered, from the evidence: "2 size sets × 3 seeds". A size set whose
/// inputs are all captured bytes is checked with one seed (every seed gives the same
/// inputs), and the text says so.
pub(crate) fn checked(ev: &crate::evidence::Evidence, sets: usize, seeds: u32) -> String {
    let mut per_set: std::collections::BTreeMap<&str, std::collections::BTreeSet<u32>> =
        Default::default();
    for c in &ev.checks {
        per_set
            .entry(c.size_set.as_str())
            .or_default()
            .insert(c.seed);
    }
    let once = per_set.values().filter(|s| s.len() == 1).count();
    match once {
        n if n == 0 || seeds == 1 => format!("{sets} size sets × {seeds} seeds"),
        n if n == sets => format!("{sets} size sets × 1 seed (captured inputs)"),
        n => format!("{sets} size sets × {seeds} seeds ({n} with captured inputs, checked once)"),
    }
}

/// The original's speedup over the plain variant: `s` (slow / fast) inverted, its
/// interval's ends swapped.
pub fn inverted(s: &Speedup) -> Speedup {
    Speedup {
        size_set: s.size_set.clone(),
        median: 1.0 / s.median,
        ci_low: 1.0 / s.ci_high,
        ci_high: 1.0 / s.ci_low,
    }
}

/// Where both kernels wrote NaN (agreement, from inputs that held NaN or Inf already, or
/// an output allowed to be degenerate): said in the reason, with the largest count per
/// output, so an agreement on NaN is never silent.
fn both_nan(v: &Verification) -> Option<String> {
    let mut most: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    for c in &v.evidence.checks {
        let e = most.entry(c.output.as_str()).or_default();
        if c.comparison.both_nan > e.0 {
            *e = (c.comparison.both_nan, c.comparison.len);
        }
    }
    let parts: Vec<String> = most
        .iter()
        .filter(|(_, (n, _))| *n > 0)
        .map(|(o, (n, len))| format!("{o} {n} of {len}"))
        .collect();
    (!parts.is_empty()).then(|| {
        format!(
            "NaN on both sides (counted as agreement) in {}",
            parts.join(", ")
        )
    })
}

/// Settle a timed verification (`verified` or `not_faster` with timings); anything
/// else is left as it is.
pub fn finish(v: &mut Verification, cx: &Context) {
    if !matches!(v.status, Status::Verified | Status::NotFaster) {
        return;
    }
    let sets = v.evidence.timings.clone();
    if sets.is_empty() {
        return;
    }
    let main = cx
        .primary
        .and_then(|p| sets.iter().position(|s| s.size_set == p))
        .unwrap_or_else(|| {
            // The engine's rule: the most bytes, the later set on a tie.
            let mut best = 0;
            for (i, s) in sets.iter().enumerate() {
                if s.bytes >= sets[best].bytes {
                    best = i;
                }
            }
            best
        });
    let m = &sets[main];
    v.speedup = Some(m.speedup());
    let verified = m.ci_low >= cx.min_speedup;
    // The plain variant is faster than the original: CI low of plain over original.
    let back = inverted(&m.speedup());
    let reversed = !verified && cx.synthesized && back.ci_low >= cx.min_speedup;
    v.status = match (verified, reversed) {
        (true, _) => Status::Verified,
        (_, true) => Status::Reversed,
        _ => Status::NotFaster,
    };
    let head = if reversed {
        format!(
            "agrees, and the plain (synthesized) version is faster: {:.2}× the original's speed at {} (95% CI {:.2}–{:.2}); the original over it is {:.2}× (95% CI {:.2}–{:.2})",
            back.median, m.size_set, back.ci_low, back.ci_high, m.speedup, m.ci_low, m.ci_high
        )
    } else if verified {
        format!(
            "agrees on {}; {:.2}× faster at {} (95% CI {:.2}–{:.2})",
            checked(&v.evidence, sets.len(), cx.seeds),
            m.speedup,
            m.size_set,
            m.ci_low,
            m.ci_high
        )
    } else {
        format!(
            "agrees, but speedup at {} is {:.2}× (95% CI {:.2}–{:.2}); needs CI low ≥ {}",
            m.size_set, m.speedup, m.ci_low, m.ci_high, cx.min_speedup
        )
    };
    let per_set: Vec<String> = sets
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let tag = if i == main {
                if cx.primary == Some(s.size_set.as_str()) {
                    " (main, primary)"
                } else {
                    " (main)"
                }
            } else if s.ci_high < 1.0 {
                " (slower)"
            } else {
                ""
            };
            format!(
                "{} {:.2}× [{:.2}–{:.2}]{tag}",
                s.size_set, s.speedup, s.ci_low, s.ci_high
            )
        })
        .collect();
    v.reason = format!("{head}; per size set: {}", per_set.join(", "));
    if let Some(nan) = both_nan(v) {
        v.reason.push_str(&format!("; {nan}"));
    }
    v.flags.retain(|f| {
        !matches!(
            f,
            Flag::SizeDependent { .. } | Flag::SuspectSlow { .. } | Flag::Reversed { .. }
        )
    });
    if reversed {
        v.flags.push(Flag::Reversed { speedup: back });
    }
    let losing: Vec<Speedup> = sets
        .iter()
        .enumerate()
        .filter(|(i, s)| *i != main && s.ci_high < 1.0)
        .map(|(_, s)| s.speedup())
        .collect();
    if verified && !losing.is_empty() {
        let names: Vec<String> = losing
            .iter()
            .map(|s| format!("{} ({:.2}×)", s.size_set, s.median))
            .collect();
        v.reason
            .push_str(&format!("; size_dependent: slower at {}", names.join(", ")));
        v.flags.push(Flag::SizeDependent { losing });
    }
    if let Some(bw) = cx.bandwidth_gbs.filter(|b| *b > 0.0) {
        let rows: Vec<(String, f64, f64)> = sets
            .iter()
            .filter(|s| s.bytes > 0)
            .map(|s| {
                let bound_ms = s.bytes as f64 / (bw * 1e9) * 1e3;
                (
                    s.size_set.clone(),
                    s.slow.median_ms / bound_ms,
                    s.fast.median_ms / bound_ms,
                )
            })
            .collect();
        v.evidence.roofline = Some(Roofline {
            bandwidth_gbs: bw,
            size_sets: rows
                .iter()
                .map(|(n, s, f)| RooflineSet {
                    size_set: n.clone(),
                    slow_x: *s,
                    fast_x: *f,
                })
                .collect(),
        });
        let worst = rows
            .iter()
            .filter(|(_, s, f)| *s > SUSPECT_SLOW_K && *f <= FAST_NEAR_BOUND)
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let (true, Some((n, s, f))) = (verified, worst) {
            v.reason.push_str(&format!(
                "; suspect_slow: at {n} the slow kernel takes {s:.0}× the time its bytes need at {bw:.0} GB/s while the fast one takes {f:.1}×"
            ));
            v.flags.push(Flag::SuspectSlow {
                size_set: n.clone(),
                slow_x: *s,
                fast_x: *f,
                k: SUSPECT_SLOW_K,
            });
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::evidence::{Evidence, TimingEvidence, VariantTiming};

    /// A timed verification as the engine writes it: (name, bytes, slow ms, fast ms, ci low, ci high).
    pub(crate) fn timed(sets: &[(&str, u64, f64, f64, f64, f64)]) -> Verification {
        let vt = |ms: f64| VariantTiming {
            median_ms: ms,
            iqr_ms: 0.0,
            min_ms: ms,
            runs: 20,
            from_checks: 0,
            from_earlier_pairs: 0,
        };
        let timings: Vec<_> = sets
            .iter()
            .map(|&(n, b, s, f, lo, hi)| TimingEvidence {
                size_set: n.into(),
                bytes: b as usize,
                slow: vt(s),
                fast: vt(f),
                speedup: s / f,
                ci_low: lo,
                ci_high: hi,
            })
            .collect();
        Verification {
            status: Status::Verified,
            reason: "engine".into(),
            device: None,
            evidence: Evidence {
                timings,
                ..Evidence::default()
            },
            speedup: None,
            tool_version: "t".into(),
            flags: vec![],
        }
    }

    fn cx(primary: Option<&str>) -> Context<'_> {
        Context {
            primary,
            min_speedup: 1.1,
            seeds: 3,
            bandwidth_gbs: None,
            synthesized: false,
        }
    }

    /// kmeans `kmeansPoint` on the H200: the plain version is 3.7× faster than the
    /// original. A synthesized slow kernel that fast is `reversed`, with both speedups; a
    /// natural one stays `not_faster`, and so does a plain version only marginally faster.
    #[test]
    fn a_faster_plain_variant_is_reversed_with_both_speedups() {
        let synth = Context {
            synthesized: true,
            ..cx(None)
        };
        let mut v = timed(&[("large", 9_000, 0.27, 1.0, 0.26, 0.28)]);
        finish(&mut v, &synth);
        assert_eq!(v.status, Status::Reversed, "{}", v.reason);
        let s = v.speedup.as_ref().unwrap();
        assert!((s.median - 0.27).abs() < 1e-9, "speedup stays slow / fast");
        let [Flag::Reversed { speedup: back }] = v.flags.as_slice() else {
            panic!("{:?}", v.flags)
        };
        assert_eq!(back.size_set, "large");
        assert!((back.median - 1.0 / 0.27).abs() < 1e-9);
        assert!(
            (back.ci_low - 1.0 / 0.28).abs() < 1e-9 && (back.ci_high - 1.0 / 0.26).abs() < 1e-9
        );
        assert!(
            v.reason.contains("the plain (synthesized) version is faster: 3.70× the original's speed at large (95% CI 3.57–3.85); the original over it is 0.27× (95% CI 0.26–0.28)"),
            "{}",
            v.reason
        );
        // A natural slow kernel that fast is a finding about the suite, not a reversed pair.
        let mut v = timed(&[("large", 9_000, 0.27, 1.0, 0.26, 0.28)]);
        finish(&mut v, &cx(None));
        assert_eq!(v.status, Status::NotFaster);
        assert!(v.flags.is_empty());
        // 1/0.93 = 1.075 < 1.1: faster, but not by the margin a speedup needs.
        let mut v = timed(&[("large", 9_000, 0.9, 1.0, 0.85, 0.93)]);
        finish(&mut v, &synth);
        assert_eq!(v.status, Status::NotFaster, "{}", v.reason);
        // Settling again (a rerun of finish) keeps one flag.
        let mut v = timed(&[("large", 9_000, 0.27, 1.0, 0.26, 0.28)]);
        finish(&mut v, &synth);
        v.status = Status::NotFaster;
        finish(&mut v, &synth);
        assert_eq!(v.flags.len(), 1);
    }

    /// Parboil cp on the H100: 3.08× at the 512×512 lattice, 0.19× at 384×200.
    #[test]
    fn slower_at_another_size_is_size_dependent_and_named() {
        let mut v = timed(&[
            ("384x200", 1_000, 0.10, 0.526, 0.18, 0.20),
            ("512x512", 9_000, 3.08, 1.0, 3.0, 3.1),
        ]);
        finish(&mut v, &cx(None));
        assert_eq!(v.status, Status::Verified);
        assert_eq!(v.speedup.as_ref().unwrap().size_set, "512x512");
        let [Flag::SizeDependent { losing }] = v.flags.as_slice() else {
            panic!("{:?}", v.flags)
        };
        assert_eq!(losing.len(), 1);
        assert_eq!(losing[0].size_set, "384x200");
        assert!(v.reason.contains("3.08× faster at 512x512"), "{}", v.reason);
        assert!(
            v.reason.contains("384x200 0.19× [0.18–0.20] (slower)"),
            "{}",
            v.reason
        );
        assert!(
            v.reason.contains("512x512 3.08× [3.00–3.10] (main)"),
            "{}",
            v.reason
        );
        assert!(v
            .reason
            .contains("size_dependent: slower at 384x200 (0.19×)"));
        // Not slower, only less fast: no flag; the reason still lists both.
        let mut v = timed(&[
            ("small", 1_000, 1.05, 1.0, 0.98, 1.1),
            ("large", 9_000, 3.0, 1.0, 2.9, 3.1),
        ]);
        finish(&mut v, &cx(None));
        assert!(v.flags.is_empty(), "{:?}", v.flags);
        assert!(v.reason.contains("small 1.05×"), "{}", v.reason);
    }

    /// Agreement on NaN is reported, never silent.
    #[test]
    fn both_sides_nan_is_named_in_the_reason() {
        use crate::harness::{ElemType, HostBuffer, Tolerance};
        let mut v = timed(&[("large", 9_000, 3.0, 1.0, 2.9, 3.1)]);
        finish(&mut v, &cx(None));
        assert!(!v.reason.contains("NaN"), "{}", v.reason);
        let out = HostBuffer::from_f64s(ElemType::F32, &[1.0, f64::NAN, f64::NAN, 4.0]);
        let c = crate::verify::compare::compare(&out, &out, &Tolerance::default_for(ElemType::F32));
        assert!(c.pass);
        v.evidence.checks.push(crate::evidence::CheckEvidence {
            size_set: "large".into(),
            seed: 0,
            output: "y".into(),
            fast_hash: None,
            slow_from_earlier_pair: false,
            comparison: c,
        });
        v.status = Status::Verified;
        finish(&mut v, &cx(None));
        assert!(
            v.reason
                .ends_with("; NaN on both sides (counted as agreement) in y 2 of 4"),
            "{}",
            v.reason
        );
    }

    #[test]
    fn a_primary_size_set_decides_the_status() {
        let sets = [
            ("main", 1_000, 0.9, 1.0, 0.85, 0.95),
            ("big", 9_000, 3.0, 1.0, 2.9, 3.1),
        ];
        let mut v = timed(&sets);
        finish(&mut v, &cx(Some("main")));
        assert_eq!(v.status, Status::NotFaster, "{}", v.reason);
        assert_eq!(v.speedup.as_ref().unwrap().size_set, "main");
        assert!(v.reason.contains("main 0.90× [0.85–0.95] (main, primary)"));
        assert!(v.flags.is_empty(), "only verified pairs are flagged");
        // Without `primary`, the larger set decides, and the small one loses.
        let mut v = timed(&sets);
        finish(&mut v, &cx(None));
        assert_eq!(v.status, Status::Verified);
        assert_eq!(v.flags.len(), 1);
        // A verification that never timed is left alone.
        let mut v = timed(&[]);
        v.status = Status::Mismatch;
        finish(&mut v, &cx(None));
        assert_eq!(v.reason, "engine");
    }

    #[test]
    fn suspect_slow_needs_a_slow_side_far_off_and_a_fast_side_near_the_bound() {
        // 1 GB at 1000 GB/s is 1 ms.
        let gb = 1_000_000_000;
        let with_bw = Context {
            bandwidth_gbs: Some(1000.0),
            ..cx(None)
        };
        let mut v = timed(&[("s", gb, 60.0, 1.2, 45.0, 55.0)]);
        finish(&mut v, &with_bw);
        assert_eq!(v.status, Status::Verified, "a flag, not a rejection");
        let [Flag::SuspectSlow {
            slow_x, fast_x, k, ..
        }] = v.flags.as_slice()
        else {
            panic!("{:?}", v.flags)
        };
        assert!((slow_x - 60.0).abs() < 1e-9 && (fast_x - 1.2).abs() < 1e-9);
        assert_eq!(*k, SUSPECT_SLOW_K);
        assert!((v.evidence.roofline.as_ref().unwrap().size_sets[0].slow_x - 60.0).abs() < 1e-9);
        // A compute-bound fast kernel (far from the bound): nothing to suspect.
        let mut v = timed(&[("s", gb, 300.0, 10.0, 25.0, 35.0)]);
        finish(&mut v, &with_bw);
        assert!(v.flags.is_empty(), "{:?}", v.flags);
        // An honest naive kernel as slow as the slowest measured on the H100 (25.9×): nothing.
        let mut v = timed(&[("s", gb, 25.9, 1.0, 20.0, 30.0)]);
        finish(&mut v, &with_bw);
        assert!(v.flags.is_empty(), "{:?}", v.flags);
        // An honest naive kernel a few times off the bound: nothing either.
        let mut v = timed(&[("s", gb, 4.0, 1.1, 3.0, 4.0)]);
        finish(&mut v, &with_bw);
        assert!(v.flags.is_empty(), "{:?}", v.flags);
        assert!(v.evidence.roofline.is_some());
    }

    #[test]
    fn harnesses_name_one_primary_size_set_at_most() {
        let h = |sets: &str| {
            let text = format!(
                "[sizes]\nn = 1024\n{sets}\n[[args]]\nname = \"x\"\ntype = \"f32\"\nlen = \"n\"\nrole = \"out\"\n[[launch]]\nkernel = \"k\"\ngrid = 1\nblock = 32\n"
            );
            crate::harness::parse(&text, "t.toml")
        };
        let one = h(
            "[[size_sets]]\nname = \"a\"\nprimary = true\n[[size_sets]]\nname = \"b\"\nn = 4096\n",
        )
        .unwrap();
        let flags: Vec<_> = one
            .size_sets()
            .iter()
            .map(|s| (s.name.as_str(), s.primary))
            .collect();
        assert_eq!(flags, [("a", true), ("b", false)]);
        assert_eq!(one.size_sets()[1].values["n"], 4096);
        let two = h("[[size_sets]]\nname = \"a\"\nprimary = true\n[[size_sets]]\nname = \"b\"\nprimary = true\n")
            .unwrap_err()
            .to_string();
        assert!(two.contains("more than one size set"), "{two}");
    }
}
