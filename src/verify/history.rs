//! How long each pair took in earlier verify runs, so a batch starts its longest pairs
//! first: with several GPUs (or several workers), a long pair that starts last leaves the
//! other workers idle while it runs (a naive kernel of seconds, a captured size set of
//! gigabytes). Kept beside the compile cache as `pair-seconds.jsonl`, one line per finished
//! pair, appended as each finishes (a torn last line is skipped; the last line of a pair
//! wins), so a killed run's figures count too.

use crate::record::{Status, Verification};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

pub const FILE: &str = "pair-seconds.jsonl";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Line {
    pair_id: String,
    seconds: f64,
}

/// Each pair's last recorded seconds, from `dir`'s history (empty when there is none).
pub fn load(dir: &Path) -> BTreeMap<String, f64> {
    let text = std::fs::read_to_string(dir.join(FILE)).unwrap_or_default();
    text.lines()
        .filter_map(|l| serde_json::from_str::<Line>(l).ok())
        .filter(|l| l.seconds.is_finite() && l.seconds >= 0.0)
        .map(|l| (l.pair_id, l.seconds))
        .collect()
}

/// Appends finished pairs' seconds to `dir`'s history. Failing to write it costs only
/// the order of a later run, so errors are ignored.
pub struct Recorder {
    file: Option<std::fs::File>,
}

impl Recorder {
    pub fn open(dir: Option<&Path>) -> Recorder {
        let file = dir.and_then(|d| {
            std::fs::create_dir_all(d).ok()?;
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path(d))
                .ok()
        });
        Recorder { file }
    }

    pub fn record(&mut self, pair_id: &str, seconds: Option<f64>) {
        let (Some(f), Some(seconds)) = (self.file.as_mut(), seconds) else {
            return;
        };
        let line = Line {
            pair_id: pair_id.to_string(),
            seconds,
        };
        if let Ok(text) = serde_json::to_string(&line) {
            let _ = writeln!(f, "{text}");
        }
    }
}

fn path(dir: &Path) -> PathBuf {
    dir.join(FILE)
}

/// The seconds a verification took on its worker: its compile, check and timing phases;
/// for a timeout, the limit it ran into (a lower bound, still the longest of its batch).
pub fn seconds_of(v: &Verification, timeout_s: f64) -> Option<f64> {
    if v.status == Status::Timeout {
        return Some(timeout_s);
    }
    let ms: f64 = ["compile", "check", "time"]
        .iter()
        .filter_map(|k| v.evidence.phases_ms.get(*k))
        .sum();
    (ms > 0.0).then_some(ms / 1e3)
}

/// Orders groups of items longest first by the sum of their items' recorded seconds, and
/// each group's items longest first too (a batch of single pairs is groups of one). An
/// item with no record counts as the median of those with one (neither first nor last);
/// with no records at all the order is unchanged. The sorts are stable: equal estimates
/// keep their order.
pub fn longest_first_groups<T>(
    groups: &mut [Vec<T>],
    id: impl Fn(&T) -> &str,
    seconds: &BTreeMap<String, f64>,
) {
    let mut known: Vec<f64> = groups
        .iter()
        .flatten()
        .filter_map(|x| seconds.get(id(x)).copied())
        .collect();
    if known.is_empty() {
        return;
    }
    known.sort_by(f64::total_cmp);
    let median = known[known.len() / 2];
    let one = |x: &T| seconds.get(id(x)).copied().unwrap_or(median);
    for g in groups.iter_mut() {
        g.sort_by(|a, b| one(b).total_cmp(&one(a)));
    }
    let estimate = |g: &Vec<T>| -> f64 { g.iter().map(one).sum() };
    groups.sort_by(|a, b| estimate(b).total_cmp(&estimate(a)));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn longest_first_puts_unknown_pairs_at_the_median_and_keeps_ties_in_order() {
        let secs: BTreeMap<String, f64> = [("a", 1.0), ("b", 90.0), ("c", 5.0)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        let singles = |ids: &[&'static str]| -> Vec<Vec<&'static str>> {
            ids.iter().map(|i| vec![*i]).collect()
        };
        let mut items = singles(&["a", "x", "b", "c", "y"]);
        longest_first_groups(&mut items, |s| s, &secs);
        // Median of 1, 5, 90 is 5: x and y tie with c and keep their order.
        assert_eq!(items, singles(&["b", "x", "c", "y", "a"]));
        let mut none = singles(&["q", "p"]);
        longest_first_groups(&mut none, |s| s, &secs);
        assert_eq!(none, singles(&["q", "p"]));
    }

    #[test]
    fn groups_go_longest_first_by_their_sum() {
        let secs: BTreeMap<String, f64> = [("a", 40.0), ("b", 15.0), ("c", 50.0), ("d", 1.0)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        // a + b (55) outweigh c (50), which outweighs an unknown pair (median 40) + d.
        let mut groups = vec![vec!["c"], vec!["d", "x"], vec!["b", "a"]];
        longest_first_groups(&mut groups, |s| s, &secs);
        assert_eq!(groups, vec![vec!["a", "b"], vec!["c"], vec!["x", "d"]]);
    }

    #[test]
    fn the_history_keeps_the_last_line_per_pair_and_skips_a_torn_one() {
        let d = tempfile::tempdir().unwrap();
        let mut r = Recorder::open(Some(d.path()));
        r.record("a", Some(3.0));
        r.record("b", Some(7.5));
        r.record("a", Some(4.0));
        r.record("c", None);
        drop(r);
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(d.path().join(FILE))
            .unwrap();
        write!(f, "{{\"pair_id\":\"d\",\"sec").unwrap();
        let h = load(d.path());
        assert_eq!(h.len(), 2);
        assert_eq!((h["a"], h["b"]), (4.0, 7.5));
        assert!(load(&d.path().join("missing")).is_empty());
    }

    #[test]
    fn seconds_are_the_workers_phases_or_the_limit_a_timeout_hit() {
        let mut v = Verification {
            status: Status::Verified,
            reason: String::new(),
            device: None,
            evidence: Default::default(),
            speedup: None,
            tool_version: String::new(),
            flags: vec![],
        };
        assert_eq!(seconds_of(&v, 60.0), None);
        v.evidence.phases_ms.insert("compile".into(), 500.0);
        v.evidence.phases_ms.insert("check".into(), 1500.0);
        v.evidence.phases_ms.insert("time".into(), 2000.0);
        v.evidence.phases_ms.insert("check.run".into(), 1000.0);
        assert_eq!(seconds_of(&v, 60.0), Some(4.0));
        v.status = Status::Timeout;
        assert_eq!(seconds_of(&v, 60.0), Some(60.0));
    }
}
