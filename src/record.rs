//! The records every stage reads and writes: one versioned JSONL line per record.
//!
//! A line is `{"version":3,"type":"unit"|"pair"|"unpaired"|"skipped","data":{…}}`.
//! Each stage reads lines it understands and passes the others through, so a
//! file can be fed from one stage to the next without loss.

mod reasons;
pub mod upgrade;

pub use reasons::{SkipReason, UnpairedReason};

pub use crate::evidence::{Evidence, Speedup, Status};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Version of the JSONL record format; bumped on any incompatible change.
/// 2: `Verification.evidence` is typed ([`Evidence`]). Version 1 files read as they
/// are: what verify wrote there has the same layout.
/// 3: a pair's slow slot is one [`Slow`] (no `origin`, no top-level `synth`), its `rule`
/// and synth reasons are enums, and synth keeps the pair id. Version 1 and 2 pair lines
/// are converted on read ([`upgrade`]).
pub const RECORD_VERSION: u32 = 3;

/// One line of a kernelpair JSONL file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Line {
    pub version: u32,
    #[serde(flatten)]
    pub record: Record,
}

impl Line {
    pub fn new(record: Record) -> Self {
        Line {
            version: RECORD_VERSION,
            record,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum Record {
    Unit(Box<KernelUnit>),
    Pair(Box<Pair>),
    Unpaired(Unpaired),
    Skipped(Skipped),
}

/// A stable short content hash (first 16 hex digits of SHA-256 over the parts,
/// each followed by a NUL so that ("ab","c") and ("a","bc") differ).
pub fn content_id(parts: &[&str]) -> String {
    let mut h = Sha256::new();
    for p in parts {
        h.update(p.as_bytes());
        h.update([0u8]);
    }
    hex::encode(&h.finalize()[..8])
}

/// One `__global__` kernel made self-contained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelUnit {
    /// Content hash over suite, benchmark, variant, path, kernel and source.
    pub id: String,
    pub suite: String,
    pub benchmark: String,
    /// Variant folder, e.g. `cuda_base`, `cuda`, `cuda_tex`; empty for generic trees.
    pub variant: String,
    /// Path of the file that defines the kernel, relative to the suite root, `/`-separated.
    pub path: String,
    /// 1-based line of the kernel's definition in `path`.
    pub line: u32,
    pub kernel: String,
    pub params: Vec<Param>,
    /// Template parameter list text (`typename T, int N`), when the kernel is a template.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub template_params: Vec<String>,
    /// The isolated source: everything the kernel needs, nothing else; compiles alone under NVRTC.
    pub source: String,
    /// Symbol to look the kernel up by in the compiled module: the plain name for
    /// `extern "C"` kernels, or a name expression (`k<float>`) for templates.
    pub symbol: String,
    pub pulled: Pulled,
    pub features: Features,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launch_sites: Vec<LaunchSite>,
    pub provenance: Provenance,
    /// Compile flags from the program's own build (`-DNAME=VALUE`, `--std=c++20`; see
    /// `suite::buildflags`): the compile check and verify pass them to NVRTC, so the unit
    /// compiles as the program's build compiles it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub build_flags: Vec<String>,
    /// NVRTC compile check; absent when not run (e.g. `--no-compile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile: Option<CompileCheck>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
}

/// The parts of a unit that come from the kernel's text: what isolation (extract,
/// validate) or synth's parse of an answer finds.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitBody {
    pub kernel: String,
    pub line: u32,
    pub params: Vec<Param>,
    pub template_params: Vec<String>,
    /// The unit: compiles alone under NVRTC (unless a diagnostic says why not).
    pub source: String,
    /// Name to look the kernel up by: the plain name (`extern "C"`), or for a template
    /// kernel its name, to which the verify stage adds `<…>`.
    pub symbol: String,
    pub pulled: Pulled,
    pub features: Features,
    pub diagnostics: Vec<Diagnostic>,
}

/// Where a unit comes from: with the kernel's name and source, what its id hashes.
#[derive(Debug, Clone, Copy)]
pub struct UnitPlace<'a> {
    pub suite: &'a str,
    pub benchmark: &'a str,
    pub variant: &'a str,
    pub path: &'a str,
}

