//! Bad input never takes extraction down: a time-boxed mutation fuzzer over the fixture
//! kernels (truncation, deleted braces, stray `#if`, random bytes, duplicated lines) and
//! the hard shapes from real trees (multi-megabyte files, 10,000-deep nesting, include
//! cycles, a header included from 500 places). Each case must finish (no hang), panic
//! nowhere, and leave every other kernel extracted.
//!
//! The fuzzer's budget is `KP_FUZZ_SECS` (default 20 s); CI runs the default.

use kernelpair::cuda::{index_file, isolate_at, FileIndex, Scope};
use kernelpair::suite::{extract, ExtractConfig};
use rand::{Rng, SeedableRng};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

fn fixture_sources() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(&root).sort_by_file_name() {
        let e = e.unwrap();
        let p = e.path();
        if p.extension()
            .is_some_and(|x| x == "cu" || x == "cuh" || x == "h")
        {
            if let Ok(t) = std::fs::read_to_string(p) {
                out.push((p.strip_prefix(&root).unwrap().display().to_string(), t));
            }
        }
    }
    out
}

/// Index a text and isolate each of its kernels, as extract does for one file.
fn index_and_isolate(text: &str) -> usize {
    let idx: FileIndex = index_file("f.cu", text);
    let n = idx.kernels().len();
    let map: BTreeMap<String, FileIndex> = [("f.cu".to_string(), idx)].into();
    for k in 0..n {
        let _ = isolate_at(&Scope::new(&map), "f.cu", k);
    }
    n
}

fn mutate(rng: &mut rand_chacha::ChaCha8Rng, text: &str) -> String {
    let mut b: Vec<u8> = text.as_bytes().to_vec();
    for _ in 0..rng.random_range(1..4) {
        if b.is_empty() {
            break;
        }
        let at = rng.random_range(0..b.len());
        match rng.random_range(0..7) {
            0 => b.truncate(at),
            1 => {
                // Delete one brace or parenthesis.
                if let Some(p) = b[at..].iter().position(|c| b"{}()".contains(c)) {
                    b.remove(at + p);
                }
            }
            2 => b
                .splice(at..at, b"\n#if FOO\n".iter().copied())
                .for_each(drop),
            3 => b
                .splice(at..at, b"\n#endif\n".iter().copied())
                .for_each(drop),
            4 => {
                for _ in 0..rng.random_range(1..16) {
                    let i = rng.random_range(0..b.len());
                    b[i] = rng.random();
                }
            }
            5 => {
                let end = (at + rng.random_range(1..200)).min(b.len());
                let chunk = b[at..end].to_vec();
                b.splice(at..at, chunk).for_each(drop);
            }
            _ => b.splice(at..at, b"<<<".iter().copied()).for_each(drop),
        }
    }
    String::from_utf8_lossy(&b).into_owned()
}

/// Run `f` on a thread with a deep stack; fail the test if it takes longer than `limit`.
fn bounded<T: Send + 'static>(
    limit: Duration,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::Builder::new()
        .stack_size(kernelpair::suite::WORKER_STACK)
        .spawn(move || {
            let _ = tx.send(f());
        })
        .unwrap();
    match rx.recv_timeout(limit) {
        Ok(v) => v,
        Err(_) => panic!("{what}: no answer within {limit:?} (a hang)"),
    }
}

#[test]
fn fuzzed_fixture_kernels_never_panic_or_hang() {
    let budget = Duration::from_secs(
        std::env::var("KP_FUZZ_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(20),
    );
    let sources = fixture_sources();
    assert!(sources.len() > 20, "fixtures not found");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(0x6b70);
    let start = Instant::now();
    let mut cases = 0u64;
    while start.elapsed() < budget {
        let (path, text) = &sources[rng.random_range(0..sources.len())];
        let m = mutate(&mut rng, text);
        let m2 = m.clone();
        let r = bounded(Duration::from_secs(20), path, move || {
            std::panic::catch_unwind(|| index_and_isolate(&m2)).is_ok()
        });
        if !r {
            let dump = std::env::temp_dir().join("kernelpair-fuzz-crash.cu");
            std::fs::write(&dump, &m).unwrap();
            panic!(
                "mutation of {path} panicked the CUDA front end; input in {}",
                dump.display()
            );
        }
        cases += 1;
    }
    eprintln!(
        "fuzz: {cases} mutated inputs in {:?}, no panic, no hang",
        start.elapsed()
    );
    assert!(cases > 50, "only {cases} cases ran in the budget");
}

fn tree(files: &[(&str, String)]) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    for (p, t) in files {
        let p = d.path().join(p);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, t).unwrap();
    }
    d
}

fn run(root: PathBuf) -> kernelpair::suite::Extraction {
    bounded(Duration::from_secs(120), "extract", move || {
        let mut cfg = ExtractConfig::new(&root, "generic", None).unwrap();
        cfg.compile = false;
        extract(&cfg).unwrap()
    })
}

fn kernels(ex: &kernelpair::suite::Extraction) -> Vec<String> {
    let mut v: Vec<String> = ex.units.iter().map(|u| u.kernel.clone()).collect();
    v.sort();
    v
}

