//! `kernelpair harness draft`: a harness skeleton from a pair's parameter lists and the
//! launch sites extract recorded, with launch expressions translated where they can be
//! (`dim3 grid(ceil(n/256.0))` → `ceil_div(n, 256)`) and every unknown written as `TODO`,
//! a string that fails `harness check` until a person completes it. And `harness check`.

pub(super) use super::draft_value::toml_str;
use super::draft_value::{Field, LaunchDraft};
use super::expr::Scope;
use super::{c_base_type, c_is_pointer, ElemType};
use crate::cuda::ceval::{Expr, Num};
use crate::cuda::cexpr::{self, Kind};
use crate::cuda::host;
use crate::cuda::host_flow::Flow;
use crate::cuda::lex;
use crate::record::{KernelUnit, LaunchSite, Pair, Record};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum DraftError {
    #[error("{path}: no pair with id starting {id:?}")]
    NoPair { path: String, id: String },
    #[error("{path}: pair id prefix {id:?} is ambiguous ({count} pairs)")]
    Ambiguous {
        path: String,
        id: String,
        count: usize,
    },
    #[error(transparent)]
    Records(#[from] crate::jsonl::JsonlError),
}

/// Find a pair by id prefix in a records file.
pub fn find_pair(path: &Path, id: &str) -> Result<Pair, DraftError> {
    let records = crate::jsonl::read_records(path)?;
    let matches: Vec<Pair> = records
        .into_iter()
        .filter_map(|r| match r {
            Record::Pair(p) if p.id.starts_with(id) => Some(*p),
            _ => None,
        })
        .collect();
    let path = path.display().to_string();
    match matches.len() {
        0 => Err(DraftError::NoPair {
            path,
            id: id.into(),
        }),
        1 => Ok(matches.into_iter().next().expect("one")),
        count => {
            // An exact id wins over prefixes.
            match matches.iter().position(|p| p.id == id) {
                Some(i) => Ok(matches.into_iter().nth(i).expect("index")),
                None => Err(DraftError::Ambiguous {
                    path,
                    id: id.into(),
                    count,
                }),
            }
        }
    }
}

/// Functions a host expression may call that map onto expression helpers.
const CEIL_DIV_NAMES: [&str; 6] = ["iDivUp", "divUp", "DIVUP", "div_up", "ceil_div", "CEIL_DIV"];
pub(super) use crate::cuda::ceval::CAST_WORDS;

/// What names in host expressions mean.
pub(super) struct Names<'a> {
    /// Host text → size name (from the launch's args bound to int scalar parameters).
    pub(super) host_to_size: BTreeMap<String, String>,
    pub(super) sizes: &'a [String],
    pub(super) definitions: &'a BTreeMap<String, String>,
    /// Host variables the launch uses that are neither kernel parameters nor defined
    /// (`m` in `dim3 grid(m / 16)` inside a host wrapper): they become guessed sizes.
    pub(super) host_vars: std::cell::RefCell<std::collections::BTreeSet<String>>,
    /// Struct fields the launch reads (`ref_image->width`), each become a host variable
    /// named after its path (`ref_image_width`): that name → the host text.
    pub(super) members: std::cell::RefCell<BTreeMap<String, String>>,
    /// The kernel unit's isolated source, for macros it pulled in.
    pub(super) source: &'a str,
}

impl Names<'_> {
    /// The components a name's recorded definition gives it, looking in every definition
    /// (one declaration may define several names: `dim3 grid(…), threads(…)`).
    fn components(&self, name: &str) -> Option<Result<Vec<String>, String>> {
        if !super::is_ident(name) {
            return None;
        }
        if let Some(d) = self.definitions.get(name) {
            if zero_initialized(name, d) {
                return None;
            }
            return Some(definition_components(name, d));
        }
        if let Some(d) = self.definitions.values().find(|d| declares(d, name)) {
            return Some(definition_components(name, d));
        }
        // A macro the kernel unit pulled in (`#define BLOCKSIZEX 16`).
        crate::cuda::ppcond::defines(self.source)
            .find(|d| d.name == name && d.params.is_none())
            .map(|d| {
                Ok(vec![d
                    .body
                    .split("//")
                    .next()
                    .unwrap_or("")
                    .trim()
                    .to_string()])
            })
    }
}

/// The text a recorded definition (statements, `dim3 g(a), t(b); g.x = n`) is read in:
/// a function body whose code starts at [`DEF_AT`]. The definition is one line: a `//` in
/// it ended a source line, and what followed is code again (`CUDA_ERRCK // set up` then
/// `dim3 grid(n)`), so the marker reads as a statement break (same length: offsets stay).
fn definition_flow(def: &str) -> (Arc<Flow>, String) {
    let code = format!("void _() {{\n{}\n;}}", def.replace("//", "; "));
    (Flow::of(&code), code)
}
const DEF_AT: usize = "void _() {\n".len();

/// `name.x = e`, `name.y = e`, `name.z = e` in a definition: each component's last value.
fn component_assignments(flow: &Flow, name: &str) -> [Option<String>; 3] {
    ["x", "y", "z"].map(|c| {
        let w = flow.field_assignments(Some(name), c).pop();
        w.and_then(|w| w.value)
    })
}

/// Whether a definition text declares `name`: defines it as a macro, constructs or calls
/// it (`name(…)`), assigns it (`name = e`) or one of its components (`name.x = e`).
fn declares(def: &str, name: &str) -> bool {
    let (flow, code) = definition_flow(def);
    crate::cuda::ppcond::defines(def).any(|m| m.name == name)
        || !host::calls_to(&code, name).is_empty()
        || !flow.assignments(name).is_empty()
        || component_assignments(&flow, name)
            .iter()
            .any(Option::is_some)
}

