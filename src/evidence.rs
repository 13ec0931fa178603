//! The evidence behind a verification (`Verification.evidence`): one typed struct that
//! the GPU worker fills, the record stores, verify's verdict and the self-check read, and
//! export reads back; schemas/verification.schema.json (`$defs/evidence`) describes it.
//! It sits below the stages (it imports none of them), so every stage can share it.
//!
//! The sanitizer pass's report is typed in [`sanitizer`]; the verification [`Status`] is
//! here too, because a sanitizer run keeps the worker's own status.

pub mod sanitizer;
mod status;

pub use sanitizer::SanitizerEvidence;
pub use status::Status;

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

/// Everything a verification keeps besides its status, reason and speedup. Every part is
/// optional: a pair stopped at compile time has only `variants`, a worker crash only
/// `worker_stderr`, a pair never run only `launch`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The harness file the pair ran with.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub harness: String,
    /// Compile results per variant (`slow`, `fast`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub variants: BTreeMap<String, VariantEvidence>,
    /// One comparison per size set, seed and output.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub checks: Vec<CheckEvidence>,
    /// One timing per size set.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub timings: Vec<TimingEvidence>,
    /// Where the worker's time went, milliseconds per phase (`compile`, `check`,
    /// `check.upload`, …, `time`, `total`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub phases_ms: BTreeMap<String, f64>,
    /// How each variant is launched, from the harness.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub launch: Option<Launches>,
    /// Each size set's time as a multiple of what its bytes need at the measured copy
    /// bandwidth.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roofline: Option<Roofline>,
    /// The construct that pads the slow kernel's runtime (`artificial_slowdown`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slowdown: Option<SlowdownEvidence>,
    /// The compute-sanitizer pass (see `verify::sanitizer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sanitizer: Option<SanitizerEvidence>,
    /// The last lines a crashed or hung worker wrote to stderr.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub worker_stderr: Vec<String>,
    /// What the pair's inferred (or LLM-completed) harness said, when the verdict came
    /// from a captured launch and such a harness covers the pair too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub second_opinion: Option<SecondOpinion>,
}

/// A second harness's verdict on a pair whose verdict came from its captured launch: the
/// inferred or LLM-completed harness that also covers it, run in the same batch. It never
/// changes the status; a status of its own that differs is flagged
/// (`harness_disagreement`), and the size sets where it timed the two kernels agreeing
/// are sizes the one captured launch does not have.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SecondOpinion {
    /// The harness's origin (`inferred`, `llm`).
    pub origin: String,
    /// The harness file it ran.
    pub harness: String,
    pub status: Status,
    pub reason: String,
    /// Its speedup per size set, where the two kernels' outputs agreed at every seed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub speedups: Vec<Speedup>,
}

impl Evidence {
    pub fn is_empty(&self) -> bool {
        *self == Evidence::default()
    }

    /// Evidence with only the launches.
    pub fn of_launch(launch: Launches) -> Evidence {
        Evidence {
            launch: Some(launch),
            ..Evidence::default()
        }
    }

    /// Speedup per size set, in the order the worker timed them.
    pub fn speedups(&self) -> Vec<Speedup> {
        self.timings.iter().map(TimingEvidence::speedup).collect()
    }
}

/// `null` (how JSON writes NaN and ±∞) as NaN, so a record with a non-finite figure
/// still reads.
pub fn f64_or_nan<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(d)?.unwrap_or(f64::NAN))
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Speedup {
    pub size_set: String,
    pub median: f64,
    pub ci_low: f64,
    pub ci_high: f64,
}

/// Where a compile came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheHit {
    Miss,
    Memory,
    Disk,
}

/// Resource use the driver reports for one kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Resources {
    pub registers: i32,
    pub static_shared_bytes: i32,
    pub local_bytes: i32,
    pub max_threads_per_block: i32,
}

/// One variant's compile.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VariantEvidence {
    pub compile_ok: bool,
    pub compile_ms: f64,
    pub cache: Option<CacheHit>,
    pub arch: String,
    pub nvrtc_version: String,
    /// The NVRTC log (first 8,000 characters).
    pub log: String,
    #[serde(default)]
    pub kernels: Vec<KernelEvidence>,
}

/// One kernel of a variant, as loaded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelEvidence {
    pub expression: String,
    pub lowered: String,
    #[serde(flatten)]
    pub resources: Resources,
}

/// One output compared at one size set and seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckEvidence {
    pub size_set: String,
    pub seed: u32,
    pub output: String,
    /// Hash of the fast kernel's output (self-checks only): the self-check compares it
    /// across seeds to see that the output depends on the input.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast_hash: Option<String>,
    /// The slow side's output came from an earlier pair's run of the same slow side (same
    /// code, launches and input bytes; seconds-long kernels only), not from a run here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub slow_from_earlier_pair: bool,
    #[serde(flatten)]
    pub comparison: Comparison,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