impl KernelUnit {
    /// The one way a unit is made (extract, validate and synth all come here), so the id
    /// always hashes the same fields. Launch sites, provenance and the compile check are
    /// the caller's to add.
    pub fn new(place: UnitPlace, body: UnitBody) -> KernelUnit {
        KernelUnit {
            id: content_id(&[
                place.suite,
                place.benchmark,
                place.variant,
                place.path,
                &body.kernel,
                &body.source,
            ]),
            suite: place.suite.into(),
            benchmark: place.benchmark.into(),
            variant: place.variant.into(),
            path: place.path.into(),
            line: body.line,
            kernel: body.kernel,
            params: body.params,
            template_params: body.template_params,
            source: body.source,
            symbol: body.symbol,
            pulled: body.pulled,
            features: body.features,
            launch_sites: vec![],
            provenance: Provenance::default(),
            build_flags: vec![],
            compile: None,
            diagnostics: body.diagnostics,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Param {
    pub name: String,
    /// Type as written, normalized to single spaces (`const float *`, `int`).
    #[serde(rename = "type")]
    pub ty: String,
}

/// What isolation pulled into the unit, by name, in the order it appears in the unit.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pulled {
    #[serde(default)]
    pub helpers: Vec<String>,
    #[serde(default)]
    pub globals: Vec<String>,
    #[serde(default)]
    pub macros: Vec<String>,
    #[serde(default)]
    pub types: Vec<String>,
    /// System headers kept (`<math.h>`); host-only ones are dropped.
    #[serde(default)]
    pub headers: Vec<String>,
    /// Local files (relative to the suite root) declarations were read from.
    #[serde(default)]
    pub local_files: Vec<String>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Features {
    pub shared_memory: bool,
    pub dynamic_shared_memory: bool,
    pub constant_memory: bool,
    /// Legacy `texture<…>` references (removed in CUDA 12).
    pub texture_references: bool,
    pub atomics: bool,
    pub templates: bool,
    pub warp_primitives: bool,
    pub vector_types: bool,
}

/// A host launch `kernel<<<grid, block, smem, stream>>>(args)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchSite {
    /// File relative to the suite root.
    pub path: String,
    pub line: u32,
    pub kernel: String,
    /// Template arguments of a templated launch (`<float, 16>` in `k<float, 16><<<…>>>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_args: Option<String>,
    pub grid: String,
    pub block: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_mem: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<String>,
    pub args: Vec<String>,
    /// Definitions of the names used in grid/block/smem (`dim3 grid(…)`, `#define BLOCK 256`),
    /// as found in the host file, name → text.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub definitions: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Provenance {
    /// Commit of the suite's git checkout, when it is one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub licence: Option<Licence>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Licence {
    /// SPDX identifier when recognised (`NCSA`, `BSD-3-Clause`), else `LicenseRef-…` / `unknown`.
    pub id: String,
    /// Where it was found: a LICENSE file's path relative to the suite root, or `header` for the file's own header.
    pub source: String,
    /// Copyright line, when one was found.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copyright: Option<String>,
    /// Whether redistribution is allowed as far as the licence text says.
    pub redistributable: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CompileCheck {
    pub ok: bool,
    /// Target architecture, e.g. `sm_90`.
    pub arch: String,
    pub log: String,
    pub millis: f64,
    pub nvrtc_version: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    Info,
    Warning,
    Error,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Diagnostic {
    pub level: Level,
    /// Stable machine-readable code, e.g. `parse_error_recovered`, `unresolved_identifier`,
    /// `legacy_texture_reference`, `host_header_dropped`, `compile_failed`.
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub line: Option<u32>,
}

impl Diagnostic {
    pub fn new(level: Level, code: &str, message: impl Into<String>) -> Self {
        Diagnostic {
            level,
            code: code.to_string(),
            message: message.into(),
            line: None,
        }
    }
    pub fn at(mut self, line: u32) -> Self {
        self.line = Some(line);
        self
    }
}

/// A slow/fast pair (the slow slot may await synthesis).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pair {
    /// Content hash over the two units' ids; a pair made pending keeps its id (over the
    /// fast unit alone) when synth fills the slot, so a pair is one id through every stage.
    pub id: String,
    pub suite: String,
    pub benchmark: String,
    /// The kernel name of the fast unit.
    pub kernel: String,
    /// The slow kernel, or why there is none yet.
    pub slow: Slow,
    pub fast: KernelUnit,
    /// Which pairing rule matched.
    pub rule: PairRule,
    /// The two kernels are identical after normalization: a control, never a training pair.
    #[serde(default)]
    pub identical: bool,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub techniques: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Harness name or path the pair runs under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness: Option<String>,
    /// Where that harness came from (hand-written, inferred, LLM-completed) and its
    /// self-check result, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub harness_origin: Option<HarnessProvenance>,
    /// The side whose kernel the harness's launches name, when they name only that one and
    /// serve both sides: the other side runs the same launches (grid, block, args) with its
    /// own kernel. Set by `validate` for a contributed folder whose two kernels share a
    /// parameter list and whose harness was written for one of them; absent otherwise
    /// (each side runs the launches named for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shared_launches: Option<Variant>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
}

/// Which kernel of a pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Variant {
    Slow,
    Fast,
}

impl Variant {
    pub const BOTH: [Variant; 2] = [Variant::Slow, Variant::Fast];

    pub fn name(self) -> &'static str {
        match self {
            Variant::Slow => "slow",
            Variant::Fast => "fast",
        }
    }

    pub fn from_name(s: &str) -> Option<Variant> {
        match s {
            "slow" => Some(Variant::Slow),
            "fast" => Some(Variant::Fast),
            _ => None,
        }
    }
}

impl std::fmt::Display for Variant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A pair's slow slot: the only ways it can be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Slow {
    /// No slow kernel yet; the synth stage fills it. `rejected` is synth's account of its
    /// last try, when one was made and failed.
    Pending {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        rejected: Option<Box<SynthOutcome>>,
    },
    /// The slow kernel comes from the suite (or a contributed folder).
    Natural { unit: Box<KernelUnit> },
    /// The slow kernel was written by an LLM and passed synth's checks (still unverified).
    Synthesized {
        unit: Box<KernelUnit>,
        outcome: Box<SynthOutcome>,
    },
}

