//! Edits isolation makes only so that a unit compiles under NVRTC: namespace-scope
//! `const` globals made `constexpr`, legacy `texture<>` references replaced by the shim,
//! the shim's definition, C99 compound literals written as C++ list-initialization. They
//! belong in what is compiled, never in what a model is trained on: [`source_text`] gives
//! a unit's text back as the suite wrote it.
//!
//! The kernel's linkage is never touched: every stage finds a kernel by an NVRTC name
//! expression (`k`, `k<float>`). Units written before that (issue 26) carry an
//! `extern "C" ` put before a kernel that had no linkage, and `static` dropped from it;
//! the first is undone by rule and recorded nowhere, the second is recorded. Every edit
//! is recorded in the unit as an info diagnostic `compile_only_edit` whose message is the
//! JSON of an [`Edit`].

use crate::record::{Diagnostic, Level};
use serde::{Deserialize, Serialize};

pub const CODE: &str = "compile_only_edit";
const LINKAGE: &str = "extern \"C\" ";

/// One edit: the head of an item as compiled and as written (each runs to the end of a
/// line, and the rest of the item is the same in both).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Edit {
    pub compiled: String,
    pub original: String,
    /// The edit is to the unit's own kernel (so its linkage is not stripped again).
    #[serde(default)]
    pub kernel: bool,
}

/// The note for an item isolation wrote as `compiled` where the suite wrote `original`;
/// None when they are the same or when the only change is the rule-undone linkage.
pub fn note(original: &str, compiled: &str, kernel: bool) -> Option<Diagnostic> {
    let (o, c) = (original.trim_end(), compiled.trim_end());
    if kernel && c.strip_prefix(LINKAGE) == Some(o.trim_start()) {
        return None;
    }
    // A kernel already `extern "C"` in the source is recorded too (as an edit that
    // changes nothing), so the rule does not strip linkage the suite wrote.
    if o == c && !(kernel && o.trim_start().starts_with("extern")) {
        return None;
    }
    // The differing heads, each extended to the end of the line where the common tail
    // begins, so the compiled head is found again at a line's end in the unit.
    let common = o
        .bytes()
        .rev()
        .zip(c.bytes().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (mut oe, mut ce) = (o.len() - common, c.len() - common);
    while !o.is_char_boundary(oe) || !c.is_char_boundary(ce) {
        oe += 1;
        ce += 1;
    }
    let to_eol = o[oe..].find('\n').unwrap_or(o.len() - oe);
    let edit = Edit {
        compiled: c[..ce + to_eol].to_string(),
        original: o[..oe + to_eol].to_string(),
        kernel,
    };
    Some(Diagnostic::new(
        Level::Info,
        CODE,
        serde_json::to_string(&edit).expect("edits serialize"),
    ))
}

/// A unit's source as the suite wrote it: recorded edits undone, the texture shim's
/// definition left out, and (in units written before issue 26) the kernel's added
/// `extern "C"` dropped.
pub fn source_text(unit: &crate::record::KernelUnit) -> String {
    written_text(
        &unit.source,
        &unit.diagnostics,
        &unit.kernel,
        !unit.template_params.is_empty(),
    )
}

/// [`source_text`] of a unit's parts: its compiled `source`, its diagnostics, its kernel's
/// name and whether the kernel is a template.
pub fn written_text(
    source: &str,
    diagnostics: &[Diagnostic],
    kernel: &str,
    template: bool,
) -> String {
    let mut s = source.to_string();
    // Kernel heads an edit restored: a head written `extern "C"` keeps its linkage.
    let mut restored: Vec<String> = Vec::new();
    for d in diagnostics.iter().filter(|d| d.code == CODE) {
        let Ok(e) = serde_json::from_str::<Edit>(&d.message) else {
            continue;
        };
        if e.kernel {
            restored.push(e.original.trim_start().to_string());
        }
        s = s.replacen(&e.compiled, &e.original, 1);
    }
    s = s.replacen(&format!("{}\n", super::texture::SHIM), "", 1);
    s = shims_as_includes(&s);
    if template {
        return s;
    }
    // A launcher version (`version` note: its `kernel` is a host function) merges the units
    // of every kernel it launches, and each got the linkage by rule; else only the unit's
    // own kernel did.
    let version = diagnostics.iter().any(|d| d.code == "version");
    // Each definition starts a line (isolation writes each item on its own).
    let heads: Vec<usize> = s
        .match_indices(LINKAGE)
        .map(|(i, _)| i)
        .filter(|&i| i == 0 || s.as_bytes()[i - 1] == b'\n')
        .filter(|&i| {
            let rest = &s[i + LINKAGE.len()..];
            if version {
                defines_a_kernel(rest)
            } else {
                defines_kernel(rest, kernel)
            }
        })
        .filter(|&i| {
            !restored
                .iter()
                .any(|o| o.starts_with("extern") && s[i..].starts_with(o.as_str()))
        })
        .collect();
    let heads = if version {
        &heads[..]
    } else {
        &heads[..heads.len().min(1)]
    };
    for &i in heads.iter().rev() {
        s.replace_range(i..i + LINKAGE.len(), "");
    }
    s
}

/// The line isolation writes before the shims of one host header's names.
pub fn shim_comment(header: &str) -> String {
    format!("// from {header} (NVRTC has no host headers)\n")
}

/// Each group of host-header shims (the comment [`shim_comment`], then that header's shim
/// definitions, one a line) given back as the header's `#include`, by rule: a name from
/// `<math.h>` reads as the suite wrote it, `#include <math.h>`.
fn shims_as_includes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut lines = s.split_inclusive('\n').peekable();
    while let Some(l) = lines.next() {
        let header = super::builtins::SHIMS
            .iter()
            .map(|x| x.header)
            .find(|h| l == shim_comment(h));
        let Some(h) = header else {
            out.push_str(l);
            continue;
        };
        out.push_str(&format!("#include {h}\n"));
        while let Some(next) = lines.peek() {
            let def = next.trim_end_matches('\n');
            if super::builtins::SHIMS
                .iter()
                .any(|x| x.header == h && x.definition == def)
            {
                lines.next();
            } else {
                break;
            }
        }
    }
    out
}

