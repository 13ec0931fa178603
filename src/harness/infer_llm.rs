//! What `kernelpair harness complete` (src/harness/complete.rs) shares with the build's
//! harness step: the prompts, the TOML in an answer, the checks an answer's harness must
//! pass (no TODO left, loads, matches the kernel) and the host-code excerpt sent with it.

use crate::record::Pair;
use std::path::{Path, PathBuf};

pub const COMPLETE_PROMPT: &str = include_str!("../../prompts/harness_complete.md");
pub const REPAIR_PROMPT: &str = include_str!("../../prompts/harness_repair.md");

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
    }
}
