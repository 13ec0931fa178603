//! What a kernel body does with its parameters, read from the front end's one parse of its
//! unit (`cuda::syntax::unit`, `#if` resolved as NVRTC compiles it): which
//! pointers it writes (assignment targets, compound assignments, `++`/`--`, atomics, and
//! the same through local aliases and device helpers it calls), which it reads, which
//! integer buffers it uses as subscripts of other buffers, and which names its bounds
//! checks compare. Harness inference turns these facts into roles, index ranges and
//! irregular size sets.

use crate::cuda::syntax::{self, identifiers, squashed, text};
use crate::cuda::{builtins, lex, queries};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;
use tree_sitter::Node;

/// How a kernel writes a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum WriteKind {
    /// Only through atomics (`atomicAdd(&p[i], v)`): a read-modify-write, order-dependent
    /// for floats.
    Atomic,
    /// At least one ordinary store (`p[i] = v`, `p[i] += v`, `p[i]++`).
    Store,
}

/// What one kernel body does with its parameters (by parameter name).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BodyFacts {
    pub writes: BTreeMap<String, WriteKind>,
    /// Parameters whose values the body reads (a load, or the old value of `+=`/atomics).
    pub reads: BTreeSet<String>,
    /// Integer buffer → the buffers it subscripts (`x[idx[i]]` gives idx → {x}).
    pub indexes: BTreeMap<String, BTreeSet<String>>,
    /// Index buffers some subscript uses inside a larger expression
    /// (`I[iN[row] + Nr * col]`, srad): its values are not indices of the whole buffer,
    /// only offsets into it.
    pub offset_indexes: BTreeSet<String>,
    /// Index buffers whose values start a run of a block's width: `B[first + threadIdx.x]`
    /// with `first` loaded from the buffer (rpes' (first, count) ranges). Their values
    /// stay a block's width below the end of what they index.
    pub thread_offset_indexes: BTreeSet<String>,
    /// Names compared by `<`, `<=`, `>`, `>=` anywhere in the body (bounds checks).
    pub bounded: BTreeSet<String>,
    /// Parameters passed to a function the unit does not define (not an atomic or a
    /// builtin we know): whether it writes through them is not visible.
    pub opaque: BTreeMap<String, String>,
    /// Parameters whose values reach the argument of a function defined only for positive
    /// (or non-negative) inputs: `log`, `sqrt`, `pow`'s base, or a divisor (directly or
    /// through locals computed from them). Random inputs for them are drawn positive.
    pub domain: BTreeSet<String>,
    /// Parameters every store to which writes a literal (`mask[i] = false;`): a flag or mask
    /// the kernel sets or clears, whose output can legitimately be constant.
    pub constant_stores: BTreeSet<String>,
    /// Parameters every store to which is at `[blockIdx.x]`: one result per block (partial
    /// sums), so only the first grid-x elements are the kernel's output.
    pub per_block: BTreeSet<String>,
    /// Per-block results stored at `[blockIdx.x + P]` for a scalar parameter `P`: result →
    /// `P`. The launch's blocks write from `P` on.
    pub per_block_offset: BTreeMap<String, String>,
}

/// Math functions defined only for positive (or non-negative) first arguments.
const POSITIVE_DOMAIN: &[&str] = &[
    "log",
    "logf",
    "log2",
    "log2f",
    "log10",
    "log10f",
    "log1p",
    "log1pf",
    "__logf",
    "__log2f",
    "__log10f",
    "sqrt",
    "sqrtf",
    "rsqrt",
    "rsqrtf",
    "__fsqrt_rn",
    "pow",
    "powf",
    "__powf",
];

