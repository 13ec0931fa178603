//! `harness selfcheck --sanitizer`: on the CPU with a stand-in worker and a stand-in
//! compute-sanitizer (the same protocol as the real ones), and on the GPU (`#[ignore]`)
//! with a harness whose buffer is too short, which only memcheck can see.

use kernelpair::record::Record;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    common::fixture("infer")
}

mod common;
use common::kp;

/// Extract fixtures/infer and infer its harnesses; returns (units, inferred dir, ids by kernel).
fn extract_and_infer(dir: &Path) -> (PathBuf, PathBuf, Vec<(String, String)>) {
    let (units, ids) = common::extract_units(&fixture(), dir);
    let inferred = dir.join("inferred");
    common::infer_into(&units, &fixture(), &inferred);
    (units, inferred, ids)
}

fn id_of<'a>(ids: &'a [(String, String)], kernel: &str) -> &'a str {
    &ids.iter().find(|(k, _)| k == kernel).expect("pair").1
}

fn reports(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A stand-in for `kernelpair worker`: every self-check job passes (an empty evidence has
/// no seed-independent output); a check-only job for the pair `$OOB_PAIR` run under the
/// stand-in sanitizer leaves a memcheck report of a read past its buffer and crashes, as a
/// kernel memcheck stops does.
const WORKER: &str = r#"#!/bin/sh
echo '{"version":1,"type":"hello","device":{"name":"Fake GPU","sm_count":1,"compute_capability":"9.0","driver_version":"0","cuda_version":"13.0"},"props":{"sm_count":1,"max_threads_per_block":1024,"max_shared_per_block_optin":49152,"l2_bytes":1048576,"cc_major":9,"cc_minor":0},"arch":"sm_90","nvrtc_version":"13.0"}'
answer() {
  echo "{\"version\":1,\"type\":\"result\",\"pair_id\":\"$id\",\"sticky\":$3,\"verification\":{\"status\":\"$1\",\"reason\":\"$2\",\"tool_version\":\"fake\"}}"
}
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"pair_id":"\([^"]*\)".*/\1/p')
  case "$line" in *'"type":"shutdown"'*) exit 0 ;; esac
  [ -n "$JOBS" ] && echo "$id" >> "$JOBS"
  case "$line" in
    *'"check_only":true'*)
      if [ "$FAKE_SANITIZER_TOOL" = memcheck ] && [ "$id" = "$OOB_PAIR" ]; then
        cat > "$FAKE_SANITIZER_BODY" <<'REPORT'
========= Invalid __global__ read of size 4 bytes
=========     at gather_scale+0x90
=========     by thread (7,0,0) in block (12,0,0)
=========     Access to 0x7f0000030d48 is out of bounds
=========     and is 8 bytes after the nearest allocation at 0x7f0000000000 of size 100,000 bytes
=========
REPORT
        answer crashed "fast kernel gather_scale: CUDA_ERROR_LAUNCH_FAILED" true
        exit 1
      fi
      answer verified "check-only run" false ;;
    *) answer verified "self-check run" false ;;
  esac
done
"#;

/// A stand-in for compute-sanitizer: runs the command after its options and writes the
/// report the worker left to `--log-file`, with a summary, exiting with
/// `--error-exitcode` when there were errors.
const SANITIZER: &str = r#"#!/bin/sh
tool=memcheck; log=; code=1
while [ $# -gt 0 ]; do
  case "$1" in
    --tool) tool=$2; shift 2 ;;
    --log-file) log=$2; shift 2 ;;
    --error-exitcode) code=$2; shift 2 ;;
    --*) shift 2 ;;
    *) break ;;
  esac
done
echo "$tool $*" >> "$FAKE_SANITIZER_CALLS"
export FAKE_SANITIZER_TOOL=$tool FAKE_SANITIZER_BODY="$log.body"
"$@"
rc=$?
n=0
[ -f "$log.body" ] && n=$(grep -c '^========= Invalid' "$log.body")
{
  echo "========= COMPUTE-SANITIZER"
  [ -f "$log.body" ] && cat "$log.body"
  echo "========= ERROR SUMMARY: $n errors"
} > "$log"
rm -f "$log.body"
[ "$n" -gt 0 ] && exit "$code"
exit $rc
"#;

