//! Robustness check on the real suites (Parboil, Rodinia) when they are on this machine:
//! index every CUDA file of every variant, isolate every kernel, compile each unit with
//! NVRTC. Ignored by default (needs /tmp/suites and NVRTC); run with
//! `cargo test --release --test real_suites -- --ignored --nocapture`.
//! Nothing of the suites is copied into the repository.

use kernelpair::cuda::{index_file, isolate_at, FileIndex, Scope};
use kernelpair::gpu::nvrtc;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

const EXTS: &[&str] = &["cu", "cuh", "h", "c", "cpp", "cc"];
/// What the extract stage reads (extractors/*.toml: kernel and context files).
const EXTRACT_EXTS: &[&str] = &["cu", "cuh", "h", "hh", "hpp", "inc", "inl"];

fn variant_dirs(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let parboil = root.join("parboil/benchmarks");
    if let Ok(rd) = std::fs::read_dir(&parboil) {
        for b in rd.flatten() {
            if let Ok(vs) = std::fs::read_dir(b.path().join("src")) {
                for v in vs.flatten() {
                    if v.file_name().to_string_lossy().starts_with("cuda") {
                        out.push(v.path());
                    }
                }
            }
        }
    }
    if let Ok(rd) = std::fs::read_dir(root.join("rodinia/cuda")) {
        for b in rd.flatten() {
            if b.path().is_dir() {
                out.push(b.path());
            }
        }
    }
    out.sort();
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    walk_exts(dir, EXTS, out)
}

fn walk_exts(dir: &Path, exts: &[&str], out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk_exts(&p, exts, out);
        } else if p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| exts.contains(&e))
        {
            out.push(p);
        }
    }
}

#[test]
#[ignore = "needs /tmp/suites and NVRTC"]
fn real_suites_isolate_and_compile() {
    let root = PathBuf::from(std::env::var("SUITES").unwrap_or("/tmp/suites".into()));
    let compile = std::env::var_os("NO_COMPILE").is_none();
    let only = std::env::var("ONLY").ok();
    let mut total = 0;
    let mut ok = 0;
    let mut reasons: BTreeMap<String, usize> = BTreeMap::new();
    let mut index_time = 0.0;
    let mut isolate_time = 0.0;
    let mut files_n = 0;
    let mut diag_counts: BTreeMap<String, usize> = BTreeMap::new();
    for vdir in variant_dirs(&root) {
        let vname = vdir.strip_prefix(&root).unwrap().display().to_string();
        if only.as_deref().is_some_and(|o| !vname.contains(o)) {
            continue;
        }
        let mut paths = Vec::new();
        walk(&vdir, &mut paths);
        paths.sort();
        let t0 = Instant::now();
        let texts: Vec<(String, String)> = paths
            .iter()
            .filter_map(|p| {
                let rel = p.strip_prefix(&root).unwrap().display().to_string();
                let t = String::from_utf8(std::fs::read(p).ok()?).ok()?;
                Some((rel, t))
            })
            .collect();
        let files: BTreeMap<String, FileIndex> = texts
            .iter()
            .map(|(r, t)| {
                let t0 = Instant::now();
                let fi = index_file(r, t);
                if std::env::var_os("TIMES").is_some() {
                    println!("TIME {:.4} {} {}", t0.elapsed().as_secs_f64(), t.len(), r);
                }
                (r.clone(), fi)
            })
            .collect();
        index_time += t0.elapsed().as_secs_f64();
        files_n += files.len();
        let scope = Scope::new(&files);
        for (path, fi) in &files {
            if std::env::var_os("COUNTS").is_some() && !fi.kernels().is_empty() {
                println!("{} {path}", fi.kernels().len());
            }
            for (i, k) in fi.kernels().iter().enumerate() {
                let t1 = Instant::now();
                let unit = isolate_at(&scope, path, i).unwrap();
                isolate_time += t1.elapsed().as_secs_f64();
                total += 1;
                for d in &unit.diagnostics {
                    *diag_counts.entry(d.code.clone()).or_insert(0usize) += 1;
                    if std::env::var("SHOW").is_ok_and(|c| c == d.code) {
                        println!("DIAG {path}::{} {}", k.name, d.message);
                    }
                }
                if !compile {
                    continue;
                }
                let name_exprs: Vec<String> = Vec::new();
                let c = nvrtc::compile(&nvrtc::CompileRequest {
                    source: &unit.source,
                    name: "unit.cu",
                    arch: "sm_90",
                    name_expressions: &name_exprs,
                    cubin: false,
                    extra_options: &[],
                })
                .expect("NVRTC available");
                let has_entry = !k.template_params.is_empty()
                    || c.ptx
                        .as_deref()
                        .is_some_and(|p| p.contains(&format!(".entry {}(", k.name)));
                if c.ok && has_entry {
                    ok += 1;
                    continue;
                }
                let codes: Vec<&str> = unit
                    .diagnostics
                    .iter()
                    .filter(|d| d.level != kernelpair::record::Level::Info)
                    .map(|d| d.code.as_str())
                    .collect();
                let reason = if !c.ok && codes.contains(&"legacy_texture_reference") {
                    "legacy_texture_reference".to_string()
                } else if !c.ok && codes.contains(&"c_compound_literal") {
                    "c_compound_literal".to_string()
                } else if !c.ok && codes.contains(&"unresolved_identifier") {
                    "unresolved_identifier".to_string()
                } else if c.ok {
                    "no_entry".to_string()
                } else {
                    "unexplained".to_string()
                };
                *reasons.entry(reason.clone()).or_default() += 1;
                println!("FAIL [{reason}] {path} :: {} (line {})", k.name, k.line);
                if reason == "unexplained" || std::env::var_os("VERBOSE").is_some() {
                    for d in &unit.diagnostics {
                        println!("    diag {} {}", d.code, d.message);
                    }
                    for l in c.log.lines().filter(|l| l.contains("error")).take(4) {
                        println!("    log: {l}");
                    }
                }
            }
        }
    }
    println!(
        "files {files_n}, kernels {total}, compiled {ok} ({:.1}%), index {:.3}s, isolate {:.3}s",
        100.0 * ok as f64 / total.max(1) as f64,
        index_time,
        isolate_time
    );
    println!("failures by reason: {reasons:?}");
    println!("diagnostics over all units: {diag_counts:?}");
    assert!(total > 0);
}

