//! Indexing one file: every top-level declaration with the names it defines, the free
//! names it uses and the `#if` branch it sits in; kernels, includes and launch sites.

use super::builtins;
use super::lex::{self, Lines, PieceKind};
use super::ppcond;
use super::queries;
use super::tree::parse;
use super::{FileData, FileIndex, Include, KernelInfo};
use crate::record::{Diagnostic, LaunchSite, Level, Param};
use regex::Regex;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::LazyLock;
use tree_sitter::Node;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ItemKind {
    Kernel,
    /// A function definition that is not a kernel (`__device__`, `__host__ __device__`,
    /// or unannotated: NVRTC's `-default-device` compiles those for the device).
    Function,
    /// A function declaration without a body.
    Prototype,
    Global,
    /// A legacy `texture<…>` reference.
    Texture,
    Type,
    Macro,
}

/// One `#if` branch an item sits in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CondBranch {
    /// Unique per file: which `#if … #endif` group.
    pub frame: u32,
    /// Which branch of it (0 for the `#if`, then one per `#elif`/`#else`).
    pub branch: u32,
    /// The condition under which this branch is taken, e.g. `!(defined(A)) && (B > 2)`.
    pub expr: String,
}

#[derive(Debug, Clone)]
pub(crate) struct Item {
    pub kind: ItemKind,
    pub names: Vec<String>,
    /// Text to emit into a unit (comments inside are kept; a macro's are dropped).
    pub text: String,
    pub offset: usize,
    pub line: u32,
    /// Free identifiers the item uses, first occurrence line, in order.
    pub refs: Vec<(String, u32)>,
    /// Identifiers of the enclosing `#if` conditions (macros, maybe defined nowhere).
    pub cond_refs: Vec<String>,
    /// Names the item declares itself and then calls (`u(0, ind)` with a parameter `u`;
    /// an enumerator `LOG_WARP_THREADS = LOG_WARP_THREADS(0)`),
    /// with the line of the first call. The preprocessor expands a function-like macro of
    /// that name before the compiler sees the declaration (HeCBench's lid-driven-cavity:
    /// `#define u(I, J) u[(I) * (NUM + 2) + (J)]`), so isolation takes such a macro for
    /// them, and nothing else (a functor or lambda of the name stays the local it is).
    pub macro_calls: Vec<(String, u32)>,
    pub cond: Vec<CondBranch>,
    /// Has `__device__` or `__global__`.
    pub device: bool,
    /// For functions: length of the text before the body (the signature).
    pub header_len: Option<usize>,
    /// Line of the first parse error inside the item, when tree-sitter needed help.
    pub error_line: Option<u32>,
    /// For `operator+` and friends: the types of their parameters. Operators are
    /// called without their name, so a unit takes the ones whose types it uses.
    pub operator_types: Vec<String>,
    /// Constructs NVRTC rejects (code, message, line).
    pub notes: Vec<(&'static str, String, u32)>,
    /// A host function indexed by name only: its references are worked out (see
    /// [`lazy_refs`]) only if a kernel ever uses it, which keeps indexing of host-heavy
    /// files cheap.
    pub lazy: bool,
    /// The item as the suite wrote it, when indexing rewrote `text` for NVRTC (C99
    /// compound literals); isolation records the difference so export can undo it.
    pub written: Option<String>,
    /// The named namespaces it is declared in (`a::b`), empty at file scope.
    pub namespace: String,
}

struct Frame {
    id: u32,
    /// 0 for the `#if` branch, then one more per `#elif`/`#else`.
    branch: u32,
    exprs: Vec<String>,
    /// The current branch's condition: `None` when dead, `Some("")` when always true.
    current: Option<String>,
    guard: bool,
    /// No item seen since this frame opened, or since its guard's define (for include-guard
    /// detection).
    fresh: bool,
    /// `#ifndef X` / `#if !defined(X)`: the X, for guard detection.
    guard_candidate: Option<String>,
    /// The guard's `#define` (its text, offset and line) while the frame is a guard: a
    /// guard frame that closes still `fresh` (nothing after that define) was a default
    /// value (`#ifndef LIMIT` / `#define LIMIT 1` / `#endif`), not an include guard.
    guard_define: Option<(String, usize, u32)>,
}

static INCLUDE_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#"^\s*#\s*include\s*([<"])([^>"]+)[>"]"#).expect("valid regex"));
static DEFINE_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*#\s*define\s+([A-Za-z_]\w*)(\([^)]*\))?(.*)$").expect("valid regex")
});

/// The quoted `#include "…"` targets of a text, as written, in order (system headers left
/// out): a cheap reading for callers that need only a file's local includes.
pub fn local_includes(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| INCLUDE_RE.captures(l))
        .filter(|c| &c[1] == "\"")
        .map(|c| c[2].trim().to_string())
        .collect()
}

pub(crate) fn index_file(rel_path: &str, text: &str) -> FileIndex {
    let masked = lex::mask(text);
    let cmask = lex::mask_comments(text);
    let lines = Lines::new(text);
    let pieces = lex::split_top_level(&masked, text);
    let mut idx = FileData {
        path: rel_path.to_string(),
        kernels: Vec::new(),
        kernel_items: Vec::new(),
        items: Vec::new(),
        by_name: HashMap::new(),
        launch_sites: Vec::new(),
        diagnostics: Vec::new(),
        includes: Vec::new(),
        include_conds: Vec::new(),
        operators: Vec::new(),
        using_namespaces: Vec::new(),
    };
    let mut frames: Vec<Frame> = Vec::new();
    let mut next_frame = 0u32;
    let mut host_chunks: Vec<(usize, usize)> = Vec::new();

    for piece in pieces {
        let raw = &text[piece.start..piece.end];
        let line = lines.line(piece.start);
        match piece.kind {
            PieceKind::Directive => {
                let ctext = cmask[piece.start..piece.end]
                    .replace("\r\n", "\n")
                    .replace("\\\n", " ");
                directive(
                    &mut idx,
                    &mut frames,
                    &mut next_frame,
                    raw,
                    &ctext,
                    piece.start,
                    line,
                );
            }
            PieceKind::Chunk => {
                if dead(&frames) {
                    continue;
                }
                mark_not_fresh(&mut frames);
                if let Some(ns) = using_namespace(&masked[piece.start..piece.end]) {
                    if piece.namespace.is_empty() && !idx.using_namespaces.contains(&ns) {
                        idx.using_namespaces.push(ns);
                    }
                }
                let before = idx.items.len();
                let at = Span {
                    text,
                    masked: &masked,
                    lines: &lines,
                    start: piece.start,
                    end: piece.end,
                };
                index_chunk(&mut idx, at, &frames);
                for it in &mut idx.items[before..] {
                    it.namespace.clone_from(&piece.namespace);
                }
                let host = idx.items[before..]
                    .iter()
                    .all(|i| i.kind != ItemKind::Kernel)
                    && has_launch_opener(&masked[piece.start..piece.end]);
                if host {
                    host_chunks.push((piece.start, piece.end));
                }
            }
        }
    }
    for (start, end) in host_chunks {
        let at = Span {
            text,
            masked: &masked,
            lines: &lines,
            start,
            end,
        };
        find_launches(&mut idx, at);
    }
    FileIndex(std::sync::Arc::new(idx))
}

/// `using namespace a::b;` → `a::b`.
fn using_namespace(chunk: &str) -> Option<String> {
    let rest = chunk
        .trim()
        .strip_prefix("using")?
        .trim_start()
        .strip_prefix("namespace")?;
    let name = rest.trim().strip_suffix(';')?.trim();
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || c == '_' || c == ':'))
    .then(|| name.to_string())
}

/// One preprocessor directive: conditionals move the frame stack; a live `#define` becomes a
/// macro item (unless it is an include guard's), a live `#include` an include.
fn directive(
    idx: &mut FileData,
    frames: &mut Vec<Frame>,
    next_frame: &mut u32,
    raw: &str,
    ctext: &str,
    start: usize,
    line: u32,
) {
    let word = lex::directive_word(ctext).to_string();
    let rest = ctext
        .trim_start()
        .trim_start_matches('#')
        .trim_start()
        .strip_prefix(word.as_str())
        .unwrap_or("")
        .trim()
        .to_string();
    match word.as_str() {
        "if" | "ifdef" | "ifndef" => {
            let (expr, guard_candidate) = match word.as_str() {
                "ifdef" => (format!("defined({rest})"), None),
                "ifndef" => (format!("!defined({rest})"), Some(rest.clone())),
                _ => {
                    let gc = GUARD_IF_RE.captures(&rest).map(|c| c[1].to_string());
                    (rest.clone(), gc)
                }
            };
            let mut f = Frame {
                id: *next_frame,
                branch: 0,
                exprs: vec![expr],
                current: None,
                guard: false,
                fresh: true,
                guard_candidate,
                guard_define: None,
            };
            *next_frame += 1;
            f.current = branch_condition(&f.exprs, false);
            frames.push(f);
        }
        "elif" | "else" => {
            if let Some(f) = frames.last_mut() {
                f.branch += 1;
                if word == "elif" {
                    f.exprs.push(rest.clone());
                    f.current = branch_condition(&f.exprs, false);
                } else {
                    f.current = branch_condition(&f.exprs, true);
                    // `#else` of an include guard: no longer a guard.
                    f.guard = false;
                }
                f.fresh = false;
            }
        }
        "endif" => {
            // `#ifndef X` / `#define X 1` / `#endif` with more after it: a default value the
            // code tests (`#if X`), kept as a macro under `!defined(X)`, not a guard.
            let default_value = frames
                .last_mut()
                .filter(|f| f.guard && f.fresh)
                .and_then(|f| {
                    f.guard = false;
                    f.guard_define.take()
                });
            if let Some((text, at, at_line)) = default_value {
                if let Some(item) = macro_item(&text, frames, at, at_line) {
                    push_item(idx, item, frames);
                }
            }
            frames.pop();
        }
        "define" => {
            if dead(frames) {
                return;
            }
            match macro_item(ctext, frames, start, line) {
                Some(item) => push_item(idx, item, frames),
                None => {
                    if let Some(f) = frames.last_mut().filter(|f| f.guard) {
                        f.guard_define = Some((ctext.to_string(), start, line));
                    }
                }
            }
        }
        "include" => {
            if dead(frames) {
                return;
            }
            mark_not_fresh(frames);
            if let Some(c) = INCLUDE_RE.captures(raw) {
                idx.includes.push(Include {
                    target: c[2].trim().to_string(),
                    system: &c[1] == "<",
                    line,
                });
                idx.include_conds.push(cond_of(frames));
            }
        }
        _ => {}
    }
}