/// The evidence of one output comparison (made by `verify::compare`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub pass: bool,
    /// Elements compared.
    pub len: usize,
    /// Exact comparison (integers without a harness tolerance).
    pub exact: bool,
    /// Elements outside the elementwise tolerance (NaNs included).
    pub mismatches: usize,
    /// Elements where either side is NaN.
    pub nans: usize,
    /// Of those, elements where both sides are NaN: agreement, not a mismatch (records
    /// before issue 27 counted them as mismatches too).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub both_nan: usize,
    #[serde(deserialize_with = "f64_or_nan")]
    pub max_abs_err: f64,
    /// Largest |a − b| / |b| over elements with b ≠ 0.
    #[serde(deserialize_with = "f64_or_nan")]
    pub max_rel_err: f64,
    /// ‖a − b‖₂ / ‖b‖₂ over elements where both are finite (0 when equal, ∞ when ‖b‖ = 0 ≠ ‖a − b‖).
    #[serde(deserialize_with = "f64_or_nan")]
    pub l2_rel_err: f64,
    /// The element furthest outside its tolerance (or with the largest error when all pass).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worst_index: Option<usize>,
    /// The first few mismatching indices, ascending.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub first_mismatches: Vec<usize>,
    pub tolerance: Tolerance,
    /// Set when the buffers cannot be compared at all (type or length differ).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Agreement thresholds for one output (see `verify::compare` for the defaults and why).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Absolute slack per element.
    pub atol: f64,
    /// Relative slack per element, times |expected|.
    pub rtol: f64,
    /// Bound on ‖actual − expected‖₂ / ‖expected‖₂ over the whole buffer.
    pub l2: f64,
    /// Absolute slack per element as a fraction of the largest |expected| in the buffer
    /// (normwise, as BLAS tests do): covers elements near zero from cancelling sums, whose
    /// rounding error follows the size of the terms, not of the result.
    #[serde(default)]
    pub scale: f64,
}

/// One variant's times at one size set, milliseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VariantTiming {
    #[serde(deserialize_with = "f64_or_nan")]
    pub median_ms: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub iqr_ms: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub min_ms: f64,
    pub runs: usize,
    /// Of `runs`, the correctness checks' own launches (each timed with events after an L2
    /// flush), counted only when a round is longer than the size set's hard cap: a kernel of
    /// seconds is not launched again just to be timed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub from_checks: usize,
    /// Of `runs`, samples that earlier pairs in the same worker took of the same slow side
    /// (same code, launches and input bytes; rounds longer than the hard cap only): a
    /// naive kernel of seconds shared by several pairs is timed once for all of them.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub from_earlier_pairs: usize,
}

/// Both variants timed at one size set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingEvidence {
    pub size_set: String,
    /// Bytes of all the pair's buffers at this size set.
    pub bytes: usize,
    pub slow: VariantTiming,
    pub fast: VariantTiming,
    /// Median slow / median fast, with its bootstrap 95% interval.
    #[serde(deserialize_with = "f64_or_nan")]
    pub speedup: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub ci_low: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub ci_high: f64,
}

impl TimingEvidence {
    pub fn speedup(&self) -> Speedup {
        Speedup {
            size_set: self.size_set.clone(),
            median: self.speedup,
            ci_low: self.ci_low,
            ci_high: self.ci_high,
        }
    }
}

/// Time per size set as a multiple of the bandwidth bound.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Roofline {
    /// The worker's measured device-to-device copy bandwidth.
    pub bandwidth_gbs: f64,
    pub size_sets: Vec<RooflineSet>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RooflineSet {
    pub size_set: String,
    #[serde(deserialize_with = "f64_or_nan")]
    pub slow_x: f64,
    #[serde(deserialize_with = "f64_or_nan")]
    pub fast_x: f64,
}

/// An artificial slowdown found in a slow kernel: which check, where, and the line itself.
/// `synth` turns it into a rejection; `verify`, `validate` and `build` into the status
/// `artificial_slowdown` before any GPU time (see `crate::verify::slowdown`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlowdownHit {
    /// `timer_spin`, `added_volatile`, `empty_loop`, `repeated_work` or `huge_trip_count`.
    pub check: String,
    /// 1-based line in the checked source.
    pub line: u32,
    /// That line's text, trimmed.
    pub construct: String,
    pub message: String,
}

/// A slowdown hit and where it is in the suite.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlowdownEvidence {
    #[serde(flatten)]
    pub hit: SlowdownHit,
    /// The slow kernel's file.
    pub path: String,
    /// The hit's line in that file, when it maps back.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_line: Option<u32>,
}

/// One launch of a variant's sequence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchConfig {
    pub kernel: String,
    pub grid: Vec<String>,
    pub block: Vec<String>,
    /// Dynamic shared memory in bytes (an expression; `0` when none).
    pub shared_mem: String,
    /// Times the launch repeats (`1` when once).
    pub repeat: String,
}

