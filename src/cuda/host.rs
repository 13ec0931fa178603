//! `cuda::host`: a typed index of host code, from the front end's one tree-sitter parser
//! (issue 28). This first piece indexes a file's function definitions (name, parameter
//! names, lines), so "which function holds this line" is one query over parsed facts, not
//! a bracket scan over text. Namespaces, `extern "C"` blocks and classes are seen through;
//! a function defined inside another (a local class's method, a lambda) is not a separate
//! scope of the file.

use super::syntax::text;
use super::tree::visit;
use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, LazyLock, Mutex};
use tree_sitter::{Node, Tree};

/// One function definition of a host file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFn {
    /// The unqualified name (`Solver::run` → `run`).
    pub name: String,
    /// Parameter names in order (`float *a` → `a`; an unnamed one is "").
    pub params: Vec<String>,
    /// The parameters' whole texts, in the same order (`float *&a`); a K&R head's names.
    pub param_decls: Vec<String>,
    /// 1-based lines of the body's `{` and `}`.
    pub body_lines: (u32, u32),
    /// 1-based line where the definition starts (its `template <…>` included).
    pub head_line: u32,
    /// A function template's parameter declarations as written (`int W`, `typename T`);
    /// empty for a plain function.
    pub template_params: Vec<String>,
    /// The text between the parameter list's parentheses (None for a K&R head).
    pub params_text: Option<String>,
    /// Byte span from the head (its `template <…>` included) to after the closing `}`.
    pub span: (usize, usize),
    /// Byte span of the body, `{` to after `}`.
    pub body: (usize, usize),
}

impl HostFn {
    /// Whether the function runs only on the device: its head, in `src` (the text it was
    /// read from), says `__global__`, or `__device__` without `__host__`. Its locals are
    /// no host values.
    pub fn device_only(&self, src: &str) -> bool {
        let head = src.get(self.span.0..self.body.0).unwrap_or("");
        let words: Vec<&str> = super::cexpr::tokens_lossy(head)
            .into_iter()
            .map(|t| t.text)
            .collect();
        let has = |w: &str| words.contains(&w);
        has("__global__") || (has("__device__") && !has("__host__"))
    }
}

/// What one parse of a host text says: its functions, file-level variables and calls, and
/// its tree for statement questions (`super::host_flow::Flow`).
struct Index {
    tree: Tree,
    fns: Arc<Vec<HostFn>>,
    variables: Arc<Vec<String>>,
    calls: HashMap<String, Vec<HostCall>>,
}

/// A text's [`Index`], parsed once per process: every pair of a tree asks about the same
/// few files.
fn index(src: &str) -> Arc<Index> {
    static INDEX: LazyLock<TextCache<Index>> = LazyLock::new(Default::default);
    per_text(&INDEX, src, |s| {
        let tree = super::syntax::parse(s);
        let root = tree.root_node();
        let fns = functions_in(root, s);
        Index {
            calls: calls_in(root, s, &fns),
            fns: Arc::new(fns),
            variables: Arc::new(variables_in(root, s)),
            tree: tree.clone(),
        }
    })
}

/// A text's tree, from its one parse (a copy shares the parse).
pub(crate) fn tree(src: &str) -> Tree {
    index(src).tree.clone()
}

/// [`functions`] of a text, from its one parse ([`index`]).
pub fn functions_cached(src: &str) -> Arc<Vec<HostFn>> {
    index(src).fns.clone()
}

/// The variables a text declares at file level (also inside namespaces and `extern "C"`
/// blocks): `int N = 4096;`, `float *d_x;`, `extern int n;`; from its one parse.
pub fn variables_cached(src: &str) -> Arc<Vec<String>> {
    index(src).variables.clone()
}

/// One call in host code: `f(a, b)`, also a method (`s.f(a)`), a qualified name
/// (`std::f(a)`) or a template instance (`f<T>(a)`), known by its last name. A kernel
/// launch is no call; neither is a definition, a prototype or `dim3 g(a, b)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostCall {
    /// 1-based line of the called name.
    pub line: u32,
    /// The argument texts, trimmed; a line continuation reads as a space.
    pub args: Vec<String>,
    /// Bytes from the called name to after the closing `)`.
    pub span: (usize, usize),
}

