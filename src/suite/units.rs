//! From read files to kernel units: index every file of a scope once (in parallel),
//! isolate each kernel within its scope, and attach launch sites and provenance.

use super::desc::ScopeKey;
use super::provenance::Licences;
use super::walk::SourceFile;
use crate::cuda::{self, FileIndex, Scope};
use crate::record::{KernelUnit, LaunchSite, Provenance, Skipped, UnitPlace};
use rayon::prelude::*;
use std::collections::BTreeMap;

/// The files isolation may look at for one benchmark variant.
#[derive(Debug, Clone)]
pub struct ScopeFiles {
    pub key: ScopeKey,
    /// Indices (into the read sources) of the files inside the scope folder.
    pub members: Vec<usize>,
    /// Indices of files outside the scope folder that the members' `#include`s reach.
    pub shared: Vec<usize>,
    /// Which members are kernel files (same order as `members`).
    pub kernel_member: Vec<bool>,
    /// Reached files outside every scope whose kernels this scope yields (each such
    /// header's kernels come out once, in the first scope reaching it).
    pub kernel_reached: Vec<usize>,
    /// `-I` folders for `#include "x"` (root-relative), in search order.
    pub include_dirs: Vec<String>,
}

impl ScopeFiles {
    pub fn new(key: ScopeKey) -> ScopeFiles {
        ScopeFiles {
            key,
            members: vec![],
            shared: vec![],
            kernel_member: vec![],
            kernel_reached: vec![],
            include_dirs: vec![],
        }
    }
}

/// What isolation produced.
pub struct Isolated {
    pub units: Vec<KernelUnit>,
    pub skipped: Vec<Skipped>,
    /// Number of kernel files per scope key (for the summary).
    pub kernel_files: BTreeMap<ScopeKey, usize>,
}

/// Context shared by every unit of a run.
pub struct UnitContext<'a> {
    pub suite: &'a str,
    pub commit: Option<String>,
    pub licences: &'a Licences,
}

/// Index every file of every scope, then isolate every kernel of every kernel file.
/// `tick` is called once per kernel (progress).
pub fn isolate_all(
    ctx: &UnitContext,
    sources: &[SourceFile],
    scopes: &[ScopeFiles],
    total_kernels: &(dyn Fn(u64) + Sync),
    tick: &(dyn Fn() + Sync),
) -> Isolated {
    // Parse every file once; a shared file's index is cloned into each scope using it.
    let used: Vec<bool> = {
        let mut u = vec![false; sources.len()];
        for s in scopes {
            for &i in s.members.iter().chain(&s.shared) {
                u[i] = true;
            }
        }
        u
    };
    // A parser fault on one file (a panic) becomes a record naming it; the rest goes on.
    let indexed: Vec<Option<Result<FileIndex, Skipped>>> = sources
        .par_iter()
        .zip(used.par_iter())
        .map(|(f, &used)| {
            used.then(|| {
                std::panic::catch_unwind(|| cuda::index_file(&f.path, &f.text)).map_err(|p| {
                    Skipped {
                        path: f.path.clone(),
                        reason: "parse_failed".into(),
                        message: format!(
                            "the CUDA front end failed on this file: {}",
                            panic_text(&p)
                        ),
                    }
                })
            })
        })
        .collect();
    let mut parse_failures: Vec<Skipped> = Vec::new();
    let indexed: Vec<Option<FileIndex>> = indexed
        .into_iter()
        .map(|r| match r {
            Some(Ok(i)) => Some(i),
            Some(Err(s)) => {
                parse_failures.push(s);
                None
            }
            None => None,
        })
        .collect();
    let maps: Vec<BTreeMap<String, FileIndex>> = scopes
        .par_iter()
        .map(|s| {
            s.members
                .iter()
                .chain(&s.shared)
                .filter_map(|&i| indexed[i].as_ref())
                .map(|idx| (idx.path().to_string(), idx.clone()))
                .collect()
        })
        .collect();
    // One task per kernel of a kernel file inside its own scope (or of a header outside
    // every scope, in the first scope reaching it).
    let mut kernel_tasks: Vec<(usize, usize, usize)> = Vec::new();
    let mut kernel_files = BTreeMap::new();
    for (si, s) in scopes.iter().enumerate() {
        let mut n = 0;
        let kernel_files_of = s
            .members
            .iter()
            .zip(&s.kernel_member)
            .filter(|(_, k)| **k)
            .map(|(f, _)| f)
            .chain(&s.kernel_reached);
        for &fi in kernel_files_of {
            let path = &sources[fi].path;
            let count = maps[si].get(path).map(|i| i.kernels().len()).unwrap_or(0);
            if count > 0 || path.ends_with(".cu") {
                n += 1;
            }
            kernel_tasks.extend((0..count).map(|k| (si, fi, k)));
        }
        *kernel_files.entry(s.key.clone()).or_insert(0) += n;
    }
    total_kernels(kernel_tasks.len() as u64);
    let results: Vec<Result<KernelUnit, Skipped>> = kernel_tasks
        .par_iter()
        .map(|&(si, fi, k)| {
            let r = std::panic::catch_unwind(|| {
                make_unit(ctx, &scopes[si], &maps[si], &sources[fi], k)
            })
            .unwrap_or_else(|p| {
                Err(Skipped {
                    path: sources[fi].path.clone(),
                    reason: "isolation_failed".into(),
                    message: format!("kernel #{k}: isolation failed: {}", panic_text(&p)),
                })
            });
            tick();
            r
        })
        .collect();
    let mut units = Vec::new();
    let mut skipped = parse_failures;
    for r in results {
        match r {
            Ok(u) => units.push(u),
            Err(s) => skipped.push(s),
        }
    }
    units.sort_by(|a, b| (&a.path, a.line, &a.kernel).cmp(&(&b.path, b.line, &b.kernel)));
    Isolated {
        units,
        skipped,
        kernel_files,
    }
}

