//! `kernelpair build` and `kernelpair merge` as processes: a real kill mid-run and a resume
//! that ends byte-identical to an uninterrupted run; 2 shards + merge == one run; no GPU or
//! endpoint still exits 0 and says what waits.

use assert_cmd::Command;
use predicates::prelude::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn kp() -> Command {
    Command::cargo_bin("kernelpair").unwrap()
}

fn pairs() -> PathBuf {
    std::fs::canonicalize("tests/data/pairs.jsonl").unwrap()
}

/// A config over the fixture pairs (suite kind `records`), output in `<dir>/<out>`.
fn config(dir: &Path, name: &str, out: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(
        &p,
        format!(
            "output = \"{out}\"\n\n[[suite]]\npath = \"{}\"\nkind = \"records\"\n\n[verify]\nchunk = 2\n\n[export]\nformats = [\"chat\", \"preference\"]\n",
            pairs().display()
        ),
    )
    .unwrap();
    p
}

fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().display().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut m = BTreeMap::new();
    walk(dir, dir, &mut m);
    m
}

fn assert_same_tree(a: &Path, b: &Path) {
    let (fa, fb) = (files(a), files(b));
    assert_eq!(fa.keys().collect::<Vec<_>>(), fb.keys().collect::<Vec<_>>());
    for (k, v) in &fa {
        assert!(*v == fb[k], "{k} differs");
    }
}

#[test]
fn without_gpu_or_endpoint_build_exports_what_is_verified_says_what_waits_and_exits_0() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config(dir.path(), "b.toml", "out");
    // Harnesses for the two pairs that need verifying (tests/data/harnesses).
    let h = std::fs::canonicalize("tests/data/harnesses").unwrap();
    let text = std::fs::read_to_string(&cfg).unwrap();
    let with_harnesses = format!("[verify]\nharness_dirs = [\"{}\"]\n", h.display());
    std::fs::write(&cfg, text.replace("[verify]\n", &with_harnesses)).unwrap();
    kp().arg("build").arg(&cfg).assert().code(0).stderr(
        predicate::str::contains("synth: 1 pairs waiting: no LLM endpoint configured")
            .and(predicate::str::contains("verify: 2 pairs waiting"))
            .and(predicate::str::contains("exported=7")),
    );
    let out = dir.path().join("out");
    for f in [
        "extracted.jsonl",
        "synthesized.jsonl",
        "verified.jsonl",
        "journal.json",
        "dataset/README.md",
        "dataset/speedup.svg",
        "dataset/chat/train.jsonl",
        "dataset/preference/train.jsonl",
    ] {
        assert!(out.join(f).is_file(), "{f}");
    }
    // Rerun: the journal's finished steps are reused; the waiting ones try again.
    kp().arg("build").arg(&cfg).assert().code(0).stderr(
        predicate::str::is_match("extract +reused")
            .unwrap()
            .and(predicate::str::is_match("export +reused").unwrap())
            .and(predicate::str::is_match("verify +incomplete").unwrap()),
    );
}