/// The parameters whose values reach a [`POSITIVE_DOMAIN`] call's first argument, or the
/// right side of a `/`, in `body`:
/// each local's value depends on the names in its initializer and assignments, followed to
/// a fixed point.
fn domain_params(body: Node, src: &str, params: &BTreeSet<String>) -> BTreeSet<String> {
    let idents = |n: Node, out: &mut BTreeSet<String>| {
        out.extend(identifiers(n, src).into_iter().map(String::from))
    };
    let mut deps: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut roots = BTreeSet::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        let (target, value) = match n.kind() {
            "init_declarator" => (
                n.child_by_field_name("declarator")
                    .and_then(|d| declared_name(d, src)),
                n.child_by_field_name("value"),
            ),
            "assignment_expression" => (
                n.child_by_field_name("left")
                    .filter(|l| l.kind() == "identifier")
                    .map(|l| text(l, src).to_string()),
                n.child_by_field_name("right"),
            ),
            "call_expression" => {
                let f = n.child_by_field_name("function").map(|f| text(f, src));
                if f.is_some_and(|f| POSITIVE_DOMAIN.contains(&f)) {
                    if let Some(a) = n
                        .child_by_field_name("arguments")
                        .and_then(|a| a.named_child(0))
                    {
                        idents(a, &mut roots);
                    }
                }
                (None, None)
            }
            // A divisor: random values near 0 make inf, then NaN (srad's `G2 / (Jc * Jc)`).
            "binary_expression"
                if n.child_by_field_name("operator")
                    .is_some_and(|o| text(o, src) == "/") =>
            {
                if let Some(r) = n.child_by_field_name("right") {
                    idents(r, &mut roots);
                }
                (None, None)
            }
            _ => (None, None),
        };
        if let (Some(t), Some(v)) = (target, value) {
            idents(v, deps.entry(t).or_default());
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    let mut seen = BTreeSet::new();
    let mut todo: Vec<String> = roots.into_iter().collect();
    while let Some(name) = todo.pop() {
        if !seen.insert(name.clone()) {
            continue;
        }
        if let Some(d) = deps.get(&name) {
            todo.extend(d.iter().cloned());
        }
    }
    seen.into_iter().filter(|n| params.contains(n)).collect()
}

/// Facts for kernel `kernel` (a `__global__` or any function) defined in the unit `source`,
/// over the parameter names `params`, read from the unit as NVRTC compiles it
/// ([`syntax::unit`]: `#if` resolved, parsed once). None when the function is not found.
pub fn body_facts(source: &str, kernel: &str, params: &[String]) -> Option<BodyFacts> {
    let unit = syntax::unit(source);
    let source = unit.text.as_str();
    let root = unit.tree.root_node();
    let functions = functions(root, source);
    let macros = accessor_macros(source);
    let body = functions.get(kernel)?.1;
    let mut facts = BodyFacts::default();
    let memo = HelperMemo::default();
    let mut w = Walker {
        src: source,
        functions: &functions,
        macros: &macros,
        params: params.iter().cloned().collect(),
        aliases: BTreeMap::new(),
        literal_stores: BTreeMap::new(),
        block_stores: BTreeMap::new(),
        loaded: loaded_locals(body, source, params),
        thread_x: thread_x_names(body, source),
        block_x: names_for(body, source, "blockIdx.x"),
        block_offsets: BTreeMap::new(),
        facts: &mut facts,
        memo: &memo,
        depth: 0,
    };
    w.visit(body);
    let all_of = |m: &BTreeMap<String, bool>| -> BTreeSet<String> {
        m.iter()
            .filter(|(_, all)| **all)
            .map(|(p, _)| p.clone())
            .collect()
    };
    let (constant, per_block) = (all_of(&w.literal_stores), all_of(&w.block_stores));
    let block_offsets = std::mem::take(&mut w.block_offsets);
    let stored = |p: &String| facts.writes.get(p) == Some(&WriteKind::Store);
    let constant: BTreeSet<String> = constant.into_iter().filter(stored).collect();
    // Every store at the block's index plus one and the same offset (or none).
    let per_block: BTreeSet<String> = per_block
        .into_iter()
        .filter(stored)
        .filter(|p| block_offsets.get(p).is_some_and(|o| o.len() == 1))
        .collect();
    // One offset for every store of the parameter, and a parameter at that.
    facts.per_block_offset = per_block
        .iter()
        .filter_map(
            |p| match block_offsets.get(p).map(|o| o.iter().collect::<Vec<_>>()) {
                Some(o) if o.len() == 1 && !o[0].is_empty() => Some((p.clone(), o[0].clone())),
                _ => None,
            },
        )
        .collect();
    facts.constant_stores = constant;
    facts.per_block = per_block;
    let params: BTreeSet<String> = params.iter().cloned().collect();
    facts.domain = domain_params(body, source, &params);
    // Helper functions see positional names: keep only the kernel's parameters.
    Some(facts)
}

/// Integer types a local holding an index can have.
const INDEX_TYPES: &[&str] = &[
    "int",
    "unsigned",
    "unsignedint",
    "uint",
    "long",
    "unsignedlong",
    "longlong",
    "unsignedlonglong",
    "size_t",
    "short",
    "unsignedshort",
    "int2",
    "int4",
    "uint2",
    "uint4",
    "int64_t",
    "uint64_t",
    "int32_t",
    "uint32_t",
];

/// Integer locals of `body` whose value is a load from a parameter's buffer: `int c =
/// cols[j];`, `uint2 w = ranges[b];` then `first = w.x;` (followed through such locals and
/// their fields, casts and parentheses, to a fixed point) → the parameters loaded from. A
/// local assigned anything else anywhere is left out.
pub(crate) fn loaded_locals(
    body: Node,
    src: &str,
    params: &[String],
) -> BTreeMap<String, BTreeSet<String>> {
    let params: BTreeSet<&str> = params.iter().map(|s| s.as_str()).collect();
    let mut types: BTreeMap<String, String> = BTreeMap::new();
    let mut values: Vec<(String, Node)> = Vec::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "declaration" => {
                let ty = n.child_by_field_name("type").map(|t| squashed(t, src));
                let ty = ty.unwrap_or_default();
                let mut c = n.walk();
                for d in n.children_by_field_name("declarator", &mut c) {
                    let (name, value) = match d.kind() {
                        "identifier" => (Some(d), None),
                        "init_declarator" => (
                            d.child_by_field_name("declarator"),
                            d.child_by_field_name("value"),
                        ),
                        _ => (None, None),
                    };
                    if let Some(name) = name.filter(|n| n.kind() == "identifier") {
                        let name = text(name, src).to_string();
                        types.insert(name.clone(), ty.clone());
                        if let Some(v) = value {
                            values.push((name, v));
                        }
                    }
                }
            }
            "assignment_expression" => {
                if let (Some(l), Some(r)) = (
                    n.child_by_field_name("left"),
                    n.child_by_field_name("right"),
                ) {
                    if l.kind() == "identifier" {
                        let op = n.child_by_field_name("operator").map(|o| text(o, src));
                        if op == Some("=") {
                            values.push((text(l, src).to_string(), r));
                        } else {
                            // `+=` and the like: not a plain load.
                            values.push((text(l, src).to_string(), l));
                        }
                    }
                }
            }
            "update_expression" => {
                if let Some(a) = n.child_by_field_name("argument") {
                    if a.kind() == "identifier" {
                        values.push((text(a, src).to_string(), a));
                    }
                }
            }
            _ => {}
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    // The parameter (or loaded local) a value is a plain load of, if it is one.
    fn source_of<'s>(mut v: Node, src: &'s str) -> Option<(&'s str, bool)> {
        for _ in 0..16 {
            v = match v.kind() {
                "parenthesized_expression" => v.named_child(0)?,
                "cast_expression" => v.child_by_field_name("value")?,
                // A vector's component (`w.x` of a `uint2`); a struct's named field is
                // not an index the generator could bound.
                "field_expression" => {
                    let f = v.child_by_field_name("field")?;
                    if !matches!(text(f, src), "x" | "y" | "z" | "w") {
                        return None;
                    }
                    v.child_by_field_name("argument")?
                }
                "subscript_expression" => {
                    let a = v.child_by_field_name("argument")?;
                    return (a.kind() == "identifier").then(|| (text(a, src), true));
                }
                "identifier" => return Some((text(v, src), false)),
                _ => return None,
            };
        }
        None
    }
    let integer = |name: &str| {
        types
            .get(name)
            .is_some_and(|t| INDEX_TYPES.contains(&t.trim_start_matches("const")))
    };
    let mut by_name: BTreeMap<&str, Vec<Node>> = BTreeMap::new();
    for (name, v) in &values {
        by_name.entry(name.as_str()).or_default().push(*v);
    }
    // Grows to a fixed point: a local joins once every value it is given resolves to a
    // parameter's load or to a local already in; cycles never resolve.
    let mut out: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for _ in 0..8 {
        let mut changed = false;
        for (name, vs) in &by_name {
            if out.contains_key(*name) || !integer(name) || params.contains(name) {
                continue;
            }
            let mut from = BTreeSet::new();
            let all = vs.iter().all(|v| match source_of(*v, src) {
                Some((p, true)) if params.contains(p) => {
                    from.insert(p.to_string());
                    true
                }
                Some((l, false)) if l != *name => out.get(l).is_some_and(|ps| {
                    from.extend(ps.iter().cloned());
                    true
                }),
                _ => false,
            });
            if all {
                out.insert(name.to_string(), from);
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    out
}

/// Locals of `body` declared `= threadIdx.x` and never assigned again.
pub(crate) fn thread_x_names(body: Node, src: &str) -> BTreeSet<String> {
    names_for(body, src, "threadIdx.x")
}

/// Locals of `body` declared `= <builtin>` (`int blid = blockIdx.x;`) and never assigned
/// again.
fn names_for(body: Node, src: &str, builtin: &str) -> BTreeSet<String> {
    let locals = constant_locals(body, src).into_iter();
    locals
        .filter(|(_, v)| v == builtin)
        .map(|(n, _)| n)
        .collect()
}

/// Locals of `body` given a value where declared and never assigned again (nor `++`/`--`):
/// (name, the value's text without spaces), in the order of a walk from the last
/// statement.
fn constant_locals(body: Node, src: &str) -> Vec<(String, String)> {
    let mut inits = Vec::new();
    let mut assigned = BTreeSet::new();
    let mut stack = vec![body];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "init_declarator" => {
                let name = n.child_by_field_name("declarator");
                let value = n.child_by_field_name("value");
                if let (Some(name), Some(value)) = (name, value) {
                    if name.kind() == "identifier" {
                        inits.push((text(name, src).to_string(), squashed(value, src)));
                    }
                }
            }
            "assignment_expression" | "update_expression" => {
                let t = n
                    .child_by_field_name("left")
                    .or_else(|| n.child_by_field_name("argument"));
                if let Some(t) = t.filter(|t| t.kind() == "identifier") {
                    assigned.insert(text(t, src).to_string());
                }
            }
            _ => {}
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    inits.retain(|(n, _)| !assigned.contains(n));
    inits
}

/// Integer size parameters the kernel splits into equal parts by a division whose quotient
/// it then multiplies (`(size / warps_block) * warpid` in Parboil's imghisto): the parts
/// cover `size / d * d` elements and the remainder is dropped, so the size must be a
/// multiple of `d`. Returns (parameter, the divisor's text with the body's constant locals
/// written out: `(blockDim.x / WARP_SIZE)`).
pub fn floor_split_sizes(source: &str, kernel: &str, params: &[String]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let unit = syntax::unit(source);
    let source = unit.text.as_str();
    let functions = functions(unit.tree.root_node(), source);
    let Some((_, body)) = functions.get(kernel) else {
        return out;
    };
    // Locals given one value where declared and never assigned again.
    let inits: BTreeMap<String, String> = constant_locals(*body, source).into_iter().collect();
    let mut divisions: Vec<Node> = Vec::new();
    let mut stack = vec![*body];
    while let Some(n) = stack.pop() {
        if n.kind() == "binary_expression"
            && n.child_by_field_name("operator").map(|o| text(o, source)) == Some("/")
        {
            divisions.push(n);
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    for n in divisions {
        let (Some(l), Some(r)) = (
            n.child_by_field_name("left"),
            n.child_by_field_name("right"),
        ) else {
            continue;
        };
        let p = text(l, source).trim();
        if l.kind() != "identifier" || !params.iter().any(|x| x == p) {
            continue;
        }
        // The quotient, through parentheses, is a factor of a product.
        let mut up = n;
        while let Some(parent) = up
            .parent()
            .filter(|x| x.kind() == "parenthesized_expression")
        {
            up = parent;
        }
        let multiplied = up.parent().is_some_and(|m| {
            m.kind() == "binary_expression"
                && m.child_by_field_name("operator").map(|o| text(o, source)) == Some("*")
        });
        if !multiplied {
            continue;
        }
        let mut d = squashed(r, source);
        for _ in 0..4 {
            let words = super::draft::idents(&d);
            let mut changed = false;
            for w in words
                .into_iter()
                .filter(|w| !matches!(w.as_str(), "x" | "y" | "z"))
            {
                if let Some(v) = inits.get(&w) {
                    d = crate::cuda::cexpr::replace_ident(&d, &w, &format!("({v})"));
                    changed = true;
                }
            }
            if !changed {
                break;
            }
        }
        if !out.iter().any(|(q, e)| q == p && *e == d) {
            out.push((p.to_string(), d));
        }
    }
    out
}

/// Shared arrays of one dimension the kernel stores to at `[threadIdx.x]` (or at a local
/// declared `= threadIdx.x` and never assigned again) with no `if` above the store that
/// bounds that index from above: array name → its declared extent as written
/// (`Result[BLOCK_SIZE]` in rpes' `DoReduction`). Every thread of a block then writes its own
/// element, so the block's x size cannot exceed the extent: a larger block writes past the
/// array. Stores in an `if (i < n)` branch, or in the `else` of `if (i > n)`, are left out.
pub fn thread_indexed_shared(source: &str, kernel: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let unit = syntax::unit(source);
    let source = unit.text.as_str();
    let functions = functions(unit.tree.root_node(), source);
    let Some((_, body)) = functions.get(kernel) else {
        return out;
    };
    let squash = |n: Node| squashed(n, source);
    let thread_x = thread_x_names(*body, source);
    let mut extents: BTreeMap<String, String> = BTreeMap::new();
    let mut stores: Vec<(String, String, Node)> = Vec::new();
    let mut stack = vec![*body];
    while let Some(n) = stack.pop() {
        match n.kind() {
            "declaration" => {
                let mut c = n.walk();
                let shared = n
                    .children(&mut c)
                    .any(|k| k.kind() == "type_qualifier" && text(k, source) == "__shared__");
                let mut c = n.walk();
                for d in n.children_by_field_name("declarator", &mut c) {
                    let name = d.child_by_field_name("declarator");
                    let size = d.child_by_field_name("size");
                    if let (true, Some(name), Some(size)) = (shared, name, size) {
                        if d.kind() == "array_declarator" && name.kind() == "identifier" {
                            extents.insert(text(name, source).into(), squash(size));
                        }
                    }
                }
            }
            "assignment_expression" => {
                let t = n.child_by_field_name("left");
                if let Some(t) = t.filter(|t| t.kind() == "subscript_expression") {
                    let arr = t.child_by_field_name("argument");
                    let idx = t.child_by_field_name("indices");
                    if let (Some(arr), Some(idx)) = (arr, idx) {
                        if arr.kind() == "identifier" && idx.named_child_count() == 1 {
                            if let Some(i) = idx.named_child(0) {
                                stores.push((text(arr, source).into(), squash(i), n));
                            }
                        }
                    }
                }
            }
            _ => {}
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    // An `if` above `n` whose branch holding `n` bounds `idx` from above.
    let bounded = |n: Node, idx: &str| -> bool {
        let mut child = n;
        let mut up = n.parent();
        while let Some(p) = up {
            if p.kind() == "if_statement" {
                let cond = p
                    .child_by_field_name("condition")
                    .map(squash)
                    .unwrap_or_default();
                let in_else = p
                    .child_by_field_name("alternative")
                    .is_some_and(|a| a.id() == child.id());
                let below = [format!("{idx}<"), format!(">{idx}")];
                let above = [format!("{idx}>"), format!("<{idx}")];
                let hits = |pats: &[String; 2]| pats.iter().any(|x| cond.contains(x.as_str()));
                if (!in_else && hits(&below)) || (in_else && hits(&above)) {
                    return true;
                }
            }
            child = p;
            up = p.parent();
        }
        false
    };
    for (arr, idx, n) in stores {
        let alias = idx == "threadIdx.x" || thread_x.contains(&idx);
        if let (true, Some(ext)) = (alias, extents.get(&arr)) {
            if !bounded(n, &idx) {
                out.insert(arr, ext.clone());
            }
        }
    }
    out
}

/// Function-like macros every definition of which (in any `#if` branch) is an expression
/// that assigns nothing: accessors such as lbm's `#define SRC_C(g) (LOCAL(g, C))`. A
/// macro with `=`, `++`, `--` or a statement in its body is left out (it may write).
pub fn accessor_macros(source: &str) -> BTreeSet<String> {
    static WRITES: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"[^=!<>+\-*/%&|^]=[^=]|\+\+|--|;|\{|[+\-*/%&|^]=").expect("valid")
    });
    let mut ok: BTreeMap<String, bool> = BTreeMap::new();
    for d in crate::cuda::ppcond::defines(source).filter(|d| d.params.is_some()) {
        let clean = !d.body.is_empty() && !d.body.ends_with('\\') && !WRITES.is_match(d.body);
        *ok.entry(d.name.to_string()).or_insert(true) &= clean;
    }
    ok.into_iter().filter(|(_, c)| *c).map(|(m, _)| m).collect()
}

/// How deep device helpers are followed (dwt2d: kernel → `run` → `transform` →
/// `loadLowFrom` → `updateAndLoad`, where a pointer is finally read).
const MAX_CALL_DEPTH: usize = 8;

/// Function name → (parameter names, body) for every definition in the file.
fn functions<'t>(root: Node<'t>, src: &str) -> BTreeMap<String, (Vec<String>, Node<'t>)> {
    let mut out = BTreeMap::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        if n.kind() == "function_definition" {
            if let (Some(decl), Some(body)) = (
                n.child_by_field_name("declarator"),
                n.child_by_field_name("body"),
            ) {
                if let Some(fd) = queries::first_of_kind(decl, "function_declarator") {
                    let name = fd
                        .child_by_field_name("declarator")
                        .map(|d| plain_name(text(d, src)))
                        .unwrap_or_default();
                    let params = fd
                        .child_by_field_name("parameters")
                        .map(|ps| {
                            let mut c = ps.walk();
                            ps.named_children(&mut c)
                                .map(|p| {
                                    p.child_by_field_name("declarator")
                                        .and_then(|d| declared_name(d, src))
                                        .unwrap_or_default()
                                })
                                .collect()
                        })
                        .unwrap_or_default();
                    out.entry(name).or_insert((params, body));
                }
            }
            continue;
        }
        let mut c = n.walk();
        stack.extend(n.named_children(&mut c));
    }
    out
}

/// A called or defined function's own name: template arguments and class or namespace
/// qualifiers dropped (`FDWT53<W, H>::run` → `run`, `atomicAdd<float>` → `atomicAdd`).
fn plain_name(s: &str) -> String {
    let mut out = String::new();
    let mut i = 0;
    while let Some(lt) = s[i..].find('<').map(|k| i + k) {
        out.push_str(&s[i..lt]);
        // An unclosed `<` drops the rest.
        i = lex::matching(s, lt, b'<', b'>').map_or(s.len(), |gt| gt + 1);
    }
    out.push_str(&s[i..]);
    // `obj.method` / `p->method`: the method's name.
    out.rsplit("::")
        .next()
        .and_then(|s| s.rsplit(['.', '>']).next())
        .unwrap_or("")
        .trim()
        .to_string()
}

/// The identifier a declarator declares (`*p`, `p[4]`, `&r`, `p`).
fn declared_name(n: Node, src: &str) -> Option<String> {
    // A declarator's name comes before its extents and parameters.
    queries::first_of_kind(n, "identifier").map(|i| text(i, src).to_string())
}

/// The identifier at the base of an lvalue or pointer expression: `p` in `p[i]`, `*(p + i)`,
/// `p[i].x`, `&p[i]`, `(p)`, `(float*)p`, `p + i`.
pub(crate) fn base_ident<'t>(n: Node<'t>) -> Option<Node<'t>> {
    let mut n = n;
    for _ in 0..32 {
        n = match n.kind() {
            "identifier" => return Some(n),
            "subscript_expression" | "field_expression" | "pointer_expression" => {
                n.child_by_field_name("argument")?
            }
            "parenthesized_expression" => n.named_child(0)?,
            "cast_expression" => n.child_by_field_name("value")?,
            "binary_expression" => n.child_by_field_name("left")?,
            _ => return None,
        };
    }
    None
}

