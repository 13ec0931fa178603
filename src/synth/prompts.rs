//! Prompt templates: Markdown files with `{{variable}}` placeholders, built into the
//! binary from `prompts/` and overridable file by file with `--prompts DIR`.

use crate::record::{content_id, KernelUnit};
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum PromptError {
    #[error("{path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("prompt template {file} uses unknown variable {{{{{var}}}}} (known: {known})")]
    UnknownVariable {
        file: String,
        var: String,
        known: String,
    },
    #[error("prompt template {file} has an unclosed `{{{{`")]
    Unclosed { file: String },
}

/// The templates and the variables each may use.
const FILES: &[(&str, &str, &[&str])] = &[
    ("system.md", include_str!("../../prompts/system.md"), &[]),
    (
        "deoptimize.md",
        include_str!("../../prompts/deoptimize.md"),
        &[
            "kernel",
            "suite",
            "benchmark",
            "path",
            "variant",
            "techniques",
            "signature",
            "launch",
            "source",
        ],
    ),
    (
        "deoptimize_helpers.md",
        include_str!("../../prompts/deoptimize_helpers.md"),
        &[
            "kernel",
            "suite",
            "benchmark",
            "path",
            "variant",
            "techniques",
            "signature",
            "launch",
            "source",
            "context",
        ],
    ),
    (
        "deoptimize_one.md",
        include_str!("../../prompts/deoptimize_one.md"),
        &[
            "kernel",
            "suite",
            "benchmark",
            "path",
            "variant",
            "technique",
            "others",
            "signature",
            "launch",
            "source",
        ],
    ),
    (
        "repair.md",
        include_str!("../../prompts/repair.md"),
        &["kernel", "attempt", "log"],
    ),
    (
        "describe.md",
        include_str!("../../prompts/describe.md"),
        &["kernel", "benchmark", "techniques", "slow", "fast"],
    ),
];

#[derive(Debug, Clone)]
pub struct Prompts {
    pub system: String,
    pub deoptimize: String,
    /// The deoptimize prompt over a token budget: the kernel and the helpers it calls.
    pub deoptimize_helpers: String,
    /// The deoptimize prompt of a per-technique candidate: undo one, keep the others.
    pub deoptimize_one: String,
    pub repair: String,
    pub describe: String,
    /// Hash over every template: recorded in each synthesized pair's origin.
    pub hash: String,
}

impl Prompts {
    /// The built-in templates, with any file present in `dir` taking their place.
    pub fn load(dir: Option<&Path>) -> Result<Prompts, PromptError> {
        let mut texts = Vec::new();
        for (name, builtin, vars) in FILES {
            let text = match dir.map(|d| d.join(name)).filter(|p| p.is_file()) {
                Some(p) => std::fs::read_to_string(&p)
                    .map_err(|source| PromptError::Read { path: p, source })?,
                None => builtin.to_string(),
            };
            validate(name, &text, vars)?;
            texts.push(text);
        }
        let parts: Vec<&str> = FILES
            .iter()
            .zip(&texts)
            .flat_map(|((n, _, _), t)| [*n, t.as_str()])
            .collect();
        let hash = content_id(&parts);
        let mut it = texts.into_iter();
        let mut next = || it.next().expect("one text per file");
        Ok(Prompts {
            system: next(),
            deoptimize: next(),
            deoptimize_helpers: next(),
            deoptimize_one: next(),
            repair: next(),
            describe: next(),
            hash,
        })
    }

    pub fn deoptimize_for(&self, fast: &KernelUnit, techniques: &[String]) -> String {
        render_owned(
            &self.deoptimize,
            &deoptimize_vars(fast, techniques, fast.source.trim_end()),
        )
    }

    /// The prompt of a candidate undoing `technique` alone, the `others` kept.
    pub fn deoptimize_one_for(
        &self,
        fast: &KernelUnit,
        technique: &str,
        others: &[String],
    ) -> String {
        let mut vars = deoptimize_vars(fast, &[technique.to_string()], fast.source.trim_end());
        vars.retain(|(k, _)| *k != "techniques");
        vars.push(("technique", technique_list(&[technique.to_string()])));
        vars.push(("others", technique_list(others)));
        render_owned(&self.deoptimize_one, &vars)
    }