/// The calls of `name` in a text, in order, from its one parse.
pub fn calls_to(src: &str, name: &str) -> Vec<HostCall> {
    index(src).calls.get(name).cloned().unwrap_or_default()
}

/// Every callee a text calls with an argument that passes `keep`.
pub fn callees_passing(src: &str, keep: impl Fn(&str) -> bool) -> Vec<String> {
    let idx = index(src);
    let mut out: Vec<String> = idx
        .calls
        .iter()
        .filter(|(_, cs)| cs.iter().any(|c| c.args.iter().any(|a| keep(a))))
        .map(|(n, _)| n.clone())
        .collect();
    out.sort();
    out
}

/// The calls of `name` in a snippet of host code, an expression or statements
/// (`n = MIN(a, b) * 2`), read as a function body; spans are the snippet's own.
pub fn snippet_calls(code: &str, name: &str) -> Vec<HostCall> {
    const HEAD: &str = "void _() {\n";
    let wrapped = format!("{HEAD}{code}\n;}}");
    calls_to(&wrapped, name)
        .into_iter()
        .filter(|c| c.span.0 >= HEAD.len() && c.span.1 <= HEAD.len() + code.len())
        .map(|c| HostCall {
            line: c.line - 1,
            span: (c.span.0 - HEAD.len(), c.span.1 - HEAD.len()),
            ..c
        })
        .collect()
}

/// The calls of a text: call expressions but kernel launches and K&R heads (`f(a, b)`
/// before `int a, b; {`, which the grammar reads as a call). And, in a block, a
/// declaration `M f(a, b)` of a function or an object constructed from arguments: after a
/// macro that ends a statement without `;` (`CUDA_ERRCK` then `cudaMalloc(&p, n)`) the
/// grammar takes the macro for a type; `dim3 g(a, b)` reads as a call of `g` too.
fn calls_in(root: Node, src: &str, fns: &[HostFn]) -> HashMap<String, Vec<HostCall>> {
    let mut out: HashMap<String, Vec<HostCall>> = HashMap::new();
    let knr_head = |p: usize| fns.iter().any(|f| (f.span.0..f.body.0).contains(&p));
    visit(root, &mut |n| {
        let (name, list) = match n.kind() {
            "call_expression" => {
                let mut c = n.walk();
                if n.children(&mut c).any(|x| x.kind() == "kernel_call_syntax") {
                    return;
                }
                let name = n.child_by_field_name("function").and_then(called_name);
                (name, n.child_by_field_name("arguments"))
            }
            "init_declarator" | "function_declarator" if in_block(n) => {
                let list = n
                    .child_by_field_name("value")
                    .or_else(|| n.child_by_field_name("parameters"))
                    .filter(|l| matches!(l.kind(), "argument_list" | "parameter_list"));
                let name = n.child_by_field_name("declarator");
                (name.filter(|d| d.kind() == "identifier"), list)
            }
            _ => return,
        };
        let (Some(name), Some(list)) = (name, list) else {
            return;
        };
        if knr_head(name.start_byte()) {
            return;
        }
        let args = arg_texts(list, src);
        out.entry(text(name, src).to_string())
            .or_default()
            .push(HostCall {
                line: name.start_position().row as u32 + 1,
                args,
                span: (name.start_byte(), n.end_byte()),
            });
    });
    out
}

/// The texts of a list's arguments (call arguments, template arguments), trimmed; a line
/// continuation reads as a space.
fn arg_texts(list: Node, src: &str) -> Vec<String> {
    let mut c = list.walk();
    let args = list
        .named_children(&mut c)
        .filter(|a| a.kind() != "comment");
    args.map(|a| {
        let t = text(a, src).replace("\\\r\n", " ").replace("\\\n", " ");
        t.trim().to_string()
    })
    .collect()
}