/// A `#define` as a macro item with the names its body uses; `None` for an include
/// guard's define (`#ifndef X_H` then `#define X_H`, or `X_H 1`), which marks the guard.
fn macro_item(ctext: &str, frames: &mut [Frame], start: usize, line: u32) -> Option<Item> {
    let c = DEFINE_RE.captures(ctext)?;
    let name = c[1].to_string();
    let value = c.get(3).map(|m| m.as_str().trim()).unwrap_or("");
    if let Some(f) = frames.last_mut() {
        if f.fresh
            && f.guard_candidate.as_deref() == Some(name.as_str())
            && (value.is_empty() || value == "1")
        {
            // Still fresh: nothing since the guard's define (see `guard_define`).
            f.guard = true;
            f.guard_candidate = None;
            return None;
        }
    }
    mark_not_fresh(frames);
    let params: HashSet<&str> = c
        .get(2)
        .map(|m| {
            m.as_str()
                .trim_matches(|c| c == '(' || c == ')')
                .split(',')
                .map(str::trim)
                .collect()
        })
        .unwrap_or_default();
    let body_masked = lex::mask(value);
    let refs = lex::idents(&body_masked)
        .into_iter()
        .filter(|i| {
            !i.member
                && !builtins::is_keyword(i.text)
                && !params.contains(i.text)
                && i.text != "__VA_ARGS__"
                && i.text != name
        })
        .map(|i| (i.text.to_string(), line))
        .collect();
    let text = ctext.trim_end();
    let (body, notes) = rewrite_macro_body(value, line);
    let written = (body != value).then(|| text.to_string());
    let text = match &written {
        Some(_) => {
            let at = c.get(3).expect("a rewritten body").start()
                + (c[3].len() - c[3].trim_start().len());
            format!("{}{}", &ctext[..at], body)
        }
        None => text.to_string(),
    };
    Some(Item {
        kind: ItemKind::Macro,
        names: vec![name],
        text,
        offset: start,
        line,
        refs: dedup(refs),
        cond_refs: Vec::new(),
        macro_calls: Vec::new(),
        cond: Vec::new(),
        device: false,
        header_len: None,
        error_line: None,
        operator_types: Vec::new(),
        notes,
        lazy: false,
        written,
        namespace: String::new(),
    })
}

static GUARD_IF_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^!\s*defined\s*\(?\s*([A-Za-z_]\w*)\s*\)?$").expect("valid regex")
});

fn dead(frames: &[Frame]) -> bool {
    frames.iter().any(|f| f.current.is_none())
}

fn mark_not_fresh(frames: &mut [Frame]) {
    for f in frames {
        f.fresh = false;
    }
}

/// The condition of the last branch of `exprs` (or of the `#else` after them):
/// `None` when the branch can never be taken, `Some("")` when it always is.
fn branch_condition(exprs: &[String], is_else: bool) -> Option<String> {
    fn lit(e: &str) -> Option<bool> {
        match e.trim() {
            "0" => Some(false),
            "1" => Some(true),
            _ => None,
        }
    }
    let (prior, own) = if is_else {
        (exprs, None)
    } else {
        (&exprs[..exprs.len() - 1], exprs.last())
    };
    let mut parts = Vec::new();
    for p in prior {
        match lit(p) {
            Some(true) => return None,
            Some(false) => {}
            None => parts.push(format!("!({})", p.trim())),
        }
    }
    if let Some(o) = own {
        match lit(o) {
            Some(false) => return None,
            Some(true) => {}
            None => parts.push(format!("({})", o.trim())),
        }
    }
    Some(parts.join(" && "))
}

fn cond_of(frames: &[Frame]) -> Vec<CondBranch> {
    frames
        .iter()
        .filter(|f| !f.guard)
        .filter_map(|f| {
            let expr = f.current.as_ref()?;
            (!expr.is_empty()).then(|| CondBranch {
                frame: f.id,
                branch: f.branch,
                expr: expr.clone(),
            })
        })
        .collect()
}

fn push_item(idx: &mut FileData, mut item: Item, frames: &[Frame]) {
    item.cond = cond_of(frames);
    let mut crefs = Vec::new();
    for c in &item.cond {
        let m = lex::mask(&c.expr);
        for i in lex::idents(&m) {
            if !i.member && !builtins::is_keyword(i.text) && !crefs.iter().any(|r| r == i.text) {
                crefs.push(i.text.to_string());
            }
        }
    }
    item.cond_refs = crefs;
    let id = idx.items.len();
    if !item.operator_types.is_empty() {
        idx.operators.push(id);
    }
    for n in &item.names {
        idx.by_name.entry(n.clone()).or_default().push(id);
    }
    idx.items.push(item);
}

fn dedup(v: Vec<(String, u32)>) -> Vec<(String, u32)> {
    let mut seen = HashSet::new();
    v.into_iter()
        .filter(|(n, _)| seen.insert(n.clone()))
        .collect()
}

/// Text of a node.
fn t<'a>(n: Node, src: &'a str) -> &'a str {
    &src[n.byte_range()]
}

/// Identifiers a declarator introduces (`*a[3] = …` → `a`).
/// The name of a parameter whose declaration the grammar could not read whole: the last
/// identifier of its text up to where the error after it ends. None for a parameter that
/// parsed, or any other declarator.
fn unparsed_parameter_name<'a>(declarator: Node, mchunk: &'a str) -> Option<&'a str> {
    let p = declarator.parent()?;
    if !p.kind().ends_with("parameter_declaration") {
        return None;
    }
    let after = p.next_sibling().filter(|s| s.is_error());
    if !p.has_error() && after.is_none() {
        return None;
    }
    let end = after.map_or(p.end_byte(), |s| s.end_byte());
    let text = mchunk.get(p.start_byte()..end)?;
    lex::idents(text).last().map(|i| i.text)
}

fn declarator_names<'a>(n: Node, src: &'a str, out: &mut Vec<&'a str>) {
    match n.kind() {
        "identifier" | "field_identifier" | "type_identifier" | "statement_identifier" => {
            out.push(t(n, src))
        }
        "qualified_identifier" | "operator_name" | "destructor_name" | "template_function" => {}
        "struct_specifier" | "class_specifier" | "union_specifier" | "enum_specifier" => {
            if let Some(nm) = n.child_by_field_name("name") {
                declarator_names(nm, src, out);
            }
        }
        "structured_binding_declarator" => {
            let mut c = n.walk();
            for ch in n.named_children(&mut c) {
                declarator_names(ch, src, out);
            }
        }
        _ => {
            if let Some(d) = n.child_by_field_name("declarator") {
                declarator_names(d, src, out);
            } else if n.kind().ends_with("declarator") {
                let mut c = n.walk();
                for ch in n.named_children(&mut c) {
                    declarator_names(ch, src, out);
                }
            }
        }
    }
}

/// The function declarator inside a declarator chain (`*f(int)` → `f(int)`).
pub(crate) fn function_declarator(n: Node) -> Option<Node> {
    let mut cur = n;
    loop {
        if cur.kind() == "function_declarator" {
            return Some(cur);
        }
        cur = cur.child_by_field_name("declarator").or_else(|| {
            if cur.kind().ends_with("declarator") {
                cur.named_child(cur.named_child_count().checked_sub(1)?)
            } else {
                None
            }
        })?;
    }
}

fn first_error(n: Node) -> Option<Node> {
    if n.is_error() || n.is_missing() {
        return Some(n);
    }
    if !n.has_error() {
        return None;
    }
    let mut c = n.walk();
    let children: Vec<Node> = n.children(&mut c).collect();
    children.into_iter().find_map(first_error)
}

/// Normalize a type: single spaces between words, `*`/`&` runs kept together.
pub(crate) fn normalize_type(s: &str) -> String {
    let mut out = String::new();
    let mut prev_ptr = false;
    for tok in tokens_for_type(s) {
        let is_ptr = tok.chars().all(|c| c == '*' || c == '&');
        let glue = matches!(tok.as_str(), "]" | "," | ">" | ")")
            || out.ends_with(['[', '(', '<'])
            || (is_ptr && prev_ptr);
        if !out.is_empty() && !glue {
            out.push(' ');
        }
        out.push_str(&tok);
        prev_ptr = is_ptr;
    }
    out
}

