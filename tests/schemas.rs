//! Every line `extract` writes validates against schemas/record.schema.json, and the
//! schema is strict enough to reject a damaged line.

use assert_cmd::Command;
use serde_json::Value;
use std::path::Path;

fn copy_tree(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let rel = e.path().strip_prefix(from).unwrap();
        let dst = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/record.schema.json"),
    )
    .unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .expect("schema compiles")
}

/// Extract a fixture suite (plus a binary file, so a `skipped` line appears) and return its lines.
fn extract_lines(fixture: &str, suite: &str) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join(fixture);
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures")
            .join(fixture),
        &root,
    );
    let bad = match suite {
        "parboil" => "benchmarks/vecadd/src/cuda/blob.cu",
        "rodinia" => "cuda/heat2d/blob.cu",
        _ => "blas/blob.cu",
    };
    std::fs::write(root.join(bad), b"\x7fELF\0\0\0").unwrap();
    let out = dir.path().join("out.jsonl");
    let assert = Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["extract", "--suite", suite, "-o"])
        .arg(&out)
        .arg(&root)
        .assert();
    // 3: the binary file was skipped (and NVRTC may be missing where this runs).
    assert.code(3);
    std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn extract_output_matches_the_record_schema() {
    let v = schema();
    let mut kinds = std::collections::BTreeSet::new();
    for (fixture, suite) in [
        ("parboil", "parboil"),
        ("rodinia", "rodinia"),
        ("generic", "generic"),
    ] {
        let lines = extract_lines(fixture, suite);
        assert!(lines.len() > 3, "{suite}: {} lines", lines.len());
        for (i, line) in lines.iter().enumerate() {
            let errors: Vec<String> = v
                .iter_errors(line)
                .map(|e| format!("{} at {}", e, e.instance_path))
                .collect();
            assert!(
                errors.is_empty(),
                "{suite} line {}: {errors:#?}\n{line}",
                i + 1
            );
            kinds.insert(line["type"].as_str().unwrap().to_string());
        }
    }
    // Every record type extract writes was checked.
    assert_eq!(
        kinds.into_iter().collect::<Vec<_>>(),
        ["pair", "skipped", "unit", "unpaired"]
    );
}

#[test]
fn schema_rejects_damaged_lines() {
    let v = schema();
    let lines = extract_lines("parboil", "parboil");
    let unit = lines.iter().find(|l| l["type"] == "unit").unwrap().clone();
    assert!(v.is_valid(&unit));
    let mut no_id = unit.clone();
    no_id["data"].as_object_mut().unwrap().remove("id");
    let mut extra = unit.clone();
    extra["data"]["surprise"] = Value::from(1);
    let mut wrong_type = unit.clone();
    wrong_type["type"] = Value::from("pair");
    // Files of the previous version are still read, and still valid.
    let mut old = unit.clone();
    old["version"] = Value::from(1);
    assert!(v.is_valid(&old), "a version-1 line is refused");
    let mut future = unit.clone();
    future["version"] = Value::from(kernelpair::record::RECORD_VERSION + 1);
    let natural = lines
        .iter()
        .find(|l| l["type"] == "pair" && l["data"]["origin"]["kind"] == "natural")
        .unwrap();
    let mut natural_without_slow = natural.clone();
    natural_without_slow["data"]
        .as_object_mut()
        .unwrap()
        .remove("slow");
    for (what, bad) in [
        ("missing id", no_id),
        ("unknown field", extra),
        ("unit data under type pair", wrong_type),
        ("a version newer than this tool's", future),
        ("natural pair without slow unit", natural_without_slow),
    ] {
        assert!(!v.is_valid(&bad), "schema accepted a line with {what}");
    }
}
