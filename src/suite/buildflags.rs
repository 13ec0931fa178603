//! Compile flags from a program's own build (issue 26, item 1): the `-D` definitions and
//! the C++ standard its Makefile or CMakeLists.txt gives the compiler, so that a unit is
//! compiled as the program's build compiles it (`identifier "dfloat" is undefined` where
//! CMake passes `-Ddfloat=double`). The nearest build file at or above a kernel's folder
//! (inside the suite root) speaks for it.
//!
//! Build files are Make and CMake, not CUDA: they are read as the whitespace-separated
//! words those tools split arguments into (comments and line continuations removed); no
//! CUDA text is parsed here. Only what NVRTC accepts comes out: `-DNAME`, `-DNAME=VALUE`
//! and `--std=c++17` or later (CCCL's headers need C++17, so an older standard is left
//! at NVRTC's `--std=c++17`). `--expt-*` options have no NVRTC spelling.
//!
//! `-I` folders ([`include_dirs_for`]) go to isolation instead: they are where a program's
//! `#include <common.h>` is found (PolyBench-ACC's `-I${PATH_TO_UTILS}`, set in the
//! Makefile and used in the `common.mk` it includes), so the header's text is carried into
//! the unit like any local include. Make variables are expanded from the Makefile and the
//! files it `include`s; a word that still holds a variable is left out.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Build files, nearest first within one folder.
const BUILD_FILES: &[&str] = &["CMakeLists.txt", "Makefile", "makefile", "GNUmakefile"];

/// The build flags for a kernel file at `rel` (root-relative, `/`-separated): those of the
/// nearest folder at or above it, up to `root`, holding a build file. `memo` keeps each
/// folder's answer for the run.
pub fn flags_for(root: &Path, rel: &str, memo: &mut BTreeMap<PathBuf, Vec<String>>) -> Vec<String> {
    let mut dir = Path::new(rel).parent().map(Path::to_path_buf);
    while let Some(d) = dir {
        if let Some(f) = memo.get(&d) {
            return f.clone();
        }
        let found = BUILD_FILES.iter().find_map(|name| {
            let p = root.join(&d).join(name);
            let text = std::fs::read_to_string(&p).ok()?;
            Some(if name.starts_with("CMake") {
                from_cmake(&text)
            } else {
                from_makefile(&text)
            })
        });
        if let Some(f) = found {
            memo.insert(d, f.clone());
            return f;
        }
        dir = d.parent().map(Path::to_path_buf);
    }
    Vec::new()
}

/// The include folders (root-relative) the nearest build file at or above folder `dir`
/// names with `-I` (Make, with its variables and `include`d files) or `include_directories`
/// / `target_include_directories` (CMake): folders inside the root that exist. `memo`
/// keeps each folder's answer.
pub fn include_dirs_for(
    root: &Path,
    dir: &str,
    memo: &mut BTreeMap<PathBuf, Vec<String>>,
) -> Vec<String> {
    let mut d = Some(PathBuf::from(dir));
    while let Some(cur) = d {
        if let Some(f) = memo.get(&cur) {
            return f.clone();
        }
        // Every build file of the folder speaks: a program with both a CMakeLists.txt and a
        // Makefile may name its `-I` folders in only one of them (HeCBench's CMake passes
        // them to a function of its own, its Makefiles as `-I`).
        let mut any = false;
        let mut f: Vec<String> = Vec::new();
        for name in BUILD_FILES {
            let p = root.join(&cur).join(name);
            let Ok(text) = std::fs::read_to_string(&p) else {
                continue;
            };
            any = true;
            let words = if name.starts_with("CMake") {
                cmake_include_words(&text)
            } else {
                make_include_words(&text, &root.join(&cur))
            };
            for d in words.iter().filter_map(|w| inside(root, &cur.join(w))) {
                if !f.contains(&d) {
                    f.push(d);
                }
            }
        }
        if any {
            memo.insert(cur, f.clone());
            return f;
        }
        d = cur.parent().map(Path::to_path_buf);
    }
    Vec::new()
}

