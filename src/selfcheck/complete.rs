//! `kernelpair harness complete` with self-check repair: an LLM fills the TODOs inference
//! left (prompts/harness_complete.md; the answer parsed and `harness check`ed, a rejection
//! sent back with prompts/harness_repair.md), and then, where a GPU is available (or a
//! checker is injected, as tests do through `--worker-cmd`), the completed harness is
//! self-checked; a failure goes back with the failed check, its detail and what the check
//! means (prompts/harness_selfcheck_repair.md). Both kinds of rejection share one bounded
//! number of repair turns (`--max-repairs`, default 2). Requests go through synth's client
//! and response cache, so a rerun sends nothing; the key only ever travels as a header.

use super::{CheckResult, SelfcheckConfig};
use crate::harness::infer_llm::{
    extract_toml, host_excerpt, reject, CompleteArgs, COMPLETE_PROMPT, REPAIR_PROMPT,
};
use crate::record::Pair;
use crate::synth::cache::{self, Cache};
use crate::synth::client::{ChatAnswer, ChatRequest, Client, LlmError, Message};
use crate::synth::config::LlmConfig;
use crate::synth::{Config, Settings, SynthError};
use std::path::{Path, PathBuf};

pub const SELFCHECK_REPAIR_PROMPT: &str = include_str!("../../prompts/harness_selfcheck_repair.md");
const SYSTEM: &str =
    "You write test harnesses for CUDA kernels as TOML files. You answer with one ```toml block.";

/// A self-check failure, as the repair prompt gives it to the model.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckFailure {
    pub check: String,
    pub error: String,
}

/// Runs a completed harness (TOML text) for a pair: `Ok(())` when it passes.
pub type Checker<'a> = dyn Fn(&Pair, &str) -> Result<(), CheckFailure> + 'a;

/// How one completion ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// A harness with no TODO that loads, matches the kernel and (when checked) passed the
    /// self-check (`selfchecked`).
    Done {
        toml: String,
        attempts: u32,
        selfchecked: bool,
    },
    /// Every answer was rejected (the last error), or the endpoint failed.
    Failed { reason: String, attempts: u32 },
}

/// What a failed self-check means, for the model.
pub fn meaning(check: &str) -> &'static str {
    match check {
        "harness" => "the harness did not load or resolve (a size expression, a length or the launch could not be evaluated).",
        "runs_clean" => "the kernel crashed, timed out or wrote outside a buffer: a buffer is shorter than the kernel indexes, an index input's range is too wide, or the grid is too large.",
        "writes_every_output" => "some element of an `out` buffer was never written: the launch grid or a size does not cover the whole output, or the buffer is longer than what the kernel writes (or the buffer is not purely an output).",
        "deterministic" => "two runs with the same seed gave different outputs: a buffer the kernel both reads and writes is marked `out`, or an accumulator is not zero-initialized.",
        "non_degenerate" => "the output is constant or all zeros: the inputs are not the ones the kernel reads, or their values make it skip its work (e.g. index ranges, flags).",
        "seed_dependent" => "the output does not change when the inputs change: the buffers marked `in` are not what the kernel reads.",
        "memcheck" => "compute-sanitizer found an out-of-bounds access: a buffer is shorter than the kernel reads or writes.",
        _ => "the harness does not describe how the program runs the kernel.",
    }
}

fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut s = template.to_string();
    for (k, v) in vars {
        s = s.replace(&format!("{{{k}}}"), v);
    }
    s
}

/// One request through the cache: a cached answer is reused, else the endpoint is asked
/// (never without a client, i.e. offline) and the answer stored.
fn ask(req: &ChatRequest, client: Option<&Client>, cache: &Cache) -> Result<ChatAnswer, LlmError> {
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

/// The endpoint and cache a completion talks to.
pub struct Endpoint<'a> {
    pub llm: &'a LlmConfig,
    pub client: Option<&'a Client>,
    pub cache: &'a Cache,
}

/// Synth's checked settings and client, which harness completion talks through: the same
/// endpoint file, key handling and response cache as `synth` (no synth journal: a rerun
/// finds its answers in the cache).
pub struct Llm {
    pub cfg: Config,
    pub client: Option<Client>,
}

impl Llm {
    pub fn new(s: Settings) -> Result<Llm, SynthError> {
        let cfg = Config::new(s)?;
        let client = cfg.client()?;
        Ok(Llm { cfg, client })
    }

