//! Harness files: every committed harness is valid (schema and loader), and the
//! `harness draft` / `harness check` commands work end to end on a temp tree.

use assert_cmd::Command;
use kernelpair::harness;
use kernelpair::record::{
    Features, LaunchSite, Pair, PairRule, Param, Provenance, Pulled, Record, Slow,
};
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
        (
            "role = \"out\"",
            "role = \"out\"\nlayout.medium = { kind = \"transpose\", rows = 10, cols = 10 }",
        ),
        (
            "role = \"out\"",
            "role = \"out\"\nlayout.fast = { kind = \"transpose\", rows = 10 }",
        ),
        (
            "role = \"out\"",
            "role = \"out\"\ncompare = { offset = 1 }",
        ),
        (
            "kind = \"uniform\", lo = 0.0, hi = 1.0",
            "kind = \"fields\", fields = [{ count = 1, type = \"int\", init = { kind = \"zeros\" } }]",
        ),
        (
            "kind = \"uniform\", lo = 0.0, hi = 1.0",
            "kind = \"cells\", dims = [\"n\", 1], depth = 1, size = 1.0, fill = { lo = 1, hi = 1 }, w = { lo = 1.0, hi = 2.0 }",
        ),
        (
            "kind = \"uniform\", lo = 0.0, hi = 1.0",
            "kind = \"cells\", dims = [\"n\", 1, 1], depth = 1, size = 1.0, w = { lo = 1.0, hi = 2.0 }",
        ),
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
        build_flags: vec![],
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
        slow: Slow::natural(unit("vadd", "base", site("grid", &defs))),
        fast: unit("vadd", "opt", site("grid", &defs)),
        rule: PairRule::Name,
        identical: false,
        techniques: vec![],
        description: None,
        harness: None,
        harness_origin: None,
        shared_launches: None,
        verification: None,
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
            slow: Slow::PENDING,
            fast: u,
            rule: PairRule::Name,
            identical: false,
            techniques: vec![],
            description: None,
            harness: None,
            harness_origin: None,
            shared_launches: None,
            verification: None,
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
                    harness::load(&f).and_then(|h| h.check_against(p.slow.unit(), &p.fast))
                {
                    bad.push(format!("{what}: {e}"));
                }
            }
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// Parboil lbm (extractors/parboil/lbm.toml): the harness encodes the two variants'
/// `CALC_INDEX` (cuda_base: `e + 20·cell`, cuda: `TOTAL_PADDED_CELLS·e + cell`, both from
/// the kernel pointer `grid + margin`), and its compare window keeps every element where
/// the two kernels' writes agree and drops the ones where they cannot: replays the
/// kernel's scatter addresses (not its arithmetic) for the planes where they leave the
/// domain. Also: the generated flag words are a realistic mix of fluid, obstacle and
/// accelerated cells.
#[test]
fn lbm_layouts_match_calc_index_and_the_window_keeps_only_agreeing_writes() {
    use harness::{Layout, ResolvedArg, Window};
    let h = harness::load(&root().join("extractors/parboil/lbm.toml")).unwrap();
    let r = h
        .resolve(&h.size_sets()[0], &harness::DeviceProps::h100())
        .unwrap();
    let v = |k: &str| r.values[k] as i64;
    let (sx, sy, sz) = (v("size_x"), v("size_y"), v("size_z"));
    let (px, py, pz) = (sx + 8, sy, sz + 4);
    let cells = px * py * pz;
    let margin = v("margin");
    assert_eq!(margin, 2 * px * py * 20, "cuda_base's REAL_MARGIN");
    assert_eq!(
        v("grid_len"),
        cells * 20 + 2 * 2 * px * py * 20,
        "LBM_allocateGrid"
    );
    let (layout, window) = match &r.args[1] {
        ResolvedArg::Buffer {
            layout, compare, ..
        } => (layout.fast.unwrap(), compare.unwrap()),
        other => panic!("{other:?}"),
    };
    let Layout::Transpose { rows, cols, offset } = layout;
    assert_eq!((rows as i64, cols, offset as i64), (cells, 20, margin));
    assert_eq!(r.slow[0].offsets, [margin as usize; 2]);
    assert_eq!(r.fast[0].offsets, [margin as usize; 2]);
    // Element positions (in the whole buffer) of CALC_INDEX in each layout.
    let aos = |c: i64, e: i64| margin + e + 20 * c;
    let soa = |c: i64, e: i64| margin + cells * e + c;
    // The layout maps canonical position p to fast position `to_fast(p)`.
    let to_fast = |p: i64| -> i64 {
        let q = p - offset as i64;
        if q < 0 || q >= cells * 20 {
            p
        } else {
            offset as i64 + (q % 20) * cells + q / 20
        }
    };
    let in_window = |p: i64| {
        let Window { offset, len } = window;
        p >= offset as i64 && p < (offset + len) as i64
    };
    // D3Q19 directions in CELL_ENTRIES order (C N S E W T B NE NW SE SW NT NB ST SB ET EB WT WB).
    let dirs: [(i64, i64, i64); 19] = [
        (0, 0, 0),
        (0, 1, 0),
        (0, -1, 0),
        (1, 0, 0),
        (-1, 0, 0),
        (0, 0, 1),
        (0, 0, -1),
        (1, 1, 0),
        (-1, 1, 0),
        (1, -1, 0),
        (-1, -1, 0),
        (0, 1, 1),
        (0, 1, -1),
        (0, -1, 1),
        (0, -1, -1),
        (1, 0, 1),
        (1, 0, -1),
        (-1, 0, 1),
        (-1, 0, -1),
    ];
    let cell = |x: i64, y: i64, z: i64| x + y * px + z * px * py;
    let (mut agree, mut dropped) = (0usize, 0usize);
    for z in [0, 1, sz / 2, sz - 2, sz - 1] {
        for y in 0..sy {
            for x in 0..sx {
                let c = cell(x, y, z);
                // Reads: every entry of the own cell, FLAGS included, at the same canonical place.
                for e in 0..20 {
                    assert_eq!(to_fast(aos(c, e)), soa(c, e), "read {x},{y},{z} entry {e}");
                }
                // Scatter writes: DST_e(dstGrid) = entry e of the neighbour in direction e.
                for (e, (dx, dy, dz)) in dirs.iter().enumerate() {
                    let n = cell(x + dx, y + dy, z + dz);
                    let (slow_at, fast_at) = (aos(n, e as i64), soa(n, e as i64));
                    assert!(fast_at >= margin && fast_at < margin + 20 * cells);
                    if to_fast(slow_at) == fast_at {
                        agree += 1;
                        continue;
                    }
                    // Where the kernels write different canonical elements, the window must
                    // hold neither: the slow write's place and where the fast write maps back to.
                    let q = fast_at - margin;
                    let fast_canonical = margin + (q % cells) * 20 + q / cells;
                    assert!(
                        !in_window(slow_at) && !in_window(fast_canonical),
                        "{x},{y},{z} entry {e}: writes {slow_at} (slow) / {fast_canonical} (fast) in the window"
                    );
                    dropped += 1;
                }
            }
        }
    }
    // Writes leave the domain only below z = 0 (and one row/column at its corner).
    assert!(
        dropped > 0 && dropped < agree / 10,
        "{agree} agree, {dropped} dropped"
    );
    // The window covers the whole domain (and the z = SIZE_Z plane the kernel spills into).
    assert!(in_window(aos(0, 0)) && in_window(aos(cell(sx, sy - 1, sz), 19)));

    // The generated flag words: mostly fluid, some obstacles and accelerated cells.
    let inputs = harness::generate_inputs(&r, 1).unwrap();
    let src = &inputs[0];
    let mut counts = [0usize; 3];
    for z in 0..sz {
        for y in (0..sy).step_by(7) {
            for x in 0..sx {
                let p = aos(cell(x, y, z), 19) as usize;
                let bits = u32::from_le_bytes(src.bytes[p * 4..p * 4 + 4].try_into().unwrap());
                assert!(bits <= 2, "flag bits {bits}");
                counts[bits as usize] += 1;
            }
        }
    }
    let n: usize = counts.iter().sum();
    let frac = |k: usize| counts[k] as f64 / n as f64;
    assert!(
        frac(0) > 0.8 && frac(1) > 0.03 && frac(2) > 0.01,
        "{counts:?}"
    );
    // Distributions positive, so density and velocities are finite.
    let p = aos(cell(5, 5, 5), 0) as usize;
    assert!((0..19).all(|e| src.get_f64(p + e) > 0.0));
}