/// `rel` (relative to the root, `..` allowed) as a root-relative folder path, when it
/// stays inside the root and is a folder.
fn inside(root: &Path, rel: &Path) -> Option<String> {
    let mut parts: Vec<String> = Vec::new();
    for c in rel.components() {
        match c {
            std::path::Component::Normal(x) => parts.push(x.to_string_lossy().into_owned()),
            std::path::Component::ParentDir => {
                parts.pop()?;
            }
            std::path::Component::CurDir => {}
            _ => return None,
        }
    }
    let p = parts.join("/");
    root.join(&p).is_dir().then_some(p)
}

/// The `-I` folders of a Makefile (relative to its folder `dir`), its variables expanded
/// (`NAME := value`, `=`, `?=`, from it and the files it `include`s, outside conditionals).
fn make_include_words(text: &str, dir: &Path) -> Vec<String> {
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    let mut kept = String::new();
    let mut pending = vec![text.to_string()];
    let mut seen = 0;
    while let Some(t) = pending.pop() {
        seen += 1;
        let mut depth = 0usize;
        for l in code_lines(&t) {
            let head = l.split_whitespace().next().unwrap_or("");
            match head {
                "ifeq" | "ifneq" | "ifdef" | "ifndef" => depth += 1,
                "endif" => depth = depth.saturating_sub(1),
                _ if depth > 0 => {}
                "include" | "-include" | "sinclude" if seen < 8 => {
                    for f in l.split_whitespace().skip(1) {
                        let f = expand(f, &vars);
                        if let Ok(t) = std::fs::read_to_string(dir.join(&f)) {
                            pending.push(t);
                        }
                    }
                }
                _ => {
                    if let Some((name, value)) = assignment(&l) {
                        let v = expand(&value, &vars);
                        vars.entry(name).or_insert(v);
                    }
                    kept.push_str(&l);
                    kept.push('\n');
                }
            }
        }
    }
    let ws = words(&kept);
    let mut out = Vec::new();
    let mut i = 0;
    while i < ws.len() {
        let (arg, used) = match ws[i].strip_prefix("-I") {
            Some("") => (ws.get(i + 1).cloned(), 2),
            Some(a) => (Some(a.to_string()), 1),
            None => (None, 1),
        };
        if let Some(a) = arg.map(|a| expand(&a, &vars)).filter(|a| !a.contains('$')) {
            out.push(a);
        }
        i += used;
    }
    out
}

/// `NAME := value` (or `=`, `?=`, `::=`) as (name, value).
fn assignment(line: &str) -> Option<(String, String)> {
    let i = line.find('=')?;
    let name = line[..i].trim_end_matches([':', '?', '+']).trim();
    let ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    ok.then(|| (name.to_string(), line[i + 1..].trim().to_string()))
}

/// `${NAME}` and `$(NAME)` replaced by their values (a few rounds, for nested ones).
fn expand(s: &str, vars: &BTreeMap<String, String>) -> String {
    let mut s = s.to_string();
    for _ in 0..4 {
        if !s.contains('$') {
            break;
        }
        for (k, v) in vars {
            s = s
                .replace(&format!("${{{k}}}"), v)
                .replace(&format!("$({k})"), v);
        }
    }
    s
}

/// A CMakeLists.txt's include folders (relative to its folder): the arguments of
/// `include_directories` and `target_include_directories`, `${CMAKE_CURRENT_SOURCE_DIR}`
/// and `${PROJECT_SOURCE_DIR}` read as its own folder.
fn cmake_include_words(text: &str) -> Vec<String> {
    static COMMAND: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?i)(target_include_directories|include_directories)\s*\(([^()]*)\)")
            .expect("static regex")
    });
    let code = code_lines(text).join("\n");
    let mut out = Vec::new();
    for c in COMMAND.captures_iter(&code) {
        let target = c[1].eq_ignore_ascii_case("target_include_directories");
        for (k, a) in words(&c[2]).into_iter().enumerate() {
            if (target && k == 0)
                || matches!(
                    a.as_str(),
                    "PRIVATE" | "PUBLIC" | "INTERFACE" | "SYSTEM" | "BEFORE" | "AFTER"
                )
            {
                continue;
            }
            let a = a
                .replace("${CMAKE_CURRENT_SOURCE_DIR}/", "")
                .replace("${CMAKE_CURRENT_SOURCE_DIR}", ".")
                .replace("${CMAKE_CURRENT_LIST_DIR}/", "")
                .replace("${CMAKE_CURRENT_LIST_DIR}", ".")
                .replace("${PROJECT_SOURCE_DIR}/", "")
                .replace("${PROJECT_SOURCE_DIR}", ".");
            if !a.contains('$') {
                out.push(a);
            }
        }
    }
    out
}