/// The components a definition gives a name: `dim3 grid(a, b)` → [a, b]; `#define B 256` →
/// [256]; `int blocks = (n + 255) / 256;` → [(n + 255) / 256]; `dim3 g = dim3(a)` → [a];
/// `g.x = a; g.y = b;` → [a, b]. The first construction or assignment in the text wins;
/// a `dim3` has the components it is given (no padding to three).
fn definition_components(name: &str, def: &str) -> Result<Vec<String>, String> {
    let d = def.trim().trim_end_matches(';').trim();
    if let Some(m) = crate::cuda::ppcond::defines(d).next() {
        return Ok(vec![m.body.to_string()]);
    }
    let (flow, code) = definition_flow(d);
    let built = host::calls_to(&code, name).into_iter().next();
    if built.is_none() {
        let mut comps = component_assignments(&flow, name).to_vec();
        while comps.last().is_some_and(Option::is_none) {
            comps.pop();
        }
        if !comps.is_empty() {
            return Ok(comps
                .into_iter()
                .map(|c| c.unwrap_or_else(|| "1".into()))
                .collect());
        }
    }
    let assigned = flow.assignments(name).into_iter().next();
    match (built, assigned) {
        (Some(c), a) if a.as_ref().is_none_or(|a| c.span.0 < a.pos) => Ok(c.args),
        (_, Some(a)) => {
            // From its `=` on ([`top_level_until_comma`]).
            let at = a.pos - DEF_AT + name.len();
            let v = d[at..].split_once('=').map_or("", |(_, v)| v).trim();
            // `g = dim3(a, b)`: the constructor's arguments.
            match host::snippet_calls(v, "dim3").into_iter().next() {
                Some(c) if v.starts_with("dim3") && c.span.0 == 0 => Ok(c.args),
                _ => Ok(vec![top_level_until_comma(v)]),
            }
        }
        // Cut off after an `=` (the value was on the next lines): what follows it.
        _ if d.strip_suffix('=').is_some_and(|h| {
            cexpr::tokens_lossy(h)
                .last()
                .is_some_and(|t| t.text == name)
        }) =>
        {
            let v = d.split_once('=').map_or("", |(_, v)| v).trim();
            Ok(vec![top_level_until_comma(v)])
        }
        // A bare value (the recorded definition is just the expression).
        _ if !d.contains(' ') || !d.contains(name) => Ok(vec![d.to_string()]),
        _ => Err(format!("cannot read the definition of {name}: `{def}`")),
    }
}

/// `(a, f(b, c))` → [a, f(b, c)]: a constructor's arguments as written (`dim3(a, b)`).
pub(super) fn split_call_args(s: &str) -> Result<Vec<String>, String> {
    let s = s.trim();
    if !s.starts_with('(') {
        return Err(format!("expected `(` in `{s}`"));
    }
    match host::snippet_calls(&format!("_{s}"), "_")
        .into_iter()
        .next()
    {
        Some(c) if c.span == (0, s.len() + 1) => Ok(c.args),
        _ => Err(format!("unclosed `(` in `{s}`")),
    }
}

/// Host names and `cudaDeviceProp` fields that stand for a device property the harness
/// expressions know (`sms` filled by cudaDeviceGetAttribute → `sm_count`).
fn device_property(name: &str) -> Option<&'static str> {
    let n = name.to_ascii_lowercase().replace('_', "");
    Some(match n.as_str() {
        "sms"
        | "numsms"
        | "nsms"
        | "smcount"
        | "numsm"
        | "nsm"
        | "multiprocessorcount"
        | "nummultiprocessors" => "sm_count",
        "warpsize" => "warp_size",
        "maxthreadsperblock" => "max_threads_per_block",
        "l2cachesize" => "l2_bytes",
        _ => return None,
    })
}

/// A definition that only zero-initializes a variable (`int sms = 0`): the host fills it
/// later (through a pointer), so its recorded value means nothing.
fn zero_initialized(name: &str, def: &str) -> bool {
    let d = def.trim().trim_end_matches(';');
    d.rsplit_once('=')
        .is_some_and(|(lhs, rhs)| zero_literal(rhs) && lhs.split_whitespace().last() == Some(name))
}

/// A literal zero (`0`, `0u`, `0.0f`): what a declaration gives a variable the host fills
/// later.
pub(super) fn zero_literal(text: &str) -> bool {
    matches!(text.trim(), "0" | "0u" | "0.0" | "0.0f" | "0.f")
}

/// A C type name's size in bytes, for `sizeof(float)`.
pub(super) fn sizeof_type(t: &str) -> Option<usize> {
    let base = c_base_type(t);
    if t.contains('*') {
        return Some(8);
    }
    let scalar = ElemType::from_c_type(&base)?.size_of();
    let lanes = match base.chars().last() {
        Some(c @ '1'..='4')
            if base.len() > 1
                && base
                    .chars()
                    .rev()
                    .nth(1)
                    .is_some_and(|p| p.is_ascii_alphabetic()) =>
        {
            c.to_digit(10).unwrap_or(1) as usize
        }
        _ => 1,
    };
    Some(scalar * lanes)
}

/// Translate a C host expression into a harness expression: its [`Expr`] tree printed in
/// the harness's expression language ([`print`]). Comments are no part of it; empty text
/// stays empty (evaluating it says so).
pub(super) fn translate(text: &str, names: &Names, depth: usize) -> Result<String, String> {
    if depth > 8 {
        return Err("definitions nest too deeply".into());
    }
    let code = lex::strip_comments(text);
    let toks = cexpr::tokens(&code).map_err(|u| format!("cannot read {:?} in `{text}`", u.c))?;
    if toks.is_empty() {
        return Ok(String::new());
    }
    print(&Expr::from_tokens(&toks)?, names, depth)
}

