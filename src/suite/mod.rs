//! Walking benchmark suites (extractor descriptions in extractors/), pairing naive and
//! optimized kernels, provenance, and the `extract` command.
//!
//! The flow: [`walk::walk`] lists the tree → a [`SuiteDesc`] (given or detected) says
//! which files matter and which scope (benchmark variant folder) each belongs to →
//! files are read in parallel ([`walk::read_all`]) → [`units::isolate_all`] indexes and
//! isolates every kernel with `crate::cuda` → [`compile::compile_units`] checks each
//! unit with NVRTC → [`pairing::pair_benchmark`] pairs them → one JSONL file.

pub mod buildflags;
pub mod compile;
pub mod desc;
mod error;
pub mod journal;
pub mod pairing;
pub mod progression;
pub mod provenance;
pub mod summary;
pub mod units;
pub mod walk;

pub use desc::SuiteDesc;
pub use error::SuiteError;
pub use walk::SourceFile;

use crate::exit;
use crate::record::{KernelUnit, Pair, Record, Skipped, Unpaired};
use desc::ScopeKey;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Default `--max-file-size`: real suite sources are far smaller; larger files are
/// generated data or vendored blobs.
pub const DEFAULT_MAX_FILE_SIZE: u64 = 2 * 1024 * 1024;

