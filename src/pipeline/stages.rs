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
    /// waiting for a GPU instead of treating them as done.
    fn verify(&self, pairs: Vec<Record>, s: &VerifySettings) -> Result<Vec<Record>, StageError>;
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
        let _ = s;
        // TODO(integrator): one line, once the suite module lands on main:
        //   crate::suite::extract(&suite.path, kind, suite.extractor.as_deref(), &s.arch, s.compile)
        //       .map_err(|e| StageError::Failed { stage: "extract", message: e.to_string() })
        Err(StageError::NotWired {
            stage: "extract",
            what: format!("extraction of `{:?}` suites", suite.kind).to_lowercase(),
        })
    }

    fn synth(
        &self,
        pairs: Vec<Record>,
        s: &SynthSettings,
        cache: &Path,
    ) -> Result<Vec<Record>, StageError> {
        let _ = (pairs, s, cache);
        // TODO(integrator): one line, once the synth module lands on main:
        //   crate::synth::synthesize(pairs, &llm_config_from(s.llm), cache, s.offline, s.max_repairs)
        Err(StageError::NotWired {
            stage: "synth",
            what: "LLM synthesis".into(),
        })
    }

    fn verify(&self, pairs: Vec<Record>, s: &VerifySettings) -> Result<Vec<Record>, StageError> {
        let _ = (pairs, s);
        // TODO(integrator): one line, once the verify module lands on main:
        //   crate::verify::verify(pairs, &s.harness_dirs, s.seeds, s.min_speedup, s.timeout_s)
        Err(StageError::NotWired {
            stage: "verify",
            what: "GPU verification".into(),
        })
    }
}
