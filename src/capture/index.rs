//! A capture folder read back: every launch manifest with the program it came from, and
//! the lookup of a kernel unit's captured launch.

use crate::gpu::capture::{BlobStore, Manifest};
use crate::record::KernelUnit;
use std::path::{Path, PathBuf};

/// One manifest and where it came from.
#[derive(Debug, Clone)]
pub struct Entry {
    pub program: String,
    pub path: PathBuf,
    /// The capture folder holding the manifest (its `blobs/` hold the contents).
    pub root: PathBuf,
    /// The suite whose units it serves: the subfolder's name in a folder of capture
    /// folders (`build` keeps one per suite under `<output>/captures/<suite>`); empty
    /// for a capture folder opened by itself (any unit).
    pub suite: String,
}

/// Every manifest of a capture folder.
#[derive(Debug, Clone, Default)]
pub struct CaptureIndex {
    pub root: PathBuf,
    /// (where it came from, the manifest), in path order.
    pub manifests: Vec<(Entry, Manifest)>,
    /// Manifests that could not be read, with the reason.
    pub unreadable: Vec<(PathBuf, String)>,
}

impl CaptureIndex {
    /// Read every manifest under `root/launches` (a missing folder is an empty index). A
    /// folder without `launches/` whose subfolders are capture folders (`build`'s
    /// `<output>/captures/<suite>/`) is read as all of them, each serving its suite's units.
    pub fn open(root: &Path) -> CaptureIndex {
        let mut idx = CaptureIndex {
            root: root.to_path_buf(),
            ..Default::default()
        };
        if root.join("launches").is_dir() || !root.is_dir() {
            idx.read(root, "");
            return idx;
        }
        let mut subs: Vec<PathBuf> = std::fs::read_dir(root)
            .into_iter()
            .flatten()
            .filter_map(|e| e.ok())
            .map(|e| e.path())
            .filter(|p| p.join("launches").is_dir())
            .collect();
        subs.sort();
        for sub in subs {
            let suite = sub
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            idx.read(&sub, &suite);
        }
        idx
    }

    fn read(&mut self, root: &Path, suite: &str) {
        let launches = root.join("launches");
        let mut files: Vec<PathBuf> = walkdir::WalkDir::new(&launches)
            .into_iter()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_type().is_file())
            .map(|e| e.into_path())
            .filter(|p| {
                let n = p.to_string_lossy();
                p.extension().is_some_and(|x| x == "toml")
                    && !n.ends_with(crate::gpu::capture::inject::COUNTS_FILE)
                    && !n.ends_with(crate::gpu::capture::inject::STOPPED_FILE)
            })
            .collect();
        files.sort();
        for f in files {
            let rel = f
                .strip_prefix(&launches)
                .unwrap_or(&f)
                .to_string_lossy()
                .into_owned();
            let program = match rel.rfind("/run-") {
                Some(i) if &rel[..i] == super::ROOT_DIR => ".".to_string(),
                Some(i) => rel[..i].to_string(),
                None => String::new(),
            };
            match std::fs::read_to_string(&f)
                .map_err(|e| e.to_string())
                .and_then(|t| toml::from_str::<Manifest>(&t).map_err(|e| e.to_string()))
            {
                Ok(mut m) => {
                    m.name_expression =
                        crate::gpu::capture::manifest::function_addresses(&m.name_expression);
                    self.manifests.push((
                        Entry {
                            program,
                            path: f,
                            root: root.to_path_buf(),
                            suite: suite.to_string(),
                        },
                        m,
                    ))
                }
                Err(e) => self.unreadable.push((f, e)),
            }
        }
    }

    pub fn blobs(&self) -> BlobStore {
        BlobStore::new(self.root.join("blobs"))
    }

    /// The captured launch of `unit`'s kernel: one of the program the unit's file belongs
    /// to (its folder, or its file for one program per file), snapshotted (not skipped)
    /// when any is, the earliest first.
    pub fn find(&self, unit: &KernelUnit) -> Option<&(Entry, Manifest)> {
        let path = unit.path.replace('\\', "/");
        let mut hits: Vec<&(Entry, Manifest)> = self
            .of_unit(unit)
            .filter(|(_, m)| m.kernel == unit.kernel)
            .collect();
        // A file program's own launches first, then snapshotted ones, then ones that changed
        // memory (a launch that rewrote what was there names its outputs only through its
        // body), then the earliest.
        hits.sort_by_key(|(e, m)| {
            let changed = m.allocs.iter().any(|a| a.changed());
            (
                e.program != path,
                m.skipped.is_some(),
                !changed,
                m.nth,
                m.seq,
            )
        });
        hits.first().copied()
    }

    /// The launches of the program `unit`'s file belongs to (its folder, or its file for one
    /// program per file), of any kernel.
    pub fn of_unit(&self, unit: &KernelUnit) -> impl Iterator<Item = &(Entry, Manifest)> {
        let path = unit.path.replace('\\', "/");
        let suite = unit.suite.clone();
        self.manifests.iter().filter(move |(e, _)| {
            (e.suite.is_empty() || e.suite == suite)
                && (e.program == path
                    || e.program == "."
                    || path.starts_with(&format!("{}/", e.program)))
        })
    }

    /// The kernels with at least one launch snapshotted (not skipped for a budget).
    pub fn kernels_captured(&self) -> std::collections::BTreeSet<&str> {
        self.manifests
            .iter()
            .filter(|m| m.1.skipped.is_none())
            .map(|m| m.1.kernel.as_str())
            .collect()
    }
}