struct Walker<'a, 't> {
    src: &'a str,
    functions: &'a BTreeMap<String, (Vec<String>, Node<'t>)>,
    /// Function-like macros of the unit whose bodies assign nothing (lbm's
    /// `#define DST_WB(g) (LOCAL(g, WB))`): a parameter passed to one is read, or written
    /// when the macro call is an assignment's target.
    macros: &'a BTreeSet<String>,
    params: BTreeSet<String>,
    /// Local pointer → the parameter it points into (`float *row = a + i * n;`).
    aliases: BTreeMap<String, String>,
    /// Per stored-to parameter: whether every `=` store so far wrote a literal.
    literal_stores: BTreeMap<String, bool>,
    /// Per stored-to parameter: whether every store so far was at `[blockIdx.x]`.
    block_stores: BTreeMap<String, bool>,
    /// Integer locals holding a value loaded from a parameter's buffer
    /// ([`loaded_locals`]): a subscript using one is indexed by that buffer.
    loaded: BTreeMap<String, BTreeSet<String>>,
    /// The body's names for `threadIdx.x` ([`thread_x_names`]).
    thread_x: BTreeSet<String>,
    /// The body's names for `blockIdx.x`.
    block_x: BTreeSet<String>,
    /// Per stored-to parameter: the scalar parameters its `[blockIdx.x + P]` stores add
    /// ("" for a plain `[blockIdx.x]`).
    block_offsets: BTreeMap<String, BTreeSet<String>>,
    facts: &'a mut BodyFacts,
    /// Helper facts by (helper, depth), shared by every walker of one kernel body.
    memo: &'a HelperMemo,
    depth: usize,
}