#[test]
fn selfcheck_sanitizer_fails_an_out_of_bounds_read_with_the_sanitizers_line() {
    use std::os::unix::fs::PermissionsExt;
    let t = tempfile::tempdir().unwrap();
    let (units, inferred, ids) = extract_and_infer(t.path());
    let worker = t.path().join("worker.sh");
    std::fs::write(&worker, WORKER).unwrap();
    let san = t.path().join("compute-sanitizer");
    std::fs::write(&san, SANITIZER).unwrap();
    std::fs::set_permissions(&san, std::fs::Permissions::from_mode(0o755)).unwrap();
    let calls = t.path().join("calls.txt");
    let report = t.path().join("report.jsonl");
    let records = t.path().join("records.jsonl");
    let oob = id_of(&ids, "gather_scale");
    let run = |extra: &[&str]| {
        let mut c = kp();
        c.args(["harness", "selfcheck"])
            .arg(&units)
            .arg("--inferred-dir")
            .arg(&inferred)
            .args(["--gpus", "1", "--timeout-s", "5", "--worker-cmd"])
            .arg(format!("sh {}", worker.display()))
            .arg("--out")
            .arg(&report)
            .arg("--records-out")
            .arg(&records)
            .env("OOB_PAIR", oob)
            .env("FAKE_SANITIZER_CALLS", &calls)
            .args(extra);
        c
    };
    // Without --sanitizer both harnesses pass: the plain self-check cannot see the read.
    run(&[]).assert().success();
    assert!(reports(&report).iter().all(|r| r["pass"] == true));
    assert!(!calls.exists(), "no sanitizer without --sanitizer");

    let a = run(&["--sanitizer", "memcheck", "--compute-sanitizer"])
        .arg(&san)
        .assert()
        .code(kernelpair::exit::PARTIAL as i32);
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    assert!(
        stdout.contains("gather/gather_scale [inferred]: FAIL memcheck (out-of-bounds access"),
        "{stdout}"
    );
    assert!(
        stdout.contains("gather/histogram [inferred]: PASS (7 checks"),
        "{stdout}"
    );
    let reps = reports(&report);
    let bad = reps.iter().find(|r| r["pair_id"] == oob).unwrap();
    assert_eq!(bad["pass"], false);
    let mem = &bad["checks"][6];
    assert_eq!(mem["name"], "memcheck");
    assert_eq!(mem["result"], "fail");
    let line = mem["detail"].as_str().unwrap();
    assert!(
        line.contains("compute-sanitizer memcheck reported 1 error(s) in kernel gather_scale: Invalid __global__ read of size 4 bytes"),
        "{line}"
    );
    assert!(line.contains("is out of bounds"), "{line}");
    // The six checks before it passed: the sanitizer is what found it.
    assert!(bad["checks"].as_array().unwrap()[..6]
        .iter()
        .all(|c| c["result"] == "pass"));
    let good = reps.iter().find(|r| r["pair_id"] != oob).unwrap();
    assert_eq!(good["pass"], true);
    assert_eq!(good["checks"][6]["result"], "pass");
    assert_eq!(good["checks"][6]["detail"], "ERROR SUMMARY: 0 errors");
    // One sanitized worker per harness.
    let c = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(c.lines().count(), 2, "{c}");
    assert!(c.lines().all(|l| l.starts_with("memcheck sh ")), "{c}");
    // The records carry the failure for verify and build.
    let failure = kernelpair::jsonl::read_records(&records)
        .unwrap()
        .into_iter()
        .find_map(|r| match r {
            Record::Pair(p) if p.id == oob => p.harness_origin,
            _ => None,
        })
        .unwrap();
    assert_eq!(failure.selfcheck_pass, Some(false));
    assert!(failure
        .selfcheck_failure
        .unwrap()
        .starts_with("memcheck: compute-sanitizer memcheck"),);

    // compute-sanitizer missing: one line, the check is not run, the plain checks decide.
    let a = run(&["--sanitizer", "memcheck", "--compute-sanitizer"])
        .arg(t.path().join("nowhere/compute-sanitizer"))
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(
        stderr.contains("compute-sanitizer not found (looked in ")
            && stderr.contains("--sanitizer skipped"),
        "{stderr}"
    );
    for r in reports(&report) {
        assert_eq!(r["checks"][6]["result"], "not_run", "{r}");
        assert_eq!(r["pass"], true, "{r}");
    }
}

