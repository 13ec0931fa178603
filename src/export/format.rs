//! One training sample per pair, and its four file formats: chat messages (KernelCompare's
//! shape), prompt-completion, preference (DPO: chosen = fast, rejected = slow) and ShareGPT.
//! Each format is one serde type; every line carries the same `metadata` object.

use super::launch::Rendered;
use super::template::Templates;
use crate::record::{Pair, Slow, Speedup, Status, Verification};
use clap::ValueEnum;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the exported line layout (`metadata.schema_version`); bumped on incompatible change.
pub const EXPORT_VERSION: u32 = 1;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "kebab-case")]
pub enum Format {
    Chat,
    PromptCompletion,
    Preference,
    Sharegpt,
}

impl Format {
    pub const ALL: [Format; 4] = [
        Format::Chat,
        Format::PromptCompletion,
        Format::Preference,
        Format::Sharegpt,
    ];

    /// Folder (and Hugging Face config name) of the format.
    pub fn name(self) -> &'static str {
        match self {
            Format::Chat => "chat",
            Format::PromptCompletion => "prompt-completion",
            Format::Preference => "preference",
            Format::Sharegpt => "sharegpt",
        }
    }
}

/// A kernel of the pair as the metadata names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitRef {
    pub id: String,
    pub path: String,
    pub variant: String,
    pub kernel: String,
    /// SPDX id of the licence governing the source file, or null when unknown.
    pub licence: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeviceMeta {
    pub name: String,
    pub compute_capability: String,
    pub driver_version: String,
    pub cuda_version: String,
}

/// Everything a trainer or an auditor needs to trace a sample back; the same object in
/// every format. Fields are always present (null when unknown) so columnar loaders
/// (Arrow / Hugging Face `datasets`) see one schema.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Metadata {
    pub schema_version: u32,
    pub id: String,
    pub suite: String,
    pub benchmark: String,
    pub kernel: String,
    pub split: String,
    pub slow: UnitRef,
    pub fast: UnitRef,
    /// `natural` (both kernels from the suite) or `synthesized` (slow kernel from an LLM).
    pub origin: String,
    /// The model that wrote the slow kernel, for synthesized pairs.
    pub model: Option<String>,
    pub techniques: Vec<String>,
    /// False only for pairs exported with `--include-unverified`.
    pub verified: bool,
    /// Verification status (`verified`, `not_faster`, …) or `unverified` when never run.
    pub status: String,
    /// Speedup at the largest size set, with its 95% interval.
    pub speedup: Option<Speedup>,
    /// Speedup per size set, when the verification recorded them.
    pub speedups: Vec<Speedup>,
    pub device: Option<DeviceMeta>,
    /// kernelpair version that verified the pair.
    pub verified_by: Option<String>,
    /// kernelpair version that exported it.
    pub exported_by: String,
    /// Tokens of system + user + chosen assistant text, by the export's tokenizer.
    pub tokens: usize,
    /// What changed and why, built from the techniques, the launch change and the measured
    /// figures without an LLM (`export::describe`).
    pub description: Option<String>,
    /// Verdict flags (`size_dependent`, `suspect_slow`).
    pub flags: Vec<String>,
    /// How the slow and the fast kernel are launched, as CUDA statements with the main
    /// size set's numbers (`k<<<dim3(8192), dim3(512)>>>(in, out, n);`, one per line), from
    /// the harness; null when no harness was found.
    pub slow_launch: Option<String>,
    pub fast_launch: Option<String>,
    /// The pair this sample was made for: its own id, or for a synth candidate the pending
    /// pair its kernel's candidates share ([`Pair::group`]), so they can be kept together.
    pub group: String,
    /// What a synth candidate undid (`all` or a technique); null for other pairs.
    pub candidate: Option<String>,
}

/// One exported pair before it is written in any format.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub system: String,
    pub user: String,
    /// The assistant answer with the fast kernel.
    pub chosen: String,
    /// The same answer shape with the slow kernel: what a model that changes nothing says.
    pub rejected: String,
    /// The two kernels' source, for de-duplication.
    pub slow_code: String,
    pub fast_code: String,
    pub metadata: Metadata,
}

/// Speedup per size set from the verification evidence (verify's `timings`), else the
/// single headline speedup.
pub fn speedups_per_size_set(v: &Verification) -> Vec<Speedup> {
    let per_set = v.evidence.speedups();
    if !per_set.is_empty() {
        return per_set;
    }
    v.speedup.iter().cloned().collect()
}

/// `shared_memory_tiling` → `shared memory tiling`; a list → `a, b and c`.
pub fn techniques_phrase(techniques: &[String]) -> String {
    let words: Vec<String> = techniques
        .iter()
        .map(|t| t.replace(['_', '-'], " "))
        .collect();
    match words.len() {
        0 => String::new(),
        1 => words[0].clone(),
        n => format!("{} and {}", words[..n - 1].join(", "), words[n - 1]),
    }
}

