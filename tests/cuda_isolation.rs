//! Isolation of the fixture suites: a snapshot of every unit (insta), a compile check
//! of every unit where NVRTC is installed, and the `inspect` command end to end.

use assert_cmd::Command;
use kernelpair::cuda::{index_file, isolate_at, FileIndex, Scope};
use kernelpair::gpu::nvrtc;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

const EXTS: &[&str] = &["cu", "cuh", "h"];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Variant folders: `parboil/benchmarks/*/src/cuda*`, `rodinia/cuda/*`, `generic/*`.
fn variants() -> Vec<PathBuf> {
    let root = fixtures();
    let mut out = Vec::new();
    let dirs = |p: PathBuf| -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(p)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.path())
                    .filter(|p| p.is_dir())
                    .collect()
            })
            .unwrap_or_default();
        v.sort();
        v
    };
    for b in dirs(root.join("parboil/benchmarks")) {
        for v in dirs(b.join("src")) {
            if v.file_name().unwrap().to_string_lossy().starts_with("cuda") {
                out.push(v);
            }
        }
    }
    out.extend(dirs(root.join("rodinia/cuda")));
    out.push(root.join("generic"));
    out
}

fn scope_files(variant: &Path) -> BTreeMap<String, FileIndex> {
    let root = fixtures();
    let mut out = BTreeMap::new();
    let mut stack = vec![variant.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| EXTS.contains(&e))
            {
                let rel = p
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                let text = std::fs::read_to_string(&p).unwrap();
                out.insert(rel.clone(), index_file(&rel, &text));
            }
        }
    }
    out
}

fn render(files: &BTreeMap<String, FileIndex>) -> String {
    let scope = Scope::new(files);
    let mut out = String::new();
    for (path, fi) in files {
        for (i, k) in fi.kernels().iter().enumerate() {
            let u = isolate_at(&scope, path, i).unwrap();
            writeln!(
                out,
                "=== {path}:{} {} (symbol {})",
                k.line, u.kernel, u.symbol
            )
            .unwrap();
            let params: Vec<String> = u
                .params
                .iter()
                .map(|p| format!("{}: {}", p.name, p.ty))
                .collect();
            writeln!(out, "params: {}", params.join(", ")).unwrap();
            if !u.template_params.is_empty() {
                writeln!(out, "template: {}", u.template_params.join(", ")).unwrap();
            }
            writeln!(out, "pulled: {:?}", u.pulled).unwrap();
            writeln!(out, "features: {:?}", u.features).unwrap();
            for d in &u.diagnostics {
                writeln!(out, "diagnostic: {} {:?} {}", d.code, d.line, d.message).unwrap();
            }
            writeln!(out, "--- source\n{}", u.source).unwrap();
        }
        for l in fi.launch_sites() {
            writeln!(out, "=== launch {}:{} {:?}", l.path, l.line, l).unwrap();
        }
    }
    out
}

#[test]
fn fixture_units_snapshot() {
    let vs = variants();
    assert!(vs.len() >= 10, "fixtures missing: {vs:?}");
    for v in vs {
        let files = scope_files(&v);
        let name = v
            .strip_prefix(fixtures())
            .unwrap()
            .to_string_lossy()
            .replace(['/', '\\'], "__");
        insta::assert_snapshot!(format!("isolate__{name}"), render(&files));
    }
}