impl Slow {
    /// A slot awaiting synthesis, never tried.
    pub const PENDING: Slow = Slow::Pending { rejected: None };

    pub fn natural(unit: KernelUnit) -> Slow {
        Slow::Natural {
            unit: Box::new(unit),
        }
    }

    /// The slow kernel, when there is one.
    pub fn unit(&self) -> Option<&KernelUnit> {
        match self {
            Slow::Pending { .. } => None,
            Slow::Natural { unit } | Slow::Synthesized { unit, .. } => Some(unit),
        }
    }

    pub fn unit_mut(&mut self) -> Option<&mut KernelUnit> {
        match self {
            Slow::Pending { .. } => None,
            Slow::Natural { unit } | Slow::Synthesized { unit, .. } => Some(unit),
        }
    }

    /// The slow kernel when it comes from the suite.
    pub fn natural_unit(&self) -> Option<&KernelUnit> {
        match self {
            Slow::Natural { unit } => Some(unit),
            _ => None,
        }
    }

    pub fn is_pending(&self) -> bool {
        matches!(self, Slow::Pending { .. })
    }

    /// What synth did for this slot: its accepted outcome or its last rejection.
    pub fn synth_outcome(&self) -> Option<&SynthOutcome> {
        match self {
            Slow::Pending { rejected } => rejected.as_deref(),
            Slow::Natural { .. } => None,
            Slow::Synthesized { outcome, .. } => Some(outcome),
        }
    }

    /// The word export and reports use for the slot's origin.
    pub fn kind(&self) -> &'static str {
        match self {
            Slow::Pending { .. } => "pending",
            Slow::Natural { .. } => "natural",
            Slow::Synthesized { .. } => "synthesized",
        }
    }
}

