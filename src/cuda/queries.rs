//! What the front end looks for in a tree-sitter tree, as hand-written walks.
//!
//! The patterns are specified by the query files in `queries/*.scm`, and a test checks
//! that every walk here finds exactly what its query finds. The queries are not compiled
//! at run time: `Query::new` analyses a query against the whole grammar, which cost about
//! 70 ms per process for these four (three quarters of `extract`'s start-up on a small
//! tree), while the walks cost nothing to set up. Walks are iterative (a `TreeCursor`),
//! so nesting depth costs no stack.

use tree_sitter::Node;

/// Every node under `root` (itself included), named or not, in document (pre-)order
/// (the front end's one walk, `syntax::visit`).
fn preorder<'t>(root: Node<'t>, mut visit: impl FnMut(Node<'t>)) {
    super::tree::visit(root, &mut visit)
}

/// The named children of `n` under field `field` (a query's `field: (_)`).
fn named_field<'t>(n: Node<'t>, field: &str) -> Vec<Node<'t>> {
    let mut c = n.walk();
    n.children_by_field_name(field, &mut c)
        .filter(|k| k.is_named())
        .collect()
}

/// The children of `n` (any field or none) of one kind (a query's `(kind)` child).
fn children_of_kind<'t>(n: Node<'t>, kinds: &[&str]) -> Vec<Node<'t>> {
    let mut c = n.walk();
    n.children(&mut c)
        .filter(|k| kinds.contains(&k.kind()))
        .collect()
}

/// What a declarator capture introduces (`queries/declarators.scm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Declared {
    /// Parameters, locals, loop variables, template parameters, labels, captures.
    Local,
    /// Struct fields and members.
    Field,
    /// Enumerators (names the chunk defines for the rest of the scope).
    Enumerator,
}

/// Names a chunk declares for itself (`queries/declarators.scm`): each node whose
/// declarator chain names something, with what it is. Order: document order of the
/// pattern's parent node; within one node, the query's pattern order.
pub(crate) fn declarators(root: Node) -> Vec<(Node, Declared)> {
    let mut out = Vec::new();
    preorder(root, |n| match n.kind() {
        "parameter_declaration"
        | "optional_parameter_declaration"
        | "variadic_parameter_declaration"
        | "declaration"
        | "for_range_loop" => {
            out.extend(
                named_field(n, "declarator")
                    .into_iter()
                    .map(|d| (d, Declared::Local)),
            );
        }
        "type_parameter_declaration" | "variadic_type_parameter_declaration" => {
            out.extend(
                children_of_kind(n, &["type_identifier"])
                    .into_iter()
                    .map(|d| (d, Declared::Local)),
            );
        }
        "optional_type_parameter_declaration" => {
            out.extend(
                named_field(n, "name")
                    .into_iter()
                    .filter(|d| d.kind() == "type_identifier")
                    .map(|d| (d, Declared::Local)),
            );
        }
        "labeled_statement" => {
            out.extend(
                named_field(n, "label")
                    .into_iter()
                    .filter(|d| d.kind() == "statement_identifier")
                    .map(|d| (d, Declared::Local)),
            );
        }
        "lambda_capture_specifier" => {
            out.extend(
                children_of_kind(n, &["identifier"])
                    .into_iter()
                    .map(|d| (d, Declared::Local)),
            );
        }
        "field_declaration" => {
            out.extend(
                named_field(n, "declarator")
                    .into_iter()
                    .map(|d| (d, Declared::Field)),
            );
        }
        "enumerator" => {
            out.extend(
                named_field(n, "name")
                    .into_iter()
                    .filter(|d| d.kind() == "identifier")
                    .map(|d| (d, Declared::Enumerator)),
            );
        }
        "field_declaration_list" => members(n, &mut out),
        _ => {}
    });
    out
}

