//! The training text lint: a trainer learns exactly the text a sample holds, so before a
//! file is written every text of every sample is checked. A finding in one pair's own code
//! (`tool_artifact`, `signature`) leaves that sample out, named; any other finding (the
//! templates', the launches', the fences': what every sample shares) fails the export. `scripts/check_export.py --lint` runs the same checks on written files.
//!
//! - `harness_token`: the harness's language outside the kernels' own code (`{name}`
//!   placeholders, `ceil_div(`, `round_up(`, `pow2(`, `ASSUMED`, `TODO`);
//! - `tool_artifact`: the texture shim's `kernelpair_…` names in code, or `extern "C"` on
//!   a `__global__` kernel whose source does not write it;
//! - `unbalanced_fence`: a fenced code block that is never closed;
//! - `launch_syntax`: a launch (`<<<`) outside code, or a launch snippet that is not
//!   CUDA kernel launch statements as tree-sitter-cuda reads them;
//! - `signature`: the answer's kernel does not keep the name and the parameter types the
//!   prompt promised (the slow kernel's, or the interface the prompt names).

use super::format::{caller_type, Sample};
use crate::cuda::syntax::{self, visit};
use crate::record::KernelUnit;
use regex::Regex;
use serde::Serialize;
use std::sync::LazyLock;

/// What kind of defect a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    HarnessToken,
    ToolArtifact,
    UnbalancedFence,
    LaunchSyntax,
    Signature,
}

impl Kind {
    /// Found in one pair's own code (its kernels' text), not in what every sample shares:
    /// that sample is left out; any other finding fails the export.
    pub fn in_own_code(self) -> bool {
        matches!(self, Kind::ToolArtifact | Kind::Signature)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::HarnessToken => "harness_token",
            Kind::ToolArtifact => "tool_artifact",
            Kind::UnbalancedFence => "unbalanced_fence",
            Kind::LaunchSyntax => "launch_syntax",
            Kind::Signature => "signature",
        }
    }
}

/// One defect in one text of one sample.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// The sample's pair id.
    pub id: String,
    /// Which text: `user`, `chosen`, `metadata.description`, …
    pub field: String,
    pub kind: Kind,
    pub detail: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} {} {}: {}",
            self.kind.as_str(),
            self.id,
            self.field,
            self.detail
        )
    }
}

static HARNESS_TOKEN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"\{[A-Za-z_]\w*\}|\b(?:ceil_div|round_up|pow2|c_not|truthy)\s*\(|\bASSUMED\b|\bTODO\b",
    )
    .expect("valid regex")
});
static SHIM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\bkernelpair_\w+|//\s*kernelpair:|// from <[^>]+> \(NVRTC has no host headers\)")
        .expect("valid regex")
});
static FENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^ {0,3}(`{3,}|~{3,})(.*)$").expect("valid regex"));

/// A Markdown text in parts: fenced code blocks (CommonMark's rule: a closing fence is the
/// opening character, at least as many, alone on its line), the prose between them, and
/// how many blocks are never closed.
#[derive(Debug, Default)]
pub struct Markdown {
    pub blocks: Vec<String>,
    pub prose: Vec<String>,
    pub unclosed: usize,
}

pub fn markdown(text: &str) -> Markdown {
    let mut md = Markdown::default();
    let lines: Vec<&str> = text.split('\n').collect();
    let mut cur: Vec<&str> = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let Some(c) = FENCE.captures(lines[i]) else {
            cur.push(lines[i]);
            i += 1;
            continue;
        };
        md.prose.push(cur.join("\n"));
        cur.clear();
        let fence = c.get(1).expect("group 1").as_str();
        let (ch, len) = (fence.as_bytes()[0], fence.len());
        let closes = |l: &str| {
            let t = l
                .strip_prefix("   ")
                .or(l.strip_prefix("  "))
                .or(l.strip_prefix(' '))
                .unwrap_or(l);
            let run = t.bytes().take_while(|&b| b == ch).count();
            run >= len && t[run..].trim().is_empty()
        };
        let mut body = Vec::new();
        let mut j = i + 1;
        let mut closed = false;
        while j < lines.len() {
            if closes(lines[j]) {
                closed = true;
                break;
            }
            body.push(lines[j]);
            j += 1;
        }
        md.unclosed += usize::from(!closed);
        md.blocks.push(body.join("\n"));
        i = j + 1;
    }
    md.prose.push(cur.join("\n"));
    md
}

/// Inline code spans of a prose piece (a run of backticks up to the next run of the same
/// length), and the prose with them taken out.
pub fn inline_spans(prose: &str) -> (Vec<&str>, String) {
    let b = prose.as_bytes();
    let run = |i: usize| b[i..].iter().take_while(|&&c| c == b'`').count();
    let (mut spans, mut rest, mut i, mut last) = (Vec::new(), String::new(), 0, 0);
    while i < b.len() {
        if b[i] != b'`' {
            i += 1;
            continue;
        }
        let n = run(i);
        let mut j = i + n;
        let mut end = None;
        while j < b.len() {
            if b[j] == b'`' {
                let m = run(j);
                if m == n {
                    end = Some(j);
                    break;
                }
                j += m;
            } else {
                j += 1;
            }
        }
        match end {
            Some(e) => {
                rest.push_str(&prose[last..i]);
                spans.push(&prose[i + n..e]);
                i = e + n;
                last = i;
            }
            None => i += n,
        }
    }
    rest.push_str(&prose[last..]);
    (spans, rest)
}

