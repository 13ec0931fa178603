//! `kernelpair harness complete`: an LLM fills the TODOs inference left, through synth's
//! client, response cache and key handling. The prompt (prompts/harness_complete.md) gives
//! the inferred draft, the kernel and the host code around its launch; the answer's TOML is
//! parsed and checked against the pair (no TODO left, loads, matches the kernel), and a
//! rejection goes back with the error for a bounded number of repair turns
//! (prompts/harness_repair.md). Answers are cached by request hash, so a rerun sends nothing.

use crate::record::Pair;
use crate::synth::cache::{self, Cache};
use crate::synth::client::{ChatRequest, Client, LlmError, Message};
use crate::synth::config::LlmConfig;
use std::path::{Path, PathBuf};

pub const COMPLETE_PROMPT: &str = include_str!("../../prompts/harness_complete.md");
pub const REPAIR_PROMPT: &str = include_str!("../../prompts/harness_repair.md");
const SYSTEM: &str =
    "You write test harnesses for CUDA kernels as TOML files. You answer with one ```toml block.";

/// How one completion ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Completion {
    /// A harness that loads, has no TODO and matches the kernel.
    Done { toml: String, attempts: u32 },
    /// Every answer was rejected (the last error), or the endpoint failed.
    Failed { reason: String, attempts: u32 },
}

/// The TOML in an answer: the first ```toml (or plain ```) block, else the whole text.
pub fn extract_toml(answer: &str) -> String {
    for fence in ["```toml", "```"] {
        if let Some(start) = answer.find(fence) {
            let rest = &answer[start + fence.len()..];
            if let Some(end) = rest.find("```") {
                return rest[..end].trim().to_string() + "\n";
            }
        }
    }
    answer.trim().to_string() + "\n"
}

/// Why a completed harness is not acceptable, if it is not.
pub fn reject(toml: &str, pair: &Pair) -> Option<String> {
    if toml.contains("\"TODO\"") {
        return Some("it still has \"TODO\" fields; give each a concrete value".into());
    }
    let mut identity = pair.clone();
    if identity.slow.is_pending() {
        identity.slow = crate::record::Slow::natural(pair.fast.clone());
    }
    match super::parse(toml, "the answer") {
        Err(e) => Some(e.to_string()),
        Ok(h) => h
            .check_against(identity.slow.unit(), &identity.fast)
            .err()
            .map(|e| e.to_string()),
    }
}

/// Fill a prompt template's `{name}` fields.
fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut s = template.to_string();
    for (k, v) in vars {
        s = s.replace(&format!("{{{k}}}"), v);
    }
    s
}

/// One request through the cache: a cached answer is reused, else the endpoint is asked
/// (never in `offline` mode) and the answer stored.
fn ask(
    req: &ChatRequest,
    client: Option<&Client>,
    cache: &Cache,
) -> Result<crate::synth::client::ChatAnswer, LlmError> {
    let key = cache::key(req);
    if let Some(a) = cache.get(&key, req) {
        return Ok(a);
    }
    let Some(c) = client else {
        return Err(LlmError::OfflineMiss { key });
    };
    let a = c.chat(req)?;
    if let Err(e) = cache.put(&key, req, &a) {
        tracing::warn!("caching answer {key}: {e}");
    }
    Ok(a)
}

/// Complete one inferred draft. `host` is the host code excerpt around the launch.
pub fn complete(
    pair: &Pair,
    draft: &str,
    host: &str,
    llm: &LlmConfig,
    client: Option<&Client>,
    cache: &Cache,
    max_repairs: u32,
) -> Completion {
    let mut messages = vec![
        Message::new("system", SYSTEM),
        Message::new(
            "user",
            fill(
                COMPLETE_PROMPT,
                &[
                    ("kernel", &pair.fast.kernel),
                    ("draft", draft.trim()),
                    ("source", pair.fast.source.trim()),
                    ("host", host.trim()),
                ],
            ),
        ),
    ];
    let mut attempts = 0;
    loop {
        attempts += 1;
        let req = ChatRequest {
            model: llm.model.clone(),
            messages: messages.clone(),
            temperature: llm.temperature,
            max_tokens: llm.max_tokens,
        };
        let answer = match ask(&req, client, cache) {
            Ok(a) => a,
            Err(e) => {
                return Completion::Failed {
                    reason: format!("{}: {e}", e.reason()),
                    attempts,
                }
            }
        };
        let toml = extract_toml(&answer.content);
        let Some(why) = reject(&toml, pair) else {
            return Completion::Done { toml, attempts };
        };
        if attempts > max_repairs {
            return Completion::Failed {
                reason: format!("rejected after {attempts} answer(s): {why}"),
                attempts,
            };
        }
        messages.push(Message::new("assistant", answer.content));
        messages.push(Message::new(
            "user",
            fill(
                REPAIR_PROMPT,
                &[("attempt", &attempts.to_string()), ("error", &why)],
            ),
        ));
    }
}

