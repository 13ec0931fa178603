//! The synth stage's library settings: [`Settings`] (what the CLI and `build` both fill,
//! each default held once here), the checked [`Config`] made from them, and [`SynthError`].

use super::cache::{Cache, CacheError};
use super::client::Client;
use super::config::{ConfigError, LlmConfig, LlmFile};
use super::prompts::{PromptError, Prompts};
use crate::record::content_id;
use std::path::PathBuf;

/// Where LLM answers are cached when nobody says otherwise.
pub const DEFAULT_CACHE_DIR: &str = ".kernelpair/llm-cache";
/// Compile-error repair turns after the first answer.
pub const DEFAULT_MAX_REPAIRS: u32 = 2;
/// Below this normalized-token difference an answer counts as the fast kernel again.
pub const DEFAULT_MIN_DIFFERENCE: f64 = 0.05;

/// How many slow candidates to ask for per fast kernel (`[synth] candidates`,
/// `--candidates`): `all` (one answer undoing every technique detected, the default),
/// `per-technique` (that one plus one per technique undone alone, for a kernel with
/// several), or a number (the same, at most that many).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Candidates {
    #[default]
    All,
    PerTechnique,
    AtMost(u32),
}

impl Candidates {
    /// What to ask for a kernel with `techniques` detected: `all` first, then one per
    /// technique (only where there are two or more: one technique undone alone is `all`).
    pub fn plan(self, techniques: &[String]) -> Vec<crate::record::Undo> {
        use crate::record::Undo;
        let cap = match self {
            Candidates::All => 1,
            Candidates::PerTechnique => usize::MAX,
            Candidates::AtMost(n) => n as usize,
        };
        let mut out = vec![Undo::All];
        if techniques.len() > 1 {
            out.extend(techniques.iter().map(|t| Undo::One {
                technique: t.clone(),
            }));
        }
        out.truncate(cap.max(1));
        out
    }
}

impl std::str::FromStr for Candidates {
    type Err = String;
    fn from_str(s: &str) -> Result<Candidates, String> {
        match s {
            "all" => Ok(Candidates::All),
            "per-technique" => Ok(Candidates::PerTechnique),
            n => match n.parse::<u32>() {
                Ok(0) | Err(_) => Err(format!(
                    "candidates must be \"all\", \"per-technique\" or a number of at least 1 (got {n:?})"
                )),
                Ok(n) => Ok(Candidates::AtMost(n)),
            },
        }
    }
}

impl std::fmt::Display for Candidates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Candidates::All => f.write_str("all"),
            Candidates::PerTechnique => f.write_str("per-technique"),
            Candidates::AtMost(n) => write!(f, "{n}"),
        }
    }
}

/// As a build config writes it: `"all"`, `"per-technique"` or an integer.
impl serde::Serialize for Candidates {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Candidates::AtMost(n) => s.serialize_u32(*n),
            other => s.serialize_str(&other.to_string()),
        }
    }
}

impl<'de> serde::Deserialize<'de> for Candidates {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Candidates, D::Error> {
        #[derive(serde::Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Number(u32),
            Text(String),
        }
        match Raw::deserialize(d)? {
            Raw::Number(n) => n.to_string().parse(),
            Raw::Text(t) => t.parse(),
        }
        .map_err(serde::de::Error::custom)
    }
}