/// The rule that paired two kernels (or left the slow slot pending).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PairRule {
    /// Variant folders: same kernel name and parameter types.
    NameAndParams,
    /// Variant folders: same kernel name.
    Name,
    /// Variant folders: the sole kernel of files in the same role.
    RenamedSoleKernel,
    /// No naive variant: the slot awaits synthesis.
    NoNaiveVariant,
    /// Numbered progression in one folder: each step against the one before.
    ProgressionStep,
    /// Numbered progression: each step against the first.
    ProgressionFromFirst,
    /// A `naive`/`optimized` naming pair.
    NamingPair,
    /// One kernel name in two files whose paths differ in one folder or file name, a
    /// naive-named one and an optimized-named one (`matmul/baseline/mm.cu` →
    /// `matmul/tiled/mm.cu`, `reduce.cu` → `reduce_opt.cu`).
    SiblingVariant,
    /// Host launcher versions in one file: each against the one before.
    VersionStep,
    /// Host launcher versions: each against the first.
    VersionFromFirst,
    /// A contributed folder (`kernelpair validate`).
    Validate,
}

impl PairRule {
    pub fn as_str(self) -> &'static str {
        match self {
            PairRule::NameAndParams => "name_and_params",
            PairRule::Name => "name",
            PairRule::RenamedSoleKernel => "renamed_sole_kernel",
            PairRule::NoNaiveVariant => "no_naive_variant",
            PairRule::ProgressionStep => "progression_step",
            PairRule::ProgressionFromFirst => "progression_from_first",
            PairRule::NamingPair => "naming_pair",
            PairRule::SiblingVariant => "sibling_variant",
            PairRule::VersionStep => "version_step",
            PairRule::VersionFromFirst => "version_from_first",
            PairRule::Validate => "validate",
        }
    }
}

impl std::fmt::Display for PairRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Why synth rejected an answer or gave up on a pair: the checks' reasons and the
/// transport's. The string forms are stable: they are recorded in outputs and counted
/// in summaries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SynthReason {
    NoCodeBlock,
    ParseError,
    KernelMissing,
    SignatureMismatch,
    HostCode,
    ArtificialSlowdown,
    SameAsFast,
    CompileError,
    NvrtcUnavailable,
    LlmUnreachable,
    LlmTimeout,
    LlmRateLimited,
    LlmServerError,
    LlmRequestRejected,
    LlmMalformedResponse,
    OfflineCacheMiss,
    /// The first request is over `[synth] max_prompt_tokens` even with only the kernel and
    /// the helpers it calls: nothing was sent (never a silent truncation).
    PromptTooLarge,
}

impl SynthReason {
    pub fn as_str(self) -> &'static str {
        match self {
            SynthReason::NoCodeBlock => "no_code_block",
            SynthReason::ParseError => "parse_error",
            SynthReason::KernelMissing => "kernel_missing",
            SynthReason::SignatureMismatch => "signature_mismatch",
            SynthReason::HostCode => "host_code",
            SynthReason::ArtificialSlowdown => "artificial_slowdown",
            SynthReason::SameAsFast => "same_as_fast",
            SynthReason::CompileError => "compile_error",
            SynthReason::NvrtcUnavailable => "nvrtc_unavailable",
            SynthReason::LlmUnreachable => "llm_unreachable",
            SynthReason::LlmTimeout => "llm_timeout",
            SynthReason::LlmRateLimited => "llm_rate_limited",
            SynthReason::LlmServerError => "llm_server_error",
            SynthReason::LlmRequestRejected => "llm_request_rejected",
            SynthReason::LlmMalformedResponse => "llm_malformed_response",
            SynthReason::OfflineCacheMiss => "offline_cache_miss",
            SynthReason::PromptTooLarge => "prompt_too_large",
        }
    }
}

/// Where a pair's harness came from. `build` prefers hand over captured over inferred over llm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HarnessOrigin {
    Hand,
    /// A launch of the real program, recorded by `kernelpair capture` and replayed.
    Captured,
    Inferred,
    Llm,
}

/// A pair's harness origin and, once run, its self-check (`kernelpair harness selfcheck`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HarnessProvenance {
    pub origin: HarnessOrigin,
    /// Whether the harness passed its self-check; absent when it was not run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selfcheck_pass: Option<bool>,
    /// The failed check and why, when it failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selfcheck_failure: Option<String>,
}

impl Pair {
    /// A pair as a stage first makes it: id over the two units, suite, benchmark and
    /// kernel from the fast unit, nothing described, harnessed or verified yet.
    /// The id of the pair this one was made for: a synth candidate's group (the pending
    /// pair it was asked for), else its own id.
    pub fn group(&self) -> &str {
        self.slow
            .synth_outcome()
            .and_then(|o| o.candidate.as_ref())
            .map_or(&self.id, |c| &c.group)
    }

