//! The seams between `build` and the other stages: each stage is one library call here, so
//! `build` never goes through the CLI layer and tests can put fakes behind the trait.

use super::config::{ExtractSettings, SuiteKind, SuiteSpec, SynthSettings, VerifySettings};
use crate::record::Record;
use std::path::Path;

#[derive(Debug, thiserror::Error)]
pub enum StageError {
    /// The stage's library function is not part of this build yet.
    #[error("{stage}: {what} is not available in this build")]
    NotWired { stage: &'static str, what: String },
    #[error("{stage}: {message}")]
    Failed {
        stage: &'static str,
        message: String,
    },
}

/// One call per stage. `synth` and `verify` receive only pairs that need their work and must
/// return the same number of pairs in the same order (other records are ignored).
pub trait Stages {
    fn extract(&self, suite: &SuiteSpec, s: &ExtractSettings) -> Result<Vec<Record>, StageError>;
    fn synth(
        &self,
        pairs: Vec<Record>,
        s: &SynthSettings,
        cache: &Path,
    ) -> Result<Vec<Record>, StageError>;
    /// Without a GPU, the returned pairs carry status `no_gpu`; `build` then keeps them
    /// waiting for a GPU instead of treating them as done. `cache`: the compile cache.
    fn verify(
        &self,
        pairs: Vec<Record>,
        s: &VerifySettings,
        cache: &Path,
    ) -> Result<Vec<Record>, StageError>;
    /// Self-check the pairs' harnesses (`harness selfcheck`); `None` without a GPU.
    fn selfcheck(
        &self,
        pairs: &[crate::record::Pair],
        harness_dirs: &[std::path::PathBuf],
        timeout_s: u64,
    ) -> Option<Vec<crate::selfcheck::Report>> {
        super::harnesses::selfcheck(pairs, harness_dirs, timeout_s)
    }
}

/// The real stages, called through their library modules.
pub struct Library;

impl Stages for Library {
    fn extract(&self, suite: &SuiteSpec, s: &ExtractSettings) -> Result<Vec<Record>, StageError> {
        if suite.kind == SuiteKind::Records {
            return crate::jsonl::read_records(&suite.path).map_err(|e| StageError::Failed {
                stage: "extract",
                message: e.to_string(),
            });
        }
        let kind = match suite.kind {
            SuiteKind::Auto => "auto",
            SuiteKind::Parboil => "parboil",
            SuiteKind::Rodinia => "rodinia",
            SuiteKind::Generic => "generic",
            SuiteKind::Records => unreachable!("handled above"),
        };
        let ex = crate::suite::extract_suite(
            &suite.path,
            kind,
            suite.extractor.as_deref(),
            &s.arch,
            s.compile,
        )
        .map_err(|e| StageError::Failed {
            stage: "extract",
            message: e.to_string(),
        })?;
        for w in &ex.warnings {
            eprintln!("extract: {w}");
        }
        Ok(ex.records())
    }

    fn synth(
        &self,
        pairs: Vec<Record>,
        s: &SynthSettings,
        cache: &Path,
    ) -> Result<Vec<Record>, StageError> {
        let failed = |message: String| StageError::Failed {
            stage: "synth",
            message,
        };
        // The synth library works file to file; the chunk goes through a work folder next
        // to the cache, named by the chunk's content so a rerun finds its synth journal.
        let text: Vec<String> = pairs
            .iter()
            .map(|r| serde_json::to_string(r).expect("records serialize"))
            .collect();
        let key = super::journal::key(&text.iter().map(String::as_str).collect::<Vec<_>>());
        let work = cache.join("work");
        let input = work.join(format!("{key}.in.jsonl"));
        let output = work.join(format!("{key}.out.jsonl"));
        crate::jsonl::write_records(&input, &pairs).map_err(|e| failed(e.to_string()))?;
        let args = crate::synth::SynthArgs {
            input: input.clone(),
            output: output.clone(),
            shard: None,
            llm: s.llm.clone(),
            offline: s.offline,
            cache: cache.to_path_buf(),
            max_repairs: s.max_repairs,
            concurrency: None,
            prompts: None,
            describe: false,
            min_difference: crate::synth::DEFAULT_MIN_DIFFERENCE,
            // The compile check targets the architecture the build's extract stage uses.
            arch: s.arch.clone(),
            journal: Some(work.join(format!("{key}.journal"))),
            report: None,
            base_url: None,
            model: None,
            api_key_env: None,
            temperature: None,
            max_tokens: None,
            timeout: None,
            max_retries: None,
            rpm: None,
        };
        let cfg = crate::synth::Config::from_args(args).map_err(|e| failed(format!("{e:#}")))?;
        let report = crate::synth::synthesize(&cfg).map_err(|e| failed(format!("{e:#}")))?;
        tracing::info!("{}", report.summary());
        let out = crate::jsonl::read_records(&output).map_err(|e| failed(e.to_string()))?;
        let _ = std::fs::remove_file(&input);
        let _ = std::fs::remove_file(&output);
        Ok(out)
    }

    fn verify(
        &self,
        pairs: Vec<Record>,
        s: &VerifySettings,
        cache: &Path,
    ) -> Result<Vec<Record>, StageError> {
        let args = crate::verify::VerifyArgs {
            input: Default::default(),
            output: Default::default(),
            shard: None,
            harness_dirs: s.harness_dirs.clone(),
            suite_root: None,
            inferred_dir: None,
            timeout_s: s.timeout_s as f64,
            seeds: s.seeds,
            min_speedup: s.min_speedup,
            time_budget_ms: s.time_budget_ms,
            precision: s.precision,
            cache_dir: Some(cache.to_path_buf()),
            gpus: None,
            worker_cmd: None,
            sanitizer: s.sanitizer.clone(),
            compute_sanitizer: None,
        };
        // A pair's own relative `harness` path resolves against the first harness folder.
        let base = s.harness_dirs.first().cloned().unwrap_or_default();
        let results = crate::verify::verify_records(&pairs, &base, &args, None).map_err(|e| {
            StageError::Failed {
                stage: "verify",
                message: format!("{e:#}"),
            }
        })?;
        Ok(pairs
            .into_iter()
            .enumerate()
            .map(|(i, r)| match (r, results.get(&i)) {
                (Record::Pair(mut p), Some(v)) => {
                    p.verification = Some(v.clone());
                    crate::verify::fill_techniques(&mut p);
                    Record::Pair(p)
                }
                (r, _) => r,
            })
            .collect())
    }
}
