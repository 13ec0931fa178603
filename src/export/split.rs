//! Deterministic train/test split grouped by benchmark, so that no benchmark's kernels are
//! in both splits (a model must not be tested on kernels it saw the siblings of).

use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Split {
    Train,
    Test,
}

impl Split {
    pub fn as_str(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Test => "test",
        }
    }
}

/// The group key of a sample: `suite/benchmark`.
pub fn group_key(suite: &str, benchmark: &str) -> String {
    format!("{suite}/{benchmark}")
}

/// Assign each group (key → number of samples) to a split.
///
/// Held-out groups (matched by `benchmark` or `suite/benchmark`) go to test. The rest are
/// ordered by SHA-256 of (seed, key) — stable across platforms and releases — and each joins
/// test when that brings the test share closer to `1 - train_fraction`, else train.
pub fn assign(
    groups: &BTreeMap<String, usize>,
    train_fraction: f64,
    seed: u64,
    holdout: &[String],
) -> BTreeMap<String, Split> {
    let total: usize = groups.values().sum();
    let target = (1.0 - train_fraction) * total as f64;
    let held = |key: &str| {
        let bench = key.split_once('/').map_or(key, |(_, b)| b);
        holdout.iter().any(|h| h == key || h == bench)
    };
    let mut out = BTreeMap::new();
    let mut test = 0usize;
    for (k, &n) in groups {
        if held(k) {
            out.insert(k.clone(), Split::Test);
            test += n;
        }
    }
    let mut rest: Vec<(&String, usize, [u8; 32])> = groups
        .iter()
        .filter(|(k, _)| !held(k))
        .map(|(k, &n)| {
            let mut h = Sha256::new();
            h.update(seed.to_le_bytes());
            h.update(k.as_bytes());
            (k, n, h.finalize().into())
        })
        .collect();
    rest.sort_by(|a, b| a.2.cmp(&b.2).then_with(|| a.0.cmp(b.0)));
    for (k, n, _) in rest {
        let now = (test as f64 - target).abs();
        let with = ((test + n) as f64 - target).abs();
        if with < now {
            out.insert(k.clone(), Split::Test);
            test += n;
        } else {
            out.insert(k.clone(), Split::Train);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(n: usize) -> BTreeMap<String, usize> {
        (0..n).map(|i| (format!("s/b{i:02}"), 1 + i % 4)).collect()
    }

    #[test]
    fn split_is_deterministic_near_the_ratio_and_seed_dependent() {
        let g = groups(40);
        let a = assign(&g, 0.8, 42, &[]);
        assert_eq!(a, assign(&g, 0.8, 42, &[]));
        let total: usize = g.values().sum();
        let test: usize = a
            .iter()
            .filter(|(_, s)| **s == Split::Test)
            .map(|(k, _)| g[k])
            .sum();
        let share = test as f64 / total as f64;
        assert!((share - 0.2).abs() < 0.05, "{share}");
        assert_ne!(
            a,
            assign(&g, 0.8, 7, &[]),
            "another seed picks other benchmarks"
        );
        // Every group gets exactly one split.
        assert_eq!(a.len(), g.len());
    }

    #[test]
    fn holdouts_go_to_test_by_name_or_full_key_and_ratio_extremes_hold() {
        let g = groups(10);
        let a = assign(&g, 1.0, 42, &["b03".into(), "s/b07".into()]);
        let test: Vec<_> = a
            .iter()
            .filter(|(_, s)| **s == Split::Test)
            .map(|(k, _)| k.as_str())
            .collect();
        assert_eq!(test, ["s/b03", "s/b07"]);
        let all_test = assign(&g, 0.0, 42, &[]);
        assert!(all_test.values().all(|s| *s == Split::Test));
    }

    #[test]
    fn one_huge_group_does_not_swallow_the_test_split() {
        let mut g = groups(10);
        g.insert("s/huge".into(), 1000);
        let a = assign(&g, 0.8, 42, &[]);
        assert_eq!(a["s/huge"], Split::Train);
    }
}
