//! The LLM endpoint configuration: a TOML file (`--llm`), then command-line overrides,
//! checked into one [`LlmConfig`].
//!
//! The API key is never part of it: the config names the environment variable that
//! holds the key, and only the HTTP client reads that variable.

use serde::Deserialize;
use std::path::{Path, PathBuf};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: {message}")]
    Parse { path: PathBuf, message: String },
    #[error("{path}: an API key must not be written in a config file; put it in an environment variable and name that variable with `api_key_env`")]
    KeyInConfig { path: PathBuf },
    #[error("invalid LLM setting: {0}")]
    Invalid(String),
    #[error("the environment variable {0} named by api_key_env is not set or empty")]
    KeyMissing(String),
}

/// Prices in US dollars per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Price {
    pub prompt_per_mtok: f64,
    pub completion_per_mtok: f64,
}

/// What a `--llm` file may hold; every field optional.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LlmFile {
    pub base_url: Option<String>,
    pub model: Option<String>,
    pub api_key_env: Option<String>,
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    pub timeout_secs: Option<f64>,
    pub connect_timeout_secs: Option<f64>,
    pub concurrency: Option<usize>,
    pub requests_per_minute: Option<f64>,
    pub max_retries: Option<u32>,
    pub backoff_base_ms: Option<u64>,
    pub backoff_max_ms: Option<u64>,
    pub max_retry_after_secs: Option<f64>,
    pub price: Option<Price>,
}

impl LlmFile {
    pub fn read(path: &Path) -> Result<LlmFile, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        // Refuse a key before parsing, without echoing any value.
        if let Ok(table) = text.parse::<toml::Table>() {
            if table
                .keys()
                .any(|k| matches!(k.as_str(), "api_key" | "key" | "token" | "authorization"))
            {
                return Err(ConfigError::KeyInConfig {
                    path: path.to_path_buf(),
                });
            }
        }
        toml::from_str(&text).map_err(|e| ConfigError::Parse {
            path: path.to_path_buf(),
            message: e.message().to_string(),
        })
    }

    /// `over`'s fields win where set.
    pub fn overlay(self, over: LlmFile) -> LlmFile {
        LlmFile {
            base_url: over.base_url.or(self.base_url),
            model: over.model.or(self.model),
            api_key_env: over.api_key_env.or(self.api_key_env),
            temperature: over.temperature.or(self.temperature),
            max_tokens: over.max_tokens.or(self.max_tokens),
            timeout_secs: over.timeout_secs.or(self.timeout_secs),
            connect_timeout_secs: over.connect_timeout_secs.or(self.connect_timeout_secs),
            concurrency: over.concurrency.or(self.concurrency),
            requests_per_minute: over.requests_per_minute.or(self.requests_per_minute),
            max_retries: over.max_retries.or(self.max_retries),
            backoff_base_ms: over.backoff_base_ms.or(self.backoff_base_ms),
            backoff_max_ms: over.backoff_max_ms.or(self.backoff_max_ms),
            max_retry_after_secs: over.max_retry_after_secs.or(self.max_retry_after_secs),
            price: over.price.or(self.price),
        }
    }
}

/// The checked endpoint settings.
#[derive(Debug, Clone, PartialEq)]
pub struct LlmConfig {
    /// Up to and including `/v1`; `/chat/completions` is appended.
    pub base_url: String,
    pub model: String,
    pub api_key_env: Option<String>,
    pub temperature: f64,
    pub max_tokens: u32,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub concurrency: usize,
    /// Requests started per minute, at most (0 = unlimited).
    pub requests_per_minute: f64,
    pub max_retries: u32,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// A longer `Retry-After` is cut to this, so one server cannot stall a run for hours.
    pub max_retry_after: Duration,
    pub price: Option<Price>,
}

