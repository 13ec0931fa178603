//! Output checks and timing statistics the runner applies: agreement (exact for
//! integers; elementwise and relative-L2 for floats), unwritten (poison left) and
//! degenerate outputs, median/IQR and a bootstrap interval for the speedup.

use super::plan::{Elem, Tol, POISON};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;

/// How far `actual` (fast) is from `expected` (slow) for one output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub elements: usize,
    pub mismatches: usize,
    pub max_abs: f64,
    pub rel_l2: f64,
    /// First mismatching element: (index, expected, actual).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_mismatch: Option<(usize, f64, f64)>,
    pub pass: bool,
}

pub fn compare(elem: Elem, expected: &[u8], actual: &[u8], tol: &Tol) -> Comparison {
    use rayon::prelude::*;
    let n = expected.len().min(actual.len()) / elem.size();
    // Partial sums per chunk, in parallel: (mismatches, max_abs, num, den, first).
    type Part = (usize, f64, f64, f64, Option<(usize, f64, f64)>);
    let part = |lo: usize, hi: usize| -> Part {
        let (mut mism, mut max_abs, mut num, mut den) = (0usize, 0f64, 0f64, 0f64);
        let mut first = None;
        for i in lo..hi {
            let (b, a) = (elem.decode(expected, i), elem.decode(actual, i));
            let ok = if elem.is_float() {
                if b.is_nan() || a.is_nan() {
                    b.is_nan() && a.is_nan()
                } else if b.is_infinite() || a.is_infinite() {
                    a == b
                } else {
                    let d = (a - b).abs();
                    max_abs = max_abs.max(d);
                    num += d * d;
                    den += b * b;
                    d <= tol.atol + tol.rtol * b.abs()
                }
            } else {
                let d = (a - b).abs();
                max_abs = max_abs.max(d);
                num += d * d;
                den += b * b;
                a == b
            };
            if !ok {
                mism += 1;
                if first.is_none() {
                    first = Some((i, b, a));
                }
            }
        }
        (mism, max_abs, num, den, first)
    };
    const STEP: usize = 1 << 16;
    let (mism, max_abs, num, den, first) = (0..n.div_ceil(STEP))
        .into_par_iter()
        .map(|c| part(c * STEP, ((c + 1) * STEP).min(n)))
        .reduce(
            || (0, 0.0, 0.0, 0.0, None),
            |x, y| {
                let first = match (x.4, y.4) {
                    (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
                    (a, b) => a.or(b),
                };
                (x.0 + y.0, x.1.max(y.1), x.2 + y.2, x.3 + y.3, first)
            },
        );
    let rel_l2 = if den > 0.0 {
        (num / den).sqrt()
    } else {
        num.sqrt()
    };
    let pass = mism == 0 && (!elem.is_float() || rel_l2 <= tol.l2.max(0.0) || num == 0.0);
    Comparison {
        elements: n,
        mismatches: mism,
        max_abs,
        rel_l2,
        first_mismatch: first,
        pass,
    }
}

fn is_poison(elem: Elem, bytes: &[u8], i: usize) -> bool {
    let s = elem.size();
    bytes[i * s..(i + 1) * s].iter().all(|&b| b == POISON)
}

/// Elements `this` left poisoned where `other` wrote something: (count, first index).
/// Elements both left poisoned are not counted (the value may legitimately equal
/// the pattern, e.g. -1 in an integer output; an output entirely poisoned is caught
/// as degenerate).
pub fn unwritten(elem: Elem, this: &[u8], other: &[u8]) -> Option<(usize, usize)> {
    use rayon::prelude::*;
    let n = this.len().min(other.len()) / elem.size();
    let hit = |i: &usize| is_poison(elem, this, *i) && !is_poison(elem, other, *i);
    let count = (0..n).into_par_iter().filter(hit).count();
    (count > 0).then(|| (count, (0..n).into_par_iter().find_first(hit).unwrap_or(0)))
}

/// Why an output is degenerate, if it is: all poison, all zero, constant, or equal
/// to its own input (for `inout`).
pub fn degenerate(elem: Elem, out: &[u8], input: Option<&[u8]>) -> Option<&'static str> {
    let n = out.len() / elem.size();
    if n == 0 {
        return None;
    }
    use rayon::prelude::*;
    if out.par_iter().all(|&b| b == POISON) {
        return Some("every element still holds the poison pattern");
    }
    if out.par_iter().all(|&b| b == 0) {
        return Some("every element is zero");
    }
    let s = elem.size();
    if n > 1 && out.par_chunks(s).all(|c| c == &out[..s]) {
        return Some("every element has the same value");
    }
    if input == Some(out) {
        return Some("the output equals its input (nothing changed)");
    }
    None
}

pub fn median(v: &[f64]) -> f64 {
    quantile(v, 0.5)
}

