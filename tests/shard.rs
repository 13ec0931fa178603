//! `--shard i/n` on the stage commands: the shards partition the records, and merging the
//! shards' outputs gives byte for byte what one unsharded run writes.

use assert_cmd::Command;
use std::path::Path;

fn kp() -> Command {
    Command::cargo_bin("kernelpair").unwrap()
}

fn lines(p: &Path) -> Vec<String> {
    std::fs::read_to_string(p)
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

fn extract(dir: &Path, out: &str, shard: Option<&str>) {
    let mut c = kp();
    c.args([
        "extract",
        "fixtures/parboil",
        "--suite",
        "parboil",
        "--no-compile",
        "-o",
    ])
    .arg(dir.join(out));
    if let Some(s) = shard {
        c.args(["--shard", s]);
    }
    c.assert().success();
}

fn merge(dir: &Path, parts: &[&str], out: &str) {
    let mut c = kp();
    c.arg("merge");
    for p in parts {
        c.arg(dir.join(p));
    }
    c.arg("-o").arg(dir.join(out)).assert().success();
}

#[test]
fn two_extract_shards_partition_the_records_and_merge_to_the_whole() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    extract(d, "all.jsonl", None);
    extract(d, "s0.jsonl", Some("0/2"));
    extract(d, "s1.jsonl", Some("1/2"));
    let (all, s0, s1) = (
        lines(&d.join("all.jsonl")),
        lines(&d.join("s0.jsonl")),
        lines(&d.join("s1.jsonl")),
    );
    assert!(!s0.is_empty() && !s1.is_empty(), "both shards get work");
    assert_eq!(
        s0.len() + s1.len(),
        all.len(),
        "shards are disjoint and cover all"
    );
    assert!(s0.iter().all(|l| !s1.contains(l)));
    merge(d, &["s1.jsonl", "s0.jsonl"], "merged.jsonl");
    merge(d, &["all.jsonl"], "whole.jsonl");
    assert_eq!(
        std::fs::read(d.join("merged.jsonl")).unwrap(),
        std::fs::read(d.join("whole.jsonl")).unwrap()
    );
}

/// Without a GPU every pair gets a CPU-decided status (`no_gpu`, `missing_slow`,
/// `no_harness` …); sharded verify + merge must give the same corpus as one run.
#[test]
fn two_verify_shards_merge_to_the_same_corpus_as_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    extract(d, "units.jsonl", None);
    let verify = |out: &str, shard: Option<&str>| {
        let mut c = kp();
        c.args(["verify", "--in"])
            .arg(d.join("units.jsonl"))
            .arg("--out")
            .arg(d.join(out))
            .args(["--suite-root", "fixtures/parboil"]);
        if let Some(s) = shard {
            c.args(["--shard", s]);
        }
        c.assert().success();
    };
    verify("v_all.jsonl", None);
    verify("v0.jsonl", Some("0/2"));
    verify("v1.jsonl", Some("1/2"));
    let pairs = |p: &str| {
        lines(&d.join(p))
            .into_iter()
            .filter(|l| l.contains(r#""type":"pair""#))
            .count()
    };
    assert!(pairs("v0.jsonl") > 0 && pairs("v1.jsonl") > 0);
    assert_eq!(pairs("v0.jsonl") + pairs("v1.jsonl"), pairs("v_all.jsonl"));
    merge(d, &["v0.jsonl", "v1.jsonl"], "merged.jsonl");
    merge(d, &["v_all.jsonl"], "whole.jsonl");
    assert_eq!(
        std::fs::read(d.join("merged.jsonl")).unwrap(),
        std::fs::read(d.join("whole.jsonl")).unwrap()
    );
    // Every pair carries a verification: nothing was dropped by sharding.
    for l in lines(&d.join("merged.jsonl")) {
        if l.contains(r#""type":"pair""#) {
            assert!(l.contains(r#""verification":"#), "{l}");
        }
    }
}
