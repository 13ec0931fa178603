//! Isolation: the closure of what one kernel uses, resolved over the scope's files in
//! include order (both directions), written out as a unit NVRTC compiles alone.

use super::builtins::{self, Shim};
use super::index::{CondBranch, Item, ItemKind};
use super::lex;
use super::texture;
use super::{CudaError, FileIndex, IsolatedKernel, Scope};
use crate::record::{Diagnostic, Features, Level, Pulled};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Isolate the first kernel named `kernel` in `file`.
pub fn isolate(scope: &Scope, file: &str, kernel: &str) -> Result<IsolatedKernel, CudaError> {
    let fi = file_in(scope, file)?;
    let i = fi
        .kernels
        .iter()
        .position(|k| k.name == kernel)
        .ok_or_else(|| CudaError::KernelNotFound {
            file: file.to_string(),
            kernel: kernel.to_string(),
            available: if fi.kernels.is_empty() {
                "none".to_string()
            } else {
                fi.kernels
                    .iter()
                    .map(|k| k.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        })?;
    isolate_at(scope, file, i)
}

/// The index of `file`, which must be in the scope.
fn file_in<'a>(scope: &Scope<'a>, file: &str) -> Result<&'a FileIndex, CudaError> {
    scope
        .files
        .get(file)
        .ok_or_else(|| CudaError::FileNotInScope {
            file: file.to_string(),
        })
}

/// Isolate the `kernel_index`-th kernel of `file` (an index into `kernels()`): for
/// overloads and same-named kernels in one file.
pub fn isolate_at(
    scope: &Scope,
    file: &str,
    kernel_index: usize,
) -> Result<IsolatedKernel, CudaError> {
    let fi = file_in(scope, file)?;
    let info = fi
        .kernels
        .get(kernel_index)
        .ok_or_else(|| CudaError::KernelIndexOutOfRange {
            file: file.to_string(),
            index: kernel_index,
            count: fi.kernels.len(),
        })?;
    let kitem = fi.kernel_items[kernel_index];
    let mut cx = Closure::new(scope, file, kitem);
    cx.visit_function_arguments(&info.template_params);
    cx.visit((0, kitem));
    let (source, pulled, diagnostics, texture) = cx.emit();
    // The texture shim's templates and vector loads are not the kernel's features.
    let features = features_of(
        &source.replacen(texture::SHIM, "", 1),
        texture,
        !info.template_params.is_empty(),
    );
    let item = &fi.items[kitem];
    let header = item
        .header_len
        .map_or("", |n| &item.text[..n.min(item.text.len())]);
    let params = match has_directive_line(header) {
        true => params_as_compiled(&source, &info.name).unwrap_or_else(|| info.params.clone()),
        false => info.params.clone(),
    };
    Ok(IsolatedKernel {
        kernel: info.name.clone(),
        line: info.line,
        params,
        template_params: info.template_params.clone(),
        source,
        symbol: info.name.clone(),
        pulled,
        features,
        diagnostics,
    })
}

/// Whether `text` passes `name` as a template argument: `<name>`, `<&name, 4>`, `<T, name>`
/// (the name whole, after `<` or `,` and an optional `&`, before `>` or `,`).
fn named_as_template_argument(text: &str, name: &str) -> bool {
    let b = text.as_bytes();
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    text.match_indices(name).any(|(at, _)| {
        let end = at + name.len();
        if (at > 0 && word(b[at - 1])) || b.get(end).is_some_and(|&c| word(c)) {
            return false;
        }
        let before = text[..at].trim_end();
        let before = before.strip_suffix('&').unwrap_or(before).trim_end();
        let after = text[end..].trim_start();
        (before.ends_with('<') || before.ends_with(','))
            && (after.starts_with('>') || after.starts_with(','))
    })
}

/// A host-only stream operator (`std::ostream& operator<<(std::ostream&, const T&)` with no
/// `__device__`): device code cannot call it, and NVRTC has no `<ostream>`, so the type's
/// other operators are carried and this one is not (HeCBench gamma-correction, warpsort).
fn host_stream_operator(item: &Item) -> bool {
    let head = item
        .header_len
        .map_or(item.text.as_str(), |n| &item.text[..n.min(item.text.len())]);
    !item.device && names_a_stream(head)
}

/// Code that names a host stream (`std::ostream`, `std::istream`).
fn names_a_stream(text: &str) -> bool {
    text.contains("ostream") || text.contains("istream")
}
/// A preprocessor line (`#if`, `#endif`, …) in `text`.
fn has_directive_line(text: &str) -> bool {
    text.lines().any(|l| l.trim_start().starts_with('#'))
}

/// The parameters of kernel `name` as the compiler sees its unit: a list with `#if`
/// branches (Rodinia mummergpu's `#if !QRYTEX … char* queries, #endif`) read over the
/// unit's text with the branches its own macros turn off blanked
/// ([`super::syntax::UnitSyntax`]). None when the list still holds a branch whose
/// condition the unit does not settle, or the name is not one kernel of the unit.
fn params_as_compiled(source: &str, name: &str) -> Option<Vec<crate::record::Param>> {
    // A branch the unit does not settle keeps both sides: a name given twice.
    let plain = super::syntax::as_compiled(source);
    let defs: Vec<_> = super::syntax::kernels(&plain)
        .into_iter()
        .filter(|d| d.name == name)
        .collect();
    let [def] = defs.as_slice() else {
        return None;
    };
    // Read from the list's text, as the index reads a list with directives (the body's
    // macros may leave the definition with parse errors elsewhere).
    let text = &plain[def.range.clone()];
    let head = &text[..text.find('{').unwrap_or(text.len())];
    let (open, close) = (head.find('(')?, head.rfind(')')?);
    let params = super::index::params_from_text(head.get(open + 1..close)?);
    let names: HashSet<&str> = params.iter().map(|p| p.name.as_str()).collect();
    (names.len() == params.len()).then_some(params)
}

/// A unit's source cut in two for a prompt that must be short ([`kernel_with_helpers`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HelperCut {
    /// The kernel and the functions it calls, directly or through each other, in source order.
    pub code: String,
    /// Everything else, in source order: headers, macros, types, globals and functions the
    /// kernel never calls. It compiles before the code and is not sent.
    pub context: String,
    /// The names `context` defines that the code uses, for the prompt to say what exists
    /// without showing it.
    pub context_names: Vec<String>,
    /// The helpers in `code`, besides the kernel.
    pub helpers: Vec<String>,
}

/// The kernel `kernel` of an isolated unit's `source` with only the helpers it calls: the
/// closure isolation computed, read again over the unit alone, keeping functions reached
/// from the kernel by call and leaving macros, types and globals as context. `None` when
/// the unit has no such kernel or its items cannot be cut out of the text exactly.
pub fn kernel_with_helpers(source: &str, kernel: &str) -> Option<HelperCut> {
    let fi = super::index_file("unit.cu", source);
    let k = fi.kernels.iter().position(|k| k.name == kernel)?;
    let start = fi.kernel_items[k];
    let is_fn = |it: &Item| matches!(it.kind, ItemKind::Function | ItemKind::Kernel);
    // Functions reached from the kernel by name, breadth first.
    let mut keep = vec![start];
    let mut i = 0;
    while i < keep.len() {
        let it = &fi.items[keep[i]];
        for (name, _) in &it.refs {
            for &j in fi.by_name.get(name).into_iter().flatten() {
                if is_fn(&fi.items[j]) && !keep.contains(&j) {
                    keep.push(j);
                }
            }
        }
        i += 1;
    }
    keep.sort_unstable();
    let mut ranges = Vec::new();
    for &j in &keep {
        let it = &fi.items[j];
        let text = it.written.as_deref().unwrap_or(&it.text);
        let r = it.offset..it.offset + text.len();
        if source.get(r.clone()) != Some(text) {
            return None;
        }
        ranges.push(r);
    }
    let (mut code, mut context, mut at) = (String::new(), String::new(), 0);
    for r in &ranges {
        context.push_str(&source[at..r.start]);
        code.push_str(&source[r.clone()]);
        code.push_str("\n\n");
        at = r.end;
    }
    context.push_str(&source[at..]);
    // The context's names the code uses, in source order (the whole list can be longer
    // than the code: heartwall's hundreds of macros).
    let used: HashSet<&str> = keep
        .iter()
        .flat_map(|&j| &fi.items[j].refs)
        .map(|(n, _)| n.as_str())
        .collect();
    let mut context_names: Vec<String> = Vec::new();
    for (j, it) in fi.items.iter().enumerate() {
        if !keep.contains(&j) && it.kind != ItemKind::Prototype {
            for n in it.names.iter().filter(|n| used.contains(n.as_str())) {
                if !context_names.contains(n) {
                    context_names.push(n.clone());
                }
            }
        }
    }
    let helpers = keep
        .iter()
        .filter(|&&j| j != start)
        .map(|&j| fi.items[j].names[0].clone())
        .collect();
    Some(HelperCut {
        code: format!("{}\n", code.trim_end()),
        context: format!("{}\n", context.trim_end()),
        context_names,
        helpers,
    })
}

/// Resolve `#include "target"` written in `from` to a file of the scope the way a
/// compiler does: relative to `from`'s folder first, then relative to each of the scope's
/// include folders in order. Never by file name alone.
/// How a name an item uses is looked up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lookup {
    /// Whatever defines it: a macro, function, type or global.
    Any,
    /// Named by an `#if` around or inside the item: only a macro, maybe defined nowhere.
    Condition,
    /// A name the item declares and calls ([`super::index::Item::macro_calls`]): only a
    /// function-like macro.
    MacroCall,
}

/// An item's notes (constructs NVRTC rejects, rewrites made for it) as the unit's
/// warnings, each naming the item and where it is.
fn note_diagnostics(it: &Item, name: &str, path: &str, diags: &mut Vec<Diagnostic>) {
    for (code, msg, l) in &it.notes {
        diags.push(
            Diagnostic::new(
                Level::Warning,
                code,
                format!("{msg} (`{name}`, {path}:{l})"),
            )
            .at(*l),
        );
    }
}

/// `template <>` before a function: an explicit specialization.
fn is_explicit_specialization(text: &str) -> bool {
    text.trim_start()
        .strip_prefix("template")
        .is_some_and(|r| r.trim_start().starts_with("<>") || r.trim_start().starts_with("< >"))
}

/// `template <…>` with parameters: a primary template.
fn is_primary_template(text: &str) -> bool {
    text.trim_start()
        .strip_prefix("template")
        .is_some_and(|r| r.trim_start().starts_with('<'))
        && !is_explicit_specialization(text)
}

/// `#define NAME(` with no space before the parenthesis: a function-like macro.
fn is_function_like_macro(text: &str, name: &str) -> bool {
    let rest = text.trim_start().trim_start_matches('#').trim_start();
    rest.strip_prefix("define")
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix(name))
        .is_some_and(|r| r.starts_with('('))
}

pub fn resolve_include(scope: &Scope, from: &str, target: &str) -> Option<String> {
    resolve_in(
        |p| scope.files.contains_key(p),
        scope.include_dirs,
        from,
        target,
    )
}

/// [`resolve_include`] over any set of root-relative paths (`exists`).
pub fn resolve_in(
    exists: impl Fn(&str) -> bool,
    include_dirs: &[String],
    from: &str,
    target: &str,
) -> Option<String> {
    std::iter::once(parent(from))
        .chain(include_dirs.iter().map(String::as_str))
        .map(|d| normalize_path(&join(d, target)))
        .find(|p| !p.starts_with("..") && exists(p))
}

fn parent(p: &str) -> &str {
    p.rfind('/').map(|i| &p[..i]).unwrap_or("")
}

fn join(dir: &str, rel: &str) -> String {
    if dir.is_empty() {
        rel.to_string()
    } else {
        format!("{dir}/{rel}")
    }
}

fn normalize_path(p: &str) -> String {
    let mut out: Vec<&str> = Vec::new();
    for part in p.split(['/', '\\']) {
        match part {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|l| *l != "..") {
                    out.pop();
                } else {
                    out.push("..");
                }
            }
            _ => out.push(part),
        }
    }
    out.join("/")
}

/// How a file became visible to the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reach {
    /// The kernel's own file, a header it includes, a file including it, or one of
    /// that file's headers.
    Include,
    /// Not connected by includes: used only for names found nowhere else.
    Fallback,
}

/// Files in lookup order: the kernel's file, what it includes (breadth first), then
/// each file that includes it (transitively) followed by what that one includes.
fn visible_files<'a>(scope: &Scope<'a>, file: &str) -> Vec<(&'a str, Reach)> {
    let keys: Vec<&'a str> = scope.files.keys().map(String::as_str).collect();
    let mut down: HashMap<&str, Vec<&'a str>> = HashMap::new();
    for (k, fi) in scope.files.iter() {
        let mut v = Vec::new();
        // `#include <common.cu>` naming a file of the scope is a local include too.
        for inc in fi.includes.iter() {
            if let Some(r) = resolve_include(scope, k, &inc.target) {
                if let Some(&key) = keys.iter().find(|x| **x == r) {
                    v.push(key);
                }
            }
        }
        down.insert(k.as_str(), v);
    }
    let Some(&own) = keys.iter().find(|k| **k == file) else {
        return Vec::new();
    };
    let mut order: Vec<&'a str> = Vec::new();
    let mut seen: HashSet<&str> = HashSet::new();
    let add_down = |start: &'a str, order: &mut Vec<&'a str>, seen: &mut HashSet<&'a str>| {
        let mut queue = std::collections::VecDeque::from([start]);
        while let Some(f) = queue.pop_front() {
            if !seen.insert(f) {
                continue;
            }
            order.push(f);
            for d in down.get(f).into_iter().flatten() {
                queue.push_back(d);
            }
        }
    };
    add_down(own, &mut order, &mut seen);
    // Includers, nearest first.
    let mut ups: Vec<&'a str> = Vec::new();
    let mut frontier = vec![own];
    let mut up_seen: HashSet<&str> = HashSet::from([own]);
    while !frontier.is_empty() {
        let mut next = Vec::new();
        for f in frontier {
            for (k, ds) in &down {
                if ds.contains(&f) {
                    let key = *keys.iter().find(|x| *x == k).expect("a scope key");
                    if up_seen.insert(key) {
                        ups.push(key);
                        next.push(key);
                    }
                }
            }
        }
        next.sort();
        frontier = next;
    }
    for u in ups {
        add_down(u, &mut order, &mut seen);
    }
    let mut out: Vec<(&'a str, Reach)> = order.into_iter().map(|f| (f, Reach::Include)).collect();
    for k in keys {
        if !seen.contains(k) {
            out.push((k, Reach::Fallback));
        }
    }
    out
}

type ItemId = (usize, usize); // (file rank in `files`, item index)

#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    InProgress,
    Done,
}

struct Closure<'s, 'a> {
    files: Vec<(&'a str, Reach, &'a FileIndex)>,
    kernel_item: usize,
    state: HashMap<ItemId, State>,
    /// Non-macro items in dependency order (the kernel last).
    order: Vec<ItemId>,
    macros: Vec<ItemId>,
    /// Prototypes to emit before an item (mutual recursion).
    protos: HashMap<ItemId, Vec<ItemId>>,
    shims: Vec<&'static Shim>,
    unresolved: BTreeMap<String, String>,
    /// CUDA headers the unit's names need though no contributing file includes them.
    implied: Vec<&'static str>,
    outside: BTreeMap<String, String>,
    declaration_only: BTreeMap<String, String>,
    scope: &'s Scope<'a>,
}

