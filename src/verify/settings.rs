//! The verify stage's library settings: [`Settings`] (what `verify`, `validate` and
//! `build` all fill; the defaults are the `DEFAULT_*` consts of [`super`], each held once)
//! and [`VerifyError`].

use super::sanitizer::Tool;
use std::path::PathBuf;

/// How to verify a batch of pairs.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Folders to look for harnesses in (see `verify --harness-dir`).
    pub harness_dirs: Vec<PathBuf>,
    /// Root of the suite the pairs came from (harness files next to the kernels).
    pub suite_root: Option<PathBuf>,
    /// Inferred harnesses (`<pair-id>.toml`) for pairs no hand-written harness covers.
    pub inferred_dir: Option<PathBuf>,
    /// A capture folder: captured launches replayed where no hand-written harness exists.
    pub captures: Option<PathBuf>,
    /// Seconds a pair may go without finishing a step (a compile, a seed's check, a timing
    /// round) before its worker is killed (`timeout`); a pair still finishing steps may run
    /// 3× this in all.
    pub timeout_s: f64,
    /// Input seeds per size set.
    pub seeds: u32,
    /// The speedup's 95% CI low bound must reach this, or the pair is `not_faster`.
    pub min_speedup: f64,
    /// Wall-clock timing budget per size set (both variants), milliseconds.
    pub time_budget_ms: f64,
    /// Timing stops early once both medians' 95% CI widths are within this fraction.
    pub precision: f64,
    /// On-disk compile cache; `None` compiles in memory only.
    pub cache_dir: Option<PathBuf>,
    /// compute-sanitizer tools to run each pair under after verification.
    pub sanitizer: Vec<Tool>,
    /// The compute-sanitizer binary (default: looked up).
    pub compute_sanitizer: Option<PathBuf>,
    /// Number of workers (default: one per visible GPU). For tests.
    pub gpus: Option<usize>,
    /// Command to start a worker instead of this binary (`{device}` is replaced). For tests.
    pub worker_cmd: Option<String>,
    /// Keep the verdicts an interrupted run left in the partial file (same records, same
    /// settings: the caller keys the file by both), and run only the rest.
    pub resume: bool,
    /// A pair replayed from its capture also runs under the inferred or LLM-completed
    /// harness that covers it, whose verdict is kept beside the captured one
    /// (`evidence.second_opinion`, flag `harness_disagreement`).
    pub second_opinions: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            harness_dirs: Vec::new(),
            suite_root: None,
            inferred_dir: None,
            captures: None,
            timeout_s: super::DEFAULT_TIMEOUT_S,
            seeds: super::DEFAULT_SEEDS,
            min_speedup: super::DEFAULT_MIN_SPEEDUP,
            time_budget_ms: super::DEFAULT_TIME_BUDGET_MS,
            precision: super::engine::DEFAULT_PRECISION,
            cache_dir: None,
            sanitizer: Vec::new(),
            compute_sanitizer: None,
            gpus: None,
            worker_cmd: None,
            resume: false,
            second_opinions: true,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum VerifyError {
    /// The `.partial` file that keeps finished results across a crash.
    #[error("{path}: {source}")]
    Partial {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Verify {
        #[command(flatten)]
        a: super::super::VerifyArgs,
    }

    #[derive(Parser)]
    struct Validate {
        #[command(flatten)]
        a: super::super::ValidateArgs,
    }

    #[test]
    fn command_line_defaults_are_the_library_defaults() {
        let a = Verify::parse_from(["x", "--in", "a.jsonl", "--out", "b.jsonl"]).a;
        assert_eq!(a.settings(), Settings::default());
        let a = Verify::parse_from(["x", "--in", "a", "--out", "b", "--seeds", "7"]).a;
        assert_eq!(a.settings().seeds, 7);
        assert_ne!(Settings::default().seeds, 7);
        // `validate` states the same defaults for the flags it shares.
        let v = Validate::parse_from(["x", "dir"]).a;
        let d = Settings::default();
        assert_eq!(
            (v.timeout_s, v.seeds, v.min_speedup),
            (d.timeout_s, d.seeds, d.min_speedup)
        );
    }
}
