//! A verification's status: the outcome of running a pair on a GPU (or of what settled it
//! before). It lives with the evidence, below the record, because the evidence of a
//! sanitizer run keeps the worker's own status; `crate::record` re-exports it.

use serde::{Deserialize, Serialize};

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
    /// A synthesized plain variant agrees and is faster than the original (the
    /// original's speedup over it has CI low ≥ `min_speedup`): the optimization loses on
    /// this device. The `reversed` flag carries that speedup; `speedup` stays slow / fast.
    Reversed,
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
            Status::Reversed => "reversed",
        }
    }
}
