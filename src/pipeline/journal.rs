//! The build journal: which steps finished, for which inputs, with which outputs.
//!
//! A step is skipped on a rerun only when its entry is complete, its key (a hash over the
//! step's inputs and settings) matches, and its outputs still hash to what was recorded.
//! The journal holds no times or run-specific counts, so an interrupted-and-resumed build
//! leaves the same bytes as an uninterrupted one.

use crate::jsonl::{self, JsonlError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

pub const JOURNAL_FILE: &str = "journal.json";
const JOURNAL_VERSION: u32 = 1;

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Journal {
    pub version: u32,
    pub steps: BTreeMap<String, Step>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// Hash over the step's inputs and settings.
    pub key: String,
    /// False when items await a GPU or an endpoint, or failed: the step runs again next time.
    pub complete: bool,
    /// Output files relative to the output folder → SHA-256 of their contents.
    pub outputs: BTreeMap<String, String>,
    /// What the step produced (records, pairs, per status …), for the summary of a reused step.
    pub counts: BTreeMap<String, usize>,
}

impl Journal {
    /// The journal in `dir`, or an empty one when there is none or it cannot be read (then
    /// every step runs again, which is always safe).
    pub fn load(dir: &Path) -> Journal {
        let p = dir.join(JOURNAL_FILE);
        match std::fs::read_to_string(&p) {
            Ok(text) => match serde_json::from_str::<Journal>(&text) {
                Ok(j) if j.version == JOURNAL_VERSION => j,
                _ => {
                    tracing::warn!("{}: unreadable journal, starting afresh", p.display());
                    Journal::default()
                }
            },
            Err(_) => Journal::default(),
        }
    }

    pub fn save(&mut self, dir: &Path) -> Result<(), JsonlError> {
        self.version = JOURNAL_VERSION;
        let text = serde_json::to_string_pretty(self).expect("journal serializes");
        jsonl::write_atomic(&dir.join(JOURNAL_FILE), |w| {
            w.write_all(text.as_bytes())?;
            w.write_all(b"\n")
        })
    }

    /// The step's entry when it can be reused as is.
    pub fn reusable(&self, stage: &str, key: &str, dir: &Path) -> Option<&Step> {
        let s = self.steps.get(stage)?;
        let ok = s.complete
            && s.key == key
            && s.outputs
                .iter()
                .all(|(rel, h)| file_sha256(&dir.join(rel)).as_deref() == Some(h.as_str()));
        ok.then_some(s)
    }
}

/// SHA-256 of a file's bytes, hex; None when it cannot be read.
pub fn file_sha256(path: &Path) -> Option<String> {
    let mut f = std::fs::File::open(path).ok()?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = f.read(&mut buf).ok()?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Some(hex::encode(h.finalize()))
}

/// Files above this size enter a tree hash by size only.
const BIG_FILE: u64 = 8 << 20;

/// A hash over a file or a folder tree: every file's relative path and contents, in sorted
/// order, skipping `exclude` (the build's own output folder when it lies inside a suite);
/// files over 8 MiB by size only.
/// A missing path hashes as "missing", so creating it later changes the key.
pub fn tree_sha256(path: &Path, exclude: Option<&Path>) -> String {
    let mut h = Sha256::new();
    if path.is_file() {
        h.update(b"file\0");
        h.update(file_sha256(path).unwrap_or_default());
    } else if path.is_dir() {
        let mut files: Vec<(String, std::path::PathBuf)> = walkdir::WalkDir::new(path)
            .follow_links(true)
            .into_iter()
            .filter_entry(|e| exclude.is_none_or(|x| !e.path().starts_with(x)))
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| {
                let rel = e
                    .path()
                    .strip_prefix(path)
                    .unwrap_or(e.path())
                    .to_string_lossy()
                    .replace('\\', "/");
                (rel, e.path().to_path_buf())
            })
            .collect();
        files.sort();
        for (rel, p) in files {
            h.update(rel.as_bytes());
            h.update([0u8]);
            // Suites ship input data sets of hundreds of MB that extraction never reads
            // (it skips files over 2 MiB): such files count by size, not content.
            match std::fs::metadata(&p).map(|m| m.len()) {
                Ok(n) if n > BIG_FILE => h.update(format!("size:{n}")),
                _ => h.update(file_sha256(&p).unwrap_or_default()),
            }
            h.update([0u8]);
        }
    } else {
        h.update(b"missing");
    }
    hex::encode(h.finalize())
}

/// A step key: SHA-256 over NUL-separated parts.
pub fn key(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    hex::encode(h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_step_is_reusable_only_when_complete_same_key_and_outputs_unchanged() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("o.jsonl"), "x\n").unwrap();
        let mut j = Journal::default();
        j.steps.insert(
            "extract".into(),
            Step {
                key: "k".into(),
                complete: true,
                outputs: [(
                    "o.jsonl".to_string(),
                    file_sha256(&dir.path().join("o.jsonl")).unwrap(),
                )]
                .into(),
                counts: BTreeMap::new(),
            },
        );
        j.save(dir.path()).unwrap();
        let j = Journal::load(dir.path());
        assert!(j.reusable("extract", "k", dir.path()).is_some());
        assert!(j.reusable("extract", "other", dir.path()).is_none());
        assert!(j.reusable("synth", "k", dir.path()).is_none());
        std::fs::write(dir.path().join("o.jsonl"), "edited\n").unwrap();
        assert!(j.reusable("extract", "k", dir.path()).is_none());
        // A corrupt journal means: start afresh.
        std::fs::write(dir.path().join(JOURNAL_FILE), "{not json").unwrap();
        assert_eq!(Journal::load(dir.path()), Journal::default());
    }

    #[test]
    fn tree_hash_sees_contents_names_and_skips_the_excluded_folder() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::create_dir_all(d.join("a/out")).unwrap();
        std::fs::write(d.join("a/k.cu"), "k").unwrap();
        let h1 = tree_sha256(&d.join("a"), Some(&d.join("a/out")));
        std::fs::write(d.join("a/out/junk"), "j").unwrap();
        assert_eq!(h1, tree_sha256(&d.join("a"), Some(&d.join("a/out"))));
        std::fs::write(d.join("a/k.cu"), "k2").unwrap();
        assert_ne!(h1, tree_sha256(&d.join("a"), Some(&d.join("a/out"))));
        assert_ne!(
            tree_sha256(&d.join("nope"), None),
            tree_sha256(&d.join("a/k.cu"), None)
        );
    }
}
