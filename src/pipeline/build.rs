//! `build`: extract → synth → verify → export over one config, resumable.
//!
//! Each stage is a journaled step (see [`super::journal`]). Inside synth and verify, pairs go
//! to the stage in chunks whose results are cached under `<output>/cache/<stage>/` as they
//! finish, so a killed run redoes at most the chunk in flight: no finished LLM call or GPU
//! measurement is repeated. Pairs that need a GPU or an endpoint this machine lacks are
//! passed through untouched and reported as waiting; such steps stay incomplete and run
//! again next time.

use super::config::BuildConfig;
use super::journal::{self, file_sha256, tree_sha256, Journal, Step};
use super::stages::{StageError, Stages};
use crate::dataset::{shard_filter, Shard};
use crate::export::{self, ExportConfig};
use crate::jsonl::{self, JsonlError};
use crate::record::{Pair, Record, Status};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub const EXTRACTED: &str = "extracted.jsonl";
pub const SYNTHESIZED: &str = "synthesized.jsonl";
pub const VERIFIED: &str = "verified.jsonl";
/// The synthesized pairs with the harness each runs under (the harness step's output).
pub const HARNESSED: &str = "harnessed.jsonl";
pub const DATASET: &str = "dataset";
/// Inside the dataset folder: what a run without a GPU can show (`export::export_preview`).
pub const PREVIEW: &str = "preview";

/// Test hook: sleep this many milliseconds before each step and each chunk, so a test can
/// kill the process at a known point. Never set in normal use.
pub const DELAY_ENV: &str = "KERNELPAIR_TEST_STEP_DELAY_MS";

