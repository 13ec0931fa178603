//! The records every stage reads and writes: one versioned JSONL line per record.
//!
//! A line is `{"version":2,"type":"unit"|"pair"|"unpaired"|"skipped","data":{…}}`.
//! Each stage reads lines it understands and passes the others through, so a
//! file can be fed from one stage to the next without loss.

pub use crate::evidence::{Evidence, Speedup};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;

/// Version of the JSONL record format; bumped on any incompatible change.
/// 2: `Verification.evidence` is typed ([`Evidence`]). Version 1 files read as they
/// are: what verify wrote there has the same layout.
pub const RECORD_VERSION: u32 = 2;

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
    /// NVRTC compile check; absent when not run (e.g. `--no-compile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compile: Option<CompileCheck>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub diagnostics: Vec<Diagnostic>,
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
    /// Content hash over the two units' ids (the slow id is empty while the slot is empty).
    pub id: String,
    pub suite: String,
    pub benchmark: String,
    /// The kernel name of the fast unit.
    pub kernel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow: Option<KernelUnit>,
    pub fast: KernelUnit,
    pub origin: Origin,
    /// Which pairing rule matched (`name_and_params`, `name`, `sole_kernel_in_file_role`, …).
    pub rule: String,
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// What the synth stage did for this pair's slow slot (accepted or why not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub synth: Option<SynthOutcome>,
}

/// Where a pair's harness came from. `build` prefers hand over inferred over llm.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HarnessOrigin {
    Hand,
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

/// The synth stage's account of one pending pair: kept whether the answer was accepted
/// or rejected, so every outcome is in the output.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SynthOutcome {
    /// A candidate passed every check and fills `slow` (still unverified).
    pub accepted: bool,
    /// Reason code of the final failure (`same_as_fast`, `compile_error`, `llm_unreachable`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
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
    /// The pair id before the slot was filled (the journal key of a resumed run).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub pending_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SynthRejection {
    pub attempt: u32,
    pub reason: String,
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
    pub fn make_id(slow: Option<&KernelUnit>, fast: &KernelUnit) -> String {
        content_id(&["pair", slow.map(|u| u.id.as_str()).unwrap_or(""), &fast.id])
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Origin {
    /// Both kernels come from the suite.
    Natural,
    /// No slow kernel exists yet; the synth stage fills it.
    Pending,
    Synthesized {
        model: String,
        prompt_hash: String,
        attempts: u32,
        #[serde(default)]
        checks: Vec<String>,
    },
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
    pub reason: String,
}

/// An input that could not be processed; the rest of the run went on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Skipped {
    /// The file or folder, relative to the suite root where possible.
    pub path: String,
    /// `not_utf8`, `binary`, `too_large`, `unreadable`, `symlink_loop`, `parse_failed`, …
    pub reason: String,
    pub message: String,
}

/// Outcome of running a pair on a GPU.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    Verified,
    Mismatch,
    CompileError,
    Timeout,
    Crashed,
    OutOfBounds,
    Unwritten,
    Degenerate,
    NotFaster,
    NoHarness,
    NeedsHostLoop,
    HarnessError,
    NoGpu,
    MissingSlow,
    /// Verified, but a `compute-sanitizer` pass (`verify --sanitizer`) reported errors.
    SanitizerError,
    /// The slow kernel pads its runtime (timer spin, busy loop, added `volatile`, …):
    /// found by the static checks before any GPU time.
    ArtificialSlowdown,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Verified => "verified",
            Status::Mismatch => "mismatch",
            Status::CompileError => "compile_error",
            Status::Timeout => "timeout",
            Status::Crashed => "crashed",
            Status::OutOfBounds => "out_of_bounds",
            Status::Unwritten => "unwritten",
            Status::Degenerate => "degenerate",
            Status::NotFaster => "not_faster",
            Status::NoHarness => "no_harness",
            Status::NeedsHostLoop => "needs_host_loop",
            Status::HarnessError => "harness_error",
            Status::NoGpu => "no_gpu",
            Status::MissingSlow => "missing_slow",
            Status::SanitizerError => "sanitizer_error",
            Status::ArtificialSlowdown => "artificial_slowdown",
        }
    }
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
}

impl Flag {
    pub fn as_str(&self) -> &'static str {
        match self {
            Flag::SizeDependent { .. } => "size_dependent",
            Flag::SuspectSlow { .. } => "suspect_slow",
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
