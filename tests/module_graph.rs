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

/// module -> module it uses -> the files (and first line) that use it.
fn graph(src: &Path) -> Graph {
    let files: Vec<PathBuf> = walkdir::WalkDir::new(src)
        .sort_by_file_name()
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.extension().is_some_and(|e| e == "rs"))
        .collect();
    let tests = test_module_files(&files);
    let path_re = Regex::new(r"\bcrate::([a-z_][a-z_0-9]*)").unwrap();
    let group_re = Regex::new(r"\bcrate::\{([^}]*)\}").unwrap();
    let mut g = Graph::new();
    for f in &files {
        let rel = f.strip_prefix(src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string();
        if top == "lib" || top == "main" {
            continue;
        }
        let Some(text) = non_test_text(f, &tests) else {
            continue;
        };
        let mut used: Vec<(String, usize)> = Vec::new();
        for (i, line) in text.lines().enumerate() {
            for c in path_re.captures_iter(line) {
                used.push((c[1].to_string(), i));
            }
            for c in group_re.captures_iter(line) {
                for part in c[1].split(',') {
                    let name = part.trim().split("::").next().unwrap_or("").trim();
                    if !name.is_empty() {
                        used.push((name.to_string(), i));
                    }
                }
            }
        }
        let edges = g.entry(top.clone()).or_default();
        for (m, _) in used {
            if m != top && m != "self" {
                let at = rel.display().to_string();
                let v = edges.entry(m).or_default();
                if !v.contains(&at) {
                    v.push(at);
                }
            }
        }
    }
    g
}

/// One cycle (`a -> b -> ... -> a`), if the graph has any.
fn find_cycle(g: &Graph) -> Option<Vec<String>> {
    // 0 unseen, 1 on the stack, 2 done.
    fn dfs(
        g: &Graph,
        n: &str,
        state: &mut BTreeMap<String, u8>,
        stack: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(n.to_string(), 1);
        stack.push(n.to_string());
        for m in g
            .get(n)
            .map(|e| e.keys().cloned().collect::<Vec<_>>())
            .unwrap_or_default()
        {
            match state.get(&m).copied().unwrap_or(0) {
                1 => {
                    let from = stack.iter().position(|s| *s == m).unwrap();
                    let mut c = stack[from..].to_vec();
                    c.push(m);
                    return Some(c);
                }
                0 => {
                    if let Some(c) = dfs(g, &m, state, stack) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        stack.pop();
        state.insert(n.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for n in g.keys() {
        if state.get(n).copied().unwrap_or(0) == 0 {
            if let Some(c) = dfs(g, n, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

fn explain(g: &Graph, cycle: &[String]) -> String {
    cycle
        .windows(2)
        .map(|w| {
            format!(
                "  {} -> {}  (in {})",
                w[0],
                w[1],
                g[&w[0]][&w[1]].join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn top_level_modules_have_no_import_cycle() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
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
    if let Some(c) = find_cycle(&g) {
        panic!(
            "import cycle between top-level modules: {}\n{}",
            c.join(" -> "),
            explain(&g, &c)
        );
    }
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
    assert_eq!(find_cycle(&g).unwrap(), ["a", "b", "a"]);
    // Without b -> a, no cycle (d -> c is one way).
    std::fs::write(src.join("b.rs"), "pub fn f() {}\n").unwrap();
    assert_eq!(find_cycle(&graph(src)), None);
}
