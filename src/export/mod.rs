//! Training-file export: chat, prompt-completion, preference, sharegpt; splits, filters, dataset card.
//!
//! `export(records, out_dir, &config)` is the library entry point (used by `build`);
//! `run_export` is the CLI edge. Output layout:
//!
//! ```text
//! OUT/README.md                    dataset card (Hugging Face YAML header)
//! OUT/speedup.svg                  speedup histogram
//! OUT/filter_report.json           what was left out and why
//! OUT/<format>/{train,test}.jsonl  one folder per format; a split file only when non-empty
//! ```

pub mod card;
pub mod describe;
pub mod filter;
pub mod format;
pub mod launch;
pub mod lint;
pub mod plot;
pub mod reversed;
pub mod split;
pub mod template;
/// Token counting lives below export (synth's prompt budget counts with it too).
pub use crate::tokens;

pub use format::{Format, Metadata, Sample};

use crate::jsonl::{self, JsonlError};
use crate::record::{Pair, Record, Status};
use filter::{FilterReport, TooLong};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use split::Split;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use template::{TemplateError, Templates};
use tokens::{Tokenizer, TokenizerError};

/// Default length cap of a sample (system + user + assistant). 16,384 tokens is a common
/// context for code SFT, and it keeps real kernels with their macros: Parboil's lbm pair is
/// 12,068 o200k tokens, which the former 4,096 cap silently dropped.
pub const DEFAULT_MAX_TOKENS: usize = 16_384;

#[derive(Debug, clap::Args)]
pub struct ExportArgs {
    /// Pairs to export (JSONL records; non-pair records are ignored).
    #[arg(long = "in")]
    pub input: PathBuf,
    /// Output folder (created; files this command owns are replaced).
    #[arg(long = "out")]
    pub output: PathBuf,
    /// Formats to write, comma-separated.
    #[arg(long, value_delimiter = ',', default_values_t = Format::ALL.to_vec(), value_enum)]
    pub format: Vec<Format>,
    /// Also export pairs that were not verified (marked `verified: false` in metadata).
    #[arg(long)]
    pub include_unverified: bool,
    /// Put the measured speedup, device and techniques into the assistant answer.
    #[arg(long)]
    pub with_speedup: bool,
    /// Put the description of what changed and why (techniques, launch change, measured
    /// figures; always in `metadata.description`) into the assistant answer too.
    #[arg(long)]
    pub with_description: bool,
    /// Leave out pairs flagged `size_dependent` (verified at the main size set but slower
    /// at another); by default they are kept, the condition stated in their description.
    #[arg(long)]
    pub exclude_size_dependent: bool,
    /// Also export `reversed` pairs (a synthesized plain version faster than the original)
    /// as samples whose slow side is the original and whose fast side is the plain version.
    #[arg(long)]
    pub include_reversed: bool,
    /// Export every verified synth candidate of a kernel as its own sample (sharing
    /// `metadata.group`); by default only the one with the largest honest speedup.
    #[arg(long)]
    pub all_candidates: bool,
    /// Folder whose template files (system.txt, user.md, assistant.md, performance.md) replace the built-in ones.
    #[arg(long)]
    pub templates: Option<PathBuf>,
    /// Share of samples in the train split (by benchmark).
    #[arg(long, default_value_t = 0.8)]
    pub split: f64,
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Benchmarks (`name` or `suite/name`) that go to the test split whatever the ratio.
    #[arg(long, value_delimiter = ',')]
    pub holdout: Vec<String>,
    /// Drop samples longer than this many tokens (system + user + assistant); 0 = no limit.
    #[arg(long, default_value_t = DEFAULT_MAX_TOKENS)]
    pub max_tokens: usize,
    /// `o200k_base` (default), `cl100k_base`, or a Hugging Face tokenizer.json (counted with
    /// its own vocabulary; a build without the default `hf-tokenizers` feature falls back to
    /// o200k_base and the card says so).
    #[arg(long)]
    pub tokenizer: Option<String>,
    /// Leave out pairs whose source files' licence does not allow redistribution (or is unknown).
    #[arg(long)]
    pub exclude_non_redistributable: bool,
    /// Estimated Jaccard similarity of token shingles at or above which a pair is a near duplicate.
    #[arg(long, default_value_t = 0.85)]
    pub near_dup_threshold: f64,
}