impl<'s, 'a> Closure<'s, 'a> {
    fn new(scope: &'s Scope<'a>, file: &str, kernel_item: usize) -> Self {
        let files = visible_files(scope, file)
            .into_iter()
            .map(|(f, r)| (f, r, &scope.files[f]))
            .collect();
        Closure {
            files,
            kernel_item,
            state: HashMap::new(),
            order: Vec::new(),
            macros: Vec::new(),
            protos: HashMap::new(),
            shims: Vec::new(),
            unresolved: BTreeMap::new(),
            implied: Vec::new(),
            outside: BTreeMap::new(),
            declaration_only: BTreeMap::new(),
            scope,
        }
    }

    fn item(&self, id: ItemId) -> &'a Item {
        &self.files[id.0].2.items[id.1]
    }

    fn kernel(&self) -> &'a Item {
        self.item((0, self.kernel_item))
    }

    /// Whether an item can coexist with the kernel: in the kernel's own file, an item
    /// in another branch of an `#if` the kernel sits in (the `#else` of its `#ifdef`)
    /// cannot; the kernel's branches are taken as true.
    fn compatible(&self, id: ItemId) -> bool {
        if id.0 != 0 {
            return true;
        }
        let k = &self.kernel().cond;
        self.item(id).cond.iter().all(|c| {
            k.iter()
                .all(|kc| kc.frame != c.frame || kc.branch == c.branch)
        })
    }

    /// `qual::base`: the items named `base` declared in a namespace that is or ends in
    /// `qual` (`dUtils::AigNodeID`, `dUtils::inner::id`), in the first file that has any.
    /// Nothing else: a class's static member or a namespace isolation does not carry
    /// (`std::`, `cub::`) resolves to nothing, silently.
    fn resolve_qualified(&self, qual: &str, base: &str) -> Vec<ItemId> {
        for (r, (_, _, fi)) in self.files.iter().enumerate() {
            let Some(ids) = fi.by_name.get(base) else {
                continue;
            };
            let found: Vec<ItemId> = ids
                .iter()
                .map(|&i| (r, i))
                .filter(|&id| !(id.0 == 0 && id.1 == self.kernel_item))
                .filter(|&id| {
                    let ns = self.item(id).namespace.as_str();
                    ns == qual || ns.ends_with(&format!("::{qual}"))
                })
                .filter(|&id| self.compatible(id))
                .collect();
            if !found.is_empty() {
                return found;
            }
        }
        Vec::new()
    }

    /// Definitions of `name` visible from file `from`: all of them in the first file
    /// (in lookup order) that has any.
    fn resolve(&mut self, name: &str, from: usize, only_macros: bool) -> Vec<ItemId> {
        if let Some((qual, base)) = name.rsplit_once("::") {
            return self.resolve_qualified(qual, base);
        }
        let mut ranks: Vec<usize> = vec![from];
        ranks.extend((0..self.files.len()).filter(|&r| r != from));
        let builtin = builtins::is_builtin(name);
        for r in ranks {
            let (path, reach, fi) = self.files[r];
            // A builtin is never taken from a file no include connects (a host
            // `typedef struct { … } int2;` in a CPU reference must not shadow CUDA's).
            if builtin && reach == Reach::Fallback {
                continue;
            }
            // A macro an `#if` asks about is defined or not by what the preprocessor
            // reads: the kernel's file and its includes. One defined only in a file no
            // include connects is undefined here (llm.c's `classifier_fused.cu` has
            // `#if defined(ENABLE_BF16)` and float; its siblings `#define ENABLE_BF16`).
            if only_macros && reach == Reach::Fallback {
                continue;
            }
            let Some(ids) = fi.by_name.get(name) else {
                continue;
            };
            let mut cands: Vec<ItemId> = ids
                .iter()
                .map(|&i| (r, i))
                .filter(|&id| !(id.0 == 0 && id.1 == self.kernel_item))
                .filter(|&id| self.compatible(id))
                .filter(|&id| {
                    let it = self.item(id);
                    let k = it.kind;
                    if only_macros {
                        return k == ItemKind::Macro;
                    }
                    // A builtin name is only taken over by a macro or a device function
                    // (a host `max` in a utility header must not shadow the device one).
                    !builtin
                        || k == ItemKind::Macro
                        || (matches!(k, ItemKind::Function | ItemKind::Prototype) && it.device)
                })
                .collect();
            if cands.is_empty() {
                continue;
            }
            let has_def = cands
                .iter()
                .any(|&id| matches!(self.item(id).kind, ItemKind::Function | ItemKind::Kernel));
            if has_def {
                // A primary template declared without a body whose definitions are all
                // explicit specializations (`template <int D> float P(float);` then
                // `template <> float P<3>(float) {…}`): the declaration must come along, or
                // no specialization names a template.
                let specializations_only = cands
                    .iter()
                    .filter(|&&id| self.item(id).kind == ItemKind::Function)
                    .all(|&id| is_explicit_specialization(&self.item(id).text));
                cands.retain(|&id| {
                    let it = self.item(id);
                    it.kind != ItemKind::Prototype
                        || (specializations_only && is_primary_template(&it.text))
                });
                let dev = cands.iter().any(|&id| {
                    matches!(self.item(id).kind, ItemKind::Function) && self.item(id).device
                });
                if dev {
                    cands.retain(|&id| {
                        !matches!(self.item(id).kind, ItemKind::Function) || self.item(id).device
                    });
                }
            } else if cands
                .iter()
                .all(|&id| self.item(id).kind == ItemKind::Prototype)
            {
                // Only declared here: a definition may be in a later file.
                let later = self.files[r + 1..].iter().any(|(_, _, f)| {
                    f.by_name.get(name).is_some_and(|v| {
                        v.iter()
                            .any(|&i| matches!(f.items[i].kind, ItemKind::Function))
                    })
                });
                if later {
                    continue;
                }
                let at = format!("{path}:{}", self.item(cands[0]).line);
                self.declaration_only.entry(name.to_string()).or_insert(at);
            }
            // Of several definitions of one macro under the same condition, the last one
            // before the kernel (in its own file) or the last one (elsewhere) wins.
            let kernel_offset = self.kernel().offset;
            let mut keep: Vec<ItemId> = Vec::new();
            for &id in &cands {
                let it = self.item(id);
                if it.kind == ItemKind::Macro {
                    if let Some(pos) = keep.iter().position(|&o| {
                        self.item(o).kind == ItemKind::Macro && self.item(o).cond == it.cond
                    }) {
                        let prev = self.item(keep[pos]);
                        let better = r != 0
                            || it.offset < kernel_offset
                            || prev.offset > kernel_offset && it.offset < prev.offset;
                        if better {
                            keep[pos] = id;
                        }
                        continue;
                    }
                }
                keep.push(id);
            }
            if reach == Reach::Fallback {
                self.outside
                    .entry(name.to_string())
                    .or_insert_with(|| path.to_string());
            }
            return keep;
        }
        Vec::new()
    }

    /// A kernel template over a function pointer (`template<matmul_fn_ptr f> __global__ …`,
    /// llm.c's `trimul_global`) is instantiated with `__device__` functions the host names
    /// only as template arguments (`trimul_launcher<matmul_tri_naive>(…)`). A capture's
    /// name expression (`trimul_global<&matmul_tri_naive>`) refers to one, so the unit
    /// carries each device function of the kernel's file that its text names so.
    fn visit_function_arguments(&mut self, template_params: &[String]) {
        let over_a_function = template_params.iter().any(|p| {
            let ty = p
                .trim()
                .rsplit_once(|c: char| c.is_whitespace())
                .map_or("", |(t, _)| t.trim());
            ty.contains("(*")
                || (!matches!(ty, "" | "typename" | "class")
                    && super::lex::idents(ty).len() == 1
                    && self
                        .resolve(ty, 0, false)
                        .iter()
                        .any(|&t| self.item(t).text.contains("(*")))
        });
        if !over_a_function {
            return;
        }
        let fi = self.files[0].2;
        let named: Vec<ItemId> = (0..fi.items.len())
            .filter(|&i| {
                let it = &fi.items[i];
                it.kind == ItemKind::Function
                    && it.device
                    && it.names.iter().any(|n| {
                        fi.items
                            .iter()
                            .any(|o| named_as_template_argument(&o.text, n))
                    })
            })
            .map(|i| (0, i))
            .filter(|&id| self.compatible(id))
            .collect();
        for id in named {
            if !self.state.contains_key(&id) {
                self.visit(id);
            }
        }
    }

    fn visit(&mut self, id: ItemId) {
        self.state.insert(id, State::InProgress);
        let it = self.item(id);
        let lazy = if it.lazy {
            Some(super::index::lazy_refs(it))
        } else {
            None
        };
        let (own_refs, own_conds) = match &lazy {
            Some((r, c)) => (r.as_slice(), c.as_slice()),
            None => (it.refs.as_slice(), &[][..]),
        };
        let refs: Vec<(&str, u32, Lookup)> = own_refs
            .iter()
            .map(|(n, l)| (n.as_str(), *l, Lookup::Any))
            .chain(
                it.cond_refs
                    .iter()
                    .chain(own_conds)
                    .map(|n| (n.as_str(), it.line, Lookup::Condition)),
            )
            .chain(
                it.macro_calls
                    .iter()
                    .map(|(n, l)| (n.as_str(), *l, Lookup::MacroCall)),
            )
            .collect();
        for (name, line, lookup) in refs {
            let cond = lookup == Lookup::Condition;
            if lookup == Lookup::MacroCall {
                // Only a function-like macro the preprocessor would apply: one in a file
                // the includes reach, or before the item in its own.
                let macros: Vec<ItemId> = self
                    .resolve(name, id.0, true)
                    .into_iter()
                    .filter(|&t| {
                        let m = self.item(t);
                        is_function_like_macro(&m.text, name)
                            && (t.0 != id.0 || m.offset < it.offset)
                            && self.files[t.0].1 != Reach::Fallback
                    })
                    .collect();
                for t in macros {
                    if !self.state.contains_key(&t) {
                        self.visit(t);
                    }
                }
                continue;
            }
            for &h in builtins::implied_headers(name) {
                if !self.implied.contains(&h) {
                    self.implied.push(h);
                }
            }
            let targets = self.resolve(name, id.0, cond);
            if targets.is_empty() {
                // A qualified name resolves only to a namespaced item; a namespace's own
                // name is no item either.
                if cond || name.contains("::") || self.is_namespace(name) {
                    continue;
                }
                if let Some(s) = builtins::shim(name) {
                    if !self.shims.iter().any(|x| x.name == s.name) {
                        self.shims.push(s);
                    }
                } else if !builtins::is_builtin(name)
                    // A macro body may name the caller's locals; and a name tested by
                    // the `#if` around an item is only used where it is defined.
                    && it.kind != ItemKind::Macro
                    && !it.cond_refs.iter().any(|c| c == name)
                {
                    let path = self.files[id.0].0;
                    self.unresolved
                        .entry(name.to_string())
                        .or_insert_with(|| format!("{path}:{line}"));
                }
                continue;
            }
            for t in targets {
                match self.state.get(&t) {
                    Some(State::Done) => {}
                    Some(State::InProgress) => {
                        if matches!(self.item(t).kind, ItemKind::Function) {
                            self.protos.entry(id).or_default().push(t);
                        }
                    }
                    None => self.visit(t),
                }
            }
        }
        // Operator overloads for the types this item uses.
        if it.kind != ItemKind::Macro {
            let used: HashSet<&str> = own_refs.iter().map(|(n, _)| n.as_str()).collect();
            for r in 0..self.files.len() {
                let (_, reach, fi) = self.files[r];
                if reach != Reach::Include {
                    continue;
                }
                for &oi in &fi.operators {
                    let oid = (r, oi);
                    if self.state.get(&oid) == Some(&State::Done) || !self.compatible(oid) {
                        continue;
                    }
                    if self
                        .item(oid)
                        .operator_types
                        .iter()
                        .any(|t| used.contains(t.as_str()))
                        && !host_stream_operator(self.item(oid))
                    {
                        if self.state.get(&oid) == Some(&State::InProgress) {
                            // A cycle through overloads (helper_math.h: `lerp` uses `+`,
                            // which uses `make_float2`, …): declare the operator first.
                            if oid != id {
                                self.protos.entry(id).or_default().push(oid);
                            }
                        } else {
                            self.visit(oid);
                        }
                    }
                }
            }
        }
        self.state.insert(id, State::Done);
        if it.kind == ItemKind::Macro {
            self.macros.push(id);
        } else {
            self.order.push(id);
        }
    }

    /// The `#if` branches an item needs around it, outermost first: all of them, except in
    /// the kernel's own file, where the branches the kernel sits in are taken as true.
    fn conds(&self, id: ItemId) -> Vec<&CondBranch> {
        if id.0 == 0 {
            let k = &self.kernel().cond;
            self.item(id)
                .cond
                .iter()
                .filter(|c| !k.iter().any(|kc| kc.frame == c.frame))
                .collect()
        } else {
            self.item(id).cond.iter().collect()
        }
    }

    /// The item's text inside the `#if` branches it needs.
    /// Whether some file of the scope declares a namespace of this name.
    fn is_namespace(&self, name: &str) -> bool {
        self.files.iter().any(|(_, _, fi)| {
            fi.items
                .iter()
                .any(|it| it.namespace.split("::").any(|p| p == name))
        })
    }

    /// The namespace an item is emitted in: its own, less the kernel's (the kernel and the
    /// helpers of its own namespace are emitted at file scope, where the kernel's name
    /// expression finds it); None at file scope and for macros.
    fn namespace_of(&self, id: ItemId) -> Option<&'a str> {
        let it = self.item(id);
        let k = self.kernel().namespace.as_str();
        if it.namespace.is_empty() || it.kind == ItemKind::Macro || it.namespace == k {
            return None;
        }
        match k.is_empty() {
            true => Some(it.namespace.as_str()),
            false => Some(
                it.namespace
                    .strip_prefix(k)
                    .and_then(|r| r.strip_prefix("::"))
                    .unwrap_or(it.namespace.as_str()),
            ),
        }
    }

    /// An item's text inside its namespace (`namespace dUtils { … }`, so that
    /// `dUtils::AigNodeID(x)` finds it), followed by the file's `using namespace dUtils;`
    /// when one of the unit's files opens it; the text as is at file scope.
    fn in_namespace(&self, id: ItemId, text: &str) -> String {
        let Some(ns) = self.namespace_of(id) else {
            return text.to_string();
        };
        let parts: Vec<&str> = ns.split("::").collect();
        let mut out = String::new();
        for p in &parts {
            out.push_str(&format!("namespace {p} {{ "));
        }
        out.push('\n');
        out.push_str(text.trim_end());
        out.push('\n');
        out.push_str(&"} ".repeat(parts.len()));
        out.push_str(&format!("// namespace {ns}\n"));
        let full = self.item(id).namespace.as_str();
        if self
            .files
            .iter()
            .any(|f| f.2.using_namespaces.iter().any(|u| u == full))
        {
            out.push_str(&format!("using namespace {full};\n"));
        }
        out
    }

    fn wrapped(&self, id: ItemId, text: &str) -> String {
        let text = &self.in_namespace(id, text);
        let conds = self.conds(id);
        if conds.is_empty() {
            return format!("{}\n", text.trim_end());
        }
        let expr = conds
            .iter()
            .map(|c| c.expr.as_str())
            .collect::<Vec<_>>()
            .join(" && ");
        format!("#if {expr}\n{}\n#endif\n", text.trim_end())
    }

    /// Where each file's text sits in the translation unit the preprocessor builds: the
    /// chain of `#include` lines leading to it from the outermost includer (one root per
    /// file not included by another connected file). A header included twice counts where
    /// it is first included (include guards). None for files not connected by includes.
    fn tu_keys(&self) -> Vec<Option<Vec<u32>>> {
        let n = self.files.len();
        let index: HashMap<&str, usize> = self
            .files
            .iter()
            .enumerate()
            .map(|(i, f)| (f.0, i))
            .collect();
        let children: Vec<Vec<(u32, usize)>> = self
            .files
            .iter()
            .map(|&(path, reach, fi)| {
                if reach != Reach::Include {
                    return Vec::new();
                }
                fi.includes()
                    .iter()
                    .filter_map(|inc| {
                        let target = resolve_include(self.scope, path, &inc.target)?;
                        let &j = index.get(target.as_str())?;
                        (self.files[j].1 == Reach::Include).then_some((inc.line, j))
                    })
                    .collect()
            })
            .collect();
        let included: HashSet<usize> = children.iter().flatten().map(|&(_, j)| j).collect();
        let mut roots: Vec<usize> = (0..n)
            .filter(|&r| self.files[r].1 == Reach::Include && !included.contains(&r))
            .collect();
        roots.sort_by_key(|&r| self.files[r].0);
        let mut keys: Vec<Option<Vec<u32>>> = vec![None; n];
        fn walk(
            r: usize,
            key: Vec<u32>,
            children: &[Vec<(u32, usize)>],
            keys: &mut Vec<Option<Vec<u32>>>,
        ) {
            if keys[r].as_ref().is_some_and(|k| *k <= key) {
                return;
            }
            keys[r] = Some(key.clone());
            for &(line, j) in &children[r] {
                let mut k = key.clone();
                k.push(line);
                walk(j, k, children, keys);
            }
        }
        for (k, &r) in roots.iter().enumerate() {
            walk(r, vec![k as u32], &children, &mut keys);
        }
        // A cycle with no root (a.h includes b.h includes a.h): start at the kernel's file.
        if keys[0].is_none() {
            walk(0, vec![roots.len() as u32], &children, &mut keys);
        }
        keys
    }

    fn emit(mut self) -> (String, Pulled, Vec<Diagnostic>, bool) {
        let mut out = String::new();
        let mut pulled = Pulled::default();
        let mut diags: Vec<Diagnostic> = Vec::new();

        // Files that contributed, kernel's first.
        let contributing = self.contributing();
        pulled.local_files = contributing[1..]
            .iter()
            .map(|&r| self.files[r].0.to_string())
            .collect();
        self.emit_headers(&contributing, &mut out, &mut pulled, &mut diags);

        // Legacy texture references the shim can replace (before the macros, so that no
        // macro of the suite rewrites the shim's names).
        let textures: HashMap<ItemId, Result<texture::Shimmed, String>> = self
            .order
            .iter()
            .filter(|&&id| self.item(id).kind == ItemKind::Texture)
            .map(|&id| (id, texture::rewrite(&self.item(id).text)))
            .collect();
        if textures.values().any(|r| r.is_ok()) {
            out.push_str(texture::SHIM);
            out.push('\n');
        }

        let macros = self.emit_macros(&contributing, &mut out, &mut pulled, &mut diags);

        let mut texture = false;
        let order = std::mem::take(&mut self.order);
        for &id in &order {
            self.emit_item(id, &textures, &mut out, &mut diags);
            texture |= self.note_item(id, &textures, &mut pulled, &mut diags);
        }
        self.closing_diagnostics(&macros, &mut diags);
        let source = format!("{}\n", out.trim_end());
        (source, pulled, diags, texture)
    }

    /// The files that contributed an item or a macro, the kernel's first.
    fn contributing(&self) -> Vec<usize> {
        let mut contributing: Vec<usize> = vec![0];
        for id in self.macros.iter().chain(&self.order) {
            if !contributing.contains(&id.0) {
                contributing.push(id.0);
            }
        }
        contributing
    }

    /// System headers (keep those NVRTC ships, drop host ones, say which) and the shims for
    /// host-header names the unit uses.
    fn emit_headers(
        &mut self,
        contributing: &[usize],
        out: &mut String,
        pulled: &mut Pulled,
        diags: &mut Vec<Diagnostic>,
    ) {
        let mut kept: Vec<String> = Vec::new();
        let mut dropped: BTreeMap<String, String> = BTreeMap::new();
        let mut thrust: BTreeMap<String, String> = BTreeMap::new();
        let mut umbrella: Option<String> = None;
        for &r in contributing {
            let (path, _, fi) = self.files[r];
            for inc in fi.includes.iter().filter(|i| i.system) {
                if resolve_include(self.scope, path, &inc.target).is_some() {
                    continue;
                }
                if builtins::is_thrust_host_header(&inc.target) {
                    thrust
                        .entry(format!("<{}>", inc.target))
                        .or_insert_with(|| format!("{path}:{}", inc.line));
                } else if builtins::is_cub_umbrella(&inc.target) {
                    umbrella.get_or_insert_with(|| format!("<{}>", inc.target));
                } else if builtins::keep_system_header(&inc.target) {
                    if !kept.contains(&inc.target) {
                        kept.push(inc.target.clone());
                    }
                } else {
                    dropped
                        .entry(format!("<{}>", inc.target))
                        .or_insert_with(|| format!("{path}:{}", inc.line));
                }
            }
            for inc in fi.includes.iter().filter(|i| !i.system) {
                if r == 0 && resolve_include(self.scope, path, &inc.target).is_none() {
                    dropped
                        .entry(format!("\"{}\"", inc.target))
                        .or_insert_with(|| format!("{path}:{}", inc.line));
                }
            }
        }
        for h in &self.implied {
            if !kept.iter().any(|k| k == h) {
                kept.push(h.to_string());
            }
        }
        // What the unit's own code names in `cub::` and `std::`.
        let masked: Vec<String> = self
            .order
            .iter()
            .chain(&self.macros)
            .map(|&id| lex::mask(&self.item(id).text))
            .collect();
        let named = |ns: &str| -> Vec<String> {
            let mut v: Vec<String> = Vec::new();
            for m in &masked {
                for n in lex::qualified_names(m, ns) {
                    if !v.iter().any(|x| x == n) {
                        v.push(n.to_string());
                    }
                }
            }
            v
        };
        if let Some(u) = &umbrella {
            let cub = named("cub");
            let specific = builtins::cub_headers(cub.iter().map(String::as_str));
            diags.push(Diagnostic::new(
                Level::Info,
                "cub_umbrella_replaced",
                format!(
                    "{u} refuses NVRTC: replaced by the CUB device headers for {}: {}",
                    if cub.is_empty() {
                        "no cub:: name".to_string()
                    } else {
                        format!("cub::{}", cub.join(", cub::"))
                    },
                    specific.join(", ")
                ),
            ));
            for h in specific {
                if !kept.iter().any(|k| k == h) {
                    kept.push(h.to_string());
                }
            }
        }
        // `cub::` named by a unit whose files include no CUB header (the file that includes
        // the kernel's header did): the device headers. (`thrust/complex.h` is no such
        // header: it pulls `<iostream>`'s streams, which NVRTC lacks.)
        let has = |kept: &[String], prefix: &str| kept.iter().any(|k| k.starts_with(prefix));
        let cub = named("cub");
        if umbrella.is_none() && !cub.is_empty() && !has(&kept, "cub/") {
            let specific = builtins::cub_headers(cub.iter().map(String::as_str));
            diags.push(Diagnostic::new(
                Level::Info,
                "cub_header_implied",
                format!(
                    "cub::{} named with no CUB header in the unit's files (an including file brings it): {}",
                    cub.join(", cub::"),
                    specific.join(", ")
                ),
            ));
            kept.extend(specific.iter().map(|h| h.to_string()));
        }
        // `std::` names NVRTC lacks come from libcu++, brought into `std` by a using.
        let cuda_std: Vec<(String, &str)> = named("std")
            .into_iter()
            .filter_map(|n| builtins::cuda_std_header(&n).map(|h| (n, h)))
            .collect();
        for (_, h) in &cuda_std {
            if !kept.iter().any(|k| k == h) {
                kept.push(h.to_string());
            }
        }
        for h in &kept {
            out.push_str(&format!("#include <{h}>\n"));
            pulled.headers.push(format!("<{h}>"));
        }
        // A file's `using namespace cooperative_groups;` (or `nvcuda`, `cub`) for the API
        // of a header the unit keeps: the unit's code names it unqualified.
        let mut opened: Vec<&str> = Vec::new();
        for &r in contributing {
            for ns in &self.files[r].2.using_namespaces {
                let provided = builtins::namespace_header(ns)
                    .is_some_and(|h| kept.iter().any(|k| k.starts_with(h)));
                // The `wmma` shim opens `nvcuda` already.
                let shimmed = self
                    .shims
                    .iter()
                    .any(|s| s.definition.trim() == format!("using namespace {ns};"));
                if provided && !shimmed && !opened.contains(&ns.as_str()) {
                    out.push_str(&format!("using namespace {ns};\n"));
                    opened.push(ns);
                }
            }
        }
        if !cuda_std.is_empty() {
            let names: Vec<String> = cuda_std
                .iter()
                .map(|(n, _)| format!("using cuda::std::{n};"))
                .collect();
            out.push_str(&format!(
                "// std:: names NVRTC lacks, from libcu++\nnamespace std {{ {} }}\n",
                names.join(" ")
            ));
        }
        for (h, at) in &thrust {
            diags.push(Diagnostic::new(
                Level::Info,
                "host_header_dropped",
                format!(
                    "{h} (included at {at}) is a Thrust header with host code, which NVRTC refuses in a device unit; dropped"
                ),
            ));
        }
        for (h, at) in &dropped {
            diags.push(Diagnostic::new(
                Level::Info,
                "host_header_dropped",
                format!(
                    "{h} (included at {at}) is not available to device code under NVRTC; dropped"
                ),
            ));
        }
        // Shims for host-header names the unit uses, grouped by header (the training text
        // gives each group back as the header's `#include`: `compile_only::source_text`).
        self.shims.sort_by_key(|s| s.header);
        let mut last_header = "";
        for s in &self.shims {
            if s.header != last_header {
                out.push_str(&super::compile_only::shim_comment(s.header));
                pulled.headers.push(s.header.to_string());
                last_header = s.header;
            }
            out.push_str(s.definition);
            out.push('\n');
        }
        if !kept.is_empty() || !self.shims.is_empty() || !cuda_std.is_empty() {
            out.push('\n');
        }
    }

    /// Macros in the order the preprocessor meets them: `#if defined(X)` in one header
    /// must see `#define X` from a header included before it. Returns that order.
    fn emit_macros(
        &self,
        contributing: &[usize],
        out: &mut String,
        pulled: &mut Pulled,
        diags: &mut Vec<Diagnostic>,
    ) -> Vec<ItemId> {
        let tu = self.tu_keys();
        let mut macros = self.macros.clone();
        macros.sort_by_key(|&(r, i)| {
            let mut k = tu[r].clone().unwrap_or_else(|| {
                vec![
                    u32::MAX,
                    contributing.iter().position(|&c| c == r).unwrap_or(r) as u32,
                ]
            });
            k.push(self.item((r, i)).line);
            (k, i)
        });
        // Macros of one `#if` group stay inside one `#if … #endif`: the condition is tested
        // once, as the preprocessor does. Wrapping each `#define` alone would test it again
        // after the group's own defines (`#if !defined(NI) && !defined(NJ)` holding
        // `#define NI …` then `#define NJ …` loses NJ).
        let mut open: Vec<(usize, &CondBranch)> = Vec::new();
        for &id in &macros {
            let it = self.item(id);
            let conds = self.conds(id);
            let keep = open
                .iter()
                .zip(&conds)
                .take_while(|((r, o), c)| *r == id.0 && o.frame == c.frame && o.branch == c.branch)
                .count();
            while open.len() > keep {
                open.pop();
                out.push_str("#endif\n");
            }
            for c in &conds[keep..] {
                out.push_str(&format!("#if {}\n", c.expr));
                open.push((id.0, c));
            }
            out.push_str(it.text.trim_end());
            out.push('\n');
            if !pulled.macros.contains(&it.names[0]) {
                pulled.macros.push(it.names[0].clone());
            }
            // A body rewritten for NVRTC (GNU C): what changed, so export gives the
            // suite's text back, and why.
            if let Some(written) = &it.written {
                if let Some(d) = super::compile_only::note(written, &it.text, false) {
                    diags.push(d.at(it.line));
                }
            }
            note_diagnostics(it, &it.names[0], self.files[id.0].0, diags);
        }
        for _ in &open {
            out.push_str("#endif\n");
        }
        if !macros.is_empty() {
            out.push('\n');
        }
        macros
    }

    /// One item's text (after its prototypes), as NVRTC gets it; what changed only for
    /// NVRTC is recorded, so export can give the source back.
    fn emit_item(
        &self,
        id: ItemId,
        textures: &HashMap<ItemId, Result<texture::Shimmed, String>>,
        out: &mut String,
        diags: &mut Vec<Diagnostic>,
    ) {
        let it = self.item(id);
        for &p in self.protos.get(&id).into_iter().flatten() {
            let pi = self.item(p);
            if let Some(h) = pi.header_len {
                let proto = format!("{};", pi.text[..h].trim_end());
                out.push_str(&self.wrapped(p, &proto));
            }
        }
        let is_kernel = id == (0, self.kernel_item);
        // The kernel keeps its linkage as written (`static`, `extern "C"` or none): it is
        // found in the module by an NVRTC name expression (`k`, `k<float>`), which serves
        // templates and overloads alike, so nothing is added for the lookup.
        let text = if it.kind == ItemKind::Global {
            const_global_text(&it.text)
        } else if it.kind == ItemKind::Type {
            without_host_members(&it.text)
        } else if let Some(Ok(t)) = textures.get(&id) {
            t.text.clone()
        } else {
            it.text.clone()
        };
        out.push_str(&self.wrapped(id, &text));
        out.push('\n');
        let written = it.written.as_deref().unwrap_or(&it.text);
        if let Some(d) = super::compile_only::note(written, &text, is_kernel) {
            diags.push(d.at(it.line));
        }
    }

    /// What one emitted item pulled in, and its diagnostics; true for a texture reference.
    fn note_item(
        &self,
        id: ItemId,
        textures: &HashMap<ItemId, Result<texture::Shimmed, String>>,
        pulled: &mut Pulled,
        diags: &mut Vec<Diagnostic>,
    ) -> bool {
        let it = self.item(id);
        let path = self.files[id.0].0;
        let is_kernel = id == (0, self.kernel_item);
        let name = it.names[0].clone();
        let mut texture = false;
        match it.kind {
            ItemKind::Kernel if is_kernel => {}
            ItemKind::Kernel | ItemKind::Function | ItemKind::Prototype => {
                if !pulled.helpers.contains(&name) {
                    pulled.helpers.push(name.clone())
                }
            }
            ItemKind::Global => pulled.globals.extend(it.names.iter().cloned()),
            ItemKind::Texture => {
                texture = true;
                pulled.globals.extend(it.names.iter().cloned());
                texture_diagnostics(it, path, textures.get(&id), diags);
            }
            ItemKind::Type => {
                if !pulled.types.contains(&name) {
                    pulled.types.push(name.clone())
                }
            }
            ItemKind::Macro => {}
        }
        note_diagnostics(it, &name, path, diags);
        if let Some(l) = it.error_line {
            diags.push(
                Diagnostic::new(
                    if is_kernel { Level::Warning } else { Level::Info },
                    "parse_error_recovered",
                    format!(
                        "tree-sitter could not fully parse `{name}` ({path}:{l}); it was isolated from its text"
                    ),
                )
                .at(l),
            );
        }
        texture
    }

    /// Diagnostics about the unit as a whole: macros parsed with errors, names resolved
    /// nowhere, declarations without definitions, names found outside the includes.
    fn closing_diagnostics(&self, macros: &[ItemId], diags: &mut Vec<Diagnostic>) {
        let own_path = self.files[0].0;
        for &id in macros {
            let it = self.item(id);
            if let Some(l) = it.error_line {
                diags.push(Diagnostic::new(
                    Level::Info,
                    "parse_error_recovered",
                    format!("macro `{}` ({}:{l})", it.names[0], self.files[id.0].0),
                ));
            }
        }
        for (name, at) in &self.unresolved {
            let line = at.rsplit(':').next().and_then(|l| l.parse().ok());
            let mut d = Diagnostic::new(
                Level::Warning,
                "unresolved_identifier",
                format!("`{name}` (used at {at}) is declared nowhere in the scope and is not a CUDA builtin"),
            );
            if at.starts_with(&format!("{own_path}:")) {
                d.line = line;
            }
            diags.push(d);
        }
        for (name, at) in &self.declaration_only {
            diags.push(Diagnostic::new(
                Level::Warning,
                "declaration_only",
                format!("only a declaration of `{name}` was found ({at}); its definition is not in the scope"),
            ));
        }
        for (name, path) in &self.outside {
            diags.push(Diagnostic::new(
                Level::Info,
                "resolved_outside_includes",
                format!("`{name}` was taken from {path}, which no include connects to {own_path}"),
            ));
        }
    }
}