const GOOD: &str = "__global__ void good(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] = 2.0f * x[i]; }\n";

#[test]
fn deep_nesting_huge_files_and_cycles_cost_only_themselves() {
    let deep = format!(
        "__global__ void deep(int *x) {{ {} x[0] = 1; {} }}\n",
        "{".repeat(10_000),
        "}".repeat(10_000)
    );
    let parens = format!(
        "__global__ void parens(int *x) {{ x[0] = {}1{}; }}\n",
        "(".repeat(10_000),
        ")".repeat(10_000)
    );
    // About 1.5 MB of device code in one file (under the 2 MiB default limit).
    let mut big = String::new();
    for i in 0..12_000 {
        big.push_str(&format!(
            "__device__ float f{i}(float a) {{ return a * {i}.0f + 1.0f; }} // filler text\n"
        ));
    }
    big.push_str("__global__ void big(float *x) { x[0] = f11999(x[0]); }\n");
    let d = tree(&[
        ("deep/Makefile", String::new()),
        ("deep/deep.cu", deep),
        ("parens/parens.cu", parens),
        ("big/big.cu", big),
        ("cycle/a.cuh", "#include \"b.cuh\"\n#define A 1\n".into()),
        (
            "cycle/b.cuh",
            "#include \"a.cuh\"\n__global__ void in_cycle(int *x) { x[0] = A; }\n".into(),
        ),
        ("cycle/main.cu", "#include \"a.cuh\"\n".into()),
        ("ok/good.cu", GOOD.into()),
    ]);
    let ex = run(d.path().to_path_buf());
    let ks = kernels(&ex);
    for k in ["big", "good", "in_cycle"] {
        assert!(ks.contains(&k.to_string()), "{k} missing from {ks:?}");
    }
    // The deep ones are either extracted or named in a record; never silently lost.
    for (k, path) in [("deep", "deep/deep.cu"), ("parens", "parens/parens.cu")] {
        assert!(
            ks.contains(&k.to_string()) || ex.skipped.iter().any(|s| s.path == path),
            "{k}: neither a unit nor a skipped record"
        );
    }
    let cyc = ex.units.iter().find(|u| u.kernel == "in_cycle").unwrap();
    assert!(cyc.source.contains("#define A 1"), "{}", cyc.source);
}

#[test]
fn a_header_included_from_500_places_is_read_once_and_yields_its_kernel_once() {
    let mut files: Vec<(String, String)> = vec![(
        "inc/common.cuh".into(),
        "#define SCALE 3\n__global__ void shared_kernel(int *x) { x[0] = SCALE; }\n".into(),
    )];
    for i in 0..500 {
        files.push((format!("p{i}/Makefile"), String::new()));
        files.push((
            format!("p{i}/k.cu"),
            format!("#include \"../inc/common.cuh\"\n__global__ void k{i}(int *x) {{ x[0] = SCALE + {i}; }}\n"),
        ));
    }
    let refs: Vec<(&str, String)> = files.iter().map(|(p, t)| (p.as_str(), t.clone())).collect();
    let d = tree(&refs);
    let ex = run(d.path().to_path_buf());
    assert_eq!(ex.units.len(), 501);
    assert_eq!(
        ex.units
            .iter()
            .filter(|u| u.kernel == "shared_kernel")
            .count(),
        1
    );
    let k7 = ex.units.iter().find(|u| u.kernel == "k7").unwrap();
    assert!(k7.source.contains("#define SCALE 3"), "{}", k7.source);
    assert!(ex.skipped.is_empty());
}

#[test]
fn a_unit_nested_deep_enough_to_overflow_nvrtc_costs_only_itself() {
    if kernelpair::gpu::nvrtc::load().is_err() {
        assert!(
            std::env::var_os("KERNELPAIR_REQUIRE_NVRTC").is_none(),
            "KERNELPAIR_REQUIRE_NVRTC is set but NVRTC is missing"
        );
        eprintln!("skipped: no NVRTC here (pip install nvidia-cuda-nvrtc)");
        return;
    }
    // 400,000-deep parentheses overflowed NVRTC's stack (512 MiB) and aborted the process.
    let n = 400_000;
    let deep = format!(
        "__global__ void deep(int *x) {{ x[0] = {}1{}; }}\n",
        "(".repeat(n),
        ")".repeat(n)
    );
    let d = tree(&[("a/deep.cu", deep), ("b/good.cu", GOOD.into())]);
    let root = d.path().to_path_buf();
    let ex = bounded(Duration::from_secs(300), "extract", move || {
        let mut cfg = ExtractConfig::new(&root, "generic", None).unwrap();
        cfg.max_file_size = 10 << 20;
        cfg.cache = kernelpair::suite::compile::CheckCache::none();
        extract(&cfg).unwrap()
    });
    let unit = |k: &str| ex.units.iter().find(|u| u.kernel == k).unwrap();
    let deep = unit("deep").compile.clone().unwrap();
    assert!(!deep.ok);
    assert!(deep.log.contains("nest 400"), "{}", deep.log);
    assert!(unit("good").compile.as_ref().unwrap().ok);
}
