//! Harness files: every committed harness is valid (schema and loader), and the
//! `harness draft` / `harness check` commands work end to end on a temp tree.

use assert_cmd::Command;
use kernelpair::harness;
use kernelpair::record::{Features, LaunchSite, Origin, Pair, Param, Provenance, Pulled, Record};
use kernelpair::KernelUnit;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(root().join("schemas/harness.schema.json")).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&v).expect("the schema compiles")
}

/// Every `*.toml` under extractors/<suite>/ (suite descriptions sit one level up) and every
/// `harness*.toml` under fixtures/.
fn committed_harnesses() -> Vec<PathBuf> {
    let mut out = Vec::new();
    for dir in ["extractors", "fixtures"] {
        for e in walkdir::WalkDir::new(root().join(dir))
            .into_iter()
            .flatten()
        {
            let p = e.path();
            let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let in_extractor_suite = p
                .parent()
                .and_then(|d| d.parent())
                .is_some_and(|d| d.file_name().is_some_and(|n| n == "extractors"));
            let suite_tree_harness = name.starts_with("harness") && name.ends_with(".toml");
            if suite_tree_harness || (in_extractor_suite && name.ends_with(".toml")) {
                out.push(p.to_path_buf());
            }
        }
    }
    out.sort();
    out
}

#[test]
fn every_committed_harness_matches_the_schema_and_loads() {
    let v = schema();
    let files = committed_harnesses();
    let mut bad = Vec::new();
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let json = harness::to_json(&text, &f.display().to_string()).unwrap();
        for e in v.iter_errors(&json) {
            bad.push(format!("{}: {} at {}", f.display(), e, e.instance_path));
        }
        if let Err(e) = harness::load(f) {
            bad.push(e.to_string());
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    // Not vacuous: the Parboil harnesses are there.
    let parboil = files
        .iter()
        .filter(|f| f.starts_with(root().join("extractors/parboil")))
        .count();
    assert!(parboil >= 10, "only {parboil} Parboil harnesses");
    let fixtures = files
        .iter()
        .filter(|f| f.starts_with(root().join("fixtures")))
        .count();
    assert!(fixtures >= 9, "only {fixtures} fixture harnesses");
}

/// Every committed harness generates inputs for its smallest size set (loading already
/// resolved every set): sizes fit the types, no input comes out all zero, sparse parts agree
/// in length. (Only the smallest set: test builds are unoptimized and the largest sets are
/// hundreds of MB.)
#[test]
fn every_committed_harness_generates_inputs() {
    let dev = harness::DeviceProps::h100();
    for f in committed_harnesses() {
        let h = harness::load(&f).unwrap();
        if h.needs_host_loop.is_some() {
            continue;
        }
        let bytes = |set: &harness::SizeSet| -> usize {
            let r = h.resolve(set, &dev).unwrap();
            r.args
                .iter()
                .map(|a| match a {
                    harness::ResolvedArg::Buffer { len, elem, .. } => len * elem.size_of(),
                    _ => 0,
                })
                .sum()
        };
        let smallest = h.size_sets().iter().min_by_key(|s| bytes(s)).unwrap();
        {
            let set = smallest;
            let r = h.resolve(set, &dev).unwrap();
            let inputs = harness::generate_inputs(&r, 1).unwrap_or_else(|e| panic!("{e}"));
            let consts = harness::generate_constants(&r, 1).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(inputs.len(), r.args.len());
            assert_eq!(consts.len(), r.constants.len());
            for (a, b) in r.args.iter().zip(&inputs) {
                if let harness::ResolvedArg::Buffer { len, elem, .. } = a {
                    assert_eq!(
                        (b.len(), b.elem),
                        (*len, *elem),
                        "{}: {}",
                        f.display(),
                        a.name()
                    );
                }
            }
            assert!(
                !r.outputs().is_empty(),
                "{}: nothing to compare",
                f.display()
            );
        }
    }
}

#[test]
fn the_schema_rejects_what_the_loader_rejects() {
    let v = schema();
    let good = r#"
[sizes]
n = 100
[[args]]
name = "x"
type = "f32"
len = "n"
init = { kind = "uniform", lo = 0.0, hi = 1.0 }
role = "out"
[[launch]]
kernel = "k"
grid = ["n"]
block = 1
"#;
    let ok = harness::to_json(good, "good").unwrap();
    assert!(
        v.is_valid(&ok),
        "{:?}",
        v.iter_errors(&ok)
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
    );
    harness::parse(good, "good").unwrap();
    for (from, to) in [
        ("type = \"f32\"", "type = \"float\""),
        ("role = \"out\"", "role = \"output\""),
        ("kind = \"uniform\"", "kind = \"gaussian\""),
        ("block = 1", "block = [1, 1, 1, 1]"),
        ("len = \"n\"", "len = \"n\"\nvalue = 3"),
        ("[[launch]]", "[[launches]]"),
    ] {
        let text = good.replace(from, to);
        let json = harness::to_json(&text, "bad").unwrap();
        assert!(!v.is_valid(&json), "schema accepted {to}");
        assert!(
            harness::parse(&text, "bad").is_err(),
            "loader accepted {to}"
        );
    }
}

fn unit(kernel: &str, variant: &str, site: LaunchSite) -> KernelUnit {
    KernelUnit {
        id: format!("{variant}-{kernel}"),
        suite: "fixture".into(),
        benchmark: "vadd".into(),
        variant: variant.into(),
        path: format!("vadd/{variant}/k.cu"),
        line: 3,
        kernel: kernel.into(),
        params: [
            ("const float *", "a"),
            ("const float *", "b"),
            ("float *", "c"),
            ("int", "n"),
        ]
        .iter()
        .map(|(t, n)| Param {
            name: n.to_string(),
            ty: t.to_string(),
        })
        .collect(),
        template_params: vec![],
        source: String::new(),
        symbol: kernel.into(),
        pulled: Pulled::default(),
        features: Features::default(),
        launch_sites: vec![site],
        provenance: Provenance::default(),
        compile: None,
        diagnostics: vec![],
    }
}

fn write_pair(dir: &Path) -> PathBuf {
    let site = |grid: &str, defs: &[(&str, &str)]| LaunchSite {
        path: "vadd/main.cu".into(),
        line: 50,
        kernel: "vadd".into(),
        grid: grid.into(),
        block: "BLOCK".into(),
        shared_mem: None,
        stream: None,
        args: vec!["d_a".into(), "d_b".into(), "d_c".into(), "count".into()],
        template_args: None,
        definitions: defs
            .iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect(),
    };
    let defs = [
        ("BLOCK", "#define BLOCK 128"),
        ("grid", "dim3 grid(ceil(count / (float)BLOCK))"),
    ];
    let pair = Pair {
        id: "feedbeef00".into(),
        suite: "fixture".into(),
        benchmark: "vadd".into(),
        kernel: "vadd".into(),
        slow: Some(unit("vadd", "base", site("grid", &defs))),
        fast: unit("vadd", "opt", site("grid", &defs)),
        origin: Origin::Natural,
        rule: "name".into(),
        identical: false,
        techniques: vec![],
        description: None,
        harness: None,
        verification: None,
        synth: None,
    };
    let p = dir.join("pairs.jsonl");
    kernelpair::jsonl::write_records(&p, &[Record::Pair(Box::new(pair))]).unwrap();
    p
}

#[test]
fn draft_then_complete_then_check() {
    let dir = tempfile::tempdir().unwrap();
    let pairs = write_pair(dir.path());
    let draft = dir.path().join("h.toml");
    Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["harness", "draft"])
        .arg(&pairs)
        .args(["feed", "-o"])
        .arg(&draft)
        .assert()
        .success();
    let text = std::fs::read_to_string(&draft).unwrap();
    assert!(text.contains("grid = [\"ceil_div(n, 128)\"]"), "{text}");
    assert!(text.contains("block = [\"128\"]"), "{text}");
    // The draft is incomplete, so check fails and names the TODO.
    let out = Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["harness", "check"])
        .arg(&draft)
        .assert()
        .code(3)
        .get_output()
        .stderr
        .clone();
    let err = String::from_utf8(out).unwrap();
    assert!(err.contains("h.toml") && err.contains("TODO"), "{err}");
    // Completed, it passes, also against the pair's units.
    let done = text
        .replace("len = \"TODO\"", "len = \"n\"")
        .replace("role = \"TODO\"", "role = \"out\"");
    std::fs::write(&draft, done).unwrap();
    Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["harness", "check"])
        .arg(&draft)
        .arg("--units")
        .arg(&pairs)
        .args(["--pair", "feedbeef00"])
        .assert()
        .success()
        .stdout(predicates::str::contains("ok (size sets: default)"));
    // An unknown pair id is a fatal error naming the file.
    Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["harness", "draft"])
        .arg(&pairs)
        .arg("nope")
        .assert()
        .code(1)
        .stderr(predicates::str::contains(
            "no pair with id starting \"nope\"",
        ));
}

