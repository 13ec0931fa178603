//! The extraction journal: each benchmark scope's isolation results, written as soon as
//! the scope is done, so a killed run (`kill -9`, a crash, a lost machine) keeps its
//! work and the rerun reuses it.
//!
//! `extract -o OUT` keeps the journal in the folder `OUT.journal/`, one JSON file per
//! scope, named by a content key over everything the scope's results depend on: this
//! build of the tool, the suite, the scope, its include folders, and the path, encoding
//! and text of every file it can see. An entry is written to a temporary name and renamed
//! into place, so it is whole or absent; an entry that does not read back (a power loss
//! before the data reached the disk) is computed again. Once OUT itself has been written
//! (atomically), the journal is removed: only an interrupted run leaves one behind.

use crate::record::{KernelUnit, Skipped};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;

/// Bump when what a journal entry holds, or how it is computed, changes.
const JOURNAL_VERSION: u32 = 1;

/// What one scope produced: every field `isolate_all` needs to give the same output as
/// if the scope had been computed now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScopeResult {
    pub version: u32,
    /// Units in task order (kernel files in scope order, kernels in file order), before
    /// the compile check.
    pub units: Vec<KernelUnit>,
    /// Kernels whose isolation failed, in task order.
    pub isolation_failed: Vec<Skipped>,
    /// Files of the scope the parser failed on.
    pub parse_failed: Vec<Skipped>,
    /// Kernel files of the scope (for the summary).
    pub kernel_files: usize,
}

impl ScopeResult {
    pub fn new() -> ScopeResult {
        ScopeResult {
            version: JOURNAL_VERSION,
            units: Vec::new(),
            isolation_failed: Vec::new(),
            parse_failed: Vec::new(),
            kernel_files: 0,
        }
    }
}

impl Default for ScopeResult {
    fn default() -> Self {
        ScopeResult::new()
    }
}

/// A journal folder, and whether entries already in it may be reused.
#[derive(Debug, Clone)]
pub struct Journal {
    dir: PathBuf,
    reuse: bool,
    build: String,
}

/// How a run used its journal, for the end-of-run report.
#[derive(Debug, Default)]
pub struct JournalStats {
    /// Scopes whose results came from the journal.
    pub reused: AtomicUsize,
    /// Scopes computed and written to the journal.
    pub written: AtomicUsize,
}

impl Journal {
    /// The journal of output file `out`: the folder `OUT.journal` beside it.
    pub fn beside(out: &Path) -> Journal {
        let mut dir = out.as_os_str().to_owned();
        dir.push(".journal");
        Journal::at(PathBuf::from(dir))
    }

    pub fn at(dir: PathBuf) -> Journal {
        Journal {
            dir,
            reuse: true,
            build: build_identity(),
        }
    }

    /// Write entries but never read old ones (`--no-cache`).
    pub fn write_only(mut self) -> Journal {
        self.reuse = false;
        self
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of a scope's entry: `parts` name everything its result depends on; the
    /// build of the tool is added here.
    pub fn key(&self, parts: &[&str]) -> String {
        let mut h = Sha256::new();
        for p in [
            "kernelpair-extract-journal",
            &JOURNAL_VERSION.to_string(),
            &self.build,
        ]
        .iter()
        .chain(parts)
        {
            h.update(p.as_bytes());
            h.update([0u8]);
        }
        hex::encode(&h.finalize()[..16])
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// A finished scope's results, if this journal has them.
    pub fn get(&self, key: &str) -> Option<ScopeResult> {
        if !self.reuse {
            return None;
        }
        let text = std::fs::read(self.path(key)).ok()?;
        let r: ScopeResult = serde_json::from_slice(&text).ok()?;
        (r.version == JOURNAL_VERSION).then_some(r)
    }

    /// Record a finished scope: whole or not at all (temp file, then rename). Best effort:
    /// a journal that cannot be written only costs the work again after a crash. Not
    /// synced: a killed process loses nothing the kernel already has, and an entry lost
    /// to a power cut is computed again.
    pub fn put(&self, key: &str, r: &ScopeResult) {
        let _ = (|| -> std::io::Result<()> {
            std::fs::create_dir_all(&self.dir)?;
            let tmp = self.dir.join(format!(".{key}.tmp.{}", std::process::id()));
            std::fs::write(&tmp, serde_json::to_vec(r).map_err(std::io::Error::other)?)?;
            std::fs::rename(&tmp, self.path(key))
        })();
    }

    /// Remove the journal once the output it was for is complete.
    pub fn remove(&self) -> std::io::Result<()> {
        match std::fs::remove_dir_all(&self.dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }

    /// Entries present now.
    pub fn entries(&self) -> usize {
        std::fs::read_dir(&self.dir)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .count()
            })
            .unwrap_or(0)
    }
}

/// This build of the tool: its version and its executable's size and modification time,
/// so a rebuilt binary (new isolation code) never reuses an old binary's results.
fn build_identity() -> String {
    let exe = std::env::current_exe()
        .and_then(std::fs::metadata)
        .map(|m| {
            let t = m
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| d.as_nanos());
            format!("{}:{t}", m.len())
        })
        .unwrap_or_default();
    format!("{} {exe}", env!("CARGO_PKG_VERSION"))
}

/// A digest of one file's text, for scope keys (each file is hashed once per run).
pub fn file_digest(text: &str) -> String {
    hex::encode(&Sha256::digest(text.as_bytes())[..16])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_round_trip_and_bad_entries_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::beside(&dir.path().join("units.jsonl"));
        assert_eq!(j.dir(), dir.path().join("units.jsonl.journal"));
        let k = j.key(&["scope", "a"]);
        assert_ne!(k, j.key(&["scope", "b"]));
        // Parts are separated: ("ab", "") and ("a", "b") are different scopes.
        assert_ne!(j.key(&["ab", ""]), j.key(&["a", "b"]));
        assert!(j.get(&k).is_none());
        let mut r = ScopeResult::new();
        r.kernel_files = 3;
        r.parse_failed.push(Skipped {
            path: "a/b.cu".into(),
            reason: "parse_failed".into(),
            message: "m".into(),
        });
        j.put(&k, &r);
        assert_eq!(j.entries(), 1);
        assert_eq!(j.get(&k), Some(r.clone()));
        assert!(j.clone().write_only().get(&k).is_none());
        // A damaged entry is computed again, never trusted or fatal.
        std::fs::write(j.path(&k), b"{\"version\":1,\"units\":[").unwrap();
        assert!(j.get(&k).is_none());
        // An entry of another journal version is not reused.
        let mut old = serde_json::to_value(&r).unwrap();
        old["version"] = 0.into();
        std::fs::write(j.path(&k), old.to_string()).unwrap();
        assert!(j.get(&k).is_none());
        j.remove().unwrap();
        assert!(!j.dir().exists());
        j.remove().unwrap();
    }
}
