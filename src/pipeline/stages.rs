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
    #[error("extract: {0}")]
    Extract(#[from] crate::suite::SuiteError),
    /// A suite of kind `records` could not be read.
    #[error("extract: {0}")]
    Records(#[from] crate::jsonl::JsonlError),
    #[error("synth: {0}")]
    Synth(#[from] crate::synth::SynthError),
    #[error("verify: {0}")]
    Verify(#[from] crate::verify::VerifyError),
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
    /// With `selfcheck`, each pair's harness (not a captured one) first proves itself on
    /// the worker that then verifies the pair ([`crate::selfcheck::phase`]): the result goes
    /// into the pair's provenance, and an inferred or LLM harness that fails stops its pair
    /// (`harness_error`).
    fn verify(
        &self,
        pairs: Vec<Record>,
        s: &VerifySettings,
        cache: &Path,
        selfcheck: bool,
    ) -> Result<Vec<Record>, StageError>;
}

/// The file of `build`'s self-check proofs in the compile cache, one JSON line each, kept
/// across runs ([`crate::selfcheck::phase`]).
pub const PROOFS: &str = "selfcheck-proofs.jsonl";

/// The real stages, called through their library modules.
pub struct Library;

impl Stages for Library {
    fn extract(&self, suite: &SuiteSpec, s: &ExtractSettings) -> Result<Vec<Record>, StageError> {
        if suite.kind == SuiteKind::Records {
            return Ok(crate::jsonl::read_records(&suite.path)?);
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
        )?;
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
        // The chunk's synth journal is named by the chunk's content, so a rerun after a
        // kill finds it and asks only what was not answered.
        let journal = synth_journal(cache, &chunk_key(&pairs, None));
        let cfg = crate::synth::Config::new(s.to_synth(cache, Some(journal)))?;
        let (out, report) = crate::synth::synthesize_records(pairs, &cfg)?;
        tracing::info!("{}", report.summary());
        Ok(out)
    }

    fn verify(
        &self,
        pairs: Vec<Record>,
        s: &VerifySettings,
        cache: &Path,
        selfcheck: bool,
    ) -> Result<Vec<Record>, StageError> {
        let mut settings = s.to_verify(cache);
        // A pair's own relative `harness` path resolves against the first harness folder.
        let base = s.harness_dirs.first().cloned().unwrap_or_default();
        // Each verdict is written as it comes, to a file keyed by this chunk and these
        // settings: a build killed mid-chunk keeps the chunk's finished pairs, and its
        // rerun runs only the others. The chunk's journal entry replaces the file.
        let key = chunk_key(&pairs, Some(&format!("{settings:?}")));
        let partial = cache.join(format!("verify-{key}.partial.jsonl"));
        std::fs::create_dir_all(cache).map_err(|source| crate::verify::VerifyError::Partial {
            path: cache.to_path_buf(),
            source,
        })?;
        settings.resume = true;
        let phase = selfcheck.then(|| {
            crate::selfcheck::phase::FirstPhase::new(&s.harness_dirs, Some(&cache.join(PROOFS)))
        });
        let prover = phase.as_ref().map(|p| p as &dyn crate::verify::Prover);
        let results =
            crate::verify::verify_records_proved(&pairs, &base, &settings, Some(&partial), prover)?;
        let _ = std::fs::remove_file(&partial);
        let reports = phase.map(|ph| {
            let ps: Vec<&crate::record::Pair> = pairs
                .iter()
                .filter_map(|r| match r {
                    Record::Pair(p) => Some(&**p),
                    _ => None,
                })
                .collect();
            ph.reports(&ps)
        });
        let mut out: Vec<Record> = pairs
            .into_iter()
            .enumerate()
            .map(|(i, r)| match (r, results.get(&i)) {
                (Record::Pair(mut p), Some(v)) => {
                    crate::verify::origin_of_verdict(&mut p, v, settings.captures.as_deref());
                    p.verification = Some(v.clone());
                    crate::verify::fill_techniques(&mut p);
                    Record::Pair(p)
                }
                (r, _) => r,
            })
            .collect();
        if let Some(reports) = reports {
            super::harnesses::apply_selfcheck(&mut out, &reports);
        }
        Ok(out)
    }
}

/// A chunk's journal key: its records' content, and what else the answer depends on.
fn chunk_key(pairs: &[Record], extra: Option<&str>) -> String {
    let text: Vec<String> = pairs
        .iter()
        .map(|r| serde_json::to_string(r).expect("records serialize"))
        .collect();
    let mut parts: Vec<&str> = text.iter().map(String::as_str).collect();
    parts.extend(extra);
    super::journal::key(&parts)
}

/// Where `build` keeps the synth journal of the chunk with content key `key`: beside the
/// LLM cache it belongs to.
pub fn synth_journal(cache: &Path, key: &str) -> std::path::PathBuf {
    cache.join("journal").join(format!("{key}.journal"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synth::config::ConfigError;
    use crate::synth::SynthError;

    #[test]
    fn stage_errors_name_the_stage_and_keep_the_typed_source() {
        let dir = tempfile::tempdir().unwrap();
        let llm = dir.path().join("llm.toml");
        std::fs::write(&llm, "api_key = \"sk-secret\"\n").unwrap();
        let s = SynthSettings {
            llm: Some(llm),
            ..Default::default()
        };
        let e = Library.synth(vec![], &s, dir.path()).unwrap_err();
        assert!(e.to_string().starts_with("synth: "), "{e}");
        assert!(!e.to_string().contains("sk-secret"), "{e}");
        assert!(
            matches!(
                &e,
                StageError::Synth(SynthError::Llm(ConfigError::KeyInConfig { .. }))
            ),
            "{e:?}"
        );
        assert!(std::error::Error::source(&e).is_some());
        let missing = SuiteSpec {
            path: dir.path().join("none.jsonl"),
            kind: SuiteKind::Records,
            extractor: None,
            data: None,
        };
        let e = Library
            .extract(&missing, &ExtractSettings::default())
            .unwrap_err();
        assert!(matches!(e, StageError::Records(_)), "{e:?}");
        assert!(e.to_string().starts_with("extract: "), "{e}");
        assert!(
            !dir.path().join("journal").exists(),
            "nothing written on failure"
        );
    }
}