#[derive(Debug, clap::Args)]
#[command(after_help = "\
Output: JSONL, one record per line ({\"version\":3,\"type\":…,\"data\":…}): every unit,
every pair (slow + fast units; Rodinia/generic kernels get an empty slow slot), every
unpaired kernel with the reason, and every skipped input with the reason. Sorted by
path and line; the same tree gives the same file. OUT is written whole (a temporary
file, then a rename). Each benchmark's results go to OUT.journal as soon as it is done:
after an interrupted run (kill -9, a crash) the rerun reuses them and gives the same
output; the journal is removed once OUT is written.

Exit codes:
  0  every file was extracted (an empty output for a tree without kernels is exit 3)
  1  fatal: the suite folder does not exist, a bad --extractor file, output not writable
  2  usage error
  3  partial: some inputs were skipped (binary, not UTF-8, too large, unreadable,
     symlink loop, isolation failure), the suite has no CUDA kernel files, or NVRTC
     is missing so nothing was compile-checked (use --no-compile to skip the check)")]
pub struct ExtractArgs {
    /// Root of the suite tree.
    pub suite_dir: PathBuf,
    /// Suite layout: parboil, rodinia, cuda-samples, llm-c, generic, or auto (detect from the tree).
    #[arg(long, default_value = "auto")]
    pub suite: String,
    /// A suite description TOML (see extractors/*.toml); overrides --suite.
    #[arg(long, value_name = "FILE")]
    pub extractor: Option<PathBuf>,
    /// Output JSONL file (`-` for stdout).
    #[arg(short, long, default_value = "units.jsonl")]
    pub output: PathBuf,
    /// GPU architecture for the NVRTC compile check.
    #[arg(long, default_value = crate::gpu::nvrtc::DEFAULT_ARCH)]
    pub arch: String,
    /// Skip the NVRTC compile check.
    #[arg(long)]
    pub no_compile: bool,
    /// Files larger than this many bytes are skipped.
    #[arg(long, default_value_t = DEFAULT_MAX_FILE_SIZE, value_name = "BYTES")]
    pub max_file_size: u64,
    /// Worker threads (default: all cores).
    #[arg(long, short = 'j')]
    pub jobs: Option<usize>,
    /// Folder of cached compile-check results (default: $KERNELPAIR_CACHE_DIR/compile-check
    /// or ~/.cache/kernelpair/compile-check).
    #[arg(long, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Compile every unit again instead of reusing cached compile-check results, and isolate
    /// every benchmark again instead of reusing the journal of an interrupted run.
    #[arg(long)]
    pub no_cache: bool,
    /// Keep only the records of shard i of n (0-based, a stable partition by record id).
    /// Extraction is cheap; the split matters for the stages after it.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<crate::dataset::Shard>,
}

/// The checked configuration of one extraction.
#[derive(Debug, Clone)]
pub struct ExtractConfig {
    pub root: PathBuf,
    /// `None`: detect from the tree.
    pub desc: Option<SuiteDesc>,
    pub arch: String,
    pub compile: bool,
    pub max_file_size: u64,
    pub jobs: Option<usize>,
    pub cache: compile::CheckCache,
    /// Show progress bars (stderr is a terminal).
    pub progress: bool,
    /// Where finished scopes are recorded as they finish (and reused from, after a killed
    /// run); `None`: no journal.
    pub journal: Option<journal::Journal>,
}

impl ExtractConfig {
    /// Defaults for a suite root (`suite`: parboil, rodinia, generic or auto; an
    /// `extractor` file overrides it): sm_90 compile check with the default cache,
    /// 2 MiB file limit, all cores, no progress bars.
    pub fn new(
        root: &Path,
        suite: &str,
        extractor: Option<&Path>,
    ) -> Result<ExtractConfig, SuiteError> {
        if !root.exists() {
            return Err(SuiteError::NoSuchDir(root.to_path_buf()));
        }
        if !root.is_dir() {
            return Err(SuiteError::NotADir(root.to_path_buf()));
        }
        let desc = match (extractor, suite) {
            (Some(p), _) => Some(SuiteDesc::load(p)?),
            (None, "auto") => None,
            (None, name) => Some(SuiteDesc::builtin(name)?),
        };
        Ok(ExtractConfig {
            root: root.to_path_buf(),
            desc,
            arch: crate::gpu::nvrtc::DEFAULT_ARCH.into(),
            compile: true,
            max_file_size: DEFAULT_MAX_FILE_SIZE,
            jobs: None,
            cache: compile::CheckCache::default_location(),
            progress: false,
            journal: None,
        })
    }

    pub fn from_args(a: &ExtractArgs) -> Result<ExtractConfig, SuiteError> {
        let mut c = ExtractConfig::new(&a.suite_dir, &a.suite, a.extractor.as_deref())?;
        c.arch = a.arch.clone();
        c.compile = !a.no_compile;
        c.max_file_size = a.max_file_size;
        c.jobs = a.jobs;
        c.cache = match (&a.cache_dir, a.no_cache) {
            (_, true) => compile::CheckCache::none(),
            (Some(d), false) => compile::CheckCache::at(d.clone()),
            (None, false) => compile::CheckCache::default_location(),
        };
        c.progress = true;
        // No journal beside `-` (stdout) or a device (`-o /dev/null`).
        let device = std::fs::metadata(&a.output).is_ok_and(|m| !m.is_file());
        if a.output != Path::new("-") && !device {
            let j = journal::Journal::beside(&a.output);
            c.journal = Some(if a.no_cache { j.write_only() } else { j });
        }
        Ok(c)
    }
}

/// One call for other stages (`build`): extract a suite with default limits.
/// `records()` of the result is what `extract -o` writes; `exit_code()` says whether
/// anything was skipped.
pub fn extract_suite(
    root: &Path,
    suite: &str,
    extractor: Option<&Path>,
    arch: &str,
    compile: bool,
) -> Result<Extraction, SuiteError> {
    let mut cfg = ExtractConfig::new(root, suite, extractor)?;
    cfg.arch = arch.to_string();
    cfg.compile = compile;
    // A long extraction (a build over large trees) says where it is.
    cfg.progress = true;
    extract(&cfg)
}

/// Everything one extraction produced.
#[derive(Debug, Default)]
pub struct Extraction {
    pub suite: String,
    pub units: Vec<KernelUnit>,
    pub pairs: Vec<Pair>,
    pub unpaired: Vec<Unpaired>,
    pub skipped: Vec<Skipped>,
    /// Warnings for stderr besides the skipped inputs, one line each (missing NVRTC, …).
    pub warnings: Vec<String>,
    /// NVRTC was wanted but missing.
    pub nvrtc_missing: bool,
    /// The tree had no kernel files at all.
    pub empty: bool,
    /// Kernel files per scope, for the summary.
    pub kernel_files: BTreeMap<ScopeKey, usize>,
    /// Skipped inputs per benchmark, for the summary.
    pub skipped_by_benchmark: BTreeMap<String, usize>,
    /// Scopes (benchmark variants) in the run, and how many came from the journal.
    pub scopes: usize,
    pub scopes_from_journal: usize,
}

impl Extraction {
    /// Records in output order: units, pairs, unpaired, skipped, each sorted by path and line.
    pub fn records(&self) -> Vec<Record> {
        let mut out: Vec<Record> = Vec::new();
        out.extend(
            self.units
                .iter()
                .cloned()
                .map(|u| Record::Unit(Box::new(u))),
        );
        out.extend(
            self.pairs
                .iter()
                .cloned()
                .map(|p| Record::Pair(Box::new(p))),
        );
        out.extend(self.unpaired.iter().cloned().map(Record::Unpaired));
        out.extend(self.skipped.iter().cloned().map(Record::Skipped));
        out
    }

    pub fn exit_code(&self) -> u8 {
        if self.skipped.is_empty() && !self.nvrtc_missing && !self.empty {
            exit::OK
        } else {
            exit::PARTIAL
        }
    }
}

/// Progress of one extraction phase when `show`: a bar on a terminal, else a plain line
/// every 10 s (`crate::progress`); nothing when not shown.
fn phase(show: bool, what: String, len: usize) -> Option<crate::progress::Progress> {
    show.then(|| crate::progress::Progress::new(&what, len))
}

/// Run an extraction (the library entry point of `kernelpair extract`).
pub fn extract(cfg: &ExtractConfig) -> Result<Extraction, SuiteError> {
    // Parsing, isolation and NVRTC recurse with the input's nesting depth: give every
    // worker a stack deep input cannot overflow (only touched pages cost memory).
    let mut b = rayon::ThreadPoolBuilder::new().stack_size(WORKER_STACK);
    if let Some(n) = cfg.jobs.filter(|&n| n > 0) {
        b = b.num_threads(n);
    }
    match b.build() {
        Ok(pool) => pool.install(|| extract_inner(cfg)),
        Err(_) => extract_inner(cfg),
    }
}

/// Stack of each extraction worker thread: 10,000-deep nesting parses and compiles.
pub const WORKER_STACK: usize = 512 << 20;

fn extract_inner(cfg: &ExtractConfig) -> Result<Extraction, SuiteError> {
    let root = cfg.root.as_path();
    let walked = walk::walk(root);
    let mut ex = Extraction {
        skipped: walked.skipped,
        ..Default::default()
    };
    let desc = match &cfg.desc {
        Some(d) => d.clone(),
        None => match desc::detect(&walked.files) {
            Ok(d) => d,
            Err(SuiteError::NotDetected) => SuiteDesc::builtin("generic")?,
            Err(e) => return Err(e),
        },
    };
    ex.suite = desc.name.clone();

    let desc = desc.with_tree(&walked.files);
    let (sources, scopes, skipped) = gather(root, &desc, &walked.files, cfg.max_file_size);
    ex.skipped.extend(skipped);
    if !scopes
        .iter()
        .any(|s| !s.kernel_member.is_empty() || !s.kernel_reached.is_empty())
    {
        ex.empty = true;
        ex.warnings.push(format!(
            "no CUDA kernel files found under {} for suite `{}` ({}); the output is empty",
            root.display(),
            desc.name,
            desc.origin
        ));
    }
    let used: std::collections::HashSet<usize> = scopes
        .iter()
        .flat_map(|s| s.members.iter().chain(&s.shared).copied())
        .collect();
    let decoded = sources
        .iter()
        .enumerate()
        .filter(|(i, f)| f.decoded_from.is_some() && used.contains(i));
    for (_, f) in decoded {
        ex.warnings.push(format!(
            "{} is not UTF-8; read it as {}",
            f.path,
            f.decoded_from.unwrap_or("")
        ));
    }

    let licences = provenance::Licences::new(root);
    let ctx = units::UnitContext {
        suite: &desc.name,
        commit: provenance::git_commit(root),
        licences: &licences,
    };
    let pb = phase(
        cfg.progress,
        format!("extract {}: isolating", desc.name),
        scopes.len(),
    );
    let kernels = std::sync::atomic::AtomicUsize::new(0);
    let stats = journal::JournalStats::default();
    let iso = units::isolate_all(
        &ctx,
        &sources,
        &scopes,
        cfg.journal.as_ref(),
        &stats,
        &|n| {
            let k = kernels.fetch_add(n, std::sync::atomic::Ordering::Relaxed) + n;
            if let Some(pb) = &pb {
                pb.inc(1, &format!("{k} kernels"));
            }
        },
    );
    if let Some(pb) = pb {
        pb.done();
    }
    ex.scopes = scopes.len();
    ex.scopes_from_journal = stats.reused.load(std::sync::atomic::Ordering::Relaxed);
    ex.units = iso.units;
    ex.skipped.extend(iso.skipped);
    ex.kernel_files = iso.kernel_files;
    // Each unit compiles with its program's flags (issue 26): read from the build files
    // after isolation, so the journal of isolated scopes stays as it was.
    let mut build = BTreeMap::new();
    for u in &mut ex.units {
        let flags = buildflags::flags_for(&cfg.root, &u.path, &mut build);
        u.build_flags = buildflags::for_unit(flags, &u.diagnostics);
    }

    if cfg.compile {
        let pb = phase(
            cfg.progress,
            format!("extract {}: NVRTC check", desc.name),
            ex.units.len(),
        );
        let tick = || {
            if let Some(pb) = &pb {
                pb.inc(1, "");
            }
        };
        match compile::compile_units(&mut ex.units, &cfg.arch, &cfg.cache, &tick) {
            Ok(()) => {}
            Err(e) => {
                ex.nvrtc_missing = true;
                ex.warnings
                    .push(format!("{e}; units are not compile-checked"));
            }
        }
        if let Some(pb) = pb {
            pb.done();
        }
    }

    let mut by_bench: BTreeMap<&str, Vec<&KernelUnit>> = BTreeMap::new();
    for u in &ex.units {
        by_bench.entry(u.benchmark.as_str()).or_default().push(u);
    }
    let mut pairs = Vec::new();
    let mut unpaired = Vec::new();
    for units in by_bench.values() {
        let p = pairing::pair_benchmark(&desc, units, &units::same_code);
        pairs.extend(p.pairs);
        unpaired.extend(p.unpaired);
    }
    // Versions: host launcher series launching several kernels (docs/pairing.md).
    if let Some(prog) = &desc.progression {
        let files = sources.iter().map(|s| (s.path.as_str(), s.text.as_str()));
        let v = pairing::pair_versions(prog, &ex.units, files, &units::same_code);
        pairs.retain(|p| !p.slow.is_pending() || !v.members.contains(&p.fast.id));
        pairs.extend(v.pairs);
        unpaired.extend(v.unpaired);
        // Sibling variants: one kernel in sibling folders or files (docs/pairing.md).
        let s = pairing::pair_siblings(prog, &ex.units, &units::same_code);
        pairs.retain(|p| !p.slow.is_pending() || !s.members.contains(&p.fast.id));
        pairs.extend(s.pairs);
        unpaired.extend(s.unpaired);
    }
    pairs.sort_by(|a, b| {
        (&a.fast.path, a.fast.line, &a.fast.kernel).cmp(&(
            &b.fast.path,
            b.fast.line,
            &b.fast.kernel,
        ))
    });
    unpaired.sort_by(|a, b| (&a.path, &a.kernel).cmp(&(&b.path, &b.kernel)));
    ex.pairs = pairs;
    ex.unpaired = unpaired;
    ex.skipped
        .sort_by(|a, b| (&a.path, a.reason.as_str()).cmp(&(&b.path, b.reason.as_str())));
    for s in &ex.skipped {
        let bench = desc
            .scope_of(&s.path)
            .map(|k| k.benchmark)
            .unwrap_or_else(|| "(outside benchmarks)".to_string());
        *ex.skipped_by_benchmark.entry(bench).or_insert(0) += 1;
    }
    Ok(ex)
}

/// `#include` targets of a text, quoted or angled (`#include <common.cu>` may name a
/// file of the tree), whatever `#if` they sit in: a cheap over-approximation of what a
/// compiler reads, used only to decide which files a scope can see.
fn include_targets(text: &str) -> Vec<&str> {
    static INCLUDE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r#"(?m)^[ \t]*#[ \t]*include[ \t]*[<"]([^">\n]+)[">]"#)
            .expect("static regex")
    });
    INCLUDE
        .captures_iter(text)
        .filter_map(|c| c.get(1).map(|m| m.as_str().trim()))
        .collect()
}