/// Kernel source: a code block that defines a kernel. Everything else is the tool's text.
fn is_source(block: &str) -> bool {
    block.contains("__global__")
}

/// Why `snippet` is not CUDA kernel launch statements (and nothing else), or None. Read
/// as the body of a function by the one CUDA grammar: no ERROR or MISSING node, every
/// statement a launch (`k<<<…>>>(…);`, alone or as a `for` loop's body), one per `<<<`.
pub fn launch_error(snippet: &str) -> Option<String> {
    let wrapped = format!("void kernelpair_lint() {{\n{snippet}\n}}\n");
    let tree = syntax::parse(&wrapped);
    let root = tree.root_node();
    if root.has_error() {
        let mut bad = None;
        visit(root, &mut |n| {
            if n.is_error() || n.is_missing() {
                bad = Some(n);
            }
        });
        let at = bad
            .map(|n| {
                let t = &wrapped[n.byte_range()];
                let t = t.replace("void kernelpair_lint() {", "");
                t.split_whitespace().collect::<Vec<_>>().join(" ")
            })
            .unwrap_or_default();
        return Some(format!(
            "does not parse as CUDA (tree-sitter error at `{}`)",
            at.chars().take(40).collect::<String>()
        ));
    }
    let Some(body) = root
        .named_child(0)
        .and_then(|f| f.child_by_field_name("body"))
    else {
        return Some("does not parse as statements".into());
    };
    let mut launches = 0;
    let mut c = body.walk();
    for st in body.named_children(&mut c) {
        if st.kind() == "comment" {
            continue;
        }
        let inner = match st.kind() {
            "for_statement" => st.child_by_field_name("body").unwrap_or(st),
            _ => st,
        };
        let call = (inner.kind() == "expression_statement")
            .then(|| inner.named_child(0))
            .flatten()
            .filter(|c| c.kind() == "call_expression");
        let is_launch = call.is_some_and(|call| {
            let mut cc = call.walk();
            let any = call
                .children(&mut cc)
                .any(|k| k.kind() == "kernel_call_syntax");
            any
        });
        if !is_launch {
            let t: String = wrapped[st.byte_range()].chars().take(60).collect();
            return Some(format!("`{t}` is not a kernel launch statement"));
        }
        launches += 1;
    }
    let marks = snippet.matches("<<<").count();
    if launches == 0 {
        return Some("holds no launch".into());
    }
    (launches != marks).then(|| format!("{marks} `<<<` but {launches} launch statements"))
}