/// Linear-interpolated quantile of unsorted data (NaN for empty input).
pub fn quantile(v: &[f64], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let pos = q * (s.len() - 1) as f64;
    let (lo, hi) = (pos.floor() as usize, pos.ceil() as usize);
    s[lo] + (s[hi] - s[lo]) * (pos - lo as f64)
}

pub fn iqr(v: &[f64]) -> f64 {
    quantile(v, 0.75) - quantile(v, 0.25)
}

/// Percentile bootstrap 95% interval of median(slow)/median(fast), resampling each
/// variant's runs independently; deterministic for a given seed.
pub fn bootstrap_ratio_ci(slow: &[f64], fast: &[f64], iters: usize, seed: u64) -> (f64, f64) {
    if slow.is_empty() || fast.is_empty() {
        return (f64::NAN, f64::NAN);
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ratios = Vec::with_capacity(iters);
    let mut a = vec![0.0; slow.len()];
    let mut b = vec![0.0; fast.len()];
    for _ in 0..iters {
        for x in a.iter_mut() {
            *x = slow[rng.random_range(0..slow.len())];
        }
        for x in b.iter_mut() {
            *x = fast[rng.random_range(0..fast.len())];
        }
        ratios.push(median(&a) / median(&b));
    }
    (quantile(&ratios, 0.025), quantile(&ratios, 0.975))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(v: &[f32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn float_compare_tolerates_rounding_but_not_errors() {
        let tol = Tol::default_for(Elem::F32);
        let b: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.37).sin()).collect();
        let a: Vec<f32> = b.iter().map(|x| x * (1.0 + 3e-7)).collect();
        let c = compare(Elem::F32, &f32s(&b), &f32s(&a), &tol);
        assert!(c.pass, "{c:?}");
        let mut bad = a.clone();
        bad[997] += 0.5;
        let c = compare(Elem::F32, &f32s(&b), &f32s(&bad), &tol);
        assert!(!c.pass);
        assert_eq!(c.mismatches, 1);
        assert_eq!(c.first_mismatch.unwrap().0, 997);
    }

    #[test]
    fn nan_in_one_side_is_a_mismatch_and_ints_are_exact() {
        let tol = Tol::default_for(Elem::F32);
        let c = compare(Elem::F32, &f32s(&[1.0, 2.0]), &f32s(&[1.0, f32::NAN]), &tol);
        assert!(!c.pass);
        let i = |v: &[i32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let t = Tol::default_for(Elem::I32);
        assert!(compare(Elem::I32, &i(&[5, 6]), &i(&[5, 6]), &t).pass);
        assert!(!compare(Elem::I32, &i(&[5, 6]), &i(&[5, 7]), &t).pass);
    }

    #[test]
    fn unwritten_counts_poison_only_where_the_other_wrote() {
        let p = f32::from_le_bytes([POISON; 4]);
        let slow = f32s(&[1.0, 2.0, p, 4.0]);
        let fast = f32s(&[1.0, p, p, p]);
        assert_eq!(unwritten(Elem::F32, &fast, &slow), Some((2, 1)));
        assert_eq!(unwritten(Elem::F32, &slow, &fast), None);
    }

    #[test]
    fn degenerate_outputs_are_named() {
        let p = f32::from_le_bytes([POISON; 4]);
        assert!(degenerate(Elem::F32, &f32s(&[p, p]), None)
            .unwrap()
            .contains("poison"));
        assert!(degenerate(Elem::F32, &f32s(&[0.0, 0.0]), None)
            .unwrap()
            .contains("zero"));
        assert!(degenerate(Elem::F32, &f32s(&[3.0, 3.0]), None)
            .unwrap()
            .contains("same"));
        let x = f32s(&[1.0, 2.0]);
        assert!(degenerate(Elem::F32, &x, Some(&x))
            .unwrap()
            .contains("input"));
        assert_eq!(degenerate(Elem::F32, &x, None), None);
    }

    #[test]
    fn stats() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
        assert_eq!(iqr(&[1.0, 2.0, 3.0, 4.0, 5.0]), 2.0);
        let slow: Vec<f64> = (0..50).map(|i| 2.0 + (i % 5) as f64 * 0.01).collect();
        let fast: Vec<f64> = (0..50).map(|i| 1.0 + (i % 7) as f64 * 0.01).collect();
        let (lo, hi) = bootstrap_ratio_ci(&slow, &fast, 500, 1);
        let point = median(&slow) / median(&fast);
        assert!(lo <= point && point <= hi, "{lo} {point} {hi}");
        assert!(lo > 1.8 && hi < 2.2, "{lo} {hi}");
        assert_eq!((lo, hi), bootstrap_ratio_ci(&slow, &fast, 500, 1));
    }
}