fn make_unit(
    ctx: &UnitContext,
    sf: &ScopeFiles,
    files: &BTreeMap<String, FileIndex>,
    file: &SourceFile,
    kernel_index: usize,
) -> Result<KernelUnit, Skipped> {
    let key = &sf.key;
    let scope = Scope {
        files,
        include_dirs: &sf.include_dirs,
    };
    let iso = cuda::isolate_at(&scope, &file.path, kernel_index).map_err(|e| Skipped {
        path: file.path.clone(),
        reason: "isolation_failed".into(),
        message: format!("kernel #{kernel_index}: {e}"),
    })?;
    let mut launch_sites: Vec<LaunchSite> = files
        .values()
        .flat_map(|f| f.launch_sites().iter())
        .filter(|l| l.kernel == iso.kernel)
        .cloned()
        .collect();
    launch_sites.sort_by(|a, b| (&a.path, a.line).cmp(&(&b.path, b.line)));
    let place = UnitPlace {
        suite: ctx.suite,
        benchmark: &key.benchmark,
        variant: &key.variant,
        path: &file.path,
    };
    let mut unit = KernelUnit::new(place, iso);
    unit.launch_sites = launch_sites;
    unit.provenance = Provenance {
        commit: ctx.commit.clone(),
        licence: ctx.licences.for_file(&file.path, &file.text),
    };
    if let Some(enc) = file.decoded_from {
        unit.diagnostics.push(crate::record::Diagnostic::new(
            crate::record::Level::Info,
            "decoded_non_utf8",
            format!("{} is not UTF-8; it was read as {enc}", file.path),
        ));
    }
    Ok(unit)
}

/// The message of a caught panic.
pub fn panic_text(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_string())
}

/// Whether two units are the same code: equal token streams after
/// `cuda::normalized_tokens` (the `identical` mark of a pair).
pub fn same_code(a: &KernelUnit, b: &KernelUnit) -> bool {
    cuda::normalized_tokens(&a.source) == cuda::normalized_tokens(&b.source)
}