/// Export settings as a build config's `[export]` table holds them (and the CLI flags map to).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ExportOptions {
    pub formats: Vec<Format>,
    pub include_unverified: bool,
    pub with_speedup: bool,
    pub with_description: bool,
    pub exclude_size_dependent: bool,
    /// Export `reversed` pairs the other way round ([`reversed::view`]). Left out of the
    /// JSON when off, so a build journal keyed by these settings is unchanged.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub include_reversed: bool,
    /// Every candidate of a kernel, not only its best ([`best_candidates`]); left out of
    /// the JSON when off, like `include_reversed`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub all_candidates: bool,
    pub templates: Option<PathBuf>,
    pub split: f64,
    pub seed: u64,
    pub holdout: Vec<String>,
    pub max_tokens: usize,
    pub tokenizer: Option<String>,
    pub exclude_non_redistributable: bool,
    pub near_dup_threshold: f64,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            formats: Format::ALL.to_vec(),
            include_unverified: false,
            with_speedup: false,
            with_description: false,
            exclude_size_dependent: false,
            include_reversed: false,
            all_candidates: false,
            templates: None,
            split: 0.8,
            seed: 42,
            holdout: Vec::new(),
            max_tokens: DEFAULT_MAX_TOKENS,
            tokenizer: None,
            exclude_non_redistributable: false,
            near_dup_threshold: 0.85,
        }
    }
}

