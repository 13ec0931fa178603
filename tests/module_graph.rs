//! The top-level modules of `src/` import each other without cycles, so each layer can be
//! read (and changed) knowing only the layers below it.
//!
//! The graph is read from the source text: every `crate::<module>` path (and each name in a
//! `crate::{a, b::c}` group) in `src/<module>.rs` or `src/<module>/**.rs` is an edge from that
//! file's top-level module. Not counted: comments (lines starting with `//`, so doc links
//! too), test code (files declared `#[cfg(test)] mod x;`, and the rest of a file from a
//! `#[cfg(test)] mod x {` line on: unit tests sit at the bottom of each file), `lib.rs` and
//! `main.rs` (the crate root sees every module by design), and a module's edges to itself.

use regex::Regex;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

type Graph = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// Source text without comment lines and without test code; `None` for a test-only file.
fn non_test_text(path: &Path, test_files: &BTreeSet<PathBuf>) -> Option<String> {
    if test_files.contains(path) {
        return None;
    }
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = String::new();
    let mut cfg_test = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        if t.starts_with("#[cfg(test)]") {
            cfg_test = true;
            continue;
        }
        if cfg_test && t.starts_with("#[") {
            continue;
        }
        if cfg_test && is_mod_block(t) {
            break;
        }
        cfg_test = false;
        out.push_str(line);
        out.push('\n');
    }
    Some(out)
}

fn is_mod_block(t: &str) -> bool {
    let t = t
        .trim_start_matches("pub(crate) ")
        .trim_start_matches("pub ");
    t.starts_with("mod ") && t.trim_end().ends_with('{')
}

/// Files declared as `#[cfg(test)] mod x;`: `x.rs` or `x/mod.rs` beside the declaring
/// file (or in its folder when it is a `mod.rs`).
fn test_module_files(files: &[PathBuf]) -> BTreeSet<PathBuf> {
    let decl = Regex::new(r"^\s*(?:pub(?:\(crate\))?\s+)?mod\s+([a-z_0-9]+)\s*;").unwrap();
    let mut out = BTreeSet::new();
    for f in files {
        let text = std::fs::read_to_string(f).unwrap();
        let mut cfg_test = false;
        for line in text.lines() {
            if line.trim_start().starts_with("#[cfg(test)]") {
                cfg_test = true;
                continue;
            }
            if let (true, Some(c)) = (cfg_test, decl.captures(line)) {
                let dir = if f.file_name().unwrap() == "mod.rs" || f.ends_with("lib.rs") {
                    f.parent().unwrap().to_path_buf()
                } else {
                    f.with_extension("")
                };
                out.insert(dir.join(format!("{}.rs", &c[1])));
                out.insert(dir.join(&c[1]).join("mod.rs"));
            }
            cfg_test = false;
        }
    }
    out
}

/// The module path of a file under `src/`: `harness/infer.rs` is `harness::infer`,
/// `cuda/mod.rs` is `cuda`, `lib.rs` and `main.rs` are the crate root.
fn module_path(rel: &Path) -> Vec<String> {
    let mut out: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().trim_end_matches(".rs").to_string())
        .collect();
    if matches!(out.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        out.pop();
    }
    out
}

/// Every path a text names from `crate::`, `super::` or `self::`, made absolute from the
/// file's module path `at`; a group `a::{b, c::{d}}` gives one path per leaf.
fn used_paths(text: &str, at: &[String]) -> Vec<Vec<String>> {
    static START: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"\b(crate|super|self)::").unwrap());
    let mut out = Vec::new();
    for m in START.find_iter(text) {
        // `super::super::x` and `a::self::b` are read from their first segment.
        if text[..m.start()].ends_with("::") {
            continue;
        }
        let mut rest = &text[m.start()..];
        let mut base: Vec<String> = Vec::new();
        let mut first = true;
        loop {
            if let Some(r) = rest.strip_prefix("crate::").filter(|_| first) {
                rest = r;
            } else if let Some(r) = rest.strip_prefix("self::").filter(|_| first) {
                base = at.to_vec();
                rest = r;
            } else if let Some(r) = rest.strip_prefix("super::") {
                if first {
                    base = at.to_vec();
                }
                base.pop();
                rest = r;
            } else {
                break;
            }
            first = false;
        }
        use_tree(rest, base, &mut out);
    }
    out
}

/// Reads one use tree (`a::b`, `a::{b, c::d}`) from the start of `s` under `prefix`;
/// returns what is left of `s`.
fn use_tree<'s>(mut s: &'s str, mut prefix: Vec<String>, out: &mut Vec<Vec<String>>) -> &'s str {
    static IDENT: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^\s*([A-Za-z_][A-Za-z_0-9]*)").unwrap());
    let ident = &*IDENT;
    loop {
        s = s.trim_start();
        if let Some(r) = s.strip_prefix('{') {
            s = r;
            loop {
                s = use_tree(s, prefix.clone(), out).trim_start();
                if let Some(r) = s.strip_prefix(',') {
                    s = r;
                    if let Some(r) = s.trim_start().strip_prefix('}') {
                        return r;
                    }
                } else {
                    return s.strip_prefix('}').unwrap_or(s);
                }
            }
        }
        let Some(c) = ident.captures(s) else {
            out.push(prefix);
            return s;
        };
        prefix.push(c[1].to_string());
        s = &s[c[0].len()..];
        match s.strip_prefix("::") {
            Some(r) => s = r,
            None => {
                out.push(prefix);
                return s;
            }
        }
    }
}

