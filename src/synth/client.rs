//! A blocking client for OpenAI-compatible `/v1/chat/completions`: a shared rate limit,
//! timeouts, and retries with exponential backoff and jitter that honour `Retry-After`.
//!
//! The API key is read from the environment once, held in a [`Secret`] that never
//! prints, sent only as a header, and scrubbed from any error text.

use super::config::{ConfigError, LlmConfig};
use crate::record::{SynthReason, TokenUsage};
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

impl Message {
    pub fn new(role: &str, content: impl Into<String>) -> Self {
        Message {
            role: role.into(),
            content: content.into(),
        }
    }
}

/// The request body, exactly as sent (and hashed for the cache).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatRequest {
    pub model: String,
    pub messages: Vec<Message>,
    pub temperature: f64,
    pub max_tokens: u32,
}

/// What the run keeps of a completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChatAnswer {
    pub content: String,
    #[serde(default)]
    pub usage: TokenUsage,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
}

#[derive(Debug, Clone, thiserror::Error)]
pub enum LlmError {
    #[error("endpoint unreachable: {0}")]
    Unreachable(String),
    #[error("request timed out after {0:.0?}")]
    Timeout(Duration),
    #[error("HTTP {status}: {body}")]
    Http { status: u16, body: String },
    #[error("malformed response: {0}")]
    Malformed(String),
    #[error("offline: no cached answer for request {key}")]
    OfflineMiss { key: String },
}

impl LlmError {
    /// Stable reason code recorded in outputs.
    pub fn reason(&self) -> SynthReason {
        match self {
            LlmError::Unreachable(_) => SynthReason::LlmUnreachable,
            LlmError::Timeout(_) => SynthReason::LlmTimeout,
            LlmError::Http { status: 429, .. } => SynthReason::LlmRateLimited,
            LlmError::Http { status, .. } if *status >= 500 => SynthReason::LlmServerError,
            LlmError::Http { .. } => SynthReason::LlmRequestRejected,
            LlmError::Malformed(_) => SynthReason::LlmMalformedResponse,
            LlmError::OfflineMiss { .. } => SynthReason::OfflineCacheMiss,
        }
    }
}

/// A string that never shows itself in `Debug` output.
pub struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// Counters for the run summary.
#[derive(Debug, Default)]
pub struct Stats {
    /// HTTP requests sent, retries included.
    pub sent: AtomicU64,
    pub retries: AtomicU64,
    pub succeeded: AtomicU64,
}

pub struct Client {
    http: reqwest::blocking::Client,
    url: String,
    key: Option<Secret>,
    cfg: LlmConfig,
    /// Earliest start of the next request (the rate limit).
    next_slot: Mutex<Instant>,
    /// Set once a request has failed to connect through all its retries: later requests
    /// fail at once instead of each waiting out its own backoff.
    down: AtomicBool,
    pub stats: Stats,
}