impl From<&ExportArgs> for ExportOptions {
    fn from(a: &ExportArgs) -> Self {
        ExportOptions {
            formats: a.format.clone(),
            include_unverified: a.include_unverified,
            with_speedup: a.with_speedup,
            with_description: a.with_description,
            exclude_size_dependent: a.exclude_size_dependent,
            include_reversed: a.include_reversed,
            all_candidates: a.all_candidates,
            templates: a.templates.clone(),
            split: a.split,
            seed: a.seed,
            holdout: a.holdout.clone(),
            max_tokens: a.max_tokens,
            tokenizer: a.tokenizer.clone(),
            exclude_non_redistributable: a.exclude_non_redistributable,
            near_dup_threshold: a.near_dup_threshold,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExportError {
    #[error("export options: {0}")]
    Options(String),
    #[error(transparent)]
    Template(#[from] TemplateError),
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    #[error(transparent)]
    Jsonl(#[from] JsonlError),
    #[error(transparent)]
    Io(#[from] crate::path_io::PathIo),
    /// The training text lint found defects in what every sample shares (`export::lint`):
    /// nothing was written. (A defect in one pair's own code only leaves that sample out.)
    #[error("the training text lint found {} defect(s); nothing was written:\n{}{}", .0.len(), lint_list(.0), if .0.len() > LINT_SHOWN { format!("\n  … and {} more", .0.len() - LINT_SHOWN) } else { String::new() })]
    Lint(Vec<lint::Finding>),
}

/// Findings an error message lists before it says how many more there are.
const LINT_SHOWN: usize = 20;

fn lint_list(f: &[lint::Finding]) -> String {
    f.iter()
        .take(LINT_SHOWN)
        .map(|x| format!("  {x}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// Checked options with their templates and tokenizer loaded.
#[derive(Debug)]
pub struct ExportConfig {
    pub options: ExportOptions,
    pub templates: Templates,
    pub tokenizer: Tokenizer,
}

impl ExportConfig {
    pub fn new(mut options: ExportOptions) -> Result<ExportConfig, ExportError> {
        if !(0.0..=1.0).contains(&options.split) {
            return Err(ExportError::Options(format!(
                "split {} is not a fraction between 0 and 1",
                options.split
            )));
        }
        if !(options.near_dup_threshold > 0.0 && options.near_dup_threshold <= 1.0) {
            return Err(ExportError::Options(format!(
                "near-duplicate threshold {} is not in (0, 1]",
                options.near_dup_threshold
            )));
        }
        if options.formats.is_empty() {
            return Err(ExportError::Options("no format selected".into()));
        }
        options.formats.sort();
        options.formats.dedup();
        let templates = Templates::load(options.templates.as_deref())?;
        let tokenizer = Tokenizer::load(options.tokenizer.as_deref())?;
        Ok(ExportConfig {
            options,
            templates,
            tokenizer,
        })
    }
}

/// What one export did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ExportSummary {
    pub report: FilterReport,
    pub train: usize,
    pub test: usize,
    /// Files written, relative to the output folder, sorted.
    pub files: Vec<String>,
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> ExportError + '_ {
    move |source| ExportError::Io(crate::path_io::PathIo::new(path.to_path_buf(), source))
}

/// Why a pair is not a candidate at all, or None when it is.
fn exclusion(p: &Pair, o: &ExportOptions) -> Option<String> {
    if p.identical {
        return Some("identical (control pair)".into());
    }
    p.slow.unit()?;
    let status = p.verification.as_ref().map(|v| v.status);
    // Never the way round it was measured (the original is the slower side), even with
    // --include-unverified: reversed pairs are exported only reversed.
    if status == Some(Status::Reversed) {
        return Some(match o.include_reversed {
            true => "reversed, but the record has no reversed speedup".into(),
            false => "reversed (--include-reversed exports them)".into(),
        });
    }
    if status != Some(Status::Verified) && !o.include_unverified {
        return Some(format!(
            "not verified: {}",
            status.map_or("never verified", |s| s.as_str())
        ));
    }
    if o.exclude_size_dependent
        && p.verification.as_ref().is_some_and(|v| {
            v.flags
                .iter()
                .any(|f| matches!(f, crate::record::Flag::SizeDependent { .. }))
        })
    {
        return Some("size_dependent (--exclude-size-dependent)".into());
    }
    licence_exclusion(p, o)
}

/// `--exclude-non-redistributable`: why a pair (or a reversed view) is left out.
fn licence_exclusion(p: &Pair, o: &ExportOptions) -> Option<String> {
    let slow = p.slow.unit()?;
    if o.exclude_non_redistributable {
        let ok = |u: &crate::record::KernelUnit| {
            u.provenance
                .licence
                .as_ref()
                .is_some_and(|l| l.redistributable)
        };
        if !ok(slow) || !ok(&p.fast) {
            return Some("licence does not allow redistribution (or unknown)".into());
        }
    }
    None
}

/// Export the pairs among `records` into `out`. Deterministic: the same records and options
/// give byte-identical files, whatever order the records come in.
pub fn export(
    records: &[Record],
    out: &Path,
    cfg: &ExportConfig,
) -> Result<ExportSummary, ExportError> {
    export_with(records, out, cfg, &cfg.options, None)
}

/// The first line of a preview's card.
pub const PREVIEW_LINE: &str = "**PREVIEW: NOT VERIFIED.** No GPU was available: these pairs compiled, but nothing here was run, compared or timed, and every record says `verified: false`. Rerun `kernelpair build` where a GPU is visible to replace this preview with the verified dataset.";

/// Without a GPU, what the dataset would look like: the pairs waiting for one (never
/// verified, or `no_gpu`) whose kernels compiled, exported in the same formats into `out` (e.g.
/// `dataset/preview/`), every record `verified: false`, the card's first line saying so.
/// When no pair waits for a GPU, an old preview is removed and None returned.
pub fn export_preview(
    records: &[Record],
    out: &Path,
    cfg: &ExportConfig,
) -> Result<Option<ExportSummary>, ExportError> {
    let compiled = |u: &crate::record::KernelUnit| u.compile.as_ref().is_none_or(|c| c.ok);
    let waiting: Vec<Record> = records
        .iter()
        .filter(|r| match r {
            Record::Pair(p) => {
                // Waiting pairs: a build keeps them unverified; `verify` marks them no_gpu.
                p.verification
                    .as_ref()
                    .is_none_or(|v| v.status == Status::NoGpu)
                    && !p.identical
                    && p.slow.unit().is_some_and(compiled)
                    && compiled(&p.fast)
            }
            _ => false,
        })
        .cloned()
        .collect();
    if waiting.is_empty() {
        match std::fs::remove_dir_all(out) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(io_err(out)(e)),
            _ => return Ok(None),
        }
    }
    let options = ExportOptions {
        include_unverified: true,
        ..cfg.options.clone()
    };
    export_with(&waiting, out, cfg, &options, Some(PREVIEW_LINE)).map(Some)
}

/// The pairs that become samples (verified, distinct, with a slow kernel, unless the
/// options say otherwise), counting every input pair's status and every exclusion.
fn select_samples(
    pairs: &BTreeMap<&str, &Pair>,
    reversed: &BTreeMap<&str, &Pair>,
    cfg: &ExportConfig,
    o: &ExportOptions,
    report: &mut FilterReport,
    input_status: &mut BTreeMap<String, usize>,
) -> Vec<Sample> {
    let mut samples: Vec<Sample> = Vec::new();
    for p in pairs.values() {
        report.input_pairs += 1;
        let st = if p.slow.is_pending() {
            "missing slow kernel".to_string()
        } else {
            p.verification
                .as_ref()
                .map_or("never verified", |v| v.status.as_str())
                .to_string()
        };
        *input_status.entry(st).or_default() += 1;
        if p.slow.is_pending() && !p.identical {
            *report
                .excluded
                .entry("missing slow kernel".into())
                .or_default() += 1;
            continue;
        }
        if let Some(q) = reversed.get(p.id.as_str()) {
            // Its reversed view becomes the sample instead.
            if let Some(why) = licence_exclusion(q, o) {
                *report.excluded.entry(why).or_default() += 1;
                continue;
            }
            match format::build_sample_with(
                q,
                q.slow.unit().expect("a view has both sides"),
                &cfg.templates,
                o.with_speedup,
                o.with_description,
            ) {
                Ok(mut s) => {
                    s.metadata.origin = "reversed".into();
                    s.metadata.group = p.group().to_string();
                    s.metadata.model = p.slow.synth_outcome().map(|o| o.model.clone());
                    samples.push(s);
                }
                Err(why) => *report.excluded.entry(why).or_default() += 1,
            }
            continue;
        }
        if let Some(why) = exclusion(p, o) {
            *report.excluded.entry(why).or_default() += 1;
            continue;
        }
        let slow = p.slow.unit().expect("checked by exclusion");
        match format::build_sample_with(p, slow, &cfg.templates, o.with_speedup, o.with_description)
        {
            Ok(s) => samples.push(s),
            Err(why) => *report.excluded.entry(why).or_default() += 1,
        }
    }
    if o.all_candidates {
        samples
    } else {
        best_candidates(samples, report)
    }
}

/// Why a candidate is left out by default.
const NOT_BEST: &str = "another candidate of the kernel is faster (--all-candidates exports each)";

/// One sample per kernel among synth candidates (samples sharing `metadata.group`): the
/// one with the largest honest speedup, the lower end of its 95% interval (then the
/// median, then the id); verified before unverified. Samples of other pairs pass.
pub fn best_candidates(samples: Vec<Sample>, report: &mut FilterReport) -> Vec<Sample> {
    let rank = |s: &Sample| {
        let sp = s.metadata.speedup.as_ref();
        (
            s.metadata.verified,
            sp.map_or(f64::NEG_INFINITY, |x| x.ci_low),
            sp.map_or(f64::NEG_INFINITY, |x| x.median),
        )
    };
    // Greater is better; on a full tie the smaller id wins.
    let order = |a: &Sample, b: &Sample| {
        let (ra, rb) = (rank(a), rank(b));
        ra.0.cmp(&rb.0)
            .then(ra.1.total_cmp(&rb.1))
            .then(ra.2.total_cmp(&rb.2))
            .then_with(|| b.metadata.id.cmp(&a.metadata.id))
    };
    let mut best: BTreeMap<String, usize> = BTreeMap::new();
    for (i, s) in samples.iter().enumerate() {
        if s.metadata.candidate.is_none() {
            continue;
        }
        let b = best.entry(s.metadata.group.clone()).or_insert(i);
        if order(s, &samples[*b]).is_gt() {
            *b = i;
        }
    }
    let keep: std::collections::BTreeSet<usize> = best.into_values().collect();
    let mut out = Vec::with_capacity(samples.len());
    for (i, s) in samples.into_iter().enumerate() {
        if s.metadata.candidate.is_none() || keep.contains(&i) {
            out.push(s);
        } else {
            *report.excluded.entry(NOT_BEST.into()).or_default() += 1;
        }
    }
    out
}

/// Exact and near duplicates removed (verified samples win), tokens counted, and samples
/// over the length cap left out; both recorded in the report.
fn dedup_and_cap(
    samples: Vec<Sample>,
    cfg: &ExportConfig,
    o: &ExportOptions,
    report: &mut FilterReport,
) -> Vec<Sample> {
    let mut samples = samples;
    // Priority for de-duplication: verified first, then by id.
    samples.sort_by(|a, b| {
        b.metadata
            .verified
            .cmp(&a.metadata.verified)
            .then_with(|| a.metadata.id.cmp(&b.metadata.id))
    });
    // Duplicates are judged on the two kernels' code, not the prose around them.
    let texts: Vec<(String, String)> = samples
        .iter()
        .map(|s| {
            (
                s.metadata.id.clone(),
                format!("{}\n{}", s.slow_code, s.fast_code),
            )
        })
        .collect();
    // With --all-candidates a kernel's candidates differ on purpose: never near duplicates.
    let groups: Vec<String> = match o.all_candidates {
        true => samples.iter().map(|s| s.metadata.group.clone()).collect(),
        false => Vec::new(),
    };
    let (keep, dups) = filter::dedup_grouped(&texts, &groups, o.near_dup_threshold);
    report.duplicates = dups;
    let mut samples: Vec<Sample> = samples
        .into_iter()
        .zip(keep)
        .filter_map(|(s, k)| k.then_some(s))
        .collect();
    samples.par_iter_mut().for_each(|s| {
        s.metadata.tokens = cfg.tokenizer.count(&s.system)
            + cfg.tokenizer.count(&s.user)
            + cfg.tokenizer.count(&s.chosen);
    });
    let (samples, too_long): (Vec<Sample>, Vec<Sample>) = samples
        .into_iter()
        .partition(|s| o.max_tokens == 0 || s.metadata.tokens <= o.max_tokens);
    report.too_long = too_long
        .iter()
        .map(|s| TooLong {
            id: s.metadata.id.clone(),
            tokens: s.metadata.tokens,
        })
        .collect();
    report.kept = samples.len();
    samples
}

fn export_with(
    records: &[Record],
    out: &Path,
    cfg: &ExportConfig,
    o: &ExportOptions,
    first_line: Option<&str>,
) -> Result<ExportSummary, ExportError> {
    let mut report = FilterReport {
        near_duplicate_threshold: o.near_dup_threshold,
        max_tokens: o.max_tokens,
        tokenizer: cfg.tokenizer.description.clone(),
        tokenizer_note: cfg.tokenizer.fallback_note.clone(),
        ..FilterReport::default()
    };
    let mut input_status: BTreeMap<String, usize> = BTreeMap::new();
    // The same pair id twice (e.g. concatenated shard files) counts once, resolved as
    // `merge` resolves it, so the choice does not depend on the input order.
    let merged = crate::dataset::merge::merge([records
        .iter()
        .filter(|r| matches!(r, Record::Pair(_)))
        .cloned()
        .collect::<Vec<_>>()]);
    let pairs: BTreeMap<&str, &Pair> = merged
        .records
        .iter()
        .filter_map(|r| match r {
            Record::Pair(p) => Some((p.id.as_str(), p.as_ref())),
            _ => None,
        })
        .collect();
    // `reversed` pairs seen the other way round, by their pair's id (only when asked for).
    let views: Vec<Pair> = match o.include_reversed {
        true => pairs.values().filter_map(|p| reversed::view(p)).collect(),
        false => Vec::new(),
    };
    let by_pair: BTreeMap<&str, &Pair> = views
        .iter()
        .map(|q| (&q.id[..q.id.len() - reversed::ID_SUFFIX.len()], q))
        .collect();
    let samples = select_samples(&pairs, &by_pair, cfg, o, &mut report, &mut input_status);
    // Every sample's pair by the sample's id, reversed views included.
    let mut pairs_by_sample = pairs.clone();
    pairs_by_sample.extend(views.iter().map(|q| (q.id.as_str(), q)));
    let reversed_per_device = reversed::per_device(pairs.values().copied());
    let mut samples = dedup_and_cap(samples, cfg, o, &mut report);
    // A trainer learns exactly this text: nothing is written while the lint finds a defect.
    let findings: Vec<lint::Finding> = samples
        .par_iter()
        .flat_map_iter(|s| {
            let p = pairs_by_sample[s.metadata.id.as_str()];
            let slow = p.slow.unit().expect("samples have a slow kernel");
            lint::lint(s, [slow, &p.fast])
        })
        .collect();
    // A defect in one pair's own code (a tool's name an answer kept, a kernel whose
    // parameters are not the promised ones) leaves that sample out, named in the report and
    // on the card; a defect in the text every sample shares (templates, launches, fences)
    // writes nothing.
    let (own, shared): (Vec<lint::Finding>, Vec<lint::Finding>) =
        findings.into_iter().partition(|f| f.kind.in_own_code());
    if !shared.is_empty() {
        return Err(ExportError::Lint(shared));
    }
    if !own.is_empty() {
        let mut first: BTreeMap<&str, &lint::Finding> = BTreeMap::new();
        for f in &own {
            first.entry(f.id.as_str()).or_insert(f);
        }
        for f in first.values() {
            eprintln!("export: {} left out by the training text lint: {f}", f.id);
            *report
                .excluded
                .entry(format!("training text lint: {}", f.kind.as_str()))
                .or_default() += 1;
            report.lint_left_out.push(f.to_string());
        }
        samples.retain(|s| !first.contains_key(s.metadata.id.as_str()));
        report.kept = samples.len();
    }

    // Split by benchmark.
    let mut groups: BTreeMap<String, usize> = BTreeMap::new();
    for s in &samples {
        *groups
            .entry(split::group_key(&s.metadata.suite, &s.metadata.benchmark))
            .or_default() += 1;
    }
    let assignment = split::assign(&groups, o.split, o.seed, &o.holdout);
    for s in &mut samples {
        let g = split::group_key(&s.metadata.suite, &s.metadata.benchmark);
        s.metadata.split = assignment[&g].as_str().to_string();
    }
    samples.sort_by(|a, b| a.metadata.id.cmp(&b.metadata.id));

    // Write.
    std::fs::create_dir_all(out).map_err(io_err(out))?;
    let mut files = Vec::new();
    let mut counts = BTreeMap::new();
    for sp in [Split::Train, Split::Test] {
        let in_split: Vec<&Sample> = samples
            .iter()
            .filter(|s| s.metadata.split == sp.as_str())
            .collect();
        counts.insert(sp, in_split.len());
        for f in Format::ALL {
            let rel = format!("{}/{}.jsonl", f.name(), sp.as_str());
            let path = out.join(&rel);
            if in_split.is_empty() || !o.formats.contains(&f) {
                // A stale file from an earlier export would contradict the card.
                match std::fs::remove_file(&path) {
                    Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                        return Err(io_err(&path)(e))
                    }
                    _ => {}
                }
                continue;
            }
            let lines: Vec<String> = in_split
                .iter()
                .map(|s| format::to_line(s, f).expect("samples serialize"))
                .collect();
            jsonl::write_atomic(&path, |w| {
                for l in &lines {
                    w.write_all(l.as_bytes())?;
                    w.write_all(b"\n")?;
                }
                Ok(())
            })?;
            files.push(rel);
        }
    }
    let report_json = serde_json::to_string_pretty(&report).expect("report serializes");
    jsonl::write_atomic(&out.join("filter_report.json"), |w| {
        w.write_all(report_json.as_bytes())?;
        w.write_all(b"\n")
    })?;
    files.push("filter_report.json".into());
    let mut licences: BTreeMap<card::LicenceKey, usize> = BTreeMap::new();
    for s in &samples {
        let p = pairs_by_sample[s.metadata.id.as_str()];
        let mut keys = vec![card::LicenceKey::of(p.fast.provenance.licence.as_ref())];
        if let Some(slow) = p.slow.unit() {
            keys.push(card::LicenceKey::of(slow.provenance.licence.as_ref()));
        }
        keys.sort();
        keys.dedup();
        for k in keys {
            *licences.entry(k).or_default() += 1;
        }
    }
    let options_line = format!(
        "formats {}, train share {}, seed {}, held out [{}], max tokens {}, near-duplicate threshold {}, speedup in answers {}, description in answers {}, size-dependent pairs {}, unverified included {}, reversed included {}, candidates {}",
        o.formats.iter().map(|f| f.name()).collect::<Vec<_>>().join(", "),
        o.split,
        o.seed,
        o.holdout.join(", "),
        o.max_tokens,
        o.near_dup_threshold,
        if o.with_speedup { "yes" } else { "no" },
        if o.with_description { "yes" } else { "no" },
        if o.exclude_size_dependent { "excluded" } else { "kept" },
        if o.include_unverified { "yes" } else { "no" },
        if o.include_reversed { "yes" } else { "no" },
        if o.all_candidates { "all" } else { "best per kernel" },
    );
    let harness_origins = card::harness_origins(pairs.values().copied(), &samples);
    let card_text = card::render(&card::CardInput {
        samples: &samples,
        formats: &o.formats,
        report: &report,
        input_status: &input_status,
        licences: &licences,
        excluded_non_redistributable: o.exclude_non_redistributable,
        options_line,
        templates_overridden: &cfg.templates.overridden,
        harness_origins: &harness_origins,
        reversed_per_device: &reversed_per_device,
        technique_yield: &card::technique_yield(pairs.values().copied()),
        include_reversed: o.include_reversed,
    });
    let card_text = match first_line {
        Some(l) => format!("{l}\n\n{card_text}"),
        None => card_text,
    };
    jsonl::write_atomic(&out.join("README.md"), |w| {
        w.write_all(card_text.as_bytes())
    })?;
    let svg = card::plot(&samples);
    jsonl::write_atomic(&out.join("speedup.svg"), |w| w.write_all(svg.as_bytes()))?;
    files.push("README.md".into());
    files.push("speedup.svg".into());
    files.sort();
    Ok(ExportSummary {
        report,
        train: counts[&Split::Train],
        test: counts[&Split::Test],
        files,
    })
}

/// One line per outcome, for stderr.
pub fn summary_table(s: &ExportSummary) -> String {
    let r = &s.report;
    let exact = r.duplicates.iter().filter(|d| d.kind == "exact").count();
    let mut t = format!("export: {} input pairs\n", r.input_pairs);
    for (why, n) in &r.excluded {
        t.push_str(&format!("  left out  {n:>6}  {why}\n"));
    }
    t.push_str(&format!("  left out  {exact:>6}  exact duplicate\n"));
    t.push_str(&format!(
        "  left out  {:>6}  near duplicate\n",
        r.duplicates.len() - exact
    ));
    t.push_str(&format!(
        "  left out  {:>6}  over {} tokens\n",
        r.too_long.len(),
        r.max_tokens
    ));
    t.push_str(&format!(
        "  exported  {:>6}  (train {}, test {})\n",
        r.kept, s.train, s.test
    ));
    t
}

pub fn run_export(args: ExportArgs) -> anyhow::Result<u8> {
    use anyhow::Context;
    let cfg = ExportConfig::new(ExportOptions::from(&args))?;
    let records = jsonl::read_records(&args.input)
        .with_context(|| format!("reading pairs from {}", args.input.display()))?;
    let summary = export(&records, &args.output, &cfg)?;
    eprint!("{}", summary_table(&summary));
    if summary.report.kept == 0 {
        eprintln!(
            "warning: nothing exported (no verified pairs in {}; --include-unverified exports unverified ones)",
            args.input.display()
        );
    }
    eprintln!(
        "wrote {} files to {}",
        summary.files.len(),
        args.output.display()
    );
    Ok(crate::exit::OK)
}