fn tokens_for_type(s: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        if c.is_alphanumeric() || c == '_' || c == ':' {
            cur.push(c);
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            if !c.is_whitespace() {
                out.push(c.to_string());
            }
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

pub(crate) fn params_from_list(list: Node, src: &str) -> Vec<Param> {
    let mut out = Vec::new();
    let mut c = list.walk();
    for p in list.named_children(&mut c) {
        if !p.kind().contains("parameter_declaration") {
            continue;
        }
        let mut names = Vec::new();
        if let Some(d) = p.child_by_field_name("declarator") {
            declarator_names(d, src, &mut names);
        }
        let text = t(p, src);
        let ty = match names.first() {
            Some(n) => {
                // Remove the last occurrence of the name (the declarator's identifier).
                let d = p.child_by_field_name("declarator").expect("has declarator");
                let rel = find_ident_in(d, src, n)
                    .map(|r| (r.start - p.start_byte(), r.end - p.start_byte()));
                match rel {
                    Some((s, e)) => format!("{}{}", &text[..s], &text[e..]),
                    None => text.to_string(),
                }
            }
            None => text.to_string(),
        };
        // Drop a default argument.
        let ty = match ty.find('=') {
            Some(i) if p.kind() == "optional_parameter_declaration" => ty[..i].to_string(),
            _ => ty,
        };
        // An `#ifdef` line inside the list belongs to no parameter.
        let ty: String = ty
            .lines()
            .filter(|l| !l.trim_start().starts_with('#'))
            .collect::<Vec<_>>()
            .join(" ");
        let ty = normalize_type(&ty);
        if ty == "void" && names.is_empty() {
            continue;
        }
        out.push(Param {
            name: names.first().map(|s| s.to_string()).unwrap_or_default(),
            ty,
        });
    }
    out
}

fn find_ident_in(n: Node, src: &str, name: &str) -> Option<std::ops::Range<usize>> {
    if matches!(n.kind(), "identifier" | "field_identifier") && t(n, src) == name {
        return Some(n.byte_range());
    }
    let mut c = n.walk();
    let kids: Vec<Node> = n.named_children(&mut c).collect();
    kids.into_iter().find_map(|k| find_ident_in(k, src, name))
}

/// Parameters from the text of a parameter list when tree-sitter could not parse it.
pub(crate) fn params_from_text(inner: &str) -> Vec<Param> {
    let inner: String = lex::strip_comments(inner)
        .lines()
        .filter(|l| !l.trim_start().starts_with('#'))
        .collect::<Vec<_>>()
        .join("\n");
    split_top_commas(&inner)
        .into_iter()
        .filter(|p| !p.trim().is_empty() && p.trim() != "void")
        .map(|p| {
            let p = p.split('=').next().unwrap_or("").trim();
            let m = lex::mask(p);
            let ids = lex::idents(&m);
            match ids.last() {
                Some(last) if ids.len() > 1 && !builtins::is_keyword(last.text) => Param {
                    name: last.text.to_string(),
                    ty: normalize_type(&format!(
                        "{}{}",
                        &p[..last.offset],
                        &p[last.offset + last.text.len()..]
                    )),
                },
                _ => Param {
                    name: String::new(),
                    ty: normalize_type(p),
                },
            }
        })
        .collect()
}

pub(crate) fn split_top_commas(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut angle, mut start) = (0i32, 0i32, 0usize);
    for (i, c) in s.char_indices() {
        match c {
            '(' | '[' | '{' => depth += 1,
            ')' | ']' | '}' => depth -= 1,
            '<' => angle += 1,
            '>' => angle = (angle - 1).max(0),
            ',' if depth == 0 && angle == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// Offsets of the `(`…`)` groups at depth 0 in `s`.
fn top_paren_groups(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut depth = 0i32;
    let mut open = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => {
                if depth == 0 {
                    open = i;
                }
                depth += 1;
            }
            ')' => {
                depth -= 1;
                if depth == 0 {
                    out.push((open, i));
                }
            }
            _ => {}
        }
    }
    out
}

/// A top-level piece of a file (`start..end`), with the whole file's text, its masked
/// text (comments and literals blanked) and its line table.
#[derive(Clone, Copy)]
struct Span<'t> {
    text: &'t str,
    masked: &'t str,
    lines: &'t Lines,
    start: usize,
    end: usize,
}

impl<'t> Span<'t> {
    fn chunk(&self) -> &'t str {
        &self.text[self.start..self.end]
    }

    fn masked_chunk(&self) -> &'t str {
        &self.masked[self.start..self.end]
    }
}

fn index_chunk(idx: &mut FileData, at: Span, frames: &[Frame]) {
    let (chunk, mchunk) = (at.chunk(), at.masked_chunk());
    let (start, lines) = (at.start, at.lines);
    let line = lines.line(start);
    if let Some(c) = lazy_host_function(mchunk, chunk) {
        let it = Item {
            kind: ItemKind::Function,
            names: c.names,
            text: chunk.to_string(),
            offset: start,
            line,
            refs: Vec::new(),
            cond_refs: Vec::new(),
            macro_calls: Vec::new(),
            cond: Vec::new(),
            device: false,
            header_len: c.header_len,
            error_line: None,
            operator_types: Vec::new(),
            notes: Vec::new(),
            lazy: true,
            written: None,
            namespace: String::new(),
        };
        push_item(idx, it, frames);
        return;
    }
    let Some(tree) = parse(chunk) else {
        return;
    };
    let root = tree.root_node();
    let error_line = first_error(root).map(|n| lines.line(start + n.start_byte()));

    let mut item = classify(root, chunk, mchunk);
    let analysis = analyze(root, chunk, mchunk, &item.names, &item.params, |o| {
        lines.line(start + o)
    });
    // An anonymous enum (`enum { NOCTANT = 8 };`) is named by its enumerators.
    if item.kind == ItemKind::Type {
        item.names.extend(analysis.enumerators);
    }
    if item.names.is_empty() {
        // Nothing we can name (a stray statement or macro call at file scope).
        if let Some(l) = error_line {
            recovered(idx, l, "skipped an unparsable top-level statement".into());
        }
        return;
    }
    let refs = analysis.refs;
    let macro_calls = analysis.macro_calls;
    let chunk_cond_refs = analysis.cond_refs;

    if let Some(l) = error_line {
        let what = format!(
            "parse error inside `{}`; indexed it from its text",
            item.names[0]
        );
        recovered(idx, l, what);
    }

    let operator_types = operator_types(&item.names[0], &item.params);
    let (text, mut notes) = rewrite_compound_literals(root, chunk, |o| lines.line(start + o));
    if let Some(n) = queries::first_of_kind(root, "field_designator") {
        notes.push((
            DESIGNATED_INITIALIZER,
            "C99 designated initializers (`{.x = 1, …}`): nvcc accepts them as a GNU extension, NVRTC only from C++20, so the unit compiles with `--std=c++20`".to_string(),
            lines.line(start + n.start_byte()),
        ));
    }
    let written = (text != chunk).then(|| chunk.to_string());
    if item.kind == ItemKind::Kernel {
        idx.kernels.push(KernelInfo {
            name: item.names[0].clone(),
            line,
            params: std::mem::take(&mut item.params),
            template_params: std::mem::take(&mut item.template_params),
        });
        idx.kernel_items.push(idx.items.len());
    }
    let it = Item {
        kind: item.kind,
        names: item.names,
        text,
        offset: start,
        line,
        refs,
        cond_refs: Vec::new(),
        macro_calls,
        cond: Vec::new(),
        device: item.device,
        header_len: item.header_len,
        error_line,
        operator_types,
        notes,
        lazy: false,
        written,
        namespace: String::new(),
    };
    push_item(idx, it, frames);
    let last = idx.items.len() - 1;
    for c in chunk_cond_refs {
        if !idx.items[last].cond_refs.contains(&c) {
            idx.items[last].cond_refs.push(c);
        }
    }
}

/// A parse error in the file that indexing got past: `{path}:{line}: {what}`.
fn recovered(idx: &mut FileData, line: u32, what: String) {
    let message = format!("{}:{line}: {what}", idx.path);
    idx.diagnostics
        .push(Diagnostic::new(Level::Info, "parse_error_recovered", message).at(line));
}

/// The types an `operator…` overload's parameters name (it is pulled in with them).
fn operator_types(name: &str, params: &[Param]) -> Vec<String> {
    if !name.starts_with("operator") {
        return Vec::new();
    }
    let mut v: Vec<String> = Vec::new();
    for p in params {
        for i in lex::idents(&p.ty) {
            if !builtins::is_keyword(i.text) && !v.iter().any(|x| x == i.text) {
                v.push(i.text.to_string());
            }
        }
    }
    v
}

/// The note on an item with C99 designated initializers; a unit that has it compiles as
/// C++20 (`suite::buildflags::for_unit`).
pub const DESIGNATED_INITIALIZER: &str = "c_designated_initializer";