/// Members of a class or struct body: methods (defined or declared) and nested types.
fn members<'t>(list: Node<'t>, out: &mut Vec<(Node<'t>, Declared)>) {
    const RECORDS: [&str; 3] = ["struct_specifier", "class_specifier", "union_specifier"];
    let mut field = |d: Node<'t>| out.push((d, Declared::Field));
    let mut c = list.walk();
    for m in list.children(&mut c) {
        match m.kind() {
            "function_definition" | "declaration" => named_field(m, "declarator")
                .into_iter()
                .for_each(&mut field),
            "template_declaration" => {
                let mut c2 = m.walk();
                for k in m.children(&mut c2) {
                    match k.kind() {
                        "function_definition" | "declaration" => named_field(k, "declarator")
                            .into_iter()
                            .for_each(&mut field),
                        kind if RECORDS.contains(&kind) => field(k),
                        _ => {}
                    }
                }
            }
            "field_declaration" => {
                let mut c2 = m.walk();
                m.children_by_field_name("type", &mut c2)
                    .filter(|t| RECORDS.contains(&t.kind()) || t.kind() == "enum_specifier")
                    .for_each(&mut field);
            }
            "type_definition" => named_field(m, "declarator")
                .into_iter()
                .for_each(&mut field),
            "alias_declaration" => named_field(m, "name").into_iter().for_each(&mut field),
            _ => {}
        }
    }
}

/// A function definition at the top of a chunk (`queries/functions.scm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TopFunction<'t> {
    pub function: Node<'t>,
    /// The declarator chain (the name is at its end).
    pub declarator: Node<'t>,
    pub body: Node<'t>,
    /// The `template <…>` parameter list, for a function template.
    pub template_params: Option<Node<'t>>,
}

