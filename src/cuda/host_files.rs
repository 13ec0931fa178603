//! The files of one program, for host-code lookups (issue 28): a launch file's neighbours
//! (the other sources of its folder) that are joined to it by includes, calls or the
//! file-level variables they share. A name then
//! resolves in files of the launch's own program, never in a tool or another program that
//! happens to sit in the same folder.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The neighbours of a launch file that belong to its program: those its kept files include
/// (or that include one of them), and those that call a function a kept file defines or
/// define a function a kept file calls, starting from the launch file and repeated until
/// nothing changes. A neighbour joined to the launch file by neither includes nor calls (a
/// sibling program, a file of another tool) is left out, so its names cannot answer for the
/// launch's. Neighbours keep their given order.
pub fn program_neighbours(path: &Path, file: &str, near: Vec<(PathBuf, String)>) -> Vec<String> {
    let facts = |p: &Path, t: &str| {
        let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
        (name, file_facts(t))
    };
    let mut kept = vec![facts(path, file)];
    let near_facts: Vec<_> = near.iter().map(|(p, t)| facts(p, t)).collect();
    let mut keep = vec![false; near.len()];
    let mut grew = true;
    while grew {
        grew = false;
        for (i, (name, n)) in near_facts.iter().enumerate() {
            let included = |(kname, k): &(Option<String>, std::sync::Arc<FileFacts>)| {
                name.as_ref().is_some_and(|x| k.includes.contains(x))
                    || kname.as_ref().is_some_and(|x| n.includes.contains(x))
            };
            let calls = |(_, k): &(Option<String>, std::sync::Arc<FileFacts>)| {
                k.defines().iter().any(|f| n.names().contains(f))
                    || n.defines().iter().any(|f| k.names().contains(f))
            };
            if !keep[i] && (kept.iter().any(included) || kept.iter().any(calls)) {
                keep[i] = true;
                grew = true;
                kept.push((name.clone(), n.clone()));
            }
        }
    }
    near.into_iter()
        .zip(keep)
        .filter_map(|((_, t), k)| k.then_some(t))
        .collect()
}

/// What [`program_neighbours`] reads of one host text: the file names it includes, and, read only
/// when asked (most neighbours join through includes), the functions it defines (not `main`)
/// and every free name it uses.
struct FileFacts {
    text: String,
    includes: BTreeSet<String>,
    defines: std::sync::OnceLock<BTreeSet<String>>,
    names: std::sync::OnceLock<BTreeSet<String>>,
}

impl FileFacts {
    fn defines(&self) -> &BTreeSet<String> {
        self.defines.get_or_init(|| {
            let mut out: BTreeSet<String> = super::host::functions_cached(&self.text)
                .iter()
                .map(|f| f.name.clone())
                .filter(|n| n != "main")
                .collect();
            out.extend(super::host::variables_cached(&self.text).iter().cloned());
            out
        })
    }

    fn names(&self) -> &BTreeSet<String> {
        use super::lex;
        self.names.get_or_init(|| {
            lex::idents(&lex::mask(&self.text))
                .into_iter()
                .filter(|i| !i.member)
                .map(|i| i.text.to_string())
                .collect()
        })
    }
}

/// [`FileFacts`] of a text, kept once per process (every pair of a folder asks about the
/// same neighbours; keyed by the text's length and hash).
fn file_facts(t: &str) -> std::sync::Arc<FileFacts> {
    use super::host::{per_text, TextCache};
    static CACHE: std::sync::LazyLock<TextCache<FileFacts>> =
        std::sync::LazyLock::new(Default::default);
    per_text(&CACHE, t, |t| FileFacts {
        text: t.to_string(),
        includes: super::index::local_includes(t)
            .iter()
            .filter_map(|i| Path::new(i).file_name())
            .map(|n| n.to_string_lossy().into_owned())
            .collect(),
        defines: Default::default(),
        names: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn neighbours_join_the_host_code_only_through_includes_or_calls() {
        let p = |n: &str| PathBuf::from(n);
        let launch = "#include \"sizes.h\"\nvoid run(float *d) { k<<<N / 256, 256>>>(d); }\n";
        let near = vec![
            (
                p("helper.c"),
                "int read_input(void) { return 3; }\n".to_string(),
            ),
            // Calls `run`: the program's main, and through it the helper it calls.
            (
                p("main.cu"),
                "int main() { int n = read_input(); run(0); }\n".to_string(),
            ),
            // Included by the launch file.
            (p("sizes.h"), "#define N 4096\n".to_string()),
            // Another tool in the same folder: no include or call joins it.
            (
                p("convert.c"),
                "#define N 7\nint convert(void) { return N; }\n".to_string(),
            ),
            // Includes the launch file.
            (p("all.cu"), "#include \"dir/launch.cu\"\n".to_string()),
        ];
        let kept = program_neighbours(&p("dir/launch.cu"), launch, near);
        // A file-level variable the launch file uses links its file in.
        let uses_global = "void run(float *d) { k<<<M / 256, 256>>>(d); }\n";
        let near2 = vec![
            (p("globals.c"), "int M = 1 << 20;\n".to_string()),
            (p("tool.c"), "int P = 3;\n".to_string()),
        ];
        let kept2 = program_neighbours(&p("dir/launch.cu"), uses_global, near2);
        assert_eq!(kept2, vec!["int M = 1 << 20;\n".to_string()]);
        assert_eq!(kept.len(), 4, "{kept:?}");
        assert!(kept.iter().all(|t| !t.contains("convert")), "{kept:?}");
        assert!(kept[0].contains("read_input"), "order kept: {kept:?}");
    }
}