/// A snippet that is one call as a whole, `f(a, b)` or `f<T, 4>(a, b)` with `f` a plain
/// name: `f`, the template arguments and the call's arguments, as written.
pub fn whole_call(code: &str) -> Option<(String, Vec<String>, Vec<String>)> {
    const HEAD: &str = "void _() {\n";
    let code = code.trim();
    let wrapped = format!("{HEAD}{code}\n;}}");
    let tree = super::syntax::parse(&wrapped);
    let n = tree
        .root_node()
        .descendant_for_byte_range(HEAD.len(), HEAD.len() + code.len())?;
    let whole = n.kind() == "call_expression"
        && (n.start_byte(), n.end_byte()) == (HEAD.len(), HEAD.len() + code.len());
    if !whole || n.has_error() {
        return None;
    }
    let f = n.child_by_field_name("function")?;
    let (name, targs) = match f.kind() {
        "identifier" => (f, Vec::new()),
        "template_function" => {
            let name = f.child_by_field_name("name")?;
            let list = f.child_by_field_name("arguments")?;
            (name, arg_texts(list, &wrapped))
        }
        _ => return None,
    };
    let args = arg_texts(n.child_by_field_name("arguments")?, &wrapped);
    Some((text(name, &wrapped).to_string(), targs, args))
}

/// The arguments of a template argument list as written (`<float, 4 * N>` → [`float`,
/// `4 * N`]), read as the list of a type (`_<float, 4 * N> _;`); None when it does not
/// read as one.
pub fn template_arguments(list: &str) -> Option<Vec<String>> {
    let list = list.trim();
    let code = format!("_{list} _;");
    let tree = super::syntax::parse(&code);
    let n = tree
        .root_node()
        .descendant_for_byte_range(1, 1 + list.len())?;
    let whole = n.kind() == "template_argument_list"
        && (n.start_byte(), n.end_byte()) == (1, 1 + list.len());
    (whole && !n.has_error()).then(|| arg_texts(n, &code))
}

/// One explicit instance of a function template in host code: a call `f<192, 8>(…)` (also
/// qualified, `ns::f<…>(…)`, or a method, `s.f<…>(…)`, `s.template f<…>(…)`) or a
/// declaration naming one (`template void f<float>(…);`, a specialization); a kernel
/// launch is none.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateInstance {
    /// 1-based line of the name.
    pub line: u32,
    /// The template arguments as written, spaces single.
    pub args: Vec<String>,
}

/// The explicit instances of function template `name` in a text, in order, from its one
/// parse.
pub fn template_instances(src: &str, name: &str) -> Vec<TemplateInstance> {
    let tree = tree(src);
    let mut out = Vec::new();
    visit(tree.root_node(), &mut |n| {
        if !matches!(n.kind(), "template_function" | "template_method") {
            return;
        }
        let (Some(id), Some(list)) = (
            n.child_by_field_name("name"),
            n.child_by_field_name("arguments"),
        ) else {
            return;
        };
        if text(id, src) != name || !names_instance(n) {
            return;
        }
        out.push(TemplateInstance {
            line: id.start_position().row as u32 + 1,
            args: arg_texts(list, src)
                .iter()
                .map(|a| super::syntax::single_spaced(a))
                .collect(),
        });
    });
    out
}

/// Whether a template name (`f<T>`) is what a call calls (not a launch) or what a
/// declarator declares, through qualifiers and member access.
fn names_instance(n: Node) -> bool {
    let mut x = n;
    while let Some(p) = x.parent() {
        match p.kind() {
            "qualified_identifier" | "field_expression" | "dependent_name" => x = p,
            "call_expression" => {
                let mut c = p.walk();
                let launch = p.children(&mut c).any(|k| k.kind() == "kernel_call_syntax");
                return !launch && p.child_by_field_name("function") == Some(x);
            }
            "function_declarator" => return p.child_by_field_name("declarator") == Some(x),
            _ => return false,
        }
    }
    false
}

/// Whether a node sits in a block (a function body, or a K&R one at file level).
fn in_block(n: Node) -> bool {
    let mut p = n.parent();
    while let Some(x) = p {
        if x.kind() == "compound_statement" {
            return true;
        }
        p = x.parent();
    }
    false
}

/// The name node a call's function expression ends in: `f`, `s.f`, `ns::f`, `f<T>`.
fn called_name(f: Node) -> Option<Node> {
    match f.kind() {
        "identifier" | "field_identifier" => Some(f),
        "field_expression" => called_name(f.child_by_field_name("field")?),
        "qualified_identifier" | "template_function" => called_name(f.child_by_field_name("name")?),
        _ => None,
    }
}