/// A tree as harness text: the source's parentheses kept, casts dropped, each operator
/// between single spaces (`(unsigned int)ceil((float)m/BLOCK)` → `ceil_div(m, 256)`),
/// numbers as integers, names, members and calls read by [`name`], [`member`] and
/// [`call`]. The first error from the left wins, as reading the text would find it.
fn print(e: &Expr, names: &Names, depth: usize) -> Result<String, String> {
    let p = |e: &Expr| print(e, names, depth);
    Ok(match e {
        Expr::Num(Num::Int(v)) => v.to_string(),
        Expr::Num(Num::Float(f)) if f.fract() == 0.0 => (*f as i64).to_string(),
        Expr::Num(Num::Float(f)) => return Err(format!("non-integer literal {f}")),
        // A name qualified by its class or namespace (`x128::size`, a static member) is
        // recorded by its own part.
        Expr::Name(w) => name(w.rsplit("::").next().unwrap_or(w), names, depth)?,
        Expr::Paren(a) => format!("({})", p(a)?),
        Expr::Cast(_, a) => p(a)?,
        Expr::Unary(op, a) => format!("{op} {}", p(a)?),
        Expr::Binary(op, a, b) => format!("{} {op} {}", p(a)?, p(b)?),
        Expr::Cond(c, a, b) => format!("{} ? {} : {}", p(c)?, p(a)?, p(b)?),
        Expr::SizeOf(ty) => sizeof_type(ty)
            .ok_or_else(|| format!("sizeof({ty}) is not known"))?
            .to_string(),
        Expr::Member(root, path) => member(root, path, names, depth)?,
        Expr::Call(f, args) => call(f, args, names, depth)?,
        Expr::Defined(_) => return Err("unknown function defined()".into()),
    })
}