    /// The deoptimize prompt with only the kernel and the helpers it calls (`cut.code`);
    /// the names the unshown rest defines are listed.
    pub fn deoptimize_helpers_for(
        &self,
        fast: &KernelUnit,
        techniques: &[String],
        cut: &crate::cuda::HelperCut,
    ) -> String {
        let context = if cut.context_names.is_empty() {
            "- (only headers)".to_string()
        } else {
            format!("- {}", cut.context_names.join(", "))
        };
        let mut vars = deoptimize_vars(fast, techniques, cut.code.trim_end());
        vars.push(("context", context));
        render_owned(&self.deoptimize_helpers, &vars)
    }

    pub fn repair_for(&self, kernel: &str, attempt: u32, log: &str) -> String {
        // Long logs are mostly repeats; the first errors are what a repair needs.
        let log: String = log.lines().take(40).collect::<Vec<_>>().join("\n");
        render(
            &self.repair,
            &[
                ("kernel", kernel),
                ("attempt", &attempt.to_string()),
                ("log", &log),
            ],
        )
    }

    pub fn describe_for(
        &self,
        slow: &KernelUnit,
        fast: &KernelUnit,
        techniques: &[String],
    ) -> String {
        render(
            &self.describe,
            &[
                ("kernel", &fast.kernel),
                ("benchmark", &fast.benchmark),
                ("techniques", &technique_list(techniques)),
                ("slow", slow.source.trim_end()),
                ("fast", fast.source.trim_end()),
            ],
        )
    }
}

