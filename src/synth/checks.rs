//! The checks every LLM answer goes through, in order; the first failure rejects the
//! answer with a stable reason code.
//!
//! A stripped optimization is what we ask for; padding the runtime (spins, repeated
//! work, `volatile` tricks) or handing back the fast kernel is what these checks refuse.

use super::carried::carries_state;
use crate::cuda::syntax::{self, text, visit, KernelDef, Parsed};
use crate::gpu::nvrtc::{self, CompileRequest, NvrtcError};
use crate::record::{CompileCheck, KernelUnit, Param};
use regex::Regex;
use std::sync::{LazyLock, Mutex};

/// Why an answer was rejected (the record's enum: it travels into `SynthOutcome` as is).
pub use crate::record::SynthReason as Reason;

/// Names of the checks, in the order they run (recorded for an accepted answer).
pub const CHECKS: &[&str] = &[
    "code_block",
    "parses",
    "signature",
    "no_host_code",
    "no_slowdown",
    "differs_from_fast",
    "compiles",
];

#[derive(Debug, Clone)]
pub struct Rejection {
    pub reason: Reason,
    pub message: String,
    /// The NVRTC log, for a compile error: what the repair turn sends back.
    pub compile_log: Option<String>,
}

impl Rejection {
    fn new(reason: Reason, message: impl Into<String>) -> Self {
        Rejection {
            reason,
            message: message.into(),
            compile_log: None,
        }
    }
}

/// An answer that passed every check.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// The code block, as the model wrote it.
    pub source: String,
    pub def: KernelDef,
    pub compile: CompileCheck,
    /// Normalized-token difference from the fast kernel (0 = identical, 1 = nothing shared).
    pub difference: f64,
}

/// What an answer is checked against.
pub struct Target<'a> {
    pub fast: &'a KernelUnit,
    /// Below this normalized-token difference the answer counts as the fast kernel again.
    pub min_difference: f64,
    pub arch: &'a str,
    /// The part of the fast unit the prompt did not show (a prompt over the token budget
    /// held only the kernel and its helpers): compiled before the answer, and part of the
    /// slow unit's source.
    pub context: Option<&'a str>,
}

/// Run every check on one answer.
pub fn check_answer(answer: &str, t: &Target) -> Result<Candidate, Rejection> {
    let block = code_block(answer, &t.fast.kernel)?;
    let source = match t.context {
        Some(c) => format!("{}\n\n{block}", c.trim_end()),
        None => block,
    };
    // The answer is parsed once; every syntactic check reads the same tree.
    let parsed = Parsed::new(&source);
    // A kernel whose parameter list has `#if` branches (an answer keeping the fast
    // kernel's, as Rodinia mummergpu's) does not parse as written: it is read, and compared
    // with the fast kernel, as the compiler sees both ([`syntax::as_compiled`]).
    let (def, compiled) = match find_kernel(&parsed, &t.fast.kernel) {
        Err(r) if r.reason == Reason::ParseError && source.contains('#') => {
            let text = syntax::as_compiled(&source);
            let def = find_kernel(&Parsed::new(&text), &t.fast.kernel).map_err(|_| r)?;
            (def, Some(text))
        }
        found => (found?, None),
    };
    check_signature(&def, t.fast)?;
    check_host_code(&parsed)?;
    check_slowdowns(&parsed, &t.fast.source)?;
    let difference = match &compiled {
        None => difference_from_fast(&source, &def, t.fast),
        Some(text) => {
            let fast = KernelUnit {
                source: syntax::as_compiled(&t.fast.source),
                ..t.fast.clone()
            };
            difference_from_fast(text, &def, &fast)
        }
    };
    if difference < t.min_difference {
        return Err(Rejection::new(
            Reason::SameAsFast,
            format!(
                "the answer is the fast kernel again (normalized-token difference {difference:.3} < {:.3})",
                t.min_difference
            ),
        ));
    }
    let compile = compile(&source, t)?;
    Ok(Candidate {
        source,
        def,
        compile,
        difference,
    })
}

