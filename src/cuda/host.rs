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
use tree_sitter::Node;

/// One function definition of a host file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFn {
    /// The unqualified name (`Solver::run` → `run`).
    pub name: String,
    /// Parameter names in order (`float *a` → `a`; an unnamed one is "").
    pub params: Vec<String>,
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
}

/// [`functions`] of a text, parsed once per process: every pair of a tree asks about the
/// same few files.
pub fn functions_cached(src: &str) -> Arc<Vec<HostFn>> {
    per_text(&FUNCTIONS, src, |s| {
        // One parse answers both questions about a file.
        let tree = super::syntax::parse(s);
        per_text(&VARIABLES, s, |s| variables_in(tree.root_node(), s));
        functions_in(tree.root_node(), s)
    })
}

static FUNCTIONS: LazyLock<TextCache<Vec<HostFn>>> = LazyLock::new(Default::default);
static VARIABLES: LazyLock<TextCache<Vec<String>>> = LazyLock::new(Default::default);

/// The variables a text declares at file level (also inside namespaces and `extern "C"`
/// blocks): `int N = 4096;`, `float *d_x;`, `extern int n;`; read with
/// [`functions_cached`]'s parse, once per process.
pub fn variables_cached(src: &str) -> Arc<Vec<String>> {
    functions_cached(src);
    per_text(&VARIABLES, src, |s| {
        variables_in(super::syntax::parse(s).root_node(), s)
    })
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
                params,
                body_lines: lines,
                head_line: d.start_position().row as u32 + 1,
                template_params: Vec::new(),
                params_text: None,
                span: (d.start_byte(), body.end_byte()),
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
    let params = list
        .map(|pl| {
            let mut c = pl.walk();
            pl.named_children(&mut c)
                .filter(|p| p.kind().ends_with("parameter_declaration"))
                .filter(|p| text(*p, src).trim() != "void")
                .map(|p| param_name(p, src))
                .collect()
        })
        .unwrap_or_default();
    Some(HostFn {
        name,
        params,
        body_lines: (
            body.start_position().row as u32 + 1,
            body.end_position().row as u32 + 1,
        ),
        head_line: head.start_position().row as u32 + 1,
        template_params,
        params_text,
        span: (head.start_byte(), def.end_byte()),
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
        // The lambda's line is `run`'s.
        assert_eq!(function_at(&fns, 10).map(|f| f.name.as_str()), Some("run"));
        assert_eq!(function_at(&fns, 7), None);
    }
}
