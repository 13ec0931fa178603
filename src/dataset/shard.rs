//! `--shard i/n`: a stable partition of records by a hash of their id, so that n cluster
//! tasks each take one part and `merge` joins their outputs into the corpus one run gives.

use crate::record::Record;
use sha2::{Digest, Sha256};
use std::fmt;
use std::str::FromStr;

/// Shard `index` of `count`, 0-based (Slurm's `--array=0-3` and Kubernetes'
/// `JOB_COMPLETION_INDEX` both count from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Shard {
    pub index: u32,
    pub count: u32,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("shard `{0}`: expected i/n with 0 <= i < n, e.g. 0/4")]
pub struct ShardParseError(String);

impl FromStr for Shard {
    type Err = ShardParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || ShardParseError(s.to_string());
        let (i, n) = s.split_once('/').ok_or_else(bad)?;
        let index: u32 = i.trim().parse().map_err(|_| bad())?;
        let count: u32 = n.trim().parse().map_err(|_| bad())?;
        if count == 0 || index >= count {
            return Err(bad());
        }
        Ok(Shard { index, count })
    }
}

impl fmt::Display for Shard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

impl Shard {
    pub fn contains(&self, r: &Record) -> bool {
        shard_of(&record_key(r).1, self.count) == self.index
    }
}

/// The shard (0..n) an id belongs to: the first 8 bytes of its SHA-256, big-endian, mod n.
/// Depends on nothing but the id, so every task and every machine agrees.
pub fn shard_of(id: &str, n: u32) -> u32 {
    let h = Sha256::digest(id.as_bytes());
    let x = u64::from_be_bytes(h[..8].try_into().expect("8 bytes"));
    (x % u64::from(n.max(1))) as u32
}

/// The identity of a record: (kind rank, id). Pairs and units by their content id,
/// unpaired kernels by their unit's id, skipped inputs by path.
pub fn record_key(r: &Record) -> (u8, String) {
    match r {
        Record::Unit(u) => (0, u.id.clone()),
        Record::Pair(p) => (1, p.id.clone()),
        Record::Unpaired(u) => (2, u.unit_id.clone()),
        Record::Skipped(s) => (3, format!("{}\u{0}{}", s.path, s.reason)),
    }
}

/// Keep the records of shard `i` of `n` (0-based), in their order. For stages to call on
/// their input (or output) when given `--shard i/n`.
pub fn shard_filter(records: impl IntoIterator<Item = Record>, i: u32, n: u32) -> Vec<Record> {
    let shard = Shard { index: i, count: n };
    records.into_iter().filter(|r| shard.contains(r)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Skipped;

    fn skipped(i: usize) -> Record {
        Record::Skipped(Skipped {
            path: format!("f{i}.cu"),
            reason: crate::record::SkipReason::Binary,
            message: String::new(),
        })
    }

    #[test]
    fn parse_and_display_round_trip_and_reject_nonsense() {
        let s: Shard = "2/5".parse().unwrap();
        assert_eq!(s, Shard { index: 2, count: 5 });
        assert_eq!(s.to_string(), "2/5");
        for bad in ["5/5", "1/0", "x/2", "3", "-1/2", ""] {
            assert!(bad.parse::<Shard>().is_err(), "{bad}");
        }
    }

    #[test]
    fn shards_partition_the_records_and_are_roughly_even() {
        let recs: Vec<Record> = (0..400).map(skipped).collect();
        let parts: Vec<Vec<Record>> = (0..4).map(|i| shard_filter(recs.clone(), i, 4)).collect();
        assert_eq!(parts.iter().map(Vec::len).sum::<usize>(), 400);
        for p in &parts {
            assert!(p.len() > 60 && p.len() < 140, "{}", p.len());
        }
        // Disjoint: each record in exactly one part.
        for r in &recs {
            assert_eq!(parts.iter().filter(|p| p.contains(r)).count(), 1);
        }
        // One shard of one is everything.
        assert_eq!(shard_filter(recs.clone(), 0, 1), recs);
    }

    #[test]
    fn shard_of_is_pinned() {
        // Guards the hash: changing it would silently reshuffle every cluster run's shards.
        assert_eq!(
            shard_of("abc", 1_000_003),
            (0xba7816bf8f01cfea_u64 % 1_000_003) as u32
        );
    }
}
