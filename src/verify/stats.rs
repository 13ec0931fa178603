//! Timing statistics: median and IQR per variant, the speedup (median slow / median fast)
//! with a seeded bootstrap 95% confidence interval, and the rule that turns it into a
//! status. Pure CPU.

use crate::record::{Speedup, Status};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};

/// A pair counts as faster only when the CI's lower bound is at least this.
pub const DEFAULT_THRESHOLD: f64 = 1.1;
/// Bootstrap resamples: 2000 puts the 2.5% and 97.5% quantiles on 50 resamples each.
pub const DEFAULT_RESAMPLES: usize = 2000;
/// Fixed bootstrap seed, so the same timings always give the same interval.
pub const BOOTSTRAP_SEED: u64 = 0x006b_7061_6972; // "kpair"

/// Spread of one variant's timings (any unit; milliseconds in the evidence).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub n: usize,
    pub median: f64,
    pub q1: f64,
    pub q3: f64,
    pub iqr: f64,
    pub min: f64,
    pub max: f64,
    pub mean: f64,
}

/// Quantile `q` in [0, 1] of sorted data, linear between order statistics (R type 7).
pub fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    assert!(!sorted.is_empty(), "quantile of no data");
    let pos = q.clamp(0.0, 1.0) * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

fn sorted_finite(xs: &[f64]) -> Vec<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    v
}

/// Median of the finite values; None when there are none.
pub fn median(xs: &[f64]) -> Option<f64> {
    let v = sorted_finite(xs);
    (!v.is_empty()).then(|| quantile_sorted(&v, 0.5))
}

/// Distribution-free 95% confidence interval of the median from order statistics (the
/// binomial / normal-approximation ranks `n/2 ± 0.98·√n`), relative to the median:
/// `(upper - lower) / median`. None with fewer than 6 values (no such interval exists).
pub fn median_ci_rel_width(xs: &[f64]) -> Option<f64> {
    let v = sorted_finite(xs);
    let n = v.len();
    if n < 6 {
        return None;
    }
    let half = 0.98 * (n as f64).sqrt();
    let lo = ((n as f64 / 2.0 - half).floor().max(1.0) as usize) - 1;
    let hi = ((n as f64 / 2.0 + 1.0 + half).ceil() as usize).min(n) - 1;
    let med = quantile_sorted(&v, 0.5);
    (med > 0.0).then(|| (v[hi] - v[lo]) / med)
}

/// Summary of the finite values; None when there are none.
pub fn summarize(xs: &[f64]) -> Option<Summary> {
    let v = sorted_finite(xs);
    if v.is_empty() {
        return None;
    }
    let (q1, q3) = (quantile_sorted(&v, 0.25), quantile_sorted(&v, 0.75));
    Some(Summary {
        n: v.len(),
        median: quantile_sorted(&v, 0.5),
        q1,
        q3,
        iqr: q3 - q1,
        min: v[0],
        max: v[v.len() - 1],
        mean: v.iter().sum::<f64>() / v.len() as f64,
    })
}

/// Speedup of fast over slow with its bootstrap interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SpeedupEstimate {
    /// median(slow) / median(fast).
    pub ratio: f64,
    pub ci_low: f64,
    pub ci_high: f64,
    pub resamples: usize,
    /// Coverage of the interval (0.95).
    pub confidence: f64,
}

impl SpeedupEstimate {
    pub fn to_record(&self, size_set: &str) -> Speedup {
        Speedup {
            size_set: size_set.to_string(),
            median: self.ratio,
            ci_low: self.ci_low,
            ci_high: self.ci_high,
        }
    }
}

/// Percentile-bootstrap 95% CI of median(slow)/median(fast): each resample draws both
/// samples with replacement (independently: the runs are interleaved, not paired).
/// None when either side has no finite positive timing.
pub fn speedup_ci(
    slow: &[f64],
    fast: &[f64],
    resamples: usize,
    seed: u64,
) -> Option<SpeedupEstimate> {
    let s: Vec<f64> = sorted_finite(slow)
        .into_iter()
        .filter(|x| *x > 0.0)
        .collect();
    let f: Vec<f64> = sorted_finite(fast)
        .into_iter()
        .filter(|x| *x > 0.0)
        .collect();
    if s.is_empty() || f.is_empty() {
        return None;
    }
    let ratio = quantile_sorted(&s, 0.5) / quantile_sorted(&f, 0.5);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let resamples = resamples.max(1);
    let mut ratios = Vec::with_capacity(resamples);
    let (mut bs, mut bf) = (vec![0.0; s.len()], vec![0.0; f.len()]);
    for _ in 0..resamples {
        for x in bs.iter_mut() {
            *x = s[rng.random_range(0..s.len())];
        }
        for x in bf.iter_mut() {
            *x = f[rng.random_range(0..f.len())];
        }
        bs.sort_by(f64::total_cmp);
        bf.sort_by(f64::total_cmp);
        ratios.push(quantile_sorted(&bs, 0.5) / quantile_sorted(&bf, 0.5));
    }
    ratios.sort_by(f64::total_cmp);
    Some(SpeedupEstimate {
        ratio,
        ci_low: quantile_sorted(&ratios, 0.025),
        ci_high: quantile_sorted(&ratios, 0.975),
        resamples,
        confidence: 0.95,
    })
}