/// The kernel `name` in the answer, read by the one CUDA front end (names, parameters and
/// types normalized by the extract index's rules, as the fast unit's were); its definition
/// must parse without ERROR nodes.
fn find_kernel(parsed: &Parsed, name: &str) -> Result<KernelDef, Rejection> {
    let kernels = parsed.kernels();
    let tree = kernels.iter().find(|d| d.name == name);
    if let Some(d) = tree.filter(|d| d.has_error) {
        return Err(Rejection::new(
            Reason::ParseError,
            format!(
                "kernel `{}` has syntax errors (tree-sitter ERROR nodes)",
                d.name
            ),
        ));
    }
    match tree {
        Some(d) => Ok(d.clone()),
        None if parsed.has_error() => Err(Rejection::new(
            Reason::ParseError,
            "the code block does not parse (tree-sitter ERROR nodes) and has no clean kernel of that name",
        )),
        None => {
            let found: Vec<_> = kernels.iter().map(|k| k.name.as_str()).collect();
            Err(Rejection::new(
                Reason::KernelMissing,
                format!(
                    "no __global__ kernel named `{name}` (found: {})",
                    if found.is_empty() { "none".to_string() } else { found.join(", ") }
                ),
            ))
        }
    }
}

static FENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)```[ \t]*([A-Za-z0-9_+\-]*)[^\n]*\n(.*?)```").unwrap());

/// The fenced block holding the kernel: the first one that mentions its name and
/// `__global__`, else the first one.
pub fn code_block(answer: &str, kernel: &str) -> Result<String, Rejection> {
    let blocks: Vec<&str> = FENCE
        .captures_iter(answer)
        .map(|c| c.get(2).expect("group 2 always participates").as_str())
        .collect();
    if blocks.is_empty() {
        let msg = if answer.contains("```") {
            "the answer opens a code block but never closes it (truncated?)"
        } else {
            "the answer has no fenced code block"
        };
        return Err(Rejection::new(Reason::NoCodeBlock, msg));
    }
    let pick = blocks
        .iter()
        .find(|b| b.contains("__global__") && b.contains(kernel))
        .unwrap_or(&blocks[0]);
    if pick.trim().is_empty() {
        return Err(Rejection::new(
            Reason::NoCodeBlock,
            "the code block is empty",
        ));
    }
    Ok(pick.to_string())
}