/// C99 compound literals `(struct T){…}` become C++ list-initialization `T{…}` (the same
/// aggregate, which NVRTC accepts), and the `register` storage class goes: the chunk's text
/// with them rewritten, and a note for each (rewritten or not).
fn rewrite_compound_literals(
    root: Node,
    chunk: &str,
    line_of: impl Fn(usize) -> u32,
) -> (String, Vec<(&'static str, String, u32)>) {
    let mut notes = Vec::new();
    let mut rewrites: Vec<(usize, usize, String)> = Vec::new();
    for n in queries::compound_literals(root) {
        // `T{…}` is C++ already; only the parenthesized C form needs work.
        if !chunk[n.byte_range()].starts_with('(') {
            continue;
        }
        let line = line_of(n.start_byte());
        let ty = n
            .child_by_field_name("type")
            .map(|t| chunk[t.byte_range()].trim());
        let value = n
            .child_by_field_name("value")
            .map(|v| &chunk[v.byte_range()]);
        let name = ty.map(|t| {
            ["struct ", "union "]
                .iter()
                .find_map(|k| t.strip_prefix(k))
                .unwrap_or(t)
                .trim()
        });
        match (name, value) {
            (Some(name), Some(value))
                if !name.is_empty()
                    && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') =>
            {
                rewrites.push((n.start_byte(), n.end_byte(), format!("{name}{value}")));
                notes.push((
                    "c_compound_literal",
                    format!("a C99 compound literal `({})…`, which NVRTC (C++) rejects, rewritten as the list-initialization `{name}{{…}}`", ty.unwrap_or_default()),
                    line,
                ));
            }
            _ => notes.push((
                "c_compound_literal",
                "a C99 compound literal `(T){…}`: nvcc accepts it as a GNU extension, NVRTC (C++) does not".to_string(),
                line,
            )),
        }
    }
    // `register`, which C++17 removed: nvcc's build only warns, NVRTC refuses it. It never
    // changed what the code computes, so it is dropped.
    for n in queries::all_of_kind(root, "storage_class_specifier") {
        if &chunk[n.byte_range()] == "register" {
            let end = chunk[n.end_byte()..]
                .find(|c: char| !c.is_whitespace())
                .map_or(n.end_byte(), |k| n.end_byte() + k);
            rewrites.push((n.start_byte(), end, String::new()));
            notes.push((
                "cxx17_register",
                "the `register` storage class, which C++17 removed and NVRTC rejects, dropped (it never changed what the code computes)".to_string(),
                line_of(n.start_byte()),
            ));
        }
    }
    let mut text = chunk.to_string();
    rewrites.sort_by_key(|r| std::cmp::Reverse(r.0));
    for (a, b, r) in rewrites {
        if b <= text.len() {
            text.replace_range(a..b, &r);
        }
    }
    (text, notes)
}

/// A macro body with the GNU C forms NVRTC (C++, no GNU mode) rejects rewritten, and a
/// note for each: C99 compound literals `(T2){ 1, -1 }` as `T2{ 1, -1 }` (as in code), and
/// statement expressions `({ __typeof__(a) _a = (a); …; _a > _b ? _a : _b; })` as the
/// immediately invoked lambda `([&]() { auto _a = (a); …; return _a > _b ? _a : _b; }())`,
/// which computes the same value with the same single evaluation of each argument. nvcc
/// accepts both forms (its front end runs in GNU mode), so the program's build compiles them.
fn rewrite_macro_body(value: &str, line: u32) -> (String, Vec<(&'static str, String, u32)>) {
    let mut notes = Vec::new();
    let mut body = value.to_string();
    let masked = lex::mask(&body);
    if COMPOUND_LITERAL_RE.is_match(&masked) {
        // Parsed as a function body: a macro body is an expression or statements.
        const HEAD: &str = "void kp_macro_body() {\n";
        let wrapped = format!("{HEAD}{body}\n;}}");
        if let Some(tree) = parse(&wrapped) {
            let (text, n) = rewrite_compound_literals(tree.root_node(), &wrapped, |_| line);
            if text != wrapped {
                if let Some(b) = text.strip_prefix(HEAD).and_then(|t| t.strip_suffix("\n;}")) {
                    body = b.to_string();
                    notes.extend(n);
                }
            }
        }
    }
    while let Some(rewritten) = statement_expression_as_lambda(&body) {
        body = rewritten;
        if notes
            .iter()
            .all(|(c, _, _)| *c != "gnu_statement_expression")
        {
            notes.push((
                "gnu_statement_expression",
                "a GNU statement expression `({ …; value; })` in a macro, which NVRTC rejects, rewritten as the immediately invoked lambda `([&]() { …; return value; }())` (`__typeof__(x) y =` as `auto y =`, other `__typeof__` as `decltype`)".to_string(),
                line,
            ));
        }
    }
    (body, notes)
}

static COMPOUND_LITERAL_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\)\s*\{").expect("valid regex"));
/// `__typeof__(x) _x = ` (one level of parentheses inside): a copy, as `auto _x = ` makes
/// it (`decltype` would make `_x` a reference where `x` is an lvalue like `a[i]`).
static TYPEOF_DECL_RE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(?:__typeof__|__typeof|typeof)\s*\((?:[^()]|\([^()]*\))*\)\s*([A-Za-z_]\w*)\s*=")
        .expect("valid regex")
});
static TYPEOF_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(?:__typeof__|__typeof|typeof)\b").expect("valid regex"));

/// The first statement expression `({ s1; s2; e; })` of `text` rewritten as
/// `([&]() { s1; s2; return e; }())`; `None` when there is none, or its last statement is
/// not an expression.
fn statement_expression_as_lambda(text: &str) -> Option<String> {
    const OPEN: &[u8] = b"([{";
    const CLOSE: &[u8] = b")]}";
    let masked = lex::mask(text);
    let mut from = 0;
    while let Some(k) = masked[from..].find("({").map(|k| from + k) {
        from = k + 2;
        // The block's `}`, then the group's `)`.
        let Some(close) = lex::matching(&masked, k + 1, b'{', b'}') else {
            continue;
        };
        if !masked[close + 1..].trim_start().starts_with(')') {
            continue;
        }
        let paren =
            close + 1 + (masked[close + 1..].len() - masked[close + 1..].trim_start().len());
        // Statements at depth 0 of the block.
        let inner = &masked[k + 2..close];
        let ends: Vec<usize> = lex::top_level(inner, OPEN, CLOSE)
            .filter(|&(_, b)| b == b';')
            .map(|(i, _)| i)
            .collect();
        let Some(&last_end) = ends.last() else {
            continue;
        };
        let prev_end = ends.len().checked_sub(2).map(|j| ends[j] + 1).unwrap_or(0);
        let last = inner[prev_end..last_end].trim();
        let first_word = last
            .split(|c: char| !c.is_alphanumeric() && c != '_')
            .next()?;
        if last.is_empty()
            || matches!(
                first_word,
                "if" | "for" | "while" | "do" | "switch" | "return" | "break" | "continue" | "goto"
            )
            || !inner[last_end + 1..].trim().is_empty()
        {
            continue;
        }
        let real = &text[k + 2..close];
        let typeof_as_cxx = |t: &str| {
            let t = TYPEOF_DECL_RE.replace_all(t, "auto $1 =");
            TYPEOF_RE.replace_all(&t, "decltype").into_owned()
        };
        let stmts = typeof_as_cxx(&real[..prev_end]);
        let value = typeof_as_cxx(&real[prev_end..last_end]);
        return Some(format!(
            "{}([&]() {{{stmts} return {}; }}()){}",
            &text[..k],
            value.trim(),
            &text[paren + 1..]
        ));
    }
    None
}

/// What a chunk uses and declares.
struct Analysis {
    /// Free identifiers with the line of their first use.
    refs: Vec<(String, u32)>,
    /// Identifiers of `#if` lines inside the chunk.
    cond_refs: Vec<String>,
    /// Declared names called like functions ([`Item::macro_calls`]).
    macro_calls: Vec<(String, u32)>,
    enumerators: Vec<String>,
}