/// `harness::locate` finds each fixture pair's harness in the suite tree, the most specific
/// file name first, and the Parboil harnesses in extractors/parboil/.
#[test]
fn locate_finds_fixture_and_parboil_harnesses() {
    let site = LaunchSite {
        path: String::new(),
        line: 0,
        kernel: String::new(),
        grid: String::new(),
        block: String::new(),
        shared_mem: None,
        stream: None,
        args: vec![],
        definitions: Default::default(),
        template_args: None,
    };
    let pair = |bench: &str, kernel: &str, variant: &str, file: &str| {
        let mut u = unit(kernel, variant, site.clone());
        u.benchmark = bench.into();
        u.path = format!("benchmarks/{bench}/src/{variant}/{file}");
        Pair {
            id: "x".into(),
            suite: "parboil".into(),
            benchmark: bench.into(),
            kernel: kernel.into(),
            slow: None,
            fast: u,
            origin: Origin::Natural,
            rule: "name".into(),
            identical: false,
            techniques: vec![],
            description: None,
            harness: None,
            verification: None,
            synth: None,
        }
    };
    let fx = root().join("fixtures/parboil");
    let ext = root().join("extractors/parboil");
    for (bench, kernel, variant, file, want) in [
        (
            "vecadd",
            "vecAdd",
            "cuda",
            "vecadd.cu",
            "benchmarks/vecadd/harness.vecAdd.toml",
        ),
        (
            "vecadd",
            "vecScale",
            "cuda",
            "vecadd.cu",
            "benchmarks/vecadd/harness.vecScale.toml",
        ),
        (
            "stencil",
            "stencil7",
            "cuda",
            "kernels.cu",
            "benchmarks/stencil/harness.toml",
        ),
        (
            "stencil",
            "stencil7",
            "cuda_fermi",
            "kernels.cu",
            "benchmarks/stencil/harness.cuda_fermi.toml",
        ),
        (
            "histo",
            "histo_float_kernel",
            "cuda_tex",
            "histo_float.cu",
            "benchmarks/histo/harness.cuda_tex.toml",
        ),
        (
            "reduce",
            "reduceSum",
            "cuda",
            "reduce.cu",
            "benchmarks/reduce/harness.toml",
        ),
    ] {
        let p = pair(bench, kernel, variant, file);
        assert_eq!(
            harness::locate(&p, None, Some(&fx)),
            Some(fx.join(want)),
            "{bench}/{kernel}"
        );
    }
    // No harness for the fixture's unpaired copy kernel's benchmark file name.
    assert_eq!(
        harness::locate(&pair("nope", "k", "cuda", "k.cu"), Some(&ext), Some(&fx)),
        None
    );
    for (bench, kernel, variant, want) in [
        (
            "stencil",
            "block2D_reg_tiling",
            "cuda_fermi",
            "stencil.cuda_fermi.toml",
        ),
        (
            "stencil",
            "block2D_hybrid_coarsen_x",
            "cuda",
            "stencil.toml",
        ),
        (
            "mri-fhd",
            "ComputeFH_GPU",
            "cuda",
            "mri-fhd.ComputeFH_GPU.toml",
        ),
        ("bfs", "BFS_kernel", "cuda", "bfs.toml"),
    ] {
        let p = pair(bench, kernel, variant, "k.cu");
        assert_eq!(
            harness::locate(&p, Some(&ext), None),
            Some(ext.join(want)),
            "{bench}/{kernel}"
        );
    }
}