type HelperMemo = RefCell<HashMap<(String, usize), Rc<BodyFacts>>>;

thread_local! {
    /// Helper bodies walked on this thread: what the regression test for the exponential
    /// walk counts (a count, not a clock, so the test cannot flake on a slow machine).
    static HELPER_WALKS: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

impl<'t> Walker<'_, 't> {
    fn resolve(&self, name: &str) -> Option<String> {
        if self.params.contains(name) {
            Some(name.to_string())
        } else {
            self.aliases.get(name).cloned()
        }
    }

    fn target(&self, n: Node<'t>) -> Option<String> {
        if let Some(a) = self.macro_arg(n) {
            return self.target(a);
        }
        base_ident(n).and_then(|b| self.resolve(text(b, self.src)))
    }

    /// `M(p, …)` for an accessor macro `M`: the first argument that is a parameter.
    fn macro_arg(&self, n: Node<'t>) -> Option<Node<'t>> {
        let mut n = n;
        while n.kind() == "parenthesized_expression" {
            n = n.named_child(0)?;
        }
        if n.kind() != "call_expression" {
            return None;
        }
        let f = n.child_by_field_name("function")?;
        if f.kind() != "identifier" || !self.macros.contains(text(f, self.src)) {
            return None;
        }
        let a = n.child_by_field_name("arguments")?;
        let mut c = a.walk();
        let found = a
            .named_children(&mut c)
            .find(|x| base_ident(*x).is_some_and(|b| self.resolve(text(b, self.src)).is_some()));
        found
    }

    fn write(&mut self, p: String, kind: WriteKind) {
        let e = self.facts.writes.entry(p).or_insert(kind);
        *e = (*e).max(kind);
    }

    fn visit(&mut self, n: Node<'t>) {
        match n.kind() {
            "assignment_expression" => {
                let left = n.child_by_field_name("left");
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| text(o, self.src))
                    .unwrap_or("=");
                if let Some(l) = left {
                    if l.kind() == "identifier" {
                        // Re-pointing a local alias (`p = a + k`) or a scalar: not a store.
                        let name = text(l, self.src).to_string();
                        if let Some(r) = n.child_by_field_name("right") {
                            if let Some(t) = self.target(r) {
                                if !self.params.contains(&name) {
                                    self.aliases.insert(name, t);
                                }
                            }
                        }
                    } else if let Some(t) = self.target(l) {
                        let literal = op == "="
                            && n.child_by_field_name("right").is_some_and(|r| {
                                matches!(
                                    r.kind(),
                                    "number_literal" | "true" | "false" | "char_literal"
                                )
                            });
                        let all = self.literal_stores.entry(t.clone()).or_insert(true);
                        *all &= literal;
                        let index = (l.kind() == "subscript_expression"
                            && base_ident(l)
                                .is_some_and(|b| l.child_by_field_name("argument") == Some(b)))
                        .then(|| {
                            l.child_by_field_name("indices")
                                .or_else(|| l.child_by_field_name("index"))
                        })
                        .flatten()
                        .map(|ix| {
                            text(ix, self.src)
                                .trim_matches(|c| c == '[' || c == ']')
                                .split_whitespace()
                                .collect::<String>()
                        });
                        let offset = index.as_deref().and_then(|i| self.block_offset(i));
                        let at_block = offset.is_some();
                        if let Some(off) = offset {
                            self.block_offsets.entry(t.clone()).or_default().insert(off);
                        }
                        let all = self.block_stores.entry(t.clone()).or_insert(true);
                        *all &= at_block;
                        self.write(t.clone(), WriteKind::Store);
                        if op != "=" {
                            self.facts.reads.insert(t);
                        }
                        // The subscript expressions of the target are reads.
                        self.visit_except_base(l);
                        if let Some(r) = n.child_by_field_name("right") {
                            self.visit(r);
                        }
                        return;
                    }
                }
            }
            "update_expression" => {
                if let Some(a) = n.child_by_field_name("argument") {
                    if a.kind() != "identifier" {
                        if let Some(t) = self.target(a) {
                            self.write(t.clone(), WriteKind::Store);
                            self.facts.reads.insert(t);
                        }
                    }
                }
            }
            "call_expression" => {
                self.call(n);
            }
            "init_declarator" => {
                if let (Some(d), Some(v)) = (
                    n.child_by_field_name("declarator"),
                    n.child_by_field_name("value"),
                ) {
                    if d.kind() == "pointer_declarator" || d.kind() == "reference_declarator" {
                        if let (Some(name), Some(t)) = (declared_name(d, self.src), self.target(v))
                        {
                            self.aliases.insert(name, t);
                        }
                    }
                }
            }
            "subscript_expression" => {
                if let Some(b) = n
                    .child_by_field_name("argument")
                    .and_then(|a| self.target(a))
                {
                    let mut c = n.walk();
                    let idx: Vec<Node> = n
                        .named_children(&mut c)
                        .filter(|k| Some(*k) != n.child_by_field_name("argument"))
                        .collect();
                    for i in idx {
                        let mut whole = i;
                        while matches!(
                            whole.kind(),
                            "parenthesized_expression"
                                | "cast_expression"
                                | "subscript_argument_list"
                        ) {
                            match whole.named_child(whole.named_child_count().saturating_sub(1)) {
                                Some(inner) => whole = inner,
                                None => break,
                            }
                        }
                        for p in self.subscripted_params(i) {
                            if p != b {
                                self.facts
                                    .indexes
                                    .entry(p.clone())
                                    .or_default()
                                    .insert(b.clone());
                                let alone = (whole.kind() == "subscript_expression"
                                    && whole
                                        .child_by_field_name("argument")
                                        .and_then(|a| self.target(a))
                                        .as_ref()
                                        == Some(&p))
                                    || (whole.kind() == "identifier"
                                        && self
                                            .loaded
                                            .get(text(whole, self.src))
                                            .is_some_and(|ps| ps.contains(&p)));
                                if self.thread_offset_of(whole, &p) {
                                    self.facts.thread_offset_indexes.insert(p.clone());
                                }
                                if !alone {
                                    self.facts.offset_indexes.insert(p);
                                }
                            }
                        }
                    }
                }
            }
            "binary_expression" => {
                let op = n
                    .child_by_field_name("operator")
                    .map(|o| text(o, self.src))
                    .unwrap_or("");
                if matches!(op, "<" | "<=" | ">" | ">=") {
                    for side in ["left", "right"] {
                        if let Some(s) = n.child_by_field_name(side) {
                            self.names_in(s);
                        }
                    }
                }
            }
            "identifier" => {
                if let Some(t) = self.resolve(text(n, self.src)) {
                    self.facts.reads.insert(t);
                }
                return;
            }
            _ => {}
        }
        let mut c = n.walk();
        let kids: Vec<Node<'t>> = n.named_children(&mut c).collect();
        for k in kids {
            self.visit(k);
        }
    }

    /// Visit an lvalue's parts except its base identifier (its indices are reads).
    fn visit_except_base(&mut self, l: Node<'t>) {
        // An accessor macro as the target (`DST_C(dst) = c`): its other arguments are read.
        if let Some(a) = self.macro_arg(l) {
            let mut n = l;
            while n.kind() == "parenthesized_expression" {
                match n.named_child(0) {
                    Some(x) => n = x,
                    None => return,
                }
            }
            if let Some(args) = n.child_by_field_name("arguments") {
                let mut c = args.walk();
                let rest: Vec<Node<'t>> = args.named_children(&mut c).filter(|x| *x != a).collect();
                for x in rest {
                    self.visit(x);
                }
            }
            return;
        }
        let base = base_ident(l);
        let mut stack = vec![l];
        while let Some(n) = stack.pop() {
            if Some(n) == base {
                continue;
            }
            if n.kind() == "identifier" {
                self.visit(n);
                continue;
            }
            if matches!(
                n.kind(),
                "subscript_expression"
                    | "field_expression"
                    | "pointer_expression"
                    | "parenthesized_expression"
                    | "cast_expression"
                    | "binary_expression"
            ) {
                let mut c = n.walk();
                stack.extend(n.named_children(&mut c));
            } else {
                self.visit(n);
            }
        }
    }

    /// Parameters read through a subscript inside `n` (`idx` in `idx[i] + 1`).
    /// A store index that is the block's x index (`blockIdx.x`, or a local holding it),
    /// alone or plus a scalar parameter (`blid + Offset`, rpes' chunked launches): the
    /// parameter ("" when alone).
    fn block_offset(&self, index: &str) -> Option<String> {
        let is_block = |s: &str| s == "blockIdx.x" || self.block_x.contains(s);
        if is_block(index) {
            return Some(String::new());
        }
        let (a, b) = index.split_once('+')?;
        let param = |s: &str| self.params.contains(s) && !self.aliases.contains_key(s);
        match (is_block(a), is_block(b)) {
            (true, false) if param(b) => Some(b.to_string()),
            (false, true) if param(a) => Some(a.to_string()),
            _ => None,
        }
    }

    fn subscripted_params(&self, n: Node<'t>) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![n];
        while let Some(x) = stack.pop() {
            if x.kind() == "subscript_expression" {
                if let Some(t) = x
                    .child_by_field_name("argument")
                    .and_then(|a| self.target(a))
                {
                    out.push(t);
                }
            }
            if x.kind() == "identifier" {
                if let Some(ps) = self.loaded.get(text(x, self.src)) {
                    out.extend(ps.iter().cloned());
                }
            }
            let mut c = x.walk();
            stack.extend(x.named_children(&mut c));
        }
        out
    }

    /// `L + t` (either order) where `L` is a local loaded from `p` and `t` is the thread's x
    /// index: `p`'s values are starts of runs of up to a block's width.
    fn thread_offset_of(&self, whole: Node<'t>, p: &str) -> bool {
        if whole.kind() != "binary_expression"
            || whole
                .child_by_field_name("operator")
                .map(|o| text(o, self.src))
                != Some("+")
        {
            return false;
        }
        let side = |f: &str| {
            let n = whole.child_by_field_name(f);
            n.map(|n| squashed(n, self.src)).unwrap_or_default()
        };
        let (l, r) = (side("left"), side("right"));
        let from_p = |s: &String| self.loaded.get(s).is_some_and(|ps| ps.contains(p));
        let thread = |s: &String| s == "threadIdx.x" || self.thread_x.contains(s);
        (from_p(&l) && thread(&r)) || (thread(&l) && from_p(&r))
    }

    fn names_in(&mut self, n: Node<'t>) {
        let names = identifiers(n, self.src).into_iter().map(String::from);
        self.facts.bounded.extend(names);
    }

    /// What a helper's body does to its own parameters, walked once per (helper, depth) and
    /// reused at every call site: the walk starts from the helper's parameters alone, so its
    /// facts do not depend on the caller. Without the memo a chain of helpers that each call
    /// the next twice was walked 2^depth times (cuda-samples' headers did not finish).
    fn helper_facts(&mut self, name: &str, fparams: &[String], body: Node<'t>) -> Rc<BodyFacts> {
        let key = (name.to_string(), self.depth + 1);
        if let Some(f) = self.memo.borrow().get(&key) {
            return Rc::clone(f);
        }
        HELPER_WALKS.with(|c| c.set(c.get() + 1));
        let mut inner = BodyFacts::default();
        let mut w = Walker {
            src: self.src,
            functions: self.functions,
            macros: self.macros,
            params: fparams.iter().cloned().collect(),
            aliases: BTreeMap::new(),
            literal_stores: BTreeMap::new(),
            block_stores: BTreeMap::new(),
            loaded: BTreeMap::new(),
            thread_x: BTreeSet::new(),
            block_x: BTreeSet::new(),
            block_offsets: BTreeMap::new(),
            facts: &mut inner,
            memo: self.memo,
            depth: self.depth + 1,
        };
        w.visit(body);
        let f = Rc::new(inner);
        self.memo.borrow_mut().insert(key, Rc::clone(&f));
        f
    }

    fn call(&mut self, n: Node<'t>) {
        let name = n
            .child_by_field_name("function")
            .map(|f| text(f, self.src).to_string())
            .unwrap_or_default();
        let name = plain_name(&name);
        let args: Vec<Node<'t>> = n
            .child_by_field_name("arguments")
            .map(|a| {
                let mut c = a.walk();
                a.named_children(&mut c).collect()
            })
            .unwrap_or_default();
        if self.macros.contains(&name) && !self.functions.contains_key(&name) {
            // An accessor macro outside an assignment's target: its parameters are read.
            for a in &args {
                if let Some(t) = self.target(*a) {
                    self.facts.reads.insert(t);
                }
                self.visit(*a);
            }
            return;
        }
        if name.starts_with("atomic") || name.starts_with("__atomic") {
            if let Some(t) = args.first().and_then(|a| self.target(*a)) {
                self.write(t.clone(), WriteKind::Atomic);
                self.facts.reads.insert(t);
            }
            return;
        }
        if let Some((fparams, body)) = self
            .functions
            .get(&name)
            .filter(|_| self.depth < MAX_CALL_DEPTH)
        {
            // A device helper: its writes through positional parameters map back.
            let inner = self.helper_facts(&name, fparams, *body);
            for (i, a) in args.iter().enumerate() {
                let Some(t) = self.target(*a) else { continue };
                let Some(fp) = fparams.get(i) else { continue };
                if let Some(k) = inner.writes.get(fp) {
                    self.write(t.clone(), *k);
                    // What a helper stores is not looked at: not known to be a literal.
                    self.literal_stores.insert(t.clone(), false);
                    self.block_stores.insert(t.clone(), false);
                }
                if inner.reads.contains(fp) {
                    self.facts.reads.insert(t.clone());
                }
                if let Some(why) = inner.opaque.get(fp) {
                    self.facts.opaque.insert(t, why.clone());
                }
            }
            for a in args {
                self.visit(a);
            }
            return;
        }
        for a in &args {
            if a.kind() == "identifier" || a.kind() == "binary_expression" {
                if let Some(t) = self.target(*a) {
                    if !builtins::is_pure_call(&name) {
                        self.facts.opaque.insert(
                            t,
                            format!("passed to `{name}`, which the unit does not define"),
                        );
                    }
                }
            }
        }
        for a in args {
            self.visit(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(src: &str, params: &[&str]) -> BodyFacts {
        let ps: Vec<String> = params.iter().map(|s| s.to_string()).collect();
        body_facts(src, "k", &ps).expect("kernel found")
    }

    #[test]
    fn an_index_loaded_into_a_local_indexes_what_the_local_subscripts() {
        // CSR: `int c = cols[j]; … x[c]` — cols indexes x, alone.
        let f = facts(
            "__global__ void k(const int *cols, const float *v, const float *x, float *y) {\n\
             int j = threadIdx.x; int c = cols[j]; y[j] = v[j] * x[c];\n}",
            &["cols", "v", "x", "y"],
        );
        assert_eq!(
            f.indexes.get("cols"),
            Some(&BTreeSet::from(["x".to_string()])),
            "{f:?}"
        );
        assert!(!f.offset_indexes.contains("cols"), "{f:?}");
        assert!(f.thread_offset_indexes.is_empty(), "{f:?}");
        // A (first, count) table through a vector local's component: the start of a run of
        // a block's width, inside a larger subscript.
        let f = facts(
            "__global__ void k(float *out, const float *vals, const uint2 *runs) {\n\
             int tid = threadIdx.x; uint2 r = runs[blockIdx.x]; int first;\n\
             first = r.x; out[blockIdx.x] = vals[first + tid];\n}",
            &["out", "vals", "runs"],
        );
        assert_eq!(
            f.indexes.get("runs"),
            Some(&BTreeSet::from(["vals".to_string()])),
            "{f:?}"
        );
        assert!(f.offset_indexes.contains("runs"), "{f:?}");
        assert!(f.thread_offset_indexes.contains("runs"), "{f:?}");
        // Not loads: a struct's named field, a local changed by `+=`, a float local.
        let f = facts(
            "__global__ void k(const box *b, const int *p, const float *q, float *x) {\n\
             int o = b[0].offset; int m = p[0]; m += 1; float g = q[0];\n\
             x[o] = 1.0f; x[m] = 2.0f; x[(int)g] = 3.0f;\n}",
            &["b", "p", "q", "x"],
        );
        assert!(f.indexes.is_empty(), "{f:?}");
    }

    #[test]
    fn sizes_split_into_equal_parts_name_their_divisor() {
        let src = "#define WARP 32\n__global__ void k(int *o, const int *a, int size, int n) {\n\
                   const int warps = blockDim.x / WARP;\n\
                   const int w = threadIdx.x / WARP;\n\
                   int end = (size / warps) * (w + 1);\n\
                   int rows = n / 16; int moved = n / 4; moved = moved + 1;\n\
                   for (int i = (size / warps) * w; i < end; i++) o[i] = a[i] + rows + moved;\n}";
        let ps: Vec<String> = ["o", "a", "size", "n"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        // `size / warps` is multiplied (twice, one entry); `n / 16` and `n / 4` are not.
        assert_eq!(
            floor_split_sizes(src, "k", &ps),
            vec![("size".to_string(), "(blockDim.x/WARP)".to_string())]
        );
        // A divisor local assigned again is left as its name.
        let src = "__global__ void k(int *o, int size) {\n\
                   int parts = 4; parts = parts * 2;\n\
                   o[(size / parts) * threadIdx.x] = 1;\n}";
        let ps: Vec<String> = ["o", "size"].iter().map(|s| s.to_string()).collect();
        assert_eq!(
            floor_split_sizes(src, "k", &ps),
            vec![("size".to_string(), "parts".to_string())]
        );
    }

    #[test]
    fn thread_indexed_shared_arrays_bound_the_block_width() {
        let src = "#define W 64\n__global__ void k(float *o, const float *a, int n) {\n\
                   __shared__ float s[W]; __shared__ float t[128]; __shared__ float u[32];\n\
                   __shared__ float v[16][16];\n\
                   int tid = threadIdx.x;\n\
                   if (tid < n) s[tid] = a[tid]; else s[tid] = 0.0f;\n\
                   if (threadIdx.x < 32) u[threadIdx.x] = a[0];\n\
                   t[threadIdx.x + 1] = 0.0f; v[threadIdx.y][threadIdx.x] = 1.0f;\n\
                   o[tid] = s[0] + t[0] + u[0];\n}";
        let caps = thread_indexed_shared(src, "k");
        // `s` is stored at `[tid]` in the `else` of `tid < n`: every thread writes it. `u`'s
        // store is guarded, `t`'s is offset, `v` has two dimensions.
        assert_eq!(caps, BTreeMap::from([("s".to_string(), "W".to_string())]));
        // A local reassigned is no longer the thread's index.
        let src = "__global__ void k(float *o) {\n__shared__ float s[8];\n\
                   int i = threadIdx.x; i = i * 2; s[i] = 0.0f; o[0] = s[0];\n}";
        assert!(thread_indexed_shared(src, "k").is_empty());
    }

    #[test]
    fn stores_compound_and_increments_are_writes() {
        let f = facts(
            "__global__ void k(const float *a, float *b, float *c, int *d, int n) {\n\
             int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
             if (i < n) { b[i] = a[i]; c[i] += a[i]; d[i]++; }\n}",
            &["a", "b", "c", "d", "n"],
        );
        assert_eq!(f.writes.get("b"), Some(&WriteKind::Store));
        assert_eq!(f.writes.get("c"), Some(&WriteKind::Store));
        assert_eq!(f.writes.get("d"), Some(&WriteKind::Store));
        assert!(!f.writes.contains_key("a"));
        assert!(f.reads.contains("a") && f.reads.contains("c") && !f.reads.contains("b"));
        assert!(f.bounded.contains("n") && f.bounded.contains("i"));
    }

    #[test]
    fn a_helper_chain_is_walked_once_per_helper_not_once_per_call_path() {
        // 30 helpers, each calling the next twice (and the last one storing): the walk of
        // cuda-samples' helper headers never finished when every call site re-walked its
        // callee (2 + 4 + … + 2^8 = 510 walks here, 10^8 with ten calls a level).
        for calls in [2usize, 10] {
            let mut src = String::from("__device__ void h30(float *p) { p[0] = 1.0f; }\n");
            for i in (1..30).rev() {
                src.push_str(&format!("__device__ void h{i}(float *p) {{ p[{i}] = 2.0f;"));
                for _ in 0..calls {
                    src.push_str(&format!(" h{}(p);", i + 1));
                }
                src.push_str(" }\n");
            }
            src.push_str("__global__ void k(float *out, const float *x) { h1(out); }\n");
            HELPER_WALKS.with(|c| c.set(0));
            let f = facts(&src, &["out", "x"]);
            let walks = HELPER_WALKS.with(|c| c.get());
            assert_eq!(f.writes.get("out"), Some(&WriteKind::Store), "{f:?}");
            assert!(!f.writes.contains_key("x"), "{f:?}");
            // One walk per helper reached, at most once per depth.
            assert!(
                walks <= MAX_CALL_DEPTH,
                "{calls} calls a level: {walks} walks"
            );
        }
    }

    #[test]
    fn atomics_aliases_and_helpers_are_seen() {
        let src = "__device__ void put(float *o, int i, float v) { o[i] = v; }\n\
                   __global__ void k(float *h, float *out, float *acc, const float *x) {\n\
                   float *row = out + blockIdx.x * 4;\n\
                   row[threadIdx.x] = x[0];\n\
                   atomicAdd(&h[threadIdx.x], 1.0f);\n\
                   put(acc, threadIdx.x, x[1]);\n}";
        let f = facts(src, &["h", "out", "acc", "x"]);
        assert_eq!(f.writes.get("h"), Some(&WriteKind::Atomic));
        assert_eq!(f.writes.get("out"), Some(&WriteKind::Store));
        assert_eq!(f.writes.get("acc"), Some(&WriteKind::Store));
        assert!(!f.writes.contains_key("x"));
    }

    #[test]
    fn values_reaching_log_sqrt_or_pow_are_in_the_positive_domain() {
        let f = facts(
            "__global__ void k(const float *a, const float *b, const float *c, float *o, int n) {\n\
             int i = threadIdx.x;\n\
             float t = a[i] * 2.0f;\n\
             float u;\n\
             u = t + 1.0f;\n\
             o[i] = logf(u) + sqrtf(b[i] * b[i]) + c[i];\n}",
            &["a", "b", "c", "o", "n"],
        );
        // a reaches logf through t and u; b is sqrt's operand; c is only added.
        let want: BTreeSet<String> = ["a", "b"].iter().map(|s| s.to_string()).collect();
        assert_eq!(f.domain, want);
        // srad: the image reaches a divisor through locals; the numerator does not count.
        let f = facts(
            "__global__ void k(const float *img, const float *num, float *o) {\n\
             int i = threadIdx.x; float jc = img[i];\n\
             o[i] = num[i] / (jc * jc);\n}",
            &["img", "num", "o"],
        );
        let want: BTreeSet<String> = ["img"].iter().map(|s| s.to_string()).collect();
        assert_eq!(f.domain, want);
    }

    #[test]
    fn buffers_only_ever_given_literals_are_flags() {
        let f = facts(
            "__device__ void put(int *q, int i) { q[i] = 1; }\n\
             __global__ void k(bool *mask, bool *seen, float *o, int *h, int *q, int n) {\n\
             int i = threadIdx.x;\n\
             if (mask[i]) { mask[i] = false; seen[i] = true; o[i] = 1.0f; o[i + n] = o[i] * 2.0f; }\n\
             atomicAdd(&h[0], 1); put(q, i);\n}",
            &["mask", "seen", "o", "h", "q", "n"],
        );
        // o also gets a computed value; h is an atomic counter; q is stored by a helper.
        let want: BTreeSet<String> = ["mask", "seen"].iter().map(|s| s.to_string()).collect();
        assert_eq!(f.constant_stores, want);
    }

    #[test]
    fn stores_only_at_block_index_are_per_block_results() {
        let f = facts(
            "__global__ void k(const float *x, float *part, float *y, int n) {\n\
             __shared__ float s[256];\n\
             int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
             s[threadIdx.x] = x[i]; y[i] = x[i]; y[blockIdx.x] = 0.0f;\n\
             if (threadIdx.x == 0) part[ blockIdx.x ] = s[0];\n}",
            &["x", "part", "y", "n"],
        );
        let want: BTreeSet<String> = ["part"].iter().map(|s| s.to_string()).collect();
        assert_eq!(f.per_block, want);
        assert!(f.per_block_offset.is_empty(), "{f:?}");
        // At `[blid + off]` through a local holding `blockIdx.x`: per block, from `off` on.
        // Two different offsets of one buffer are no single chunk.
        let f = facts(
            "__global__ void k(float *sum, float *two, int off, int o2) {\n\
             int blid = blockIdx.x;\n\
             if (threadIdx.x == 0) { sum[blid + off] = 1.0f; two[blid + off] = 1.0f; two[o2 + blockIdx.x] = 2.0f; }\n}",
            &["sum", "two", "off", "o2"],
        );
        assert_eq!(f.per_block, BTreeSet::from(["sum".to_string()]));
        assert_eq!(
            f.per_block_offset,
            BTreeMap::from([("sum".to_string(), "off".to_string())])
        );
    }

    #[test]
    fn stores_under_an_undefined_macro_are_not_writes() {
        let f = facts(
            "#define ON 1\n__global__ void k(float *a, float *b, float *c) {\n\
             #ifdef OFF\n a[0] = 1.0f;\n #else\n c[0] = 2.0f;\n #endif\n\
             #ifdef ON\n b[0] = 1.0f;\n #endif\n}",
            &["a", "b", "c"],
        );
        assert_eq!(f.writes.get("a"), None);
        assert_eq!(f.writes.get("b"), Some(&WriteKind::Store));
        assert_eq!(f.writes.get("c"), Some(&WriteKind::Store));
    }

    #[test]
    fn index_buffers_name_what_they_subscript() {
        let f = facts(
            "__global__ void k(const int *idx, const float *v, float *o, int n) {\n\
             int i = threadIdx.x; if (i < n) o[i] = v[idx[i]];\n}",
            &["idx", "v", "o", "n"],
        );
        assert_eq!(
            f.indexes
                .get("idx")
                .map(|s| s.iter().cloned().collect::<Vec<_>>()),
            Some(vec!["v".to_string()])
        );
        assert!(!f.indexes.contains_key("v"));
        assert!(f.offset_indexes.is_empty(), "`v[idx[i]]` is an index alone");
        // srad: the index is an offset inside a larger subscript.
        let f = facts(
            "__global__ void k(const int *iN, const int *jW, const float *I, float *o, int nr) {\n\
             int r = threadIdx.x, c = blockIdx.x;\n\
             o[r] = I[iN[r] + nr * c] + I[(int)(jW[c])] + I[r + nr * jW[c]];\n}",
            &["iN", "jW", "I", "o", "nr"],
        );
        assert!(f.offset_indexes.contains("iN"), "{f:?}");
        assert!(f.offset_indexes.contains("jW"), "{f:?}");
        assert!(f.indexes.contains_key("iN"));
    }

    #[test]
    fn unknown_callees_are_opaque_and_missing_kernels_none() {
        let f = facts("__global__ void k(float *a) { mystery(a); }", &["a"]);
        assert!(f.opaque.contains_key("a"));
        assert!(f.writes.is_empty());
        assert!(body_facts("__global__ void j(float *a) {}", "k", &[]).is_none());
    }

    #[test]
    fn static_methods_of_class_templates_are_followed() {
        // dwt2d: the kernel hands its buffers to `FDWT53<W, H>::run`.
        let src =
            "template <int W> struct T { static __device__ void run(const int *in, int *out) \
                   { out[threadIdx.x] = in[threadIdx.x] * W; } };\n\
                   template <int W> __global__ void k(const int *input, int *output) \
                   { T<W>::run(input, output); }";
        let f = facts(src, &["input", "output"]);
        assert!(f.opaque.is_empty(), "{f:?}");
        assert!(f.writes.contains_key("output"), "{f:?}");
        assert!(!f.writes.contains_key("input"), "{f:?}");
        assert!(f.reads.contains("input"), "{f:?}");
        assert_eq!(plain_name("ns::A<1, B<2>>::go"), "go");
        assert_eq!(plain_name("w.transform"), "transform");
        assert_eq!(plain_name("p->step"), "step");
    }

    #[test]
    fn accessor_macros_read_or_write_their_parameter() {
        // lbm: the grid is reached only through macros, defined once per layout branch.
        let src = "#define IDX(x, e) ((x) * 19 + (e))\n#ifdef SCATTER\n#define SRC_C(g) ((g)[IDX(threadIdx.x, 0)])\n\
                   #define DST_C(g) ((g)[IDX(threadIdx.x + 1, 0)])\n#else\n#define SRC_C(g) ((g)[IDX(threadIdx.x + 1, 0)])\n\
                   #define DST_C(g) ((g)[IDX(threadIdx.x, 0)])\n#endif\n#define BUMP(g) ((g)[0]++)\n\
                   __global__ void k(float *src, float *dst, float *cnt) {\n  float c = SRC_C(src);\n  DST_C(dst) = c;\n  BUMP(cnt);\n}\n";
        let m = accessor_macros(src);
        assert!(m.contains("SRC_C") && m.contains("DST_C") && m.contains("IDX"));
        assert!(!m.contains("BUMP"), "{m:?}");
        let f = facts(src, &["src", "dst", "cnt"]);
        assert!(f.reads.contains("src") && !f.writes.contains_key("src"));
        assert_eq!(f.writes.get("dst"), Some(&WriteKind::Store));
        assert!(!f.reads.contains("dst"), "{f:?}");
        // A macro that may write stays opaque.
        assert!(f.opaque.contains_key("cnt"), "{f:?}");
    }

    #[test]
    fn math_functions_read_their_operands() {
        let f = facts(
            "__global__ void k(float *a, float *o, float *s) { float *p = a; \
             o[0] = powf(*p, 3) + __expf(a[1]) + atan2f(a[2], a[3]); sincosf(o[1], s, s + 1); }",
            &["a", "o", "s"],
        );
        assert!(!f.opaque.contains_key("a"), "{f:?}");
        assert!(f.reads.contains("a"));
        // sincosf writes through its pointers: not a pure call.
        assert!(f.opaque.contains_key("s"), "{f:?}");
    }
}
