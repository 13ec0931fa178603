//! Issue 26: isolation adds no `extern "C"`. Kernels are found by NVRTC name expressions,
//! so every `extern "C"` in a unit is one its source wrote. Checked on every unit of the
//! bundled fixtures, and (ignored by default) of the four public trees when they are on
//! this machine. Nothing of the trees is copied into the repository.

use kernelpair::record::KernelUnit;
use std::path::{Path, PathBuf};

/// Lines of `u`'s source holding `extern "C"` that no file it was read from writes.
fn added_linkage(root: &Path, u: &KernelUnit) -> Vec<String> {
    let files: Vec<String> = std::iter::once(&u.path)
        .chain(&u.pulled.local_files)
        .filter_map(|p| std::fs::read_to_string(root.join(p)).ok())
        .collect();
    u.source
        .lines()
        .map(str::trim)
        .filter(|l| l.contains("extern \"C\""))
        .filter(|l| !files.iter().any(|f| f.contains(l)))
        .map(|l| format!("{}:{} {}: {l}", u.path, u.line, u.kernel))
        .collect()
}

/// Extract `root` (no compile check) and list every added `extern "C"`; the number of
/// units seen comes back too, so an empty extraction cannot pass.
fn check_tree(root: &Path) -> (usize, Vec<String>) {
    let x = kernelpair::suite::extract_suite(root, "auto", None, "sm_90", false)
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()));
    let added = x
        .units
        .iter()
        .flat_map(|u| added_linkage(root, u))
        .collect();
    (x.units.len(), added)
}

#[test]
fn no_fixture_unit_gains_extern_c() {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut units = 0;
    let mut trees: Vec<PathBuf> = std::fs::read_dir(&fixtures)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    trees.sort();
    for dir in trees {
        let tree = dir.file_name().unwrap().to_string_lossy().to_string();
        let (n, added) = check_tree(&dir);
        assert!(n > 0, "{tree}: no units");
        assert!(
            added.is_empty(),
            "{tree}: extern \"C\" added:\n{}",
            added.join("\n")
        );
        units += n;
    }
    assert!(units > 100, "only {units} units");
    eprintln!("no extern \"C\" added in {units} fixture units");
}

/// The guard itself: a unit whose kernel gained `extern "C"` is caught, and a kernel the
/// source writes `extern "C"` keeps it without being flagged.
#[test]
fn added_linkage_is_seen() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("k.cu"),
        "__global__ void k(float *a) { a[0] = 1.0f; }\nextern \"C\" __global__ void c(float *a) { a[0] = 2.0f; }\n",
    )
    .unwrap();
    let x = kernelpair::suite::extract_suite(dir.path(), "generic", None, "sm_90", false).unwrap();
    assert_eq!(x.units.len(), 2);
    for u in &x.units {
        assert!(added_linkage(dir.path(), u).is_empty(), "{}", u.source);
    }
    let c = x.units.iter().find(|u| u.kernel == "c").unwrap();
    assert!(c.source.contains("extern \"C\" __global__ void c("));
    let mut k = x.units.iter().find(|u| u.kernel == "k").unwrap().clone();
    k.source = k.source.replace("__global__", "extern \"C\" __global__");
    assert_eq!(added_linkage(dir.path(), &k).len(), 1);
}

#[test]
#[ignore = "needs the public trees (Parboil, gpu-rodinia, cuda-samples, llm.c) under KP_TREES or /work/trees; run with --ignored"]
fn no_unit_of_the_four_public_trees_gains_extern_c() {
    let root = PathBuf::from(std::env::var("KP_TREES").unwrap_or_else(|_| "/work/trees".into()));
    let mut report = Vec::new();
    for tree in ["Parboil", "gpu-rodinia", "cuda-samples", "llm.c"] {
        let dir = root.join(tree);
        assert!(
            dir.is_dir(),
            "{} is missing: this test needs the public trees",
            dir.display()
        );
        let (n, added) = check_tree(&dir);
        assert!(n > 0, "{tree}: no units");
        assert!(
            added.is_empty(),
            "{tree}: extern \"C\" added:\n{}",
            added.join("\n")
        );
        report.push(format!("{tree}: {n} units"));
    }
    eprintln!("no extern \"C\" added: {}", report.join(", "));
}
