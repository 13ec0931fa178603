//! Reading and writing record files: JSONL with atomic replacement, so a crash never
//! leaves a half-written output behind.

use crate::record::upgrade::{self, LineError};
use crate::record::{Line, Record, RECORD_VERSION};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum JsonlError {
    #[error(transparent)]
    Io(#[from] crate::path_io::PathIo),
    #[error("{path}:{line}: not a kernelpair record: {message}")]
    Parse {
        path: PathBuf,
        line: usize,
        message: String,
    },
    /// An older record version that cannot be converted (the message names the version).
    #[error("{path}:{line}: {message}")]
    Old {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{path}:{line}: record version {found} is newer than this tool understands ({RECORD_VERSION})")]
    Version {
        path: PathBuf,
        line: usize,
        found: u32,
    },
}

/// Read every record of a JSONL file (blank lines are skipped).
pub fn read_records(path: &Path) -> Result<Vec<Record>, JsonlError> {
    let f = File::open(path).map_err(|source| {
        JsonlError::Io(crate::path_io::PathIo::new(path.to_path_buf(), source))
    })?;
    let mut out = Vec::new();
    for (i, line) in BufReader::new(f).lines().enumerate() {
        let line = line.map_err(|source| {
            JsonlError::Io(crate::path_io::PathIo::new(path.to_path_buf(), source))
        })?;
        if line.trim().is_empty() {
            continue;
        }
        let parsed = upgrade::parse_line(&line).map_err(|e| match e {
            LineError::Newer(found) => JsonlError::Version {
                path: path.to_path_buf(),
                line: i + 1,
                found,
            },
            LineError::Parse(message) => JsonlError::Parse {
                path: path.to_path_buf(),
                line: i + 1,
                message,
            },
            e @ LineError::Old { .. } => JsonlError::Old {
                path: path.to_path_buf(),
                line: i + 1,
                message: e.to_string(),
            },
        })?;
        out.push(parsed.record);
    }
    Ok(out)
}

/// Write records as JSONL, atomically (temp file in the same folder, fsync, rename).
pub fn write_records(path: &Path, records: &[Record]) -> Result<(), JsonlError> {
    write_atomic(path, |w| {
        for r in records {
            serde_json::to_writer(&mut *w, &Line::new(r.clone()))?;
            w.write_all(b"\n")?;
        }
        Ok(())
    })
}

/// Write any file atomically: `fill` writes into a buffered temp file which replaces
/// `path` only once it is complete and synced.
pub fn write_atomic<F>(path: &Path, fill: F) -> Result<(), JsonlError>
where
    F: FnOnce(&mut BufWriter<File>) -> std::io::Result<()>,
{
    let io = |source| JsonlError::Io(crate::path_io::PathIo::new(path.to_path_buf(), source));
    // A device or pipe (`-o /dev/null`, `-o /dev/stdout`, a FIFO) is written in place:
    // renaming a temp file over it would replace the device node with a regular file.
    if std::fs::metadata(path).is_ok_and(|m| !m.is_file() && !m.is_dir()) {
        let result = (|| {
            let mut w = BufWriter::new(std::fs::OpenOptions::new().write(true).open(path)?);
            fill(&mut w)?;
            w.flush()
        })();
        return result.map_err(io);
    }
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let tmp = tmp_path(path);
    let result = (|| {
        let f = File::create(&tmp)?;
        let mut w = BufWriter::new(f);
        fill(&mut w)?;
        w.flush()?;
        w.get_ref().sync_all()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result.map_err(io)
}

fn tmp_path(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "out".into());
    path.with_file_name(format!(".{name}.tmp.{}", std::process::id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Skipped;

    /// Regression: `-o /dev/null` once renamed a temp file over the device node.
    /// Checked on a FIFO in a temp dir, so a regression cannot break the machine.
    #[cfg(unix)]
    #[test]
    fn writing_to_a_pipe_keeps_the_pipe() {
        use std::os::unix::fs::FileTypeExt;
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("pipe");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if !made.is_ok_and(|s| s.success()) {
            return; // no mkfifo here
        }
        let reader = {
            let fifo = fifo.clone();
            std::thread::spawn(move || std::fs::read_to_string(fifo).unwrap())
        };
        let recs = vec![Record::Skipped(Skipped {
            path: "a.cu".into(),
            reason: crate::record::SkipReason::Binary,
            message: "NUL byte".into(),
        })];
        write_records(&fifo, &recs).unwrap();
        let got = reader.join().unwrap();
        assert!(got.contains(r#""type":"skipped""#), "{got}");
        assert!(std::fs::metadata(&fifo).unwrap().file_type().is_fifo());
    }

    #[test]
    fn round_trip_and_errors_name_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("sub/out.jsonl");
        let recs = vec![Record::Skipped(Skipped {
            path: "a.cu".into(),
            reason: crate::record::SkipReason::Binary,
            message: "NUL byte".into(),
        })];
        write_records(&p, &recs).unwrap();
        assert_eq!(read_records(&p).unwrap(), recs);
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.starts_with(r#"{"version":3,"type":"skipped","data":{"#),
            "{text}"
        );
        std::fs::write(&p, format!("{text}\n{{oops\n")).unwrap();
        let err = read_records(&p).unwrap_err().to_string();
        assert!(
            err.contains("out.jsonl:3: not a kernelpair record: "),
            "{err}"
        );
        assert!(!err.contains("record: not a"), "said once: {err}");
        // An old pair line that cannot be converted names its line and version.
        let old = r#"{"version":2,"type":"pair","data":{"id":"x","origin":{"kind":"natural"}}}"#;
        std::fs::write(&p, format!("{text}{old}\n")).unwrap();
        let err = read_records(&p).unwrap_err().to_string();
        assert!(
            err.contains("out.jsonl:2: record version 2 cannot be converted to version 3"),
            "{err}"
        );
        // No temp files left behind.
        let left: Vec<_> = std::fs::read_dir(p.parent().unwrap()).unwrap().collect();
        assert_eq!(left.len(), 1);
    }
}