/// A legacy texture reference's diagnostics: what the harness must upload when the shim
/// replaced it, and either way a warning that says what was done.
fn texture_diagnostics(
    it: &Item,
    path: &str,
    shimmed: Option<&Result<texture::Shimmed, String>>,
    diags: &mut Vec<Diagnostic>,
) {
    let name = &it.names[0];
    let names = it.names.join("`, `");
    let message = match shimmed {
        Some(Ok(t)) => {
            let sizes = if t.dim == 2 {
                "width, height and pitch (in elements; pitch 0 = width)"
            } else {
                "width (in elements; 0 = unchecked)"
            };
            diags.push(
                Diagnostic::new(
                    Level::Info,
                    "texture_shim",
                    format!(
                        "harness: upload {{ptr, width, height, pitch}} to the `__device__` symbol `{names}` ({}<{}, {}>) before launch: ptr = a device pointer to the {} elements bound to the texture, and {sizes}",
                        texture::SHIM_TYPE, t.element, t.dim, t.element
                    ),
                )
                .at(it.line),
            );
            format!(
                "texture reference `{name}` ({path}:{}) is a legacy texture<…> reference, removed in CUDA 12: the kernelpair_legacy_texture shim was applied (global-memory reads; unnormalized coordinates, point filtering, clamp addressing assumed)",
                it.line
            )
        }
        other => format!(
            "texture reference `{name}` ({path}:{}) is a legacy texture<…> reference, removed in CUDA 12, and the shim cannot replace it ({}): the unit does not compile on CUDA 12+ until it is ported to cudaTextureObject_t",
            it.line,
            other.and_then(|r| r.as_ref().err()).map_or("unrecognized declaration", String::as_str)
        ),
    };
    diags.push(Diagnostic::new(Level::Warning, "legacy_texture_reference", message).at(it.line));
}