/// Compare types the way a launch sees them: `__restrict__` and `const` change no
/// argument a caller passes (dropping them is a legitimate de-optimization).
pub(crate) fn launch_type(p: &Param) -> String {
    let t = syntax::normalize_type(&p.ty);
    t.split(' ')
        .filter(|w| !matches!(*w, "__restrict__" | "__restrict" | "restrict" | "const"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn check_signature(def: &KernelDef, fast: &KernelUnit) -> Result<(), Rejection> {
    let want: Vec<String> = fast.params.iter().map(launch_type).collect();
    let got: Vec<String> = def.params.iter().map(launch_type).collect();
    if want != got {
        return Err(Rejection::new(
            Reason::SignatureMismatch,
            format!(
                "parameter types differ: expected ({}), got ({})",
                want.join(", "),
                got.join(", ")
            ),
        ));
    }
    if def.template_params.len() != fast.template_params.len() {
        return Err(Rejection::new(
            Reason::SignatureMismatch,
            format!(
                "template parameters differ: expected <{}>, got <{}>",
                fast.template_params.join(", "),
                def.template_params.join(", ")
            ),
        ));
    }
    Ok(())
}

static HOST_CALL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^(cuda[A-Z]\w*|fopen|fclose|fprintf|fwrite|fread|fputs|fgets|fscanf|scanf|exit|abort|system|getenv)$").unwrap()
});

fn check_host_code(parsed: &Parsed) -> Result<(), Rejection> {
    let (tree, src) = (&parsed.tree, parsed.src);
    let mut found: Option<String> = None;
    visit(tree.root_node(), &mut |n| {
        if found.is_some() {
            return;
        }
        match n.kind() {
            "kernel_call_syntax" => found = Some("launches a kernel with <<<…>>>".into()),
            "function_definition" => {
                let name = n
                    .child_by_field_name("declarator")
                    .and_then(|d| d.child_by_field_name("declarator"))
                    .map(|d| text(d, src));
                if name == Some("main") {
                    found = Some("defines main()".into());
                }
            }
            "call_expression" => {
                if let Some(f) = n.child_by_field_name("function") {
                    let name = text(f, src);
                    if HOST_CALL.is_match(name) {
                        found = Some(format!("calls host function {name}()"));
                    }
                }
            }
            "type_identifier" if text(n, src) == "FILE" => {
                found = Some("uses FILE (host I/O)".into())
            }
            _ => {}
        }
    });
    match found {
        Some(m) => Err(Rejection::new(Reason::HostCode, m)),
        None => Ok(()),
    }
}

/// Facts about code that padding the runtime leaves behind, each with where it is.
#[derive(Debug, Default)]
struct Padding {
    timer_calls: Vec<Seen>,
    volatile: Vec<Seen>,
    empty_loops: Vec<Seen>,
    /// Counted loops whose body neither uses the counter nor carries state from one
    /// iteration to the next ([`super::carried`]): the same work, repeated.
    repeated_work_loops: Vec<Seen>,
    big_literal_bounds: Vec<Seen>,
}

/// One construct found: what identifies it (`clock64`, a loop counter, a bound) and its line.
#[derive(Debug, Clone)]
struct Seen {
    key: String,
    /// 0-based row in the source.
    row: usize,
}

impl Seen {
    fn at(key: impl Into<String>, n: tree_sitter::Node) -> Seen {
        Seen {
            key: key.into(),
            row: n.start_position().row,
        }
    }
}

pub use crate::evidence::SlowdownHit;

const TIMERS: &[&str] = &["clock", "clock64", "__nanosleep", "__prof_trigger"];

fn padding(parsed: &Parsed) -> Padding {
    let (tree, src) = (&parsed.tree, parsed.src);
    let mut p = Padding::default();
    visit(tree.root_node(), &mut |n| match n.kind() {
        "call_expression" => {
            if let Some(f) = n.child_by_field_name("function") {
                let name = text(f, src);
                if TIMERS.contains(&name) {
                    p.timer_calls.push(Seen::at(name, n));
                }
            }
        }
        "gnu_asm_expression" | "asm_statement" => {
            let t = text(n, src);
            if t.contains("globaltimer") || t.contains("nanosleep") || t.contains("clock") {
                p.timer_calls.push(Seen::at("asm timer", n));
            }
        }
        "volatile" => p.volatile.push(Seen::at("volatile", n)),
        "for_statement" | "while_statement" | "do_statement" => {
            let Some(body) = n.child_by_field_name("body") else {
                return;
            };
            let empty = match body.kind() {
                "expression_statement" => body.named_child_count() == 0,
                "compound_statement" => body.named_child_count() == 0,
                _ => false,
            };
            if empty {
                p.empty_loops.push(Seen::at("empty loop", n));
                return;
            }
            if n.kind() == "for_statement" {
                if let Some(v) = for_counter(n, src) {
                    let repeated = !ident_used(body, src, &v)
                        && !carries_state(body, n.child_by_field_name("update"), src);
                    if repeated {
                        p.repeated_work_loops.push(Seen::at(v, n));
                    }
                }
                if let Some(c) = n.child_by_field_name("condition") {
                    visit(c, &mut |m| {
                        if m.kind() == "number_literal" {
                            if let Some(v) = parse_int(text(m, src)) {
                                if v >= 65_536 {
                                    p.big_literal_bounds.push(Seen::at(v.to_string(), m));
                                }
                            }
                        }
                    });
                }
            }
        }
        _ => {}
    });
    p
}
fn for_counter(f: tree_sitter::Node, src: &str) -> Option<String> {
    let init = f.child_by_field_name("initializer")?;
    let mut name = None;
    visit(init, &mut |n| {
        if name.is_none() && n.kind() == "identifier" {
            name = Some(text(n, src).to_string());
        }
    });
    name
}

fn ident_used(body: tree_sitter::Node, src: &str, v: &str) -> bool {
    let mut used = false;
    visit(body, &mut |n| {
        if n.kind() == "identifier" && text(n, src) == v {
            used = true;
        }
    });
    used
}

fn parse_int(t: &str) -> Option<u64> {
    let t = t.trim_end_matches(['u', 'U', 'l', 'L']);
    if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else {
        t.parse().ok()
    }
}

fn check_slowdowns(parsed: &Parsed, fast_src: &str) -> Result<(), Rejection> {
    match slowdown_in(parsed, &Parsed::new(fast_src)) {
        Some(hit) => Err(Rejection::new(Reason::ArtificialSlowdown, hit.message)),
        None => Ok(()),
    }
}

/// The first artificial slowdown `src` (a slow kernel with its helpers) adds over
/// `fast_src` (its fast partner), in the order timer spins, `volatile`, empty loops,
/// repeated work, huge constant trip counts. Only what the fast kernel lacks counts, so
/// a pair whose both sides time themselves, say, is not refused for it.
pub fn find_slowdown(src: &str, fast_src: &str) -> Option<SlowdownHit> {
    slowdown_in(&Parsed::new(src), &Parsed::new(fast_src))
}

/// [`find_slowdown`] over texts already parsed.
fn slowdown_in(parsed: &Parsed, fast_parsed: &Parsed) -> Option<SlowdownHit> {
    let (src, fast_src) = (parsed.src, fast_parsed.src);
    // Helpers count too: a spin can hide in a __device__ function the kernel calls.
    let cand = padding(parsed);
    let fast = padding(fast_parsed);
    let fast_lines: std::collections::HashSet<&str> = fast_src.lines().map(str::trim).collect();
    let line_text = |row: usize| src.lines().nth(row).unwrap_or("").trim().to_string();
    let hit = |check: &str, s: &Seen, message: String| {
        Some(SlowdownHit {
            check: check.into(),
            line: s.row as u32 + 1,
            construct: line_text(s.row),
            message,
        })
    };
    // Of several constructs of one kind, the one whose line the fast kernel lacks.
    let added = |v: &[Seen]| -> Option<Seen> {
        v.iter()
            .find(|s| !fast_lines.contains(src.lines().nth(s.row).unwrap_or("").trim()))
            .or(v.last())
            .cloned()
    };
    let fast_keys = |v: &[Seen]| v.iter().map(|s| s.key.clone()).collect::<Vec<_>>();
    let fast_timers = fast_keys(&fast.timer_calls);
    if let Some(t) = cand
        .timer_calls
        .iter()
        .find(|t| !fast_timers.contains(&t.key))
    {
        return hit(
            "timer_spin",
            t,
            format!("uses {}: a timing spin pads the runtime", t.key),
        );
    }
    if cand.volatile.len() > fast.volatile.len() {
        let s = added(&cand.volatile)?;
        return hit(
            "added_volatile",
            &s,
            "adds `volatile` (defeats caching and optimization on purpose)".into(),
        );
    }
    if cand.empty_loops.len() > fast.empty_loops.len() {
        let s = added(&cand.empty_loops)?;
        return hit(
            "empty_loop",
            &s,
            "contains a loop with an empty body (busy loop)".into(),
        );
    }
    if cand.repeated_work_loops.len() > fast.repeated_work_loops.len() {
        let fast_counters = fast_keys(&fast.repeated_work_loops);
        let s = cand
            .repeated_work_loops
            .iter()
            .find(|s| !fast_counters.contains(&s.key))
            .unwrap_or(&cand.repeated_work_loops[0]);
        let v = &s.key;
        return hit(
            "repeated_work",
            s,
            format!(
                "a loop over `{v}` never uses `{v}` in its body and carries nothing from one iteration to the next: the same work repeated"
            ),
        );
    }
    let fast_bounds = fast_keys(&fast.big_literal_bounds);
    if let Some(b) = cand
        .big_literal_bounds
        .iter()
        .find(|b| !fast_bounds.contains(&b.key) && !fast_src.contains(&b.key))
    {
        return hit(
            "huge_trip_count",
            b,
            format!(
                "a loop runs to the constant {}, which the original never uses",
                b.key
            ),
        );
    }
    None
}

/// Normalized-token edit distance between the candidate's kernel and the fast kernel,
/// divided by the longer length.
pub fn difference_from_fast(src: &str, def: &KernelDef, fast: &KernelUnit) -> f64 {
    let cand = crate::cuda::normalized_tokens(&src[def.range.clone()]);
    let fast_src = syntax::kernels(&fast.source)
        .into_iter()
        .find(|d| d.name == fast.kernel)
        .map(|d| fast.source[d.range].to_string())
        .unwrap_or_else(|| fast.source.clone());
    let fast_toks = crate::cuda::normalized_tokens(&fast_src);
    token_difference(&cand, &fast_toks)
}

pub fn token_difference(a: &[String], b: &[String]) -> f64 {
    let n = a.len().max(b.len());
    if n == 0 {
        return 0.0;
    }
    levenshtein(a, b) as f64 / n as f64
}

fn levenshtein(a: &[String], b: &[String]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, x) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, y) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(x != y);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// NVRTC is not documented as safe for concurrent programs in every version; one at a time.
static NVRTC_LOCK: Mutex<()> = Mutex::new(());