/// Kill the build at several points (a real SIGKILL through `Child::kill`), rerun it, and
/// compare every output byte with an uninterrupted build.
#[test]
fn a_killed_build_resumes_to_byte_identical_output() {
    let dir = tempfile::tempdir().unwrap();
    let reference = config(dir.path(), "ref.toml", "ref");
    kp().arg("build").arg(&reference).assert().success();

    // Kill once the journal names the step (or, for "", as soon as the process runs).
    for (i, after) in ["", "\"extract\"", "\"synth\"", "\"verify\""]
        .iter()
        .enumerate()
    {
        let out = format!("killed{i}");
        let cfg = config(dir.path(), &format!("k{i}.toml"), &out);
        let journal = dir.path().join(&out).join("journal.json");
        let mut child = std::process::Command::new(assert_cmd::cargo::cargo_bin("kernelpair"))
            .arg("build")
            .arg(&cfg)
            .env("KERNELPAIR_TEST_STEP_DELAY_MS", "500")
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let start = Instant::now();
        loop {
            let text = std::fs::read_to_string(&journal).unwrap_or_default();
            if (after.is_empty() && start.elapsed() > Duration::from_millis(100))
                || (!after.is_empty() && text.contains(after))
            {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "journal never showed {after}"
            );
            assert!(
                child.try_wait().unwrap().is_none(),
                "build ended before the kill point {after}"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        child.kill().unwrap();
        let status = child.wait().unwrap();
        assert!(!status.success(), "killed, not finished");
        assert!(
            !dir.path().join(&out).join("dataset/README.md").exists(),
            "the kill after {after} came before the export"
        );
        kp().arg("build").arg(&cfg).assert().success();
        assert_same_tree(&dir.path().join("ref"), &dir.path().join(&out));
    }
}

#[test]
fn two_shards_merged_give_the_corpus_and_dataset_of_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let one = config(dir.path(), "one.toml", "one");
    kp().arg("build").arg(&one).assert().success();
    let sharded = config(dir.path(), "sh.toml", "sh");
    let mut parts = Vec::new();
    for i in 0..2 {
        kp().arg("build")
            .arg(&sharded)
            .args(["--shard", &format!("{i}/2")])
            .assert()
            .success()
            .stderr(predicate::str::contains("sharded build: merge"));
        let p = dir
            .path()
            .join(format!("sh/shards/{i}-of-2/verified.jsonl"));
        let n = std::fs::read_to_string(&p).unwrap().lines().count();
        assert!(n > 0 && n < 16, "shard {i} has {n} of 16 records");
        parts.push(p);
    }
    assert!(
        !dir.path().join("sh/dataset").exists(),
        "shards do not export"
    );
    let merged = dir.path().join("merged.jsonl");
    kp().arg("merge")
        .args(&parts)
        .arg("-o")
        .arg(&merged)
        .assert()
        .success()
        .stderr(predicate::str::contains("into 16 records (0 duplicates"));
    // The one run's corpus in merge order.
    let single = dir.path().join("single.jsonl");
    kp().arg("merge")
        .arg(dir.path().join("one/verified.jsonl"))
        .arg("-o")
        .arg(&single)
        .assert()
        .success();
    assert_eq!(
        std::fs::read(&merged).unwrap(),
        std::fs::read(&single).unwrap()
    );
    // And the same dataset.
    kp().args(["export", "--format", "chat,preference", "--in"])
        .arg(&merged)
        .arg("--out")
        .arg(dir.path().join("merged-dataset"))
        .assert()
        .success();
    assert_same_tree(
        &dir.path().join("one/dataset"),
        &dir.path().join("merged-dataset"),
    );
}

#[test]
fn merge_dedups_in_any_order_and_names_unreadable_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(pairs()).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let a = dir.path().join("a.jsonl");
    let b = dir.path().join("b.jsonl");
    std::fs::write(&a, lines[..10].join("\n") + "\n").unwrap();
    std::fs::write(&b, lines[6..].join("\n") + "\n").unwrap();
    let ab = dir.path().join("ab.jsonl");
    let ba = dir.path().join("ba.jsonl");
    kp().arg("merge")
        .arg(&a)
        .arg(&b)
        .arg("-o")
        .arg(&ab)
        .assert()
        .success()
        .stderr(predicate::str::contains(
            "into 16 records (4 duplicates dropped",
        ));
    kp().arg("merge")
        .arg(&b)
        .arg(&a)
        .arg("-o")
        .arg(&ba)
        .assert()
        .success();
    assert_eq!(std::fs::read(&ab).unwrap(), std::fs::read(&ba).unwrap());
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{not a record}\n").unwrap();
    kp().arg("merge")
        .arg(&a)
        .arg(&bad)
        .arg(dir.path().join("missing.jsonl"))
        .arg("-o")
        .arg(dir.path().join("partial.jsonl"))
        .assert()
        .code(3)
        .stderr(
            predicate::str::contains("bad.jsonl:1")
                .and(predicate::str::contains("missing.jsonl"))
                .and(predicate::str::contains("into 10 records")),
        );
    kp().arg("merge")
        .arg(&bad)
        .arg("-o")
        .arg(dir.path().join("none.jsonl"))
        .assert()
        .code(1);
}