/// Every fixture unit compiles alone, except those whose diagnostics say why not.
#[test]
fn fixture_units_compile_with_nvrtc() {
    if nvrtc::load().is_err() {
        assert!(
            std::env::var_os("KERNELPAIR_REQUIRE_NVRTC").is_none(),
            "NVRTC required but not found"
        );
        eprintln!("NVRTC not installed: compile check skipped");
        return;
    }
    let mut checked = 0;
    for v in variants() {
        let files = scope_files(&v);
        let scope = Scope::new(&files);
        for (path, fi) in &files {
            for (i, k) in fi.kernels().iter().enumerate() {
                let u = isolate_at(&scope, path, i).unwrap();
                // A kernel is found by its symbol as an NVRTC name expression (issue 26:
                // no `extern "C"` is added). Template kernels compile without an
                // instantiation; the verify stage adds `<…>` to their symbol.
                let expr: Vec<String> = if k.template_params.is_empty() {
                    vec![u.symbol.clone()]
                } else {
                    Vec::new()
                };
                let c = nvrtc::compile(&nvrtc::CompileRequest {
                    source: &u.source,
                    name: "unit.cu",
                    arch: "sm_90",
                    name_expressions: &expr,
                    cubin: false,
                    extra_options: &[],
                })
                .unwrap();
                let explained = u.diagnostics.iter().any(|d| {
                    matches!(
                        d.code.as_str(),
                        "legacy_texture_reference" | "c_compound_literal" | "unresolved_identifier"
                    )
                });
                assert!(
                    c.ok || explained,
                    "{path}::{} does not compile and nothing says why:\n{}\n{}",
                    k.name,
                    u.source,
                    c.log
                );
                if c.ok && k.template_params.is_empty() {
                    let ptx = c.ptx.unwrap();
                    assert_eq!(c.lowered.len(), 1, "{path}: {} not lowered", u.symbol);
                    let lowered = &c.lowered[0].1;
                    assert!(
                        ptx.contains(&format!(".entry {lowered}(")),
                        "{path}: symbol {} ({lowered}) not in PTX",
                        u.symbol
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 20, "only {checked} kernels in the fixtures");
}

fn bin() -> Command {
    Command::cargo_bin("kernelpair").unwrap()
}

#[test]
fn inspect_prints_units_pulls_and_launches() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("defs.h"),
        "#define BLOCK 64\n__device__ float sq(float x) { return x * x; }\n",
    )
    .unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "#include <stdio.h>\n#include \"defs.h\"\n__global__ void square(float *a) { a[threadIdx.x] = sq(a[threadIdx.x]) * BLOCK; }\n__global__ void other(int *b) { atomicAdd(b, 1); }\n#define THREADS 32\nint main() { square<<<1, THREADS>>>(0); return 0; }\n",
    )
    .unwrap();
    let out = bin()
        .arg("inspect")
        .arg(dir.path().join("k.cu"))
        .arg("--kernel")
        .arg("square")
        .assert()
        .success();
    let s = String::from_utf8(out.get_output().stdout.clone()).unwrap();
    assert!(s.contains("=== kernel square (k.cu:3) ==="), "{s}");
    assert!(s.contains("helpers: sq"), "{s}");
    assert!(s.contains("macros: BLOCK"), "{s}");
    assert!(s.contains("local files: defs.h"), "{s}");
    assert!(s.contains("host_header_dropped"), "{s}");
    assert!(s.contains("launch k.cu:6: <<<1, THREADS>>>(0)"), "{s}");
    assert!(s.contains("THREADS: #define THREADS 32"), "{s}");
    assert!(s.contains("__global__ void square"), "{s}");
    assert!(!s.contains("extern \"C\""), "{s}");
    assert!(!s.contains("=== kernel other"), "{s}");
    let all = bin()
        .arg("inspect")
        .arg(dir.path().join("k.cu"))
        .assert()
        .success();
    let s = String::from_utf8(all.get_output().stdout.clone()).unwrap();
    assert!(s.contains("=== kernel other"), "{s}");
    assert!(s.contains("features: atomics"), "{s}");
}

#[test]
fn inspect_errors_name_the_file_or_the_kernels() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nope.cu");
    bin()
        .arg("inspect")
        .arg(&missing)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("nope.cu"));
    let bad = dir.path().join("bad.cu");
    std::fs::write(&bad, [0xff, 0xfe, 0x00, 0x41]).unwrap();
    bin()
        .arg("inspect")
        .arg(&bad)
        .assert()
        .code(1)
        .stderr(predicates::str::contains("bad.cu is not UTF-8"));
    let k = dir.path().join("k.cu");
    std::fs::write(
        &k,
        "__global__ void alpha(int *a) {}\n__global__ void beta(int *a) {}\n",
    )
    .unwrap();
    bin()
        .arg("inspect")
        .arg(&k)
        .arg("--kernel")
        .arg("gamma")
        .assert()
        .code(1)
        .stderr(predicates::str::contains("no kernel named `gamma`"))
        .stderr(predicates::str::contains("alpha, beta"));
}