/// Free names of a parsed chunk: every identifier that is not a member, a keyword,
/// something the chunk declares itself (parameters, locals, fields, its own macros)
/// or one of its own names.
fn analyze(
    root: Node,
    chunk: &str,
    mchunk: &str,
    names: &[String],
    params: &[Param],
    line_of: impl Fn(usize) -> u32,
) -> Analysis {
    let mut locals: HashSet<&str> = HashSet::new();
    let mut enumerators: Vec<String> = Vec::new();
    {
        for (node, declared) in queries::declarators(root) {
            // A parameter that does not parse as one (`const float* RESTRICT T`: a macro
            // standing for a qualifier, which the grammar takes for the name, and `T` left
            // over as an error): its name is its last identifier, and the others are uses
            // (the macro must come along).
            if let Some(last) = unparsed_parameter_name(node, mchunk) {
                locals.insert(last);
                continue;
            }
            // A top-level "declaration" the grammar made up by recovering from an error: a
            // macro written in a kernel's head (`__global__ void LAUNCH_BOUNDS(T, B) k(…)`
            // reads as `void LAUNCH_BOUNDS(T, B)` with a missing `;`). Its name is a use.
            if node.parent().is_some_and(|p| {
                p.kind() == "declaration"
                    && p.has_error()
                    && p.parent().is_some_and(|r| {
                        matches!(r.kind(), "translation_unit" | "template_declaration")
                    })
            }) {
                continue;
            }
            let mut found = Vec::new();
            declarator_names(node, chunk, &mut found);
            if declared == queries::Declared::Enumerator {
                enumerators.extend(found.into_iter().map(str::to_string));
            } else {
                locals.extend(found);
            }
        }
    }
    // Parameters recovered from the text are locals too.
    locals.extend(params.iter().map(|p| p.name.as_str()));
    // So are macros defined inside the chunk (`#define SUM(s) …` in a kernel body).
    for line in mchunk.lines() {
        if let Some(c) = DEFINE_RE.captures(line) {
            locals.insert(c.get(1).expect("name").as_str());
            if let Some(ps) = c.get(2) {
                locals.extend(
                    ps.as_str()
                        .trim_matches(|c| c == '(' || c == ')')
                        .split(',')
                        .map(str::trim),
                );
            }
        }
    }
    let own: HashSet<&str> = names
        .iter()
        .map(String::as_str)
        .chain(enumerators.iter().map(String::as_str))
        .collect();
    let all = lex::idents(mchunk);
    // `ns::name` (a helper in a namespace, maybe of another file): the pair as one ref
    // `ns::name`, which isolation resolves only to a `name` declared in a namespace ending
    // in `ns` (never to a file-scope `name`, nor to a class's static member).
    let qualified: Vec<(String, usize)> = all
        .windows(2)
        .filter(|w| {
            let between = &mchunk[w[0].offset + w[0].text.len()..w[1].offset];
            between.trim() == "::" && !w[0].in_condition && !builtins::is_keyword(w[0].text)
        })
        .map(|w| (format!("{}::{}", w[0].text, w[1].text), w[1].offset))
        .collect();
    let mut cond_refs: Vec<String> = Vec::new();
    for i in all
        .iter()
        .filter(|i| i.in_condition && !builtins::is_keyword(i.text))
    {
        if !cond_refs.iter().any(|c| c == i.text) {
            cond_refs.push(i.text.to_string());
        }
    }
    let macro_calls = all
        .iter()
        .filter(|i| {
            !i.in_condition
                && !i.member
                && (locals.contains(i.text) || enumerators.iter().any(|e| e == i.text))
                && mchunk[i.offset + i.text.len()..]
                    .trim_start()
                    .starts_with('(')
        })
        .map(|i| (i.text.to_string(), line_of(i.offset)))
        .collect();
    let refs = all
        .into_iter()
        .filter(|i| {
            !i.in_condition
                && !i.member
                && (!builtins::is_keyword(i.text) || builtins::is_redefinable(i.text))
                && !locals.contains(i.text)
                && !own.contains(i.text)
        })
        .map(|i| (i.text.to_string(), line_of(i.offset)))
        .chain(qualified.into_iter().map(|(q, o)| (q, line_of(o))))
        .collect();
    Analysis {
        refs: dedup(refs),
        cond_refs,
        macro_calls: dedup(macro_calls),
        enumerators,
    }
}

/// A plain host function (no CUDA qualifier, not a template or operator), recognised
/// from its text without parsing it.
fn lazy_host_function(mchunk: &str, chunk: &str) -> Option<Classified> {
    let head = &mchunk[..top_level_brace(mchunk)?];
    let words = lex::idents(head);
    if words.iter().any(|w| {
        matches!(
            w.text,
            "__device__" | "__global__" | "__host__" | "template" | "operator"
        )
    }) || lex::is_declaration_header(head)
    {
        return None;
    }
    let c = classify_text(mchunk, chunk);
    (c.kind == ItemKind::Function && !c.names.is_empty()).then_some(c)
}

/// References of a [`lazy`](Item::lazy) item, worked out now: (refs, `#if` names).
pub(crate) fn lazy_refs(item: &Item) -> (Vec<(String, u32)>, Vec<String>) {
    let Some(tree) = parse(&item.text) else {
        return (Vec::new(), Vec::new());
    };
    let m = lex::mask(&item.text);
    let lines = Lines::new(&item.text);
    let a = analyze(tree.root_node(), &item.text, &m, &item.names, &[], |o| {
        item.line + lines.line(o) - 1
    });
    (a.refs, a.cond_refs)
}

#[derive(Clone)]
struct Classified {
    kind: ItemKind,
    names: Vec<String>,
    params: Vec<Param>,
    template_params: Vec<String>,
    template: bool,
    device: bool,
    header_len: Option<usize>,
}

impl Classified {
    /// Nothing found yet; `kind` until something says otherwise.
    fn of(kind: ItemKind) -> Classified {
        Classified {
            kind,
            names: Vec::new(),
            params: Vec::new(),
            template_params: Vec::new(),
            template: false,
            device: false,
            header_len: None,
        }
    }
}

fn classify(root: Node, chunk: &str, mchunk: &str) -> Classified {
    let mut out = Classified::of(ItemKind::Global);
    // Function definitions first: the query finds them at the chunk's top level.
    {
        for f in queries::top_functions(root) {
            let (func, decl, body) = (f.function, f.declarator, f.body);
            let Some(fd) = function_declarator(decl) else {
                continue;
            };
            let Some(name_node) = fd.child_by_field_name("declarator") else {
                continue;
            };
            if !matches!(
                name_node.kind(),
                "identifier" | "field_identifier" | "operator_name"
            ) {
                continue;
            }
            let header = &mchunk[..body.start_byte()];
            let name: String = t(name_node, chunk).split_whitespace().collect();
            // A macro before the return type (`FORCE_INLINE uint64_t fmix64(uint64_t k)`)
            // can make the grammar take the return type for the name: when the name is
            // followed by another identifier and then the parameter list, the text decides.
            let by_text = root.has_error().then(|| classify_text(mchunk, chunk));
            if let Some(by_text) = &by_text {
                let renamed = by_text
                    .names
                    .first()
                    .is_some_and(|n| *n != name && name_precedes_call(header, &name, n));
                if renamed && matches!(by_text.kind, ItemKind::Kernel | ItemKind::Function) {
                    return by_text.clone();
                }
            }
            let words: Vec<&str> = lex::idents(header).iter().map(|i| i.text).collect();
            out.names = vec![name];
            out.kind = if words.contains(&"__global__") {
                ItemKind::Kernel
            } else {
                ItemKind::Function
            };
            out.device = words.contains(&"__global__") || words.contains(&"__device__");
            out.header_len = Some(body.start_byte());
            if let Some(pl) = fd.child_by_field_name("parameters") {
                let inner = t(pl, chunk);
                out.params = if inner.contains('#') || pl.has_error() {
                    // `#if` inside the list, or a part the grammar could not read (a macro
                    // where a qualifier goes: `const float* RESTRICT T`): tree-sitter's
                    // reading is unreliable; each parameter's name is its last identifier.
                    params_from_text(inner.trim_start_matches('(').trim_end_matches(')'))
                } else {
                    params_from_list(pl, chunk)
                };
            }
            if let Some(tp) = f.template_params {
                out.template = true;
                out.template_params = template_params(tp, chunk);
            } else if let Some(by_text) = by_text.filter(|b| b.template && b.names == out.names) {
                // A macro in the head (`template <class real> __global__ void
                // LAUNCH_BOUNDS(T, B) k(…)`) can leave the `template <…>` in an ERROR
                // node before the function: the text still says it is a template.
                out.template = true;
                out.template_params = by_text.template_params;
            }
            // A sibling ERROR before the function (a macro used as a declaration)
            // does not change what the function is.
            let _ = func;
            return out;
        }
    }
    if root.has_error() {
        // tree-sitter may have read a broken function as something else (a declaration
        // with an initializer list, say): the text decides.
        let t = classify_text(mchunk, chunk);
        if matches!(t.kind, ItemKind::Kernel | ItemKind::Function) {
            return t;
        }
    }
    let mut c = root.walk();
    let tops: Vec<Node> = root
        .named_children(&mut c)
        .filter(|n| n.kind() != "comment")
        .collect();
    for n in &tops {
        if let Some(res) = classify_node(*n, chunk) {
            return res;
        }
    }
    classify_text(mchunk, chunk)
}

pub(crate) fn template_params(tp: Node, src: &str) -> Vec<String> {
    let mut c = tp.walk();
    tp.named_children(&mut c)
        .filter(|n| n.kind() != "comment")
        .map(|n| normalize_type(t(n, src)))
        .collect()
}