/// Wall time of indexing and isolating each whole suite, parallel as the extract stage
/// does it (read, index every file with rayon, isolate every kernel with rayon).
/// A benchmark, not a timed test: run in release.
#[test]
#[ignore = "needs /tmp/suites; run with --release"]
fn real_suites_timing() {
    use rayon::prelude::*;
    let root = PathBuf::from(std::env::var("SUITES").unwrap_or("/tmp/suites".into()));
    // Warm the compiled queries once, as a long-running extract would.
    let _ = index_file("warm.cu", "__global__ void k(int *a) { a[0] = 1; }");
    for suite in ["parboil", "rodinia"] {
        let t0 = Instant::now();
        let variants: Vec<PathBuf> = variant_dirs(&root)
            .into_iter()
            .filter(|v| v.strip_prefix(&root).unwrap().starts_with(suite))
            .collect();
        let scopes: Vec<BTreeMap<String, FileIndex>> = variants
            .par_iter()
            .map(|v| {
                let mut paths = Vec::new();
                walk_exts(v, EXTRACT_EXTS, &mut paths);
                paths
                    .par_iter()
                    .filter_map(|p| {
                        let rel = p.strip_prefix(&root).unwrap().display().to_string();
                        let t = String::from_utf8(std::fs::read(p).ok()?).ok()?;
                        Some((rel.clone(), index_file(&rel, &t)))
                    })
                    .collect()
            })
            .collect();
        let t_index = t0.elapsed().as_secs_f64();
        let units: usize = scopes
            .par_iter()
            .map(|files| {
                let scope = Scope::new(files);
                files
                    .iter()
                    .flat_map(|(p, fi)| (0..fi.kernels().len()).map(move |i| (p, i)))
                    .collect::<Vec<_>>()
                    .par_iter()
                    .map(|(p, i)| isolate_at(&scope, p, *i).unwrap().source.len().min(1))
                    .sum::<usize>()
            })
            .sum();
        println!(
            "{suite}: {} files, {units} units, index {:.3}s, total {:.3}s ({} threads)",
            scopes.iter().map(|s| s.len()).sum::<usize>(),
            t_index,
            t0.elapsed().as_secs_f64(),
            rayon::current_num_threads()
        );
    }
}