    pub fn endpoint(&self) -> Endpoint<'_> {
        Endpoint {
            llm: &self.cfg.llm,
            client: self.client.as_ref(),
            cache: &self.cfg.cache,
        }
    }

    /// HTTP requests sent so far, retries included.
    pub fn sent(&self) -> u64 {
        self.client.as_ref().map_or(0, |c| {
            c.stats.sent.load(std::sync::atomic::Ordering::Relaxed)
        })
    }
}

/// Complete one inferred draft; `host` is the host code around the launch; `check` the
/// self-check (None: not run).
pub fn complete(
    pair: &Pair,
    draft: &str,
    host: &str,
    ep: &Endpoint,
    max_repairs: u32,
    check: Option<&Checker>,
) -> Outcome {
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
            model: ep.llm.model.clone(),
            messages: messages.clone(),
            temperature: ep.llm.temperature,
            max_tokens: ep.llm.max_tokens,
        };
        let answer = match ask(&req, ep.client, ep.cache) {
            Ok(a) => a,
            Err(e) => {
                return Outcome::Failed {
                    reason: format!("{}: {e}", e.reason().as_str()),
                    attempts,
                }
            }
        };
        let toml = extract_toml(&answer.content);
        let (why, follow_up) = match reject(&toml, pair) {
            Some(why) => {
                let text = fill(
                    REPAIR_PROMPT,
                    &[("attempt", &attempts.to_string()), ("error", &why)],
                );
                (why, text)
            }
            None => match check.map(|c| c(pair, &toml)) {
                None => {
                    return Outcome::Done {
                        toml,
                        attempts,
                        selfchecked: false,
                    }
                }
                Some(Ok(())) => {
                    return Outcome::Done {
                        toml,
                        attempts,
                        selfchecked: true,
                    }
                }
                Some(Err(f)) => {
                    let text = fill(
                        SELFCHECK_REPAIR_PROMPT,
                        &[
                            ("attempt", &attempts.to_string()),
                            ("check", &f.check),
                            ("error", &f.error),
                            ("meaning", meaning(&f.check)),
                        ],
                    );
                    (format!("self-check failed: {}: {}", f.check, f.error), text)
                }
            },
        };
        if attempts > max_repairs {
            return Outcome::Failed {
                reason: format!("rejected after {attempts} answer(s): {why}"),
                attempts,
            };
        }
        messages.push(Message::new("assistant", answer.content));
        messages.push(Message::new("user", follow_up));
    }
}

/// A [`Checker`] that self-checks a completed harness through the verify workers (the GPU,
/// or `cfg.worker_cmd`): the harness is written to a scratch folder and becomes the pair's
/// own harness for the run.
pub fn selfcheck_checker(
    cfg: SelfcheckConfig,
    base: PathBuf,
) -> impl Fn(&Pair, &str) -> Result<(), CheckFailure> {
    move |pair: &Pair, toml: &str| {
        static SEQ: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kernelpair-complete-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let path = dir.join(format!("{}.toml", pair.id));
        std::fs::create_dir_all(&dir)
            .and_then(|_| std::fs::write(&path, toml))
            .map_err(|e| CheckFailure {
                check: "harness".into(),
                error: format!("{}: {e}", path.display()),
            })?;
        let mut p = pair.clone();
        p.harness = Some(path.display().to_string());
        let reports = super::selfcheck_pairs(&[p], &base, &cfg);
        let _ = std::fs::remove_dir_all(&dir);
        let Some(r) = reports.first() else {
            return Err(CheckFailure {
                check: "harness".into(),
                error: "the self-check gave no report".into(),
            });
        };
        match r.checks.iter().find(|c| c.result == CheckResult::Fail) {
            None if r.pass => Ok(()),
            None => Err(CheckFailure {
                check: "harness".into(),
                error: "failed without a failing check".into(),
            }),
            // The scratch path would make every rerun's repair request (and its cache key)
            // different: the model sees `harness.toml`.
            Some(c) => Err(CheckFailure {
                check: c.name.to_string(),
                error: c
                    .detail
                    .replace(&path.display().to_string(), "harness.toml")
                    .replace(&dir.display().to_string(), "."),
            }),
        }
    }
}