impl Client {
    pub fn new(cfg: &LlmConfig) -> Result<Client, ConfigError> {
        let key = match &cfg.api_key_env {
            None => None,
            Some(name) => match std::env::var(name) {
                Ok(v) if !v.trim().is_empty() => Some(Secret(v.trim().to_string())),
                _ => return Err(ConfigError::KeyMissing(name.clone())),
            },
        };
        let http = reqwest::blocking::Client::builder()
            .timeout(cfg.timeout)
            .connect_timeout(cfg.connect_timeout)
            .user_agent(concat!("kernelpair/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| ConfigError::Invalid(format!("HTTP client: {e}")))?;
        Ok(Client {
            http,
            url: format!("{}/chat/completions", cfg.base_url),
            key,
            cfg: cfg.clone(),
            next_slot: Mutex::new(Instant::now()),
            down: AtomicBool::new(false),
            stats: Stats::default(),
        })
    }

    /// Send one chat request, retrying what can succeed on a second try.
    pub fn chat(&self, req: &ChatRequest) -> Result<ChatAnswer, LlmError> {
        if self.down.load(Ordering::Relaxed) {
            return Err(LlmError::Unreachable(format!(
                "{} did not accept connections earlier in this run",
                self.cfg.base_url
            )));
        }
        let mut attempt = 0u32;
        loop {
            self.wait_for_slot();
            self.stats.sent.fetch_add(1, Ordering::Relaxed);
            let (err, retry_after) = match self.send_once(req) {
                Ok(a) => {
                    self.stats.succeeded.fetch_add(1, Ordering::Relaxed);
                    return Ok(a);
                }
                Err(e) => e,
            };
            let retryable = match &err {
                LlmError::Http { status, .. } => *status == 408 || *status == 429 || *status >= 500,
                LlmError::Unreachable(_) | LlmError::Timeout(_) | LlmError::Malformed(_) => true,
                LlmError::OfflineMiss { .. } => false,
            };
            if !retryable || attempt >= self.cfg.max_retries {
                if matches!(err, LlmError::Unreachable(_)) && retryable {
                    self.down.store(true, Ordering::Relaxed);
                }
                return Err(err);
            }
            let delay = match retry_after {
                Some(d) => d.min(self.cfg.max_retry_after),
                None => backoff(attempt, self.cfg.backoff_base, self.cfg.backoff_max),
            };
            tracing::info!(
                "retrying in {delay:.1?} after attempt {} failed: {err}",
                attempt + 1
            );
            self.stats.retries.fetch_add(1, Ordering::Relaxed);
            std::thread::sleep(delay);
            attempt += 1;
        }
    }

    fn wait_for_slot(&self) {
        if self.cfg.requests_per_minute <= 0.0 {
            return;
        }
        let gap = Duration::from_secs_f64(60.0 / self.cfg.requests_per_minute);
        let start = {
            let mut next = self.next_slot.lock().unwrap_or_else(|e| e.into_inner());
            let now = Instant::now();
            let start = (*next).max(now);
            *next = start + gap;
            start
        };
        let now = Instant::now();
        if start > now {
            std::thread::sleep(start - now);
        }
    }

    /// One HTTP exchange. On failure, also the server's `Retry-After`, if it gave one.
    fn send_once(&self, req: &ChatRequest) -> Result<ChatAnswer, (LlmError, Option<Duration>)> {
        let mut rb = self.http.post(&self.url).json(req);
        if let Some(k) = &self.key {
            rb = rb.bearer_auth(&k.0);
        }
        let resp = rb.send().map_err(|e| (self.transport_error(e), None))?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let body = resp.text().map_err(|e| (self.transport_error(e), None))?;
        if !status.is_success() {
            return Err((
                LlmError::Http {
                    status: status.as_u16(),
                    body: self.scrub(&snippet(&body)),
                },
                retry_after,
            ));
        }
        parse_completion(&body).map_err(|m| (LlmError::Malformed(self.scrub(&m)), None))
    }

    fn transport_error(&self, e: reqwest::Error) -> LlmError {
        if e.is_timeout() {
            LlmError::Timeout(self.cfg.timeout)
        } else {
            // reqwest's message names the URL and the cause, never headers.
            let mut msg = e.to_string();
            let mut src = std::error::Error::source(&e);
            while let Some(s) = src {
                msg.push_str(": ");
                msg.push_str(&s.to_string());
                src = s.source();
            }
            LlmError::Unreachable(self.scrub(&msg))
        }
    }

    /// Remove the key from text that came from elsewhere (a server may echo headers).
    fn scrub(&self, s: &str) -> String {
        match &self.key {
            Some(k) if !k.0.is_empty() => s.replace(&k.0, "***"),
            _ => s.to_string(),
        }
    }
}

/// Exponential backoff with jitter: a random delay in [d/2, d] where d = base·2^attempt,
/// capped, so many clients retrying at once spread out.
pub fn backoff(attempt: u32, base: Duration, max: Duration) -> Duration {
    let d = base
        .saturating_mul(2u32.saturating_pow(attempt.min(20)))
        .min(max);
    let half = d / 2;
    let jitter = rand::rng().random_range(0..=half.as_millis() as u64);
    half + Duration::from_millis(jitter)
}

/// `Retry-After` in seconds (`3`, `1.5`); the HTTP-date form is not used by LLM endpoints
/// seen so far and falls back to backoff.
pub fn parse_retry_after(v: &str) -> Option<Duration> {
    let s: f64 = v.trim().parse().ok()?;
    (s.is_finite() && s >= 0.0).then(|| Duration::from_secs_f64(s))
}

fn snippet(body: &str) -> String {
    let b = body.trim();
    let cut: String = b.chars().take(300).collect();
    if cut.len() < b.len() {
        format!("{cut}…")
    } else {
        cut
    }
}

#[derive(Deserialize)]
struct WireResponse {
    choices: Vec<WireChoice>,
    #[serde(default)]
    usage: Option<WireUsage>,
}
#[derive(Deserialize)]
struct WireChoice {
    message: WireMessage,
    #[serde(default)]
    finish_reason: Option<String>,
}
#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Option<String>,
}
#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

/// The first choice's text and the usage of a chat completion body.
pub fn parse_completion(body: &str) -> Result<ChatAnswer, String> {
    let w: WireResponse =
        serde_json::from_str(body).map_err(|e| format!("{e} in {:?}", snippet(body)))?;
    let c = w
        .choices
        .into_iter()
        .next()
        .ok_or_else(|| "no choices in the response".to_string())?;
    Ok(ChatAnswer {
        content: c.message.content.unwrap_or_default(),
        usage: w
            .usage
            .map(|u| TokenUsage {
                prompt_tokens: u.prompt_tokens,
                completion_tokens: u.completion_tokens,
            })
            .unwrap_or_default(),
        finish_reason: c.finish_reason,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_grows_caps_and_jitters() {
        let base = Duration::from_millis(100);
        let max = Duration::from_millis(1000);
        for attempt in 0..8 {
            let d = backoff(attempt, base, max);
            let full = (base * 2u32.pow(attempt)).min(max);
            assert!(d >= full / 2 && d <= full, "{attempt}: {d:?}");
        }
        let samples: std::collections::BTreeSet<_> =
            (0..20).map(|_| backoff(3, base, max)).collect();
        assert!(samples.len() > 1, "no jitter");
    }

    #[test]
    fn retry_after_seconds() {
        assert_eq!(parse_retry_after("2"), Some(Duration::from_secs(2)));
        assert_eq!(parse_retry_after(" 0.5 "), Some(Duration::from_millis(500)));
        assert_eq!(parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"), None);
        assert_eq!(parse_retry_after("-1"), None);
    }

    #[test]
    fn completion_parsing() {
        let a = parse_completion(r#"{"choices":[{"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}"#).unwrap();
        assert_eq!(a.content, "hi");
        assert_eq!(a.usage.total(), 4);
        assert!(parse_completion("{\"choices\":[]}")
            .unwrap_err()
            .contains("no choices"));
        assert!(parse_completion("<html>").is_err());
    }

    #[test]
    fn rate_limit_spaces_request_starts() {
        let cfg = crate::synth::config::LlmConfig::from_file(crate::synth::config::LlmFile {
            requests_per_minute: Some(600.0),
            ..Default::default()
        })
        .unwrap();
        let c = Client::new(&cfg).unwrap();
        let t = Instant::now();
        for _ in 0..5 {
            c.wait_for_slot();
        }
        // Five starts at 0.1 s spacing: the last one no earlier than 0.4 s in.
        assert!(
            t.elapsed() >= Duration::from_millis(390),
            "{:?}",
            t.elapsed()
        );
    }

    #[test]
    fn secret_does_not_debug_print() {
        assert_eq!(format!("{:?}", Secret("sk-123".into())), "Secret(***)");
    }
}