/// A namespace-scope `const` of arithmetic type (`const float k = 1.0 / other;`) is a
/// host variable that nvcc folds into device code; under NVRTC's `-default-device` it
/// would become a `__device__` variable needing dynamic initialization. `constexpr`
/// keeps the original meaning: a compile-time constant.
/// A class or struct without its host-only member functions (`__host__ Table(int n) {
/// cudaMalloc(…); }`, `__host__ ~Table()`, `__host__ void freeMem();`): NVRTC refuses a
/// function explicitly marked `__host__`, and device code cannot call one. Members marked
/// `__host__ __device__` or `__device__`, and unmarked ones, stay.
///
/// A member (or friend) that reads or writes a host stream (`friend std::ostream&
/// operator<<(std::ostream&, const T&)`) and is not marked `__device__` goes too: NVRTC has
/// no `<ostream>`, and device code cannot call it.
fn without_host_members(text: &str) -> String {
    if !text.contains("__host__") && !names_a_stream(text) {
        return text.to_string();
    }
    let tree = super::syntax::parse(text);
    let mut cut: Vec<(usize, usize)> = Vec::new();
    super::tree::visit(tree.root_node(), &mut |n| {
        if n.kind() != "field_declaration_list" {
            return;
        }
        let mut c = n.walk();
        for m in n.named_children(&mut c) {
            // A member template: its declaration is the template's last child; a friend's,
            // the friend declaration's.
            let decl = match m.kind() {
                "template_declaration" | "friend_declaration" => {
                    m.named_child(m.named_child_count().saturating_sub(1))
                }
                _ => Some(m),
            };
            let Some(d) = decl else { continue };
            if !matches!(
                d.kind(),
                "function_definition" | "field_declaration" | "declaration"
            ) {
                continue;
            }
            // The specifiers: the text before the member's declarator.
            let Some(declarator) = d.child_by_field_name("declarator") else {
                continue;
            };
            let head = lex::mask(&text[d.start_byte()..declarator.start_byte()]);
            let words: Vec<&str> = lex::idents(&head).iter().map(|i| i.text).collect();
            let is_function = d.kind() == "function_definition"
                || super::syntax::text(declarator, text).contains('(');
            let host = words.contains(&"__host__")
                || names_a_stream(&text[d.start_byte()..declarator.end_byte()]);
            if is_function && host && !words.contains(&"__device__") {
                cut.push((m.start_byte(), m.end_byte()));
            }
        }
    });
    if cut.is_empty() {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (a, z) in cut {
        out.push_str(&text[at..a]);
        out.push_str("/* host-only member removed */");
        at = z;
    }
    out.push_str(&text[at..]);
    out
}

fn const_global_text(text: &str) -> String {
    let m = lex::mask(text);
    let ids = lex::idents(&m);
    let words: Vec<&str> = ids.iter().map(|i| i.text).collect();
    let Some(eq) = m.find('=') else {
        return text.to_string();
    };
    let qualified = words.iter().any(|w| {
        matches!(
            *w,
            "__device__" | "__constant__" | "__shared__" | "extern" | "constexpr" | "texture"
        )
    });
    let first_const = ids
        .iter()
        .take_while(|i| i.offset < eq)
        .position(|i| i.text == "const");
    let leading = first_const.is_some_and(|p| ids[..p].iter().all(|i| i.text == "static"));
    if qualified || !leading || m[..eq].contains(['*', '&', '<', '(']) {
        return text.to_string();
    }
    let off = ids[first_const.expect("checked")].offset;
    format!("{}constexpr{}", &text[..off], &text[off + "const".len()..])
}

/// What CUDA features a unit's source uses (the unit's `features`), by the same rules for
/// extracted units and for synthesized ones.
pub fn features_of(source: &str, texture: bool, template_kernel: bool) -> Features {
    let m = lex::mask(source);
    let ids = lex::idents(&m);
    let has = |f: &dyn Fn(&str) -> bool| ids.iter().any(|i| f(i.text));
    let dynamic = ids.windows(2).any(|w| {
        (w[0].text == "extern" && w[1].text == "__shared__")
            || (w[0].text == "__shared__" && w[1].text == "extern")
    });
    Features {
        shared_memory: has(&|t| t == "__shared__"),
        dynamic_shared_memory: dynamic,
        constant_memory: has(&|t| t == "__constant__"),
        texture_references: texture,
        atomics: has(&builtins::is_atomic),
        templates: template_kernel || has(&|t| t == "template"),
        warp_primitives: has(&builtins::is_warp_primitive),
        vector_types: has(&|t| {
            builtins::is_vector_type(t)
                || t.strip_prefix("make_")
                    .is_some_and(builtins::is_vector_type)
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::{index_file, normalized_tokens, FileIndex};
    use crate::gpu::nvrtc;

    fn scope_of(files: &[(&str, &str)]) -> BTreeMap<String, FileIndex> {
        files
            .iter()
            .map(|(p, t)| (p.to_string(), index_file(p, t)))
            .collect()
    }

    fn unit(files: &[(&str, &str)], file: &str, kernel: &str) -> IsolatedKernel {
        let map = scope_of(files);
        isolate(&Scope::new(&map), file, kernel).unwrap()
    }

    fn codes(u: &IsolatedKernel) -> Vec<&str> {
        u.diagnostics.iter().map(|d| d.code.as_str()).collect()
    }

    /// `register` locals (HeCBench's ntt: `register uint64 samples[8]`), which nvcc's build
    /// only warns about under C++17 and NVRTC refuses, are dropped with a note, and the unit
    /// compiles.
    #[test]
    fn register_locals_are_dropped_and_the_unit_compiles() {
        let src = "__global__ void k(unsigned long long *o) {\n  register unsigned long long s[2], t;\n  register int i = threadIdx.x;\n  s[0] = i; s[1] = 2; t = s[0] + s[1];\n  o[i] = t;\n}\n";
        let u = unit(&[("k.cu", src)], "k.cu", "k");
        assert!(!u.source.contains("register"), "{}", u.source);
        assert!(
            u.source.contains("unsigned long long s[2], t;"),
            "{}",
            u.source
        );
        assert!(codes(&u).contains(&"cxx17_register"), "{:?}", codes(&u));
        if nvrtc::load().is_err() {
            eprintln!("NVRTC not installed: the compile half of this test did not run");
            return;
        }
        let flags = vec!["--std=c++17".to_string()];
        let compile = |source: &str| {
            nvrtc::compile(&nvrtc::CompileRequest {
                source,
                name: "unit.cu",
                arch: "sm_90",
                name_expressions: &[],
                cubin: false,
                extra_options: &flags,
            })
            .unwrap()
        };
        let c = compile(&u.source);
        assert!(c.ok, "{}\n{}", u.source, c.log);
        // The original is what NVRTC refuses.
        assert!(!compile(src).ok, "NVRTC took `register` under C++17");
    }

    /// POSIX's `ssize_t` (HeCBench's bitpacking casts to it in a kernel) comes with the
    /// unit as `<sys/types.h>` defines it, and the unit compiles.
    #[test]
    fn a_kernel_using_ssize_t_gets_its_typedef() {
        let src = "__global__ void k(long *o, int a, int b) { o[0] = static_cast<ssize_t>(a) - static_cast<ssize_t>(b); }\n";
        let u = unit(&[("k.cu", src)], "k.cu", "k");
        assert!(u.source.contains("typedef long ssize_t;"), "{}", u.source);
        assert_ne!(compiles(&u), Some(false), "{}", u.source);
    }

    /// Programs of one file each in one folder (llm.c's `dev/cuda`): a macro an `#if`
    /// asks about stays undefined when only a sibling no include reaches defines it, so
    /// the branch the real program compiles is the one the unit has; one the kernel's own
    /// file or its header defines still counts.
    #[test]
    fn a_condition_macro_defined_only_in_an_unconnected_sibling_stays_undefined() {
        let common = "#if defined(ENABLE_BF16)\ntypedef __nv_bfloat16 floatX;\n#else\ntypedef float floatX;\n#endif\n";
        let plain = "#include \"common.h\"\n__global__ void k(floatX *x) { x[0] = (floatX)1; }\n";
        let bf16 = "#define ENABLE_BF16\n#include \"common.h\"\n__global__ void g(floatX *x) { x[0] = (floatX)1; }\n";
        let files = [("common.h", common), ("plain.cu", plain), ("bf16.cu", bf16)];
        let u = unit(&files, "plain.cu", "k");
        assert!(!u.source.contains("#define ENABLE_BF16"), "{}", u.source);
        assert_eq!(crate::harness::resolve_alias("floatX", &u.source), "float");
        let g = unit(&files, "bf16.cu", "g");
        assert!(g.source.contains("#define ENABLE_BF16"), "{}", g.source);
        assert_eq!(
            crate::harness::resolve_alias("floatX", &g.source),
            "__nv_bfloat16"
        );
    }

    /// Whether the unit compiles; see [`compiles_with`].
    fn compiles(u: &IsolatedKernel) -> Option<bool> {
        compiles_with(u, &[]).map(|c| c.ok)
    }

    /// Compile the unit with NVRTC, lowering `names`, where NVRTC is installed (CI installs
    /// it, and sets `KERNELPAIR_REQUIRE_NVRTC`, under which a missing NVRTC fails the
    /// test); elsewhere say that the compile half did not run.
    fn compiles_with(u: &IsolatedKernel, names: &[String]) -> Option<nvrtc::Compiled> {
        if let Err(e) = nvrtc::load() {
            assert!(
                std::env::var_os("KERNELPAIR_REQUIRE_NVRTC").is_none(),
                "KERNELPAIR_REQUIRE_NVRTC is set but NVRTC is missing: {e}"
            );
            eprintln!("NVRTC not found ({e}): the compile half of this test did not run");
            return None;
        }
        let c = nvrtc::compile(&nvrtc::CompileRequest {
            source: &u.source,
            name: "unit.cu",
            arch: "sm_90",
            name_expressions: names,
            cubin: false,
            extra_options: &[],
        })
        .expect("NVRTC runs");
        if !c.ok {
            eprintln!("{}\n---\n{}", u.source, c.log);
        }
        Some(c)
    }

    const HELPERS: &str = r#"
#include <stdio.h>
#include <cuda_runtime.h>
__device__ float leaf(float x) { return x * 2.0f; }
__device__ float mid(float x) { return leaf(x) + 1.0f; }
__device__ float unused_helper(float x) { return x; }
__host__ __device__ int twice(int a) { return 2 * a; }
__device__ float over(float a) { return a; }
__device__ float over(float a, float b) { return a + b; }
__global__ void k(float *out, int n) {
    int i = twice(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i < n) out[i] = mid(out[i]) + over(1.0f) + over(1.0f, 2.0f);
}
void host_helper() { printf("x"); }
int main() {
    float *d; cudaMalloc(&d, 4);
    k<<<1, 32>>>(d, 32);
    host_helper();
    return 0;
}
"#;

    /// A function-like macro named like the parameter it indexes (HeCBench's
    /// lid-driven-cavity: `#define u(I, J) u[…]`, 11 kernels): the preprocessor expands
    /// `u(0, ind)` before the compiler sees the parameter `u`, so the unit needs the macro.
    /// A lambda or an object-like macro of a called local's name is not pulled, nor a
    /// function-like macro defined after the kernel.
    #[test]
    fn a_function_like_macro_named_like_a_local_it_indexes_comes_along() {
        let src = "#define NUM 8\n#define u(I, J) u[((I) * ((NUM) + 2)) + (J)]\n#define f 3\n\
                   __device__ float f2(float x) { return x; }\n\
                   __global__ void k(float* u, float* w) {\n  int i = threadIdx.x;\n  \
                   u(i, 1) = 2.0f;\n  auto f = [](float x) { return x * 2.0f; };\n  \
                   auto g = [](float x) { return x; };\n  w[i] = f(w[i]) + g(1.0f);\n}\n\
                   #define g(x) (x + 1)\n";
        let u = unit(&[("a/k.cu", src)], "a/k.cu", "k");
        assert!(u.source.contains("#define u(I, J)"), "{}", u.source);
        assert!(u.source.contains("#define NUM 8"), "{}", u.source);
        assert!(!u.source.contains("#define f 3"), "{}", u.source);
        assert!(!u.source.contains("#define g(x)"), "{}", u.source);
        assert!(!u.source.contains("f2"), "{}", u.source);
        if let Some(ok) = compiles(&u) {
            assert!(ok, "{}", u.source);
        }
    }

    /// An enumerator named like the function-like macro that gives its value (HeCBench's
    /// warp exchange: `LOG_WARP_THREADS = LOG_WARP_THREADS(0)` in a class's enum).
    #[test]
    fn an_enumerator_valued_by_its_namesake_macro_brings_the_macro() {
        let src = "#define LOG_W(unused) (5)\n\
                   template <int N> struct X { enum { LOG_W = LOG_W(0), W = 1 << LOG_W }; };\n\
                   __global__ void k(int* o) { o[threadIdx.x] = X<1>::W; }\n";
        let u = unit(&[("a/k.cu", src)], "a/k.cu", "k");
        assert!(
            u.source.contains("#define LOG_W(unused) (5)"),
            "{}",
            u.source
        );
        if let Some(ok) = compiles(&u) {
            assert!(ok, "{}", u.source);
        }
    }

    /// A primary template declared without a body, defined only by explicit
    /// specializations (HeCBench atan2: `template <int D> constexpr float P(float);` then
    /// `template <> constexpr float P<3>(float) {…}`): the declaration comes first, or no
    /// specialization names a template. A plain prototype before a definition still goes.
    #[test]
    fn a_primary_template_declared_for_its_specializations_comes_along() {
        let src = "template <int D>\n__device__ constexpr float P(float x);\n\
                   template <>\n__device__ constexpr float P<3>(float x) { return x * 3.0f; }\n\
                   template <>\n__device__ constexpr float P<5>(float x) { return x * 5.0f; }\n\
                   __device__ float q(float x);\n__device__ float q(float x) { return x + 1.0f; }\n\
                   __global__ void k(float* o) { o[threadIdx.x] = P<3>(o[threadIdx.x]) + q(1.0f); }\n";
        let u = unit(&[("a/k.cu", src)], "a/k.cu", "k");
        let decl = u
            .source
            .find("constexpr float P(float x);")
            .expect("the declaration");
        assert!(
            decl < u.source.find("P<3>(float x) {").unwrap(),
            "{}",
            u.source
        );
        assert!(!u.source.contains("float q(float x);"), "{}", u.source);
        if let Some(ok) = compiles(&u) {
            assert!(ok, "{}", u.source);
        }
    }

    /// An anonymous enum's enumerators are names a kernel can use (HeCBench minisweep:
    /// `enum{ NOCTANT = 8 };` in a header the including file reads before the kernels).
    #[test]
    fn an_anonymous_enums_enumerators_come_along() {
        let h = "enum { NOCTANT = 8, NDIM = 3 };\n";
        let k = "__global__ void k(int* o) { o[threadIdx.x] = NOCTANT * NDIM; }\n";
        let main = "#include \"u.h\"\n#include \"k.cu\"\nint main() { return 0; }\n";
        let u = unit(
            &[("a/u.h", h), ("a/k.cu", k), ("a/main.cu", main)],
            "a/k.cu",
            "k",
        );
        assert!(
            u.source.contains("enum { NOCTANT = 8, NDIM = 3 };"),
            "{}",
            u.source
        );
        if let Some(ok) = compiles(&u) {
            assert!(ok, "{}", u.source);
        }
    }

    /// `cub::` in a kernel header whose includer brings the headers (HeCBench f16sp,
    /// topk): the unit gets the CUB device headers it names.
    #[test]
    fn cub_named_without_its_header_gets_the_device_headers() {
        let k = "__global__ void k(const float* in, float* out) {\n  \
                 typedef cub::BlockReduce<float, 128> R;\n  __shared__ typename R::TempStorage t;\n  \
                 float s = R(t).Sum(in[threadIdx.x]);\n  if (threadIdx.x == 0) out[0] = s;\n}\n";
        let u = unit(&[("a/k.cuh", k)], "a/k.cuh", "k");
        assert!(
            u.source.contains("#include <cub/block/block_reduce.cuh>"),
            "{}",
            u.source
        );
        assert!(codes(&u).contains(&"cub_header_implied"), "{:?}", codes(&u));
        if let Some(ok) = compiles(&u) {
            assert!(ok, "{}", u.source);
        }
    }

    /// GNU C that nvcc's build takes and NVRTC refuses, as HeCBench writes it: a statement
    /// expression in a min/max macro (chemv's `ppcg_min`, lulesh's `max`), compound
    /// literals in macros (fft's `#define exp_1_8 (T2){ 1, -1 }`) and designated
    /// initializers (seam-carving's `{.r=0, .g=0, .b=0}`). The unit is rewritten (noted as
    /// compile-only edits) or compiled as C++20, and compiles.
    #[test]
    fn gnu_c_in_macros_and_designated_initializers_compile_under_nvrtc() {
        let src = "struct T2 { float x, y; };\nstruct pixel { float r, g, b; };\n\
                   #define ppcg_min(x,y) ({ __typeof__(x) _x = (x); __typeof__(y) _y = (y); _x < _y ? _x : _y; })\n\
                   #define exp_1_8 (T2){ 1, -1 }\n\
                   __device__ T2 mul(T2 a, T2 b) { return T2{a.x * b.x, a.y * b.y}; }\n\
                   __global__ void k(float* o, int n) {\n  int i = threadIdx.x;\n  \
                   T2 t = mul(T2{o[i], o[i]}, exp_1_8);\n  \
                   pixel p = {.r = 0, .g = t.y, .b = 2};\n  \
                   for (int c = 0; c <= ppcg_min(n, 32 * i + 30); c += 32) o[i] += p.g + c;\n}\n";
        let u = unit(&[("a/k.cu", src)], "a/k.cu", "k");
        let c = codes(&u);
        for want in [
            "gnu_statement_expression",
            "c_compound_literal",
            crate::cuda::DESIGNATED_INITIALIZER,
        ] {
            assert!(c.contains(&want), "{want} not in {c:?}");
        }
        assert!(
            u.source
                .contains("([&]() { auto _x = (x); auto _y = (y); return _x < _y ? _x : _y; }())"),
            "{}",
            u.source
        );
        assert!(
            u.source.contains("#define exp_1_8 T2{ 1, -1 }"),
            "{}",
            u.source
        );
        let flags = crate::suite::buildflags::for_unit(vec!["--std=c++17".into()], &u.diagnostics);
        assert_eq!(flags, ["--std=c++20"]);
        if nvrtc::load().is_err() {
            eprintln!("NVRTC not installed: the compile half of this test did not run");
            return;
        }
        let compile = |opts: &[String]| {
            nvrtc::compile(&nvrtc::CompileRequest {
                source: &u.source,
                name: "unit.cu",
                arch: "sm_90",
                name_expressions: &[],
                cubin: false,
                extra_options: opts,
            })
            .unwrap()
        };
        let c = compile(&flags);
        assert!(c.ok, "{}\n{}", u.source, c.log);
        // C++17 alone still refuses the designated initializers: the flag is what helps.
        assert!(!compile(&[]).ok);
    }

    /// A file's `using namespace cooperative_groups;` comes along with the header it opens
    /// (cuda-training-series hw9: `thread_group`, `this_thread_block()` unqualified); a
    /// `using namespace` of a header the unit does not keep does not.
    #[test]
    fn a_using_directive_for_a_kept_headers_namespace_comes_along() {
        let src = "#include <cooperative_groups.h>\n#include <stdio.h>\nusing namespace cooperative_groups;\nusing namespace std;\n\
                   __device__ int reduce(thread_group g, int *x, int val) { x[g.thread_rank()] = val; g.sync(); return x[0]; }\n\
                   __global__ void k(int* s, int* out) { auto g = this_thread_block(); out[0] = reduce(g, s, 1); }\n";
        let u = unit(&[("a/k.cu", src)], "a/k.cu", "k");
        assert!(
            u.source
                .contains("#include <cooperative_groups.h>\nusing namespace cooperative_groups;\n"),
            "{}",
            u.source
        );
        assert!(!u.source.contains("using namespace std"), "{}", u.source);
        if let Some(ok) = compiles(&u) {
            assert!(ok, "{}", u.source);
        }
    }

    /// A kernel template over a function pointer carries the device functions the host
    /// names as its template arguments, and the unit lowers the name expression a capture
    /// records for it (`apply<&square>`, the demangler's `&(square(float))`).
    #[test]
    fn a_kernel_over_a_function_pointer_carries_the_functions_named_as_its_arguments() {
        let src = r#"
using unary_fn = float (*)(float);
__device__ float square(float x) { return x * x; }
__device__ float negate(float x) { return -x; }
__device__ float unused_device(float x) { return x + 1.0f; }
template <unary_fn f>
__global__ void apply(float *a, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) a[i] = f(a[i]);
}
template <unary_fn f>
void launch(float *a, int n) { apply<f><<<(n + 255) / 256, 256>>>(a, n); }
void run(float *a, int n, bool neg) {
    if (neg) launch<negate>(a, n); else launch<&square>(a, n);
}
template <int N>
__global__ void plain(float *a) { a[0] = unused_device(a[N]); }
"#;
        let u = unit(&[("f.cu", src)], "f.cu", "apply");
        assert!(u.source.contains("float square("), "{}", u.source);
        assert!(u.source.contains("float negate("), "{}", u.source);
        assert!(!u.source.contains("unused_device"), "{}", u.source);
        assert!(!u.source.contains("void run("), "{}", u.source);
        // A template over an `int` carries nothing more than its body names.
        let p = unit(&[("f.cu", src)], "f.cu", "plain");
        assert!(
            !p.source.contains("square") && !p.source.contains("negate"),
            "{}",
            p.source
        );
        let (_, expr) =
            crate::gpu::capture::manifest::names_of("void apply<&(square(float))>(float*, int)");
        assert_eq!(expr, "apply<&square>");
        let Some(c) = compiles_with(&u, std::slice::from_ref(&expr)) else {
            return;
        };
        assert!(c.ok, "{}\n---\n{}", u.source, c.log);
        assert_eq!(
            c.lowered[0].1, "_Z5applyIXadL_Z6squarefEEEvPfi",
            "{:?}",
            c.lowered
        );
    }

    #[test]
    fn pulls_transitive_helpers_and_overloads_and_drops_host_code() {
        let u = unit(&[("a/k.cu", HELPERS)], "a/k.cu", "k");
        assert_eq!(u.pulled.helpers, vec!["twice", "leaf", "mid", "over"]);
        assert!(!u.source.contains("unused_helper"));
        assert!(!u.source.contains("main"));
        assert!(!u.source.contains("cudaMalloc"));
        assert!(!u.source.contains("host_helper"));
        assert!(!u.source.contains("#include"));
        assert_eq!(u.source.matches("__device__ float over(").count(), 2);
        // Callees come before callers.
        assert!(u.source.find("float leaf").unwrap() < u.source.find("float mid").unwrap());
        // The kernel keeps the linkage its source writes: none.
        assert!(u.source.contains("\n__global__ void k(float *out, int n)"));
        assert!(!u.source.contains("extern"), "{}", u.source);
        assert_eq!(u.symbol, "k");
        assert_eq!(
            u.params
                .iter()
                .map(|p| (p.name.as_str(), p.ty.as_str()))
                .collect::<Vec<_>>(),
            vec![("out", "float *"), ("n", "int")]
        );
        let dropped: Vec<&str> = u
            .diagnostics
            .iter()
            .filter(|d| d.code == "host_header_dropped")
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(dropped.len(), 2, "{dropped:?}");
        assert!(dropped[0].contains("<cuda_runtime.h>"));
        assert!(dropped[1].contains("<stdio.h>"));
        assert!(compiles(&u).unwrap_or(true));
    }

    #[test]
    fn unannotated_functions_a_kernel_calls_are_pulled_with_their_needs() {
        // Plain functions are indexed by name only and analysed when first used.
        let src = "#define SCALE 3\nfloat plain(float x) { return x * SCALE; }\nint main(int argc, char **argv) { return plain(1.0f); }\n__global__ void k(float *a) { a[0] = plain(a[0]); }\n";
        let u = unit(&[("p.cu", src)], "p.cu", "k");
        assert_eq!(u.pulled.helpers, vec!["plain"]);
        assert_eq!(u.pulled.macros, vec!["SCALE"]);
        assert!(!u.source.contains("main"));
        assert!(compiles(&u).unwrap_or(true));
    }

    /// Issue 26: isolation never writes linkage. Each kernel keeps what its source says
    /// (`static`, `extern "C"`, nothing; a template, an overload), and NVRTC finds it by
    /// the unit's symbol as a name expression.
    #[test]
    fn kernels_keep_their_written_linkage_and_are_found_by_name_expression() {
        let src = r#"
static __global__ void st(float *a) { a[0] = 1.0f; }
extern "C" __global__ void ec(float *a) { a[0] = 2.0f; }
__global__ void ov(float *a) { a[0] = 3.0f; }
__global__ void ov(int *a) { a[0] = 4; }
template <typename T>
__global__ void tp(T *a) { a[0] = T(5); }
"#;
        let map = scope_of(&[("l.cu", src)]);
        let scope = Scope::new(&map);
        let heads = [
            "static __global__ void st(float *a)",
            "extern \"C\" __global__ void ec(float *a)",
            "__global__ void ov(float *a)",
            "__global__ void ov(int *a)",
            "__global__ void tp(T *a)",
        ];
        for (i, head) in heads.iter().enumerate() {
            let u = isolate_at(&scope, "l.cu", i).unwrap();
            assert!(u.source.contains(head), "{head}: {}", u.source);
            let written = src.matches("extern \"C\"").filter(|_| i == 1).count();
            assert_eq!(
                u.source.matches("extern \"C\"").count(),
                written,
                "{}",
                u.source
            );
            // Nothing to undo for export: the compiled text is the written text.
            assert!(!codes(&u).contains(&super::super::compile_only::CODE) || i == 1);
            let expr = if u.template_params.is_empty() {
                u.symbol.clone()
            } else {
                format!("{}<float>", u.symbol)
            };
            let Some(c) = compiles_with(&u, std::slice::from_ref(&expr)) else {
                continue;
            };
            assert!(c.ok, "{}\n{}", u.source, c.log);
            assert_eq!(c.lowered.len(), 1, "{expr}");
            // C++ linkage everywhere except where the source wrote `extern "C"`.
            let lowered = &c.lowered[0].1;
            assert_eq!(lowered == "ec", i == 1, "{lowered}");
            assert!(i == 1 || lowered.starts_with("_Z"), "{lowered}");
        }
    }

    #[test]
    fn same_named_kernels_by_index_and_template_kernels() {
        let src = r#"
template <typename T, int B>
__device__ T scale(T x) { return x * B; }
template <typename T>
__global__ void tk(T *a) { a[threadIdx.x] = scale<T, 2>(a[threadIdx.x]); }
__global__ void dup(float *a) { a[0] = 1.0f; }
__global__ void dup(int *a) { a[0] = 2; }
"#;
        let map = scope_of(&[("t.cu", src)]);
        let scope = Scope::new(&map);
        let fi = &map["t.cu"];
        assert_eq!(
            fi.kernels()
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>(),
            vec!["tk", "dup", "dup"]
        );
        let t = isolate(&scope, "t.cu", "tk").unwrap();
        assert_eq!(t.template_params, vec!["typename T"]);
        assert_eq!(t.symbol, "tk");
        assert!(!t.source.contains("extern \"C\""));
        assert!(t.features.templates);
        assert_eq!(t.pulled.helpers, vec!["scale"]);
        let first = isolate(&scope, "t.cu", "dup").unwrap();
        assert!(first.source.contains("float *a"));
        assert!(!first.source.contains("int *a"));
        let second = isolate_at(&scope, "t.cu", 2).unwrap();
        assert!(second.source.contains("int *a"));
        assert!(!second.source.contains("float *a"));
        assert!(matches!(
            isolate_at(&scope, "t.cu", 3),
            Err(CudaError::KernelIndexOutOfRange { count: 3, .. })
        ));
        let e = isolate(&scope, "t.cu", "nope").unwrap_err().to_string();
        assert!(e.contains("tk, dup, dup"), "{e}");
        assert!(matches!(
            isolate(&scope, "x.cu", "tk"),
            Err(CudaError::FileNotInScope { .. })
        ));
    }

    #[test]
    fn same_named_helpers_and_macros_in_different_files_do_not_collide() {
        let a = "#define N 16\n#define bool char\n__device__ int f(int x) { return x + 1; }\n__global__ void ka(int *o) { bool b = 1; o[0] = f(N) + b; }\n";
        let b = "#define N 32\n__device__ int f(int x) { return x - 1; }\n__global__ void kb(int *o) { o[0] = f(N); }\n";
        let files = [("v/a.cu", a), ("v/b.cu", b)];
        let ua = unit(&files, "v/a.cu", "ka");
        let ub = unit(&files, "v/b.cu", "kb");
        assert!(ua.source.contains("#define N 16") && !ua.source.contains("#define N 32"));
        assert!(ua.source.contains("return x + 1;") && !ua.source.contains("return x - 1;"));
        assert!(ua.source.contains("#define bool char"));
        assert!(ub.source.contains("#define N 32") && !ub.source.contains("#define N 16"));
        assert!(ub.source.contains("return x - 1;") && !ub.source.contains("return x + 1;"));
        assert!(
            !ub.source.contains("bool"),
            "kb never uses bool:\n{}",
            ub.source
        );
    }

    #[test]
    fn globals_shared_constant_and_features() {
        let src = r#"
#define TILE 16
__constant__ float coeffs[TILE];
__device__ int counter;
__shared__ float file_scope_tile[TILE];
extern __shared__ float dyn[];
__device__ float unused_global;
__global__ void k(float4 *v, int *flags) {
    __shared__ float local[TILE];
    local[threadIdx.x] = coeffs[threadIdx.x] + file_scope_tile[0] + dyn[0];
    atomicAdd(&counter, 1);
    int w = __shfl_down_sync(0xffffffff, flags[0], 1);
    float4 x = make_float4(0, 0, 0, 0);
    v[0] = x; flags[1] = w;
}
"#;
        let u = unit(&[("g.cu", src)], "g.cu", "k");
        assert_eq!(
            u.pulled.globals,
            vec!["coeffs", "file_scope_tile", "dyn", "counter"]
        );
        assert_eq!(u.pulled.macros, vec!["TILE"]);
        assert!(!u.source.contains("unused_global"));
        let f = u.features;
        assert!(f.shared_memory && f.dynamic_shared_memory && f.constant_memory);
        assert!(f.atomics && f.warp_primitives && f.vector_types);
        assert!(!f.templates && !f.texture_references);
        assert!(compiles(&u).unwrap_or(true));
        let plain = unit(
            &[("p.cu", "__global__ void p(float *a) { a[0] = 1.0f; }")],
            "p.cu",
            "p",
        );
        assert_eq!(plain.features, Features::default());
    }

    /// PolyBench's size headers: `#if !defined(NI) && !defined(NJ)` around `#ifdef
    /// STANDARD_DATASET` blocks that define NI then NJ. The group's condition is tested once,
    /// so both sizes are defined (wrapping each define alone lost NJ: 28 of 47 PolyBench-ACC
    /// units failed to compile).
    #[test]
    fn macros_of_one_if_group_are_emitted_inside_one_if() {
        let header = r#"
#ifndef SIZES_H
# define SIZES_H
# if !defined(MINI_DATASET) && !defined(LARGE_DATASET)
#  define STANDARD_DATASET
# endif
# if !defined(NI) && !defined(NJ)
#  ifdef MINI_DATASET
# define NI 16
# define NJ 16
#  endif
#  ifdef STANDARD_DATASET
# define NI 1024
# define NJ 512
#  endif
# endif
#endif
"#;
        let kernel = r#"
#include "sizes.cuh"
__global__ void k(float *a) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < NI * NJ) a[i] = 2.0f * a[i];
}
"#;
        let u = unit(
            &[("p/sizes.cuh", header), ("p/k.cu", kernel)],
            "p/k.cu",
            "k",
        );
        let s = &u.source;
        let group = "#if (!defined(NI) && !defined(NJ))\n";
        assert_eq!(s.matches(group).count(), 1, "{s}");
        let start = s.find(group).unwrap();
        let std = s[start..]
            .find("#if (defined(STANDARD_DATASET))\n")
            .unwrap()
            + start;
        let end = s[std..].find("#endif").unwrap() + std;
        let block = &s[std..end];
        assert!(
            block.contains("# define NI 1024") && block.contains("# define NJ 512"),
            "{s}"
        );
        assert!(s.find("#  define STANDARD_DATASET").unwrap() < start, "{s}");
        if let Some(ok) = compiles(&u) {
            assert!(ok, "NVRTC rejects the unit:\n{s}");
        }
    }

    /// `#ifndef LIMIT` / `#define LIMIT 1` / `#endif` sets a default the code tests with
    /// `#if LIMIT`; it is no include guard (more follows its `#endif`). cuda-samples
    /// cudaTensorCoreGemm's `SHARED_MEMORY_LIMIT_64K` was dropped as a guard, so the unit
    /// took the 128 KB `CHUNK_K` branch and read past the 64 KB its program launches with
    /// (illegal address on replay). A real guard, around a whole header, stays a guard.
    #[test]
    fn a_default_value_under_ifndef_is_kept_and_a_real_guard_is_not() {
        let header = "#ifndef CFG_H\n#define CFG_H 1\n#define TILE 16\n#endif\n";
        let kernel = r#"
#include "cfg.h"
#ifndef LIMIT_64K
// Set this to 0 to use more shared memory.
#define LIMIT_64K 1
#endif
#if LIMIT_64K
#define CHUNK 4
#else
#define CHUNK 8
#endif
__global__ void k(float *a) { a[threadIdx.x] = CHUNK * TILE; }
"#;
        let u = unit(&[("p/cfg.h", header), ("p/k.cu", kernel)], "p/k.cu", "k");
        let s = &u.source;
        assert!(s.contains("#define LIMIT_64K 1"), "{s}");
        assert!(
            !s.contains("CFG_H"),
            "the header's guard is still a guard: {s}"
        );
        assert!(s.contains("#define TILE 16"), "{s}");
        // The kept default comes before the `#if` it decides, as in the program's build.
        let test = s.find("#if (LIMIT_64K)").expect("the branch test is kept");
        assert!(s.find("#define LIMIT_64K 1").unwrap() < test, "{s}");
        if let Some(ok) = compiles(&u) {
            assert!(ok, "NVRTC rejects the unit:\n{s}");
        }
    }

    /// A type's host stream operator (`std::ostream& operator<<`, no `__device__`) is not
    /// carried with the type's other operators: device code cannot call it and NVRTC has no
    /// `<ostream>` (HeCBench gamma-correction's unit failed on it). A device operator is.
    #[test]
    fn a_host_stream_operator_is_not_carried_with_the_type() {
        let src = r#"
#include <iostream>
struct Px { float r, g; };
__host__ __device__ Px operator*(const Px& a, float s) { return Px{a.r * s, a.g * s}; }
std::ostream& operator<<(std::ostream& o, Px const& p) { return o << p.r; }
__global__ void k(Px* p, float s) { p[0] = p[0] * s; }
"#;
        let u = unit(&[("s/k.cu", src)], "s/k.cu", "k");
        assert!(u.source.contains("operator*"), "{}", u.source);
        assert!(!u.source.contains("ostream"), "{}", u.source);
    }

    /// A parameter list with `#if` branches (Rodinia mummergpu's `mummergpuKernel`): the
    /// unit's parameters are those its own macros leave in, not every branch stacked (13
    /// for 9 there, two of them named `queries`). A condition the unit does not settle
    /// keeps the old reading.
    #[test]
    fn a_parameter_list_with_if_branches_has_the_parameters_the_compiler_sees() {
        let header = "#define QRYTEX 0\n#define COALESCED 0\n#define HIST 0\n";
        let kernel = r#"
#include "common.h"
__global__ void k(void* out,
#if COALESCED
                  int* addrs,
#endif
#if !QRYTEX
#if COALESCED
                  int* queries,
#else
                  char* queries,
#endif
#endif
                  const int n
#if HIST
                  , int* hist
#endif
) { if (threadIdx.x < n) ((char*)out)[threadIdx.x] = queries[threadIdx.x]; }
"#;
        let u = unit(&[("s/common.h", header), ("s/k.cu", kernel)], "s/k.cu", "k");
        let got: Vec<(&str, &str)> = u
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.ty.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![("out", "void *"), ("queries", "char *"), ("n", "const int")]
        );
        // Unsettled (FLAG is the build's, not the unit's): every branch, as before.
        let open = kernel.replace(
            "#if COALESCED\n                  int* queries",
            "#if FLAG\n                  int* queries",
        );
        let u = unit(&[("s/common.h", header), ("s/k.cu", &open)], "s/k.cu", "k");
        assert_eq!(u.params.len(), 6, "{:?}", u.params);
    }

    #[test]
    fn macros_from_local_headers_with_their_if_blocks_and_types() {
        let header = r#"
#ifndef PARAMS_H
#define PARAMS_H
#define WIDTH 64
#define IDX(r, c) ((r) * WIDTH + (c))
#ifdef USE_DOUBLE
typedef double real;
#else
typedef float real;
#endif
typedef struct { real x, y; } point;
enum mode { MODE_A, MODE_B };
#define UNUSED_MACRO 1
#endif
"#;
        let kernel = r#"
#include "../common/params.h"
__global__ void k(point *p, real *out, int m) {
    int i = IDX(threadIdx.y, threadIdx.x);
    out[i] = (m == MODE_B) ? p[i].x : p[i].y;
}
"#;
        let u = unit(
            &[("s/common/params.h", header), ("s/v/k.cu", kernel)],
            "s/v/k.cu",
            "k",
        );
        assert_eq!(u.pulled.macros, vec!["WIDTH", "IDX"]);
        for t in ["point", "real", "mode"] {
            assert!(
                u.pulled.types.contains(&t.to_string()),
                "{t}: {:?}",
                u.pulled.types
            );
        }
        assert_eq!(u.pulled.local_files, vec!["s/common/params.h"]);
        assert!(!u.source.contains("UNUSED_MACRO"));
        // The include guard is not carried; the #ifdef around the typedef is.
        assert!(!u.source.contains("PARAMS_H"));
        assert!(u
            .source
            .contains("#if (defined(USE_DOUBLE))\ntypedef double real;\n#endif"));
        assert!(u
            .source
            .contains("#if !(defined(USE_DOUBLE))\ntypedef float real;\n#endif"));
        // Types come before their users.
        assert!(u.source.find("typedef float real").unwrap() < u.source.find("} point;").unwrap());
        assert!(compiles(&u).unwrap_or(true));
    }

    #[test]
    fn a_cooperative_groups_alias_brings_its_header_when_another_file_included_it() {
        // HeCBench's layernorm: common.h includes the header; the kernel only names the
        // namespace, through an alias, and calls `cg::reduce`.
        let common = "#include <cooperative_groups.h>\n#include <cooperative_groups/reduce.h>\n";
        let kernel = "#include \"common.h\"\n__global__ void k(float *x) {\n    namespace cg = cooperative_groups;\n    cg::thread_block b = cg::this_thread_block();\n    auto w = cg::tiled_partition<32>(b);\n    x[0] = cg::reduce(w, x[threadIdx.x], cg::plus<float>{});\n}\n";
        let u = unit(&[("s/common.h", common), ("s/k.cu", kernel)], "s/k.cu", "k");
        for h in [
            "#include <cooperative_groups.h>",
            "#include <cooperative_groups/reduce.h>",
        ] {
            assert!(u.source.contains(h), "{h} in\n{}", u.source);
        }
    }

    #[test]
    fn macros_follow_include_order_so_if_defined_sees_earlier_headers() {
        // Parboil lbm's shape: model.h includes config.h (which defines SCATTER) before
        // macros.h (whose accessors depend on it); the kernel file includes model.h and
        // defines a macro of its own after the include.
        let config = "#define SCATTER\n#define NX 8\n";
        let macros = "#ifdef SCATTER\n#define SRC(g, i) ((g)[(i)])\n#define DST(g, i) ((g)[(i) + 1])\n#else\n#define SRC(g, i) ((g)[(i) + 1])\n#define DST(g, i) ((g)[(i)])\n#endif\n";
        let model = "#include \"macros.h\"\n";
        let model = format!("#include \"config.h\"\n{model}");
        let kernel = "#include \"model.h\"\n#define SCALE 2.0f\n__global__ void step(float *src, float *dst) {\n    int i = threadIdx.x % NX;\n    DST(dst, i) = SCALE * SRC(src, i);\n}\n";
        let u = unit(
            &[
                ("s/v/macros.h", macros),
                ("s/v/config.h", config),
                ("s/v/model.h", &model),
                ("s/v/k.cu", kernel),
            ],
            "s/v/k.cu",
            "step",
        );
        let at = |t: &str| {
            u.source
                .find(t)
                .unwrap_or_else(|| panic!("{t} in\n{}", u.source))
        };
        assert!(
            at("#define SCATTER") < at("defined(SCATTER)"),
            "{}",
            u.source
        );
        assert!(at("#define NX") < at("#define SCALE"), "{}", u.source);
        assert!(compiles(&u).unwrap_or(true));
    }

    #[test]
    fn kernel_inside_if_branch_keeps_its_branch_helpers() {
        let src = r#"
#ifdef FAST
__device__ float h(float x) { return x * 2.0f; }
__global__ void k(float *a) { a[0] = h(a[0]); }
#else
__device__ float h(float x) { return x + 2.0f; }
__global__ void k(float *a) { a[0] = h(a[0]); }
#endif
"#;
        let map = scope_of(&[("b.cu", src)]);
        let scope = Scope::new(&map);
        let u0 = isolate_at(&scope, "b.cu", 0).unwrap();
        assert!(u0.source.contains("x * 2.0f") && !u0.source.contains("x + 2.0f"));
        assert!(!u0.source.contains("#if"), "{}", u0.source);
        let u1 = isolate_at(&scope, "b.cu", 1).unwrap();
        assert!(u1.source.contains("x + 2.0f") && !u1.source.contains("x * 2.0f"));
    }

    #[test]
    fn declarations_from_the_host_file_that_includes_the_kernel_file() {
        let main = r#"
#include <stdio.h>
#define BLOCK 128
typedef unsigned int uint_t;
__constant__ float weights[4] = {1, 2, 3, 4};
#include "kernel.cu"
int main() {
    int blocks = (1000 + BLOCK - 1) / BLOCK;
    dim3 grid(blocks, 1);
    k<<<grid, BLOCK, BLOCK * sizeof(float)>>>(0, 1000);
    return 0;
}
"#;
        let kernel = "__global__ void k(uint_t *o, int n) { if (threadIdx.x < BLOCK) o[0] = weights[0] * n; }\n";
        let files = [("b/main.cu", main), ("b/kernel.cu", kernel)];
        let u = unit(&files, "b/kernel.cu", "k");
        assert_eq!(u.pulled.macros, vec!["BLOCK"]);
        assert_eq!(u.pulled.types, vec!["uint_t"]);
        assert_eq!(u.pulled.globals, vec!["weights"]);
        assert_eq!(u.pulled.local_files, vec!["b/main.cu"]);
        assert!(
            !codes(&u).contains(&"unresolved_identifier"),
            "{:?}",
            u.diagnostics
        );
        assert!(compiles(&u).unwrap_or(true));

        let map = scope_of(&files);
        let sites = map["b/main.cu"].launch_sites();
        assert_eq!(sites.len(), 1);
        let s = &sites[0];
        assert_eq!(
            (s.kernel.as_str(), s.grid.as_str(), s.block.as_str()),
            ("k", "grid", "BLOCK")
        );
        assert_eq!(s.shared_mem.as_deref(), Some("BLOCK * sizeof(float)"));
        assert_eq!(s.args, vec!["0", "1000"]);
        assert_eq!(s.line, 10);
        assert_eq!(s.path, "b/main.cu");
        assert_eq!(s.definitions["grid"], "dim3 grid(blocks, 1)");
        assert_eq!(
            s.definitions["blocks"],
            "int blocks = (1000 + BLOCK - 1) / BLOCK"
        );
        assert_eq!(s.definitions["BLOCK"], "#define BLOCK 128");
    }

    #[test]
    fn templated_launches_and_streams() {
        let src =
            "void run(float *d, cudaStream_t s) {\n  kt<float, 4><<<dim3(8), 64, 0, s>>>(d);\n}\n";
        let map = scope_of(&[("h.cu", src)]);
        let s = &map["h.cu"].launch_sites()[0];
        assert_eq!(s.kernel, "kt");
        assert_eq!(s.template_args.as_deref(), Some("<float, 4>"));
        assert_eq!(s.stream.as_deref(), Some("s"));
        assert_eq!(s.grid, "dim3(8)");
    }

    #[test]
    fn spaced_launch_brackets_are_launches() {
        // Rodinia's particlefilter writes `k << < grid, block >> > (args)`.
        let src = "void run(double *p, int n) {\n  int nb = n / 128;\n  sum << < nb, 128 >> > (p, n);\n  k<<<1, 1>>>(p, n);\n  int s = n << 2;\n}\n";
        let map = scope_of(&[("h.cu", src)]);
        let sites = map["h.cu"].launch_sites();
        let got: Vec<_> = sites
            .iter()
            .map(|s| (s.kernel.as_str(), s.grid.as_str(), s.block.as_str(), s.line))
            .collect();
        assert_eq!(got, vec![("sum", "nb", "128", 3), ("k", "1", "1", 4)]);
        assert_eq!(sites[0].args, vec!["p", "n"]);
        assert_eq!(sites[0].definitions["nb"], "int nb = n / 128");
    }

    #[test]
    fn a_launch_takes_the_define_of_the_branch_its_flags_switch_on() {
        // Written for this test: a radix switch, one flag on, the others off; the last
        // `#define R` in the file is under a flag that is 0.
        let main = "#define R2 1\n#define R16 0\n#define N 256\n#if R2\n#define R 2\n#endif\n#if R16\n#define R 16\n#endif\n#define T N/R\n__global__ void k(float *d) { d[threadIdx.x] = 0; }\nint main() {\n  int nthreads = T;\n  k<<<dim3(4), dim3(nthreads)>>>(0);\n}\n";
        let map = scope_of(&[("f/main.cu", main)]);
        let sites = map["f/main.cu"].launch_sites();
        assert_eq!(sites[0].definitions["R"], "#define R 2");
        assert_eq!(sites[0].definitions["T"], "#define T N/R");
        // With the flag unknown (defined elsewhere, or by -D), the last stays, as before.
        let unknown = main.replace("#define R16 0\n", "");
        let map = scope_of(&[("f/main.cu", unknown.as_str())]);
        assert_eq!(
            map["f/main.cu"].launch_sites()[0].definitions["R"],
            "#define R 16"
        );
    }

    #[test]
    fn member_assignments_after_preprocessor_lines_are_definitions() {
        let src = "void run(int *p, int n) {\n  dim3 threads(32, 1);\n  dim3 grid(n, 1);\n#ifdef WG\n  threads.x = WG;\n#else\n  threads.x = 128;\n#endif\n  grid.x = 1024 / threads.x;\n  k<<<grid, threads>>>(p, n);\n}\n";
        let map = scope_of(&[("h.cu", src)]);
        let s = &map["h.cu"].launch_sites()[0];
        assert_eq!(
            s.definitions["grid"],
            "dim3 grid(n, 1); grid.x = 1024 / threads.x"
        );
        assert_eq!(
            s.definitions["threads"],
            "dim3 threads(32, 1); threads.x = WG; threads.x = 128"
        );
    }

    #[test]
    fn legacy_textures_kept_when_read_and_dropped_otherwise() {
        let src = r#"
texture<float, 1, cudaReadModeElementType> tex_in;
texture<float, 1, cudaReadModeElementType> tex_unused;
__global__ void reads(float *o) { o[0] = tex1Dfetch(tex_in, threadIdx.x); }
__global__ void plain(float *o) { o[0] = 1.0f; }
"#;
        let map = scope_of(&[("t.cu", src)]);
        let scope = Scope::new(&map);
        let r = isolate(&scope, "t.cu", "reads").unwrap();
        assert!(r.source.contains("tex_in") && !r.source.contains("tex_unused"));
        assert!(r.features.texture_references);
        assert!(!r.features.templates && !r.features.vector_types);
        let d = r
            .diagnostics
            .iter()
            .find(|d| d.code == "legacy_texture_reference")
            .unwrap();
        assert_eq!(d.line, Some(2));
        assert!(d.message.contains("tex_in") && d.message.contains("shim was applied"));
        assert!(r
            .source
            .contains("__device__ kernelpair_legacy_texture<float, 1> tex_in;"));
        assert!(!r.source.lines().any(|l| l.starts_with("texture<")));
        assert_eq!(r.pulled.globals, vec!["tex_in".to_string()]);
        let shim = r
            .diagnostics
            .iter()
            .find(|d| d.code == "texture_shim")
            .unwrap();
        assert_eq!(shim.level, Level::Info);
        assert!(shim.message.contains("`tex_in`"), "{}", shim.message);
        if let Some(ok) = compiles(&r) {
            assert!(ok, "1D texture unit must compile with the shim");
        }
        let p = isolate(&scope, "t.cu", "plain").unwrap();
        assert!(!p.source.contains("texture"));
        assert!(!p.features.texture_references);
        assert!(p.diagnostics.is_empty(), "{:?}", p.diagnostics);
    }

    #[test]
    fn texture_shim_compiles_1d_fetch_1d_and_2d_reads() {
        let src = r#"
struct Cell { int a; float b; };
texture<float4, 1, cudaReadModeElementType> coords;
texture<Cell> cells;
texture<unsigned short, 2, cudaReadModeElementType> img;
__global__ void reads(float *o, const unsigned *idx) {
  unsigned i = threadIdx.x;
  float4 c = tex1D(coords, (float)idx[i]);
  Cell e = tex1Dfetch(cells, i);
  unsigned short p = tex2D(img, idx[i] & 0xFFFF, idx[i] >> 16);
  o[i] = c.x + e.b + e.a + p + tex2D(img, 0.5f, 1.5f);
}
"#;
        let u = unit(&[("t.cu", src)], "t.cu", "reads");
        assert!(u.features.texture_references && u.features.vector_types);
        assert!(
            !u.features.templates,
            "the shim's templates are not the kernel's"
        );
        assert_eq!(u.pulled.globals.len(), 3, "{:?}", u.pulled.globals);
        assert_eq!(
            u.source.matches("struct kernelpair_legacy_texture").count(),
            1
        );
        assert!(u
            .source
            .contains("__device__ kernelpair_legacy_texture<unsigned short, 2> img;"));
        let shims: Vec<_> = u
            .diagnostics
            .iter()
            .filter(|d| d.code == "texture_shim")
            .collect();
        assert_eq!(shims.len(), 3);
        assert!(shims
            .iter()
            .any(|d| d.message.contains("`img`") && d.message.contains("pitch")));
        if let Some(ok) = compiles(&u) {
            assert!(ok, "shimmed texture unit must compile");
        }
    }

    #[test]
    fn texture_shim_refuses_normalized_reads_and_3d() {
        let src = r#"
texture<unsigned char, 2, cudaReadModeNormalizedFloat> bytes;
texture<float, 3, cudaReadModeElementType> vol;
__global__ void reads(float *o) { o[0] = tex2D(bytes, 0.5f, 0.5f) + tex3D(vol, 0.f, 0.f, 0.f); }
"#;
        let u = unit(&[("t.cu", src)], "t.cu", "reads");
        assert!(u.features.texture_references);
        assert!(!u.source.contains("kernelpair_legacy_texture"));
        assert!(u
            .source
            .contains("texture<unsigned char, 2, cudaReadModeNormalizedFloat> bytes;"));
        assert!(!codes(&u).contains(&"texture_shim"));
        let msgs: Vec<&str> = u
            .diagnostics
            .iter()
            .filter(|d| d.code == "legacy_texture_reference")
            .map(|d| d.message.as_str())
            .collect();
        assert_eq!(msgs.len(), 2);
        assert!(msgs
            .iter()
            .any(|m| m.contains("cannot replace") && m.contains("cudaReadModeNormalizedFloat")));
        assert!(msgs
            .iter()
            .any(|m| m.contains("cannot replace") && m.contains("`3`")));
        if let Some(ok) = compiles(&u) {
            assert!(
                !ok,
                "legacy references without a shim do not compile on CUDA 12+"
            );
        }
    }

    #[test]
    fn recovers_kernels_next_to_unparsable_code() {
        let src = r#"
#define DECLARE_BUF(n) float n[4]
DECLARE_BUF(junk) CUDA_MAGIC
__global__ void k(float *a,
#ifdef WITH_B
    float *b,
#endif
    int n) {
    a[0] = n;
}
__global__ void k2(float *a) { a[0] = 1.0f KERNEL_END }
"#;
        let map = scope_of(&[("e.cu", src)]);
        let fi = &map["e.cu"];
        assert_eq!(
            fi.kernels()
                .iter()
                .map(|k| k.name.as_str())
                .collect::<Vec<_>>(),
            vec!["k", "k2"]
        );
        let scope = Scope::new(&map);
        let k = isolate(&scope, "e.cu", "k").unwrap();
        assert!(k.source.contains("#ifdef WITH_B"));
        assert!(k.source.contains("a[0] = n;"));
        let d = k
            .diagnostics
            .iter()
            .find(|d| d.code == "parse_error_recovered")
            .unwrap();
        assert!((4..=9).contains(&d.line.unwrap()), "{d:?}");
        let k2 = isolate(&scope, "e.cu", "k2").unwrap();
        let d = k2
            .diagnostics
            .iter()
            .find(|d| d.code == "parse_error_recovered")
            .unwrap();
        assert_eq!(d.line, Some(11));
        let u = k2
            .diagnostics
            .iter()
            .find(|d| d.code == "unresolved_identifier")
            .unwrap();
        assert!(u.message.contains("KERNEL_END"));
        assert_eq!(u.line, Some(11));
    }

    #[test]
    fn shims_host_header_constants_and_keeps_nvrtc_headers() {
        let src = "#include <float.h>\n#include <cuda_fp16.h>\n#include <stdint.h>\n__global__ void k(float *a, uint32_t n) { a[0] = FLT_MAX + M_PI; }\n";
        let u = unit(&[("s.cu", src)], "s.cu", "k");
        assert!(u.source.starts_with("#include <cuda_fp16.h>\n"));
        assert!(u.source.contains("#define FLT_MAX"));
        assert!(u.source.contains("#define M_PI"));
        assert!(u.source.contains("typedef unsigned int uint32_t;"));
        assert!(!u.source.contains("FLT_MIN"));
        assert_eq!(
            u.pulled.headers,
            vec!["<cuda_fp16.h>", "<float.h>", "<math.h>", "<stdint.h>"]
        );
        assert!(!codes(&u).contains(&"unresolved_identifier"));
        // The training text names the headers, never the shims (a compile-only edit each).
        let text =
            crate::cuda::compile_only::written_text(&u.source, &u.diagnostics, &u.kernel, false);
        assert!(!text.contains("NVRTC has no host headers"), "{text}");
        assert!(!text.contains("#define FLT_MAX"), "{text}");
        for h in ["<float.h>", "<math.h>", "<stdint.h>"] {
            assert!(text.contains(&format!("#include {h}\n")), "{text}");
        }
        assert!(text.contains("a[0] = FLT_MAX + M_PI;"), "{text}");
    }

    #[test]
    fn operator_overloads_follow_the_types_they_take() {
        let src = r#"
inline __device__ float2 operator+(float2 a, float2 b) { return make_float2(a.x + b.x, a.y + b.y); }
inline __device__ int3 operator+(int3 a, int3 b) { return make_int3(a.x + b.x, a.y + b.y, a.z + b.z); }
__global__ void k(float2 *v) { v[0] = v[0] + v[1]; }
"#;
        let u = unit(&[("o.cu", src)], "o.cu", "k");
        assert!(u.source.contains("float2 operator+"));
        assert!(!u.source.contains("int3 operator+"));
        assert!(compiles(&u).unwrap_or(true));
    }

    #[test]
    fn host_constants_become_constexpr_and_c_compound_literals_are_flagged() {
        let src = r#"
const float scale = 1.5f;
const float inv = 1.0 / scale;
struct P { float x, y; };
__global__ void k(float *a, P *p) { a[0] = inv; p[0] = (struct P){1.0f, 2.0f}; }
"#;
        let u = unit(&[("c.cu", src)], "c.cu", "k");
        assert!(u.source.contains("constexpr float scale = 1.5f;"));
        assert!(u.source.contains("constexpr float inv = 1.0 / scale;"));
        let d = u
            .diagnostics
            .iter()
            .find(|d| d.code == "c_compound_literal")
            .unwrap();
        assert_eq!(d.line, Some(5));
        // Rewritten as C++ list-initialization, which NVRTC compiles.
        assert!(u.source.contains("p[0] = P{1.0f, 2.0f};"), "{}", u.source);
        assert!(!u.source.contains("(struct P)"));
        assert!(compiles(&u).unwrap_or(true));
        // The rewrite is for NVRTC only: the text given back for export is the source's,
        // in the kernel and in a helper it calls.
        let back = super::super::compile_only::written_text(&u.source, &u.diagnostics, "k", false);
        assert!(back.contains("p[0] = (struct P){1.0f, 2.0f};"), "{back}");
        assert!(!back.contains("extern \"C\""), "{back}");
        let helper = "struct P { float x, y; };\n__device__ P mk(float v) {\n  return (struct P){v, v};\n}\n__global__ void k(P *p) { p[0] = mk(1.0f); }\n";
        let u = unit(&[("h.cu", helper)], "h.cu", "k");
        assert!(u.source.contains("return P{v, v};"), "{}", u.source);
        let back = super::super::compile_only::written_text(&u.source, &u.diagnostics, "k", false);
        assert!(back.contains("return (struct P){v, v};"), "{back}");
        assert!(
            !back.contains("P{v, v}") || back.contains("(struct P){v, v}"),
            "{back}"
        );
        // C++ list-initialization is left alone and not flagged.
        let cpp = "struct Q { float x, y; };\n__global__ void k(Q *q) { q[0] = Q{1.0f, 2.0f}; }\n";
        let u = unit(&[("q.cu", cpp)], "q.cu", "k");
        assert!(u.source.contains("q[0] = Q{1.0f, 2.0f};"));
        assert!(!u.diagnostics.iter().any(|d| d.code == "c_compound_literal"));
    }

    /// Helpers in namespaces of another file are carried inside their namespace, so the
    /// kernel's qualified calls (`dUtils::AigNodeID`, `dUtils::inner::id`) find them; an
    /// unqualified call through the file's `using namespace other;` keeps working; a
    /// file-scope function of the same name is not taken for the qualified one; a
    /// namespace's name is not reported as undeclared; and the unit compiles.
    #[test]
    fn namespaced_helpers_of_another_file_keep_their_namespace() {
        let util = "namespace dUtils {\n__device__ int AigNodeID(int l) { return l >> 1; }\nnamespace inner { __device__ int id(int x) { return x; } }\n}\nnamespace other { __device__ int thrice(int x) { return 3 * x; } }\n__device__ int AigNodeID(int l) { return -1; }\n";
        let src = "#include \"util.h\"\nusing namespace other;\n__global__ void k(int *a) {\n  a[0] = dUtils::AigNodeID(a[1]) + dUtils::inner::id(a[2]) + thrice(a[3]);\n}\n";
        let u = unit(&[("k.cu", src), ("util.h", util)], "k.cu", "k");
        let s = &u.source;
        assert!(
            s.contains("namespace dUtils { \n__device__ int AigNodeID(int l) { return l >> 1; }"),
            "{s}"
        );
        assert!(
            s.contains("namespace dUtils { namespace inner { \n__device__ int id"),
            "{s}"
        );
        assert!(
            s.contains("namespace other { \n__device__ int thrice"),
            "{s}"
        );
        assert!(s.contains("using namespace other;"), "{s}");
        assert!(
            !s.contains("return -1;"),
            "the file-scope AigNodeID was taken: {s}"
        );
        assert!(
            !u.diagnostics
                .iter()
                .any(|d| d.code == "unresolved_identifier"),
            "{:?}",
            u.diagnostics
        );
        assert!(compiles(&u).unwrap_or(true));
    }

    /// A class the kernel uses keeps its device and `__host__ __device__` members; its
    /// host-only constructor, destructor and methods (defined, declared or templated) are
    /// cut, as NVRTC refuses them, and the edit is recorded so export restores the text.
    #[test]
    fn host_only_members_of_a_class_are_cut_from_the_unit() {
        let src = "template <typename K>\nclass Table {\npublic:\n    Table() = delete;\n    __host__ Table(int c) { cudaMalloc(&keys, c * sizeof(K)); }\n    __host__ ~Table() { freeMem(); }\n    __host__ void freeMem() { cudaFree(keys); }\n    __host__ __device__ int size() const { return n; }\n    __device__ K get(int i) const { return keys[i]; }\n    template <typename T> __host__ void fill(T v) { }\n    __host__ void declared_only(int);\n    K *keys;\n    int n;\n};\n__global__ void k(Table<int> t, int *out) { out[0] = t.get(0) + t.size(); }\n";
        let u = unit(&[("k.cu", src)], "k.cu", "k");
        let s = &u.source;
        for gone in ["cudaMalloc", "~Table", "freeMem", "fill(", "declared_only"] {
            assert!(!s.contains(gone), "{gone} stayed: {s}");
        }
        for kept in [
            "Table() = delete;",
            "__host__ __device__ int size()",
            "__device__ K get(",
            "K *keys;",
        ] {
            assert!(s.contains(kept), "{kept} was cut: {s}");
        }
        assert!(codes(&u).contains(&"compile_only_edit"), "{:?}", codes(&u));
        assert!(compiles(&u).unwrap_or(true));
    }

    /// A class's stream friend (`friend std::ostream& operator<<`, not `__device__`) is cut
    /// as a host-only member is (HeCBench projectile, gpp); its device members stay.
    #[test]
    fn a_class_stream_friend_is_cut_as_host_only() {
        let src = "#include <iostream>\nstruct C {\n    float re, im;\n    __host__ __device__ C conj() const { return C{re, -im}; }\n    friend std::ostream& operator<<(std::ostream& os, const C& c) { return os << c.re; }\n};\n__global__ void k(C* c) { c[0] = c[0].conj(); }\n";
        let u = unit(&[("k.cu", src)], "k.cu", "k");
        assert!(!u.source.contains("ostream"), "{}", u.source);
        assert!(u.source.contains("C conj() const"), "{}", u.source);
        assert!(compiles(&u).unwrap_or(true));
    }

    /// `std::` utilities and math NVRTC does not declare come from libcu++.
    #[test]
    fn std_pairs_tuples_and_math_come_from_libcu() {
        let src = "#include <utility>\n#include <cmath>\n__global__ void k(float *a, int *b) {\n  std::pair<int, float> p = std::make_pair(1, 2.0f);\n  a[0] = std::abs(a[1]) + std::nearbyint(a[2]) + std::fmax(p.second, std::sqrt(a[3]));\n  b[0] = std::get<0>(std::make_tuple(p.first, 3));\n}\n";
        let u = unit(&[("k.cu", src)], "k.cu", "k");
        for h in ["<cuda/std/utility>", "<cuda/std/cmath>", "<cuda/std/tuple>"] {
            assert!(u.source.contains(h), "{h}: {}", u.source);
        }
        assert!(compiles(&u).unwrap_or(true));
    }

    /// `<stdint.h>`'s constant macros come from the shim as its types do.
    #[test]
    fn stdint_constant_macros_are_shimmed() {
        let src = "#include <stdint.h>\n__global__ void k(uint64_t *a, uint32_t *b) {\n  a[0] = UINT64_C(0x9E3779B97F4A7C15) ^ (uint64_t)INT64_C(-1);\n  b[0] = UINT32_C(2654435761) + (uint32_t)UINT64_MAX;\n}\n";
        let u = unit(&[("k.cu", src)], "k.cu", "k");
        for m in [
            "#define UINT64_C(c) c ## ULL",
            "#define UINT32_C(c) c ## U",
            "#define INT64_C",
        ] {
            assert!(u.source.contains(m), "{m}: {}", u.source);
        }
        assert!(
            !codes(&u).contains(&"unresolved_identifier"),
            "{:?}",
            codes(&u)
        );
        assert!(compiles(&u).unwrap_or(true));
    }

    #[test]
    fn unresolved_names_are_reported_once_with_their_line() {
        let src = "__global__ void k(float *a) {\n  a[0] = mystery(a[1]);\n  a[2] = mystery(a[3]) + threadIdx.x + sqrtf(2.0f);\n}\n";
        let u = unit(&[("u.cu", src)], "u.cu", "k");
        let un: Vec<_> = u
            .diagnostics
            .iter()
            .filter(|d| d.code == "unresolved_identifier")
            .collect();
        assert_eq!(un.len(), 1, "{un:?}");
        assert!(un[0].message.contains("`mystery`"));
        assert_eq!(un[0].line, Some(2));
    }

    #[test]
    fn identical_kernels_normalize_to_the_same_tokens() {
        let a = "__global__ void k(float *a) { a[0] = 1.0f; } // naive";
        let b = "__global__ void k(float *a)\n{\n    /* same */ a[0]=1.0f;\n}";
        assert_eq!(normalized_tokens(a), normalized_tokens(b));
        assert_ne!(
            normalized_tokens(a),
            normalized_tokens("__global__ void k(float *a) { a[0] = 2.0f; }")
        );
    }

    #[test]
    fn file_index_is_send_and_sync() {
        fn check<T: Send + Sync>() {}
        check::<FileIndex>();
        check::<IsolatedKernel>();
    }

    /// Broken input never panics and never loses a kernel whose own text is whole.
    #[test]
    fn index_survives_garbage() {
        let cases = [
            "",
            "}}}}{{{{",
            "/* unterminated comment __global__ void k() {}",
            "\"unterminated string\n__global__ void k(int *a) { a[0] = 1; }\n",
            "#if 1\n#else\n#endif\n#endif\n#else\n__global__ void k(int *a) {}\n",
            "__global__ void k(int *a) { if (a) { a[0] = 1; }\n",
            "template <typename T __global__ void k(T *a) {}",
            "#define X(a, b) a ## b\n#define\n#include\n#include <\n__global__ void k(int *a) { a[0] = X(1, 2); }",
            "\u{feff}__global__ void k(int *a) { a[0] = '\\''; }",
            "extern \"C\" { namespace { __global__ void k(int *a) {} } }",
        ];
        for (i, c) in cases.iter().enumerate() {
            let map = scope_of(&[("g.cu", c)]);
            let scope = Scope::new(&map);
            for k in 0..map["g.cu"].kernels().len() {
                let u = isolate_at(&scope, "g.cu", k).unwrap();
                assert!(u.source.contains("void k"), "case {i}: {}", u.source);
            }
            if c.contains("__global__ void k(int *a) {") && !c.starts_with("/*") {
                assert!(
                    !map["g.cu"].kernels().is_empty(),
                    "case {i} lost its kernel"
                );
            }
        }
    }

    #[test]
    fn resolves_includes_like_a_compiler_never_by_name_alone() {
        let map = scope_of(&[
            ("x/inc/a.h", ""),
            ("x/src/k.cu", ""),
            ("x/src/a.h", ""),
            ("y/b.h", ""),
        ]);
        let dirs = ["x/inc".to_string(), "y".to_string()];
        let s = Scope {
            files: &map,
            include_dirs: &dirs[..1],
        };
        assert_eq!(
            resolve_include(&s, "x/src/k.cu", "../inc/a.h").as_deref(),
            Some("x/inc/a.h")
        );
        // The including file's own folder wins over an include folder.
        assert_eq!(
            resolve_include(&s, "x/src/k.cu", "a.h").as_deref(),
            Some("x/src/a.h")
        );
        assert_eq!(
            resolve_include(&s, "x/inc/a.h", "a.h").as_deref(),
            Some("x/inc/a.h")
        );
        // y/b.h exists, but no rule reaches it: a header is never found by name alone.
        assert_eq!(resolve_include(&s, "x/src/k.cu", "b.h"), None);
        // Nothing outside the root.
        assert_eq!(resolve_include(&s, "k.cu", "../y/b.h"), None);
        let s = Scope {
            files: &map,
            include_dirs: &dirs,
        };
        assert_eq!(
            resolve_include(&s, "x/src/k.cu", "b.h").as_deref(),
            Some("y/b.h")
        );
        assert_eq!(resolve_include(&s, "x/src/k.cu", "zzz.h"), None);
    }

    /// A prompt over budget sends the kernel and the helpers it calls; macros, types,
    /// globals and functions it never calls stay behind as context.
    #[test]
    fn kernel_with_helpers_keeps_called_functions_and_leaves_the_rest_as_context() {
        let unit = "#include <math.h>\n\
#define N 16\n\
struct Pt { float x, y; };\n\
__constant__ float scale[N];\n\
__device__ float sq(float v) { return v * v; }\n\
__device__ float norm2(Pt p) { return sq(p.x) + sq(p.y); }\n\
__device__ float unused(float v) { return v + 1.0f; }\n\
__global__ void k(const Pt* p, float* out) {\n  int i = threadIdx.x;\n  out[i] = norm2(p[i]) * scale[i % N];\n}\n";
        let cut = kernel_with_helpers(unit, "k").unwrap();
        assert_eq!(cut.helpers, ["sq", "norm2"]);
        assert!(cut.code.starts_with("__device__ float sq("), "{}", cut.code);
        assert!(cut.code.contains("__global__ void k("), "{}", cut.code);
        for gone in ["#define N", "struct Pt", "__constant__", "unused"] {
            assert!(!cut.code.contains(gone), "{gone} in {}", cut.code);
            assert!(cut.context.contains(gone), "{gone} not in {}", cut.context);
        }
        assert_eq!(
            cut.context_names,
            ["N", "Pt", "scale"],
            "unused is not used"
        );
        // Context then code is the unit again, but for the order of its items.
        let joined = format!("{}{}", cut.context, cut.code);
        let mut again: Vec<&str> = joined.lines().filter(|l| !l.trim().is_empty()).collect();
        let mut orig: Vec<&str> = unit.lines().filter(|l| !l.trim().is_empty()).collect();
        again.sort_unstable();
        orig.sort_unstable();
        assert_eq!(again, orig);
        assert_eq!(kernel_with_helpers(unit, "nope"), None);
    }
}
