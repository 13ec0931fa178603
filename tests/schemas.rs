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
        .find(|l| l["type"] == "pair" && l["data"]["slow"]["kind"] == "natural")
        .unwrap();
    let mut natural_without_slow = natural.clone();
    natural_without_slow["data"]["slow"]
        .as_object_mut()
        .unwrap()
        .remove("unit");
    // Version 3 has no `origin`: a current line in the old shape is refused.
    let mut old_shape = natural.clone();
    old_shape["data"]["slow"] = natural["data"]["slow"]["unit"].clone();
    old_shape["data"]["origin"] = serde_json::json!({"kind": "natural"});
    let mut unknown_rule = natural.clone();
    unknown_rule["data"]["rule"] = Value::from("by_guess");
    for (what, bad) in [
        ("missing id", no_id),
        ("unknown field", extra),
        ("unit data under type pair", wrong_type),
        ("a version newer than this tool's", future),
        ("natural pair without slow unit", natural_without_slow),
        ("a version-3 pair in the version-2 shape", old_shape),
        ("an unknown pairing rule", unknown_rule),
    ] {
        assert!(!v.is_valid(&bad), "schema accepted a line with {what}");
    }
}

/// Synth's two outcomes, as the record types write them, are valid version-3 lines; the
/// version-2 pairs export's fixture was made with are valid too, and read as version 3.
#[test]
fn synthesized_and_rejected_slots_and_old_pairs_match_the_schema() {
    use kernelpair::record::{
        Line, Record, Slow, SynthOutcome, SynthReason, SynthRejection, RECORD_VERSION,
    };
    let v = schema();
    let lines = extract_lines("rodinia", "rodinia");
    let pending = lines
        .iter()
        .find(|l| l["type"] == "pair" && l["data"]["slow"]["kind"] == "pending")
        .expect("rodinia pairs are pending");
    let Record::Pair(p) = serde_json::from_value::<Line>(pending.clone())
        .unwrap()
        .record
    else {
        panic!("not a pair")
    };
    let outcome = SynthOutcome {
        model: "m".into(),
        prompt_hash: "h".into(),
        attempts: 2,
        rejections: vec![SynthRejection {
            attempt: 1,
            reason: SynthReason::CompileError,
            message: "error: x".into(),
        }],
        checks: vec!["compiles".into()],
        cost_usd: Some(0.01),
        ..SynthOutcome::default()
    };
    let rejected = SynthOutcome {
        reason: Some(SynthReason::LlmUnreachable),
        message: Some("connection refused".into()),
        ..outcome.clone()
    };
    for slow in [
        Slow::Synthesized {
            unit: Box::new(p.fast.clone()),
            outcome: Box::new(outcome),
        },
        Slow::Pending {
            rejected: Some(Box::new(rejected)),
        },
    ] {
        let mut q = p.clone();
        q.slow = slow;
        let line = serde_json::to_value(Line::new(Record::Pair(q))).unwrap();
        let errors: Vec<String> = v.iter_errors(&line).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{errors:#?}\n{line}");
    }
    let old = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pairs.jsonl");
    let text = std::fs::read_to_string(&old).unwrap();
    for l in text.lines() {
        let line: Value = serde_json::from_str(l).unwrap();
        assert_eq!(line["version"], 2);
        assert!(v.is_valid(&line), "{l}");
    }
    let read = kernelpair::jsonl::read_records(&old).unwrap();
    assert_eq!(read.len(), text.lines().count());
    // Written again, every line is a valid version-3 line.
    for r in read {
        let line = serde_json::to_value(Line::new(r)).unwrap();
        assert_eq!(line["version"], RECORD_VERSION);
        assert!(v.is_valid(&line), "{line}");
    }
}