/// What a synth run is asked to do, before anything is read or checked. `synth` (the CLI)
/// and `build` both fill this one struct; [`Config::new`] checks it.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Endpoint settings file (TOML; see examples/llm.toml).
    pub llm: Option<PathBuf>,
    /// Endpoint settings that win over the file's (the CLI's `--model`, `--base-url`, …).
    pub llm_overrides: LlmFile,
    /// Content-addressed request/response cache.
    pub cache: PathBuf,
    /// Answer only from the cache; requests that are missing are reported.
    pub offline: bool,
    pub max_repairs: u32,
    /// Also ask for a one-paragraph description of each accepted pair's optimization.
    pub describe: bool,
    pub min_difference: f64,
    /// NVRTC target of the compile check.
    pub arch: String,
    /// Prompt templates overriding the built-in ones.
    pub prompts: Option<PathBuf>,
    /// Journal of finished pairs, so a killed run resumes without asking again; `None`
    /// keeps no journal.
    pub journal: Option<PathBuf>,
    /// Token budget of a deoptimize request (system and user message, counted with
    /// o200k_base). Over it the prompt holds only the kernel and the helpers it calls;
    /// still over it the pair is `prompt_too_large` and nothing is sent. `None`: no budget.
    pub max_prompt_tokens: Option<u64>,
    /// Slow candidates per fast kernel.
    pub candidates: Candidates,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            llm: None,
            llm_overrides: LlmFile::default(),
            cache: PathBuf::from(DEFAULT_CACHE_DIR),
            offline: false,
            max_repairs: DEFAULT_MAX_REPAIRS,
            describe: false,
            min_difference: DEFAULT_MIN_DIFFERENCE,
            arch: crate::gpu::nvrtc::DEFAULT_ARCH.into(),
            prompts: None,
            journal: None,
            max_prompt_tokens: None,
            candidates: Candidates::All,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SynthError {
    /// The endpoint settings (file, overrides, API key variable).
    #[error(transparent)]
    Llm(#[from] ConfigError),
    #[error(transparent)]
    Prompts(#[from] PromptError),
    #[error("{0}")]
    Invalid(String),
    #[error("opening the synth journal: {0}")]
    Journal(#[source] CacheError),
    #[error(transparent)]
    Records(#[from] crate::jsonl::JsonlError),
    #[error("starting worker threads: {0}")]
    Threads(#[from] rayon::ThreadPoolBuildError),
    #[error("counting prompt tokens: {0}")]
    Tokenizer(#[from] crate::tokens::TokenizerError),
}

/// The checked settings of a run: endpoint, prompts and cache ready to use.
pub struct Config {
    pub llm: LlmConfig,
    pub prompts: Prompts,
    pub cache: Cache,
    pub offline: bool,
    pub max_repairs: u32,
    pub describe: bool,
    pub min_difference: f64,
    pub arch: String,
    pub journal: Option<PathBuf>,
    /// The token budget and what counts against it (loaded only when a budget is set).
    pub prompt_budget: Option<(u64, crate::tokens::Tokenizer)>,
    pub candidates: Candidates,
}

impl Config {
    /// Read the endpoint file and the prompt templates, and check every value.
    pub fn new(s: Settings) -> Result<Config, SynthError> {
        let file = match &s.llm {
            Some(p) => LlmFile::read(p)?,
            None => LlmFile::default(),
        };
        let llm = LlmConfig::from_file(file.overlay(s.llm_overrides))?;
        if !(0.0..=1.0).contains(&s.min_difference) {
            return Err(SynthError::Invalid(
                "--min-difference must be within 0..=1".into(),
            ));
        }
        if s.max_prompt_tokens == Some(0) {
            return Err(SynthError::Invalid(
                "max_prompt_tokens must be at least 1".into(),
            ));
        }
        let prompt_budget = match s.max_prompt_tokens {
            Some(n) => Some((n, crate::tokens::Tokenizer::load(None)?)),
            None => None,
        };
        Ok(Config {
            llm,
            prompts: Prompts::load(s.prompts.as_deref())?,
            cache: Cache::new(s.cache),
            offline: s.offline,
            max_repairs: s.max_repairs,
            describe: s.describe,
            min_difference: s.min_difference,
            arch: s.arch,
            journal: s.journal,
            prompt_budget,
            candidates: s.candidates,
        })
    }

    /// The run's HTTP client (the API key read from `api_key_env`); none offline, where
    /// every answer must come from the cache.
    pub fn client(&self) -> Result<Option<Client>, SynthError> {
        match self.offline {
            true => Ok(None),
            false => Ok(Some(Client::new(&self.llm)?)),
        }
    }

    /// Everything that changes a pair's outcome; journal entries from other settings are redone.
    pub(super) fn fingerprint(&self) -> String {
        let mut parts: Vec<String> = vec![
            env!("CARGO_PKG_VERSION").into(),
            self.llm.model.clone(),
            self.llm.temperature.to_string(),
            self.llm.max_tokens.to_string(),
            self.prompts.hash.clone(),
            self.max_repairs.to_string(),
            self.describe.to_string(),
            self.min_difference.to_string(),
            self.arch.clone(),
        ];
        // A budget joins only when set, so journals of runs without one stay valid.
        if let Some((n, _)) = &self.prompt_budget {
            parts.push(format!("max_prompt_tokens={n}"));
        }
        if self.candidates != Candidates::All {
            parts.push(format!("candidates={}", self.candidates));
        }
        let parts: Vec<&str> = parts.iter().map(String::as_str).collect();
        content_id(&parts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_plans_put_all_first_and_cap_at_n() {
        use crate::record::Undo;
        let t: Vec<String> = ["shared_memory", "loop_unrolling", "atomics"]
            .map(String::from)
            .into();
        let labels = |c: Candidates, t: &[String]| -> Vec<String> {
            c.plan(t).iter().map(|u| u.label().to_string()).collect()
        };
        assert_eq!(labels(Candidates::All, &t), ["all"]);
        assert_eq!(
            labels(Candidates::PerTechnique, &t),
            ["all", "shared_memory", "loop_unrolling", "atomics"]
        );
        assert_eq!(labels(Candidates::AtMost(2), &t), ["all", "shared_memory"]);
        // One technique undone alone is the all candidate: asked once.
        assert_eq!(labels(Candidates::PerTechnique, &t[..1]), ["all"]);
        assert_eq!(Candidates::PerTechnique.plan(&[]), [Undo::All]);
        assert_eq!("per-technique".parse(), Ok(Candidates::PerTechnique));
        assert_eq!("4".parse(), Ok(Candidates::AtMost(4)));
        assert!("0".parse::<Candidates>().is_err() && "each".parse::<Candidates>().is_err());
        assert_eq!(Candidates::AtMost(4).to_string(), "4");
    }

    #[test]
    fn a_min_difference_outside_0_to_1_is_refused_by_name() {
        let e = Config::new(Settings {
            min_difference: 1.5,
            ..Settings::default()
        })
        .err()
        .expect("refused");
        assert!(e.to_string().contains("--min-difference"), "{e}");
        assert!(Config::new(Settings::default()).is_ok());
    }
}
