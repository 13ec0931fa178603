//! Joining shard outputs: one record per id, in a fixed order, whatever order the shard
//! files come in.

use super::shard::record_key;
use crate::record::{Record, Status};
use std::collections::BTreeMap;

/// The result of a merge.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// Sorted by (kind: units, pairs, unpaired, skipped; then id).
    pub records: Vec<Record>,
    /// Records seen more than once with identical content.
    pub duplicates: usize,
    /// Ids seen more than once with different content, and which one was kept (see [`progress`]).
    pub conflicts: Vec<String>,
}

/// How far along the pipeline a record is; on a conflict the furthest one wins, so a merge of
/// an old unverified copy with a verified one keeps the verified one.
pub fn progress(r: &Record) -> u8 {
    let Record::Pair(p) = r else { return 0 };
    match (p.slow.unit(), &p.verification) {
        (_, Some(v)) if v.status == Status::Verified => 5,
        (_, Some(v)) if v.status != Status::NoGpu => 4,
        (_, Some(_)) => 3,
        (Some(_), None) => 2,
        (None, _) => 1,
    }
}

/// Merge record lists into one, de-duplicated by record id. Conflicting copies of one id
/// resolve to the furthest along ([`progress`]), ties to the smallest JSON text, so the
/// outcome does not depend on the input order.
pub fn merge(inputs: impl IntoIterator<Item = Vec<Record>>) -> Merged {
    let mut by_key: BTreeMap<(u8, String), (Record, String)> = BTreeMap::new();
    let mut duplicates = 0;
    let mut conflicted: BTreeMap<(u8, String), ()> = BTreeMap::new();
    for list in inputs {
        for r in list {
            let key = record_key(&r);
            let text = serde_json::to_string(&r).expect("records serialize");
            match by_key.get_mut(&key) {
                None => {
                    by_key.insert(key, (r, text));
                }
                Some((_, old_text)) if *old_text == text => {
                    duplicates += 1;
                }
                Some((old, old_text)) => {
                    conflicted.insert(key.clone(), ());
                    let better = (progress(&r), std::cmp::Reverse(&text))
                        > (progress(old), std::cmp::Reverse(&*old_text));
                    if better {
                        *old = r;
                        *old_text = text;
                    }
                }
            }
        }
    }
    Merged {
        conflicts: conflicted.into_keys().map(|(_, id)| id).collect(),
        records: by_key.into_values().map(|(r, _)| r).collect(),
        duplicates,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Skipped;

    fn sk(path: &str, msg: &str) -> Record {
        Record::Skipped(Skipped {
            path: path.into(),
            reason: crate::record::SkipReason::Binary,
            message: msg.into(),
        })
    }

    #[test]
    fn merge_sorts_dedups_and_ignores_input_order() {
        let a = vec![sk("b.cu", ""), sk("a.cu", "")];
        let b = vec![sk("a.cu", ""), sk("c.cu", "")];
        let m = merge([a.clone(), b.clone()]);
        assert_eq!(
            m.records,
            vec![sk("a.cu", ""), sk("b.cu", ""), sk("c.cu", "")]
        );
        assert_eq!(m.duplicates, 1);
        assert!(m.conflicts.is_empty());
        assert_eq!(merge([b, a]).records, m.records);
    }

    #[test]
    fn conflicts_resolve_the_same_way_in_any_order() {
        let x = vec![sk("a.cu", "first")];
        let y = vec![sk("a.cu", "second")];
        let m1 = merge([x.clone(), y.clone()]);
        let m2 = merge([y, x]);
        assert_eq!(m1.records, m2.records);
        assert_eq!(m1.records, vec![sk("a.cu", "first")]);
        assert_eq!(m1.conflicts.len(), 1);
    }
}