#[derive(Debug, thiserror::Error)]
pub enum BuildError {
    #[error(transparent)]
    Jsonl(#[from] JsonlError),
    #[error(transparent)]
    Export(#[from] export::ExportError),
    #[error(transparent)]
    Io(#[from] crate::path_io::PathIo),
}

/// One row of the final summary table.
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    pub stage: &'static str,
    /// `ran`, `reused` (journal), `skipped` (sharded build), or `incomplete`.
    pub state: &'static str,
    /// Items handed to the stage in this run, and items answered from the chunk cache.
    pub worked: usize,
    pub reused: usize,
    pub awaiting: usize,
    pub failed: usize,
    pub counts: BTreeMap<String, usize>,
    pub notes: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct BuildReport {
    pub rows: Vec<StepRow>,
    pub output: PathBuf,
    pub exit: u8,
    /// Wall seconds of each step, in order (not journaled: they differ run to run).
    pub seconds: Vec<(&'static str, f64)>,
}

impl BuildReport {
    /// The summary table and what awaits a GPU or an endpoint.
    pub fn table(&self) -> String {
        let mut t =
            String::from("stage       state       worked  reused  awaiting  failed  output\n");
        for r in &self.rows {
            let counts: Vec<String> = r.counts.iter().map(|(k, v)| format!("{k}={v}")).collect();
            t.push_str(&format!(
                "{:<11} {:<11} {:>6}  {:>6}  {:>8}  {:>6}  {}\n",
                r.stage,
                r.state,
                r.worked,
                r.reused,
                r.awaiting,
                r.failed,
                counts.join(" ")
            ));
        }
        for r in &self.rows {
            for n in &r.notes {
                t.push_str(&format!("{}: {n}\n", r.stage));
            }
        }
        if !self.seconds.is_empty() {
            let total: f64 = self.seconds.iter().map(|(_, s)| s).sum();
            let each: Vec<String> = self
                .seconds
                .iter()
                .map(|(k, s)| format!("{k} {s:.1} s"))
                .collect();
            t.push_str(&format!("time: {} (total {total:.1} s)\n", each.join(", ")));
        }
        t
    }
}

fn delay() {
    if let Some(ms) = std::env::var(DELAY_ENV)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
}

/// Progress over a step's items: a bar on a terminal, else a plain line every 10 s.
fn progress(stage: &str, len: usize) -> crate::progress::Progress {
    crate::progress::Progress::new(&format!("build {stage}"), len)
}

fn pair_counts(records: &[Record]) -> BTreeMap<String, usize> {
    let mut c = BTreeMap::new();
    c.insert("records".to_string(), records.len());
    for r in records {
        if let Record::Pair(p) = r {
            *c.entry("pairs".to_string()).or_default() += 1;
            if p.slow.is_pending() {
                *c.entry("pairs_without_slow".to_string()).or_default() += 1;
            }
            if let Some(v) = &p.verification {
                *c.entry(v.status.as_str().to_string()).or_default() += 1;
            }
        }
    }
    c
}

/// `verified by suite: llm-c 30, parboil 6` (every suite with a pair, zeros included), or
/// None when no pair was verified on a GPU at all.
fn verified_by_suite(records: &[Record]) -> Option<String> {
    let mut by: BTreeMap<&str, usize> = BTreeMap::new();
    let mut any = false;
    for r in records {
        if let Record::Pair(p) = r {
            let n = by.entry(p.suite.as_str()).or_default();
            if let Some(v) = &p.verification {
                any = true;
                if v.status == crate::record::Status::Verified {
                    *n += 1;
                }
            }
        }
    }
    any.then(|| {
        let parts: Vec<String> = by.iter().map(|(s, n)| format!("{s} {n}")).collect();
        format!("verified by suite: {}", parts.join(", "))
    })
}

fn write_step_output(dir: &Path, rel: &str, records: &[Record]) -> Result<String, BuildError> {
    let p = dir.join(rel);
    jsonl::write_records(&p, records)?;
    Ok(file_sha256(&p).unwrap_or_default())
}

/// What a chunked stage did.
struct Chunked {
    records: Vec<Record>,
    /// Further answers to the record at an index (synth's candidates beyond the first),
    /// placed after it when the stage is done.
    extra: BTreeMap<usize, Vec<Record>>,
    worked: usize,
    /// Pairs in chunks without a final answer (kept for this run, asked again next run).
    retry: usize,
    reused: usize,
    awaiting: usize,
    failed: usize,
    notes: Vec<String>,
}

/// How a chunked stage treats one chunk's answer.
enum Verdict {
    /// Final results: cache them.
    Final,
    /// Keep the answer for this run but ask again next time (e.g. synthesis still pending).
    Retry,
    /// The resource is missing (no GPU): keep the inputs, stop calling, report as awaiting.
    Await(String),
}

#[allow(clippy::too_many_arguments)] // one call site; a struct would only rename these.
/// The chunk length that splits `n` items into as few chunks of at most `chunk` as
/// possible, all of about one length: 130 pairs in chunks of 64 would go as 44 + 44 + 42,
/// not 64 + 64 + 2 (a chunk's GPUs wait on its longest pair; a last chunk of 2 would keep
/// one of two GPUs idle).
fn balanced(n: usize, chunk: usize) -> usize {
    let chunk = chunk.max(1);
    let k = n.div_ceil(chunk).max(1);
    n.div_ceil(k).max(1)
}

fn run_chunked(
    stage: &'static str,
    records: Vec<Record>,
    needs: impl Fn(&Pair) -> bool,
    chunk: usize,
    settings_key: &str,
    cache_dir: &Path,
    available: Result<(), String>,
    call: impl Fn(Vec<Record>) -> Result<Vec<Record>, StageError>,
    judge: impl Fn(&[Record]) -> Verdict,
) -> Result<Chunked, BuildError> {
    let mut out = Chunked {
        records,
        extra: BTreeMap::new(),
        worked: 0,
        retry: 0,
        reused: 0,
        awaiting: 0,
        failed: 0,
        notes: Vec::new(),
    };
    let todo: Vec<usize> = out
        .records
        .iter()
        .enumerate()
        .filter(|(_, r)| matches!(r, Record::Pair(p) if needs(p)))
        .map(|(i, _)| i)
        .collect();
    if todo.is_empty() {
        return Ok(out);
    }
    let mut unavailable = available.err();
    let pb = progress(stage, todo.len());
    for idx in todo.chunks(balanced(todo.len(), chunk)) {
        let input: Vec<Record> = idx.iter().map(|&i| out.records[i].clone()).collect();
        let ids: Vec<String> = input
            .iter()
            .map(|r| match r {
                Record::Pair(p) => p.id.clone(),
                _ => String::new(),
            })
            .collect();
        let text: Vec<String> = input
            .iter()
            .map(|r| serde_json::to_string(r).expect("records serialize"))
            .collect();
        let mut parts = vec![stage, settings_key];
        parts.extend(text.iter().map(String::as_str));
        let cache = cache_dir.join(format!("{}.jsonl", journal::key(&parts)));
        if let Ok(cached) = jsonl::read_records(&cache) {
            if let Some(slots) = by_input(&ids, cached) {
                for (&i, rs) in idx.iter().zip(slots) {
                    place(&mut out, i, rs);
                }
                out.reused += idx.len();
                pb.inc(idx.len(), "");
                continue;
            }
        }
        if unavailable.is_some() {
            out.awaiting += idx.len();
            pb.inc(idx.len(), "");
            continue;
        }
        delay();
        match call(input) {
            Ok(result) => {
                let pairs: Vec<Record> = result
                    .into_iter()
                    .filter(|r| matches!(r, Record::Pair(_)))
                    .collect();
                let slots = by_input(&ids, pairs.clone());
                if let (None, n) = (&slots, pairs.len()) {
                    out.failed += idx.len();
                    out.notes.push(format!(
                        "the stage answered {} pairs for a chunk of {}; kept the inputs",
                        n,
                        idx.len()
                    ));
                } else if let Some(slots) = slots {
                    match judge(&pairs) {
                        Verdict::Await(why) => {
                            out.awaiting += idx.len();
                            unavailable = Some(why);
                        }
                        v => {
                            if matches!(v, Verdict::Final) {
                                jsonl::write_records(&cache, &pairs)?;
                            } else {
                                out.retry += idx.len();
                            }
                            for (&i, rs) in idx.iter().zip(slots) {
                                place(&mut out, i, rs);
                            }
                            out.worked += idx.len();
                        }
                    }
                }
            }
            Err(e @ StageError::NotWired { .. }) => {
                out.awaiting += idx.len();
                unavailable = Some(e.to_string());
            }
            Err(e) => {
                out.failed += idx.len();
                out.notes.push(e.to_string());
            }
        }
        pb.inc(idx.len(), "");
    }
    pb.done();
    if let Some(why) = unavailable {
        if out.awaiting > 0 {
            out.notes
                .push(format!("{} pairs waiting: {why}", out.awaiting));
        }
    }
    if out.retry > 0 {
        out.notes.push(format!(
            "{} pairs in chunks without a final answer (see each pair's outcome); the next build asks again",
            out.retry
        ));
    }
    // Extra answers (synth's further candidates) follow the record they answer.
    if !out.extra.is_empty() {
        let extra = std::mem::take(&mut out.extra);
        let mut flat = Vec::with_capacity(out.records.len());
        for (i, r) in std::mem::take(&mut out.records).into_iter().enumerate() {
            flat.push(r);
            flat.extend(extra.get(&i).into_iter().flatten().cloned());
        }
        out.records = flat;
    }
    Ok(out)
}

/// A chunk's answer by input: every answered pair belongs to the input pair of its group
/// ([`Pair::group`]: its own id, or the pending pair a synth candidate was asked for), and
/// every input gets at least one, in input order. None when the answer does not fit.
fn by_input(ids: &[String], answered: Vec<Record>) -> Option<Vec<Vec<Record>>> {
    let pos: BTreeMap<&str, usize> = ids
        .iter()
        .enumerate()
        .map(|(k, id)| (id.as_str(), k))
        .collect();
    let mut slots: Vec<Vec<Record>> = vec![Vec::new(); ids.len()];
    for r in answered {
        let Record::Pair(p) = &r else { return None };
        // An input answers as itself (verify's answer to a synth candidate), or as a
        // candidate of its group (synth's answer to a pending pair).
        let k = *pos.get(p.id.as_str()).or_else(|| pos.get(p.group()))?;
        slots[k].push(r);
    }
    slots.iter().all(|s| !s.is_empty()).then_some(slots)
}

/// Input `i`'s answer: the first record in its place, the rest after it at the end.
fn place(out: &mut Chunked, i: usize, mut rs: Vec<Record>) {
    let rest = rs.split_off(1);
    out.records[i] = rs.pop().expect("by_input gives every input an answer");
    if rest.is_empty() {
        out.extra.remove(&i);
    } else {
        out.extra.insert(i, rest);
    }
}

fn settings_json<T: serde::Serialize>(t: &T) -> String {
    serde_json::to_string(t).expect("settings serialize")
}

/// Run the build. `shard`: work on that part of the pairs only and stop before export
/// (the shard outputs go to `<output>/shards/<i>-of-<n>/`; `merge` then `export` them).
pub fn build(
    cfg: &BuildConfig,
    shard: Option<Shard>,
    stages: &dyn Stages,
) -> Result<BuildReport, BuildError> {
    let out = match shard {
        Some(s) => cfg
            .output
            .join("shards")
            .join(format!("{}-of-{}", s.index, s.count)),
        None => cfg.output.clone(),
    };
    std::fs::create_dir_all(&out)
        .map_err(|source| BuildError::Io(crate::path_io::PathIo::new(out.clone(), source)))?;
    remove_stale_temp_files(&out);
    let mut run = Run {
        cfg,
        shard,
        stages,
        journal: Journal::load(&out),
        out,
        rows: Vec::new(),
        extract_key: String::new(),
        seconds: Vec::new(),
    };
    let mut t = std::time::Instant::now();
    let mut lap = |run: &mut Run, step: &'static str| {
        run.seconds.push((step, t.elapsed().as_secs_f64()));
        t = std::time::Instant::now();
    };
    let extracted = run.extract()?;
    lap(&mut run, "extract");
    // Synth first: capture then runs the programs of the pairs that have a slow side now,
    // synthesized ones included.
    let mut synthesized = run.synth(extracted)?;
    lap(&mut run, "synth");
    run.capture(&synthesized);
    lap(&mut run, "capture");
    let chosen = run.harnesses(&mut synthesized);
    lap(&mut run, "harness");
    let verified = run.verify(synthesized, chosen)?;
    if let Some(row) = run.rows.iter_mut().find(|r| r.stage == "verify") {
        if let Some(line) = verified_by_suite(&verified) {
            row.notes.push(line);
        }
    }
    lap(&mut run, "self-check + verify");
    run.export(&verified)?;
    lap(&mut run, "export");
    Ok(run.summary())
}

/// One build while its steps run: each step reads the journal, does its work (or reuses
/// it), records itself in the journal and adds its row to the summary.
struct Run<'a> {
    cfg: &'a BuildConfig,
    shard: Option<Shard>,
    stages: &'a dyn Stages,
    /// The output folder of this run (the shard's, for a sharded build).
    out: PathBuf,
    journal: Journal,
    rows: Vec<StepRow>,
    /// The extract step's key (the suites' content), once extract ran or was reused.
    extract_key: String,
    seconds: Vec<(&'static str, f64)>,
}

const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Pairs the verify stage works on: a slow side, not identical, and no verdict yet but
/// `no_gpu`. Every harness proves itself on the GPU before such a pair is timed.
fn needs_verify(p: &Pair) -> bool {
    p.slow.unit().is_some()
        && !p.identical
        && p.verification
            .as_ref()
            .is_none_or(|v| v.status == Status::NoGpu)
}

impl Run<'_> {
    /// The LLM response cache: `[synth] cache`, else `<output>/llm-cache`.
    fn llm_cache(&self) -> PathBuf {
        self.cfg
            .synth
            .cache
            .clone()
            .unwrap_or_else(|| self.cfg.output.join("llm-cache"))
    }

    fn extract(&mut self) -> Result<Vec<Record>, BuildError> {
        let cfg = self.cfg;
        let mut parts = vec![
            "extract".to_string(),
            VERSION.to_string(),
            self.shard.map(|s| s.to_string()).unwrap_or_default(),
            settings_json(&cfg.extract),
        ];
        // Keys hold content hashes, never paths: a moved project keeps its journal and caches.
        for s in &cfg.suites {
            parts.push(settings_json(&s.kind));
            parts.push(tree_sha256(&s.path, Some(&cfg.output)));
            if let Some(e) = &s.extractor {
                parts.push(tree_sha256(e, None));
            }
        }
        let extract_key = journal::key(&parts.iter().map(String::as_str).collect::<Vec<_>>());
        self.extract_key = extract_key.clone();
        delay();
        if let Some(step) = self.journal.reusable("extract", &extract_key, &self.out) {
            self.rows.push(reused_row("extract", step));
            return Ok(jsonl::read_records(&self.out.join(EXTRACTED))?);
        }
        let mut all = Vec::new();
        let mut failed = 0;
        let mut notes = Vec::new();
        let pb = progress("extract", cfg.suites.len());
        for s in &cfg.suites {
            let name = s.path.display().to_string();
            pb.start(&name);
            match self.stages.extract(s, &cfg.extract) {
                Ok(recs) => all.extend(recs),
                Err(e) => {
                    failed += 1;
                    notes.push(format!("{}: {e}", s.path.display()));
                }
            }
            pb.finish(&name);
        }
        pb.done();
        if let Some(s) = self.shard {
            all = shard_filter(all, s.index, s.count);
        }
        let sha = write_step_output(&self.out, EXTRACTED, &all)?;
        let step = Step {
            key: extract_key,
            complete: failed == 0,
            outputs: [(EXTRACTED.to_string(), sha)].into(),
            counts: pair_counts(&all),
        };
        self.rows.push(StepRow {
            stage: "extract",
            state: if failed == 0 { "ran" } else { "incomplete" },
            worked: cfg.suites.len() - failed,
            reused: 0,
            awaiting: 0,
            failed,
            counts: step.counts.clone(),
            notes,
        });
        self.journal.steps.insert("extract".into(), step);
        self.journal.save(&self.out)?;
        Ok(all)
    }

    fn synth(&mut self, extracted: Vec<Record>) -> Result<Vec<Record>, BuildError> {
        let cfg = self.cfg;
        let extracted_sha = file_sha256(&self.out.join(EXTRACTED)).unwrap_or_default();
        let llm_hash = cfg
            .synth
            .llm
            .as_deref()
            .map(|p| tree_sha256(p, None))
            .unwrap_or_default();
        // The cache folder's location is not part of the key: moving the cache changes nothing.
        let mut synth_settings = cfg.synth.clone();
        synth_settings.cache = None;
        synth_settings.llm = None;
        let synth_settings_key =
            journal::key(&[VERSION, &settings_json(&synth_settings), &llm_hash]);
        let synth_key = journal::key(&["synth", &extracted_sha, &synth_settings_key]);
        delay();
        if let Some(step) = self.journal.reusable("synth", &synth_key, &self.out) {
            self.rows.push(reused_row("synth", step));
            return Ok(jsonl::read_records(&self.out.join(SYNTHESIZED))?);
        }
        let cache = self.llm_cache();
        let available = match &cfg.synth.llm {
            Some(_) => Ok(()),
            None => Err("no LLM endpoint configured (set `llm = \"llm.toml\"` in [synth])".into()),
        };
        let stages = self.stages;
        let c = run_chunked(
            "synth",
            extracted,
            |p| p.slow.is_pending() && !p.identical,
            cfg.synth.chunk,
            &synth_settings_key,
            &cfg.output.join("cache").join("synth"),
            available,
            |chunk| stages.synth(chunk, &cfg.synth, &cache),
            |pairs| {
                if pairs
                    .iter()
                    .all(|r| matches!(r, Record::Pair(p) if p.slow.unit().is_some()))
                {
                    Verdict::Final
                } else {
                    Verdict::Retry
                }
            },
        )?;
        self.finish_chunked("synth", synth_key, SYNTHESIZED, c)
    }

    /// The capture step (`pipeline::capture`): the suites' own programs (those holding a
    /// pair this build can verify, after synth) run once under the launch recorder; its
    /// row goes to the table.
    fn capture(&mut self, records: &[Record]) {
        if self.shard.is_some() {
            return;
        }
        let c = super::capture::capture(&self.cfg.suites, records, &self.cfg.capture, &self.out);
        if c.no_recipe && self.cfg.capture.mode == super::config::CaptureMode::Auto {
            return;
        }
        self.rows.push(StepRow {
            stage: "capture",
            state: if c.skipped { "skipped" } else { "ran" },
            worked: c.suites,
            reused: 0,
            awaiting: 0,
            failed: 0,
            counts: c.counts,
            notes: c.notes,
        });
    }

    /// The capture folder verify replays from: `[verify] captures`, else the capture
    /// step's `<output>/captures` when it holds anything.
    fn captures(&self) -> Option<PathBuf> {
        self.cfg.verify.captures.clone().or_else(|| {
            let d = self.cfg.output.join(super::capture::CAPTURE_DIR);
            d.is_dir().then_some(d)
        })
    }

    /// Harnesses: hand-written, else captured, else inferred, else LLM-completed (attached
    /// to the pairs).
    fn harnesses(&mut self, synthesized: &mut Vec<Record>) -> super::harnesses::Chosen {
        let cfg = self.cfg;
        // Journaled: the same pairs, harness folders, settings and captures choose the same
        // harnesses, so a rerun reads them back instead of inferring again.
        let mut parts = vec![
            "harness".to_string(),
            VERSION.to_string(),
            self.extract_key.clone(),
            file_sha256(&self.out.join(SYNTHESIZED)).unwrap_or_default(),
            settings_json(&cfg.harness),
            super::capture::state_key(&self.cfg.output),
        ];
        // The suites' own harness files are in the extract key (their trees' content).
        for d in cfg.verify.harness_dirs.iter().chain(&cfg.harness.llm_dir) {
            parts.push(tree_sha256(d, Some(&cfg.output)));
        }
        parts.push(tree_sha256(&self.out.join(super::harnesses::LLM_DIR), None));
        let key = journal::key(&parts.iter().map(String::as_str).collect::<Vec<_>>());
        if let Some(step) = self.journal.reusable("harness", &key, &self.out) {
            if let Ok(recs) = jsonl::read_records(&self.out.join(HARNESSED)) {
                if recs.len() == synthesized.len() {
                    *synthesized = recs;
                    return super::harnesses::Chosen {
                        counts: step.counts.clone(),
                        notes: Vec::new(),
                    };
                }
            }
        }
        let chosen = self.choose_harnesses(synthesized);
        if let Ok(sha) = write_step_output(&self.out, HARNESSED, synthesized) {
            self.journal.steps.insert(
                "harness".into(),
                Step {
                    key,
                    complete: true,
                    outputs: [(HARNESSED.to_string(), sha)].into(),
                    counts: chosen.counts.clone(),
                },
            );
            if let Err(e) = self.journal.save(&self.out) {
                tracing::warn!("journal: {e}");
            }
        }
        chosen
    }

    fn choose_harnesses(&self, synthesized: &mut [Record]) -> super::harnesses::Chosen {
        let cfg = self.cfg;
        let hand_dirs = self.hand_dirs();
        let captures = self
            .captures()
            .map(|d| crate::capture::CaptureIndex::open(&d));
        let choose = |recs: &mut [Record]| {
            super::harnesses::choose(
                recs,
                &cfg.suites,
                &hand_dirs,
                &self.out,
                &cfg.harness,
                captures.as_ref(),
            )
        };
        let mut chosen = choose(synthesized);
        if cfg.harness.complete && cfg.synth.llm.is_some() {
            let done = super::harnesses::complete_missing(
                synthesized,
                &cfg.suites,
                &self.out,
                &cfg.harness,
                cfg.synth.to_synth(&self.llm_cache(), None),
            );
            if done.done > 0 {
                chosen = choose(synthesized);
            }
            if done.done + done.failed > 0 {
                chosen.counts.insert("llm_completed".into(), done.done);
                chosen
                    .counts
                    .insert("llm_not_completed".into(), done.failed);
            }
            chosen.notes.extend(done.notes);
        }
        chosen
    }

    /// `[verify] harness_dirs`, then each suite folder (`benchmarks/<app>/harness.toml`).
    fn hand_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = self.cfg.verify.harness_dirs.clone();
        dirs.extend(
            self.cfg
                .suites
                .iter()
                .filter(|s| s.path.is_dir())
                .map(|s| s.path.clone()),
        );
        dirs
    }

    /// The verify step's settings key: the settings, the harness folders' contents and
    /// the chosen harnesses (inferred and LLM harnesses live in the output folder, which
    /// the suite hashes leave out).
    fn verify_settings_key(&self) -> String {
        let cfg = self.cfg;
        let mut verify_settings = cfg.verify.clone();
        verify_settings.harness_dirs.clear();
        let mut parts = vec![VERSION.to_string(), settings_json(&verify_settings)];
        for d in &cfg.verify.harness_dirs {
            parts.push(tree_sha256(d, Some(&cfg.output)));
        }
        let mut harness_settings = cfg.harness.clone();
        harness_settings.llm_dir = None;
        parts.push(settings_json(&harness_settings));
        parts.push(tree_sha256(&self.out.join("harnesses"), None));
        // What was captured (each suite's program journal), when anything was.
        let captured = super::capture::state_key(&self.cfg.output);
        if !captured.is_empty() {
            parts.push(captured);
        }
        if let Some(d) = &cfg.harness.llm_dir {
            parts.push(tree_sha256(d, None));
        }
        journal::key(&parts.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// The harness row (reported with verify, whose reuse it shares), then verify itself.
    fn verify(
        &mut self,
        synthesized: Vec<Record>,
        chosen: super::harnesses::Chosen,
    ) -> Result<Vec<Record>, BuildError> {
        let cfg = self.cfg;
        let synthesized_sha = file_sha256(&self.out.join(SYNTHESIZED)).unwrap_or_default();
        let verify_settings_key = self.verify_settings_key();
        let verify_key = journal::key(&["verify", &synthesized_sha, &verify_settings_key]);
        delay();
        let reuse_verify = self
            .journal
            .reusable("verify", &verify_key, &self.out)
            .is_some();
        self.rows.push(StepRow {
            stage: "harness",
            state: if reuse_verify { "reused" } else { "ran" },
            worked: if reuse_verify {
                0
            } else {
                chosen.counts.values().sum()
            },
            reused: 0,
            awaiting: 0,
            failed: 0,
            counts: chosen.counts,
            notes: if reuse_verify {
                Vec::new()
            } else {
                chosen.notes
            },
        });
        if let Some(step) = self.journal.reusable("verify", &verify_key, &self.out) {
            self.rows.push(reused_row("verify", step));
            return Ok(jsonl::read_records(&self.out.join(VERIFIED))?);
        }
        // Harnesses are also looked for in each suite (`benchmarks/<app>/harness.toml`).
        let mut verify_run = cfg.verify.clone();
        verify_run.captures = self.captures();
        for s in &cfg.suites {
            if s.path.is_dir() {
                verify_run.harness_dirs.push(s.path.clone());
            }
        }
        let compile_cache = cfg.output.join("cache").join("compile");
        let stages = self.stages;
        let selfcheck = cfg.harness.selfcheck;
        // Each chunk self-checks its pairs' harnesses, then verifies the pairs that passed:
        // both are in the chunk's cached answer, so a killed build redoes at most the
        // chunk in flight, self-check included.
        let c = run_chunked(
            "verify",
            synthesized,
            needs_verify,
            cfg.verify.chunk,
            &verify_settings_key,
            &cfg.output.join("cache").join("verify"),
            Ok(()),
            |chunk| {
                let (go, stopped): (Vec<Record>, Vec<Record>) = chunk
                    .into_iter()
                    .partition(|r| matches!(r, Record::Pair(p) if needs_verify(p)));
                let mut out = match go.is_empty() {
                    true => Vec::new(),
                    false => stages.verify(go, &verify_run, &compile_cache, selfcheck)?,
                };
                out.extend(stopped);
                Ok(out)
            },
            |pairs| {
                let no_gpu = pairs.iter().find_map(|r| match r {
                    Record::Pair(p) => p
                        .verification
                        .as_ref()
                        .filter(|v| v.status == Status::NoGpu)
                        .map(|v| v.reason.clone()),
                    _ => None,
                });
                match no_gpu {
                    Some(reason) if reason.to_lowercase().contains("gpu") => Verdict::Await(reason),
                    Some(reason) => Verdict::Await(format!("no GPU: {reason}")),
                    None => Verdict::Final,
                }
            },
        )?;
        // The self-check figures, from every pair's record (this run's chunks and reused ones).
        let (mut pass, mut fail, mut stopped) = (0, 0, 0);
        for r in &c.records {
            let Record::Pair(p) = r else { continue };
            let Some(h) = &p.harness_origin else { continue };
            match h.selfcheck_pass {
                Some(true) => pass += 1,
                Some(false) => {
                    fail += 1;
                    let stopping = h.origin != crate::record::HarnessOrigin::Hand;
                    if stopping
                        && p.verification
                            .as_ref()
                            .is_some_and(|v| v.status == Status::HarnessError)
                    {
                        stopped += 1;
                    }
                }
                None => {}
            }
        }
        if let Some(row) = self.rows.iter_mut().find(|r| r.stage == "harness") {
            if pass + fail > 0 {
                row.counts.insert("selfcheck_pass".into(), pass);
                row.counts.insert("selfcheck_fail".into(), fail);
            }
            if stopped > 0 {
                row.notes.push(format!(
                    "{stopped} pairs stopped: their inferred or LLM harness failed its self-check (harness_error)"
                ));
            }
        }
        self.finish_chunked("verify", verify_key, VERIFIED, c)
    }

    fn export(&mut self, verified: &[Record]) -> Result<(), BuildError> {
        if self.shard.is_some() {
            self.rows.push(StepRow {
                stage: "export",
                state: "skipped",
                worked: 0,
                reused: 0,
                awaiting: 0,
                failed: 0,
                counts: BTreeMap::new(),
                notes: vec![format!(
                    "sharded build: merge the shards' {VERIFIED} with `kernelpair merge`, then `kernelpair export`"
                )],
            });
            return Ok(());
        }
        let export_key = self.export_key();
        delay();
        if let Some(step) = self.journal.reusable("export", &export_key, &self.out) {
            self.rows.push(reused_row("export", step));
            return Ok(());
        }
        let cfg = self.cfg;
        let out = &self.out;
        let ecfg = ExportConfig::new(cfg.export.clone())?;
        let dataset = out.join(DATASET);
        let summary = export::export(verified, &dataset, &ecfg)?;
        // Without a GPU, the pairs waiting for one, as they would be exported.
        let mut harness_dirs = cfg.verify.harness_dirs.clone();
        harness_dirs.extend(cfg.suites.iter().map(|s| s.path.clone()));
        let base = harness_dirs.first().cloned().unwrap_or_default();
        let waiting = crate::verify::launches::mark_waiting(verified, &base, &harness_dirs);
        let preview = export::export_preview(&waiting, &dataset.join(PREVIEW), &ecfg)?;
        let mut outputs = BTreeMap::new();
        let preview_files = preview
            .iter()
            .flat_map(|p| &p.files)
            .map(|f| format!("{PREVIEW}/{f}"));
        for f in summary.files.iter().cloned().chain(preview_files) {
            let rel = format!("{DATASET}/{f}");
            outputs.insert(
                rel.clone(),
                file_sha256(&out.join(&rel)).unwrap_or_default(),
            );
        }
        let mut counts = BTreeMap::new();
        counts.insert("input_pairs".to_string(), summary.report.input_pairs);
        counts.insert("exported".to_string(), summary.report.kept);
        counts.insert("train".to_string(), summary.train);
        counts.insert("test".to_string(), summary.test);
        let mut notes = Vec::new();
        if summary.report.kept == 0 {
            notes.push("no verified pairs yet: the dataset is empty".to_string());
        }
        if let Some(p) = &preview {
            counts.insert("preview".to_string(), p.report.kept);
            notes.push(format!(
                "{} unverified pairs (compiled, waiting for a GPU) previewed in {DATASET}/{PREVIEW}/",
                p.report.kept
            ));
        }
        self.rows.push(StepRow {
            stage: "export",
            state: "ran",
            worked: summary.report.input_pairs,
            reused: 0,
            awaiting: 0,
            failed: 0,
            counts: counts.clone(),
            notes,
        });
        self.journal.steps.insert(
            "export".into(),
            Step {
                key: export_key,
                complete: true,
                outputs,
                counts,
            },
        );
        self.journal.save(&self.out)?;
        Ok(())
    }

    /// The export step's key: the verified records, the export settings, and the contents
    /// of the templates and tokenizer they name.
    fn export_key(&self) -> String {
        let cfg = self.cfg;
        let verified_sha = file_sha256(&self.out.join(VERIFIED)).unwrap_or_default();
        let templates_hash = cfg
            .export
            .templates
            .as_deref()
            .map(|p| tree_sha256(p, None))
            .unwrap_or_default();
        let tokenizer_hash = cfg
            .export
            .tokenizer
            .as_deref()
            .map(|t| match t {
                "o200k_base" | "cl100k_base" => t.to_string(),
                path => tree_sha256(Path::new(path), None),
            })
            .unwrap_or_default();
        let mut export_settings = cfg.export.clone();
        export_settings.templates = None;
        export_settings.tokenizer = None;
        journal::key(&[
            "export",
            VERSION,
            &verified_sha,
            &settings_json(&export_settings),
            &templates_hash,
            &tokenizer_hash,
        ])
    }

    /// The report: every step's row, and a partial exit when any step failed items.
    fn summary(self) -> BuildReport {
        let exit = if self.rows.iter().any(|r| r.failed > 0) {
            crate::exit::PARTIAL
        } else {
            crate::exit::OK
        };
        BuildReport {
            rows: self.rows,
            output: self.out,
            exit,
            seconds: self.seconds,
        }
    }

    /// Write a chunked step's output, journal it, and add its row.
    fn finish_chunked(
        &mut self,
        stage: &'static str,
        key: String,
        file: &str,
        c: Chunked,
    ) -> Result<Vec<Record>, BuildError> {
        let sha = write_step_output(&self.out, file, &c.records)?;
        let complete = c.awaiting == 0 && c.failed == 0 && c.retry == 0;
        let counts = pair_counts(&c.records);
        self.journal.steps.insert(
            stage.into(),
            Step {
                key,
                complete,
                outputs: [(file.to_string(), sha)].into(),
                counts: counts.clone(),
            },
        );
        self.journal.save(&self.out)?;
        self.rows.push(StepRow {
            stage,
            state: if complete { "ran" } else { "incomplete" },
            worked: c.worked,
            reused: c.reused,
            awaiting: c.awaiting,
            failed: c.failed,
            counts,
            notes: c.notes,
        });
        Ok(c.records)
    }
}

/// A killed run can leave the temp file of an atomic write (`.<name>.tmp.<pid>`) behind;
/// it never replaced anything, so it is only clutter.
fn remove_stale_temp_files(dir: &Path) {
    for e in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
    {
        let name = e.file_name().to_string_lossy();
        let stale = name.starts_with('.')
            && name
                .rsplit_once(".tmp.")
                .is_some_and(|(_, pid)| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()));
        if stale && e.file_type().is_file() {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn reused_row(stage: &'static str, step: &Step) -> StepRow {
    StepRow {
        stage,
        state: "reused",
        worked: 0,
        reused: 0,
        awaiting: 0,
        failed: 0,
        counts: step.counts.clone(),
        notes: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The build's summary names each suite's verified count, zeros included, and says
    /// nothing before any pair was verified on a GPU.
    #[test]
    fn chunks_are_balanced_under_the_limit() {
        assert_eq!(balanced(130, 64), 44);
        assert_eq!(balanced(128, 64), 64);
        assert_eq!(balanced(10, 64), 10);
        assert_eq!(balanced(7, 2), 2);
        assert_eq!(balanced(0, 16), 1);
        assert_eq!(balanced(5, 0), 1, "a chunk of 0 counts as 1");
        let lens: Vec<usize> = (0..130)
            .collect::<Vec<_>>()
            .chunks(balanced(130, 64))
            .map(|c| c.len())
            .collect();
        assert_eq!(lens, [44, 44, 42]);
    }

    #[test]
    fn the_verify_row_counts_verified_pairs_by_suite() {
        use crate::record::{KernelUnit, Pair, PairRule, Slow, Status, Verification};
        let pair = |suite: &str, status: Option<Status>| {
            let mut u = KernelUnit::for_test("k", &[("float*", "a")], "");
            u.suite = suite.into();
            let mut p = Pair::new(Slow::natural(u.clone()), u, PairRule::Name);
            p.suite = suite.into();
            p.verification = status.map(|status| Verification {
                status,
                reason: String::new(),
                device: None,
                evidence: Default::default(),
                speedup: None,
                tool_version: String::new(),
                flags: vec![],
            });
            Record::Pair(Box::new(p))
        };
        assert_eq!(verified_by_suite(&[pair("llm-c", None)]), None);
        let rs = [
            pair("rodinia", Some(Status::Verified)),
            pair("llm-c", Some(Status::Verified)),
            pair("llm-c", Some(Status::NotFaster)),
            pair("llm-c", Some(Status::Verified)),
            pair("parboil", None),
        ];
        assert_eq!(
            verified_by_suite(&rs).as_deref(),
            Some("verified by suite: llm-c 2, parboil 0, rodinia 1")
        );
    }
    use crate::pipeline::config::{SuiteKind, SuiteSpec, SynthSettings, VerifySettings};
    use crate::record::{Slow, Speedup, Verification};
    use std::sync::atomic::{AtomicUsize, Ordering};

    const PAIRS: &str = include_str!("../../tests/data/pairs.jsonl");

    fn fixture() -> Vec<Record> {
        PAIRS
            .lines()
            .map(|l| crate::record::upgrade::parse_line(l).unwrap().record)
            .collect()
    }

    /// Stages that answer instantly and count their calls; `fail_verify_at` makes the n-th
    /// verify call (1-based) fail, as a crash mid-stage would leave it.
    struct Fake {
        gpu: bool,
        synth_calls: AtomicUsize,
        verify_calls: AtomicUsize,
        fail_verify_at: Option<usize>,
        /// False: synth answers but fills no slot (a rejected or missing answer).
        synth_fills: bool,
    }

    impl Fake {
        fn new(gpu: bool, fail_verify_at: Option<usize>) -> Fake {
            Fake {
                gpu,
                synth_calls: AtomicUsize::new(0),
                verify_calls: AtomicUsize::new(0),
                fail_verify_at,
                synth_fills: true,
            }
        }
    }

    impl Stages for Fake {
        fn extract(
            &self,
            _: &SuiteSpec,
            _: &crate::pipeline::config::ExtractSettings,
        ) -> Result<Vec<Record>, StageError> {
            Ok(fixture())
        }
        fn synth(
            &self,
            pairs: Vec<Record>,
            _: &SynthSettings,
            _: &Path,
        ) -> Result<Vec<Record>, StageError> {
            self.synth_calls.fetch_add(1, Ordering::SeqCst);
            Ok(pairs
                .into_iter()
                .map(|r| match r {
                    Record::Pair(p) if !self.synth_fills => Record::Pair(p),
                    Record::Pair(mut p) => {
                        let mut slow = p.fast.clone();
                        slow.source = slow.source.replace("* 4", "* 1");
                        slow.variant = "synthesized".into();
                        p.slow = Slow::Synthesized {
                            unit: Box::new(slow),
                            outcome: Box::new(crate::record::SynthOutcome {
                                model: "fake".into(),
                                prompt_hash: "h".into(),
                                attempts: 1,
                                ..Default::default()
                            }),
                        };
                        Record::Pair(p)
                    }
                    r => r,
                })
                .collect())
        }
        fn verify(
            &self,
            pairs: Vec<Record>,
            _: &VerifySettings,
            _: &Path,
            _: bool,
        ) -> Result<Vec<Record>, StageError> {
            let n = self.verify_calls.fetch_add(1, Ordering::SeqCst) + 1;
            if self.fail_verify_at == Some(n) {
                return Err(StageError::Verify(crate::verify::VerifyError::Partial {
                    path: "verified.jsonl.partial".into(),
                    source: std::io::Error::other("worker died"),
                }));
            }
            Ok(pairs
                .into_iter()
                .map(|r| match r {
                    Record::Pair(mut p) => {
                        p.verification = Some(Verification {
                            status: if self.gpu {
                                Status::Verified
                            } else {
                                Status::NoGpu
                            },
                            reason: if self.gpu {
                                "ok".into()
                            } else {
                                "no CUDA driver".into()
                            },
                            device: None,
                            evidence: Default::default(),
                            speedup: self.gpu.then(|| Speedup {
                                size_set: "large".into(),
                                median: 2.5,
                                ci_low: 2.4,
                                ci_high: 2.6,
                            }),
                            tool_version: "test".into(),
                            flags: vec![],
                        });
                        Record::Pair(p)
                    }
                    r => r,
                })
                .collect())
        }
    }

    fn config(out: &Path, llm: bool) -> BuildConfig {
        BuildConfig {
            output: out.to_path_buf(),
            suites: vec![SuiteSpec {
                path: out.join("no-suite"),
                kind: SuiteKind::Records,
                extractor: None,
                data: None,
            }],
            extract: Default::default(),
            synth: SynthSettings {
                llm: llm.then(|| out.join("llm.toml")),
                chunk: 1,
                ..Default::default()
            },
            verify: VerifySettings {
                chunk: 1,
                ..Default::default()
            },
            export: Default::default(),
            harness: Default::default(),
            capture: Default::default(),
        }
    }

    fn same_files(a: &Path, b: &Path) {
        let (fa, fb) = (files(a), files(b));
        assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
        for (k, v) in &fa {
            assert!(*v == fb[k], "{k} differs");
        }
    }

    fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
        walkdir::WalkDir::new(dir)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| {
                (
                    e.path().strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect()
    }

    /// synth with `candidates` answers one pending pair with several pairs (its group):
    /// they follow the input's place in order, on the first run and from the chunk cache.
    #[test]
    fn a_stage_may_answer_a_pair_with_its_candidates() {
        use crate::record::{Candidate, SynthOutcome, Undo};
        let recs: Vec<Record> = fixture().into_iter().take(3).collect();
        let ids: Vec<String> = recs
            .iter()
            .map(|r| match r {
                Record::Pair(p) => p.id.clone(),
                _ => unreachable!(),
            })
            .collect();
        let candidate = |p: &Pair, undo: Undo, id: &str| {
            let mut q = p.clone();
            q.id = id.into();
            let unit = q.fast.clone();
            q.slow = Slow::Synthesized {
                unit: Box::new(unit),
                outcome: Box::new(SynthOutcome {
                    candidate: Some(Candidate {
                        group: p.id.clone(),
                        undo,
                    }),
                    ..SynthOutcome::default()
                }),
            };
            Record::Pair(Box::new(q))
        };
        // The second pair gets two candidates; the others answer as they are.
        let call = |chunk: Vec<Record>| -> Result<Vec<Record>, StageError> {
            let mut out = Vec::new();
            for r in chunk {
                match &r {
                    Record::Pair(p) if p.id == ids[1] => {
                        out.push(candidate(p, Undo::All, &p.id));
                        let one = Undo::One {
                            technique: "shared_memory".into(),
                        };
                        out.push(candidate(p, one, "cand-2"));
                    }
                    _ => out.push(r),
                }
            }
            Ok(out)
        };
        let dir = tempfile::tempdir().unwrap();
        let order = |c: &Chunked| -> Vec<String> {
            c.records
                .iter()
                .map(|r| match r {
                    Record::Pair(p) => p.id.clone(),
                    _ => String::new(),
                })
                .collect()
        };
        let want = [
            ids[0].clone(),
            ids[1].clone(),
            "cand-2".into(),
            ids[2].clone(),
        ];
        let mut synthesized = Vec::new();
        for pass in ["ran", "cached"] {
            let c = run_chunked(
                "synth",
                recs.clone(),
                |_| true,
                2,
                "k",
                dir.path(),
                Ok(()),
                call,
                |_| Verdict::Final,
            )
            .unwrap();
            assert_eq!(order(&c), want, "{pass}");
            assert_eq!((c.failed, c.records.len()), (0, 4), "{pass}");
            assert_eq!(c.reused, if pass == "cached" { 3 } else { 0 }, "{pass}");
            synthesized = c.records;
        }
        // The candidates go on to the next stage (verify) as inputs of their own, and each
        // answer is placed by its own id, not its group's (in the public build's first
        // per-technique run, every verify verdict was dropped: "kept the inputs").
        let verified = run_chunked(
            "verify",
            synthesized,
            |_| true,
            3,
            "k",
            dir.path(),
            Ok(()),
            |chunk| {
                Ok(chunk
                    .into_iter()
                    .map(|r| match r {
                        Record::Pair(mut p) => {
                            p.verification = Some(Verification {
                                status: Status::Verified,
                                reason: p.id.clone(),
                                device: None,
                                evidence: Default::default(),
                                speedup: None,
                                tool_version: "test".into(),
                                flags: vec![],
                            });
                            Record::Pair(p)
                        }
                        r => r,
                    })
                    .collect())
            },
            |_| Verdict::Final,
        )
        .unwrap();
        assert_eq!(
            (verified.failed, verified.worked),
            (0, 4),
            "{:?}",
            verified.notes
        );
        assert_eq!(order(&verified), want);
        for r in &verified.records {
            let Record::Pair(p) = r else { continue };
            assert_eq!(
                p.verification.as_ref().map(|v| v.reason.as_str()),
                Some(p.id.as_str())
            );
        }
        // An answer naming no input pair does not fit: the chunk keeps its inputs.
        assert!(by_input(&ids[..1], vec![recs[1].clone()]).is_none());
        assert!(
            by_input(&ids[..2], vec![recs[0].clone()]).is_none(),
            "every input answered"
        );
    }

    #[test]
    fn without_gpu_or_endpoint_every_stage_that_can_runs_and_the_rest_waits() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = config(dir.path(), false);
        let fake = Fake::new(false, None);
        let r = build(&cfg, None, &fake).unwrap();
        assert_eq!(r.exit, crate::exit::OK, "{}", r.table());
        let row = |s: &str| r.rows.iter().find(|x| x.stage == s).unwrap().clone();
        assert_eq!(row("synth").awaiting, 1, "the pending pair");
        assert_eq!(fake.synth_calls.load(Ordering::SeqCst), 0);
        // Two pairs need a GPU (never verified, no_gpu); the first call says no GPU and no
        // further calls are made.
        assert_eq!(row("verify").awaiting, 2, "{}", r.table());
        assert_eq!(fake.verify_calls.load(Ordering::SeqCst), 1);
        assert!(
            r.table()
                .contains("verify: 2 pairs waiting: no GPU: no CUDA driver"),
            "{}",
            r.table()
        );
        assert_eq!(row("export").counts["exported"], 7);
        let j = Journal::load(dir.path());
        assert!(j.steps["extract"].complete && !j.steps["verify"].complete);

        // On a machine with a GPU and an endpoint the waiting work is done; finished steps are reused.
        let cfg = config(dir.path(), true);
        let fake = Fake::new(true, None);
        let r = build(&cfg, None, &fake).unwrap();
        let row = |s: &str| r.rows.iter().find(|x| x.stage == s).unwrap().clone();
        assert_eq!(row("extract").state, "reused");
        assert_eq!(fake.synth_calls.load(Ordering::SeqCst), 1);
        // fresh, nogpu, and the newly synthesized pair.
        assert_eq!(fake.verify_calls.load(Ordering::SeqCst), 3);
        assert_eq!(row("verify").counts["verified"], 13, "{}", r.table());
        assert!(row("export").counts["exported"] > 7, "{}", r.table());
    }

    #[test]
    fn a_failed_run_resumes_without_redoing_finished_chunks_and_ends_byte_identical() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        // Uninterrupted.
        let full = Fake::new(true, None);
        build(&config(a.path(), true), None, &full).unwrap();
        assert_eq!(full.verify_calls.load(Ordering::SeqCst), 3);
        // Interrupted at the second verify chunk, then resumed.
        let broken = Fake::new(true, Some(2));
        let r = build(&config(b.path(), true), None, &broken).unwrap();
        assert_eq!(r.exit, crate::exit::PARTIAL);
        let resumed = Fake::new(true, None);
        let r = build(&config(b.path(), true), None, &resumed).unwrap();
        assert_eq!(r.exit, crate::exit::OK, "{}", r.table());
        assert_eq!(
            resumed.synth_calls.load(Ordering::SeqCst),
            0,
            "synth chunk came from cache"
        );
        assert_eq!(
            resumed.verify_calls.load(Ordering::SeqCst),
            1,
            "only the failed chunk is verified again"
        );
        let verify = r.rows.iter().find(|x| x.stage == "verify").unwrap();
        assert_eq!((verify.worked, verify.reused), (1, 2));
        same_files(a.path(), b.path());
        // A third run reuses every step.
        let idle = Fake::new(true, None);
        let r = build(&config(b.path(), true), None, &idle).unwrap();
        assert!(r.rows.iter().all(|x| x.state == "reused"), "{}", r.table());
        same_files(a.path(), b.path());
        // The harness step is journaled too: with its output in place, a rerun reads the
        // chosen harnesses back and infers nothing (the inferred folder is not rewritten).
        let j = Journal::load(b.path());
        assert!(j.steps.get("harness").is_some_and(|s| s.complete), "{j:?}");
        let inferred = b.path().join(super::super::harnesses::INFERRED_DIR);
        let before = std::fs::read_dir(&inferred).map(|d| d.count()).unwrap_or(0);
        assert!(before > 0, "the fake's pairs had harnesses inferred");
        std::fs::remove_dir_all(&inferred).unwrap();
        build(&config(b.path(), true), None, &Fake::new(true, None)).unwrap();
        assert!(!inferred.exists(), "a reused harness step infers nothing");
    }

    #[test]
    fn synthesis_without_a_final_answer_is_asked_again_next_run() {
        let dir = tempfile::tempdir().unwrap();
        let mut fake = Fake::new(true, None);
        fake.synth_fills = false;
        let r = build(&config(dir.path(), true), None, &fake).unwrap();
        assert!(
            r.table()
                .contains("1 pairs in chunks without a final answer"),
            "{}",
            r.table()
        );
        assert!(!Journal::load(dir.path()).steps["synth"].complete);
        let again = Fake::new(true, None);
        build(&config(dir.path(), true), None, &again).unwrap();
        assert_eq!(again.synth_calls.load(Ordering::SeqCst), 1);
        assert!(Journal::load(dir.path()).steps["synth"].complete);
    }

    #[test]
    fn stale_temp_files_of_a_killed_write_are_removed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("dataset/chat")).unwrap();
        for f in [".verified.jsonl.tmp.123", "dataset/chat/.train.jsonl.tmp.9"] {
            std::fs::write(dir.path().join(f), "half").unwrap();
        }
        std::fs::write(dir.path().join("keep.tmp.1"), "mine").unwrap();
        build(&config(dir.path(), false), None, &Fake::new(false, None)).unwrap();
        assert!(!dir.path().join(".verified.jsonl.tmp.123").exists());
        assert!(!dir.path().join("dataset/chat/.train.jsonl.tmp.9").exists());
        assert!(dir.path().join("keep.tmp.1").exists());
    }

    #[test]
    fn sharded_builds_merged_equal_one_build() {
        let one = tempfile::tempdir().unwrap();
        build(&config(one.path(), true), None, &Fake::new(true, None)).unwrap();
        let whole = jsonl::read_records(&one.path().join(VERIFIED)).unwrap();
        let sh = tempfile::tempdir().unwrap();
        let mut parts = Vec::new();
        for i in 0..2 {
            let s = Shard { index: i, count: 2 };
            let r = build(&config(sh.path(), true), Some(s), &Fake::new(true, None)).unwrap();
            assert!(r.output.ends_with(format!("shards/{i}-of-2")));
            let part = jsonl::read_records(&r.output.join(VERIFIED)).unwrap();
            assert!(!part.is_empty() && part.len() < whole.len());
            parts.push(part);
        }
        let merged = crate::dataset::merge::merge(parts);
        assert_eq!(merged.duplicates, 0);
        assert_eq!(
            merged.records,
            crate::dataset::merge::merge([whole]).records
        );
    }
}
