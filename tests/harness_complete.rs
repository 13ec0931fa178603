//! `harness complete` with the self-check in the loop, against a scripted loopback endpoint
//! and a stand-in worker (the injectable checker: `--worker-cmd`): a completed harness that
//! fails its self-check goes back with the failed check and is repaired; a rerun sends
//! nothing; the repair turns are bounded; the key is in no written file.

use kernelpair::record::Record;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/infer")
}

mod common;
use common::{all_text, serve};
use common::{harness_check, kp};

/// A stand-in worker: a harness run with a size of 77777 leaves most of the output
/// unwritten (as a grid too small for it would); every other run passes.
const WORKER: &str = r#"#!/bin/sh
echo '{"version":1,"type":"hello","device":{"name":"Fake GPU","sm_count":1,"compute_capability":"9.0","driver_version":"0","cuda_version":"13.0"},"props":{"sm_count":1,"max_threads_per_block":1024,"max_shared_per_block_optin":49152,"l2_bytes":1048576,"cc_major":9,"cc_minor":0},"arch":"sm_90","nvrtc_version":"13.0"}'
answer() {
  echo "{\"version\":1,\"type\":\"result\",\"pair_id\":\"$id\",\"sticky\":false,\"verification\":{\"status\":\"$1\",\"reason\":\"$2\",\"tool_version\":\"fake\"}}"
}
while read -r line; do
  id=$(printf '%s' "$line" | sed -n 's/.*"pair_id":"\([^"]*\)".*/\1/p')
  echo "$id" >> "$WORKER_LOG"
  case "$line" in
    *'"type":"shutdown"'*) exit 0 ;;
    *77777*) answer unwritten "size set default, seed 0: y: 12241 of 77777 elements never written" ;;
    *) answer verified "self-check run" ;;
  esac
done
"#;