/// `Verified` when the interval's lower bound clears `threshold`, else `NotFaster`.
pub fn speed_status(est: &SpeedupEstimate, threshold: f64) -> Status {
    if est.ci_low >= threshold {
        Status::Verified
    } else {
        Status::NotFaster
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn median_and_iqr() {
        let s = summarize(&[5.0, 1.0, 3.0, 2.0, 4.0, f64::NAN]).unwrap();
        assert_eq!(
            (s.n, s.median, s.q1, s.q3, s.iqr, s.min, s.max),
            (5, 3.0, 2.0, 4.0, 2.0, 1.0, 5.0)
        );
        assert_eq!(median(&[1.0, 2.0, 3.0, 10.0]), Some(2.5));
        assert_eq!(median(&[]), None);
        assert!(summarize(&[f64::NAN]).is_none());
    }

    fn noisy(center: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        (0..n)
            .map(|_| center * (1.0 + rng.random_range(-0.03..0.03)))
            .collect()
    }

    #[test]
    fn clear_speedup_is_verified_and_interval_brackets_it() {
        let slow = noisy(2.0, 50, 1);
        let fast = noisy(1.0, 50, 2);
        let e = speedup_ci(&slow, &fast, DEFAULT_RESAMPLES, BOOTSTRAP_SEED).unwrap();
        assert!((e.ratio - 2.0).abs() < 0.05, "{e:?}");
        assert!(e.ci_low <= e.ratio && e.ratio <= e.ci_high, "{e:?}");
        assert!(e.ci_high - e.ci_low < 0.1, "tight for 3% noise: {e:?}");
        assert_eq!(speed_status(&e, DEFAULT_THRESHOLD), Status::Verified);
        // Same inputs and seed, same interval.
        assert_eq!(
            speedup_ci(&slow, &fast, DEFAULT_RESAMPLES, BOOTSTRAP_SEED),
            Some(e)
        );
        assert_eq!(e.to_record("large").size_set, "large");
    }

    #[test]
    fn equal_or_marginal_speed_is_not_faster() {
        let e = speedup_ci(&noisy(1.0, 40, 3), &noisy(1.0, 40, 4), 2000, 9).unwrap();
        assert!(e.ci_low < 1.05, "{e:?}");
        assert_eq!(speed_status(&e, DEFAULT_THRESHOLD), Status::NotFaster);
        // A 1.12x median whose interval dips below 1.1 stays not_faster.
        let slow: Vec<f64> = (0..20)
            .map(|i| 1.12 + if i % 2 == 0 { 0.25 } else { -0.25 })
            .collect();
        let e = speedup_ci(&slow, &[1.0; 20], 2000, 9).unwrap();
        assert!(e.ratio > 1.1 && e.ci_low < 1.1, "{e:?}");
        assert_eq!(speed_status(&e, DEFAULT_THRESHOLD), Status::NotFaster);
    }

    #[test]
    fn no_timings_no_estimate() {
        assert!(speedup_ci(&[], &[1.0], 10, 1).is_none());
        assert!(speedup_ci(&[1.0], &[0.0, f64::NAN], 10, 1).is_none());
    }

    #[test]
    fn median_ci_narrows_with_more_runs_and_needs_six() {
        assert_eq!(median_ci_rel_width(&[1.0; 5]), None);
        assert_eq!(median_ci_rel_width(&[2.0; 40]), Some(0.0));
        // Noisy timings around 1.0: the interval shrinks roughly with 1/sqrt(n).
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let draw = |n: usize, rng: &mut ChaCha8Rng| -> Vec<f64> {
            (0..n)
                .map(|_| 1.0 + rng.random_range(-0.05..0.05))
                .collect()
        };
        let w20 = median_ci_rel_width(&draw(20, &mut rng)).unwrap();
        let w400 = median_ci_rel_width(&draw(400, &mut rng)).unwrap();
        assert!(w20 > w400 * 2.0, "{w20} vs {w400}");
        assert!(w400 < 0.02 && w20 < 0.1, "{w20} {w400}");
        // An outlier barely moves it (ranks, not values).
        let mut v = vec![1.0; 30];
        v[0] = 1000.0;
        assert_eq!(median_ci_rel_width(&v), Some(0.0));
    }
}