fn classify_node(n: Node, src: &str) -> Option<Classified> {
    let mut out = Classified::of(ItemKind::Type);
    let mut node = n;
    if n.kind() == "template_declaration" {
        out.template = true;
        let mut c = n.walk();
        node = n
            .named_children(&mut c)
            .find(|k| k.kind() != "template_parameter_list" && k.kind() != "comment")?;
    }
    match node.kind() {
        "struct_specifier" | "class_specifier" | "union_specifier" | "enum_specifier" => {
            node.child_by_field_name("body")?;
            out.names
                .push(t(node.child_by_field_name("name")?, src).to_string());
        }
        "alias_declaration" => {
            out.names
                .push(t(node.child_by_field_name("name")?, src).to_string());
        }
        "type_definition" => {
            if let Some(ty) = node.child_by_field_name("type") {
                if let Some(nm) = ty.child_by_field_name("name") {
                    if ty.child_by_field_name("body").is_some() {
                        out.names.push(t(nm, src).to_string());
                    }
                }
            }
            let mut c = node.walk();
            let decls: Vec<Node> = node.children_by_field_name("declarator", &mut c).collect();
            for d in decls {
                let mut names = Vec::new();
                declarator_names(d, src, &mut names);
                out.names.extend(names.into_iter().map(str::to_string));
            }
        }
        "declaration" => {
            let mut c = node.walk();
            let decls: Vec<Node> = node.children_by_field_name("declarator", &mut c).collect();
            let ty = node.child_by_field_name("type");
            // `struct S { … } s;` defines the type S and the variable s.
            let mut type_names = Vec::new();
            if let Some(ty) = ty {
                if ty.child_by_field_name("body").is_some() {
                    if let Some(nm) = ty.child_by_field_name("name") {
                        type_names.push(t(nm, src).to_string());
                    }
                }
            }
            let is_proto = decls.iter().any(|d| function_declarator(*d).is_some())
                && !decls.iter().any(|d| d.kind() == "init_declarator");
            out.kind = if is_proto {
                ItemKind::Prototype
            } else if ty.is_some_and(|ty| {
                ty.kind() == "template_type"
                    && ty
                        .child_by_field_name("name")
                        .is_some_and(|nm| t(nm, src) == "texture")
            }) {
                ItemKind::Texture
            } else {
                ItemKind::Global
            };
            for d in decls {
                let mut names = Vec::new();
                if let Some(f) = function_declarator(d).filter(|_| is_proto) {
                    if let Some(nm) = f.child_by_field_name("declarator") {
                        declarator_names(nm, src, &mut names);
                    }
                } else {
                    declarator_names(d, src, &mut names);
                }
                out.names.extend(names.into_iter().map(str::to_string));
            }
            if out.names.is_empty() && !type_names.is_empty() {
                out.kind = ItemKind::Type;
            }
            out.names.extend(type_names);
            let words: Vec<String> = lex::idents(&lex::mask(t(node, src)))
                .iter()
                .map(|i| i.text.to_string())
                .collect();
            out.device = words.iter().any(|w| w == "__device__");
        }
        _ => return None,
    }
    (!out.names.is_empty()).then_some(out)
}

/// Classify a chunk tree-sitter could not make sense of, from its text alone.
/// `first` then `second` as consecutive identifiers of `header`, `second` followed by `(`:
/// `first` is the return type of a function named `second`.
fn name_precedes_call(header: &str, first: &str, second: &str) -> bool {
    let ids = lex::idents(header);
    ids.windows(2).any(|w| {
        w[0].text == first
            && w[1].text == second
            && header[w[0].offset + first.len()..w[1].offset]
                .chars()
                .all(char::is_whitespace)
            && header[w[1].offset + second.len()..]
                .trim_start()
                .starts_with('(')
    })
}

fn classify_text(mchunk: &str, chunk: &str) -> Classified {
    let mut out = Classified::of(ItemKind::Global);
    let body = top_level_brace(mchunk);
    let head = &mchunk[..body.unwrap_or(mchunk.len())];
    let words: Vec<lex::Ident> = lex::idents(head);
    let has = |w: &str| words.iter().any(|i| i.text == w);
    out.template = head.trim_start().starts_with("template");
    if let (Some(b), false) = (body, lex::is_declaration_header(head)) {
        if let Some(&(open, close)) = top_paren_groups(head).last() {
            if let Some(name) = lex::idents(&head[..open]).last() {
                if !builtins::is_keyword(name.text) {
                    out.names.push(name.text.to_string());
                    out.kind = if has("__global__") {
                        ItemKind::Kernel
                    } else {
                        ItemKind::Function
                    };
                    out.device = has("__global__") || has("__device__");
                    out.header_len = Some(b);
                    out.params = params_from_text(&chunk[open + 1..close]);
                    if out.template {
                        let ts = head.trim_start();
                        if let (Some(a), Some(z)) = (ts.find('<'), ts.find('>')) {
                            out.template_params = split_top_commas(&ts[a + 1..z])
                                .into_iter()
                                .map(normalize_type)
                                .collect();
                        }
                    }
                    return out;
                }
            }
        }
    }
    if lex::is_declaration_header(head) && body.is_some() {
        out.kind = ItemKind::Type;
        // typedef … NAME;  /  struct NAME { … };
        if words.iter().any(|w| w.text == "typedef") {
            if let Some(last) = lex::idents(&mchunk[body.unwrap_or(0)..]).last() {
                out.names.push(last.text.to_string());
            }
        }
        // `struct __align__(16) NAME`: the first word after the keyword that is not an
        // attribute or inside an attribute's parentheses.
        let groups = top_paren_groups(head);
        let in_group = |o: usize| groups.iter().any(|&(a, z)| a < o && o < z);
        if let Some(p) = words
            .iter()
            .position(|w| matches!(w.text, "struct" | "class" | "union" | "enum"))
        {
            if let Some(n) = words[p + 1..]
                .iter()
                .find(|w| !in_group(w.offset) && !w.text.starts_with("__") && w.text != "alignas")
            {
                out.names.push(n.text.to_string());
            }
        }
        return out;
    }
    // A variable: the identifier before the first `[`, `=`, `(` or `;` at depth 0.
    let stop = mchunk
        .find(['[', '=', ';', '(', '{'])
        .unwrap_or(mchunk.len());
    if let Some(n) = lex::idents(&mchunk[..stop]).last() {
        if !builtins::is_keyword(n.text) && words.len() > 1 {
            out.names.push(n.text.to_string());
            out.kind = if has("texture") {
                ItemKind::Texture
            } else {
                ItemKind::Global
            };
        }
    }
    out
}

fn top_level_brace(m: &str) -> Option<usize> {
    let mut depth = 0i32;
    for (i, c) in m.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            '{' if depth == 0 => return Some(i),
            _ => {}
        }
    }
    None
}

fn collapse_ws(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn find_launches(idx: &mut FileData, at: Span) {
    let (chunk, mchunk) = (at.chunk(), at.masked_chunk());
    let (start, lines) = (at.start, at.lines);
    let mut found: Vec<(usize, LaunchSite)> = Vec::new();
    // Where each launch tree-sitter found has its `<<<`.
    let mut covered: HashSet<usize> = HashSet::new();
    if let Some(tree) = parse(chunk) {
        for l in queries::launches(tree.root_node()) {
            let (k, cfg, args, call) = (l.kernel, l.config, l.args, l.launch);
            let mut c = cfg.walk();
            let cfg_parts: Vec<String> = cfg
                .named_children(&mut c)
                .filter(|n| n.kind() != "comment")
                .map(|n| collapse_ws(t(n, chunk)))
                .collect();
            let mut c = args.walk();
            let mut arg_list: Vec<String> = args
                .named_children(&mut c)
                .filter(|n| n.kind() != "comment")
                .map(|n| collapse_ws(t(n, chunk)))
                .collect();
            if arg_list.iter().any(|a| a.starts_with('#')) {
                let list = t(args, chunk);
                let inner = list
                    .trim()
                    .strip_prefix('(')
                    .and_then(|l| l.strip_suffix(')'));
                if let Some(r) = inner.and_then(args_as_compiled) {
                    arg_list = r;
                }
            }
            let offset = call.start_byte();
            covered.insert(cfg.start_byte());
            found.push((
                offset,
                make_site(
                    idx,
                    t(k, chunk).rsplit("::").next().unwrap_or(""),
                    l.template_args.map(|n| collapse_ws(t(n, chunk))),
                    cfg_parts,
                    arg_list,
                    lines.line(start + offset),
                ),
            ));
        }
    }
    // Launches tree-sitter did not see (unusual syntax around them): from the text.
    for m in LAUNCH_RE.captures_iter(mchunk) {
        let whole = m.get(0).expect("match");
        let opener = m.get(3).expect("the <<< group");
        let cfg_start = whole.end();
        if covered.contains(&opener.start()) {
            continue;
        }
        let Some(closer) = LAUNCH_CLOSE_RE.find(&mchunk[cfg_start..]) else {
            continue;
        };
        let (cfg_end, after) = (cfg_start + closer.start(), cfg_start + closer.end());
        let rest = &mchunk[after..];
        let Some(open) = rest.find('(').filter(|p| rest[..*p].trim().is_empty()) else {
            continue;
        };
        let Some(close) = lex::matching(rest, open, b'(', b')') else {
            continue;
        };
        let a0 = after + open + 1;
        let a1 = after + close;
        let cfg_parts = split_top_commas(&chunk[cfg_start..cfg_end])
            .into_iter()
            .map(collapse_ws)
            .collect();
        let args = args_as_compiled(&chunk[a0..a1]).unwrap_or_else(|| {
            split_top_commas(&chunk[a0..a1])
                .into_iter()
                .map(collapse_ws)
                .filter(|s| !s.is_empty())
                .collect()
        });
        let site = make_site(
            idx,
            &m[1],
            m.get(2).map(|g| collapse_ws(&chunk[g.range()])),
            cfg_parts,
            args,
            lines.line(start + whole.start()),
        );
        found.push((whole.start(), site));
    }
    found.sort_by_key(|(o, _)| *o);
    for (o, mut site) in found {
        site.definitions = launch_definitions(idx, &site, chunk, mchunk, o);
        idx.launch_sites.push(site);
    }
}

/// `kernel<<<`, also spaced as some trees write it (`kernel << < grid, block >> > (…)`).
static LAUNCH_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"([A-Za-z_]\w*)\s*(<[^<>;]*>)?\s*(<<\s*<)").expect("valid regex"));

