//! `harness infer` on fixtures/infer_parboil (host code we wrote, laid out like Parboil: the
//! naive kernel in `cuda_base/` and the tiled one in `cuda/`, each launched from its own
//! `main.cu`). The slow launch is read from the slow variant's own code and names the args
//! its kernel takes; the output starts as a device copy of the input; the `__constant__
//! float4` table uploaded with a count read from a file fills its whole declaration; the
//! table's values reach `rsqrtf`, so they are drawn positive; the weight `1.0f / 3.0f` is not 0; the block comes from `cudaGetDeviceProperties`; the grid
//! floor-divides `n`, so no irregular set moves it. On the GPU (`#[ignore]`) the harness
//! passes the self-check, and verify finds the two kernels agree.

mod common;
use common::{harness_check, kp, selfcheck_inferred};

use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    common::fixture("infer_parboil")
}

/// Extract and infer with `--assume-size 4096` into `dir`: (units, inferred dir, pair id).
fn infer_assumed(dir: &Path) -> (PathBuf, PathBuf, String) {
    let (units, ids) = common::extract_units(&fixture(), dir);
    assert_eq!(ids.len(), 1, "{ids:?}");
    let out = dir.join("inferred");
    common::infer_assumed_into(&units, &fixture(), &out, 4096);
    (units, out, ids[0].1.clone())
}

#[test]
fn both_variants_host_code_gives_one_complete_harness() {
    let t = tempfile::tempdir().unwrap();
    let (units, out, id) = infer_assumed(t.path());
    let file = out.join(format!("{id}.toml"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        !text.contains("\"TODO\"") && !text.contains("# TODO"),
        "{text}"
    );
    let h: toml::Value = toml::from_str(&text).unwrap();
    let arg = |name: &str| {
        h["args"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"].as_str() == Some(name))
            .unwrap_or_else(|| panic!("no arg {name}: {text}"))
            .clone()
    };
    // The slow kernel takes 3 of the fast one's 4 parameters, read from cuda_base/main.cu.
    let slow = &h["variants"]["slow"]["launch"][0];
    assert_eq!(
        slow["args"].as_array().unwrap(),
        &["in", "out", "n"].map(toml::Value::from).to_vec()
    );
    assert!(
        text.contains("# from benchmarks/heat/src/cuda_base/main.cu:"),
        "{text}"
    );
    assert_eq!(slow["grid"][0].as_str(), Some("n / 256"));
    let fast = &h["variants"]["fast"]["launch"][0];
    assert_eq!(fast["block"][0].as_str(), Some("max_threads_per_block / 4"));
    // Zeroed, then copied from the input on the device.
    assert_eq!(arg("out")["init"]["kind"].as_str(), Some("copy_of"));
    assert_eq!(arg("out")["init"]["arg"].as_str(), Some("in"));
    assert_eq!(arg("out")["role"].as_str(), Some("inout"));
    // `float c0 = 1.0f / 3.0f;`
    let c0: f64 = arg("c0")["value"].as_str().unwrap().parse().unwrap();
    assert!((c0 - 1.0 / 3.0).abs() < 1e-9, "{c0}");
    // 64 float4 declared: 256 f32, since the upload's count comes from a file.
    let c = &h["constants"][0];
    assert_eq!(
        (
            c["name"].as_str(),
            c["type"].as_str(),
            c["len"].as_integer()
        ),
        (Some("coef"), Some("f32"), Some(256))
    );
    // Its values reach `rsqrtf`: drawn positive.
    assert_eq!(c["init"]["lo"].as_float(), Some(0.5), "{text}");
    // `n / 256` has no partial block: n stays a multiple, so there is no irregular set.
    let sets = h["size_sets"].as_array().unwrap();
    assert_eq!(sets.len(), 1, "{text}");
    assert_eq!(h["sizes"]["n"].as_integer(), Some(4096));
    harness_check(&file, &units, &id).success();
}

#[test]
fn strict_inference_leaves_the_command_line_size_unknown() {
    let t = tempfile::tempdir().unwrap();
    let (units, ids) = common::extract_units(&fixture(), t.path());
    let out = t.path().join("strict");
    common::infer_into(&units, &fixture(), &out);
    let id = &ids[0].1;
    let file = out.join(format!("{id}.toml"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("n = \"TODO\"  # `n` = `atoi(argv[1])`: `atoi(argv[1])` is command-line argument 1 and no run script gives it"),
        "{text}"
    );
    harness_check(&file, &units, id).failure();
}

/// On the GPU: the inferred harness passes every self-check, and verify runs both
/// variants under it and finds them in agreement (verified, or `not_faster`: a tile of a
/// 3-point stencil need not win, and the status says which).
#[test]
#[ignore = "needs a GPU; run on the device with -- --ignored"]
fn gpu_the_inferred_harness_selfchecks_and_the_variants_agree() {
    let t = tempfile::tempdir().unwrap();
    let (units, out, id) = infer_assumed(t.path());
    let report = t.path().join("report.jsonl");
    let rows = selfcheck_inferred(&units, &out, Some(&id), &report, 0);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["pass"], true, "{}", rows[0]);
    let verified = t.path().join("verified.jsonl");
    kp().args(["verify", "--in"])
        .arg(&units)
        .arg("--out")
        .arg(&verified)
        .arg("--inferred-dir")
        .arg(&out)
        .args(["--timeout-s", "30"])
        .assert()
        .success();
    let pairs: Vec<_> = kernelpair::jsonl::read_records(&verified)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            kernelpair::record::Record::Pair(p) => Some(p),
            _ => None,
        })
        .collect();
    assert_eq!(pairs.len(), 1);
    let v = pairs[0].verification.as_ref().expect("verified");
    println!("heat: {} ({})", v.status.as_str(), v.reason);
    assert!(
        matches!(v.status.as_str(), "verified" | "not_faster"),
        "{}: {}",
        v.status.as_str(),
        v.reason
    );
}
