//! The tree-sitter-cuda view synth's checks need beyond `crate::cuda`'s index: where a
//! kernel's definition lies in an answer, whether it has ERROR nodes, and a node walk.

use crate::record::Param;
use std::cell::RefCell;
use tree_sitter::{Node, Parser, Tree};

thread_local! {
    static PARSER: RefCell<Parser> = RefCell::new({
        let mut p = Parser::new();
        p.set_language(&tree_sitter_cuda::LANGUAGE.into())
            .expect("tree-sitter-cuda matches the tree-sitter version");
        p
    });
}

/// Parse CUDA source. Tree-sitter always yields a tree (errors become ERROR nodes).
pub fn parse(src: &str) -> Tree {
    PARSER.with(|p| {
        p.borrow_mut()
            .parse(src, None)
            .expect("no timeout or cancellation is set")
    })
}

/// One `__global__` function definition found in a source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelDef {
    pub name: String,
    /// 1-based line of the definition.
    pub line: u32,
    pub params: Vec<Param>,
    pub template_params: Vec<String>,
    /// The definition contains ERROR or MISSING nodes.
    pub has_error: bool,
    /// Byte range of the whole definition (including its `template<…>` header).
    pub range: std::ops::Range<usize>,
}

/// Every `__global__` kernel defined in `src`, in source order.
pub fn kernels(src: &str) -> Vec<KernelDef> {
    let tree = parse(src);
    let mut out = Vec::new();
    visit(tree.root_node(), &mut |n| {
        if n.kind() == "function_definition" && is_global(n) {
            if let Some(k) = kernel_def(n, src) {
                out.push(k);
            }
        }
    });
    out
}

fn is_global(def: Node) -> bool {
    // `__global__` is an anonymous token among the definition's modifiers.
    let mut c = def.walk();
    let any = def.children(&mut c).any(|ch| ch.kind() == "__global__");
    any
}

fn kernel_def(def: Node, src: &str) -> Option<KernelDef> {
    let decl = find_function_declarator(def.child_by_field_name("declarator")?)?;
    let name = text(decl.child_by_field_name("declarator")?, src).to_string();
    let mut params = Vec::new();
    if let Some(list) = decl.child_by_field_name("parameters") {
        let mut c = list.walk();
        for p in list.named_children(&mut c) {
            if p.kind() != "parameter_declaration" && p.kind() != "optional_parameter_declaration" {
                continue;
            }
            params.push(param(p, src));
        }
    }
    let mut outer = def;
    let mut template_params = Vec::new();
    if let Some(parent) = def.parent() {
        if parent.kind() == "template_declaration" {
            outer = parent;
            if let Some(tl) = parent.child_by_field_name("parameters") {
                let mut c = tl.walk();
                template_params = tl
                    .named_children(&mut c)
                    .map(|t| squash(text(t, src)))
                    .collect();
            }
        }
    }
    Some(KernelDef {
        name,
        line: def.start_position().row as u32 + 1,
        params,
        template_params,
        has_error: def.has_error(),
        range: outer.byte_range(),
    })
}

fn find_function_declarator(mut n: Node) -> Option<Node> {
    loop {
        if n.kind() == "function_declarator" {
            return Some(n);
        }
        n = n.child_by_field_name("declarator")?;
    }
}

/// A parameter's name and its type as written, normalized (`const float * __restrict__`).
fn param(p: Node, src: &str) -> Param {
    let full = text(p, src);
    let mut name = String::new();
    let mut d = p.child_by_field_name("declarator");
    while let Some(n) = d {
        if n.kind() == "identifier" {
            name = text(n, src).to_string();
            break;
        }
        d = n.child_by_field_name("declarator");
    }
    let ty = if name.is_empty() {
        full.to_string()
    } else {
        match full.rfind(name.as_str()) {
            Some(i) => format!("{}{}", &full[..i], &full[i + name.len()..]),
            None => full.to_string(),
        }
    };
    Param {
        name,
        ty: normalize_type(&ty),
    }
}

/// Single spaces, `*`/`&`/`[]` set apart: `const float*a` and `const float * a` agree.
pub fn normalize_type(t: &str) -> String {
    let spaced = t
        .replace('*', " * ")
        .replace('&', " & ")
        .replace('[', " [")
        .replace(']', "] ");
    squash(&spaced)
}

fn squash(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

pub fn text<'a>(n: Node, src: &'a str) -> &'a str {
    &src[n.byte_range()]
}

/// Pre-order walk over every node (named and anonymous).
pub fn visit<'t>(root: Node<'t>, f: &mut impl FnMut(Node<'t>)) {
    let mut c = root.walk();
    loop {
        f(c.node());
        if c.goto_first_child() {
            continue;
        }
        loop {
            if c.goto_next_sibling() {
                break;
            }
            if !c.goto_parent() {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SRC: &str = r#"
#define N 16
template <typename T, int B>
__global__ void tk(const T* __restrict__ a, T *b, int n) { b[0] = a[0]; }
extern "C" __global__ void __launch_bounds__(256) k(float4* x, const float a[], unsigned int n) { x[0].x = a[0]; }
__device__ float helper(float v) { return v; }
__global__ void bad(float* x) { x[0] = ; }
"#;

    #[test]
    fn finds_kernels_with_params_templates_and_errors() {
        let ks = kernels(SRC);
        let names: Vec<_> = ks.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["tk", "k", "bad"]);
        let tys: Vec<_> = ks[0].params.iter().map(|p| p.ty.as_str()).collect();
        assert_eq!(tys, ["const T * __restrict__", "T *", "int"]);
        assert_eq!(ks[0].params[0].name, "a");
        assert_eq!(ks[0].template_params, ["typename T", "int B"]);
        assert!(SRC[ks[0].range.clone()].starts_with("template"));
        assert_eq!(ks[0].line, 4);
        let tys: Vec<_> = ks[1].params.iter().map(|p| p.ty.as_str()).collect();
        assert_eq!(tys, ["float4 *", "const float []", "unsigned int"]);
        assert!(!ks[1].has_error);
        assert!(ks[2].has_error);
    }
}