/// Every pair extract finds in the Parboil-layout fixtures has a harness (found by
/// `harness::locate` in the suite tree) that fits its two units: kernel names, parameter
/// count, pointer-ness and element types, const-ness of outputs, `__constant__` symbols.
#[test]
fn every_fixture_pair_has_a_harness_that_fits_its_units() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("units.jsonl");
    let fx = root().join("fixtures/parboil");
    Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["extract", "--suite", "parboil", "--no-compile", "-o"])
        .arg(&out)
        .arg(&fx)
        .assert()
        .success();
    let records = kernelpair::jsonl::read_records(&out).unwrap();
    let pairs: Vec<&Pair> = records
        .iter()
        .filter_map(|r| match r {
            Record::Pair(p) => Some(&**p),
            _ => None,
        })
        .collect();
    assert!(
        pairs.len() >= 9,
        "extract found {} fixture pairs",
        pairs.len()
    );
    let mut bad = Vec::new();
    for p in pairs {
        let what = format!("{}/{} ({})", p.benchmark, p.fast.kernel, p.fast.variant);
        match harness::locate(p, None, Some(&fx)) {
            None => bad.push(format!("{what}: no harness")),
            Some(f) => {
                if let Err(e) =
                    harness::load(&f).and_then(|h| h.check_against(p.slow.as_ref(), &p.fast))
                {
                    bad.push(format!("{what}: {e}"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
