//! Walking a suite tree: every file path (for detection and classification), then the
//! contents of the files the description cares about, read in parallel. Anything that
//! cannot be used becomes a `Skipped` record; the walk always goes on.

use crate::record::{SkipReason, Skipped};
use rayon::prelude::*;
use std::path::Path;

/// A file of the suite, read and checked to be text.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Root-relative, `/`-separated.
    pub path: String,
    pub text: String,
    /// Set when the bytes were not UTF-8 and were decoded as this encoding instead
    /// (a Latin-1 `©` in a comment must not cost a kernel).
    pub decoded_from: Option<&'static str>,
}

pub use crate::path_io::decode;

/// What walking found.
#[derive(Debug, Default)]
pub struct Walked {
    /// Every regular file, root-relative, sorted.
    pub files: Vec<String>,
    /// Entries that could not be walked (symlink loops, unreadable folders).
    pub skipped: Vec<Skipped>,
}

/// List every file under `root`, following symlinks. Hidden folders below the root
/// (`.git`, `.hg`) are not entered: they hold history, not sources.
pub fn walk(root: &Path) -> Walked {
    let mut out = Walked::default();
    let it = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            e.depth() == 0
                || !(e.file_type().is_dir() && e.file_name().to_string_lossy().starts_with('.'))
        });
    for entry in it {
        match entry {
            Ok(e) if e.file_type().is_file() => out.files.push(rel(root, e.path())),
            Ok(_) => {}
            Err(err) => {
                let path = err.path().map(|p| rel(root, p)).unwrap_or_default();
                let skipped = if let Some(anc) = err.loop_ancestor() {
                    Skipped {
                        path,
                        reason: SkipReason::SymlinkLoop,
                        message: format!(
                            "symbolic link loops back to {}; not followed",
                            display_rel(root, anc)
                        ),
                    }
                } else {
                    let message = err
                        .io_error()
                        .map(|e| e.to_string())
                        .unwrap_or_else(|| err.to_string());
                    // A dangling symlink is a missing file, not an unreadable one.
                    let reason = match err.io_error().map(|e| e.kind()) {
                        Some(std::io::ErrorKind::NotFound) => SkipReason::DanglingSymlink,
                        _ => SkipReason::Unreadable,
                    };
                    Skipped {
                        path,
                        reason,
                        message,
                    }
                };
                out.skipped.push(skipped);
            }
        }
    }
    out.files.sort();
    out
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .to_string_lossy()
        .replace('\\', "/")
}

fn display_rel(root: &Path, p: &Path) -> String {
    let r = rel(root, p);
    if r.is_empty() {
        "the suite root".to_string()
    } else {
        r
    }
}

/// Read one file, refusing what is not usable source text.
pub fn read_source(root: &Path, rel_path: &str, max_size: u64) -> Result<SourceFile, Skipped> {
    let skip = |reason: SkipReason, message: String| Skipped {
        path: rel_path.to_string(),
        reason,
        message,
    };
    let abs = root.join(rel_path);
    let meta = std::fs::metadata(&abs).map_err(|e| skip(SkipReason::Unreadable, e.to_string()))?;
    if meta.len() > max_size {
        return Err(skip(
            SkipReason::TooLarge,
            format!(
                "{} bytes, over the limit of {max_size} bytes (--max-file-size)",
                meta.len()
            ),
        ));
    }
    let bytes = std::fs::read(&abs).map_err(|e| skip(SkipReason::Unreadable, e.to_string()))?;
    if let Some(pos) = bytes.iter().position(|&b| b == 0) {
        return Err(skip(
            SkipReason::Binary,
            format!("NUL byte at offset {pos}: not a source file"),
        ));
    }
    let (text, decoded_from) = decode(bytes);
    Ok(SourceFile {
        path: rel_path.to_string(),
        text,
        decoded_from,
    })
}

/// Read many files in parallel; results keep the order of `paths`.
pub fn read_all(root: &Path, paths: &[String], max_size: u64) -> Vec<Result<SourceFile, Skipped>> {
    paths
        .par_iter()
        .map(|p| read_source(root, p, max_size))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_lists_files_and_skips_hidden_history() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("a/b")).unwrap();
        std::fs::create_dir_all(r.join(".hg/store")).unwrap();
        std::fs::write(r.join("a/b/k.cu"), "x").unwrap();
        std::fs::write(r.join("a/z.h"), "x").unwrap();
        std::fs::write(r.join(".hg/store/k.cu"), "x").unwrap();
        let w = walk(r);
        assert_eq!(w.files, ["a/b/k.cu", "a/z.h"]);
        assert!(w.skipped.is_empty());
    }

    #[cfg(unix)]
    #[test]
    fn symlink_loop_is_skipped_and_named() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::create_dir_all(r.join("a")).unwrap();
        std::fs::write(r.join("a/k.cu"), "x").unwrap();
        std::os::unix::fs::symlink("..", r.join("a/loop")).unwrap();
        let w = walk(r);
        assert_eq!(w.files, ["a/k.cu"]);
        assert_eq!(w.skipped.len(), 1, "{:?}", w.skipped);
        assert_eq!(w.skipped[0].reason, SkipReason::SymlinkLoop);
        assert_eq!(w.skipped[0].path, "a/loop");
    }

    #[test]
    fn bad_files_are_refused_with_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        std::fs::write(r.join("ok.cu"), "__global__ void k() {}").unwrap();
        std::fs::write(r.join("bin.cu"), b"ab\0cd").unwrap();
        std::fs::write(r.join("latin1.cu"), b"// caf\xe9\n").unwrap();
        std::fs::write(r.join("big.cu"), "x".repeat(100)).unwrap();
        let got = |p: &str| read_source(r, p, 64).map_err(|s| s.reason);
        assert_eq!(got("ok.cu").unwrap().text, "__global__ void k() {}");
        assert_eq!(got("bin.cu").unwrap_err(), SkipReason::Binary);
        // Not UTF-8: decoded as Windows-1252, and the file says so.
        let latin = got("latin1.cu").unwrap();
        assert_eq!(latin.text, "// café\n");
        assert_eq!(latin.decoded_from, Some("windows-1252"));
        assert_eq!(got("ok.cu").unwrap().decoded_from, None);
        assert_eq!(got("big.cu").unwrap_err(), SkipReason::TooLarge);
        assert_eq!(got("missing.cu").unwrap_err(), SkipReason::Unreadable);
    }
}