/// Read the tree's source files and work out every scope the way a compiler sees it:
/// the files of the scope folder plus every file their `#include`s reach (relative to the
/// including file, then through the description's include folders, then the scope
/// folder), transitively. A header is never found by name alone. Each file is read once
/// and shared by every scope that reaches it. Returns the readable files, the scopes in
/// key order, and the skipped inputs that matter (in a scope or reached by one).
fn gather(
    root: &Path,
    desc: &SuiteDesc,
    files: &[String],
    max_file_size: u64,
) -> (Vec<SourceFile>, Vec<units::ScopeFiles>, Vec<Skipped>) {
    use std::collections::{BTreeSet, HashMap, HashSet};
    let paths: Vec<String> = files
        .iter()
        .filter(|f| desc.role(f).is_some())
        .cloned()
        .collect();
    let read = walk::read_all(root, &paths, max_file_size);
    let mut sources: Vec<SourceFile> = Vec::new();
    let mut by_path: HashMap<String, usize> = HashMap::new();
    let mut failed: BTreeMap<String, Skipped> = BTreeMap::new();
    for (path, r) in paths.into_iter().zip(read) {
        match r {
            Ok(src) => {
                by_path.insert(path, sources.len());
                sources.push(src);
            }
            Err(skip) => {
                failed.insert(path, skip);
            }
        }
    }
    let includes: Vec<Vec<&str>> = {
        use rayon::prelude::*;
        sources
            .par_iter()
            .map(|s| include_targets(&s.text))
            .collect()
    };
    let mut scopes: BTreeMap<ScopeKey, units::ScopeFiles> = BTreeMap::new();
    let mut report: BTreeSet<String> = BTreeSet::new();
    let mut member_of_some: HashSet<usize> = HashSet::new();
    for (path, &i) in by_path.iter().collect::<BTreeMap<_, _>>() {
        let Some(key) = desc.scope_of(path) else {
            continue;
        };
        let kernel = desc.role(path).is_some_and(|r| r.kernel);
        let s = scopes
            .entry(key.clone())
            .or_insert_with(|| units::ScopeFiles::new(key));
        s.members.push(i);
        s.kernel_member.push(kernel);
        member_of_some.insert(i);
    }
    report.extend(
        failed
            .keys()
            .filter(|p| desc.scope_of(p).is_some())
            .cloned(),
    );
    let exists = |p: &str| by_path.contains_key(p) || failed.contains_key(p);
    let mut owned: HashSet<usize> = HashSet::new();
    let mut build_includes = BTreeMap::new();
    for s in scopes.values_mut() {
        prune_unincluded(desc, &sources, &includes, s);
        let mut dirs = desc.include_dirs_for(&s.key);
        // Where the program's build points `-I` (its Makefile's or CMakeLists.txt's).
        for &m in &s.members {
            let folder = sources[m].path.rsplit_once('/').map_or("", |(d, _)| d);
            for d in buildflags::include_dirs_for(root, folder, &mut build_includes) {
                if !dirs.contains(&d) {
                    dirs.push(d);
                }
            }
        }
        s.include_dirs = dirs.clone();
        let mut seen: HashSet<usize> = s.members.iter().copied().collect();
        let mut queue: Vec<usize> = s.members.clone();
        while let Some(i) = queue.pop() {
            for t in &includes[i] {
                let Some(p) = crate::cuda::resolve_in(exists, &dirs, &sources[i].path, t) else {
                    continue;
                };
                match by_path.get(&p) {
                    Some(&j) => {
                        if seen.insert(j) {
                            queue.push(j);
                            s.shared.push(j);
                        }
                    }
                    None => {
                        report.insert(p);
                    }
                }
            }
        }
        s.shared.sort();
        // A header outside every scope that defines kernels yields them once, in the
        // first scope (key order) that reaches it.
        for &j in &s.shared {
            let kernel = desc.role(&sources[j].path).is_some_and(|r| r.kernel);
            if kernel && !member_of_some.contains(&j) && owned.insert(j) {
                s.kernel_reached.push(j);
            }
        }
    }
    let skipped = report
        .into_iter()
        .filter_map(|p| failed.remove(&p))
        .collect();
    (sources, scopes.into_values().collect(), skipped)
}