/// The host code lines around a unit's launch site (40 before, 10 after), from `root`.
pub fn host_excerpt(root: Option<&Path>, pair: &Pair) -> String {
    let Some(site) = super::draft::site_for(&pair.fast) else {
        return "(no launch site recorded)".into();
    };
    let Some(text) = root.and_then(|r| std::fs::read_to_string(r.join(&site.path)).ok()) else {
        return format!(
            "(host file {} not available; recorded launch: <<<{}, {}>>>({}))",
            site.path,
            site.grid,
            site.block,
            site.args.join(", ")
        );
    };
    let lines: Vec<&str> = text.lines().collect();
    let at = site.line.saturating_sub(1) as usize;
    let lo = at.saturating_sub(40);
    let hi = (at + 10).min(lines.len());
    lines[lo..hi].join("\n")
}

#[derive(Debug, clap::Args)]
pub struct CompleteArgs {
    /// JSONL file holding the pairs.
    pub units: PathBuf,
    /// Inferred harnesses (`harness infer -o DIR`); those with TODOs are completed.
    #[arg(long = "inferred-dir")]
    pub inferred_dir: PathBuf,
    /// Folder for the completed harnesses (`<pair-id>.toml`).
    #[arg(short, long)]
    pub output: PathBuf,
    /// Endpoint settings, as for `synth --llm` (the key comes from `api_key_env`).
    #[arg(long)]
    pub llm: Option<PathBuf>,
    /// Use cached answers only; never contact the endpoint.
    #[arg(long)]
    pub offline: bool,
    #[arg(long, default_value = ".kernelpair/llm-cache")]
    pub cache: PathBuf,
    /// Repair turns after the first answer.
    #[arg(long, default_value_t = 2)]
    pub max_repairs: u32,
    /// Suite root, for the host code excerpt.
    #[arg(long)]
    pub root: Option<PathBuf>,
}

pub fn run_complete(a: CompleteArgs) -> anyhow::Result<u8> {
    use crate::record::Record;
    let file = match &a.llm {
        Some(p) => crate::synth::config::LlmFile::read(p)?,
        None => crate::synth::config::LlmFile::default(),
    };
    let llm = LlmConfig::from_file(file)?;
    let client = if a.offline {
        None
    } else {
        Some(Client::new(&llm)?)
    };
    let cache = Cache::new(&a.cache);
    std::fs::create_dir_all(&a.output)?;
    let (mut done, mut failed) = (0, 0);
    for r in crate::jsonl::read_records(&a.units)? {
        let Record::Pair(p) = r else { continue };
        let Ok(draft) = std::fs::read_to_string(a.inferred_dir.join(format!("{}.toml", p.id)))
        else {
            continue;
        };
        if !draft.contains("\"TODO\"") {
            continue;
        }
        let host = host_excerpt(a.root.as_deref(), &p);
        match complete(
            &p,
            &draft,
            &host,
            &llm,
            client.as_ref(),
            &cache,
            a.max_repairs,
        ) {
            Completion::Done { toml, attempts } => {
                done += 1;
                let text = format!(
                    "# Completed by an LLM ({}) from the inferred draft (kernelpair harness complete).\n# origin: llm\n{toml}",
                    llm.model
                );
                crate::jsonl::write_atomic(&a.output.join(format!("{}.toml", p.id)), |w| {
                    use std::io::Write;
                    w.write_all(text.as_bytes())
                })?;
                println!(
                    "{} {}/{}: completed ({attempts} answer(s))",
                    p.id, p.benchmark, p.kernel
                );
            }
            Completion::Failed { reason, attempts } => {
                failed += 1;
                println!(
                    "{} {}/{}: not completed after {attempts} answer(s): {}",
                    p.id,
                    p.benchmark,
                    p.kernel,
                    reason.lines().next().unwrap_or("")
                );
            }
        }
    }
    let sent = client
        .as_ref()
        .map(|c| c.stats.sent.load(std::sync::atomic::Ordering::Relaxed))
        .unwrap_or(0);
    eprintln!("harness complete: {done} completed, {failed} not; {sent} request(s) sent");
    Ok(if failed == 0 {
        crate::exit::OK
    } else {
        crate::exit::PARTIAL
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn toml_is_taken_from_the_first_fenced_block() {
        assert_eq!(extract_toml("Here:\n```toml\na = 1\n```\nbye"), "a = 1\n");
        assert_eq!(extract_toml("```\nb = 2\n```"), "b = 2\n");
        assert_eq!(extract_toml("c = 3"), "c = 3\n");
    }

    #[test]
    fn prompts_name_their_fields() {
        for f in ["{kernel}", "{draft}", "{source}", "{host}"] {
            assert!(COMPLETE_PROMPT.contains(f), "{f}");
        }
        assert!(REPAIR_PROMPT.contains("{error}") && REPAIR_PROMPT.contains("{attempt}"));
        assert_eq!(fill("a {x} b {x}", &[("x", "1")]), "a 1 b 1");
    }
}