fn unit_ref(u: &crate::record::KernelUnit) -> UnitRef {
    UnitRef {
        id: u.id.clone(),
        path: u.path.clone(),
        variant: u.variant.clone(),
        kernel: u.kernel.clone(),
        licence: u.provenance.licence.as_ref().map(|l| l.id.clone()),
    }
}

/// Render the sample of a pair that has both kernels. `with_speedup` adds the measured
/// speedup sentence to the chosen answer when the pair has one. `Err` says why the pair
/// cannot be written as training text (its launches cannot be written as CUDA).
pub fn build_sample(
    pair: &Pair,
    slow: &crate::record::KernelUnit,
    t: &Templates,
    with_speedup: bool,
) -> Result<Sample, String> {
    build_sample_with(pair, slow, t, with_speedup, false)
}

/// A type as a caller passes an argument of it: the index's normal form without the
/// qualifiers that change nothing at a launch (`const`, `__restrict__`, `volatile`).
pub fn caller_type(ty: &str) -> String {
    crate::cuda::syntax::normalize_type(ty)
        .split(' ')
        .filter(|w| {
            !matches!(
                *w,
                "__restrict__" | "__restrict" | "restrict" | "const" | "volatile"
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The fast kernel's declaration when a caller sees a different kernel than the slow one
/// (another name or other parameter types): the prompt then promises this interface
/// instead of "the kernel's name and parameters". None when the slow kernel's holds.
pub fn fast_interface(
    slow: &crate::record::KernelUnit,
    fast: &crate::record::KernelUnit,
) -> Option<String> {
    let types = |u: &crate::record::KernelUnit| -> Vec<String> {
        u.params.iter().map(|p| caller_type(&p.ty)).collect()
    };
    // A launcher version's `kernel` is a host function launching several kernels: there
    // is no one kernel to promise, and its launches show what each side runs.
    let version = |u: &crate::record::KernelUnit| u.diagnostics.iter().any(|d| d.code == "version");
    if (slow.kernel == fast.kernel && types(slow) == types(fast)) || version(slow) || version(fast)
    {
        return None;
    }
    let params: Vec<String> = fast
        .params
        .iter()
        .map(|p| match p.ty.find('[') {
            // `const float []` declares `const float a[]`.
            Some(i) => format!("{} {}{}", p.ty[..i].trim_end(), p.name, &p.ty[i..]),
            None => format!("{} {}", p.ty, p.name),
        })
        .collect();
    let template = match fast.template_params.is_empty() {
        true => String::new(),
        false => format!("template <{}> ", fast.template_params.join(", ")),
    };
    Some(format!(
        "{template}__global__ void {}({})",
        fast.kernel,
        params.join(", ")
    ))
}

/// [`build_sample`], and with `with_description` the description of what changed
/// (`{{optimization}}` in assistant.md) in the chosen answer.
pub fn build_sample_with(
    pair: &Pair,
    slow: &crate::record::KernelUnit,
    t: &Templates,
    with_speedup: bool,
    with_description: bool,
) -> Result<Sample, String> {
    let v = pair.verification.as_ref();
    // The code as the suite wrote it: what isolation changed only for NVRTC stays out.
    let slow_text = crate::cuda::compile_only::source_text(slow);
    let fast_text = crate::cuda::compile_only::source_text(&pair.fast);
    let techniques_list = super::describe::techniques(pair);
    let launches = v.and_then(crate::harness::launches::Launches::of);
    // Launches as CUDA statements with the main size set's numbers: the one form of the
    // user message, the answer, the description and the metadata.
    let rendered = launches
        .as_ref()
        .map(|l| super::launch::render(pair, slow, l))
        .transpose()
        .map_err(|m| format!("launch not written as CUDA: {m}"))?;
    let description = super::describe::describe(pair, &techniques_list, rendered.as_ref());
    // A harness with no launch for a variant (a host loop it cannot express) says nothing.
    let block = |v: &[String]| (!v.is_empty()).then(|| Rendered::block(v));
    let slow_launch = rendered.as_ref().and_then(|r| block(&r.slow));
    let fast_launch = rendered.as_ref().and_then(|r| block(&r.fast));
    let speedup = v.and_then(|v| v.speedup.clone());
    let device = v.and_then(|v| v.device.as_ref()).map(|d| DeviceMeta {
        name: d.name.clone(),
        compute_capability: d.compute_capability.clone(),
        driver_version: d.driver_version.clone(),
        cuda_version: d.cuda_version.clone(),
    });
    let techniques = techniques_phrase(&techniques_list);
    let mut vars: BTreeMap<&str, String> = BTreeMap::new();
    vars.insert("benchmark", pair.benchmark.clone());
    vars.insert("suite", pair.suite.clone());
    vars.insert("file", slow.path.clone());
    vars.insert("kernel", pair.kernel.clone());
    // The pair's own description, as before. Not the harness's: harness descriptions name
    // both sides ("one point per thread vs 8 points per thread"), which would put the
    // answer in the prompt. What changed is the answer's (`optimization`).
    vars.insert(
        "description",
        pair.description
            .clone()
            .unwrap_or_default()
            .trim()
            .to_string(),
    );
    vars.insert("slow_launch", slow_launch.clone().unwrap_or_default());
    vars.insert(
        "sizes",
        rendered
            .as_ref()
            .map(|r| r.sizes.clone())
            .unwrap_or_default(),
    );
    vars.insert(
        "fast_interface",
        fast_interface(slow, &pair.fast).unwrap_or_default(),
    );
    // The answer says how to launch the fast kernel whenever that is not the prompt's
    // launch word for word (another configuration, kernel or arguments).
    vars.insert(
        "fast_launch",
        match (&slow_launch, &fast_launch) {
            (Some(s), Some(f)) if s != f => f.clone(),
            _ => String::new(),
        },
    );
    if with_description {
        vars.insert("optimization", description.clone());
    }
    vars.insert("slow_source", slow_text.trim_end().to_string());
    if let (true, Some(s), Some(d)) = (with_speedup, &speedup, &device) {
        let mut p = vars.clone();
        p.insert("speedup", format!("{:.1}", s.median));
        p.insert("ci_low", format!("{:.1}", s.ci_low));
        p.insert("ci_high", format!("{:.1}", s.ci_high));
        p.insert("size_set", s.size_set.clone());
        p.insert("device", d.name.clone());
        p.insert("techniques", techniques.clone());
        vars.insert("performance", t.performance.render(&p).trim().to_string());
    }
    vars.insert("techniques", techniques);
    vars.insert("code", fast_text.trim_end().to_string());
    let chosen = t.assistant.render(&vars);
    vars.insert("code", slow_text.trim_end().to_string());
    vars.insert("performance", String::new());
    // The rejected answer is the slow kernel as it is: same launch, nothing to explain.
    vars.insert("fast_launch", String::new());
    vars.insert("optimization", String::new());
    let rejected = t.assistant.render(&vars);
    let origin = pair.slow.kind();
    let model = match &pair.slow {
        Slow::Synthesized { outcome, .. } => Some(outcome.model.clone()),
        _ => None,
    };
    // A reversed view (`export::reversed`) agreed and was faster: as verified as any.
    let verified = v.is_some_and(|v| matches!(v.status, Status::Verified | Status::Reversed));
    Ok(Sample {
        system: t.system.render(&vars).trim_end().to_string(),
        user: t.user.render(&vars).trim_end().to_string(),
        chosen: chosen.trim_end().to_string(),
        rejected: rejected.trim_end().to_string(),
        slow_code: slow_text,
        fast_code: fast_text,
        metadata: Metadata {
            schema_version: EXPORT_VERSION,
            id: pair.id.clone(),
            suite: pair.suite.clone(),
            benchmark: pair.benchmark.clone(),
            kernel: pair.kernel.clone(),
            split: String::new(),
            slow: unit_ref(slow),
            fast: unit_ref(&pair.fast),
            origin: origin.to_string(),
            model,
            techniques: techniques_list.clone(),
            verified,
            status: v.map_or("unverified", |v| v.status.as_str()).to_string(),
            speedup,
            speedups: v.map(speedups_per_size_set).unwrap_or_default(),
            device,
            verified_by: v.map(|v| v.tool_version.clone()),
            exported_by: env!("CARGO_PKG_VERSION").to_string(),
            tokens: 0,
            description: Some(description),
            flags: v
                .map(|v| v.flags.iter().map(|f| f.as_str().to_string()).collect())
                .unwrap_or_default(),
            slow_launch,
            fast_launch,
            group: pair.group().to_string(),
            candidate: pair
                .slow
                .synth_outcome()
                .and_then(|o| o.candidate.as_ref())
                .map(|c| c.undo.label().to_string()),
        },
    })
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Message {
    pub role: String,
    pub content: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ChatLine {
    pub id: String,
    pub messages: Vec<Message>,
    pub metadata: Metadata,
}

/// Plain-text prompt-completion: the system text and the user text joined by a blank line.
#[derive(Debug, Serialize, Deserialize)]
pub struct PromptCompletionLine {
    pub id: String,
    pub prompt: String,
    pub completion: String,
    pub metadata: Metadata,
}

/// Conversational preference (TRL's DPO layout): the prompt as messages, one assistant
/// message each for chosen and rejected.
#[derive(Debug, Serialize, Deserialize)]
pub struct PreferenceLine {
    pub id: String,
    pub prompt: Vec<Message>,
    pub chosen: Vec<Message>,
    pub rejected: Vec<Message>,
    pub metadata: Metadata,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct Turn {
    pub from: String,
    pub value: String,
}

#[derive(Debug, Serialize, Deserialize)]
pub struct ShareGptLine {
    pub id: String,
    pub conversations: Vec<Turn>,
    pub metadata: Metadata,
}

fn msg(role: &str, content: &str) -> Message {
    Message {
        role: role.to_string(),
        content: content.to_string(),
    }
}

fn turn(from: &str, value: &str) -> Turn {
    Turn {
        from: from.to_string(),
        value: value.to_string(),
    }
}

/// The sample as one JSON line (no trailing newline) of the given format.
pub fn to_line(s: &Sample, f: Format) -> serde_json::Result<String> {
    let id = s.metadata.id.clone();
    let metadata = s.metadata.clone();
    match f {
        Format::Chat => serde_json::to_string(&ChatLine {
            id,
            messages: vec![
                msg("system", &s.system),
                msg("user", &s.user),
                msg("assistant", &s.chosen),
            ],
            metadata,
        }),
        Format::PromptCompletion => serde_json::to_string(&PromptCompletionLine {
            id,
            prompt: format!("{}\n\n{}", s.system, s.user),
            completion: s.chosen.clone(),
            metadata,
        }),
        Format::Preference => serde_json::to_string(&PreferenceLine {
            id,
            prompt: vec![msg("system", &s.system), msg("user", &s.user)],
            chosen: vec![msg("assistant", &s.chosen)],
            rejected: vec![msg("assistant", &s.rejected)],
            metadata,
        }),
        Format::Sharegpt => serde_json::to_string(&ShareGptLine {
            id,
            conversations: vec![
                turn("system", &s.system),
                turn("human", &s.user),
                turn("gpt", &s.chosen),
            ],
            metadata,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launcher version (llm.c's `layernorm_forward2` → `layernorm_forward3`) names a host
    /// function, not a kernel: the prompt promises no `__global__` by that name.
    #[test]
    fn a_launcher_version_promises_no_kernel_interface() {
        let p = [("float*", "out"), ("int", "n")];
        let slow = crate::record::KernelUnit::for_test("forward2", &p, "");
        let mut fast = crate::record::KernelUnit::for_test("forward3", &p, "");
        assert!(fast_interface(&slow, &fast)
            .unwrap()
            .contains("__global__ void forward3"));
        fast.diagnostics.push(crate::record::Diagnostic::new(
            crate::record::Level::Info,
            "version",
            "host launcher `forward3` (f.cu:9) launches k3 in this order",
        ));
        assert_eq!(fast_interface(&slow, &fast), None);
    }

    #[test]
    fn techniques_read_as_a_phrase() {
        let t =
            |v: &[&str]| techniques_phrase(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(t(&[]), "");
        assert_eq!(t(&["shared_memory"]), "shared memory");
        assert_eq!(
            t(&["shared_memory", "loop-unrolling", "float4"]),
            "shared memory, loop unrolling and float4"
        );
    }

    #[test]
    fn speedups_per_size_set_come_from_verify_timings() {
        use crate::evidence::{Evidence, TimingEvidence, VariantTiming};
        // Timings as the worker writes them (the same types), through JSON and back.
        let vt = |ms| VariantTiming {
            median_ms: ms,
            iqr_ms: 0.0,
            min_ms: ms,
            runs: 20,
            from_checks: 0,
            from_earlier_pairs: 0,
        };
        let set = |name: &str, bytes, slow, fast, lo, hi| TimingEvidence {
            size_set: name.into(),
            bytes,
            slow: vt(slow),
            fast: vt(fast),
            speedup: slow / fast,
            ci_low: lo,
            ci_high: hi,
        };
        let mut v = Verification {
            status: Status::Verified,
            reason: String::new(),
            device: None,
            evidence: Evidence {
                timings: vec![
                    set("s", 10, 2.0, 1.0, 1.9, 2.1),
                    set("l", 99, 3.0, 1.0, 2.9, 3.1),
                ],
                ..Evidence::default()
            },
            speedup: Some(Speedup {
                size_set: "l".into(),
                median: 3.0,
                ci_low: 2.9,
                ci_high: 3.1,
            }),
            tool_version: "0.1.0".into(),
            flags: vec![],
        };
        let v2: Verification = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        let s = speedups_per_size_set(&v2);
        assert_eq!(
            s.iter()
                .map(|s| (s.size_set.as_str(), s.median))
                .collect::<Vec<_>>(),
            [("s", 2.0), ("l", 3.0)]
        );
        // Without timings (a verdict from an old tool): the headline speedup alone.
        v.evidence = Evidence::default();
        assert_eq!(speedups_per_size_set(&v), vec![v.speedup.clone().unwrap()]);
    }
}