fn variables_in(root: Node, text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(n) = stack.pop() {
        let mut c = n.walk();
        for d in n.named_children(&mut c) {
            match d.kind() {
                "declaration" => {
                    let mut c2 = d.walk();
                    for decl in d.children_by_field_name("declarator", &mut c2) {
                        // The name at the end of the declarator chain; prototypes are not
                        // variables.
                        let mut x = decl;
                        while x.kind() != "function_declarator" {
                            match x.child_by_field_name("declarator") {
                                Some(inner) => x = inner,
                                None => break,
                            }
                        }
                        if x.kind() == "identifier" {
                            out.push(super::syntax::text(x, text).to_string());
                        }
                    }
                }
                "linkage_specification" | "namespace_definition" | "declaration_list" => {
                    stack.push(d)
                }
                _ => {}
            }
        }
    }
    out
}

/// Answers about texts, keyed by a text's length and hash.
pub(crate) type TextCache<T> = Mutex<HashMap<(usize, u64), Arc<T>>>;

/// `f(src)`, computed once per process for each text and shared.
pub(crate) fn per_text<T>(cache: &TextCache<T>, src: &str, f: impl FnOnce(&str) -> T) -> Arc<T> {
    let key = text_key(src);
    if let Some(v) = cache.lock().ok().and_then(|c| c.get(&key).cloned()) {
        return v;
    }
    let v = Arc::new(f(src));
    if let Ok(mut c) = cache.lock() {
        c.insert(key, v.clone());
    }
    v
}

/// What a text is known by in a cache: its length and hash.
pub(crate) fn text_key(src: &str) -> (usize, u64) {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    src.hash(&mut h);
    (src.len(), h.finish())
}

/// The functions a file defines, in source order (outermost definitions only).
pub fn functions(src: &str) -> Vec<HostFn> {
    functions_in(super::syntax::parse(src).root_node(), src)
}

fn functions_in(root: Node, src: &str) -> Vec<HostFn> {
    let mut out = Vec::new();
    visit(root, &mut |n| {
        let f = match n.kind() {
            "function_definition" if !inside_function(n) => host_fn(n, src),
            // A K&R definition (`void f(a, b) int a; float *b; { … }`, old C in Rodinia)
            // parses as a call-like declaration, parameter declarations and a bare block.
            "compound_statement" if is_file_level(n) => knr_fn(n, src),
            _ => None,
        };
        out.extend(f);
    });
    out
}

/// A block directly in the file (or a namespace or `extern "C"` block), not in a function.
fn is_file_level(n: Node) -> bool {
    n.parent().is_some_and(|p| {
        matches!(
            p.kind(),
            "translation_unit" | "declaration_list" | "linkage_specification"
        )
    })
}

/// A bare file-level block after a K&R head and its parameter declarations: that head.
/// Tree-sitter's C++ grammar reads `T name(a, b)` as a call-like declaration (`int
/// f(a)`), as a prototype whose parameters are unnamed types (`float *f(n)`), as a call
/// statement (no return type), or not at all (an ERROR); the head is the nearest earlier
/// sibling holding one of those, past plain declarations (`int a, b;`).
fn knr_fn(body: Node, src: &str) -> Option<HostFn> {
    let lines = (
        body.start_position().row as u32 + 1,
        body.end_position().row as u32 + 1,
    );
    let mut prev = body.prev_named_sibling();
    while let Some(d) = prev {
        let mut head = None;
        visit(d, &mut |x| {
            if head.is_none() {
                head = knr_head(x, src);
            }
        });
        if let Some((name, params)) = head {
            return Some(HostFn {
                name,
                param_decls: params.clone(),
                params,
                body_lines: lines,
                head_line: d.start_position().row as u32 + 1,
                template_params: Vec::new(),
                params_text: None,
                span: (d.start_byte(), body.end_byte()),
                body: (body.start_byte(), body.end_byte()),
            });
        }
        if d.kind() != "declaration" {
            return None;
        }
        prev = d.prev_named_sibling();
    }
    None
}