/// On the GPU: the gather harness with `x` half as long as the indices reach. The plain
/// self-check reads past the buffer without noticing; memcheck reports the read.
#[test]
#[ignore = "needs a GPU and compute-sanitizer; run on the device with -- --ignored"]
fn gpu_selfcheck_memcheck_catches_a_too_short_buffer() {
    let t = tempfile::tempdir().unwrap();
    let (units, inferred, ids) = extract_and_infer(t.path());
    let id = id_of(&ids, "gather_scale");
    let f = inferred.join(format!("{id}.toml"));
    let text = std::fs::read_to_string(&f).unwrap();
    let short = text.replacen("len = \"m\"", "len = \"m / 2\"", 1);
    assert_ne!(short, text, "the fixture harness gives x `len = \"m\"`");
    std::fs::write(&f, short).unwrap();
    let report = t.path().join("report.jsonl");
    let a = kp()
        .args(["harness", "selfcheck"])
        .arg(&units)
        .arg("--inferred-dir")
        .arg(&inferred)
        .args(["--pair", id, "--sanitizer", "memcheck", "--out"])
        .arg(&report)
        .assert()
        .code(kernelpair::exit::PARTIAL as i32);
    let out = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    let r = &reports(&report)[0];
    assert_eq!(r["pass"], false, "{out}\n{r}");
    let mem = r["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "memcheck")
        .unwrap_or_else(|| panic!("no memcheck check: {r}"));
    assert_eq!(mem["result"], "fail", "{r}");
    let line = mem["detail"].as_str().unwrap();
    assert!(
        line.contains("Invalid __global__ read") && line.contains("gather_scale"),
        "{line}"
    );
}

/// A self-check killed mid-run keeps each report in `<out>.partial` as it comes; the rerun
/// reuses those made for the same inputs (pair, harness bytes, options) and checks only the
/// rest: nothing when nothing changed, the one pair whose harness changed when one did.
#[test]
fn a_rerun_after_a_kill_reuses_the_partial_reports_for_the_same_inputs() {
    let t = tempfile::tempdir().unwrap();
    let (units, inferred, _) = extract_and_infer(t.path());
    let worker = t.path().join("worker.sh");
    std::fs::write(&worker, WORKER).unwrap();
    let report = t.path().join("report.jsonl");
    let partial = t.path().join("report.jsonl.partial");
    let jobs = t.path().join("jobs.txt");
    let run = || {
        let out = kp()
            .args(["harness", "selfcheck"])
            .arg(&units)
            .arg("--inferred-dir")
            .arg(&inferred)
            .args(["--gpus", "1", "--timeout-s", "5", "--worker-cmd"])
            .arg(format!("sh {}", worker.display()))
            .arg("--out")
            .arg(&report)
            .env("JOBS", &jobs)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let count = || {
        std::fs::read_to_string(&jobs)
            .unwrap_or_default()
            .lines()
            .count()
    };
    run();
    let first = count();
    assert!(first >= 2, "the stand-in worker ran the pairs: {first}");
    assert!(!partial.exists(), "a complete run leaves no partial file");
    let done = reports(&report);
    // As a kill leaves it: the reports are in the partial file, no report yet.
    std::fs::rename(&report, &partial).unwrap();
    std::fs::remove_file(&jobs).unwrap();
    let err = run();
    assert_eq!(count(), 0, "nothing checked again: {err}");
    assert!(err.contains(&format!("{first} report(s) reused")), "{err}");
    assert_eq!(reports(&report).len(), done.len());
    // One harness changes: only its pair is checked again.
    std::fs::rename(&report, &partial).unwrap();
    let h = std::fs::read_dir(&inferred)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .find(|p| {
            let id = p.file_stem().unwrap().to_string_lossy().into_owned();
            done.iter()
                .any(|r| r["pair_id"] == id.as_str() && r["inputs"].is_string())
        })
        .expect("a harness the worker ran");
    let mut text = std::fs::read_to_string(&h).unwrap();
    text.push_str("\n# reviewed\n");
    std::fs::write(&h, text).unwrap();
    run();
    assert_eq!(count(), 1, "only the changed harness's pair");
}