/// `text` opens with a kernel definition (`__global__ …(` before any body).
fn defines_a_kernel(text: &str) -> bool {
    text[..text.find(['{', ';']).unwrap_or(text.len())].contains("__global__")
}

/// `text` opens with the definition of `kernel` (`__global__ … kernel(`) before any body.
fn defines_kernel(text: &str, kernel: &str) -> bool {
    let head = &text[..text.find(['{', ';']).unwrap_or(text.len())];
    head.contains("__global__")
        && head
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .any(|w| w == kernel)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A launcher version merges several kernels' units: the linkage isolation gave each
    /// kernel goes, and a kernel the suite wrote `extern "C"` keeps it (llm.c's
    /// `layernorm_forward2` launches three kernels; its export carried three `extern "C"`).
    #[test]
    fn a_launcher_version_gives_back_every_kernel_as_written() {
        let a = "__global__ void mean_k(float *m) {\n  m[0] = 1;\n}";
        let b = "__global__ void rstd_k(float *r) {\n  r[0] = 2;\n}";
        let c = "extern \"C\" __global__ void norm_k(float *o) {\n  o[0] = 3;\n}";
        let compiled = format!("#include <x.h>\n\nextern \"C\" {a}\n\nextern \"C\" {b}\n\n{c}\n");
        let mut diags = vec![Diagnostic::new(
            Level::Info,
            "version",
            "host launcher `forward2` (f.cu:9) launches mean_k, rstd_k, norm_k in this order",
        )];
        diags.extend(note(c, c, true));
        let text = written_text(&compiled, &diags, "forward2", false);
        assert_eq!(text, format!("#include <x.h>\n\n{a}\n\n{b}\n\n{c}\n"));
        // Not a version: only the unit's own kernel loses the linkage.
        let plain = written_text(&compiled, &diags[1..], "rstd_k", false);
        assert_eq!(
            plain,
            format!("#include <x.h>\n\nextern \"C\" {a}\n\n{b}\n\n{c}\n")
        );
    }

    #[test]
    fn linkage_added_by_rule_is_not_recorded_and_other_edits_are() {
        let k = "__global__ void k(int *a) {\n  a[0] = 1;\n}";
        assert_eq!(note(k, &format!("extern \"C\" {k}"), true), None);
        assert_eq!(note(k, k, true), None);
        let ext = format!("extern \"C\" {k}");
        let e: Edit = serde_json::from_str(&note(&ext, &ext, true).unwrap().message).unwrap();
        assert_eq!(e.original, "extern \"C\" __global__ void k(int *a) {");
        assert!(e.kernel && e.compiled == e.original);
        let stat = "static __global__ void k(int *a) {\n  a[0] = 1;\n}";
        let d = note(stat, &format!("extern \"C\" {k}"), true).unwrap();
        let e: Edit = serde_json::from_str(&d.message).unwrap();
        assert_eq!(e.original, "static __global__ void k(int *a) {");
        assert_eq!(e.compiled, "extern \"C\" __global__ void k(int *a) {");
        assert!(e.kernel);
        let g = note("const float s = 1.5f;", "constexpr float s = 1.5f;", false).unwrap();
        let e: Edit = serde_json::from_str(&g.message).unwrap();
        assert_eq!(
            (e.compiled.as_str(), e.original.as_str()),
            ("constexpr float s = 1.5f;", "const float s = 1.5f;")
        );
    }
}
