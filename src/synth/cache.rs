//! The content-addressed LLM cache and the run journal.
//!
//! Cache: one JSON file per request, named by the SHA-256 of the request body (model,
//! messages, parameters), under `DIR/<first two hex digits>/<key>.json`, written
//! atomically. Only successful answers are stored, so a failed request is retried on
//! the next run, and a rerun of a finished run sends nothing. Headers (and so the API
//! key) are never part of an entry.
//!
//! Journal: each finished pair is appended as one line and flushed, so a killed run
//! resumes without redoing checks or compiles.

use super::client::{ChatAnswer, ChatRequest};
use crate::jsonl::write_atomic;
use crate::record::Pair;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

pub const CACHE_VERSION: u32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum CacheError {
    #[error(transparent)]
    Io(#[from] crate::path_io::PathIo),
    #[error(transparent)]
    Write(#[from] crate::jsonl::JsonlError),
}

/// One cached exchange (schemas/llm-cache.schema.json).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CacheEntry {
    pub version: u32,
    pub key: String,
    pub request: ChatRequest,
    pub response: ChatAnswer,
}

#[derive(Debug, Clone)]
pub struct Cache {
    dir: PathBuf,
}

/// The cache key of a request: SHA-256 over a version tag and the canonical JSON body.
pub fn key(req: &ChatRequest) -> String {
    let mut h = Sha256::new();
    h.update(format!("kernelpair-llm-cache-v{CACHE_VERSION}\0").as_bytes());
    h.update(serde_json::to_vec(req).expect("requests serialize"));
    hex::encode(h.finalize())
}

impl Cache {
    pub fn new(dir: impl Into<PathBuf>) -> Cache {
        Cache { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_of(&self, key: &str) -> PathBuf {
        self.dir.join(&key[..2]).join(format!("{key}.json"))
    }

    /// The cached answer, if a readable entry for exactly this request exists. A corrupt
    /// entry counts as a miss (and is overwritten by the next answer).
    pub fn get(&self, key: &str, req: &ChatRequest) -> Option<ChatAnswer> {
        let text = std::fs::read_to_string(self.path_of(key)).ok()?;
        let e: CacheEntry = match serde_json::from_str(&text) {
            Ok(e) => e,
            Err(err) => {
                tracing::warn!("ignoring unreadable cache entry {key}: {err}");
                return None;
            }
        };
        (e.version == CACHE_VERSION && e.key == key && &e.request == req).then_some(e.response)
    }

    pub fn put(&self, key: &str, req: &ChatRequest, answer: &ChatAnswer) -> Result<(), CacheError> {
        let entry = CacheEntry {
            version: CACHE_VERSION,
            key: key.to_string(),
            request: req.clone(),
            response: answer.clone(),
        };
        write_atomic(&self.path_of(key), |w| {
            serde_json::to_writer_pretty(&mut *w, &entry)?;
            w.write_all(b"\n")
        })?;
        Ok(())
    }
}

#[derive(Serialize, Deserialize)]
struct JournalLine {
    /// Content hash of the input pair (see `journal_key` in the stage): what a rerun looks
    /// pairs up by. (Not a pair id: `pending_id` in journals of record version 2.)
    #[serde(alias = "pending_id")]
    input_key: String,
    /// Settings that change outcomes; an entry from other settings is not reused.
    fingerprint: String,
    pair: Pair,
}

/// Append-only record of finished pairs.
pub struct Journal {
    path: PathBuf,
    file: Mutex<File>,
    fingerprint: String,
}

impl Journal {
    /// Open (creating) the journal and return the finished pairs it holds for these
    /// settings. A torn last line from a killed run is ignored.
    pub fn open(
        path: &Path,
        fingerprint: &str,
    ) -> Result<(Journal, HashMap<String, Pair>), CacheError> {
        let io = |source| CacheError::Io(crate::path_io::PathIo::new(path.to_path_buf(), source));
        let mut done = HashMap::new();
        if path.exists() {
            let f = File::open(path).map_err(io)?;
            for line in BufReader::new(f).lines() {
                let line = line.map_err(io)?;
                match serde_json::from_str::<JournalLine>(&line) {
                    Ok(j) if j.fingerprint == fingerprint => {
                        done.insert(j.input_key, j.pair);
                    }
                    Ok(_) => {}
                    Err(_) if line.trim().is_empty() => {}
                    Err(e) => {
                        tracing::warn!("{}: skipping a torn journal line: {e}", path.display())
                    }
                }
            }
        }
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(io)?;
        // A torn line from a kill has no newline: start on a fresh line so the next entry parses.
        if std::fs::metadata(path)
            .map(|m| m.len() > 0)
            .unwrap_or(false)
            && !ends_with_newline(path)
        {
            file.write_all(b"\n").map_err(io)?;
        }
        Ok((
            Journal {
                path: path.to_path_buf(),
                file: Mutex::new(file),
                fingerprint: fingerprint.to_string(),
            },
            done,
        ))
    }

    pub fn record(&self, input_key: &str, pair: &Pair) -> Result<(), CacheError> {
        let mut line = serde_json::to_vec(&JournalLine {
            input_key: input_key.to_string(),
            fingerprint: self.fingerprint.clone(),
            pair: pair.clone(),
        })
        .expect("pairs serialize");
        line.push(b'\n');
        let mut f = self.file.lock().unwrap_or_else(|e| e.into_inner());
        f.write_all(&line)
            .and_then(|_| f.flush())
            .map_err(|source| {
                CacheError::Io(crate::path_io::PathIo::new(self.path.clone(), source))
            })
    }
}

fn ends_with_newline(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = File::open(path) else {
        return true;
    };
    let mut b = [0u8; 1];
    f.seek(SeekFrom::End(-1)).is_ok() && f.read_exact(&mut b).is_ok() && b[0] == b'\n'
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::client::Message;

    fn req(content: &str) -> ChatRequest {
        ChatRequest {
            model: "m".into(),
            messages: vec![Message::new("user", content)],
            temperature: 0.2,
            max_tokens: 100,
        }
    }

    #[test]
    fn key_covers_model_messages_and_parameters() {
        let a = req("x");
        assert_eq!(key(&a), key(&req("x")));
        assert_ne!(key(&a), key(&req("y")));
        let mut b = a.clone();
        b.temperature = 0.3;
        assert_ne!(key(&a), key(&b));
        let mut c = a.clone();
        c.model = "n".into();
        assert_ne!(key(&a), key(&c));
        assert_eq!(key(&a).len(), 64);
    }

    #[test]
    fn put_get_and_corruption_is_a_miss() {
        let dir = tempfile::tempdir().unwrap();
        let cache = Cache::new(dir.path());
        let r = req("x");
        let k = key(&r);
        assert!(cache.get(&k, &r).is_none());
        let ans = ChatAnswer {
            content: "```cuda\n```".into(),
            usage: Default::default(),
            finish_reason: Some("stop".into()),
        };
        cache.put(&k, &r, &ans).unwrap();
        assert_eq!(cache.get(&k, &r), Some(ans));
        std::fs::write(cache.path_of(&k), "{torn").unwrap();
        assert!(cache.get(&k, &r).is_none());
    }
}