#[test]
fn build_config_errors_name_the_file_and_the_example_config_matches_its_schema() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("typo.toml");
    std::fs::write(
        &p,
        "output = \"o\"\n[[suite]]\npath = \"s\"\n[export]\nformat = [\"chat\"]\n",
    )
    .unwrap();
    kp().arg("build")
        .arg(&p)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("typo.toml").and(predicate::str::contains("format")));
    kp().args(["build", "--shard", "2/2"])
        .arg(&p)
        .assert()
        .code(2);

    let schema: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string("schemas/build-config.schema.json").unwrap())
            .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let example: toml::Value =
        toml::from_str(&std::fs::read_to_string("examples/build.toml").unwrap()).unwrap();
    let example = serde_json::to_value(example).unwrap();
    let errors: Vec<String> = v.iter_errors(&example).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    // The schema and the serde types agree on unknown keys.
    let mut bad = example.clone();
    bad["verify"]["seed"] = 3.into();
    assert!(!v.is_valid(&bad));
    let mut budget = example.clone();
    budget["synth"]["max_prompt_tokens"] = 16000.into();
    assert!(v.is_valid(&budget));
    budget["synth"]["max_prompt_tokens"] = 0.into();
    assert!(!v.is_valid(&budget));
}

/// The README's main job: `build` over the bundled fixture suites (as examples/build.toml).
/// Without a GPU or an endpoint it extracts, says what waits, writes the (empty) dataset and
/// exits 0; a rerun reuses the extraction.
#[test]
fn build_over_the_bundled_fixtures_runs_what_it_can() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = std::fs::canonicalize("fixtures").unwrap();
    let cfg = dir.path().join("fixtures.toml");
    std::fs::write(
        &cfg,
        format!(
            "output = \"out\"\n[[suite]]\npath = \"{0}/parboil\"\nkind = \"parboil\"\n[[suite]]\npath = \"{0}/rodinia\"\nkind = \"rodinia\"\n[extract]\ncompile = false\n",
            fixtures.display()
        ),
    )
    .unwrap();
    kp().arg("build")
        .arg(&cfg)
        .assert()
        .code(0)
        .stderr(predicate::str::contains(
            "pairs waiting: no LLM endpoint configured",
        ));
    let journal: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("out/journal.json")).unwrap(),
    )
    .unwrap();
    let counts = &journal["steps"]["extract"]["counts"];
    assert!(counts["pairs"].as_u64().unwrap() > 0, "{journal}");
    assert!(
        counts["pairs_without_slow"].as_u64().unwrap() > 0,
        "rodinia pairs wait for synth"
    );
    assert!(dir.path().join("out/dataset/README.md").is_file());
    // What a first run without a GPU shows: the pairs that wait for one, in every format,
    // each record unverified, the preview's card saying so first.
    let preview = dir.path().join("out/dataset/preview");
    if matches!(
        kernelpair::gpu::probe(),
        kernelpair::gpu::Probe::Ready { .. }
    ) {
        eprintln!("skipped: the preview (a GPU is visible here, so pairs verify)");
    } else {
        let card = std::fs::read_to_string(preview.join("README.md")).unwrap();
        assert!(card.starts_with("**PREVIEW: NOT VERIFIED.**"), "{card}");
        let mut rows = 0;
        for split in ["train", "test"] {
            let p = preview.join("chat").join(format!("{split}.jsonl"));
            for l in std::fs::read_to_string(p).unwrap_or_default().lines() {
                let v: serde_json::Value = serde_json::from_str(l).unwrap();
                assert_eq!(v["metadata"]["verified"], false, "{v}");
                rows += 1;
            }
        }
        assert!(rows > 0, "the preview has the pairs waiting for a GPU");
    }
    kp().arg("build")
        .arg(&cfg)
        .assert()
        .code(0)
        .stderr(predicate::str::is_match("extract +reused").unwrap());
}

/// A suite with a `[capture]` recipe on a machine that cannot capture (no GPU visible):
/// the build says capture did not run and why, and goes on with the other harnesses.
#[test]
fn capture_that_cannot_run_here_is_a_named_skip_and_the_build_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let fixtures = std::fs::canonicalize("fixtures/capture").unwrap();
    let ext = dir.path().join("ours.toml");
    // The generic description, renamed, with a recipe.
    let generic = std::fs::read_to_string("extractors/generic.toml").unwrap();
    std::fs::write(
        &ext,
        format!(
            "{}\n[capture]\nprograms = [\"pair\"]\nbuild = \"make\"\nrun = [\"./pair\"]\n",
            generic.replacen("name = \"generic\"", "name = \"ours\"", 1)
        ),
    )
    .unwrap();
    let cfg = dir.path().join("build.toml");
    std::fs::write(
        &cfg,
        format!(
            "output = \"out\"\n\n[[suite]]\npath = \"{}\"\nextractor = \"{}\"\n\n[extract]\ncompile = false\n",
            fixtures.display(),
            ext.display()
        ),
    )
    .unwrap();
    let out = kp()
        .args(["build", cfg.to_str().unwrap()])
        .env("CUDA_VISIBLE_DEVICES", "")
        .timeout(Duration::from_secs(300))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.lines()
            .any(|l| l.starts_with("capture ") && l.contains("skipped")),
        "{err}"
    );
    assert!(err.contains("capture: not run for ours ("), "{err}");
    assert!(!dir.path().join("out/captures").exists());
    // The step times close the table.
    assert!(err.contains("time: extract "), "{err}");
}