/// Function definitions that are direct children of the chunk's root, with or without a
/// template header, in document order.
pub(crate) fn top_functions(root: Node) -> Vec<TopFunction> {
    let mut out = Vec::new();
    if root.kind() != "translation_unit" {
        return out;
    }
    fn definition<'t>(f: Node<'t>, template_params: Option<Node<'t>>) -> Option<TopFunction<'t>> {
        let declarator = named_field(f, "declarator").into_iter().next()?;
        let body = named_field(f, "body").into_iter().find(|b| {
            b.kind() == "compound_statement" && b.start_byte() >= declarator.end_byte()
        })?;
        Some(TopFunction {
            function: f,
            declarator,
            body,
            template_params,
        })
    }
    let mut c = root.walk();
    for n in root.children(&mut c) {
        match n.kind() {
            "function_definition" => out.extend(definition(n, None)),
            "template_declaration" => {
                let Some(params) = named_field(n, "parameters")
                    .into_iter()
                    .find(|p| p.kind() == "template_parameter_list")
                else {
                    continue;
                };
                for f in children_of_kind(n, &["function_definition"]) {
                    if f.start_byte() >= params.end_byte() {
                        out.extend(definition(f, Some(params)));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// A host launch site `kernel<<<grid, block, smem, stream>>>(args)` (`queries/launches.scm`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Launch<'t> {
    /// The whole call.
    pub launch: Node<'t>,
    /// The kernel's name: an identifier, or a qualified one (`ns::k`).
    pub kernel: Node<'t>,
    /// `<T, 4>` of `kernel<T, 4><<<…>>>`.
    pub template_args: Option<Node<'t>>,
    /// The `<<<…>>>` part.
    pub config: Node<'t>,
    pub args: Node<'t>,
}

/// Every launch site under `root`, in document order of the call.
pub(crate) fn launches(root: Node) -> Vec<Launch> {
    let mut out = Vec::new();
    preorder(root, |n| {
        if n.kind() != "call_expression" {
            return;
        }
        for f in named_field(n, "function") {
            let (kernel, template_args) = match f.kind() {
                "identifier" | "qualified_identifier" => (f, None),
                "template_function" => {
                    let name = named_field(f, "name")
                        .into_iter()
                        .find(|k| k.kind() == "identifier");
                    let args = named_field(f, "arguments")
                        .into_iter()
                        .find(|k| k.kind() == "template_argument_list");
                    match (name, args) {
                        (Some(name), Some(args)) => (name, Some(args)),
                        _ => continue,
                    }
                }
                _ => continue,
            };
            let Some(config) = children_of_kind(n, &["kernel_call_syntax"])
                .into_iter()
                .find(|k| k.start_byte() >= f.end_byte())
            else {
                continue;
            };
            let Some(args) = named_field(n, "arguments")
                .into_iter()
                .find(|a| a.kind() == "argument_list" && a.start_byte() >= config.end_byte())
            else {
                continue;
            };
            out.push(Launch {
                launch: n,
                kernel,
                template_args,
                config,
                args,
            });
        }
    });
    out
}

/// The first node of `kind` under `root`, in document order.
pub(crate) fn first_of_kind<'t>(root: Node<'t>, kind: &str) -> Option<Node<'t>> {
    let mut found = None;
    preorder(root, |n| {
        if found.is_none() && n.kind() == kind {
            found = Some(n);
        }
    });
    found
}

/// Every node of `kind` under `root`, in document order.
pub(crate) fn all_of_kind<'t>(root: Node<'t>, kind: &str) -> Vec<Node<'t>> {
    let mut out = Vec::new();
    preorder(root, |n| {
        if n.kind() == kind {
            out.push(n);
        }
    });
    out
}

/// C99 compound literals `(T){…}` (and C++ `T{…}` read the same way), which nvcc accepts
/// and NVRTC rejects (`queries/portability.scm`), in document order.
pub(crate) fn compound_literals(root: Node) -> Vec<Node> {
    all_of_kind(root, "compound_literal_expression")
}

#[cfg(test)]
mod tests {
    //! The query files are the specification: each walk must capture exactly the nodes
    //! its query captures, on every fixture and on damaged copies of them.
    use super::*;
    use std::collections::BTreeSet;
    use tree_sitter::{Query, QueryCursor, StreamingIterator};

    fn query(name: &str) -> Query {
        let path = format!("{}/src/cuda/queries/{name}.scm", env!("CARGO_MANIFEST_DIR"));
        let src = std::fs::read_to_string(&path).unwrap();
        Query::new(&tree_sitter_cuda::LANGUAGE.into(), &src)
            .unwrap_or_else(|e| panic!("query {name} does not compile: {e}"))
    }

    /// One capture: its name, the node's byte range and kind.
    type Cap = (String, (usize, usize), String);

    /// Each match of `q` on `root` as a sorted list of captures.
    fn matches(q: &Query, root: Node, src: &str) -> Vec<Vec<Cap>> {
        let mut cur = QueryCursor::new();
        let mut it = cur.matches(q, root, src.as_bytes());
        let mut out = Vec::new();
        while let Some(m) = it.next() {
            let mut caps: Vec<_> = m
                .captures
                .iter()
                .map(|c| {
                    (
                        q.capture_names()[c.index as usize].to_string(),
                        (c.node.start_byte(), c.node.end_byte()),
                        c.node.kind().to_string(),
                    )
                })
                .collect();
            caps.sort();
            out.push(caps);
        }
        out
    }

    fn key(n: Node) -> ((usize, usize), String) {
        ((n.start_byte(), n.end_byte()), n.kind().to_string())
    }

    struct Queries {
        declarators: Query,
        functions: Query,
        launches: Query,
        portability: Query,
    }

    fn queries() -> Queries {
        Queries {
            declarators: query("declarators"),
            functions: query("functions"),
            launches: query("launches"),
            portability: query("portability"),
        }
    }

    /// Compare every walk with its query on one source; returns how many captures agreed.
    fn agree(q: &Queries, src: &str, what: &str) -> usize {
        let Some(tree) = crate::cuda::tree::parse(src) else {
            return 0;
        };
        let root = tree.root_node();
        let mut n = 0;

        // Declarators: the set of (node, capture) pairs; enumerators also in order.
        let want: BTreeSet<Cap> = matches(&q.declarators, root, src)
            .into_iter()
            .flatten()
            .map(|(c, r, k)| (if c == "enumerator" { c } else { "local".into() }, r, k))
            .collect();
        let got_list = declarators(root);
        let got: BTreeSet<Cap> = got_list
            .iter()
            .map(|&(d, what)| {
                let (r, k) = key(d);
                let c = if what == Declared::Enumerator {
                    "enumerator"
                } else {
                    "local"
                };
                (c.to_string(), r, k)
            })
            .collect();
        assert_eq!(got, want, "declarators differ on {what}");
        let enum_want: Vec<(usize, usize)> = matches(&q.declarators, root, src)
            .into_iter()
            .flatten()
            .filter(|c| c.0 == "enumerator")
            .map(|c| c.1)
            .collect();
        let enum_got: Vec<(usize, usize)> = got_list
            .iter()
            .filter(|d| d.1 == Declared::Enumerator)
            .map(|d| key(d.0).0)
            .collect();
        assert_eq!(enum_got, enum_want, "enumerator order differs on {what}");
        n += want.len();

        // Functions: the matches in order (the first usable one wins).
        let want = matches(&q.functions, root, src);
        let got: Vec<_> = top_functions(root)
            .into_iter()
            .map(|f| {
                let mut v = vec![
                    ("body".to_string(), key(f.body).0, key(f.body).1),
                    (
                        "declarator".to_string(),
                        key(f.declarator).0,
                        key(f.declarator).1,
                    ),
                    ("function".to_string(), key(f.function).0, key(f.function).1),
                ];
                if let Some(t) = f.template_params {
                    v.push(("template_params".to_string(), key(t).0, key(t).1));
                }
                v.sort();
                v
            })
            .collect();
        assert_eq!(got, want, "functions differ on {what}");
        n += want.len();

        // Launches: the set of matches (extraction sorts sites by offset).
        let want: BTreeSet<_> = matches(&q.launches, root, src).into_iter().collect();
        let got: BTreeSet<_> = launches(root)
            .into_iter()
            .map(|l| {
                let mut v = vec![
                    ("args".to_string(), key(l.args).0, key(l.args).1),
                    ("config".to_string(), key(l.config).0, key(l.config).1),
                    ("kernel".to_string(), key(l.kernel).0, key(l.kernel).1),
                    ("launch".to_string(), key(l.launch).0, key(l.launch).1),
                ];
                if let Some(t) = l.template_args {
                    v.push(("template_args".to_string(), key(t).0, key(t).1));
                }
                v.sort();
                v
            })
            .collect();
        assert_eq!(got, want, "launches differ on {what}");
        n += want.len();

        // Compound literals, in order.
        let want: Vec<_> = matches(&q.portability, root, src)
            .into_iter()
            .flatten()
            .map(|c| c.1)
            .collect();
        let got: Vec<_> = compound_literals(root)
            .into_iter()
            .map(|c| key(c).0)
            .collect();
        assert_eq!(got, want, "compound literals differ on {what}");
        n + want.len()
    }

    fn sources_under(dir: &std::path::Path, out: &mut Vec<(String, String)>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                sources_under(&p, out);
            } else if p.extension().is_some_and(|e| {
                ["cu", "cuh", "h", "hpp", "c", "cpp", "inl"].contains(&e.to_str().unwrap_or(""))
            }) {
                if let Ok(text) = std::fs::read_to_string(&p) {
                    out.push((p.display().to_string(), text));
                }
            }
        }
    }

    /// Hand-written sources that exercise every pattern of every query.
    const PATTERNS: &str = r#"