/// One node read as a K&R head `name(a, b)`: (name, [a, b]).
fn knr_head(x: Node, src: &str) -> Option<(String, Vec<String>)> {
    let idents = |list: Node, ok: &dyn Fn(Node) -> Option<String>| -> Option<Vec<String>> {
        let mut c = list.walk();
        list.named_children(&mut c).map(ok).collect()
    };
    let ident = |n: Node| (n.kind() == "identifier").then(|| text(n, src).to_string());
    let (name, params) = match x.kind() {
        "init_declarator" => {
            let args = x.child_by_field_name("value")?;
            (args.kind() == "argument_list").then_some(())?;
            (x.child_by_field_name("declarator")?, idents(args, &ident)?)
        }
        "function_declarator" => {
            let list = x.child_by_field_name("parameters")?;
            let typed_only = |p: Node| {
                let ty = p.child_by_field_name("type")?;
                (p.kind() == "parameter_declaration"
                    && p.child_by_field_name("declarator").is_none()
                    && ty.kind() == "type_identifier")
                    .then(|| text(ty, src).to_string())
            };
            (
                x.child_by_field_name("declarator")?,
                idents(list, &typed_only)?,
            )
        }
        "call_expression" => {
            let args = x.child_by_field_name("arguments")?;
            (x.child_by_field_name("function")?, idents(args, &ident)?)
        }
        _ => return None,
    };
    (name.kind() == "identifier").then(|| (text(name, src).to_string(), params))
}

/// The function whose body holds 1-based `line`, in a list from [`functions`].
pub fn function_at(fns: &[HostFn], line: u32) -> Option<&HostFn> {
    fns.iter()
        .find(|f| (f.body_lines.0..=f.body_lines.1).contains(&line))
}

fn inside_function(n: Node) -> bool {
    let mut p = n.parent();
    while let Some(x) = p {
        if x.kind() == "function_definition" || x.kind() == "lambda_expression" {
            return true;
        }
        p = x.parent();
    }
    false
}

fn host_fn(def: Node, src: &str) -> Option<HostFn> {
    let body = def.child_by_field_name("body")?;
    let mut decl = def.child_by_field_name("declarator")?;
    // `T *f(…)`, `T &f(…)`: the function declarator sits under pointer/reference ones.
    while decl.kind() != "function_declarator" {
        decl = decl
            .child_by_field_name("declarator")
            .or_else(|| decl.named_child(decl.named_child_count().checked_sub(1)?))?;
    }
    let name_node = decl.child_by_field_name("declarator")?;
    let name = text(name_node, src)
        .rsplit("::")
        .next()
        .unwrap_or("")
        .trim()
        .to_string();
    if name.is_empty() {
        return None;
    }
    let list = decl.child_by_field_name("parameters");
    let params_text = list.map(|pl| {
        let t = text(pl, src);
        t.strip_prefix('(')
            .and_then(|t| t.strip_suffix(')'))
            .unwrap_or(t)
            .to_string()
    });
    // `template <int W> void f(…) { … }`: the definition sits in a template declaration.
    let template = def.parent().filter(|p| p.kind() == "template_declaration");
    let template_params = template
        .and_then(|t| t.child_by_field_name("parameters"))
        .map(|tl| {
            let mut c = tl.walk();
            tl.named_children(&mut c)
                .map(|p| text(p, src).trim().to_string())
                .collect()
        })
        .unwrap_or_default();
    let head = template.unwrap_or(def);
    let decls: Vec<Node> = list
        .map(|pl| {
            let mut c = pl.walk();
            pl.named_children(&mut c)
                .filter(|p| p.kind().ends_with("parameter_declaration"))
                .filter(|p| text(*p, src).trim() != "void")
                .collect()
        })
        .unwrap_or_default();
    Some(HostFn {
        name,
        params: decls.iter().map(|p| param_name(*p, src)).collect(),
        param_decls: decls
            .iter()
            .map(|p| text(*p, src).trim().to_string())
            .collect(),
        body_lines: (
            body.start_position().row as u32 + 1,
            body.end_position().row as u32 + 1,
        ),
        head_line: head.start_position().row as u32 + 1,
        template_params,
        params_text,
        span: (head.start_byte(), def.end_byte()),
        body: (body.start_byte(), body.end_byte()),
    })
}