/// One launch with every expression evaluated for one size set, as the harness resolved
/// it: what export writes as CUDA (the harness's own expression language never reaches a
/// training sample).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LaunchValues {
    /// The kernel's symbol, template arguments evaluated (`reduceSum<256>`).
    pub kernel: String,
    /// As many dimensions as the harness writes.
    pub grid: Vec<u32>,
    pub block: Vec<u32>,
    /// Dynamic shared memory in bytes.
    pub shared_mem: u32,
    /// Times the launch repeats (1 when once).
    pub repeat: u32,
    /// The arguments in parameter order: the harness's arg names, with an element offset
    /// where the harness passes one (`bins + 1052`).
    pub args: Vec<String>,
}

/// Both variants' launches at one size set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeSetLaunches {
    pub slow: Vec<LaunchValues>,
    pub fast: Vec<LaunchValues>,
}

/// Both variants' launches, what the harness says the kernel computes, and the sizes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Launches {
    /// The harness's `description` (what the pair computes), when it has one.
    #[serde(default)]
    pub task: Option<String>,
    pub slow: Vec<LaunchConfig>,
    pub fast: Vec<LaunchConfig>,
    /// Each size set's values, by name.
    #[serde(default)]
    pub size_sets: BTreeMap<String, BTreeMap<String, i64>>,
    /// Per size set, the threads of the largest launch of each variant ([slow, fast]),
    /// evaluated for an H100 (132 SMs) where an expression uses device properties.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub threads: BTreeMap<String, [u64; 2]>,
    /// Per size set, both variants' launches evaluated (H100 device properties where an
    /// expression uses them); empty in records written before it existed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evaluated: BTreeMap<String, SizeSetLaunches>,
    /// The main size set: the harness's `primary = true`, else the one with the most
    /// buffer bytes (the later on a tie), as the verdict chooses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub main: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Line, Status, Verification};

    /// A verification line as version 1 of the tool wrote it (the worker serialized its
    /// own private structs into a JSON value): it reads into the typed evidence, and JSON's
    /// `null` for a non-finite figure reads as NaN instead of failing the record.
    #[test]
    fn version_1_worker_evidence_reads_into_the_typed_struct() {
        let v1 = r#"{"status":"verified","reason":"agrees","tool_version":"kernelpair 0.1.0",
          "evidence":{"harness":"h.toml",
            "variants":{"fast":{"compile_ok":true,"compile_ms":0.0,"cache":"disk","arch":"sm_90",
              "nvrtc_version":"13.0","log":"","kernels":[{"expression":"k","lowered":"k",
              "registers":16,"static_shared_bytes":0,"local_bytes":0,"max_threads_per_block":1024}]}},
            "checks":[{"size_set":"s","seed":0,"output":"y","pass":true,"len":4,"exact":false,
              "mismatches":0,"nans":0,"max_abs_err":0.0,"max_rel_err":0.0,"l2_rel_err":null,
              "tolerance":{"atol":1e-5,"rtol":1e-4,"l2":1e-4}}],
            "timings":[{"size_set":"s","bytes":32,"slow":{"median_ms":2.0,"iqr_ms":0.1,"min_ms":1.9,"runs":20},
              "fast":{"median_ms":1.0,"iqr_ms":0.1,"min_ms":0.9,"runs":20},
              "speedup":2.0,"ci_low":1.9,"ci_high":2.1}],
            "phases_ms":{"compile":1.5,"total":9.0},
            "launch":{"task":null,"slow":[],"fast":[],"size_sets":{}}}}"#;
        let v: Verification = serde_json::from_str(v1).unwrap();
        assert_eq!(v.status, Status::Verified);
        let ev = &v.evidence;
        assert_eq!(ev.variants["fast"].kernels[0].resources.registers, 16);
        assert_eq!(ev.variants["fast"].cache, Some(CacheHit::Disk));
        assert!(ev.checks[0].comparison.l2_rel_err.is_nan());
        assert_eq!(ev.checks[0].comparison.tolerance.scale, 0.0);
        assert_eq!(ev.speedups()[0].median, 2.0);
        assert_eq!(ev.phases_ms["total"], 9.0);
        assert!(ev.launch.is_some());
        // Written back, it reads again to the same value (NaN aside, compared as text).
        let again: Verification =
            serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(
            serde_json::to_string(&again).unwrap(),
            serde_json::to_string(&v).unwrap()
        );
        // A version-1 record line still parses (the version only gates newer files), and
        // an explicit `null` evidence reads as empty.
        let line: Line = serde_json::from_str(
            r#"{"version":1,"type":"skipped","data":{"path":"a.cu","reason":"binary","message":"m"}}"#,
        )
        .unwrap();
        assert_eq!(line.version, 1);
        assert!(matches!(line.record, crate::record::Record::Skipped(ref s) if s.path == "a.cu"));
        let null: Verification = serde_json::from_str(
            r#"{"status":"no_gpu","reason":"r","tool_version":"t","evidence":null}"#,
        )
        .unwrap();
        assert!(null.evidence.is_empty());
        assert!(!serde_json::to_string(&null).unwrap().contains("evidence"));
    }
}