#[test]
fn a_completion_that_fails_its_selfcheck_is_repaired_and_reruns_send_nothing() {
    let t = tempfile::tempdir().unwrap();
    // The gather tree without its run script: n (and m) are TODOs.
    let root = t.path().join("tree");
    let bench = root.join("cuda/gather");
    std::fs::create_dir_all(&bench).unwrap();
    std::fs::copy(
        fixture().join("cuda/gather/gather.cu"),
        bench.join("gather.cu"),
    )
    .unwrap();
    let units = t.path().join("units.jsonl");
    kp().arg("extract")
        .arg(&root)
        .arg("-o")
        .arg(&units)
        .arg("--no-compile")
        .assert()
        .success();
    let inferred = t.path().join("inferred");
    kp().args(["harness", "infer"])
        .arg(&units)
        .arg("-o")
        .arg(&inferred)
        .arg("--root")
        .arg(&root)
        .assert()
        .success();
    let ids: Vec<(String, String)> = kernelpair::jsonl::read_records(&units)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Record::Pair(p) => Some((p.kernel.clone(), p.id.clone())),
            _ => None,
        })
        .collect();
    let id_of = |k: &str| ids.iter().find(|(x, _)| x == k).unwrap().1.clone();
    let (scale, hist) = (id_of("gather_scale"), id_of("histogram"));
    let draft = |id: &str| std::fs::read_to_string(inferred.join(format!("{id}.toml"))).unwrap();
    assert!(draft(&scale).contains("n = \"TODO\""));
    let fill = |d: &str, n: &str| -> String {
        let body: Vec<String> = d
            .lines()
            .map(|l| {
                if l.starts_with("n = \"TODO\"") {
                    format!("n = {n}")
                } else if l.starts_with("m = \"TODO\"") {
                    "m = 500".to_string()
                } else {
                    l.to_string()
                }
            })
            .collect();
        format!("```toml\n{}\n```\n", body.join("\n"))
    };
    let (ds, dh) = (draft(&scale), draft(&hist));
    // gather_scale: first a harness that checks but fails its self-check (n = 77777),
    // then the repair (n = 1000). histogram: right at once.
    let (url, seen) = serve(move |req, _| {
        let first = req.body["messages"][1]["content"].as_str().unwrap_or("");
        let turn = req.body["messages"].as_array().map_or(0, |m| m.len());
        if first.contains("The kernel `histogram`") {
            fill(&dh, "1000")
        } else if turn == 2 {
            fill(&ds, "77777")
        } else {
            fill(&ds, "1000")
        }
    });
    let llm = t.path().join("llm.toml");
    std::fs::write(
        &llm,
        format!("base_url = \"{url}\"\nmodel = \"scripted\"\napi_key_env = \"KP_COMPLETE_TEST_KEY\"\nmax_retries = 0\n"),
    )
    .unwrap();
    let worker = t.path().join("worker.sh");
    std::fs::write(&worker, WORKER).unwrap();
    let worker_log = t.path().join("worker.log");
    let cache = t.path().join("cache");
    let run = |out: &Path, extra: &[&str]| {
        let mut c = kp();
        c.args(["harness", "complete"])
            .arg(&units)
            .arg("--inferred-dir")
            .arg(&inferred)
            .arg("-o")
            .arg(out)
            .arg("--llm")
            .arg(&llm)
            .arg("--cache")
            .arg(&cache)
            .arg("--root")
            .arg(&root)
            .args(["--gpus", "1", "--worker-cmd"])
            .arg(format!("sh {}", worker.display()))
            .args(extra)
            .env("KP_COMPLETE_TEST_KEY", "sk-complete-secret-77")
            .env("WORKER_LOG", &worker_log);
        c
    };
    let out = t.path().join("completed");
    let a = run(&out, &[]).assert().success();
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    assert!(
        stdout.contains("gather/gather_scale: completed (2 answer(s), self-check passed)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("gather/histogram: completed (1 answer(s), self-check passed)"),
        "{stdout}"
    );
    let s = seen.lock().unwrap().clone();
    assert_eq!(s.len(), 3);
    assert!(s
        .iter()
        .all(|r| r.auth.as_deref() == Some("Bearer sk-complete-secret-77")));
    // The repair turn carries the failed check, the worker's reason and what it means.
    let repair = s
        .iter()
        .find(|r| r.body["messages"].as_array().unwrap().len() == 4)
        .unwrap();
    let text = repair.body["messages"][3]["content"].as_str().unwrap();
    for want in [
        "failed its self-check",
        "`writes_every_output`",
        "y: 12241 of 77777 elements never written",
        "does not cover the whole output",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    assert!(!text.contains(&t.path().display().to_string()), "{text}");
    let f = out.join(format!("{scale}.toml"));
    let done = std::fs::read_to_string(&f).unwrap();
    assert!(
        done.contains("# origin: llm\n# selfcheck: pass\n"),
        "{done}"
    );
    assert!(done.contains("\nn = 1000\n"), "{done}");
    harness_check(&f, &units, &scale).success();
    // Three self-checks ran: gather_scale twice, histogram once.
    let log = std::fs::read_to_string(&worker_log).unwrap();
    let jobs = |id: &str| log.lines().filter(|l| *l == id).count();
    assert_eq!((jobs(&scale), jobs(&hist)), (2, 1), "{log}");

    // A rerun sends nothing and writes the same files.
    let before = done.clone();
    let a = run(&out, &[]).assert().success();
    assert_eq!(seen.lock().unwrap().len(), 3);
    assert!(String::from_utf8_lossy(&a.get_output().stderr).contains("0 request(s) sent"));
    assert_eq!(std::fs::read_to_string(&f).unwrap(), before);

    // Bounded: with no repair turn the failing first answer (from the cache) is final.
    let out0 = t.path().join("no-repairs");
    let a = run(&out0, &["--max-repairs", "0"])
        .assert()
        .code(kernelpair::exit::PARTIAL as i32);
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    assert!(
        stdout.contains("gather/gather_scale: not completed after 1 answer(s): rejected after 1 answer(s): self-check failed: writes_every_output"),
        "{stdout}"
    );
    assert!(!out0.join(format!("{scale}.toml")).exists());
    // Without the self-check the first answer would have been taken.
    let out_never = t.path().join("never");
    let a = run(&out_never, &["--selfcheck", "never"])
        .assert()
        .success();
    assert!(String::from_utf8_lossy(&a.get_output().stdout)
        .contains("gather/gather_scale: completed (1 answer(s))"));
    let unchecked = std::fs::read_to_string(out_never.join(format!("{scale}.toml"))).unwrap();
    assert!(unchecked.contains("# selfcheck: not run") && unchecked.contains("n = 77777"));
    assert_eq!(
        seen.lock().unwrap().len(),
        3,
        "every later run came from the cache"
    );

    // The key is in no written file.
    for d in [&out, &out0, &out_never, &cache, &inferred] {
        assert!(
            !all_text(d).contains("sk-complete-secret-77"),
            "{}",
            d.display()
        );
    }
}