    pub fn new(slow: Slow, fast: KernelUnit, rule: PairRule) -> Pair {
        Pair {
            id: Pair::make_id(slow.unit(), &fast),
            suite: fast.suite.clone(),
            benchmark: fast.benchmark.clone(),
            kernel: fast.kernel.clone(),
            slow,
            fast,
            rule,
            identical: false,
            techniques: Vec::new(),
            description: None,
            harness: None,
            harness_origin: None,
            shared_launches: None,
            verification: None,
        }
    }

    /// Record the pair's harness origin, keeping an earlier self-check result when the
    /// origin is the same.
    pub fn set_harness_origin(&mut self, origin: HarnessOrigin) {
        let keep = self
            .harness_origin
            .as_ref()
            .filter(|h| h.origin == origin)
            .cloned();
        self.harness_origin = Some(keep.unwrap_or(HarnessProvenance {
            origin,
            selfcheck_pass: None,
            selfcheck_failure: None,
        }));
    }
}

/// The synth stage's account of one pending pair: kept whether the answer was accepted
/// ([`Slow::Synthesized`]) or rejected ([`Slow::Pending`]), so every outcome is in the output.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SynthOutcome {
    /// Reason of the final failure (a rejected outcome, in [`Slow::Pending`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<SynthReason>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    pub model: String,
    pub prompt_hash: String,
    /// Answers examined (first answer plus repair turns).
    pub attempts: u32,
    /// Every rejected answer, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rejections: Vec<SynthRejection>,
    /// Checks the accepted answer passed, in the order they ran.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<String>,
    /// Content-addressed cache keys of the conversation's requests, in order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cache_keys: Vec<String>,
    #[serde(default)]
    pub usage: TokenUsage,
    /// Cost from the configured price table, when one is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost_usd: Option<f64>,
    /// With `[synth] max_prompt_tokens` set: the first request's size in tokens as counted
    /// (o200k_base), of the form sent, or of the smallest form for `prompt_too_large`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens: Option<u64>,
    /// With `[synth] max_prompt_tokens` set: which form of the fast kernel the prompt held.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_scope: Option<PromptScope>,
    /// With `[synth] candidates` other than `all`: what this candidate undoes, and the
    /// group its kernel's candidates share.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub candidate: Option<Candidate>,
}

/// One of several slow candidates asked for one fast kernel (`[synth] candidates`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Candidate {
    /// The pending pair's id: every candidate of the kernel carries it, so export can pick
    /// one per kernel and splits keep them together. The `all` candidate keeps it as its id.
    pub group: String,
    pub undo: Undo,
}

/// What a candidate's prompt asks to undo.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Undo {
    /// Every technique detected (the one candidate of `candidates = "all"`).
    All,
    /// One technique, the others kept.
    One { technique: String },
}

impl Undo {
    /// `all`, or the technique's name (the card's label).
    pub fn label(&self) -> &str {
        match self {
            Undo::All => "all",
            Undo::One { technique } => technique,
        }
    }
}

/// What of the fast unit a deoptimize prompt shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PromptScope {
    /// The whole isolated unit (headers, macros, types, globals, helpers, kernel).
    Unit,
    /// The kernel and the functions it calls; the rest of the unit is compiled before the
    /// answer without being shown (the unit was over the token budget).
    KernelWithHelpers,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SynthRejection {
    pub attempt: u32,
    pub reason: SynthReason,
    pub message: String,
}

/// Tokens as the endpoint reported them (`usage` of a chat completion).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TokenUsage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

impl TokenUsage {
    pub fn add(&mut self, o: TokenUsage) {
        self.prompt_tokens += o.prompt_tokens;
        self.completion_tokens += o.completion_tokens;
    }
    pub fn total(&self) -> u64 {
        self.prompt_tokens + self.completion_tokens
    }
}

impl Pair {
    /// The id of a pair of these units; `None` for a pending slot (the id it keeps once
    /// synth fills the slot).
    pub fn make_id(slow: Option<&KernelUnit>, fast: &KernelUnit) -> String {
        content_id(&["pair", slow.map(|u| u.id.as_str()).unwrap_or(""), &fast.id])
    }
}

