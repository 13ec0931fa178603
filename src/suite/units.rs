//! From read files to kernel units: index every file of a scope once (in parallel),
//! isolate each kernel within its scope, and attach launch sites and provenance.

use super::desc::ScopeKey;
use super::journal::{self, Journal, JournalStats, ScopeResult};
use super::provenance::Licences;
use super::walk::SourceFile;
use crate::cuda::{self, FileIndex, Scope};
use crate::record::{KernelUnit, LaunchSite, Provenance, SkipReason, Skipped, UnitPlace};
use rayon::prelude::*;
use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

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
///
/// Scopes are worked on in parallel, each as soon as a thread is free: its files are
/// indexed (each file once per run, however many scopes see it), its kernels isolated in
/// parallel, and the scope's results go to the `journal` at once, so a killed run keeps
/// every finished scope; a scope the journal already holds is not computed again.
/// `scope_done(kernels)` is called once per scope (progress).
pub fn isolate_all(
    ctx: &UnitContext,
    sources: &[SourceFile],
    scopes: &[ScopeFiles],
    journal: Option<&Journal>,
    stats: &JournalStats,
    scope_done: &(dyn Fn(usize) + Sync),
) -> Isolated {
    // Parse every file once, when a scope first needs it; a shared file's index is cloned
    // (an `Arc`) into each scope using it. A parser fault on one file (a panic) becomes a
    // record naming it; the rest goes on.
    let indexed: Vec<OnceLock<Result<FileIndex, Skipped>>> =
        sources.iter().map(|_| OnceLock::new()).collect();
    let index = |i: usize| -> &Result<FileIndex, Skipped> {
        indexed[i].get_or_init(|| {
            let f = &sources[i];
            std::panic::catch_unwind(|| cuda::index_file(&f.path, &f.text)).map_err(|p| Skipped {
                path: f.path.clone(),
                reason: SkipReason::ParseFailed,
                message: format!("the CUDA front end failed on this file: {}", panic_text(&p)),
            })
        })
    };
    let digests: Vec<OnceLock<String>> = sources.iter().map(|_| OnceLock::new()).collect();
    let digest = |i: usize| digests[i].get_or_init(|| journal::file_digest(&sources[i].text));
    let open = journal.map(|j| (j, j.open()));
    let results: Vec<ScopeResult> = scopes
        .par_iter()
        .map(|s| {
            let key = open
                .as_ref()
                .map(|(j, o)| (o, scope_key(j, ctx, s, sources, &digest)));
            if let Some((j, k)) = &key {
                if let Some(mut r) = j.get(k) {
                    // Provenance is read from the tree now (a LICENSE file may have
                    // changed without touching the scope's sources).
                    for u in &mut r.units {
                        let kernel_files = s.members.iter().chain(&s.kernel_reached);
                        if let Some(f) = kernel_files
                            .map(|&i| &sources[i])
                            .find(|f| f.path == u.path)
                        {
                            u.provenance = provenance(ctx, f);
                        }
                    }
                    stats.reused.fetch_add(1, Ordering::Relaxed);
                    scope_done(r.units.len());
                    return r;
                }
            }
            let r = isolate_scope(ctx, s, sources, &index);
            if let Some((j, k)) = &key {
                j.put(k, &r);
                stats.written.fetch_add(1, Ordering::Relaxed);
            }
            scope_done(r.units.len());
            r
        })
        .collect();
    let mut units = Vec::new();
    let mut parse_failed: BTreeMap<String, Skipped> = BTreeMap::new();
    let mut isolation_failed = Vec::new();
    let mut kernel_files = BTreeMap::new();
    for (s, r) in scopes.iter().zip(results) {
        units.extend(r.units);
        isolation_failed.extend(r.isolation_failed);
        for p in r.parse_failed {
            parse_failed.entry(p.path.clone()).or_insert(p);
        }
        *kernel_files.entry(s.key.clone()).or_insert(0) += r.kernel_files;
    }
    let mut skipped: Vec<Skipped> = parse_failed.into_values().collect();
    skipped.extend(isolation_failed);
    units.sort_by(|a, b| (&a.path, a.line, &a.kernel).cmp(&(&b.path, b.line, &b.kernel)));
    Isolated {
        units,
        skipped,
        kernel_files,
    }
}