/// The `__global__` kernels a source gives `extern "C"` linkage, by name.
fn extern_c_kernels(code: &str) -> Vec<String> {
    let tree = syntax::parse(code);
    let mut out = Vec::new();
    visit(tree.root_node(), &mut |n| {
        if n.kind() != "linkage_specification" {
            return;
        }
        if let Some(body) = n.child_by_field_name("body") {
            if body.kind() == "function_definition" {
                out.extend(
                    syntax::kernels(&code[body.byte_range()])
                        .into_iter()
                        .map(|k| k.name),
                );
            }
        }
    });
    out
}

/// The unit's source writes `extern "C"` on kernel `k` (isolation records that as an edit
/// that changes nothing, so its text keeps it; a launcher version carries the edits of
/// every kernel it merges).
fn writes_extern_c(u: &KernelUnit, k: &str) -> bool {
    use crate::cuda::compile_only::{Edit, CODE};
    u.diagnostics.iter().filter(|d| d.code == CODE).any(|d| {
        serde_json::from_str::<Edit>(&d.message).is_ok_and(|e| {
            e.kernel
                && e.original.trim_start().starts_with("extern")
                && (u.kernel == k
                    || e.original
                        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                        .any(|w| w == k))
        })
    })
}

struct Ctx<'a> {
    id: &'a str,
    units: [&'a KernelUnit; 2],
    out: Vec<Finding>,
}

impl Ctx<'_> {
    fn push(&mut self, field: &str, kind: Kind, detail: String) {
        self.out.push(Finding {
            id: self.id.to_string(),
            field: field.to_string(),
            kind,
            detail,
        });
    }

    fn tokens(&mut self, field: &str, text: &str) {
        for m in HARNESS_TOKEN.find_iter(text) {
            let (a, b) = (m.start().saturating_sub(40), (m.end() + 40).min(text.len()));
            let (a, b) = (floor_char(text, a), ceil_char(text, b));
            let around = text[a..b].split_whitespace().collect::<Vec<_>>().join(" ");
            self.push(
                field,
                Kind::HarnessToken,
                format!("`{}` in `…{around}…`", m.as_str()),
            );
        }
    }

    fn launch(&mut self, field: &str, snippet: &str) {
        if let Some(why) = launch_error(snippet) {
            let s: String = snippet.chars().take(80).collect();
            self.push(field, Kind::LaunchSyntax, format!("`{s}`: {why}"));
        }
    }

    /// A text that is launch statements alone (`metadata.slow_launch`).
    fn statements(&mut self, field: &str, text: &str) {
        self.tokens(field, text);
        self.launch(field, text);
    }

    /// A Markdown text.
    fn text(&mut self, field: &str, text: &str) {
        let md = markdown(text);
        if md.unclosed > 0 {
            self.push(
                field,
                Kind::UnbalancedFence,
                format!("{} code block(s) never closed", md.unclosed),
            );
        }
        for b in &md.blocks {
            if is_source(b) {
                self.source(field, b);
            } else {
                self.tokens(field, b);
                if b.contains("<<<") {
                    self.launch(field, b);
                }
            }
        }
        for p in &md.prose {
            self.tokens(field, p);
            let (spans, rest) = inline_spans(p);
            for s in spans.iter().filter(|s| s.contains("<<<")) {
                self.launch(field, s.trim());
            }
            if let Some(i) = rest.find("<<<") {
                let at: String = rest[floor_char(&rest, i.saturating_sub(30))..]
                    .chars()
                    .take(60)
                    .collect();
                self.push(
                    field,
                    Kind::LaunchSyntax,
                    format!("a launch outside code: `{}`", at.trim()),
                );
            }
        }
    }

    /// Kernel source: the suite's text, so only what the tool could have added is a finding.
    fn source(&mut self, field: &str, code: &str) {
        for m in SHIM.find_iter(code) {
            self.push(
                field,
                Kind::ToolArtifact,
                format!(
                    "`{}` (a shim isolation wrote for NVRTC) in code",
                    m.as_str()
                ),
            );
        }
        for k in extern_c_kernels(code) {
            let written = self.units.iter().any(|u| writes_extern_c(u, &k));
            if !written {
                self.push(
                    field,
                    Kind::ToolArtifact,
                    format!("`extern \"C\"` on kernel `{k}`, which its source does not write"),
                );
            }
        }
    }

    /// The answer's kernel keeps the name and parameter types the prompt promised.
    fn signature(&mut self, prompt: &str, answer: &str, slow_kernel: &str) {
        let md = markdown(prompt);
        let interface = md
            .prose
            .iter()
            .flat_map(|p| inline_spans(p).0)
            .filter(|s| s.contains("__global__") && !s.contains("<<<"))
            .find_map(|s| {
                syntax::kernels(&format!("{} {{}}", s.trim().trim_end_matches(';')))
                    .into_iter()
                    .next()
            });
        let promised = interface.or_else(|| {
            source_kernels(prompt, &md)
                .into_iter()
                .find(|k| k.name == slow_kernel)
        });
        // A prompt that shows no kernel a parser can find (a custom template writing code
        // amid prose) promises nothing this check can hold an answer to.
        let Some(want) = promised else {
            return;
        };
        let types = |k: &syntax::KernelDef| -> Vec<String> {
            k.params.iter().map(|p| caller_type(&p.ty)).collect()
        };
        let got = source_kernels(answer, &markdown(answer));
        let same: Vec<&syntax::KernelDef> = got.iter().filter(|k| k.name == want.name).collect();
        if same.is_empty() {
            let names: Vec<&str> = got.iter().map(|k| k.name.as_str()).collect();
            self.push(
                "chosen",
                Kind::Signature,
                format!(
                    "no kernel `{}` in the answer (found: {})",
                    want.name,
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            );
        } else if !same.iter().any(|k| types(k) == types(&want)) {
            self.push(
                "chosen",
                Kind::Signature,
                format!(
                    "kernel `{}` changes its parameters: promised ({}), got ({})",
                    want.name,
                    types(&want).join(", "),
                    types(same[0]).join(", ")
                ),
            );
        }
    }
}