/// The graph of the modules directly inside `dir` (a module path; empty for the crate
/// root): module -> module it uses -> the files that use it. Every file under the folder
/// counts for the child it lies in; the folder's own root (`lib.rs`/`main.rs`, or its
/// `mod.rs`) sees every child by design and is left out, as are a module's uses of itself.
fn graph_in(src: &Path, dir: &[&str]) -> Graph {
    let files: Vec<PathBuf> = walkdir::WalkDir::new(src)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    let tests = test_module_files(&files);
    let dir: Vec<String> = dir.iter().map(|s| s.to_string()).collect();
    let inside = |p: &[String]| p.len() > dir.len() && p[..dir.len()] == dir[..];
    let children: BTreeSet<String> = files
        .iter()
        .map(|f| module_path(f.strip_prefix(src).unwrap()))
        .filter(|p| inside(p))
        .map(|p| p[dir.len()].clone())
        .collect();
    let mut g = Graph::new();
    for f in &files {
        let rel = f.strip_prefix(src).unwrap();
        let at = module_path(rel);
        if !inside(&at) {
            continue;
        }
        let Some(text) = non_test_text(f, &tests) else {
            continue;
        };
        let node = at[dir.len()].clone();
        let edges = g.entry(node.clone()).or_default();
        for p in used_paths(&text, &at) {
            if !inside(&p) || p[dir.len()] == node || !children.contains(&p[dir.len()]) {
                continue;
            }
            let where_ = rel.display().to_string();
            let v = edges.entry(p[dir.len()].clone()).or_default();
            if !v.contains(&where_) {
                v.push(where_);
            }
        }
    }
    g
}

/// module -> module it uses -> the files that use it, between the top-level modules.
fn graph(src: &Path) -> Graph {
    graph_in(src, &[])
}

/// The strongly connected parts of more than one module: each is one or more cycles.
fn cyclic_parts(g: &Graph) -> Vec<BTreeSet<String>> {
    let reach = |from: &str| -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![from.to_string()];
        while let Some(n) = todo.pop() {
            for m in g.get(&n).into_iter().flat_map(|e| e.keys()) {
                if seen.insert(m.clone()) {
                    todo.push(m.clone());
                }
            }
        }
        seen
    };
    let reaches: BTreeMap<&String, BTreeSet<String>> = g.keys().map(|n| (n, reach(n))).collect();
    let mut parts: Vec<BTreeSet<String>> = Vec::new();
    for n in g.keys() {
        if parts.iter().any(|p| p.contains(n)) {
            continue;
        }
        let part: BTreeSet<String> = reaches[n]
            .iter()
            .filter(|m| *m != n && reaches.get(m).is_some_and(|r| r.contains(n)))
            .cloned()
            .chain([n.clone()])
            .collect();
        if part.len() > 1 {
            parts.push(part);
        }
    }
    parts
}

/// Each cyclic part with the edges inside it and where they are written.
fn explain_parts(g: &Graph, parts: &[BTreeSet<String>]) -> String {
    let mut out = String::new();
    for p in parts {
        out += &format!("{}:\n", p.iter().cloned().collect::<Vec<_>>().join(" <-> "));
        for a in p {
            for (b, at) in &g[a] {
                if p.contains(b) {
                    out += &format!("  {a} -> {b}  (in {})\n", at.join(", "));
                }
            }
        }
    }
    out
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn top_level_modules_have_no_import_cycle() {
    let src = src();
    let g = graph(&src);
    // The reader must see the real modules, or the test would pass on an empty graph.
    for m in ["cuda", "harness", "verify", "pipeline", "record"] {
        assert!(
            g.contains_key(m),
            "module {m} not read from {}",
            src.display()
        );
    }
    assert!(
        g["verify"].contains_key("harness"),
        "verify's use of harness not seen"
    );
    let parts = cyclic_parts(&g);
    assert!(
        parts.is_empty(),
        "import cycles between top-level modules:\n{}",
        explain_parts(&g, &parts)
    );
}

/// Inside each module folder too (issue 28 asked for harness/, cuda/ and suite/; the others
/// have none either), each submodule can be read knowing only those below it.
#[test]
fn submodules_of_every_folder_have_no_import_cycle() {
    let src = src();
    // (folder, a use the reader must see, so that an empty graph cannot pass)
    for (dir, from, to) in [
        ("harness", "infer", "infer_host"),
        ("cuda", "isolate", "index"),
        ("suite", "pairing", "desc"),
    ] {
        let g = graph_in(&src, &[dir]);
        assert!(
            g.get(from).is_some_and(|e| e.contains_key(to)),
            "{dir}/{from}'s use of {dir}/{to} not seen: {g:?}"
        );
    }
    let mut found = String::new();
    // Every folder of modules, nested ones too (`gpu/capture`).
    let folders: Vec<Vec<String>> = walkdir::WalkDir::new(&src)
        .min_depth(1)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.is_dir())
        .map(|p| module_path(p.strip_prefix(&src).unwrap()))
        .collect();
    for m in ["cuda", "harness", "suite", "gpu/capture"] {
        assert!(
            folders.iter().any(|f| f.join("/") == m),
            "{m}/ not found in {folders:?}"
        );
    }
    for dir in &folders {
        let dir: Vec<&str> = dir.iter().map(String::as_str).collect();
        let g = graph_in(&src, &dir);
        let parts = cyclic_parts(&g);
        if !parts.is_empty() {
            found += &format!("in {}/:\n{}", dir.join("/"), explain_parts(&g, &parts));
        }
    }
    assert!(found.is_empty(), "import cycles inside modules:\n{found}");
}