/// Whether `s` has a `<<<` (or a spaced `<< <`) that could open a launch configuration.
fn has_launch_opener(s: &str) -> bool {
    s.contains("<<<") || (s.contains("<<") && LAUNCH_RE.is_match(s))
}

/// The `>>>` that closes a launch configuration, spaced or not.
static LAUNCH_CLOSE_RE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r">>\s*>").expect("valid regex"));

/// A launch's arguments (the text inside its parentheses) with `#if` groups between them
/// (cuda-samples' SobelFilter passes `BlockWidth, SharedPitch,` under `#ifndef
/// FIXED_BLOCKWIDTH`; Rodinia huffman passes three buffers under `#ifdef TESTING`, which its
/// header defines): the directive lines are no arguments, and every branch's arguments are
/// kept, as the kernel's own parameter list is read (whether a macro is defined can lie in a
/// header this file's index does not see). None when the text has no directive.
fn args_as_compiled(inner: &str) -> Option<Vec<String>> {
    let directive = |l: &&str| l.trim_start().starts_with('#');
    if !inner.lines().any(|l| directive(&l)) {
        return None;
    }
    let inner = lex::strip_comments(inner);
    let text: Vec<&str> = inner.lines().filter(|l| !directive(l)).collect();
    Some(
        split_top_commas(&text.join("\n"))
            .into_iter()
            .map(collapse_ws)
            .filter(|s| !s.is_empty())
            .collect(),
    )
}

fn make_site(
    idx: &FileData,
    kernel: &str,
    template_args: Option<String>,
    cfg: Vec<String>,
    args: Vec<String>,
    line: u32,
) -> LaunchSite {
    let mut cfg = cfg.into_iter();
    LaunchSite {
        path: idx.path.clone(),
        line,
        kernel: kernel.to_string(),
        template_args,
        grid: cfg.next().unwrap_or_default(),
        block: cfg.next().unwrap_or_default(),
        shared_mem: cfg.next(),
        stream: cfg.next(),
        args,
        definitions: BTreeMap::new(),
    }
}

/// Definitions of the names in grid/block/smem: the declarations and assignments
/// before the launch in the same function, else the file's macros and globals.
fn launch_definitions(
    idx: &FileData,
    site: &LaunchSite,
    chunk: &str,
    mchunk: &str,
    offset: usize,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut names: Vec<String> = Vec::new();
    for e in [
        Some(&site.grid),
        Some(&site.block),
        site.shared_mem.as_ref(),
    ]
    .into_iter()
    .flatten()
    {
        let m = lex::mask(e);
        for i in lex::idents(&m) {
            if !i.member && !builtins::is_builtin(i.text) && !names.iter().any(|n| n == i.text) {
                names.push(i.text.to_string());
            }
        }
    }
    let mut done: HashSet<String> = HashSet::new();
    while let Some(name) = names.pop() {
        if !done.insert(name.clone()) || done.len() > 32 {
            continue;
        }
        let mut found = Vec::new();
        let mut follow = String::new();
        let mut s0 = 0;
        for (i, c) in mchunk[..offset].char_indices() {
            if matches!(c, ';' | '{' | '}') {
                // A statement after a preprocessor line (`#else` / `#endif` then
                // `grid.x = …;`) starts after it.
                let st = s0 + directive_lines_len(&mchunk[s0..i]);
                let stmt = mchunk[st..i].trim();
                if declares(stmt, &name) || assigns(stmt, &name) {
                    let lead = mchunk[st..i].len() - mchunk[st..i].trim_start().len();
                    found.push(collapse_ws(&chunk[st + lead..i]));
                    // The part that defines this name: from it to the next top-level
                    // comma (`int a = 1, n = f(b)` → `n = f(b)`).
                    let ids = lex::idents(stmt);
                    if let Some(p) = ids.iter().position(|x| x.text == name && !x.member) {
                        let from = ids[p].offset;
                        let part = split_top_commas(&stmt[from..])[0];
                        follow.push_str(part);
                        follow.push(' ');
                    }
                }
                s0 = i + 1;
            }
        }
        let text = if !found.is_empty() {
            Some(found.join("; "))
        } else {
            idx.by_name.get(&name).and_then(|ids| {
                let defs: Vec<&Item> = ids
                    .iter()
                    .rev()
                    .map(|&i| &idx.items[i])
                    .filter(|it| matches!(it.kind, ItemKind::Macro | ItemKind::Global))
                    .collect();
                // Of several, the last whose `#if` branches are not known to be off.
                defs.iter()
                    .find(|it| !branch_off(idx, it))
                    .or(defs.first())
                    .map(|it| collapse_ws(&it.text))
            })
        };
        if let Some(text) = text {
            if follow.is_empty() {
                follow = text.clone();
            }
            // Follow the names the definition uses (`dim3 grid(n / BLOCK)` → BLOCK).
            let m = lex::mask(&follow);
            for i in lex::idents(&m) {
                if !i.member
                    && !builtins::is_builtin(i.text)
                    && i.text != name
                    && !done.contains(i.text)
                    && (idx.by_name.contains_key(i.text) || mchunk.contains(i.text))
                {
                    names.push(i.text.to_string());
                }
            }
            out.insert(name, text);
        }
    }
    out
}

/// Whether one of the `#if` branches `it` sits in is known to be off: its condition is false
/// over the file's macros with stated integer values (fft's `#if R16 … #define R 16` with
/// `#define R16 0`). Unknown conditions count as on.
fn branch_off(idx: &FileData, it: &Item) -> bool {
    let defined = |n: &str| {
        idx.by_name
            .get(n)
            .is_some_and(|ids| ids.iter().any(|&i| idx.items[i].kind == ItemKind::Macro))
    };
    let value = |n: &str| -> Option<i64> {
        let mut vals = idx
            .by_name
            .get(n)?
            .iter()
            .map(|&i| &idx.items[i])
            .filter(|m| m.kind == ItemKind::Macro);
        // One unconditional object-like definition with an integer body.
        let m = vals.next()?;
        if vals.next().is_some() || !m.cond.is_empty() {
            return None;
        }
        let c = DEFINE_RE.captures(m.text.lines().next()?)?;
        if c.get(2).is_some() {
            return None;
        }
        ppcond::int_literal(c.get(3)?.as_str())
    };
    let m = ppcond::Macros {
        defined: &defined,
        value: &value,
    };
    it.cond
        .iter()
        .any(|c| ppcond::eval(&c.expr, &m) == Some(false))
}

/// `stmt` (masked, trimmed) declares `name`: `T name(…)`, `const T *name = …`, `T a, name;`.
fn declares(stmt: &str, name: &str) -> bool {
    if declares_first(stmt, name) {
        return true;
    }
    // A later declarator: `dim3 grid(…), block(…)`, `int a = 1, n = 2`.
    let parts = split_top_commas(stmt);
    let later = parts[1..].iter().any(|p| {
        p.trim_start().strip_prefix(name).is_some_and(|rest| {
            let r = rest.trim_start();
            !rest.starts_with(|c: char| c.is_alphanumeric() || c == '_')
                && (r.is_empty() || r.starts_with(['(', '=', '{', '[']))
                && !r.starts_with("==")
        })
    });
    later
        && lex::idents(parts[0])
            .iter()
            .skip(1)
            .any(|i| declares_first(parts[0], i.text))
}

fn declares_first(stmt: &str, name: &str) -> bool {
    let ids = lex::idents(stmt);
    let Some(pos) = ids.iter().position(|i| i.text == name && !i.member) else {
        return false;
    };
    if pos == 0
        || matches!(
            ids[0].text,
            "return" | "if" | "while" | "for" | "else" | "case"
        )
    {
        return false;
    }
    let end = ids[pos].offset + name.len();
    let after = stmt[end..].trim_start();
    let follows = after.is_empty() || after.starts_with(['(', '=', '{', '[', ';', ',']);
    let before = &stmt[..ids[pos].offset];
    let before_ok = before
        .chars()
        .all(|c| c.is_alphanumeric() || c.is_whitespace() || "_*&:<>,".contains(c))
        // `i < n` is a comparison, `vector<int> n` a declaration.
        && before.matches('<').count() == before.matches('>').count();
    follows && before_ok && !after.starts_with("==")
}

/// `stmt` assigns to `name` (or to one of its `.x/.y/.z`).
/// The length of the leading blank and preprocessor lines of `s` (`\n#endif\n  g.x = 4`
/// → the bytes before `  g.x`).
fn directive_lines_len(s: &str) -> usize {
    let mut at = 0;
    for line in s.split_inclusive('\n') {
        let t = line.trim();
        if !(t.is_empty() || t.starts_with('#')) || !line.ends_with('\n') {
            break;
        }
        at += line.len();
    }
    at
}

fn assigns(stmt: &str, name: &str) -> bool {
    let Some(rest) = stmt.strip_prefix(name) else {
        return false;
    };
    if rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
        return false;
    }
    let rest = rest.trim_start();
    let rest = [".x", ".y", ".z"]
        .iter()
        .find_map(|f| rest.strip_prefix(f))
        .unwrap_or(rest)
        .trim_start();
    let rest = rest.trim_start_matches(['+', '-', '*', '/']);
    rest.starts_with('=') && !rest.starts_with("==")
}

