//! The extraction journal: each benchmark scope's isolation results, recorded as soon as
//! the scope is done, so a killed run (`kill -9`, a crash, a lost machine) keeps its
//! work and the rerun reuses it.
//!
//! `extract -o OUT` keeps the journal in the file `OUT.journal`: one JSON line per finished
//! scope, appended with a single write, holding a content key over everything the scope's
//! results depend on (this build of the tool, the suite, the scope, its include folders,
//! and the path, encoding and text of every file it can see) and the results. A line cut
//! short by a kill, or damaged in any way, does not parse and is computed again. One file
//! appended to, rather than a file per scope: on a tree of 1,000 small programs, creating
//! and renaming a file per scope cost more than the extraction itself. Once OUT has been
//! written (atomically), the journal is removed: only an interrupted run leaves one.

use crate::record::{KernelUnit, Skipped};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicUsize;
use std::sync::Mutex;

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

/// One line of the journal.
#[derive(Serialize, Deserialize)]
struct Entry {
    key: String,
    result: ScopeResult,
}

/// Where a run's journal is, and whether entries already in it may be reused.
#[derive(Debug, Clone)]
pub struct Journal {
    path: PathBuf,
    reuse: bool,
    build: String,
}

/// How a run used its journal, for the end-of-run report.
#[derive(Debug, Default)]
pub struct JournalStats {
    /// Scopes whose results came from the journal.
    pub reused: AtomicUsize,
    /// Scopes computed and recorded in the journal.
    pub written: AtomicUsize,
}

impl Journal {
    /// The journal of output file `out`: the file `OUT.journal` beside it.
    pub fn beside(out: &Path) -> Journal {
        let mut path = out.as_os_str().to_owned();
        path.push(".journal");
        Journal::at(PathBuf::from(path))
    }

    pub fn at(path: PathBuf) -> Journal {
        Journal {
            path,
            reuse: true,
            build: build_identity(),
        }
    }

    /// Record entries but never read old ones (`--no-cache`).
    pub fn write_only(mut self) -> Journal {
        self.reuse = false;
        self
    }

    pub fn path(&self) -> &Path {
        &self.path
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

    /// Open for one run: read the entries already there (when reuse is allowed).
    pub fn open(&self) -> OpenJournal {
        let mut old = HashMap::new();
        if self.reuse {
            if let Ok(text) = std::fs::read(&self.path) {
                for line in text.split(|&b| b == b'\n') {
                    if let Ok(e) = serde_json::from_slice::<Entry>(line) {
                        if e.result.version == JOURNAL_VERSION {
                            old.insert(e.key, e.result);
                        }
                    }
                }
            }
        }
        OpenJournal {
            path: self.path.clone(),
            old: Mutex::new(old),
            file: Mutex::new(None),
        }
    }

    /// Remove the journal once the output it was for is complete.
    pub fn remove(&self) -> std::io::Result<()> {
        match std::fs::remove_file(&self.path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            r => r,
        }
    }
}

/// A journal in use by one run.
pub struct OpenJournal {
    path: PathBuf,
    old: Mutex<HashMap<String, ScopeResult>>,
    /// Opened for appending on the first entry.
    file: Mutex<Option<std::fs::File>>,
}

impl OpenJournal {
    /// A finished scope's results, if the journal has them.
    pub fn get(&self, key: &str) -> Option<ScopeResult> {
        self.old.lock().ok()?.remove(key)
    }

    /// Record a finished scope: one line, one write. Best effort: a journal that cannot
    /// be written only costs the work again after a crash. Not synced: a killed process
    /// loses nothing the kernel already has, and a line lost to a power cut is computed
    /// again.
    pub fn put(&self, key: &str, r: &ScopeResult) {
        let Ok(mut line) = serde_json::to_vec(&Entry {
            key: key.to_string(),
            result: r.clone(),
        }) else {
            return;
        };
        line.push(b'\n');
        let Ok(mut f) = self.file.lock() else { return };
        if f.is_none() {
            *f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)
                .ok();
        }
        if let Some(f) = f.as_mut() {
            let _ = f.write_all(&line);
        }
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
    fn entries_round_trip_and_bad_lines_are_misses() {
        let dir = tempfile::tempdir().unwrap();
        let j = Journal::beside(&dir.path().join("units.jsonl"));
        assert_eq!(j.path(), dir.path().join("units.jsonl.journal"));
        let k = j.key(&["scope", "a"]);
        assert_ne!(k, j.key(&["scope", "b"]));
        // Parts are separated: ("ab", "") and ("a", "b") are different scopes.
        assert_ne!(j.key(&["ab", ""]), j.key(&["a", "b"]));
        assert!(j.open().get(&k).is_none());
        let mut r = ScopeResult::new();
        r.kernel_files = 3;
        r.parse_failed.push(Skipped {
            path: "a/b.cu".into(),
            reason: crate::record::SkipReason::ParseFailed,
            message: "m".into(),
        });
        let k2 = j.key(&["scope", "c"]);
        {
            let open = j.open();
            open.put(&k, &r);
            open.put(&k2, &ScopeResult::new());
        }
        let text = std::fs::read_to_string(j.path()).unwrap();
        assert_eq!(text.lines().count(), 2, "one line per scope");
        assert_eq!(j.open().get(&k), Some(r.clone()));
        assert!(j.clone().write_only().open().get(&k).is_none());
        // A line cut short (a kill in the middle of a write) or damaged is computed
        // again; the lines around it still count.
        let first = text.lines().next().unwrap();
        let cut = format!("{}\n{}", &first[..first.len() / 2], text);
        std::fs::write(j.path(), cut).unwrap();
        assert_eq!(j.open().get(&k), Some(r.clone()));
        std::fs::write(
            j.path(),
            format!("{}\n{{\"key\":", text.lines().nth(1).unwrap()),
        )
        .unwrap();
        assert!(j.open().get(&k).is_none());
        assert!(j.open().get(&k2).is_some());
        // An entry of another journal version is not reused.
        let mut old: serde_json::Value = serde_json::from_str(first).unwrap();
        old["result"]["version"] = 0.into();
        std::fs::write(j.path(), format!("{old}\n")).unwrap();
        assert!(j.open().get(&k).is_none());
        j.remove().unwrap();
        assert!(!j.path().exists());
        j.remove().unwrap();
    }
}