/// A parameter's name: the identifier under its (pointer, reference, array) declarator.
/// With none, a lone type name is the name: K&R's `f(seed)` with no declarations reads
/// as an unnamed parameter of type `seed`.
fn param_name(p: Node, src: &str) -> String {
    let mut d = match p.child_by_field_name("declarator") {
        Some(d) => d,
        None => {
            return p
                .child_by_field_name("type")
                .filter(|t| t.kind() == "type_identifier")
                .map_or(String::new(), |t| text(t, src).to_string())
        }
    };
    loop {
        if matches!(d.kind(), "identifier" | "field_identifier") {
            return text(d, src).to_string();
        }
        match d
            .child_by_field_name("declarator")
            .or_else(|| d.named_child(0))
        {
            Some(x) => d = x,
            None => return String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_only_functions_are_kernels_and_device_functions_not_host_device_ones() {
        let src = "__global__ void k(float *x) { int n = 1; }\n\
                   static __device__ __forceinline__ int d(int a) { return a; }\n\
                   __host__ __device__ int hd(int a) { return a; }\n\
                   template <int B> __global__ void t(float *x) { }\n\
                   void h() { k<<<1, 1>>>(0); }\n";
        let fns = functions(src);
        let only: Vec<(&str, bool)> = fns
            .iter()
            .map(|f| (f.name.as_str(), f.device_only(src)))
            .collect();
        assert_eq!(
            only,
            [
                ("k", true),
                ("d", true),
                ("hd", false),
                ("t", true),
                ("h", false)
            ]
        );
    }

    #[test]
    fn whole_calls_and_template_argument_lists() {
        let c = whole_call(" make<float, 4>(n * 2, f(a, b)) ").unwrap();
        assert_eq!(c.0, "make");
        assert_eq!(c.1, ["float", "4"]);
        assert_eq!(c.2, ["n * 2", "f(a, b)"]);
        assert_eq!(whole_call("alloc(n)").unwrap().1, Vec::<String>::new());
        assert!(whole_call("alloc(n) + 1").is_none());
        assert!(whole_call("(float *)alloc(n)").is_none());
        assert_eq!(
            template_arguments("<unsigned int, BLOCK * 2, Foo<int, 3>>").unwrap(),
            ["unsigned int", "BLOCK * 2", "Foo<int, 3>"]
        );
        assert_eq!(
            template_arguments("< true, false >").unwrap(),
            ["true", "false"]
        );
        assert!(template_arguments("<int").is_none());
    }

    #[test]
    fn template_instances_are_calls_and_declarations_not_launches() {
        let src = "template void fill<float>(float *p, int n);\n\
            template <> void fill<int>(int *p, int n) { }\n\
            void g() {\n\
              fill<double>(p, n); ns::fill<TILE, 4>(q, m); s.fill<char>(c);\n\
              s.template fill<long>(c);\n\
              fill<unsigned  int><<<1, 1>>>(p, n);\n\
              fill2<float>(p); fill(p); auto f = &fill<short>; x = fill < 3;\n\
            }\n";
        let got: Vec<(u32, String)> = template_instances(src, "fill")
            .into_iter()
            .map(|i| (i.line, i.args.join(",")))
            .collect();
        let want = [
            (1, "float"),
            (2, "int"),
            (4, "double"),
            (4, "TILE,4"),
            (4, "char"),
            (5, "long"),
        ];
        assert_eq!(got, want.map(|(l, a)| (l, a.to_string())));
    }

    const SRC: &str = "namespace ns {\n\
        extern \"C\" {\n\
        static float *make(float *a, const int &n, float b[], int = 3) {\n\
          return a;\n\
        }\n\
        }\n\
        }\n\
        struct S {\n\
          void run(int k) {\n\
            auto f = [](int z) { return z; };\n\
          }\n\
        };\n\
        template <int W> void Solver::step(void) {\n\
          int x = 0;\n\
        }\n\
        int main(int argc, char **argv) { return 0; }\n\
        void seeded(seed)\n\
        {\n\
        }\n\
        void\n\
        train(net, eo, eh)\n\
        BPNN *net;\n\
        float *eo, *eh;\n\
        {\n\
          int in = net->input_n;\n\
        }\n\
        { int not_a_function; }\n\
        BPNN *create(n_in, n_out)\n\
        int n_in, n_out;\n\
        {\n\
          return 0;\n\
        }\n\
        float *alloc(n)\n\
        int n;\n\
        {\n\
          float *new;\n\
        }\n\
        randomize(w, m, n)\n\
        float **w;\n\
        int m, n;\n\
        {\n\
        }\n";

    #[test]
    fn functions_give_names_parameters_and_body_lines_through_blocks() {
        let fns = functions(SRC);
        let got: Vec<(&str, Vec<&str>, (u32, u32))> = fns
            .iter()
            .map(|f| {
                (
                    f.name.as_str(),
                    f.params.iter().map(String::as_str).collect(),
                    f.body_lines,
                )
            })
            .collect();
        assert_eq!(
            got,
            vec![
                ("make", vec!["a", "n", "b", ""], (3, 5)),
                ("run", vec!["k"], (9, 11)),
                ("step", vec![], (13, 15)),
                ("main", vec!["argc", "argv"], (16, 16)),
                // K&R with no declarations: an unnamed parameter of type `seed`.
                ("seeded", vec!["seed"], (18, 19)),
                // K&R: the head, its parameter declarations, then the body.
                ("train", vec!["net", "eo", "eh"], (24, 26)),
                // K&R returning a pointer: no declaration parses, the head is in an ERROR.
                ("create", vec!["n_in", "n_out"], (30, 32)),
                // K&R read as a prototype of unnamed types, and with no return type.
                ("alloc", vec!["n"], (35, 37)),
                ("randomize", vec!["w", "m", "n"], (41, 42)),
            ]
        );
        assert_eq!(function_at(&fns, 4).map(|f| f.name.as_str()), Some("make"));
        assert_eq!(
            fns[0].param_decls,
            ["float *a", "const int &n", "float b[]", "int = 3"]
        );
        assert_eq!(&SRC[fns[0].body.0..fns[0].body.1], "{\nreturn a;\n}");
        assert_eq!(fns[5].param_decls, ["net", "eo", "eh"]);
        // The lambda's line is `run`'s.
        assert_eq!(function_at(&fns, 10).map(|f| f.name.as_str()), Some("run"));
        assert_eq!(function_at(&fns, 7), None);
    }

    #[test]
    fn calls_are_call_expressions_and_declarations_after_a_bare_macro() {
        let src = "BPNN *create(n)\nint n;\n{\n  return make(n);\n}\n\
            void f(float *d) {\n\
            cudaMalloc((void**)&d, 4);\n\
            CUDA_ERRCK\n\
            cudaMalloc((void**)&e, n * 2);\n\
            s.run(a); std::max(1, 2); k<<<1, 1>>>(d);\n\
            dim3 g(a, b);\n\
            printf(\"make(1)\");\n\
            x = f<4>(y, \\\n z);\n\
            }\n";
        let got = |name: &str| -> Vec<(u32, Vec<String>)> {
            calls_to(src, name)
                .into_iter()
                .map(|c| (c.line, c.args))
                .collect()
        };
        let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        // A K&R head is no call; a call in a string literal is none either.
        assert_eq!(got("create"), vec![]);
        assert_eq!(got("make"), vec![(4, v(&["n"]))]);
        assert_eq!(
            got("cudaMalloc"),
            vec![
                (7, v(&["(void**)&d", "4"])),
                (9, v(&["(void**)&e", "n * 2"]))
            ]
        );
        assert_eq!(got("run"), vec![(10, v(&["a"]))]);
        assert_eq!(got("max"), vec![(10, v(&["1", "2"]))]);
        // A launch is no call.
        assert_eq!(got("k"), vec![]);
        assert_eq!(got("g"), vec![(11, v(&["a", "b"]))]);
        assert_eq!(got("f"), vec![(13, v(&["y", "z"]))]);
    }

    #[test]
    fn snippet_calls_give_spans_in_the_snippet() {
        let code = "n = MIN(a, MIN(b, c)) * 2";
        let c = snippet_calls(code, "MIN");
        assert_eq!(c.len(), 2);
        assert_eq!((c[0].line, c[0].span), (1, (4, 21)));
        assert_eq!(&code[c[1].span.0..c[1].span.1], "MIN(b, c)");
        assert_eq!(c[0].args, vec!["a".to_string(), "MIN(b, c)".to_string()]);
    }
}