/// A kernel that found no partner, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unpaired {
    pub suite: String,
    pub benchmark: String,
    pub variant: String,
    pub path: String,
    pub kernel: String,
    pub unit_id: String,
    pub reason: UnpairedReason,
}

/// An input that could not be processed; the rest of the run went on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// The file or folder, relative to the suite root where possible.
    pub path: String,
    pub reason: SkipReason,
    pub message: String,
}

/// Evidence as written, or `null` (never written, but read as empty).
fn evidence_or_null<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Evidence, D::Error> {
    Ok(Option::<Evidence>::deserialize(d)?.unwrap_or_default())
}

/// The evidence behind a verification status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Verification {
    pub status: Status,
    /// One line saying why, naming the kernel, size set and seed where relevant.
    pub reason: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device: Option<DeviceInfo>,
    /// Compile logs and resource use per variant, error figures per output/seed/size
    /// set, timings and speedups ([`Evidence`]; schemas/verification.schema.json).
    #[serde(
        default,
        skip_serializing_if = "Evidence::is_empty",
        deserialize_with = "evidence_or_null"
    )]
    pub evidence: Evidence,
    /// Speedup (median slow / median fast) at the largest size set, with its 95% interval.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speedup: Option<Speedup>,
    pub tool_version: String,
    /// Conditions a reader should know about a verdict (`size_dependent`, `suspect_slow`);
    /// flags never change the status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<Flag>,
}

/// A condition attached to a verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "flag", rename_all = "snake_case")]
pub enum Flag {
    /// Verified at the main size set, but slower (CI high < 1) at these others.
    SizeDependent { losing: Vec<Speedup> },
    /// The slow kernel takes far longer than its own memory traffic needs at the device's
    /// measured bandwidth while the fast kernel runs near that bound: worth a human look.
    SuspectSlow {
        size_set: String,
        /// Slow time / (bytes / measured bandwidth).
        slow_x: f64,
        /// Fast time / (bytes / measured bandwidth).
        fast_x: f64,
        /// The threshold `slow_x` exceeded.
        k: f64,
    },
    /// With the status `reversed`: the original's time over the plain variant's, at the
    /// main size set with its 95% interval (the pair's `speedup` inverted).
    Reversed { speedup: Speedup },
    /// The captured harness's status differs from the second opinion's
    /// (`evidence.second_opinion`): the two harnesses disagree on the pair; worth a look.
    HarnessDisagreement {
        /// The other harness's origin (`inferred`, `llm`) and status.
        origin: String,
        status: Status,
    },
}

impl Flag {
    pub fn as_str(&self) -> &'static str {
        match self {
            Flag::SizeDependent { .. } => "size_dependent",
            Flag::SuspectSlow { .. } => "suspect_slow",
            Flag::Reversed { .. } => "reversed",
            Flag::HarnessDisagreement { .. } => "harness_disagreement",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub name: String,
    pub sm_count: u32,
    pub compute_capability: String,
    pub driver_version: String,
    pub cuda_version: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sm_clock_mhz: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mem_clock_mhz: Option<u32>,
}

#[cfg(test)]
impl KernelUnit {
    /// The unit tests' builder: `kernel` taking `params` (type, name) with `source`; every
    /// other field a placeholder (suite `test`, benchmark `b`, variant `v`, `k.cu` line 1)
    /// that a test overrides where it matters to it.
    pub(crate) fn for_test(kernel: &str, params: &[(&str, &str)], source: &str) -> KernelUnit {
        KernelUnit {
            id: format!("id-{kernel}"),
            suite: "test".into(),
            benchmark: "b".into(),
            variant: "v".into(),
            path: "k.cu".into(),
            line: 1,
            kernel: kernel.into(),
            params: params
                .iter()
                .map(|(t, n)| Param {
                    name: n.to_string(),
                    ty: t.to_string(),
                })
                .collect(),
            template_params: vec![],
            source: source.into(),
            symbol: kernel.into(),
            pulled: Pulled::default(),
            features: Features::default(),
            launch_sites: vec![],
            provenance: Provenance::default(),
            build_flags: vec![],
            compile: None,
            diagnostics: vec![],
        }
    }
}