/// Drop `included_only` members (host `.c` files) that no file of the tree the scope can
/// see `#include`s by name: they are separate host translation units.
fn prune_unincluded(
    desc: &SuiteDesc,
    sources: &[SourceFile],
    includes: &[Vec<&str>],
    scope: &mut units::ScopeFiles,
) {
    if !scope
        .members
        .iter()
        .any(|&i| desc.included_only(&sources[i].path))
    {
        return;
    }
    let named: std::collections::HashSet<&str> = scope
        .members
        .iter()
        .flat_map(|&i| includes[i].iter())
        .map(|t| t.rsplit('/').next().unwrap_or(t))
        .collect();
    let keep = |i: &usize| {
        let p = &sources[*i].path;
        !desc.included_only(p) || named.contains(p.rsplit('/').next().unwrap_or(p))
    };
    let mut members = Vec::new();
    let mut kernel_member = Vec::new();
    for (i, k) in scope.members.iter().zip(&scope.kernel_member) {
        if keep(i) {
            members.push(*i);
            kernel_member.push(*k);
        }
    }
    scope.members = members;
    scope.kernel_member = kernel_member;
}

/// The process's peak resident memory in KiB (Linux `VmHWM`), if known.
pub fn peak_memory() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

pub fn run_extract(args: ExtractArgs) -> anyhow::Result<u8> {
    let started = std::time::Instant::now();
    let cfg = ExtractConfig::from_args(&args)?;
    let ex = extract(&cfg)?;
    for s in &ex.skipped {
        eprintln!("warning: skipped {}: {} ({})", s.path, s.message, s.reason);
    }
    for w in &ex.warnings {
        eprintln!("warning: {w}");
    }
    let mut records = ex.records();
    if let Some(sh) = args.shard {
        records.retain(|r| sh.contains(r));
    }
    if args.output == Path::new("-") {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        for r in &records {
            serde_json::to_writer(&mut out, &crate::record::Line::new(r.clone()))?;
            out.write_all(b"\n")?;
        }
        out.flush()?;
    } else {
        crate::jsonl::write_records(&args.output, &records)?;
        // The output is whole: the journal of this run has served its purpose.
        if let Some(j) = &cfg.journal {
            if let Err(e) = j.remove() {
                eprintln!("warning: could not remove {}: {e}", j.path().display());
            }
        }
    }
    if ex.scopes_from_journal > 0 {
        if let Some(j) = &cfg.journal {
            eprintln!(
                "resumed: {} of {} benchmark scopes from {} (an interrupted run)",
                ex.scopes_from_journal,
                ex.scopes,
                j.path().display()
            );
        }
    }
    let short = summary::table_of(&ex, Some(summary::SUMMARY_ROWS));
    eprint!("{short}");
    if args.output != Path::new("-") {
        eprintln!(
            "wrote {} records to {}",
            records.len(),
            args.output.display()
        );
        if short != summary::table(&ex) {
            let mut full = args.output.clone().into_os_string();
            full.push(".summary.txt");
            let full = PathBuf::from(full);
            std::fs::write(&full, summary::table(&ex))?;
            eprintln!("full per-benchmark table: {}", full.display());
        }
    }
    let files: usize = ex.kernel_files.values().sum();
    let secs = started.elapsed().as_secs_f64();
    eprintln!(
        "{} kernel files, {} kernels in {secs:.2} s ({:.0} files/s, {:.0} kernels/s); peak memory {}",
        files,
        ex.units.len(),
        files as f64 / secs.max(1e-9),
        ex.units.len() as f64 / secs.max(1e-9),
        peak_memory().map_or("unknown".to_string(), |kb| format!("{:.0} MiB", kb as f64 / 1024.0))
    );
    Ok(ex.exit_code())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(name)
    }

    #[test]
    fn library_entry_point_on_the_parboil_fixture() {
        let ex = extract_suite(&fixture("parboil"), "auto", None, "sm_90", false).unwrap();
        assert_eq!(ex.suite, "parboil");
        assert_eq!(
            (ex.units.len(), ex.pairs.len(), ex.unpaired.len()),
            (18, 9, 1)
        );
        assert_eq!(ex.pairs.iter().filter(|p| p.identical).count(), 2);
        assert_eq!(ex.exit_code(), exit::OK);
        // Output order: units, pairs, unpaired; each sorted by path and line.
        let recs = ex.records();
        let kinds: Vec<&str> = recs
            .iter()
            .map(|r| match r {
                Record::Unit(_) => "unit",
                Record::Pair(_) => "pair",
                Record::Unpaired(_) => "unpaired",
                Record::Skipped(_) => "skipped",
            })
            .collect();
        let mut sorted = kinds.clone();
        sorted.sort_by_key(|k| {
            ["unit", "pair", "unpaired", "skipped"]
                .iter()
                .position(|x| x == k)
        });
        assert_eq!(kinds, sorted);
        let paths: Vec<(&str, u32)> = ex.units.iter().map(|u| (u.path.as_str(), u.line)).collect();
        let mut sorted_paths = paths.clone();
        sorted_paths.sort();
        assert_eq!(paths, sorted_paths);
        // The summary counts per benchmark.
        let rows = summary::rows(&ex);
        let vecadd = rows["vecadd"];
        assert_eq!(
            (
                vecadd.files,
                vecadd.kernels,
                vecadd.pairs,
                vecadd.identical,
                vecadd.unpaired
            ),
            (4, 5, 2, 1, 1)
        );
        let table = summary::table(&ex);
        assert!(
            table
                .lines()
                .any(|l| l.starts_with("total") && l.contains(" 18 ")),
            "{table}"
        );
    }

    #[test]
    fn host_c_files_are_kept_only_when_included() {
        let desc = SuiteDesc::builtin("rodinia").unwrap();
        let src = |path: &str, text: &str| SourceFile {
            path: path.into(),
            text: text.into(),
            decoded_from: None,
        };
        let sources = vec![
            src(
                "cuda/a/main.cu",
                "#include \"define.c\"\n#include \"k.cu\"\n",
            ),
            src("cuda/a/k.cu", "__global__ void k(fp *x) {}\n"),
            src("cuda/a/define.c", "#define fp float\n"),
            src("cuda/a/host.c", "int main() { return 0; }\n"),
            src("cuda/a/util.h", "#define X 1\n"),
        ];
        let includes: Vec<Vec<&str>> = sources.iter().map(|s| include_targets(&s.text)).collect();
        let mut scope = units::ScopeFiles::new(desc.scope_of("cuda/a/k.cu").unwrap());
        scope.members = vec![0, 1, 2, 3, 4];
        scope.kernel_member = vec![true, true, false, false, false];
        prune_unincluded(&desc, &sources, &includes, &mut scope);
        let kept: Vec<&str> = scope
            .members
            .iter()
            .map(|&i| sources[i].path.as_str())
            .collect();
        // host.c is dropped; headers are never pruned, whether included or not.
        assert_eq!(
            kept,
            [
                "cuda/a/main.cu",
                "cuda/a/k.cu",
                "cuda/a/define.c",
                "cuda/a/util.h"
            ]
        );
        assert_eq!(scope.kernel_member, [true, true, false, false]);
    }

    #[test]
    fn scopes_reach_headers_through_includes_only() {
        // Two programs with a header of the same name, and a shared include folder.
        let dir = tempfile::tempdir().unwrap();
        let r = dir.path();
        let put = |p: &str, t: &[u8]| {
            let p = r.join(p);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, t).unwrap();
        };
        put("a/Makefile", b"all:\n");
        put(
            "a/main.cu",
            b"#include \"kernels.h\"\n#include \"math.cuh\"\n",
        );
        put(
            "a/kernels.h",
            b"__global__ void ka(float *x) { x[0] = SCALE; }\n#define SCALE 2\n",
        );
        put("b/Makefile", b"all:\n");
        put("b/src/main.cu", b"#include \"kernels.h\"\n");
        put(
            "b/src/kernels.h",
            b"__global__ void kb(float *x) { x[0] = 1; }\n",
        );
        put(
            "inc/math.cuh",
            b"// \xa9 Someone\n__global__ void shared_k(int *y) { y[0] = 3; }\n",
        );
        put(
            "inc/unused.cuh",
            b"__global__ void never_included(int *y) { y[0] = 3; }\n",
        );
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("extractors/generic.toml"),
        )
        .unwrap()
        .replace("include_dirs = []", "include_dirs = [\"inc\"]");
        let desc = SuiteDesc::parse(&text, "t").unwrap();
        let files = walk::walk(r).files;
        let desc = desc.with_tree(&files);
        let (sources, scopes, skipped) = gather(r, &desc, &files, DEFAULT_MAX_FILE_SIZE);
        assert!(skipped.is_empty());
        let names =
            |v: &[usize]| -> Vec<&str> { v.iter().map(|&i| sources[i].path.as_str()).collect() };
        let a = scopes.iter().find(|s| s.key.benchmark == "a").unwrap();
        let b = scopes.iter().find(|s| s.key.benchmark == "b").unwrap();
        // `b/src` has no build file of its own: its files belong to `b`.
        assert_eq!(names(&b.members), ["b/src/kernels.h", "b/src/main.cu"]);
        // a reaches its own kernels.h and inc/math.cuh through -I inc, never b's kernels.h.
        assert_eq!(names(&a.shared), ["inc/math.cuh"]);
        assert!(b.shared.is_empty());
        // A header folder without a build file is a scope of its own: the header's
        // kernels come out once there, attributed to the header, however many programs
        // include it; a header nothing includes is seen by no other scope.
        assert!(a.kernel_reached.is_empty());
        let inc = scopes.iter().find(|s| s.key.benchmark == "inc").unwrap();
        assert_eq!(names(&inc.members), ["inc/math.cuh", "inc/unused.cuh"]);
        let math = &sources[inc.members[0]];
        assert_eq!(math.decoded_from, Some("windows-1252"));
        assert!(scopes
            .iter()
            .all(|s| !names(&s.shared).contains(&"inc/unused.cuh")));
        // End to end: every kernel once, the header kernel attributed to the header.
        let mut cfg = ExtractConfig::new(r, "generic", None).unwrap();
        cfg.desc = Some(desc);
        cfg.compile = false;
        let ex = extract(&cfg).unwrap();
        let mut got: Vec<(&str, &str, &str)> = ex
            .units
            .iter()
            .map(|u| (u.benchmark.as_str(), u.path.as_str(), u.kernel.as_str()))
            .collect();
        got.sort();
        assert_eq!(
            got,
            [
                ("a", "a/kernels.h", "ka"),
                ("b", "b/src/kernels.h", "kb"),
                ("inc", "inc/math.cuh", "shared_k"),
                ("inc", "inc/unused.cuh", "never_included"),
            ]
        );
        let shared = ex.units.iter().find(|u| u.kernel == "shared_k").unwrap();
        assert!(shared
            .diagnostics
            .iter()
            .any(|d| d.code == "decoded_non_utf8"));
        let ka = ex.units.iter().find(|u| u.kernel == "ka").unwrap();
        assert!(ka.source.contains("#define SCALE 2"), "{}", ka.source);
    }

    #[test]
    fn config_errors_name_the_problem() {
        let e = ExtractConfig::new(Path::new("/no/such/suite"), "auto", None).unwrap_err();
        assert!(matches!(e, SuiteError::NoSuchDir(_)));
        let file = fixture("LICENSE");
        assert!(matches!(
            ExtractConfig::new(&file, "auto", None).unwrap_err(),
            SuiteError::NotADir(_)
        ));
        let e = ExtractConfig::new(&fixture("parboil"), "spec", None).unwrap_err();
        assert!(e.to_string().contains("unknown suite `spec`"), "{e}");
    }
}
