//! Isolation: the closure of what one kernel uses, resolved over the scope's files in
//! include order (both directions), written out as a unit NVRTC compiles alone.

use super::builtins::{self, Shim};
use super::index::{CondBranch, Item, ItemKind};
use super::lex;
use super::{CudaError, FileIndex, IsolatedKernel, Scope};
use crate::record::{Diagnostic, Features, Level, Pulled};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Isolate the first kernel named `kernel` in `file`.
pub fn isolate(scope: &Scope, file: &str, kernel: &str) -> Result<IsolatedKernel, CudaError> {
    let fi = scope
        .files
        .get(file)
        .ok_or_else(|| CudaError::FileNotInScope {
            file: file.to_string(),
        })?;
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

/// Isolate the `kernel_index`-th kernel of `file` (an index into `kernels()`): for
/// overloads and same-named kernels in one file.
pub fn isolate_at(
    scope: &Scope,
    file: &str,
    kernel_index: usize,
) -> Result<IsolatedKernel, CudaError> {
    let fi = scope
        .files
        .get(file)
        .ok_or_else(|| CudaError::FileNotInScope {
            file: file.to_string(),
        })?;
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
    cx.visit((0, kitem));
    let (source, pulled, diagnostics, texture) = cx.emit();
    let features = features_of(&source, texture, !info.template_params.is_empty());
    Ok(IsolatedKernel {
        kernel: info.name.clone(),
        line: info.line,
        params: info.params.clone(),
        template_params: info.template_params.clone(),
        source,
        symbol: info.name.clone(),
        pulled,
        features,
        diagnostics,
    })
}

/// Resolve a local `#include "target"` written in `from` to a file of the scope: relative
/// to `from`'s folder first, then to each folder of the scope.
pub fn resolve_include(scope: &Scope, from: &str, target: &str) -> Option<String> {
    let dir = parent(from);
    let first = normalize_path(&join(dir, target));
    if scope.files.contains_key(&first) {
        return Some(first);
    }
    let mut dirs: Vec<&str> = scope.files.keys().map(|k| parent(k)).collect();
    dirs.sort();
    dirs.dedup();
    dirs.into_iter()
        .map(|d| normalize_path(&join(d, target)))
        .find(|p| scope.files.contains_key(p))
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

    /// The branches of `item` that conflict with or are implied by the kernel's own
    /// `#if` branches (only meaningful in the kernel's file).
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

    /// Definitions of `name` visible from file `from`: all of them in the first file
    /// (in lookup order) that has any.
    fn resolve(&mut self, name: &str, from: usize, only_macros: bool) -> Vec<ItemId> {
        let mut ranks: Vec<usize> = vec![from];
        ranks.extend((0..self.files.len()).filter(|&r| r != from));
        let builtin = builtins::is_builtin(name);
        for r in ranks {
            let (path, reach, fi) = self.files[r];
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
                cands.retain(|&id| self.item(id).kind != ItemKind::Prototype);
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

    fn visit(&mut self, id: ItemId) {
        self.state.insert(id, State::InProgress);
        let it = self.item(id);
        let refs = it
            .refs
            .iter()
            .map(|(n, l)| (n.as_str(), *l, false))
            .chain(it.cond_refs.iter().map(|n| (n.as_str(), it.line, true)));
        let refs: Vec<(&str, u32, bool)> = refs.collect();
        for (name, line, cond) in refs {
            let targets = self.resolve(name, id.0, cond);
            if targets.is_empty() {
                if cond {
                    continue;
                }
                if let Some(s) = builtins::shim(name) {
                    if !self.shims.iter().any(|x| x.name == s.name) {
                        self.shims.push(s);
                    }
                } else if !builtins::is_builtin(name) {
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
            let used: HashSet<&str> = it.refs.iter().map(|(n, _)| n.as_str()).collect();
            for r in 0..self.files.len() {
                let (_, reach, fi) = self.files[r];
                if reach != Reach::Include {
                    continue;
                }
                for &oi in &fi.operators {
                    let oid = (r, oi);
                    if self.state.contains_key(&oid) || !self.compatible(oid) {
                        continue;
                    }
                    if self
                        .item(oid)
                        .operator_types
                        .iter()
                        .any(|t| used.contains(t.as_str()))
                    {
                        self.visit(oid);
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

    /// The item's text inside the `#if` branches it needs.
    fn wrapped(&self, id: ItemId, text: &str) -> String {
        let conds: Vec<&CondBranch> = if id.0 == 0 {
            let k = &self.kernel().cond;
            self.item(id)
                .cond
                .iter()
                .filter(|c| !k.iter().any(|kc| kc.frame == c.frame))
                .collect()
        } else {
            self.item(id).cond.iter().collect()
        };
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

    fn emit(mut self) -> (String, Pulled, Vec<Diagnostic>, bool) {
        let mut out = String::new();
        let mut pulled = Pulled::default();
        let mut diags: Vec<Diagnostic> = Vec::new();
        let own_path = self.files[0].0;

        // Files that contributed, kernel's first.
        let mut contributing: Vec<usize> = vec![0];
        for id in self.macros.iter().chain(&self.order) {
            if !contributing.contains(&id.0) {
                contributing.push(id.0);
            }
        }
        pulled.local_files = contributing[1..]
            .iter()
            .map(|&r| self.files[r].0.to_string())
            .collect();

        // System headers: keep those NVRTC ships, drop host ones.
        let mut kept: Vec<String> = Vec::new();
        let mut dropped: BTreeMap<String, String> = BTreeMap::new();
        for &r in &contributing {
            let (path, _, fi) = self.files[r];
            for inc in fi.includes.iter().filter(|i| i.system) {
                if resolve_include(self.scope, path, &inc.target).is_some() {
                    continue;
                }
                if builtins::keep_system_header(&inc.target) {
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
        for h in &kept {
            out.push_str(&format!("#include <{h}>\n"));
            pulled.headers.push(format!("<{h}>"));
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
        // Shims for host-header names the unit uses, grouped by header.
        self.shims.sort_by_key(|s| s.header);
        let mut last_header = "";
        for s in &self.shims {
            if s.header != last_header {
                out.push_str(&format!(
                    "// from {} (NVRTC has no host headers)\n",
                    s.header
                ));
                pulled.headers.push(s.header.to_string());
                last_header = s.header;
            }
            out.push_str(s.definition);
            out.push('\n');
        }
        if !kept.is_empty() || !self.shims.is_empty() {
            out.push('\n');
        }

        // Macros in file order.
        let mut macros = self.macros.clone();
        macros.sort_by_key(|&(r, i)| (contributing.iter().position(|&c| c == r), i));
        for &id in &macros {
            let it = self.item(id);
            out.push_str(&self.wrapped(id, &it.text));
            if !pulled.macros.contains(&it.names[0]) {
                pulled.macros.push(it.names[0].clone());
            }
        }
        if !macros.is_empty() {
            out.push('\n');
        }

        let mut texture = false;
        let order = std::mem::take(&mut self.order);
        for &id in &order {
            let it = self.item(id);
            let path = self.files[id.0].0;
            for &p in self.protos.get(&id).into_iter().flatten() {
                let pi = self.item(p);
                if let Some(h) = pi.header_len {
                    let proto = format!("{};", pi.text[..h].trim_end());
                    out.push_str(&self.wrapped(p, &proto));
                }
            }
            let is_kernel = id == (0, self.kernel_item);
            let text = if is_kernel {
                kernel_text(it)
            } else {
                it.text.clone()
            };
            out.push_str(&self.wrapped(id, &text));
            out.push('\n');
            let name = it.names[0].clone();
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
                    diags.push(
                        Diagnostic::new(
                            Level::Warning,
                            "legacy_texture_reference",
                            format!(
                                "texture reference `{name}` ({path}:{}) is a legacy texture<…> reference, removed in CUDA 12: the unit does not compile on CUDA 12+ until it is ported to cudaTextureObject_t",
                                it.line
                            ),
                        )
                        .at(it.line),
                    );
                }
                ItemKind::Type => {
                    if !pulled.types.contains(&name) {
                        pulled.types.push(name.clone())
                    }
                }
                ItemKind::Macro => {}
            }
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
        }
        for &id in &macros {
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
        let source = format!("{}\n", out.trim_end());
        (source, pulled, diags, texture)
    }
}

/// The kernel's own text, with `extern "C"` linkage unless it is a template.
fn kernel_text(it: &Item) -> String {
    if it.template {
        return it.text.clone();
    }
    let mut text = it.text.trim_start().to_string();
    if let Some(rest) = text.strip_prefix("extern") {
        let r = rest.trim_start();
        if let Some(r2) = r.strip_prefix("\"C\"") {
            text = r2.trim_start().to_string();
        }
    }
    // `extern "C" static` is ill-formed: drop `static` from the signature.
    if let Some(h) = it.header_len {
        let off = it.text.len() - text.len();
        let hl = h.saturating_sub(off).min(text.len());
        let header: Vec<&str> = text[..hl].split_inclusive(char::is_whitespace).collect();
        let cleaned: String = header
            .into_iter()
            .filter(|w| w.trim() != "static")
            .collect();
        text = format!("{cleaned}{}", &text[hl..]);
    }
    format!("extern \"C\" {text}")
}

fn features_of(source: &str, texture: bool, template_kernel: bool) -> Features {
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