impl LlmConfig {
    pub fn from_file(f: LlmFile) -> Result<LlmConfig, ConfigError> {
        let bad = |m: String| Err(ConfigError::Invalid(m));
        let base_url = f
            .base_url
            .unwrap_or_else(|| "http://127.0.0.1:8080/v1".into())
            .trim_end_matches('/')
            .to_string();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            return bad(format!(
                "base_url must start with http:// or https:// (got {base_url})"
            ));
        }
        let temperature = f.temperature.unwrap_or(0.2);
        if !(0.0..=2.0).contains(&temperature) {
            return bad(format!("temperature {temperature} is outside 0..=2"));
        }
        let secs = |v: Option<f64>, d: f64, name: &str| -> Result<Duration, ConfigError> {
            let v = v.unwrap_or(d);
            if v.is_finite() && v > 0.0 {
                Ok(Duration::from_secs_f64(v))
            } else {
                Err(ConfigError::Invalid(format!(
                    "{name} must be positive (got {v})"
                )))
            }
        };
        let concurrency = f.concurrency.unwrap_or(4);
        if concurrency == 0 {
            return bad("concurrency must be at least 1".into());
        }
        let rpm = f.requests_per_minute.unwrap_or(0.0);
        if !rpm.is_finite() || rpm < 0.0 {
            return bad(format!("requests_per_minute must be >= 0 (got {rpm})"));
        }
        if let Some(name) = &f.api_key_env {
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return bad("api_key_env must be the NAME of an environment variable (letters, digits, _), not a key".into());
            }
        }
        Ok(LlmConfig {
            base_url,
            model: f.model.unwrap_or_else(|| "local".into()),
            api_key_env: f.api_key_env,
            temperature,
            max_tokens: f.max_tokens.unwrap_or(2048),
            timeout: secs(f.timeout_secs, 300.0, "timeout_secs")?,
            connect_timeout: secs(f.connect_timeout_secs, 10.0, "connect_timeout_secs")?,
            concurrency,
            requests_per_minute: rpm,
            max_retries: f.max_retries.unwrap_or(4),
            backoff_base: Duration::from_millis(f.backoff_base_ms.unwrap_or(500)),
            backoff_max: Duration::from_millis(f.backoff_max_ms.unwrap_or(30_000)),
            max_retry_after: secs(f.max_retry_after_secs, 120.0, "max_retry_after_secs")?,
            price: f.price,
        })
    }

    /// Cost of some usage under the price table, if one is configured.
    pub fn cost(&self, u: crate::record::TokenUsage) -> Option<f64> {
        self.price.map(|p| {
            (u.prompt_tokens as f64 * p.prompt_per_mtok
                + u.completion_tokens as f64 * p.completion_per_mtok)
                / 1e6
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn example_config_parses_and_overrides_win() {
        let f = LlmFile::read(Path::new("examples/llm.toml")).unwrap();
        let c = LlmConfig::from_file(f.overlay(LlmFile {
            model: Some("other".into()),
            ..Default::default()
        }))
        .unwrap();
        assert_eq!(c.model, "other");
        assert!(c.base_url.ends_with("/v1"));
        let u = crate::record::TokenUsage {
            prompt_tokens: 1_000_000,
            completion_tokens: 500_000,
        };
        let p = c.price.unwrap();
        let want = p.prompt_per_mtok + p.completion_per_mtok / 2.0;
        assert!((c.cost(u).unwrap() - want).abs() < 1e-9);
    }

    #[test]
    fn a_key_in_the_config_is_refused_without_echoing_it() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("llm.toml");
        std::fs::write(&p, "model = \"m\"\napi_key = \"sk-live-DO-NOT-PRINT\"\n").unwrap();
        let e = LlmFile::read(&p).unwrap_err().to_string();
        assert!(e.contains("api_key_env"), "{e}");
        assert!(!e.contains("DO-NOT-PRINT"), "{e}");
        let e = LlmConfig::from_file(LlmFile {
            api_key_env: Some("sk-abc def".into()),
            ..Default::default()
        })
        .unwrap_err()
        .to_string();
        assert!(!e.contains("sk-abc"), "{e}");
    }

    #[test]
    fn invalid_values_are_named() {
        let e = LlmConfig::from_file(LlmFile {
            temperature: Some(5.0),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("temperature"));
        let e = LlmConfig::from_file(LlmFile {
            base_url: Some("localhost:8080".into()),
            ..Default::default()
        })
        .unwrap_err();
        assert!(e.to_string().contains("base_url"));
    }
}