/// A stand-in for `kernelpair worker` (no GPU here): says hello, answers each job
/// `verified` after 0.4 s, and appends the job's pair id to $ORDER_LOG.
const SLOW_FAKE_WORKER: &str = r#"#!/bin/sh
echo '{"version":1,"type":"hello","device":{"name":"Fake GPU","sm_count":1,"compute_capability":"9.0","driver_version":"0","cuda_version":"13.0"},"props":{"sm_count":1,"max_threads_per_block":1024,"max_shared_per_block_optin":49152,"l2_bytes":1048576,"cc_major":9,"cc_minor":0},"arch":"sm_90","nvrtc_version":"13.0"}'
while read -r line; do
  case "$line" in *'"type":"shutdown"'*) exit 0 ;; esac
  id=$(printf '%s' "$line" | sed -n 's/.*"pair_id":"\([^"]*\)".*/\1/p')
  [ -n "$id" ] || continue
  echo "$id" >> "$ORDER_LOG"
  sleep 0.4
  echo "{\"version\":1,\"type\":\"result\",\"pair_id\":\"$id\",\"sticky\":false,\"verification\":{\"status\":\"verified\",\"reason\":\"fake\",\"tool_version\":\"fake\"}}"
done
"#;

/// Killed with SIGKILL in the middle of verify (chunks of 2, a worker that takes 0.4 s a
/// pair), the rerun gives the worker only the pairs that neither a finished chunk nor the
/// killed chunk's partial file holds, and ends byte-identical to an uninterrupted build.
#[test]
fn a_build_killed_mid_verify_redoes_no_finished_pair() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("fake.sh");
    std::fs::write(&fake, SLOW_FAKE_WORKER).unwrap();
    let fixtures = std::fs::canonicalize("fixtures").unwrap();
    let cfg = |name: &str| {
        let p = dir.path().join(format!("{name}.toml"));
        std::fs::write(
            &p,
            format!(
                "output = \"{name}\"\n\n[[suite]]\npath = \"{f}/parboil\"\nkind = \"parboil\"\n\n\
                 [[suite]]\npath = \"{f}/rodinia\"\nkind = \"rodinia\"\n\n[extract]\ncompile = false\n\n\
                 [verify]\nchunk = 2\n\n[harness]\ninfer = true\n\n[export]\nformats = [\"chat\"]\n",
                f = fixtures.display()
            ),
        )
        .unwrap();
        p
    };
    let build = |cfg: &Path, log: &Path| {
        let mut c = std::process::Command::new(assert_cmd::cargo::cargo_bin("kernelpair"));
        c.arg("build")
            .arg(cfg)
            .env(
                kernelpair::verify::TEST_WORKER_ENV,
                format!("sh {}", fake.display()),
            )
            .env("ORDER_LOG", log)
            .stderr(std::process::Stdio::null())
            .stdout(std::process::Stdio::null());
        c
    };
    // The pairs' own jobs: each inferred harness's self-check, verify's first phase, goes
    // to the worker too (as `<pair>:selfcheck`), and is stored apart (its own test).
    let lines = |p: &Path| {
        std::fs::read_to_string(p)
            .unwrap_or_default()
            .lines()
            .filter(|l| !l.ends_with(":selfcheck"))
            .map(String::from)
            .collect::<Vec<_>>()
    };
    // Both builds write to the same folder (records name their harness files by absolute
    // path): the uninterrupted one's output is moved aside to `ref` before the other runs.
    let ref_log = dir.path().join("ref.log");
    let killed = cfg("x");
    assert!(build(&killed, &ref_log).status().unwrap().success());
    std::fs::rename(dir.path().join("x"), dir.path().join("ref")).unwrap();
    let all = lines(&ref_log);
    assert!(all.len() >= 6, "too few pairs reach verify: {all:?}");

    let first_log = dir.path().join("first.log");
    let mut child = build(&killed, &first_log).spawn().unwrap();
    let chunks = dir.path().join("x/cache/verify");
    let start = Instant::now();
    // Kill once a chunk is finished and the next one has answered a pair (the worker was
    // given its second one).
    loop {
        let finished = std::fs::read_dir(&chunks)
            .map(|rd| rd.filter_map(|e| e.ok()).count())
            .unwrap_or(0);
        if finished >= 1 && lines(&first_log).len() > 3 {
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "build ended before the kill"
        );
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "verify never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    // The third pair's verdict reaches the partial file as the fourth is handed out;
    // the fourth takes 0.4 s, so 100 ms later the file has the one and not the other.
    std::thread::sleep(Duration::from_millis(100));
    child.kill().unwrap();
    child.wait().unwrap();
    let asked_first = lines(&first_log);
    // What the killed run kept: finished chunks' answers, and the in-flight chunk's
    // partial file (one verdict per line).
    let in_chunks: usize = std::fs::read_dir(&chunks)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| lines(&e.path()).len())
        .sum();
    let in_partial: usize = std::fs::read_dir(dir.path().join("x/cache/compile"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".partial.jsonl"))
        .map(|e| lines(&e.path()).len())
        .sum();
    let kept = in_chunks + in_partial;
    let second_log = dir.path().join("second.log");
    assert!(build(&killed, &second_log).status().unwrap().success());
    let asked_again = lines(&second_log);
    eprintln!(
        "pairs: {} in all; asked before the kill {}, kept {in_chunks} in finished chunks and {in_partial} in the killed chunk's partial file, asked after {}",
        all.len(),
        asked_first.len(),
        asked_again.len()
    );
    assert!(
        in_chunks >= 2 && in_partial >= 1,
        "nothing kept to resume from"
    );
    assert_eq!(
        asked_again.len(),
        all.len() - kept,
        "the rerun asked for {asked_again:?}"
    );
    assert_same_tree(&dir.path().join("ref"), &dir.path().join("x"));
}