template <typename T, int N = 4, typename... Rest, class U = float, template <typename> class W>
__global__ void k(T *a, int n = 3, ...) {
    int i = 0, *p = &i, q[4];
    for (auto &x : a) { x += 1; }
    auto [m, o] = pair();
    auto f = [i, &n, z = 2](int y) { return y; };
    try { g(); } catch (const E &e) { } catch (...) { }
  again:
    if (i) goto again;
    float3 v = (float3){1, 2, 3};
    struct P w = (struct P){.x = 1};
    k2<<<grid, block, 0, stream>>>(a, n);
    k3<float, 4><<<g, b>>>(a);
    ns::k4<<<1, 1>>>(/* none */);
    ::k5<<<1, 1, smem>>>(x, y);
}
enum Color { RED, GREEN = 2, BLUE };
enum class Scoped : int { A, B };
struct S {
    int a, *b;
    float c[3];
    void m() const { }
    int decl(int x);
    template <typename V> V tm(V v) { return v; }
    template <typename V> V td(V v);
    struct Inner { int z; } in;
    union { int u; float f; };
    enum E2 { E2A } e2;
    template <typename V> struct TInner { V v; };
    typedef int myint;
    using alias = float;
    S() : a(0) { }
    operator float() const { return 0; }
};
__device__ float3 operator+(float3 a, float3 b) { return make_float3(a.x + b.x, 0, 0); }
int (*fp(int))(int) { return 0; }
template <> __global__ void k<float>(float *a) { }
void host() { k<<<1, 1>>>(nullptr); }
"#;

    #[test]
    fn walks_find_what_the_queries_find_on_every_fixture() {
        let q = queries();
        let mut sources = vec![("patterns".to_string(), PATTERNS.to_string())];
        sources_under(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
            &mut sources,
        );
        assert!(sources.len() > 20, "fixtures not found: {}", sources.len());
        // Real trees on this machine (never committed), e.g.
        // KERNELPAIR_QUERY_TREES=/work/trees/Parboil:/work/trees/llm.c
        if let Some(trees) = std::env::var_os("KERNELPAIR_QUERY_TREES") {
            for t in std::env::split_paths(&trees) {
                let before = sources.len();
                sources_under(&t, &mut sources);
                eprintln!("{}: {} files", t.display(), sources.len() - before);
            }
        }
        let mut captured = 0;
        for (name, text) in &sources {
            captured += agree(&q, text, name);
            // Each top-level chunk alone, as the indexer parses it.
            let masked = crate::cuda::lex::mask(text);
            for piece in crate::cuda::lex::split_top_level(&masked, text) {
                let chunk = &text[piece.start..piece.end];
                captured += agree(&q, chunk, &format!("{name} @{}", piece.start));
            }
        }
        // The pattern source alone exercises every capture kind.
        assert!(agree(&q, PATTERNS, "patterns") > 40);
        assert!(captured > 1000, "only {captured} captures compared");
    }

    /// Damaged code (truncated, braces deleted, stray `#if`, random bytes) produces ERROR
    /// and MISSING nodes: the walks must still agree with the queries there.
    #[test]
    fn walks_find_what_the_queries_find_on_damaged_code() {
        let q = queries();
        let mut sources = vec![("patterns".to_string(), PATTERNS.to_string())];
        sources_under(
            &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures"),
            &mut sources,
        );
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = move |n: usize| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed % n.max(1) as u64) as usize
        };
        let mut tried = 0;
        for (name, text) in sources.iter().take(40) {
            for round in 0..12 {
                let mut b: Vec<u8> = text.as_bytes().to_vec();
                for _ in 0..1 + round % 4 {
                    if b.is_empty() {
                        break;
                    }
                    let at = rnd(b.len());
                    match rnd(5) {
                        0 => b.truncate(at),
                        1 => {
                            if let Some(p) = b.iter().skip(at).position(|&c| c == b'{' || c == b'}')
                            {
                                b.remove(at + p);
                            }
                        }
                        2 => b
                            .splice(at..at, b"\n#if X\n".iter().copied())
                            .for_each(drop),
                        3 => b[at] = b"(){};<>,*&"[rnd(10)],
                        _ => {
                            let end = (at + rnd(40)).min(b.len());
                            b.drain(at..end);
                        }
                    }
                }
                let text = String::from_utf8_lossy(&b).into_owned();
                agree(&q, &text, &format!("{name} (damaged, round {round})"));
                tried += 1;
            }
        }
        assert!(tried >= 200, "{tried}");
    }
}