/// Parboil cutcp's bins as its host code builds them: bin (c, c, c) is the kernel's zero
/// address, every atom lies inside its own bin's 4 Å cube (relative to the lattice origin),
/// bins fill 4 to 8 slots and end with all-zero float4s, and every neighbour-list offset
/// from every region's bin stays inside the padded bin array.
#[test]
fn cutcp_bins_hold_atoms_in_their_bins_and_neighbours_stay_inside() {
    use harness::ResolvedArg;
    let h = harness::load(&root().join("extractors/parboil/cutcp.toml")).unwrap();
    let set = h
        .size_sets()
        .iter()
        .find(|s| s.name == "irregular")
        .unwrap();
    let r = h.resolve(set, &harness::DeviceProps::h100()).unwrap();
    let v = |k: &str| r.values[k] as usize;
    let (xr, yr, zr, c) = (v("xr"), v("yr"), v("zr"), v("c"));
    let bd = [xr + 2 * c, yr + 2 * c, zr + 2 * c];
    assert_eq!(c, 3, "ceil(cutoff 12 / bin length 4)");
    let bins = r.args.iter().position(|a| a.name() == "bins").unwrap();
    let ResolvedArg::Buffer { len, .. } = &r.args[bins] else {
        panic!("bins is a buffer")
    };
    assert_eq!(*len, bd[0] * bd[1] * bd[2] * 8 * 4);
    let zero = ((c * bd[1] + c) * bd[0] + c) * 32;
    for l in r.slow.iter().chain(&r.fast) {
        let k = l.args.iter().position(|&a| a == bins).unwrap();
        assert_eq!(l.offsets[k], zero, "binZeroAddr = bin (c, c, c)");
    }
    let inputs = harness::generate_inputs(&r, 1).unwrap();
    let b = &inputs[bins];
    let mut n = 0;
    let mut atoms = 0;
    for k in 0..bd[2] {
        for j in 0..bd[1] {
            for i in 0..bd[0] {
                let slot = |s: usize, e: usize| b.get_f64((n * 8 + s) * 4 + e);
                let count = (0..8).take_while(|&s| slot(s, 3) != 0.0).count();
                assert!((4..=8).contains(&count), "bin {n}: {count} atoms");
                for s in 0..count {
                    for (d, idx) in [i, j, k].into_iter().enumerate() {
                        // Position relative to the lattice origin, as the host bins it.
                        let lo = 4.0 * (idx as f64 - c as f64);
                        let p = slot(s, d);
                        assert!(
                            (lo..lo + 4.0).contains(&p),
                            "bin {n} atom {s}: {p} not in [{lo}, {})",
                            lo + 4.0
                        );
                    }
                    assert!((-1.0..1.0).contains(&slot(s, 3)));
                }
                assert!((count..8).all(|s| (0..4).all(|e| slot(s, e) == 0.0)));
                atoms += count;
                n += 1;
            }
        }
    }
    let mean = atoms as f64 / n as f64;
    assert!((5.5..6.5).contains(&mean), "{mean} atoms per bin");
    let consts = harness::generate_constants(&r, 1).unwrap();
    let len_of = r
        .constants
        .iter()
        .position(|k| k.name == "NbrListLen")
        .unwrap();
    let list = r
        .constants
        .iter()
        .position(|k| k.name == "NbrList")
        .unwrap();
    assert_eq!(consts[len_of].get_i128(0), 343);
    let nbr: Vec<[i64; 3]> = (0..343)
        .map(|m| [0, 1, 2].map(|e| consts[list].get_i128(3 * m + e) as i64))
        .collect();
    // The 7x7x7 cube in Parboil's loop order (k, then j, then i fastest).
    let mut want = Vec::new();
    for dz in -3..=3 {
        for dy in -3..=3 {
            for dx in -3..=3 {
                want.push([dx, dy, dz]);
            }
        }
    }
    assert_eq!(nbr, want);
    // At h = 0.5 region (x, y, z) sits in bin (x, y, z): floor((8x + 4) * h / 4) = x.
    for (d, regions) in [xr, yr, zr].into_iter().enumerate() {
        for x in 0..regions as i64 {
            let bin = ((8 * x + 4) as f64 * 0.5 / 4.0).floor() as i64;
            assert_eq!(bin, x);
            for o in &nbr {
                let at = bin + c as i64 + o[d];
                assert!((0..bd[d] as i64).contains(&at), "axis {d}: bin {at}");
            }
        }
    }
}