/// `scripts/compare_builds.py` (the device's `kill -9` check, benches/kill_steps.sh): two
/// builds with the same statuses and dataset rows compare equal even when measured figures
/// differ; a changed status or a missing row is named and fails.
#[test]
fn compare_builds_names_a_changed_status_and_a_missing_row() {
    let dir = tempfile::tempdir().unwrap();
    let pair = |id: &str, status: &str, speedup: f64| {
        format!(
            r#"{{"version":3,"type":"pair","data":{{"id":"{id}","verification":{{"status":"{status}","speedup":{{"median":{speedup}}}}}}}}}"#
        )
    };
    let row = |id: &str, speedup: f64| {
        format!(r#"{{"messages":[],"metadata":{{"id":"{id}","speedup":{{"median":{speedup}}}}}}}"#)
    };
    let write = |name: &str, pairs: &[String], rows: &[String]| {
        let d = dir.path().join(name);
        std::fs::create_dir_all(d.join("dataset/chat")).unwrap();
        std::fs::write(d.join("verified.jsonl"), pairs.join("\n") + "\n").unwrap();
        std::fs::write(d.join("dataset/chat/train.jsonl"), rows.join("\n") + "\n").unwrap();
        d
    };
    let compare = |a: &Path, b: &Path| {
        let out = std::process::Command::new("python3")
            .arg("scripts/compare_builds.py")
            .arg(a)
            .arg(b)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).to_string(),
        )
    };
    let reference = write(
        "ref",
        &[pair("p1", "verified", 2.0), pair("p2", "not_faster", 1.0)],
        &[row("p1", 2.0)],
    );
    // Another machine: other speedups, same verdicts and rows.
    let same = write(
        "same",
        &[pair("p1", "verified", 2.3), pair("p2", "not_faster", 0.9)],
        &[row("p1", 2.3)],
    );
    let (code, text) = compare(&reference, &same);
    assert_eq!(code, Some(0), "{text}");
    assert!(text.contains("same status 2"), "{text}");
    assert!(text.contains("in both 1"), "{text}");
    let other = write(
        "other",
        &[pair("p1", "mismatch", 0.0), pair("p2", "not_faster", 1.0)],
        &[],
    );
    let (code, text) = compare(&reference, &other);
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("differs: p1: verified vs mismatch"), "{text}");
    assert!(
        text.contains("row in one only: chat/train.jsonl p1 (reference)"),
        "{text}"
    );
}