/// Everything a scope's results depend on, as a journal key.
fn scope_key<'a>(
    j: &Journal,
    ctx: &UnitContext,
    s: &ScopeFiles,
    sources: &'a [SourceFile],
    digest: &(dyn Fn(usize) -> &'a String + Sync),
) -> String {
    let mut parts: Vec<String> = vec![
        ctx.suite.to_string(),
        s.key.benchmark.clone(),
        s.key.variant.clone(),
        s.key.dir.clone(),
        s.include_dirs.join("\n"),
    ];
    let kernel = s
        .members
        .iter()
        .zip(&s.kernel_member)
        .map(|(&i, &k)| (i, if k { "member kernel" } else { "member" }));
    let shared = s.shared.iter().map(|&i| (i, "shared"));
    let reached = s.kernel_reached.iter().map(|&i| (i, "reached kernel"));
    for (i, role) in kernel.chain(shared).chain(reached) {
        let f = &sources[i];
        parts.push(format!(
            "{role} {} {} {}",
            f.path,
            f.decoded_from.unwrap_or("utf-8"),
            digest(i)
        ));
    }
    let refs: Vec<&str> = parts.iter().map(String::as_str).collect();
    j.key(&refs)
}

/// Index a scope's files and isolate each kernel of its kernel files.
fn isolate_scope<'a>(
    ctx: &UnitContext,
    s: &ScopeFiles,
    sources: &[SourceFile],
    index: &(dyn Fn(usize) -> &'a Result<FileIndex, Skipped> + Sync),
) -> ScopeResult {
    let files: Vec<usize> = s.members.iter().chain(&s.shared).copied().collect();
    files.par_iter().for_each(|&i| {
        index(i);
    });
    let mut r = ScopeResult::new();
    let mut map: BTreeMap<String, FileIndex> = BTreeMap::new();
    for &i in &files {
        match index(i) {
            Ok(idx) => {
                map.insert(idx.path().to_string(), idx.clone());
            }
            Err(skip) => r.parse_failed.push(skip.clone()),
        }
    }
    // One task per kernel of a kernel file inside its own scope (or of a header outside
    // every scope, in the first scope reaching it).
    let mut tasks: Vec<(usize, usize)> = Vec::new();
    let kernel_files_of = s
        .members
        .iter()
        .zip(&s.kernel_member)
        .filter(|(_, k)| **k)
        .map(|(f, _)| f)
        .chain(&s.kernel_reached);
    for &fi in kernel_files_of {
        let path = &sources[fi].path;
        let count = map.get(path).map(|i| i.kernels().len()).unwrap_or(0);
        if count > 0 || path.ends_with(".cu") {
            r.kernel_files += 1;
        }
        tasks.extend((0..count).map(|k| (fi, k)));
    }
    let results: Vec<Result<KernelUnit, Skipped>> = tasks
        .par_iter()
        .map(|&(fi, k)| {
            std::panic::catch_unwind(|| make_unit(ctx, s, &map, &sources[fi], k)).unwrap_or_else(
                |p| {
                    Err(Skipped {
                        path: sources[fi].path.clone(),
                        reason: SkipReason::IsolationFailed,
                        message: format!("kernel #{k}: isolation failed: {}", panic_text(&p)),
                    })
                },
            )
        })
        .collect();
    for res in results {
        match res {
            Ok(u) => r.units.push(u),
            Err(skip) => r.isolation_failed.push(skip),
        }
    }
    r
}

fn provenance(ctx: &UnitContext, file: &SourceFile) -> Provenance {
    Provenance {
        commit: ctx.commit.clone(),
        licence: ctx.licences.for_file(&file.path, &file.text),
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
        reason: SkipReason::IsolationFailed,
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
    unit.provenance = provenance(ctx, file);
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