#[cfg(test)]
mod tests {
    /// A macro in a kernel's head, between its return type and its name (HeCBench's s3d:
    /// `LAUNCH_BOUNDS(RATT_THRD, RATT_BLK)`, empty unless a flag is set): a use.
    #[test]
    fn a_macro_in_a_kernels_head_is_a_reference() {
        for (m, head) in [
            ("LB", ""),
            ("LAUNCH_BOUNDS", ""),
            ("LAUNCH_BOUNDS", "template <class real>\n"),
        ] {
            let src = format!("{head}__global__ void\n{m} (X, Y)\nk3(float* T) {{ T[0] = 1; }}\n");
            let fi = crate::cuda::index_file("k.cu", &src);
            let k = &fi.items[fi.kernel_items[0]];
            assert!(k.refs.iter().any(|(n, _)| n == m), "{m}: {:?}", k.refs);
            // Still a template: 24 s3d units were compiled as `k3`, which NVRTC cannot
            // lower ("cannot determine which instance of function template").
            let want: Vec<String> = if head.is_empty() {
                vec![]
            } else {
                vec!["class real".into()]
            };
            assert_eq!(fi.kernels[0].template_params, want, "{m} {head:?}");
        }
    }

    /// cuda-samples' SobelFilter and FunctionPointers pass two arguments under `#ifndef
    /// FIXED_BLOCKWIDTH`, as their kernels declare them: the directives are no arguments,
    /// and each branch's arguments are kept, as the kernel's parameter list is read.
    #[test]
    fn launch_arguments_under_an_ifdef_are_arguments_and_the_directives_are_not() {
        let src = "__global__ void k(int *o, int w, int p, int h) { o[0] = w + p + h; }\nvoid run(int *o, int w, int h) {\n  int bw = 80, p = 2;\n  k<<<1, 1>>>(o,\n#ifndef FIXED\n    bw,\n    p,\n#endif\n    h);\n  k<<<1, 1>>>(o, // the first\n#ifdef TESTING\n    w, p,\n#endif\n    h);\n}\n";
        let fi = crate::cuda::index_file("k.cu", src);
        let args: Vec<&Vec<String>> = fi.launch_sites.iter().map(|l| &l.args).collect();
        assert_eq!(args[0], &vec!["o", "bw", "p", "h"]);
        assert_eq!(args[1], &vec!["o", "w", "p", "h"]);
    }

    #[test]
    fn statement_expressions_become_lambdas_and_other_bodies_stay() {
        let (b, n) = super::rewrite_macro_body(
            "({ __typeof__ (a) _a = (a); __typeof__ (b) _b = (b); _a > _b ? _a : _b; })",
            7,
        );
        assert_eq!(
            b,
            "([&]() { auto _a = (a); auto _b = (b); return _a > _b ? _a : _b; }())"
        );
        assert_eq!(n.len(), 1);
        assert_eq!((n[0].0, n[0].2), ("gnu_statement_expression", 7));
        // A type the value needs stays a type.
        let (b, _) =
            super::rewrite_macro_body("({ __typeof__(x) t = x; (__typeof__(x))(t * 2); })", 1);
        assert_eq!(b, "([&]() { auto t = x; return (decltype(x))(t * 2); }())");
        // Two in one body; a block that is no statement expression; no value at the end.
        let (b, _) = super::rewrite_macro_body("({ 1; }) + ({ int q = 2; q; })", 1);
        assert_eq!(
            b,
            "([&]() { return 1; }()) + ([&]() { int q = 2; return q; }())"
        );
        // A group with no statement before a real one: the real one is still rewritten.
        let (b, _) = super::rewrite_macro_body("f(({ 1 })) + ({ int q = 2; q; })", 1);
        assert_eq!(b, "f(({ 1 })) + ([&]() { int q = 2; return q; }())");
        for plain in [
            "{ a = b; c = d; }",
            "({ if (x) y(); })",
            "(a) + (b)",
            "f({1, 2})",
        ] {
            let (b, n) = super::rewrite_macro_body(plain, 1);
            assert_eq!((b.as_str(), n.len()), (plain, 0));
        }
        let (b, n) = super::rewrite_macro_body("(T2){  1, -1 }", 1);
        assert_eq!((b.as_str(), n[0].0), ("T2{  1, -1 }", "c_compound_literal"));
        // `if (x) {` is no compound literal.
        let (b, n) = super::rewrite_macro_body("if (x) { y = 1; }", 1);
        assert_eq!((b.as_str(), n.len()), ("if (x) { y = 1; }", 0));
    }

    /// A macro before a helper's return type (HeCBench murmurhash3:
    /// `__host__ __device__ FORCE_INLINE uint64_t fmix64 ( uint64_t k )`): the grammar took
    /// the return type for the name, so the helper was `uint64_t` (and the unit had neither
    /// `fmix64` nor the `uint64_t` shim). The function is `fmix64`, its return type a use.
    #[test]
    fn a_macro_before_a_helpers_return_type_leaves_its_name_and_type_apart() {
        let src = "#define FORCE_INLINE inline __attribute__((always_inline))\n__host__ __device__\nFORCE_INLINE uint64_t fmix64 ( uint64_t k )\n{\n  k ^= k >> 33;\n  return k;\n}\n";
        let fi = crate::cuda::index_file("m.cu", src);
        let f = fi
            .items
            .iter()
            .find(|i| i.kind == ItemKind::Function)
            .expect("a function");
        assert_eq!(f.names, ["fmix64"]);
        let refs: Vec<&str> = f.refs.iter().map(|(n, _)| n.as_str()).collect();
        assert!(
            refs.contains(&"uint64_t") && refs.contains(&"FORCE_INLINE"),
            "{refs:?}"
        );
        // An ordinary helper keeps the grammar's reading.
        let plain = crate::cuda::index_file(
            "p.cu",
            "__device__ inline uint64_t mix(uint64_t k) { return k; }\n",
        );
        let f = plain
            .items
            .iter()
            .find(|i| i.kind == ItemKind::Function)
            .unwrap();
        assert_eq!(f.names, ["mix"]);
    }

    /// A macro written where a qualifier goes (`RESTRICT` for `__restrict__`, HeCBench's
    /// s3d) is a use the unit needs, not the parameter's name: the grammar cannot tell.
    #[test]
    fn a_qualifier_macro_in_a_parameter_is_a_reference_and_the_name_a_local() {
        let src = "#define RESTRICT __restrict__\n__global__ void k(const float* RESTRICT T, float* RESTRICT RF, int n) { RF[0] = T[0] * n; }\n";
        let fi = crate::cuda::index_file("k.cu", src);
        let k = &fi.items[fi.kernel_items[0]];
        let refs: Vec<&str> = k.refs.iter().map(|(n, _)| n.as_str()).collect();
        assert!(refs.contains(&"RESTRICT"), "{refs:?}");
        for local in ["T", "RF", "n"] {
            assert!(!refs.contains(&local), "{local} is a parameter: {refs:?}");
        }
    }

    use super::*;

    #[test]
    fn launch_definition_statements() {
        assert!(declares("dim3 grid(n / BLOCK, 1)", "grid"));
        assert!(declares("const unsigned int *a, blocks = 4", "blocks"));
        assert!(declares("int blocks", "blocks"));
        assert!(!declares("return blocks", "blocks"));
        assert!(!declares("x = f(blocks)", "blocks"));
        assert!(!declares("i < blocks", "blocks"));
        assert!(declares("std::vector<int> blocks", "blocks"));
        assert!(declares("dim3 grid(n / T, 1), threads(T, T)", "threads"));
        assert!(declares("int rows = 512, cols = 512", "cols"));
        assert!(!declares("f(a, cols = 2)", "cols"));
        assert!(assigns("grid.x = 3", "grid"));
        assert!(assigns("blocks += 1", "blocks"));
        assert!(!assigns("blocks == 1", "blocks"));
        assert!(!assigns("blocksize = 1", "blocks"));
    }

    #[test]
    fn normalizes_types() {
        assert_eq!(normalize_type("const  float* "), "const float *");
        assert_eq!(normalize_type("float **"), "float **");
        assert_eq!(normalize_type("int []"), "int []");
        assert_eq!(normalize_type("unsigned int"), "unsigned int");
        assert_eq!(
            normalize_type("float * __restrict__"),
            "float * __restrict__"
        );
    }

    #[test]
    fn branch_conditions() {
        let e = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(branch_condition(&e(&["0"]), false), None);
        assert_eq!(branch_condition(&e(&["0"]), true), Some(String::new()));
        assert_eq!(branch_condition(&e(&["1"]), true), None);
        assert_eq!(
            branch_condition(&e(&["defined(A)", "B"]), false),
            Some("!(defined(A)) && (B)".into())
        );
    }

    #[test]
    fn params_from_unparsable_text() {
        let p = params_from_text("const float *a, int n = 3, float");
        assert_eq!(p.len(), 3);
        assert_eq!(
            (p[0].name.as_str(), p[0].ty.as_str()),
            ("a", "const float *")
        );
        assert_eq!((p[1].name.as_str(), p[1].ty.as_str()), ("n", "int"));
        assert_eq!((p[2].name.as_str(), p[2].ty.as_str()), ("", "float"));
        // A comment between parameters is neither a type nor a name.
        let p = params_from_text(
            "int * const __restrict c, // will hang without volatile\n volatile int * const __restrict b /* last */",
        );
        assert_eq!(
            (p[1].name.as_str(), p[1].ty.as_str()),
            ("b", "volatile int * const __restrict")
        );
    }
}
