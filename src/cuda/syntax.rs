//! The one CUDA front end's whole-text view: a text parsed once ([`Parsed`]) with its
//! `__global__` definitions, whose names, parameters, template parameters and types follow
//! exactly the rules of the extract index (`super::index`), so a kernel read from an LLM
//! answer, a contributed file or an extracted unit is described the same way. Used by
//! synth's checks, the slowdown checks, technique detection and descriptions.
//!
//! And a kernel unit as NVRTC compiles it ([`UnitSyntax`], `#if` resolved), parsed once per
//! unit for every fact harness inference reads from kernel bodies.

pub use super::tree::visit;
use crate::record::Param;
use std::cell::RefCell;
use std::rc::Rc;
use std::sync::LazyLock;
use tree_sitter::{Node, Tree};

/// Parse CUDA source with the front end's one parser. Tree-sitter always yields a tree (errors
/// become ERROR nodes).
pub fn parse(src: &str) -> Tree {
    super::tree::parse(src).expect("no timeout or cancellation is set")
}

/// A text and its syntax tree, parsed once and shared by every check that reads it.
pub struct Parsed<'s> {
    pub src: &'s str,
    pub tree: Tree,
}

impl<'s> Parsed<'s> {
    pub fn new(src: &'s str) -> Parsed<'s> {
        Parsed {
            src,
            tree: parse(src),
        }
    }

    /// Every `__global__` kernel defined in the text, in source order.
    pub fn kernels(&self) -> Vec<KernelDef> {
        let mut out = Vec::new();
        visit(self.tree.root_node(), &mut |n| {
            if n.kind() == "function_definition" && is_global(n) {
                if let Some(k) = kernel_def(n, self.src) {
                    out.push(k);
                }
            }
        });
        out
    }

    /// The text has ERROR or MISSING nodes somewhere.
    pub fn has_error(&self) -> bool {
        self.tree.root_node().has_error()
    }
}

/// A kernel unit's text as NVRTC compiles it, and its tree. A unit is self-contained and
/// compiled with no `-D` flags, so a macro is defined exactly when the unit `#define`s it:
/// `#ifdef` branches of others are off (kmeans stores its per-block centers only under
/// `GPU_NEW_CENTER_REDUCTION`, which its unit never defines), and `#if` conditions over the
/// unit's integer macros are evaluated ([`super::ppcond::active_text`]; an unknown one keeps
/// every branch). Off lines are blanked, so lines and columns are the unit's own.
pub struct UnitSyntax {
    /// The unit's source as given (what [`unit`] recognizes it by).
    source: String,
    /// The source with off branches blanked: what `tree` was parsed from.
    pub text: String,
    pub tree: Tree,
}

impl UnitSyntax {
    pub fn new(source: &str) -> UnitSyntax {
        static DEFINE: LazyLock<regex::Regex> = LazyLock::new(|| {
            regex::Regex::new(r"(?m)^\s*#\s*define\s+([A-Za-z_]\w*)").expect("valid regex")
        });
        let defined: std::collections::BTreeSet<&str> = DEFINE
            .captures_iter(source)
            .filter_map(|c| c.get(1).map(|m| m.as_str()))
            .collect();
        let text = super::ppcond::active_text(source, &|m| defined.contains(m));
        let tree = parse(&text);
        UnitSyntax {
            source: source.to_string(),
            text,
            tree,
        }
    }
}

impl UnitSyntax {
    /// The first variable `name` the unit declares with the qualifier `qualifier`
    /// (`__constant__`, `__shared__`): its type as written, spaces single, other qualifiers
    /// and storage classes left out (`static __constant__ const float4` → `float4`), and
    /// for an array each extent's text in source order (`t[W*34][2]` → `W*34`, `2`; `""`
    /// for `[]`).
    pub fn qualified_variable(&self, qualifier: &str, name: &str) -> Option<(String, Vec<String>)> {
        let src = self.text.as_str();
        let declarations = super::queries::all_of_kind(self.tree.root_node(), "declaration");
        declarations.into_iter().find_map(|d| {
            let mut c = d.walk();
            let mut kids = d.children(&mut c);
            let qualified = kids.any(|k| k.kind() == "type_qualifier" && text(k, src) == qualifier);
            let ty = d.child_by_field_name("type").filter(|_| qualified)?;
            let ty = text(ty, src)
                .split_whitespace()
                .collect::<Vec<_>>()
                .join(" ");
            let mut c = d.walk();
            let declarators: Vec<Node> = d.children_by_field_name("declarator", &mut c).collect();
            declarators.into_iter().find_map(|mut n| {
                let mut extents = Vec::new();
                while n.kind() != "identifier" {
                    if n.kind() == "array_declarator" {
                        let size = n.child_by_field_name("size");
                        extents.push(size.map_or("", |s| text(s, src)).to_string());
                    }
                    n = n.child_by_field_name("declarator")?;
                }
                extents.reverse();
                (text(n, src) == name).then(|| (ty.clone(), extents))
            })
        })
    }
}

/// A unit's text as the compiler sees it, for reading declarations: the branches its own
/// macros turn off blanked ([`UnitSyntax`]), and the directive lines themselves too, so a
/// parameter list with `#if` branches parses as the list the kernel has. A branch the text
/// does not settle keeps both sides. Lines are kept.
pub fn as_compiled(source: &str) -> String {
    UnitSyntax::new(source)
        .text
        .split_inclusive('\n')
        .map(|l| match l.trim_start().starts_with('#') {
            true => "\n",
            false => l,
        })
        .collect()
}

/// How many parsed units each thread keeps for [`unit`]: inference asks about one pair's
/// slow and fast units (and a template instance) many times over, then moves on.
const UNITS_KEPT: usize = 8;

thread_local! {
    static UNITS: RefCell<Vec<Rc<UnitSyntax>>> = const { RefCell::new(Vec::new()) };
}

/// The parse of a kernel unit's `source` ([`UnitSyntax`]), shared: every fact read from the
/// same unit on this thread uses one parse, kept while the thread works on that unit.
pub fn unit(source: &str) -> Rc<UnitSyntax> {
    UNITS.with(|kept| {
        let mut kept = kept.borrow_mut();
        if let Some(i) = kept.iter().position(|u| u.source == source) {
            let u = kept.remove(i);
            kept.push(Rc::clone(&u));
            return u;
        }
        let u = Rc::new(UnitSyntax::new(source));
        if kept.len() >= UNITS_KEPT {
            kept.remove(0);
        }
        kept.push(Rc::clone(&u));
        u
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

/// Every `__global__` kernel defined in `src`, in source order (parses `src`; use
/// [`Parsed`] when the same text is read more than once).
pub fn kernels(src: &str) -> Vec<KernelDef> {
    Parsed::new(src).kernels()
}

fn is_global(def: Node) -> bool {
    // `__global__` is an anonymous token among the definition's modifiers.
    let mut c = def.walk();
    let any = def.children(&mut c).any(|ch| ch.kind() == "__global__");
    any
}

fn kernel_def(def: Node, src: &str) -> Option<KernelDef> {
    let decl = super::index::function_declarator(def.child_by_field_name("declarator")?)?;
    let name = text(decl.child_by_field_name("declarator")?, src).to_string();
    // A list with `#if` lines is read from its text, as the extract index reads it
    // (tree-sitter glues a directive to the parameter after it: `TESTING unsigned int *`).
    let params = decl
        .child_by_field_name("parameters")
        .map(|list| {
            let inner = text(list, src);
            match inner.lines().any(|l| l.trim_start().starts_with('#')) {
                true => super::index::params_from_text(
                    inner.trim_start_matches('(').trim_end_matches(')'),
                ),
                false => super::index::params_from_list(list, src),
            }
        })
        .unwrap_or_default();
    let mut outer = def;
    let mut template_params = Vec::new();
    if let Some(parent) = def.parent() {
        if parent.kind() == "template_declaration" {
            outer = parent;
            if let Some(tl) = parent.child_by_field_name("parameters") {
                template_params = super::index::template_params(tl, src);
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

/// A type as the index normalizes it (single spaces, `*`/`&` runs kept together).
pub fn normalize_type(t: &str) -> String {
    super::index::normalize_type(t)
}

pub fn text<'a>(n: Node, src: &'a str) -> &'a str {
    &src[n.byte_range()]
}

/// A node's text with its whitespace removed (`threadIdx . x` → `threadIdx.x`), for
/// comparing an expression with a spelling.
pub fn squashed(n: Node, src: &str) -> String {
    text(n, src).split_whitespace().collect()
}

/// A text with every run of white space one space, and none at the ends.
pub fn single_spaced(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The name of every `identifier` node under `n` (itself included), in document order.
pub fn identifiers<'a>(n: Node, src: &'a str) -> Vec<&'a str> {
    let ids = super::queries::all_of_kind(n, "identifier");
    ids.into_iter().map(|i| text(i, src)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A parameter list with an `#ifdef` block (Rodinia huffman's `vlc_encode_kernel_sm64huff`)
    /// reads as the index reads it: the directive is no part of the next parameter's type
    /// (the export lint read `TESTING unsigned int *` and refused the whole export).
    #[test]
    fn a_parameter_list_with_an_ifdef_block_keeps_its_types_clean() {
        let src = "#define TESTING\n__global__ void v(unsigned int* data,\n#ifdef TESTING\n  unsigned int* cw32,\n#endif\n  unsigned int* out) { out[0] = data[0]; }\n";
        let k = kernels(src);
        let got: Vec<(&str, &str)> = k[0]
            .params
            .iter()
            .map(|p| (p.name.as_str(), p.ty.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("data", "unsigned int *"),
                ("cw32", "unsigned int *"),
                ("out", "unsigned int *")
            ]
        );
    }

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
        // The same rules as the extract index: `float**` stays one run.
        assert_eq!(normalize_type("float * *"), "float **");
        assert_eq!(ks[0].params[0].name, "a");
        assert_eq!(ks[0].template_params, ["typename T", "int B"]);
        assert!(SRC[ks[0].range.clone()].starts_with("template"));
        assert_eq!(ks[0].line, 4);
        let tys: Vec<_> = ks[1].params.iter().map(|p| p.ty.as_str()).collect();
        assert_eq!(tys, ["float4 *", "const float []", "unsigned int"]);
        assert!(!ks[1].has_error);
        assert!(ks[2].has_error);
    }

    #[test]
    fn identifiers_and_squashed_text_read_a_subtree() {
        let src = "int f(int a) { return g(a, b . c) + a; }";
        let t = parse(src);
        let body = t
            .root_node()
            .child(0)
            .unwrap()
            .child_by_field_name("body")
            .unwrap();
        // Field names (`c`) and the callee's name are identifiers only where C says so.
        assert_eq!(identifiers(body, src), ["g", "a", "b", "a"]);
        let ret = body.named_child(0).unwrap();
        assert_eq!(squashed(ret, src), "returng(a,b.c)+a;");
    }

    #[test]
    fn qualified_variables_give_their_type_and_extents() {
        let src =
            "__constant__ float c_mask[16];\nstatic __constant__ const unsigned  int tab[N];\n\
                   __constant__ __device__ kv c[8][W * 2], d[], *p;\nfloat c_plain[4];\n\
                   __global__ void k() { __shared__ float s[32]; }\n";
        let u = unit(src);
        let q = |name: &str| u.qualified_variable("__constant__", name);
        let got = |ty: &str, ext: &[&str]| {
            Some((ty.to_string(), ext.iter().map(|e| e.to_string()).collect()))
        };
        assert_eq!(q("c_mask"), got("float", &["16"]));
        assert_eq!(q("tab"), got("unsigned int", &["N"]));
        assert_eq!(q("c"), got("kv", &["8", "W * 2"]));
        assert_eq!(q("d"), got("kv", &[""]));
        assert_eq!(q("p"), got("kv", &[]));
        assert_eq!(q("c_plain"), None);
        assert_eq!(q("other"), None);
        assert_eq!(
            u.qualified_variable("__shared__", "s"),
            got("float", &["32"])
        );
    }

    #[test]
    fn a_unit_is_parsed_once_with_its_own_macros_resolved() {
        let src = "#define WIDE\n#ifdef WIDE\n__global__ void k(float *a) { a[0] = 1; }\n#else\n__global__ void k(float *b) { b[0] = 1; }\n#endif\n#ifdef NARROW\nint n;\n#endif\n";
        let u = unit(src);
        assert!(Rc::ptr_eq(&u, &unit(src)), "the same text is parsed once");
        assert_eq!(u.text.lines().count(), src.lines().count());
        assert!(u.text.contains("float *a") && !u.text.contains("float *b"));
        assert!(
            !u.text.contains("int n"),
            "NARROW is not defined by the unit"
        );
        assert!(!u.tree.root_node().has_error());
        assert!(!Rc::ptr_eq(&u, &unit(&src.replace("WIDE", "W"))));
    }
}
