//! A pair's optimization techniques without an LLM: those synth recorded, else what the
//! slow → fast difference shows ([`crate::synth::techniques::detect_pair`], register
//! rotations, layout macros) and the launches the harness records (thread coarsening).
//! Verify fills them into every pair it writes; export describes them.

use crate::harness::launches::Launches;
use crate::record::Pair;

/// The pair's techniques: those recorded (synth fills them) or, when none were, detected
/// now from the slow → fast difference.
pub fn techniques(pair: &Pair) -> Vec<String> {
    if !pair.techniques.is_empty() {
        return pair.techniques.clone();
    }
    // On the code as written: the texture shim's loads are not the kernel's technique.
    let as_written = |u: &crate::record::KernelUnit| crate::record::KernelUnit {
        source: crate::cuda::compile_only::source_text(u),
        ..u.clone()
    };
    let slow = pair.slow.unit().map(as_written);
    let fast = as_written(&pair.fast);
    let mut found = crate::synth::techniques::detect_pair(slow.as_ref(), &fast);
    if let Some(slow) = &slow {
        if rotations(&fast.source) > rotations(&slow.source) {
            found.push(PIPELINING.into());
        }
        if layout_only(slow, &fast) {
            found.push(LAYOUT.into());
        }
    }
    // From the launches: far fewer threads for the same work means more work per thread.
    if coarsening(pair).is_some() {
        found.push(COARSENING.into());
    }
    found
}

const COARSENING: &str = "thread_coarsening";
const PIPELINING: &str = "software_pipelining";
const LAYOUT: &str = "data_layout";

/// Register rotations inside loops (`d = dn;`: a plain variable takes another's value),
/// the mark of loads issued an iteration ahead of the arithmetic that uses them.
pub(crate) fn rotations(src: &str) -> usize {
    use crate::cuda::syntax::{parse, text, visit};
    let tree = parse(src);
    let mut n = 0;
    visit(tree.root_node(), &mut |node| {
        if !matches!(
            node.kind(),
            "for_statement" | "while_statement" | "do_statement"
        ) {
            return;
        }
        let Some(body) = node.child_by_field_name("body") else {
            return;
        };
        visit(body, &mut |a| {
            if a.kind() != "assignment_expression" {
                return;
            }
            let side = |f: &str| a.child_by_field_name(f).map(|c| c.kind());
            let plain = a
                .child_by_field_name("operator")
                .is_some_and(|o| text(o, src) == "=");
            if plain && side("left") == Some("identifier") && side("right") == Some("identifier") {
                n += 1;
            }
        });
    });
    n
}

/// The kernel's own text is the same (normalized tokens) and only what it uses changed,
/// among it a function-like macro that computes addresses (`#define IDX(x, e) …*…`): a
/// new data layout (Parboil lbm: array of structures → structure of arrays).
fn layout_only(slow: &crate::record::KernelUnit, fast: &crate::record::KernelUnit) -> bool {
    let body = |u: &crate::record::KernelUnit| {
        crate::cuda::syntax::kernels(&u.source)
            .into_iter()
            .find(|d| d.name == u.kernel)
            .map(|d| crate::cuda::normalized_tokens(&u.source[d.range]))
    };
    let (Some(a), Some(b)) = (body(slow), body(fast)) else {
        return false;
    };
    let macros = |u: &crate::record::KernelUnit| -> std::collections::BTreeMap<String, String> {
        crate::cuda::ppcond::defines(&u.source)
            .filter_map(|d| {
                let params = d.params?;
                let text = format!("({params}){}", d.body);
                Some((
                    d.name.to_string(),
                    text.split_whitespace().collect::<String>(),
                ))
            })
            .collect()
    };
    let (ms, mf) = (macros(slow), macros(fast));
    a == b
        && slow.source != fast.source
        && ms
            .iter()
            .any(|(k, v)| mf.get(k).is_some_and(|w| w != v && w.contains('*')))
}

/// Fewer threads by at least this factor count as coarsening.
const COARSENING_MIN: f64 = 1.5;

/// The factor by which the fast variant launches fewer threads, when it is a real one.
pub fn coarsening(pair: &Pair) -> Option<f64> {
    let v = pair.verification.as_ref()?;
    let l = Launches::of(v)?;
    let set = v.speedup.as_ref().map(|s| s.size_set.as_str());
    l.coarsening(set).filter(|&f| f >= COARSENING_MIN)
}