fn compile(src: &str, t: &Target) -> Result<CompileCheck, Rejection> {
    // A template kernel's symbol is its bare name until verify picks the arguments; only
    // a full name expression (`k<float>`) can be resolved.
    let exprs: Vec<String> = if t.fast.symbol.contains('<') {
        vec![t.fast.symbol.clone()]
    } else {
        vec![]
    };
    let _guard = NVRTC_LOCK.lock().unwrap_or_else(|e| e.into_inner());
    let info =
        nvrtc::load().map_err(|e| Rejection::new(Reason::NvrtcUnavailable, e.to_string()))?;
    let r = nvrtc::compile(&CompileRequest {
        source: src,
        name: &format!("{}.synth.cu", t.fast.kernel),
        arch: t.arch,
        name_expressions: &exprs,
        cubin: false,
        // As the program builds the fast kernel (its `build_flags`).
        extra_options: &t.fast.build_flags,
    });
    match r {
        Ok(c) if c.ok => Ok(CompileCheck {
            ok: true,
            arch: t.arch.to_string(),
            log: c.log,
            // The same answers must give byte-identical outputs on a rerun, so the wall
            // time (which varies run to run) is logged, not recorded.
            millis: {
                tracing::debug!("{}: NVRTC took {:.1} ms", t.fast.kernel, c.millis);
                0.0
            },
            nvrtc_version: info.version_string(),
        }),
        Ok(c) => Err(Rejection {
            reason: Reason::CompileError,
            message: format!("NVRTC rejected the kernel: {}", first_error(&c.log)),
            compile_log: Some(c.log),
        }),
        Err(e @ (NvrtcError::Missing | NvrtcError::LoadFailed { .. })) => {
            Err(Rejection::new(Reason::NvrtcUnavailable, e.to_string()))
        }
        Err(e) => Err(Rejection {
            reason: Reason::CompileError,
            message: e.to_string(),
            compile_log: Some(e.to_string()),
        }),
    }
}

