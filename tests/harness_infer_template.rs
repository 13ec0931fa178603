//! `harness infer` on fixtures/infer_template (host code we wrote, laid out like Rodinia): a
//! kernel launched with the template parameters of the host function template around it
//! takes the values of the first explicit call (`run_smooth<128, 4>`), also in its grid and
//! block; a template kernel launched without template arguments takes its type from the
//! declared types of the arguments (`split_planes<float>`); a buffer of `struct { float x;
//! float y; }` is an f32 buffer of two elements per struct. All three harnesses are complete
//! and pass `harness check`; on the GPU (`#[ignore]`) they pass the self-check.

mod common;
use common::{harness_check, selfcheck_inferred};

use kernelpair::harness::expr::Scope;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    common::fixture("infer_template")
}

/// Extract and infer into `dir`: (units file, inferred folder, (kernel, id, TOML) per pair).
fn infer(dir: &Path) -> (PathBuf, PathBuf, Vec<(String, String, toml::Value)>) {
    let (units, ids) = common::extract_units(&fixture(), dir);
    let out = dir.join("inferred");
    common::infer_into(&units, &fixture(), &out);
    let pairs = ids
        .into_iter()
        .map(|(kernel, id)| {
            let text = std::fs::read_to_string(out.join(format!("{id}.toml"))).unwrap();
            assert!(!text.contains("\"TODO\""), "{kernel}: {text}");
            assert!(
                text.contains("# template values") || kernel == "dist",
                "{text}"
            );
            (kernel, id, toml::from_str(&text).unwrap())
        })
        .collect();
    (units, out, pairs)
}

fn arg<'a>(t: &'a toml::Value, name: &str) -> &'a toml::Value {
    t["args"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"].as_str() == Some(name))
        .unwrap_or_else(|| panic!("no arg {name}"))
}

#[test]
fn template_values_and_struct_buffers_give_complete_harnesses() {
    let t = tempfile::tempdir().unwrap();
    let (units, out, pairs) = infer(t.path());
    assert_eq!(pairs.len(), 3);
    let get = |k: &str| &pairs.iter().find(|(kernel, _, _)| kernel == k).unwrap().2;

    // smooth<TILE, ROWS><<<grid, TILE>>> inside run_smooth<TILE, ROWS>: the first call's values.
    let s = get("smooth");
    let l = &s["launch"][0];
    assert_eq!(l["kernel"].as_str(), Some("smooth<128, 4>"));
    assert_eq!(l["block"][0].as_str(), Some("128"));
    for n in [5000i64, 4376, 512, 513] {
        let mut sc = Scope::default();
        sc.set_int("n", n);
        let g = sc.eval_int(l["grid"][0].as_str().unwrap()).unwrap();
        assert_eq!(g, (n + 511) / 512, "grid at n = {n}");
    }
    assert_eq!(arg(s, "in")["len"].as_str(), Some("n"));

    // split_planes<<<…>>>(d_a, …) with `T *d_a` in to_planes<float>: T = float.
    let p = get("split_planes");
    // Its bounds check compares `pixels`; the outputs are sized by `n`, the same 5000 in
    // the host code: the irregular set moves both, or the outputs would be partly unwritten.
    let irregular = p["size_sets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str() == Some("irregular"))
        .expect("an irregular set");
    assert_eq!(
        irregular["pixels"].as_integer(),
        irregular["n"].as_integer()
    );
    assert!(irregular["n"].as_integer().is_some_and(|n| n != 5000));
    assert_eq!(
        p["launch"][0]["kernel"].as_str(),
        Some("split_planes<float>")
    );
    assert_eq!(arg(p, "a")["type"].as_str(), Some("f32"));
    assert_eq!(arg(p, "a")["role"].as_str(), Some("out"));
    assert_eq!(p["sizes"]["pixels"].as_integer(), Some(5000));

    // `const Pt *pts`, Pt = { float x; float y; }: f32, two per struct, named by its C type.
    let d = get("dist");
    assert_eq!(arg(d, "pts")["type"].as_str(), Some("f32"));
    assert_eq!(arg(d, "pts")["c_type"].as_str(), Some("Pt"));
    assert_eq!(arg(d, "pts")["len"].as_str(), Some("(count) * 2"));

    for (_, id, _) in &pairs {
        harness_check(out.join(format!("{id}.toml")), &units, id).success();
    }
}

#[test]
fn the_taken_instance_and_the_others_are_named_in_the_file() {
    let t = tempfile::tempdir().unwrap();
    let (_, out, pairs) = infer(t.path());
    let id = &pairs.iter().find(|(k, _, _)| k == "smooth").unwrap().1;
    let text = std::fs::read_to_string(out.join(format!("{id}.toml"))).unwrap();
    assert!(
        text.contains("taken as run_smooth<128, 4> from cuda/planes/planes.cu line")
            && text.contains("other instances exist: <64, 4>"),
        "{text}"
    );
}

/// On the GPU: the three inferred harnesses pass every self-check (the instance runs, every
/// output is written at both size sets, deterministic, non-degenerate, seed-dependent).
#[test]
#[ignore = "needs a GPU; run on the device with -- --ignored"]
fn gpu_selfcheck_passes_the_template_and_struct_harnesses() {
    let t = tempfile::tempdir().unwrap();
    let (units, out, _) = infer(t.path());
    let report = t.path().join("report.jsonl");
    let rows = selfcheck_inferred(&units, &out, None, &report, 0);
    assert_eq!(rows.len(), 3);
    for r in &rows {
        assert_eq!(r["pass"], true, "{r}");
    }
}