/// `o.f`, `o->f.g`: a device property (`prop.multiProcessorCount` → `sm_count`), a `dim3`
/// component (`grid.x`), or a struct field: a host variable named after its path
/// (`ref_image->width` → `ref_image_width`), valued later from the field's text.
fn member(
    root: &str,
    path: &[(&'static str, String)],
    names: &Names,
    depth: usize,
) -> Result<String, String> {
    let xyz = |f: &str| matches!(f, "x" | "y" | "z");
    match path {
        [(".", f)] if device_property(f).is_some() => {
            Ok(device_property(f).expect("matched").to_string())
        }
        [(".", c)] if xyz(c) => component(root, c, names, depth),
        // A size's field, or a field of a property or a component.
        [(".", f), _, ..] if device_property(f).is_some() || xyz(f) => Err("member access".into()),
        _ if names.host_to_size.contains_key(root) => Err("member access".into()),
        _ => {
            let text = path
                .iter()
                .fold(root.to_string(), |t, (op, f)| format!("{t}{op}{f}"));
            let var = path
                .iter()
                .fold(root.to_string(), |v, (_, f)| format!("{v}_{f}"));
            names.host_vars.borrow_mut().insert(var.clone());
            names.members.borrow_mut().insert(var.clone(), text);
            Ok(var)
        }
    }
}

/// A call as the harness's arithmetic: `ceil` of a division → `ceil_div` ([`ceil_of`]),
/// `iDivUp`-like → `ceil_div`, `floor`, `min`, `max`; arguments are read before the
/// function, a method call (`v.size()`) is none.
fn call(f: &str, args: &[Expr], names: &Names, depth: usize) -> Result<String, String> {
    if f.contains('.') || f.contains("->") {
        return Err("member access".into());
    }
    if let ("ceil" | "ceilf", [a]) = (f, args) {
        return ceil_of(a, names, depth);
    }
    let args = args
        .iter()
        .map(|a| print(a, names, depth))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(match (f, args.as_slice()) {
        ("floor" | "floorf", [a]) => format!("({a})"),
        (f, [a, b]) if CEIL_DIV_NAMES.contains(&f) => format!("ceil_div({a}, {b})"),
        ("min" | "MIN" | "std::min" | "fminf", [a, b]) => format!("min({a}, {b})"),
        ("max" | "MAX" | "std::max" | "fmaxf", [a, b]) => format!("max({a}, {b})"),
        ("dim3", _) => return Err("nested dim3".into()),
        (f, _) => return Err(format!("unknown function {f}()")),
    })
}

/// `ceil(a / b)` → `ceil_div(a, b)` (through parentheses and casts); anything else in a
/// ceil is integer arithmetic already and stays as it is.
fn ceil_of(arg: &Expr, names: &Names, depth: usize) -> Result<String, String> {
    match arg {
        Expr::Paren(a) | Expr::Cast(_, a) => ceil_of(a, names, depth),
        Expr::Binary("/", a, b) => Ok(format!(
            "ceil_div({}, {})",
            print(a, names, depth)?,
            print(b, names, depth)?
        )),
        a => print(a, names, depth),
    }
}

/// `w.x` / `w.y` / `w.z`: the component of a known `dim3` (1 where it has fewer), else a
/// host variable `w_x`.
fn component(w: &str, c: &str, names: &Names, depth: usize) -> Result<String, String> {
    let d = match c {
        "x" => 0,
        "y" => 1,
        _ => 2,
    };
    match names.components(w) {
        Some(Ok(comps)) => {
            let t = match comps.get(d) {
                Some(e) => translate(e, names, depth + 1)?,
                None => "1".to_string(),
            };
            Ok(if t.contains(' ') { format!("({t})") } else { t })
        }
        Some(Err(e)) => Err(e),
        None => {
            let v = format!("{w}_{c}");
            names.host_vars.borrow_mut().insert(v.clone());
            Ok(v)
        }
    }
}

/// A plain name: a size, a device property, a one-component `dim3`'s value, or a host
/// variable (recorded, for the draft to ask about).
fn name(w: &str, names: &Names, depth: usize) -> Result<String, String> {
    let zero_init = names
        .definitions
        .get(w)
        .is_some_and(|d| zero_initialized(w, d));
    Ok(if let Some(s) = names.host_to_size.get(w) {
        s.clone()
    } else if let Some(dp) =
        device_property(w).filter(|_| zero_init || !names.definitions.contains_key(w))
    {
        dp.to_string()
    } else if zero_init {
        names.host_vars.borrow_mut().insert(w.to_string());
        w.to_string()
    } else if names.sizes.iter().any(|s| s == w) && !names.host_to_size.values().any(|s| s == w) {
        // A size's own name, unless the launch passes that size another host text (then
        // the host's `w` is another variable, read from its definition below).
        w.to_string()
    } else if let Some(comps) = names.components(w) {
        let comps = comps?;
        if comps.len() != 1 {
            return Err(format!(
                "{w} is a {}-component dim3 used as a number",
                comps.len()
            ));
        }
        let t = translate(&comps[0], names, depth + 1)?;
        if t.contains(' ') {
            format!("({t})")
        } else {
            t
        }
    } else if CAST_WORDS.contains(&w) || w.starts_with("__") {
        return Err(format!("unknown name {w}"));
    } else {
        names.host_vars.borrow_mut().insert(w.to_string());
        w.to_string()
    })
}

/// A recorded value: the text up to its first comma outside parentheses (the front end's
/// lexer); a definition that goes on past the value's statement keeps that text, which does
/// not translate (the name's value there is not one).
fn top_level_until_comma(s: &str) -> String {
    let end = lex::find_top_level(s, b',', b"(", b")").unwrap_or(s.len());
    s[..end].trim().to_string()
}

/// Names in a host expression (identifiers not followed by `(`, no members).
pub(super) fn idents(e: &str) -> Vec<String> {
    let Ok(toks) = cexpr::tokens(e) else {
        return Vec::new();
    };
    let op = |i: usize, ops: &[&str]| {
        toks.get(i)
            .is_some_and(|t| t.kind == Kind::Op && ops.contains(&t.text))
    };
    toks.iter()
        .enumerate()
        .filter(|&(i, t)| {
            let call = op(i + 1, &["("]);
            let member = i > 0 && op(i - 1, &[".", "->"]);
            t.kind == Kind::Ident && !call && !member && !CAST_WORDS.contains(&t.text)
        })
        .map(|(_, t)| t.text.to_string())
        .collect()
}

/// The 1–3 components of a launch's grid or block text.
fn dims_of(text: &str, names: &Names) -> Result<Vec<String>, String> {
    let t = text.trim();
    let comps = if let Some(rest) = t.strip_prefix("dim3") {
        split_call_args(rest)?
    } else if let Some(c) = names.components(t) {
        c?
    } else {
        vec![t.to_string()]
    };
    if comps.is_empty() || comps.len() > 3 {
        return Err(format!("{} components", comps.len()));
    }
    // A component may itself be a named scalar (`blocks`) or expression.
    comps.iter().map(|c| translate(c, names, 0)).collect()
}

/// Whether an expression evaluates with every size at a typical value.
pub(super) fn evaluates(e: &str, sizes: &[String]) -> Result<(), String> {
    let mut s = Scope::default();
    for n in sizes {
        s.set_int(n, 1024);
    }
    for (n, v) in [
        ("sm_count", 132),
        ("max_threads_per_block", 1024),
        ("warp_size", 32),
        ("l2_bytes", 50 << 20),
    ] {
        s.set_int(n, v);
    }
    s.eval_int(e).map(|_| ())
}

/// Start the `[[args]]` table of parameter `i` (an unnamed one is `arg{i}`), as drafts
/// and inferred harnesses both write it; the name written.
pub(super) fn begin_arg(o: &mut String, i: usize, p: &crate::record::Param) -> String {
    let name = match p.name.is_empty() {
        true => format!("arg{i}"),
        false => p.name.clone(),
    };
    o.push_str("\n[[args]]\n");
    writeln!(o, "name = {}", toml_str(&name)).expect("string");
    name
}

/// Size names: the int scalar parameters of the fast kernel.
pub(super) fn int_scalars(u: &KernelUnit) -> Vec<String> {
    u.params
        .iter()
        .filter(|p| !c_is_pointer(&p.ty))
        .filter(|p| ElemType::from_c_type(&p.ty).is_some_and(|e| !e.is_float()))
        .map(|p| p.name.clone())
        .collect()
}

pub(super) fn site_for(u: &KernelUnit) -> Option<&LaunchSite> {
    // A kernel name defined in several files (Rodinia cfd's `cuda_compute_flux` takes 5
    // parameters in one, 9 in another): the site passing as many arguments as this unit's
    // kernel takes, in the unit's own file first.
    let named = |s: &&LaunchSite| s.kernel == u.kernel;
    let fits = |s: &&LaunchSite| s.args.len() == u.params.len();
    u.launch_sites
        .iter()
        .filter(named)
        .filter(fits)
        .min_by_key(|s| s.path != u.path)
        .or_else(|| u.launch_sites.iter().find(named))
        .or(u.launch_sites.first())
}

/// Translate one unit's launch into TOML lines (without the table header).
/// Returns the host variables the translated expressions use (they become sizes).
pub(super) fn draft_launch(u: &KernelUnit, sizes: &[String], out: &mut String) -> Vec<String> {
    let (launch, vars) = draft_launch_with(u, sizes, &mut BTreeMap::new());
    out.push_str(&launch.text());
    vars
}

/// One unit's launch as a table, and the host variables its translated expressions use
/// (they become sizes); the struct fields the launch reads (size name → host text) are
/// added to `members`.
pub(super) fn draft_launch_with(
    u: &KernelUnit,
    sizes: &[String],
    members: &mut BTreeMap<String, String>,
) -> (LaunchDraft, Vec<String>) {
    let Some(site) = site_for(u) else {
        return (LaunchDraft::without_site(&u.symbol), Vec::new());
    };
    let mut host_to_size = BTreeMap::new();
    for (a, p) in site.args.iter().zip(&u.params) {
        if sizes.contains(&p.name) {
            host_to_size.insert(a.trim().to_string(), p.name.clone());
        }
    }
    let names = Names {
        host_to_size,
        sizes,
        definitions: &site.definitions,
        host_vars: Default::default(),
        members: Default::default(),
        source: &u.source,
    };
    let mut used = Vec::new();
    // A templated launch (`reduceSum<BLOCK_SIZE><<<…>>>`) names its instance: integer
    // arguments become `{expr}` parts of the name expression, type arguments stay as written.
    let kernel = match site.template_args.as_deref() {
        None => Field::known(u.symbol.clone()),
        Some(ta) => {
            let inner = ta.trim().trim_start_matches('<').trim_end_matches('>');
            let parts: Result<Vec<String>, String> = host::template_arguments(ta)
                .ok_or_else(|| format!("cannot read the template arguments `{}`", ta.trim()))
                .and_then(|args| {
                    args.iter()
                        .map(|a| {
                            // Types and boolean literals (`prescan<true, false>`) stay as written.
                            if ElemType::from_c_type(a).is_some()
                                || matches!(a.trim(), "true" | "false")
                            {
                                return Ok(a.trim().to_string());
                            }
                            names.host_vars.borrow_mut().clear();
                            let e = translate(a, &names, 0)?;
                            if !names.host_vars.borrow().is_empty() {
                                return Err(format!("template argument {a} uses host variables"));
                            }
                            evaluates(&e, sizes)?;
                            // A constant folds to its value; one over sizes stays an expression.
                            Ok(match Scope::default().eval_int(&e) {
                                Ok(v) => v.to_string(),
                                Err(_) => format!("{{{e}}}"),
                            })
                        })
                        .collect()
                });
            match parts {
                Ok(p) => Field::known(format!("{}<{}>", u.kernel, p.join(", "))),
                Err(why) => Field::todo(format!("template instance {}<{inner}>: {why}", u.kernel)),
            }
        }
    };
    let from = format!(
        "{}:{}: <<<{}, {}{}>>>",
        site.path,
        site.line,
        site.grid,
        site.block,
        site.shared_mem
            .as_deref()
            .map(|s| format!(", {s}"))
            .unwrap_or_default()
    );
    let mut launch = LaunchDraft {
        kernel,
        args: None,
        from: Some(from),
        grid: Field::todo(""),
        block: Field::todo(""),
        shared_mem: None,
        todo: None,
    };
    for (key, text) in [
        ("grid", Some(&site.grid)),
        ("block", Some(&site.block)),
        ("shared_mem", site.shared_mem.as_ref()),
    ] {
        let Some(text) = text else { continue };
        names.host_vars.borrow_mut().clear();
        let dims = dims_of(text, &names);
        let mut known: Vec<String> = sizes.to_vec();
        known.extend(names.host_vars.borrow().iter().cloned());
        let f = match dims {
            Ok(d) if d.iter().all(|e| evaluates(e, &known).is_ok()) => {
                for v in names.host_vars.borrow().iter() {
                    if !used.contains(v) {
                        used.push(v.clone());
                    }
                }
                Field::known(d)
            }
            Ok(d) => {
                let why = d
                    .iter()
                    .find_map(|e| evaluates(e, &known).err())
                    .unwrap_or_default();
                Field::todo(format!("translated to {d:?}, which fails: {why}"))
            }
            Err(why) => Field::todo(format!("host text {}: {why}", toml_str(text))),
        };
        match key {
            "grid" => launch.grid = f,
            "block" => launch.block = f,
            _ => {
                launch.shared_mem = Some(match f {
                    Field::Known { value, .. } if value.len() == 1 => {
                        Field::known(value[0].clone())
                    }
                    Field::Known { .. } => {
                        Field::todo(format!("not one value: {}", toml_str(text)))
                    }
                    Field::Assumed { .. } | Field::Todo { .. } => f.map(|d| d.join(", ")),
                })
            }
        }
    }
    for (v, t) in names.members.borrow().iter() {
        if used.contains(v) {
            members.insert(v.clone(), t.clone());
        }
    }
    (launch, used)
}

/// A draft harness (TOML text) for a pair.
pub fn draft(pair: &Pair) -> String {
    let fast = &pair.fast;
    let sizes = int_scalars(fast);

    // Launches first: translating them finds the host variables that become sizes.
    let mut launches = String::new();
    let mut host_vars: Vec<String> = Vec::new();
    let mut note = |vars: Vec<String>| {
        for v in vars {
            if !host_vars.contains(&v) && !sizes.contains(&v) {
                host_vars.push(v);
            }
        }
    };
    let same_launch = match pair.slow.unit() {
        None => true,
        Some(s) => {
            let a = site_for(s).map(|x| (&x.grid, &x.block, &x.shared_mem, &x.definitions));
            let b = site_for(fast).map(|x| (&x.grid, &x.block, &x.shared_mem, &x.definitions));
            a == b && s.symbol == fast.symbol
        }
    };
    if let Some(slow) = pair.slow.unit() {
        let same_params = slow.params.len() == fast.params.len()
            && slow
                .params
                .iter()
                .zip(&fast.params)
                .all(|(a, b)| c_base_type(&a.ty) == c_base_type(&b.ty));
        if !same_params {
            launches.push_str("\n# TODO: the slow kernel's parameters differ from the fast one's: bind them with `args = [...]`\n");
        }
    }
    if same_launch {
        launches.push_str("\n[[launch]]\n");
        note(draft_launch(fast, &sizes, &mut launches));
    } else {
        if let Some(slow) = pair.slow.unit() {
            launches.push_str("\n[[variants.slow.launch]]\n");
            note(draft_launch(slow, &sizes, &mut launches));
        }
        launches.push_str("\n[[variants.fast.launch]]\n");
        note(draft_launch(fast, &sizes, &mut launches));
    }

    let mut o = String::new();
    writeln!(
        o,
        "# Draft harness for pair {} ({}/{}, kernel {}).\n# Written by `kernelpair harness draft`: complete every TODO (they fail `harness check` on\n# purpose), check each guess, then run `kernelpair harness check FILE --units … --pair {}`.",
        pair.id, pair.suite, pair.benchmark, fast.kernel, pair.id
    )
    .expect("string");
    writeln!(
        o,
        "description = {}",
        toml_str(&format!("{} {}", pair.benchmark, fast.kernel))
    )
    .expect("string");
    o.push_str("\n[sizes]\n");
    if sizes.is_empty() && host_vars.is_empty() {
        o.push_str("# TODO: no integer parameters to guess sizes from; name the sizes the lengths use\nn = 1024\n");
    }
    for s in &sizes {
        writeln!(o, "{s} = 1024  # guessed from the kernel's `{s}` parameter").expect("string");
    }
    for v in &host_vars {
        writeln!(
            o,
            "{v} = 1024  # guessed: host variable `{}` in the launch configuration",
            v.replacen(
                '_',
                ".",
                usize::from(v.ends_with("_x") || v.ends_with("_y") || v.ends_with("_z"))
            )
        )
        .expect("string");
    }
    o.push_str("# Add [[size_sets]] with an irregular (non-power-of-two) set where the kernel allows it.\n");

    for (i, p) in fast.params.iter().enumerate() {
        begin_arg(&mut o, i, p);
        let elem = ElemType::from_c_type(&p.ty);
        let base = c_base_type(&p.ty);
        match elem {
            Some(e) => writeln!(o, "type = {}", toml_str(e.name())).expect("string"),
            None => writeln!(
                o,
                "type = \"TODO\"  # `{}` is not an element type: pick the scalar type and add c_type = {}",
                p.ty,
                toml_str(&base)
            )
            .expect("string"),
        }
        if c_is_pointer(&p.ty) {
            writeln!(o, "len = \"TODO\"  # elements behind `{} {}`", p.ty, p.name).expect("string");
            let init = match elem {
                Some(e) if e.is_float() => "{ kind = \"uniform\", lo = -1.0, hi = 1.0 }",
                _ => {
                    "{ kind = \"int_range\", lo = 0, hi = 100 }  # TODO: check the range (indices?)"
                }
            };
            writeln!(o, "init = {init}").expect("string");
            let is_const = p.ty.split_whitespace().any(|w| w == "const");
            if is_const {
                o.push_str("role = \"in\"\n");
            } else {
                o.push_str(
                    "role = \"TODO\"  # in, out or inout: the kernel may write through it\n",
                );
            }
        } else if sizes.contains(&p.name) {
            writeln!(o, "value = {}", toml_str(&p.name)).expect("string");
        } else {
            writeln!(o, "value = \"TODO\"  # a value for `{} {}`", p.ty, p.name).expect("string");
        }
    }
    o.push_str(&launches);
    o
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::tests::unit;
    use crate::record::{PairRule, Slow};

    fn names<'a>(
        sizes: &'a [String],
        defs: &'a BTreeMap<String, String>,
        host: &[(&str, &str)],
    ) -> Names<'a> {
        Names {
            host_to_size: host
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            sizes,
            definitions: defs,
            host_vars: Default::default(),
            members: Default::default(),
            source: "#define FROM_UNIT 8\n",
        }
    }

    #[test]
    fn a_host_name_equal_to_a_size_passed_another_text_is_the_host_variable() {
        // cuda-samples scan: `scanExclusiveShared2<<<iDivUp(B * arrayLength / 1024, 256),
        // 256>>>(…, arrayLength / 1024)`: the kernel's `arrayLength` is the host's divided
        // by 1024, so the grid's `arrayLength` is the host variable, read from its definition.
        let sizes = vec!["arrayLength".to_string()];
        let mut defs = BTreeMap::new();
        defs.insert("arrayLength".into(), "arrayLength = 2048".into());
        let nm = names(&sizes, &defs, &[("arrayLength / 1024", "arrayLength")]);
        assert_eq!(translate("arrayLength * 4", &nm, 0).unwrap(), "2048 * 4");
        // Passed under its own name, it is the size.
        let nm = names(&sizes, &defs, &[("arrayLength", "arrayLength")]);
        assert_eq!(
            translate("arrayLength * 4", &nm, 0).unwrap(),
            "arrayLength * 4"
        );
    }

    #[test]
    fn struct_fields_become_host_variables_named_after_their_path() {
        let sizes = vec!["n".to_string()];
        let mut defs = BTreeMap::new();
        // sad: the image comes from a call; its fields are read at the launch.
        defs.insert("ref_image".into(), "ref_image = load_image(argv[1])".into());
        let nm = names(&sizes, &defs, &[]);
        assert_eq!(
            dims_of("dim3(ref_image->width / 4, img.dim.h)", &nm).unwrap(),
            ["ref_image_width / 4", "img_dim_h"]
        );
        let m = nm.members.borrow();
        assert_eq!(
            m.get("ref_image_width").map(String::as_str),
            Some("ref_image->width")
        );
        assert_eq!(m.get("img_dim_h").map(String::as_str), Some("img.dim.h"));
        assert!(nm.host_vars.borrow().contains("img_dim_h"));
        // A method call is not a field.
        assert!(dims_of("v.size()", &nm).is_err());
    }

    #[test]
    fn definitions_are_read_from_their_parse() {
        let c = |n: &str, d: &str| definition_components(n, d).unwrap();
        // A `//` joined into a one-line definition ended a source line.
        let joined = "CUDA_ERRCK // Setup the execution configuration dim3 grid(block_num)";
        assert_eq!(c("grid", joined), ["block_num"]);
        assert_eq!(
            c("t", "dim3 t, b; t = dim3(512, 1); t = dim3(256)"),
            ["512", "1"]
        );
        assert_eq!(c("g", "dim3 g; g.x = n; g.y = 2"), ["n", "2"]);
        assert_eq!(c("g", "int M = 1024, g = 4, K = 2"), ["4"]);
        // A name assigned again reads on, and does not translate; a cut-off `=` is empty.
        assert_eq!(c("n", "int n = 1; n = m"), ["1; n = m"]);
        assert_eq!(c("b", "dim3 b ="), [""]);
        assert!(definition_components("r", "unsigned int r[2] =").is_err());
        assert!(declares("dim3 g(a), t(b)", "t"));
        assert!(declares("dim3 v; v.y = 2", "v"));
        assert!(declares("#define B 4", "B"));
        assert!(!declares("f(v.y == 2, v)", "v"));
    }

    #[test]
    fn translates_common_launch_arithmetic() {
        let sizes = vec!["n".to_string(), "m".to_string()];
        let mut defs = BTreeMap::new();
        defs.insert("BLOCK".into(), "#define BLOCK 256".into());
        defs.insert("grid".into(), "dim3 grid(ceil(numElements/256.0))".into());
        defs.insert(
            "g2".into(),
            "dim3 g2( m/TILE_M, n/TILE_N ), threads( TILE_N, 4 )".into(),
        );
        defs.insert(
            "threads".into(),
            "dim3 g2( m/TILE_M, n/TILE_N ), threads( TILE_N, 4 )".into(),
        );
        defs.insert("TILE_M".into(), "#define TILE_M 64".into());
        defs.insert("TILE_N".into(), "#define TILE_N 16".into());
        defs.insert(
            "blocks".into(),
            "int blocks = (numElements + BLOCK - 1) / BLOCK;".into(),
        );
        let nm = names(&sizes, &defs, &[("numElements", "n")]);
        assert_eq!(dims_of("grid", &nm).unwrap(), ["ceil_div(n, 256)"]);
        assert_eq!(dims_of("g2", &nm).unwrap(), ["m / 64", "n / 16"]);
        assert_eq!(dims_of("threads", &nm).unwrap(), ["16", "4"]);
        assert_eq!(dims_of("blocks", &nm).unwrap(), ["(n + 256 - 1) / 256"]);
        assert_eq!(
            dims_of("dim3(iDivUp(n, 32), 4)", &nm).unwrap(),
            ["ceil_div(n, 32)", "4"]
        );
        assert_eq!(
            dims_of("(unsigned int)ceil((float)m / BLOCK)", &nm).unwrap(),
            ["ceil_div(m, 256)"]
        );
        for e in dims_of("g2", &nm).unwrap() {
            evaluates(&e, &sizes).unwrap();
        }
        assert!(dims_of("grid_of(n)", &nm)
            .unwrap_err()
            .contains("unknown function"));
        // An unknown name is a host variable: it becomes a (guessed) size.
        assert_eq!(dims_of("nblocks", &nm).unwrap(), ["nblocks"]);
        assert!(nm.host_vars.borrow().contains("nblocks"));
        // Macros the unit pulled in, member assignments, sizeof.
        assert_eq!(dims_of("FROM_UNIT", &nm).unwrap(), ["8"]);
        defs.insert(
            "Gsz".into(),
            "Gsz.x = numElements / FROM_UNIT; Gsz.y = vol.y;".into(),
        );
        let nm = names(&sizes, &defs, &[("numElements", "n")]);
        assert_eq!(dims_of("Gsz", &nm).unwrap(), ["n / 8", "vol_y"]);
        assert!(nm.host_vars.borrow().contains("vol_y"));
        assert_eq!(dims_of("BLOCK * sizeof(float2)", &nm).unwrap(), ["256 * 8"]);
        assert!(dims_of("grid_of(n)", &nm)
            .unwrap_err()
            .contains("unknown function"));
        assert!(dims_of("n / 2.5", &nm).unwrap_err().contains("non-integer"));
        // Zero-initialized host variables are filled later; device properties by name.
        defs.insert("sms".into(), "int sms = 0".into());
        defs.insert("nb".into(), "int nb = 0".into());
        let nm = names(&sizes, &defs, &[]);
        assert_eq!(dims_of("sms * 8", &nm).unwrap(), ["sm_count * 8"]);
        assert_eq!(dims_of("nb", &nm).unwrap(), ["nb"]);
        assert!(nm.host_vars.borrow().contains("nb"));
        assert_eq!(
            dims_of("prop.multiProcessorCount * prop.warpSize", &nm).unwrap(),
            ["sm_count * warp_size"]
        );
        defs.insert("g3".into(), "unsigned int g3".into());
        let nm = names(&sizes, &defs, &[]);
        assert!(dims_of("g3", &nm)
            .unwrap_err()
            .contains("cannot read the definition"));
    }

    #[test]
    fn the_printer_keeps_parentheses_and_drops_casts_and_comments() {
        let sizes = vec!["n".to_string()];
        let mut defs = BTreeMap::new();
        defs.insert("size".into(), "#define size 4".into());
        let nm = names(&sizes, &defs, &[("len", "n")]);
        let t = |s: &str| translate(s, &nm, 0);
        // The source's grouping stays, each operator between single spaces.
        assert_eq!(t("((n+1))*-2").unwrap(), "((n + 1)) * - 2");
        assert_eq!(t("n>>1 ? !n : (n)").unwrap(), "n >> 1 ? ! n : (n)");
        // Casts of every form go; a comment is no part of the expression.
        assert_eq!(t("(uint64_t)n * (IdxType)(n) // bytes").unwrap(), "n * (n)");
        assert_eq!(t("(float *)n + (unsigned int)0x10").unwrap(), "n + 16");
        // A ceil of a division through parentheses and casts; other ceils stay as they are.
        assert_eq!(t("ceil(((float)n / 2))").unwrap(), "ceil_div(n, 2)");
        assert_eq!(t("ceil(n - n / 2.0)").unwrap(), "n - n / 2");
        // A qualified name is its own part (a static member); `std::` functions map.
        assert_eq!(t("std::max(x128::size, n)").unwrap(), "max(4, n)");
        assert_eq!(t("").unwrap(), "");
        assert!(t("n % 2.5f").unwrap_err().contains("non-integer"));
        assert_eq!(t("a[0]").unwrap_err(), "cannot read '[' in `a[0]`");
        // A size's field is none the harness knows; a method call is no field.
        assert_eq!(t("len.w").unwrap_err(), "member access");
        assert_eq!(t("v.size() / len").unwrap_err(), "member access");
    }

    fn pair_with(slow_site: Option<LaunchSite>, fast_site: LaunchSite) -> Pair {
        let params: &[(&str, &str)] = &[
            ("float *", "out"),
            ("const float *", "in"),
            ("int", "n"),
            ("float", "scale"),
        ];
        let mut fast = unit("scale", params);
        fast.launch_sites = vec![fast_site];
        let slow = slow_site.map(|s| {
            let mut u = unit("scale", params);
            u.id = "slow".into();
            u.launch_sites = vec![s];
            u
        });
        Pair {
            id: "abc123".into(),
            suite: "fixture".into(),
            benchmark: "scale".into(),
            ..Pair::new(
                slow.map_or(Slow::PENDING, Slow::natural),
                fast,
                PairRule::Name,
            )
        }
    }

    fn site(grid: &str, block: &str, defs: &[(&str, &str)]) -> LaunchSite {
        LaunchSite {
            path: "b/main.cu".into(),
            line: 40,
            kernel: "scale".into(),
            grid: grid.into(),
            block: block.into(),
            shared_mem: None,
            stream: None,
            args: vec!["d_out".into(), "d_in".into(), "len".into(), "2.0f".into()],
            template_args: None,
            definitions: defs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        }
    }

    #[test]
    fn the_launch_site_passing_the_kernels_arguments_wins() {
        let mut u = crate::harness::tests::unit(
            "scale",
            &[
                ("float *", "o"),
                ("float *", "i"),
                ("int", "n"),
                ("float", "a"),
            ],
        );
        u.path = "b/mine.cu".into();
        let mut short = site("g", "b", &[]);
        short.args.truncate(2);
        let mut other = site("g2", "b", &[]);
        other.path = "b/other.cu".into();
        let mut own = site("g3", "b", &[]);
        own.path = "b/mine.cu".into();
        u.launch_sites = vec![short.clone(), other.clone(), own];
        assert_eq!(site_for(&u).map(|s| s.grid.as_str()), Some("g3"));
        u.launch_sites = vec![short.clone(), other];
        assert_eq!(site_for(&u).map(|s| s.grid.as_str()), Some("g2"));
        u.launch_sites = vec![short];
        assert_eq!(site_for(&u).map(|s| s.grid.as_str()), Some("g"));
    }

    #[test]
    fn templated_launches_name_their_instance() {
        let mut s = site(
            "grid",
            "BLOCK",
            &[
                ("BLOCK", "#define BLOCK 128"),
                ("grid", "dim3 grid(len / BLOCK)"),
            ],
        );
        s.template_args = Some("<BLOCK * 2, float>".into());
        let text = draft(&pair_with(None, s.clone()));
        assert!(text.contains("kernel = \"scale<256, float>\""), "{text}");
        s.template_args = Some("<true, false>".into());
        let text = draft(&pair_with(None, s.clone()));
        assert!(text.contains("kernel = \"scale<true, false>\""), "{text}");
        s.template_args = Some("<len>".into());
        let text = draft(&pair_with(None, s.clone()));
        assert!(text.contains("kernel = \"scale<{n}>\""), "{text}");
        s.template_args = Some("<true, false>".into());
        let text = draft(&pair_with(None, s.clone()));
        assert!(text.contains("kernel = \"scale<true, false>\""), "{text}");
        s.template_args = Some("<Unknown>".into());
        let text = draft(&pair_with(None, s));
        assert!(
            text.contains("kernel = \"TODO\"  # template instance scale<Unknown>"),
            "{text}"
        );
    }

    #[test]
    fn draft_fills_what_it_knows_and_marks_the_rest() {
        let p = pair_with(
            None,
            site("grid", "256", &[("grid", "dim3 grid(ceil(len/256.0))")]),
        );
        let text = draft(&p);
        assert!(text.contains("n = 1024"), "{text}");
        assert!(text.contains("grid = [\"ceil_div(n, 256)\"]"), "{text}");
        assert!(text.contains("block = [\"256\"]"), "{text}");
        assert!(text.contains("role = \"in\""), "{text}");
        assert!(text.contains("value = \"n\""), "{text}");
        // It is valid TOML, and check fails on a TODO until completed.
        let e = crate::harness::parse(&text, "d.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("TODO"), "{e}");
        let done = text
            .replace("len = \"TODO\"", "len = \"n\"")
            .replace("role = \"TODO\"", "role = \"out\"")
            .replace("value = \"TODO\"", "value = 2.0");
        let h = crate::harness::parse(&done, "d.toml").unwrap();
        h.check_against(None, &p.fast).unwrap();
    }

    #[test]
    fn differing_launches_give_two_variants_and_untranslatable_text_is_todo() {
        let p = pair_with(
            Some(site("len", "1", &[])),
            site(
                "blocks",
                "make_block(len)",
                &[("blocks", "unsigned int blocks")],
            ),
        );
        let text = draft(&p);
        assert!(
            text.contains("[[variants.slow.launch]]") && text.contains("[[variants.fast.launch]]"),
            "{text}"
        );
        assert!(text.contains("grid = [\"n\"]"), "{text}");
        assert!(
            text.contains("grid = \"TODO\"  # host text \"blocks\": cannot read the definition"),
            "{text}"
        );
        assert!(text.contains("block = \"TODO\""), "{text}");
        let e = crate::harness::parse(&text, "d.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains("TODO"), "{e}");
    }
}