/// The reader and the cycle finder, on a tree written here: a cycle through a `crate::{..}`
/// group is found; uses in comments and test code are not counted.
#[test]
fn the_graph_reader_sees_groups_and_skips_comments_and_tests() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a")).unwrap();
    std::fs::write(
        src.join("a/mod.rs"),
        "use crate::{b::X, c};\n#[cfg(test)]\nmod tests;\n",
    )
    .unwrap();
    std::fs::write(src.join("a/tests.rs"), "use crate::d::Y;\n").unwrap();
    std::fs::write(
        src.join("b.rs"),
        "//! see crate::d\npub fn f() { crate::a::g() }\n#[cfg(test)]\nmod tests {\n    use crate::d::Z;\n}\n",
    )
    .unwrap();
    std::fs::write(src.join("c.rs"), "/// crate::a\npub struct C;\n").unwrap();
    std::fs::write(src.join("d.rs"), "pub fn h() { crate::c::C; }\n").unwrap();
    let g = graph(src);
    assert_eq!(g["a"].keys().collect::<Vec<_>>(), ["b", "c"]);
    assert_eq!(g["b"].keys().collect::<Vec<_>>(), ["a"]);
    assert!(g["c"].is_empty(), "{:?}", g["c"]);
    let parts = cyclic_parts(&g);
    assert_eq!(parts, [BTreeSet::from(["a".to_string(), "b".to_string()])]);
    assert!(explain_parts(&g, &parts).contains("b -> a  (in b.rs)"));
    // Without b -> a, no cycle (d -> c is one way).
    std::fs::write(src.join("b.rs"), "pub fn f() {}\n").unwrap();
    assert!(cyclic_parts(&graph(src)).is_empty());
}

/// Inside a folder: `super::` and `self::` paths, nested and multi-line groups, and a
/// folder's `mod.rs` (which sees every child) are read as the compiler would.
#[test]
fn the_graph_reader_sees_submodules_through_super_and_nested_groups() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path();
    std::fs::create_dir_all(src.join("a/z")).unwrap();
    std::fs::write(src.join("b.rs"), "pub struct B;\n").unwrap();
    std::fs::write(
        src.join("a/mod.rs"),
        "mod x;\nmod y;\nmod z;\npub use x::F;\npub use self::y::G;\n",
    )
    .unwrap();
    std::fs::write(
        src.join("a/x.rs"),
        "use super::{\n    y::{self, G},\n    F2,\n};\npub fn f() {}\n",
    )
    .unwrap();
    std::fs::write(src.join("a/y.rs"), "pub fn g() { crate::a::z::h() }\n").unwrap();
    std::fs::write(src.join("a/z/mod.rs"), "mod w;\n").unwrap();
    std::fs::write(
        src.join("a/z/w.rs"),
        "pub fn h() { super::super::x::f(); crate::{b::B, a::{z}}; }\n",
    )
    .unwrap();
    let g = graph_in(src, &["a"]);
    // `F2` (a name a/mod.rs defines) and a/mod.rs's own uses are no edges.
    assert_eq!(g["x"].keys().collect::<Vec<_>>(), ["y"]);
    assert_eq!(g["y"].keys().collect::<Vec<_>>(), ["z"]);
    assert_eq!(g["z"].keys().collect::<Vec<_>>(), ["x"]);
    assert_eq!(g.len(), 3, "{g:?}");
    let parts = cyclic_parts(&g);
    assert_eq!(parts.len(), 1);
    assert_eq!(parts[0].len(), 3);
    // At the top, a/z/w.rs's `crate::b` counts for a.
    assert_eq!(graph(src)["a"].keys().collect::<Vec<_>>(), ["b"]);
}