/// The variables of the deoptimize templates, with `source` as the code shown.
fn deoptimize_vars(
    fast: &KernelUnit,
    techniques: &[String],
    source: &str,
) -> Vec<(&'static str, String)> {
    let signature = format!(
        "{}__global__ void {}({})",
        if fast.template_params.is_empty() {
            String::new()
        } else {
            format!("template <{}>\n", fast.template_params.join(", "))
        },
        fast.kernel,
        fast.params
            .iter()
            .map(|p| format!("{} {}", p.ty, p.name))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let launch = if fast.launch_sites.is_empty() {
        "(launch sites unknown: keep the indexing scheme of the original)".to_string()
    } else {
        fast.launch_sites
            .iter()
            .map(|l| {
                let smem = l
                    .shared_mem
                    .as_deref()
                    .map(|s| format!(", {s}"))
                    .unwrap_or_default();
                format!(
                    "{}<<<{}, {}{}>>>({})",
                    l.kernel,
                    l.grid,
                    l.block,
                    smem,
                    l.args.join(", ")
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    vec![
        ("kernel", fast.kernel.clone()),
        ("suite", fast.suite.clone()),
        ("benchmark", fast.benchmark.clone()),
        ("path", fast.path.clone()),
        ("variant", fast.variant.clone()),
        ("techniques", technique_list(techniques)),
        ("signature", signature),
        ("launch", launch),
        ("source", source.to_string()),
    ]
}

/// Human wording of each technique name, for prompts.
fn technique_phrase(t: &str) -> &'static str {
    match t {
        "shared_memory" => "shared memory (__shared__ tiles or buffers)",
        "coalescing" => "coalesced global memory access",
        "loop_unrolling" => "loop unrolling (#pragma unroll or by hand)",
        "register_blocking" => "register blocking (small fixed-size per-thread arrays)",
        "vector_types" => "vector types (float4, int2, …) for wide loads and stores",
        "warp_shuffle" => "warp shuffles (__shfl_*_sync)",
        "warp_vote" => "warp votes (__ballot_sync, __any_sync, …)",
        "read_only_cache" => "read-only data cache (__ldg, const __restrict__)",
        "constant_memory" => "constant memory (__constant__)",
        "texture_memory" => "texture memory",
        "atomics" => "atomic operations",
        _ => "other",
    }
}

fn technique_list(ts: &[String]) -> String {
    if ts.is_empty() {
        return "- none detected automatically: look for tiling, unrolling, vectorization and similar tricks".into();
    }
    ts.iter()
        .map(|t| format!("- {t}: {}", technique_phrase(t)))
        .collect::<Vec<_>>()
        .join("\n")
}

fn placeholders(text: &str) -> Result<Vec<&str>, ()> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("{{") {
        let after = &rest[i + 2..];
        let j = after.find("}}").ok_or(())?;
        out.push(after[..j].trim());
        rest = &after[j + 2..];
    }
    Ok(out)
}

fn validate(file: &str, text: &str, vars: &[&str]) -> Result<(), PromptError> {
    let used = placeholders(text).map_err(|_| PromptError::Unclosed { file: file.into() })?;
    if let Some(v) = used.iter().find(|v| !vars.contains(v)) {
        return Err(PromptError::UnknownVariable {
            file: file.into(),
            var: v.to_string(),
            known: if vars.is_empty() {
                "none".into()
            } else {
                vars.join(", ")
            },
        });
    }
    Ok(())
}

/// [`render`] with owned values.
fn render_owned(template: &str, vars: &[(&str, String)]) -> String {
    let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (*k, v.as_str())).collect();
    render(template, &vars)
}

/// Replace each `{{name}}` in one pass, so a value containing `{{…}}` is never expanded again.
fn render(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len() * 2);
    let mut rest = template;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        let Some(j) = after.find("}}") else {
            out.push_str(&rest[i..]);
            return out;
        };
        let key = after[..j].trim();
        match vars.iter().find(|(k, _)| *k == key) {
            Some((_, v)) => out.push_str(v),
            None => out.push_str(&rest[i..i + 2 + j + 2]),
        }
        rest = &after[j + 2..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_are_valid_and_overrides_change_the_hash() {
        let a = Prompts::load(None).unwrap();
        assert!(a.deoptimize.contains("{{source}}"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("system.md"), "Be terse.").unwrap();
        let b = Prompts::load(Some(dir.path())).unwrap();
        assert_eq!(b.system, "Be terse.");
        assert_eq!(b.deoptimize, a.deoptimize);
        assert_ne!(a.hash, b.hash);
        std::fs::write(dir.path().join("repair.md"), "fix {{kernal}}").unwrap();
        let e = Prompts::load(Some(dir.path())).unwrap_err().to_string();
        assert!(e.contains("repair.md") && e.contains("kernal"), "{e}");
    }

    #[test]
    fn render_fills_once_and_keeps_values_verbatim() {
        let r = render("a {{x}} b {{ y }} {{z}}", &[("x", "{{y}}"), ("y", "2")]);
        assert_eq!(r, "a {{y}} b 2 {{z}}");
    }

    #[test]
    fn deoptimize_prompt_names_kernel_signature_and_techniques() {
        let src = "__global__ void k(float4* a, int n) { a[0].x = n; }";
        let unit: KernelUnit = serde_json::from_value(serde_json::json!({
            "id": "x", "suite": "rodinia", "benchmark": "bench", "variant": "cuda", "path": "bench/k.cu",
            "line": 1, "kernel": "k", "params": [{"name":"a","type":"float4 *"},{"name":"n","type":"int"}],
            "source": src, "symbol": "k", "pulled": {}, "features": {"shared_memory": false,
            "dynamic_shared_memory": false, "constant_memory": false, "texture_references": false,
            "atomics": false, "templates": false, "warp_primitives": false, "vector_types": true},
            "provenance": {}
        })).unwrap();
        let p = Prompts::load(None).unwrap();
        let text = p.deoptimize_for(&unit, &["vector_types".to_string()]);
        assert!(
            text.contains("__global__ void k(float4 * a, int n)"),
            "{text}"
        );
        assert!(text.contains("- vector_types: vector types"), "{text}");
        assert!(text.contains(src));
        assert!(!text.contains("{{"), "{text}");
        let r = p.repair_for("k", 2, "k.cu(3): error: identifier \"q\" is undefined");
        assert!(r.contains("identifier \"q\"") && r.contains("attempt 2"));
    }
}