fn first_error(log: &str) -> &str {
    log.lines()
        .find(|l| l.contains("error"))
        .or_else(|| log.lines().next())
        .unwrap_or("(empty log)")
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn fast_unit(src: &str, kernel: &str) -> KernelUnit {
        let def = syntax::kernels(src)
            .into_iter()
            .find(|d| d.name == kernel)
            .unwrap();
        serde_json::from_value(serde_json::json!({
            "id": "f", "suite": "s", "benchmark": "b", "variant": "cuda", "path": "b/k.cu",
            "line": def.line, "kernel": kernel, "params": def.params, "source": src,
            "symbol": kernel, "pulled": {}, "features": {"shared_memory": false,
            "dynamic_shared_memory": false, "constant_memory": false, "texture_references": false,
            "atomics": false, "templates": false, "warp_primitives": false, "vector_types": false},
            "provenance": {}
        }))
        .unwrap()
    }

    const FAST: &str = "#define TILE 16\n__global__ void scale(float* out, const float* __restrict__ in, int n) {\n  __shared__ float s[TILE];\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) { s[threadIdx.x % TILE] = in[i]; out[i] = 2.0f * s[threadIdx.x % TILE]; }\n}\n";
    const SLOW: &str = "__global__ void scale(float* out, const float* in, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) {\n    float v = in[i];\n    out[i] = v * 2.0f;\n  }\n}\n";

    fn target(f: &KernelUnit) -> Target<'_> {
        Target {
            fast: f,
            min_difference: crate::synth::DEFAULT_MIN_DIFFERENCE,
            arch: crate::gpu::nvrtc::DEFAULT_ARCH,
            context: None,
        }
    }

    fn reason(answer: &str) -> Option<&'static str> {
        let f = fast_unit(FAST, "scale");
        match check_answer(answer, &target(&f)) {
            Ok(_) => None,
            Err(r) => Some(r.reason.as_str()),
        }
    }

    fn fenced(code: &str) -> String {
        format!("Here it is:\n```cuda\n{code}```\nDone.")
    }

    #[test]
    fn reasons_in_order() {
        assert_eq!(reason("no code here"), Some("no_code_block"));
        assert_eq!(
            reason("```cuda\n__global__ void scale("),
            Some("no_code_block")
        );
        assert_eq!(
            reason(&fenced(
                "__global__ void scale(float* out, const float* in, int n) { out[0] = ; "
            )),
            Some("parse_error")
        );
        assert_eq!(
            reason(&fenced(
                "__global__ void other(float* out, const float* in, int n) { }"
            )),
            Some("kernel_missing")
        );
        assert_eq!(
            reason(&fenced(
                "__global__ void scale(double* out, const float* in, int n) { }"
            )),
            Some("signature_mismatch")
        );
        assert_eq!(
            reason(&fenced(
                "__global__ void scale(float* out, const float* in) { }"
            )),
            Some("signature_mismatch")
        );
        assert_eq!(
            reason(&fenced(&format!("{SLOW}int main() {{ return 0; }}\n"))),
            Some("host_code")
        );
        assert_eq!(
            reason(&fenced(&SLOW.replace(
                "float v = in[i];",
                "float v = in[i]; float* d; cudaMalloc(&d, 4);"
            ))),
            Some("host_code")
        );
        assert_eq!(reason(&fenced(&SLOW.replace("float v = in[i];", "float v = in[i]; long long t0 = clock64(); while (clock64() - t0 < 1000) { v += 0.0f; }"))), Some("artificial_slowdown"));
        assert_eq!(
            reason(&fenced(&SLOW.replace(
                "float v = in[i];",
                "float v = in[i]; for (int w = 0; w < 100; w++);"
            ))),
            Some("artificial_slowdown")
        );
        assert_eq!(
            reason(&fenced(&SLOW.replace(
                "out[i] = v * 2.0f;",
                "for (int rep = 0; rep < 8; rep++) { out[i] = v * 2.0f; }"
            ))),
            Some("artificial_slowdown")
        );
        assert_eq!(
            reason(&fenced(&SLOW.replace("float v", "volatile float v"))),
            Some("artificial_slowdown")
        );
        assert_eq!(reason(&fenced(FAST)), Some("same_as_fast"));
        // Reformatted and re-commented is still the same kernel.
        let reformatted = FAST.replace("  ", "    ").replace("{\n", "{ // body\n");
        assert_eq!(reason(&fenced(&reformatted)), Some("same_as_fast"));
    }

    #[test]
    fn good_answer_passes_and_compile_errors_keep_the_log() {
        let f = fast_unit(FAST, "scale");
        if nvrtc::load().is_err() {
            assert_eq!(reason(&fenced(SLOW)), Some("nvrtc_unavailable"));
            return;
        }
        let c = check_answer(&fenced(SLOW), &target(&f)).expect("accepted");
        assert!(c.compile.ok);
        assert!(c.difference > 0.2, "{}", c.difference);
        assert_eq!(c.def.name, "scale");
        let bad = SLOW.replace("v * 2.0f", "v * undefined_scale");
        let r = check_answer(&fenced(&bad), &target(&f)).unwrap_err();
        assert_eq!(r.reason, Reason::CompileError);
        assert!(r.compile_log.unwrap().contains("undefined_scale"));
    }

    #[test]
    fn template_kernels_with_a_bare_symbol_compile() {
        let fast_src = "template <typename T>\n__global__ void tscale(T* out, const T* __restrict__ in, int n) {\n  __shared__ T s[256];\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  s[threadIdx.x] = in[i];\n  __syncthreads();\n  if (i < n) out[i] = s[threadIdx.x] * 2;\n}\n";
        let mut f = fast_unit(fast_src, "tscale");
        f.template_params = vec!["typename T".into()];
        let naive = "template <typename T>\n__global__ void tscale(T* out, const T* in, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = in[i] * 2;\n}\n";
        match check_answer(&fenced(naive), &target(&f)) {
            Ok(c) => assert_eq!(c.def.template_params, ["typename T"]),
            Err(r) if r.reason == Reason::NvrtcUnavailable => {}
            Err(r) => panic!("{r:?}"),
        }
        let untemplated = naive
            .replace("template <typename T>\n", "")
            .replace('T', "float");
        let r = check_answer(&fenced(&untemplated), &target(&f)).unwrap_err();
        assert_eq!(r.reason, Reason::SignatureMismatch, "{r:?}");
    }

    /// An answer that keeps the fast kernel's parameter list with `#if` branches (Rodinia
    /// mummergpu) is read as the compiler sees it: its signature is the branches its macros
    /// leave in, checked against the fast unit's; the fast kernel again, written the same
    /// way, is still `same_as_fast`.
    #[test]
    fn an_answer_with_if_branches_in_its_parameter_list_is_read_as_compiled() {
        let head = "#define QRYTEX 0\n__global__ void look(char* out,\n#if QRYTEX\n  int* tex_queries,\n#else\n  const char* queries,\n#endif\n  int n)\n";
        let fast_src = format!(
            "{head}{{\n  __shared__ char s[256];\n  int i = threadIdx.x;\n  s[i] = queries[i];\n  __syncthreads();\n  if (i < n) out[i] = s[i];\n}}\n"
        );
        let f = fast_unit(&syntax::as_compiled(&fast_src), "look");
        let f = KernelUnit {
            source: fast_src.clone(),
            ..f
        };
        assert_eq!(f.params.len(), 3, "{:?}", f.params);
        let naive =
            format!("{head}{{\n  int i = threadIdx.x;\n  if (i < n) out[i] = queries[i];\n}}\n");
        assert!(
            syntax::kernels(&naive).iter().any(|d| d.has_error),
            "as written, the list does not parse"
        );
        match check_answer(&fenced(&naive), &target(&f)) {
            Ok(c) => assert_eq!(c.def.params.len(), 3),
            Err(r) if r.reason == Reason::NvrtcUnavailable => {}
            Err(r) => panic!("{r:?}"),
        }
        let r = check_answer(&fenced(&fast_src), &target(&f)).unwrap_err();
        assert_eq!(r.reason, Reason::SameAsFast, "{r:?}");
        // A list whose branches still disagree with the fast kernel's is refused.
        let other = naive.replace("#define QRYTEX 0", "#define QRYTEX 1");
        let r = check_answer(&fenced(&other), &target(&f)).unwrap_err();
        assert_eq!(r.reason, Reason::SignatureMismatch, "{r:?}");
    }

    #[test]
    fn slowdown_hits_name_the_line_and_construct() {
        let spun = SLOW.replace(
            "float v = in[i];",
            "float v = in[i];\n    long long t0 = clock64(); while (clock64() - t0 < 2000) {}",
        );
        let h = find_slowdown(&spun, FAST).expect("a timer spin");
        assert_eq!(h.check, "timer_spin");
        let want = spun.lines().position(|l| l.contains("clock64")).unwrap() as u32 + 1;
        assert_eq!(h.line, want);
        assert!(
            h.construct.starts_with("long long t0 = clock64();"),
            "{h:?}"
        );
        // An added volatile is found at the line the fast kernel lacks.
        let vol = SLOW.replace("float v", "volatile float v");
        let h = find_slowdown(&vol, FAST).unwrap();
        assert_eq!(h.check, "added_volatile");
        assert!(h.construct.contains("volatile float v"), "{h:?}");
        assert_eq!(find_slowdown(SLOW, FAST), None);
        // Both sides time themselves: not a slowdown the slow side added.
        let timed = |s: &str| format!("__device__ long long stamp() {{ return clock64(); }}\n{s}");
        assert_eq!(find_slowdown(&timed(SLOW), &timed(FAST)), None);
    }

    /// Textbook naive kernels whose counted loops never read their counter but carry
    /// state from one iteration to the next: honest slow kernels, none of them padding.
    const TEXTBOOK_NAIVE: &[(&str, &str)] = &[
        (
            "popcount, one bit per iteration",
            "__global__ void popcount(const unsigned long long* in, int* out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    unsigned long long x = in[t];
    int cnt = 0;
    for (char i = 0; i < 64; i++) {
        cnt = cnt + (x & 0x1);
        x = x >> 1;
    }
    out[t] = cnt;
}
",
        ),
        (
            "bit reversal, shifting a bit across per iteration",
            "__global__ void bitrev(const unsigned int* in, unsigned int* out, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t < n) {
        unsigned int v = in[t], r = 0;
        for (int b = 0; b < 32; ++b) {
            r = (r << 1) | (v & 1u);
            v >>= 1;
        }
        out[t] = r;
    }
}
",
        ),
        (
            "Horner evaluation, walking the coefficients down",
            "__global__ void horner(const float* x, const float* coef, float* y, int degree, int n) {
    int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const float* c = coef + degree;
    float acc = *c;
    for (int k = 0; k < degree; ++k) {
        --c;
        acc = acc * x[t] + *c;
    }
    y[t] = acc;
}
",
        ),
        (
            "serial scan by one thread, pointers walked",
            "__global__ void scan_serial(const int* in, int* out, int n) {
    if (blockIdx.x != 0 || threadIdx.x != 0) return;
    const int* p = in;
    int* q = out;
    int run = 0;
    for (int k = 0; k < n; ++k) {
        run += *p++;
        *q++ = run;
    }
}
",
        ),
        (
            "naive reduction, each thread striding with its own index",
            "__global__ void reduce_naive(const float* in, float* sum, int n, int per_thread) {
    int j = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (int k = 0; k < per_thread; ++k) {
        if (j < n) acc += in[j];
        j += stride;
    }
    atomicAdd(sum, acc);
}
",
        ),
        (
            "naive Jacobi stencil, time steps over ping-pong buffers",
            "__global__ void jacobi_naive(float* a, float* b, int n, int steps) {
    int i = threadIdx.x;
    float* cur = a;
    float* nxt = b;
    for (int s = 0; s < steps; ++s) {
        if (i > 0 && i < n - 1) nxt[i] = 0.5f * (cur[i - 1] + cur[i + 1]);
        __syncthreads();
        float* tmp = cur;
        cur = nxt;
        nxt = tmp;
    }
}
",
        ),
    ];

    /// Regression: a counted loop that never reads its counter was `repeated_work` even when
    /// each iteration reads what the previous one wrote (a naive popcount was refused as
    /// "a loop over `i` never uses `i` in its body"). 0 of the 6 may be flagged.
    #[test]
    fn textbook_naive_loops_with_carried_state_are_not_slowdowns() {
        let flagged: Vec<String> = TEXTBOOK_NAIVE
            .iter()
            .filter_map(|(what, src)| find_slowdown(src, FAST).map(|h| format!("{what}: {h:?}")))
            .collect();
        assert!(
            flagged.is_empty(),
            "{} of 6 flagged: {flagged:#?}",
            flagged.len()
        );
        // Each kernel does have a loop that never reads its counter: the old question alone
        // would have flagged all six.
        for (what, src) in TEXTBOOK_NAIVE {
            let parsed = Parsed::new(src);
            let mut unused = 0;
            visit(parsed.tree.root_node(), &mut |n| {
                if n.kind() == "for_statement" {
                    let v = for_counter(n, src).unwrap();
                    unused +=
                        usize::from(!ident_used(n.child_by_field_name("body").unwrap(), src, &v));
                }
            });
            assert_eq!(unused, 1, "{what}");
        }
    }

    /// Planted repeated work: the same result recomputed every time round, whether the loop
    /// keeps nothing, stages through a local assigned first, recomputes a reduction into a
    /// fresh or reset accumulator, or stages through shared memory. Every one is caught.
    #[test]
    fn planted_repeated_work_is_still_caught() {
        for (what, slow) in [
            (
                "a store repeated",
                SLOW.replace(
                    "out[i] = v * 2.0f;",
                    "for (int rep = 0; rep < 8; rep++) { out[i] = v * 2.0f; }",
                ),
            ),
            (
                "a local assigned before it is read",
                SLOW.replace(
                    "out[i] = v * 2.0f;",
                    "float t;\n    for (int rep = 0; rep < 8; rep++) { t = v * 2.0f; out[i] = t; }",
                ),
            ),
            (
                "a reduction into a fresh accumulator, repeated",
                SLOW.replace(
                    "out[i] = v * 2.0f;",
                    "for (int rep = 0; rep < 4; ++rep) {\n      float acc = 0.0f;\n      for (int k = 0; k < n; ++k) acc += in[k];\n      out[i] = acc * v;\n    }",
                ),
            ),
            (
                "a reduction into an accumulator reset each time",
                SLOW.replace(
                    "out[i] = v * 2.0f;",
                    "float acc;\n    for (int rep = 0; rep < 4; ++rep) {\n      acc = 0.0f;\n      for (int k = 0; k < n; ++k) acc += in[k];\n    }\n    out[i] = acc * v;",
                ),
            ),
            (
                "shared-memory staging repeated",
                SLOW.replace(
                    "out[i] = v * 2.0f;",
                    "__shared__ float s[256];\n    for (int rep = 0; rep < 8; ++rep) {\n      s[threadIdx.x] = v;\n      __syncthreads();\n      out[i] = s[threadIdx.x] * 2.0f;\n      __syncthreads();\n    }",
                ),
            ),
        ] {
            let h = find_slowdown(&slow, FAST).unwrap_or_else(|| panic!("{what}: not caught"));
            assert_eq!(h.check, "repeated_work", "{what}: {h:?}");
            assert!(h.construct.starts_with("for (int rep"), "{what}: {h:?}");
            assert!(h.message.contains("`rep`"), "{what}: {h:?}");
        }
    }

    #[test]
    fn picks_the_block_with_the_kernel() {
        let a = "```\nnvcc x.cu\n```\n```cpp\n__global__ void scale() {}\n```";
        assert!(code_block(a, "scale").unwrap().contains("__global__"));
    }

    #[test]
    fn token_difference_bounds() {
        let t = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(token_difference(&t("a b c"), &t("a b c")), 0.0);
        assert_eq!(token_difference(&t("a b c"), &t("x y z")), 1.0);
        assert!((token_difference(&t("a b c d"), &t("a b c")) - 0.25).abs() < 1e-9);
    }
}