/// `harness complete`'s command line: the completion's own options and the self-check's.
#[derive(Debug, clap::Args)]
pub struct CompleteCmd {
    #[command(flatten)]
    pub base: CompleteArgs,
    /// Self-check each completed harness and send failures back for repair: `auto` (when a
    /// GPU is visible), `always`, `never`.
    #[arg(long, value_enum, default_value_t = SelfcheckMode::Auto)]
    pub selfcheck: SelfcheckMode,
    #[arg(long = "timeout-s", default_value_t = 30.0)]
    pub timeout_s: f64,
    /// Command to start a worker instead of this binary (`{device}` is replaced). For tests.
    #[arg(long = "worker-cmd", hide = true)]
    pub worker_cmd: Option<String>,
    #[arg(long, hide = true)]
    pub gpus: Option<usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SelfcheckMode {
    Auto,
    Always,
    Never,
}

/// Whether to self-check: `auto` does when a GPU or a test worker is there.
fn want_selfcheck(c: &CompleteCmd) -> bool {
    match c.selfcheck {
        SelfcheckMode::Never => false,
        SelfcheckMode::Always => true,
        SelfcheckMode::Auto => {
            c.worker_cmd.is_some() || matches!(crate::gpu::probe(), crate::gpu::Probe::Ready { .. })
        }
    }
}

/// The header a completed harness file starts with (origin and self-check for `build`).
pub fn header(model: &str, selfchecked: bool) -> String {
    format!(
        "# Completed by an LLM ({model}) from the inferred draft (kernelpair harness complete).\n# origin: llm\n# selfcheck: {}\n",
        if selfchecked { "pass" } else { "not run" }
    )
}

pub fn run(c: CompleteCmd) -> anyhow::Result<u8> {
    use crate::record::Record;
    let selfcheck = want_selfcheck(&c);
    let a = &c.base;
    let llm = Llm::new(Settings {
        llm: a.llm.clone(),
        cache: a.cache.clone(),
        offline: a.offline,
        max_repairs: a.max_repairs,
        ..Settings::default()
    })?;
    std::fs::create_dir_all(&a.output)?;
    let base = a.units.parent().map(Path::to_path_buf).unwrap_or_default();
    let checker = selfcheck_checker(
        SelfcheckConfig {
            harness_dirs: Vec::new(),
            inferred_dir: None,
            suite_root: None,
            seeds: 2,
            timeout: std::time::Duration::from_secs_f64(c.timeout_s.max(0.1)),
            worker_cmd: c.worker_cmd.clone(),
            gpus: c.gpus,
            sanitizer: Vec::new(),
            compute_sanitizer: None,
            partial: None,
        },
        base,
    );
    let check: Option<&Checker> = if selfcheck { Some(&checker) } else { None };
    let ep = llm.endpoint();
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
        match complete(&p, &draft, &host, &ep, llm.cfg.max_repairs, check) {
            Outcome::Done {
                toml,
                attempts,
                selfchecked,
            } => {
                done += 1;
                let text = format!("{}{toml}", header(&llm.cfg.llm.model, selfchecked));
                crate::jsonl::write_atomic(&a.output.join(format!("{}.toml", p.id)), |w| {
                    use std::io::Write;
                    w.write_all(text.as_bytes())
                })?;
                println!(
                    "{} {}/{}: completed ({attempts} answer(s){})",
                    p.id,
                    p.benchmark,
                    p.kernel,
                    if selfchecked {
                        ", self-check passed"
                    } else {
                        ""
                    }
                );
            }
            Outcome::Failed { reason, attempts } => {
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
    let sent = llm.sent();
    eprintln!(
        "harness complete: {done} completed, {failed} not; {sent} request(s) sent; self-check {}",
        if selfcheck { "on" } else { "off (no GPU)" }
    );
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
    fn the_selfcheck_repair_prompt_names_its_fields_and_every_check_has_a_meaning() {
        for f in ["{attempt}", "{check}", "{error}", "{meaning}"] {
            assert!(SELFCHECK_REPAIR_PROMPT.contains(f), "{f}");
        }
        let generic = meaning("no such check");
        for c in super::super::CHECKS.iter().chain(&["memcheck"]) {
            assert_ne!(meaning(c), generic, "{c}");
        }
        assert!(header("m", true).contains("# selfcheck: pass"));
        assert!(header("m", false).contains("# selfcheck: not run"));
    }
}