/// Lines of a build file with comments (`#` to the end of a line) removed and `\` line
/// continuations joined.
fn code_lines(text: &str) -> Vec<String> {
    text.replace("\\\r\n", " ")
        .replace("\\\n", " ")
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").to_string())
        .collect()
}

/// Words of build-file text, CMake's parentheses and quotes treated as separators.
fn words(text: &str) -> Vec<String> {
    code_lines(text)
        .iter()
        .flat_map(|l| {
            l.split(|c: char| c.is_whitespace() || matches!(c, '(' | ')' | '"' | '\''))
                .filter(|w| !w.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

/// `-DNAME[=VALUE]` from `NAME[=VALUE]`, when it is a plain definition (no Make or CMake
/// variable, no generator expression).
fn definition(body: &str) -> Option<String> {
    let name = body.split('=').next()?;
    let plain = !body.contains(['$', '<', '>', '{', '}', '@'])
        && name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    plain.then(|| format!("-D{body}"))
}

/// A unit's flags: its program's `flags`, and C++20 where the unit has C99 designated
/// initializers (`{.r = 0, .g = 0}`, noted by isolation). nvcc's front end runs in GNU
/// mode and takes them under the program's own `-std=c++17`; NVRTC takes them only as
/// C++20, which is then the closest to the program's build.
pub fn for_unit(mut flags: Vec<String>, diagnostics: &[crate::record::Diagnostic]) -> Vec<String> {
    let designated = diagnostics
        .iter()
        .any(|d| d.code == crate::cuda::DESIGNATED_INITIALIZER);
    let older = |f: &String| matches!(f.as_str(), "--std=c++17" | "--std=c++14" | "--std=c++11");
    let has_std = flags.iter().any(|f| f.starts_with("--std=") && !older(f));
    if designated && !has_std {
        flags.retain(|f| !older(f));
        flags.push("--std=c++20".to_string());
    }
    flags
}

/// `--std=c++N` for N ≥ 17 from `c++N`/`gnu++N`.
fn standard(value: &str) -> Option<String> {
    let n: u32 = value
        .strip_prefix("c++")
        .or_else(|| value.strip_prefix("gnu++"))
        .unwrap_or(value)
        .parse()
        .ok()?;
    matches!(n, 17 | 20 | 23).then(|| format!("--std=c++{n}"))
}

/// The compiler flags among `words` (`-DX`, `-D X`, `-std=c++17`, `--std c++17`).
fn compiler_flags(words: &[String], out: &mut Vec<String>) {
    let mut i = 0;
    while i < words.len() {
        let w = words[i].as_str();
        let next = words.get(i + 1).map(String::as_str);
        let (flag, used) = if w == "-D" {
            (next.and_then(definition), 2)
        } else if let Some(body) = w.strip_prefix("-D") {
            (definition(body), 1)
        } else if let Some(v) = w.strip_prefix("-std=").or_else(|| w.strip_prefix("--std=")) {
            (standard(v), 1)
        } else if w == "-std" || w == "--std" {
            (next.and_then(standard), 2)
        } else {
            (None, 1)
        };
        if let Some(f) = flag {
            push(out, f);
        }
        i += used;
    }
}

/// Add `f` once; a later standard replaces an earlier one (the compiler's last wins).
fn push(out: &mut Vec<String>, f: String) {
    if f.starts_with("--std=") {
        out.retain(|o| !o.starts_with("--std="));
    }
    if !out.contains(&f) {
        out.push(f);
    }
}

/// A Makefile's flags: every `-D`/`-std` word of its variables and rules outside
/// conditionals. What `ifeq`/`ifdef` chooses (llm.c's `-DENABLE_FP32`, `-DENABLE_FP16`,
/// `-DENABLE_BF16` for one `PRECISION`) depends on variables of the command line, so no
/// branch is taken.
pub fn from_makefile(text: &str) -> Vec<String> {
    let mut depth = 0usize;
    let mut kept = String::new();
    for l in code_lines(text) {
        let head = l.split_whitespace().next().unwrap_or("");
        match head {
            "ifeq" | "ifneq" | "ifdef" | "ifndef" => depth += 1,
            "endif" => depth = depth.saturating_sub(1),
            _ if depth == 0 => {
                kept.push_str(&l);
                kept.push('\n');
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    compiler_flags(&words(&kept), &mut out);
    out
}

/// A CMakeLists.txt's flags: `-D`/`-std` words (`COMPILE_OPTIONS -Ddfloat=double`,
/// `add_definitions(-DX)`), the bare definitions of `add_compile_definitions` and
/// `target_compile_definitions`, and `CMAKE_CUDA_STANDARD`/`CMAKE_CXX_STANDARD`.
pub fn from_cmake(text: &str) -> Vec<String> {
    static COMMAND: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"([A-Za-z_][A-Za-z0-9_]*)\s*\(([^()]*)\)").expect("static regex")
    });
    let code = code_lines(text).join("\n");
    let mut out = Vec::new();
    // Commands inside `if(…)` blocks depend on options of the configure step: skipped,
    // as a Makefile's conditionals are.
    let mut depth = 0usize;
    for c in COMMAND.captures_iter(&code) {
        let cmd = c[1].to_ascii_lowercase();
        match cmd.as_str() {
            "if" => depth += 1,
            "endif" => depth = depth.saturating_sub(1),
            _ => {}
        }
        if depth > 0 || cmd == "endif" {
            continue;
        }
        let args = words(&c[2]);
        compiler_flags(&args, &mut out);
        match cmd.as_str() {
            "set" => {
                if let [var, value, ..] = args.as_slice() {
                    if matches!(var.as_str(), "CMAKE_CUDA_STANDARD" | "CMAKE_CXX_STANDARD") {
                        if let Some(f) = standard(value) {
                            push(&mut out, f);
                        }
                    }
                }
            }
            "add_compile_definitions" | "target_compile_definitions" => {
                let skip = usize::from(cmd == "target_compile_definitions");
                for a in args.iter().skip(skip) {
                    if matches!(a.as_str(), "PRIVATE" | "PUBLIC" | "INTERFACE")
                        || a.starts_with('-')
                    {
                        continue;
                    }
                    if let Some(f) = definition(a) {
                        push(&mut out, f);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PolyBench-ACC's layout: the kernel folder's Makefile sets a variable and includes a
    /// shared `common.mk` whose rule passes `-I${PATH_TO_UTILS}`; CMake names its folders
    /// directly. Folders outside the root, missing ones and unexpanded variables are left out.
    #[test]
    fn include_folders_come_from_the_build_with_its_variables() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for d in ["bench/kernels/k1", "utilities", "cm/src", "cm/inc"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(
            root.join("bench/kernels/k1/Makefile"),
            "CUFILES := k1.cu\nPATH_TO_UTILS := ../../../utilities\ninclude ${PATH_TO_UTILS}/common.mk\n",
        )
        .unwrap();
        std::fs::write(
            root.join("utilities/common.mk"),
            "all:\n\tnvcc -O3 ${CUFILES} -I${PATH_TO_UTILS} -I $(MISSING)/x -I../../../../outside -o a.exe\n",
        )
        .unwrap();
        std::fs::write(
            root.join("cm/CMakeLists.txt"),
            "add_executable(app src/main.cu)\ntarget_include_directories(app PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/inc nothere)\n",
        )
        .unwrap();
        let mut memo = BTreeMap::new();
        assert_eq!(
            include_dirs_for(root, "bench/kernels/k1", &mut memo),
            ["utilities"]
        );
        assert_eq!(include_dirs_for(root, "cm/src", &mut memo), ["cm/inc"]);
        assert!(include_dirs_for(root, "utilities", &mut memo).is_empty());
        // A program with both build files, its `-I` folders (a sibling program's) named by
        // the Makefile only: the CMake file passes them to a function of its own.
        for d in ["src/prog", "src/lib"] {
            std::fs::create_dir_all(root.join(d)).unwrap();
        }
        std::fs::write(
            root.join("src/prog/CMakeLists.txt"),
            "set(INC_DIR \"${CMAKE_CURRENT_LIST_DIR}/../lib\")\nadd_suite_benchmark(NAME prog SOURCES main.cu INCLUDE_DIRS ${INC_DIR})\n",
        )
        .unwrap();
        std::fs::write(
            root.join("src/prog/Makefile"),
            "CFLAGS := -std=c++17 -arch=$(ARCH)\\\n          -I../lib\nmain: main.cu\n\tnvcc $(CFLAGS) main.cu\n",
        )
        .unwrap();
        assert_eq!(include_dirs_for(root, "src/prog", &mut memo), ["src/lib"]);
    }

    #[test]
    fn makefile_definitions_and_standard() {
        let mk = "# -DCOMMENTED\nNVCC_FLAGS := -O3 -Ddfloat=double -D USE_TILES \\\n  -DN=$(SIZE) -std=c++14\nifeq ($(PRECISION), FP32)\n  PFLAGS = -DENABLE_FP32\nelse\n  ifdef X\n  PFLAGS = -DX\n  endif\n  PFLAGS = -DENABLE_BF16\nendif\nCXXFLAGS = -std=c++17 -DHOST_ONLY_ON=1\n%.o: %.cu\n\tnvcc $(NVCC_FLAGS) -c $<\n";
        assert_eq!(
            from_makefile(mk),
            [
                "-Ddfloat=double",
                "-DUSE_TILES",
                "--std=c++17",
                "-DHOST_ONLY_ON=1"
            ]
        );
    }

    #[test]
    fn cmake_definitions_options_and_standard() {
        let cm = "cmake_minimum_required(VERSION 3.18)\nset(CMAKE_CUDA_STANDARD 20)\nadd_executable(bench main.cu)\nset_target_properties(bench PROPERTIES COMPILE_OPTIONS \"-Ddfloat=double\")\ntarget_compile_definitions(bench PRIVATE p_Nq=8 USE_FAST $<$<CONFIG:Debug>:DBG>)\nadd_compile_definitions(BLOCK=256)\n# add_compile_definitions(OFF=1)\nif(USE_MPI)\n  add_compile_definitions(USE_MPI)\n  if(X)\n  endif()\n  add_definitions(-DMPI2)\nendif()\n";
        assert_eq!(
            from_cmake(cm),
            [
                "--std=c++20",
                "-Ddfloat=double",
                "-Dp_Nq=8",
                "-DUSE_FAST",
                "-DBLOCK=256"
            ]
        );
    }

    #[test]
    fn nearest_build_file_at_or_above_the_kernel() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join("app/src/cuda")).unwrap();
        std::fs::create_dir_all(root.join("other")).unwrap();
        std::fs::write(root.join("app/Makefile"), "NVCCFLAGS = -DREAL=float\n").unwrap();
        std::fs::write(root.join("Makefile"), "CFLAGS = -DTOP\n").unwrap();
        let mut memo = BTreeMap::new();
        assert_eq!(
            flags_for(root, "app/src/cuda/k.cu", &mut memo),
            ["-DREAL=float"]
        );
        assert_eq!(flags_for(root, "other/k.cu", &mut memo), ["-DTOP"]);
        let bare = tempfile::tempdir().unwrap();
        assert!(flags_for(bare.path(), "k.cu", &mut BTreeMap::new()).is_empty());
    }
}