/// The kernels a text defines: in its fenced source blocks, or, where a template writes
/// the code without a fence, anywhere in it.
fn source_kernels(text: &str, md: &Markdown) -> Vec<syntax::KernelDef> {
    let fenced: Vec<syntax::KernelDef> = md
        .blocks
        .iter()
        .filter(|b| is_source(b))
        .flat_map(|b| syntax::kernels(b))
        .collect();
    match fenced.is_empty() {
        true => syntax::kernels(text),
        false => fenced,
    }
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// Every finding in one sample; `units` are its slow and fast kernels.
pub fn lint(s: &Sample, units: [&KernelUnit; 2]) -> Vec<Finding> {
    let mut cx = Ctx {
        id: &s.metadata.id,
        units,
        out: Vec::new(),
    };
    cx.text("system", &s.system);
    cx.text("user", &s.user);
    cx.text("chosen", &s.chosen);
    cx.text("rejected", &s.rejected);
    if let Some(d) = &s.metadata.description {
        cx.text("metadata.description", d);
    }
    if let Some(l) = &s.metadata.slow_launch {
        cx.statements("metadata.slow_launch", l);
    }
    if let Some(l) = &s.metadata.fast_launch {
        cx.statements("metadata.fast_launch", l);
    }
    cx.signature(
        &format!("{}\n\n{}", s.system, s.user),
        &s.chosen,
        &s.metadata.slow.kernel,
    );
    cx.out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_statements_parse_and_harness_language_does_not() {
        assert_eq!(
            launch_error("reduceSum<<<dim3(8192), dim3(512)>>>(in, out, n);"),
            None
        );
        assert_eq!(
            launch_error("reduceSum<256><<<dim3(1024), dim3(256), 32>>>(in, out, n);\nk2<<<dim3(1), dim3(32)>>>(out);"),
            None
        );
        assert_eq!(
            launch_error(
                "for (int step = 0; step < 3; ++step) k<<<dim3(4), dim3(8)>>>(a + 16, n);"
            ),
            None
        );
        // What export wrote before: no arguments, placeholders, harness functions.
        for bad in [
            "reduceSum<<<dim3(ceil_div(n, 512)), dim3(512)>>>",
            "reduceSum<{block}><<<dim3(min(ceil_div(n, block), 1024)), dim3(block), (block / 32) * 4>>>",
            "k<<<dim3(4), dim3(8)>>>(a) (repeated 3 times)",
            "x = 1;",
        ] {
            assert!(launch_error(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn fences_close_by_commonmark_rules_and_spans_pair_up() {
        let md = markdown("a\n```cuda\nint x;\n```\nb\n````\n```\n````\n");
        assert_eq!(md.blocks, ["int x;", "```"]);
        assert_eq!(md.unclosed, 0);
        assert_eq!(markdown("```cuda\nint x;\n").unclosed, 1);
        let (spans, rest) = inline_spans("as `a<<<1, 2>>>(x);` or ``b ` c``.");
        assert_eq!(spans, ["a<<<1, 2>>>(x);", "b ` c"]);
        assert_eq!(rest, "as  or .");
    }

    use crate::record::{Pair, PairRule, Slow, Status, Verification};

    const HARNESS: &str = r#"
[sizes]
n = 1048576
[derived]
block = 256
[[args]]
name = "in"
type = "f32"
len = "n"
init = { kind = "uniform", lo = 0.0, hi = 1.0 }
role = "in"
[[args]]
name = "out"
type = "f32"
len = 1
init = { kind = "zeros" }
role = "inout"
[[args]]
name = "n"
type = "i32"
value = "n"
[[variants.slow.launch]]
kernel = "sum"
grid = ["ceil_div(n, 512)"]
block = [512]
[[variants.fast.launch]]
kernel = "sum<{block}>"
grid = ["min(ceil_div(n, block), 1024)"]
block = ["block"]
shared_mem = "(block / 32) * 4"
"#;

    /// A pair whose harness uses the harness's language everywhere (a placeholder,
    /// `ceil_div`, `min` over sizes, a derived value), as the fixture's reduce does.
    fn sample() -> (super::super::Sample, Pair) {
        let unit = |src: &str| crate::synth::checks::tests::fast_unit(src, "sum");
        let slow = unit("__global__ void sum(const float *in, float *out, int n)\n{\n    atomicAdd(out, in[0]);\n}\n");
        let fast = unit("template <int B>\n__global__ void sum(const float *in, float *out, int n)\n{\n    if (threadIdx.x < B) atomicAdd(out, in[0]);\n}\n");
        let mut p = Pair::new(Slow::natural(slow.clone()), fast, PairRule::Name);
        let h = crate::harness::parse(HARNESS, "t.toml").unwrap();
        p.verification = Some(Verification {
            status: Status::NoGpu,
            reason: String::new(),
            device: None,
            evidence: crate::evidence::Evidence::of_launch(
                crate::harness::launches::Launches::of_harness(&h),
            ),
            speedup: None,
            tool_version: String::new(),
            flags: vec![],
        });
        let t = super::super::template::Templates::load(None).unwrap();
        let s = super::super::format::build_sample_with(&p, &slow, &t, false, true).unwrap();
        (s, p)
    }

    fn kinds(s: &super::super::Sample, p: &Pair) -> Vec<Kind> {
        let mut k: Vec<Kind> = lint(s, [p.slow.unit().unwrap(), &p.fast])
            .into_iter()
            .map(|f| f.kind)
            .collect();
        k.dedup();
        k
    }

    /// The harness's language never reaches the text: the sample the export builds is
    /// clean, launches and all.
    #[test]
    fn a_sample_with_harness_expressions_renders_clean() {
        let (s, p) = sample();
        assert_eq!(lint(&s, [p.slow.unit().unwrap(), &p.fast]), []);
        assert!(
            s.user
                .contains("sum<<<dim3(2048), dim3(512)>>>(in, out, n);"),
            "{}",
            s.user
        );
        assert!(s.user.contains("(sizes: n = 1,048,576)"), "{}", s.user);
        assert!(
            s.chosen
                .contains("sum<256><<<dim3(1024), dim3(256), 32>>>(in, out, n);"),
            "{}",
            s.chosen
        );
    }

    /// Each kind of finding, planted in a clean sample, is caught.
    #[test]
    fn every_kind_of_planted_finding_is_caught() {
        let (clean, p) = sample();
        let plant = |f: &dyn Fn(&mut super::super::Sample)| {
            let mut s = clean.clone();
            f(&mut s);
            kinds(&s, &p)
        };
        // The harness's language, as export wrote it before.
        let old = "reduceSum<{block}><<<dim3(min(ceil_div(n, block), 1024)), dim3(block)>>>";
        assert!(plant(&|s| s.metadata.fast_launch = Some(old.into())).contains(&Kind::HarnessToken));
        assert!(
            plant(&|s| s.chosen.push_str("\n\nTODO: check the ASSUMED sizes."))
                .contains(&Kind::HarnessToken)
        );
        assert!(
            plant(&|s| s.user = s.user.replace("dim3(2048)", "dim3(ceil_div(n, 512))"))
                .contains(&Kind::HarnessToken)
        );
        // Tool artifacts: linkage the source lacks, the texture shim.
        assert_eq!(
            plant(&|s| s.user = s
                .user
                .replace("__global__ void", "extern \"C\" __global__ void")),
            [Kind::ToolArtifact]
        );
        assert_eq!(
            plant(&|s| s.chosen = s.chosen.replace("in[0]", "kernelpair_tex_load(in)")),
            [Kind::ToolArtifact]
        );
        // A host-header shim isolation wrote for NVRTC (`#include <math.h>` in the suite).
        assert_eq!(
            plant(&|s| {
                s.chosen = s.chosen.replacen(
                "__global__",
                "// from <math.h> (NVRTC has no host headers)\n#define INFINITY __int_as_float(0x7f800000)\n__global__",
                1
            )
            }),
            [Kind::ToolArtifact]
        );
        // An unclosed fence.
        let cut = |s: &mut super::super::Sample| {
            let i = s.chosen.rfind("```").unwrap();
            s.chosen.truncate(i);
        };
        assert!(plant(&cut).contains(&Kind::UnbalancedFence));
        // Launches that are not CUDA: no arguments, and one outside code.
        assert_eq!(
            plant(&|s| s.chosen = s.chosen.replace("(in, out, n);", "")),
            [Kind::LaunchSyntax]
        );
        assert_eq!(
            plant(&|s| s
                .chosen
                .push_str("\n\nOr launch sum<<<1, 32>>>(in, out, n) instead.")),
            [Kind::LaunchSyntax]
        );
        // The answer's kernel renamed, or with other parameter types.
        assert_eq!(
            plant(&|s| s.chosen = s.chosen.replace("void sum(", "void total(")),
            [Kind::Signature]
        );
        assert_eq!(
            plant(&|s| s.chosen = s.chosen.replace("int n)", "long n)")),
            [Kind::Signature]
        );
        // The source's own extern "C" (isolation records it) is not an artifact.
        let written = "extern \"C\" __global__ void sum(const float *in, float *out, int n)";
        let mut slow = p.slow.unit().unwrap().clone();
        slow.diagnostics
            .extend(crate::cuda::compile_only::note(written, written, true));
        let mut s = clean.clone();
        s.user = s
            .user
            .replace("__global__ void", "extern \"C\" __global__ void");
        assert_eq!(lint(&s, [&slow, &p.fast]), []);
    }

    #[test]
    fn caller_types_drop_qualifiers_a_launch_ignores() {
        assert_eq!(caller_type("const float * __restrict__"), "float *");
        assert_eq!(caller_type("float *"), "float *");
        assert_eq!(caller_type("unsigned int"), "unsigned int");
    }
}
