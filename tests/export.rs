//! `kernelpair export` on the fixture pairs (tests/data/pairs.jsonl, our own tiny kernels):
//! snapshots of every format and the card, schema checks, options, determinism, bad input.

use assert_cmd::Command;
use predicates::prelude::*;
use serde_json::Value;
use std::path::{Path, PathBuf};

const PAIRS: &str = "tests/data/pairs.jsonl";
const FORMATS: [&str; 4] = ["chat", "prompt-completion", "preference", "sharegpt"];

fn kp() -> Command {
    Command::cargo_bin("kernelpair").unwrap()
}

fn export(out: &Path, extra: &[&str]) -> assert_cmd::assert::Assert {
    kp().args(["export", "--in", PAIRS, "--out"])
        .arg(out)
        .args(extra)
        .assert()
}

fn lines(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn all_rows(out: &Path, format: &str) -> Vec<Value> {
    let mut v = lines(&out.join(format).join("train.jsonl"));
    v.extend(lines(&out.join(format).join("test.jsonl")));
    v
}

fn ids(rows: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = rows
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

fn benchmarks(rows: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = rows
        .iter()
        .map(|r| r["metadata"]["benchmark"].as_str().unwrap().to_string())
        .collect();
    v.sort();
    v
}

fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut v: Vec<_> = walk(dir)
        .into_iter()
        .map(|p| {
            (
                p.strip_prefix(dir).unwrap().to_path_buf(),
                std::fs::read(&p).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn every_format_matches_its_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    export(dir.path(), &[]).success();
    for f in FORMATS {
        for split in ["train", "test"] {
            let text =
                std::fs::read_to_string(dir.path().join(f).join(format!("{split}.jsonl"))).unwrap();
            // One pretty JSON value per line keeps snapshot diffs readable.
            let pretty: Vec<String> = text
                .lines()
                .map(|l| {
                    serde_json::to_string_pretty(&serde_json::from_str::<Value>(l).unwrap())
                        .unwrap()
                })
                .collect();
            insta::assert_snapshot!(format!("{f}_{split}"), pretty.join("\n"));
        }
    }
    insta::assert_snapshot!(
        "card",
        std::fs::read_to_string(dir.path().join("README.md")).unwrap()
    );
    insta::assert_snapshot!(
        "speedup_svg",
        std::fs::read_to_string(dir.path().join("speedup.svg")).unwrap()
    );
    insta::assert_snapshot!(
        "filter_report",
        std::fs::read_to_string(dir.path().join("filter_report.json")).unwrap()
    );
}

#[test]
fn every_line_of_every_format_matches_its_json_schema() {
    let dir = tempfile::tempdir().unwrap();
    let all = [
        "--include-unverified",
        "--with-speedup",
        "--near-dup-threshold",
        "1",
    ];
    export(dir.path(), &all).success();
    for f in FORMATS {
        let schema: Value = serde_json::from_str(
            &std::fs::read_to_string(format!("schemas/export-{f}.schema.json")).unwrap(),
        )
        .unwrap();
        let v = jsonschema::validator_for(&schema).unwrap();
        let rows = all_rows(dir.path(), f);
        assert!(rows.len() >= 10, "{f}: {}", rows.len());
        for row in &rows {
            let errors: Vec<String> = v.iter_errors(row).map(|e| e.to_string()).collect();
            assert!(errors.is_empty(), "{f} {}: {errors:?}", row["id"]);
        }
        // The schema is not vacuous: a wrong role and a missing metadata field are rejected.
        let mut bad = rows[0].clone();
        bad["metadata"].as_object_mut().unwrap().remove("tokens");
        assert!(!v.is_valid(&bad), "{f}: missing metadata.tokens accepted");
    }
    let report_schema: Value = serde_json::from_str(
        &std::fs::read_to_string("schemas/export-filter-report.schema.json").unwrap(),
    )
    .unwrap();
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("filter_report.json")).unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&report_schema).unwrap();
    let errors: Vec<String> = v.iter_errors(&report).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "filter_report: {errors:?}");
    let chat_schema: Value =
        serde_json::from_str(&std::fs::read_to_string("schemas/export-chat.schema.json").unwrap())
            .unwrap();
    let mut bad = all_rows(dir.path(), "chat")[0].clone();
    bad["messages"][0]["role"] = "assistant".into();
    assert!(!jsonschema::is_valid(&chat_schema, &bad));
}

#[test]
fn by_default_only_verified_distinct_short_pairs_are_exported_in_kernelcompare_shape() {
    let dir = tempfile::tempdir().unwrap();
    export(dir.path(), &[]).success();
    let rows = all_rows(dir.path(), "chat");
    // 10 verified pairs − 1 exact duplicate − 1 near duplicate − 1 over the 16,384-token default cap.
    assert_eq!(rows.len(), 7);
    assert!(rows.iter().all(|r| r["metadata"]["verified"] == true));
    assert_eq!(
        benchmarks(&rows),
        [
            "histogram",
            "matmul",
            "reduce-copy",
            "saxpy2",
            "scale",
            "stencil",
            "transpose"
        ]
    );
    let reduce = rows
        .iter()
        .find(|r| r["metadata"]["benchmark"] == "reduce-copy")
        .unwrap();
    let m = &reduce["messages"];
    assert!(m[0]["content"]
        .as_str()
        .unwrap()
        .starts_with("You are a CUDA optimization expert"));
    let user = m[1]["content"].as_str().unwrap();
    assert!(
        user.starts_with(
            "Optimize this CUDA kernel from the reduce-copy benchmark (benchmarks/reduce-copy/src/cuda_base/kernel.cu):\n\n**Current Kernel (Unoptimized)**\n```cuda\n__global__ void reduce_sum("
        ),
        "{user}"
    );
    assert!(
        user.ends_with("atomicAdd(out, in[i]);\n    }\n}\n```"),
        "{user}"
    );
    let answer = m[2]["content"].as_str().unwrap();
    assert!(answer.starts_with("Here's the optimized CUDA kernel:\n\n```cuda\n"));
    assert!(answer.contains("__shfl_down_sync") && !answer.contains("faster"));
    // Speedups per size set come from the evidence.
    let sets: Vec<&str> = reduce["metadata"]["speedups"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["size_set"].as_str().unwrap())
        .collect();
    assert_eq!(sets, ["small", "large"]);
    // The description section appears only where a pair has one.
    let t = rows
        .iter()
        .find(|r| r["metadata"]["kernel"] == "transpose")
        .unwrap();
    assert!(t["messages"][1]["content"]
        .as_str()
        .unwrap()
        .contains("**Description**\nTransposes a w x h matrix.\n\n**Current Kernel"));
}

#[test]
fn with_speedup_the_answer_states_speedup_device_and_techniques() {
    let dir = tempfile::tempdir().unwrap();
    export(dir.path(), &["--with-speedup"]).success();
    let rows = all_rows(dir.path(), "chat");
    let t = rows
        .iter()
        .find(|r| r["metadata"]["benchmark"] == "transpose")
        .unwrap();
    assert_eq!(
        t["messages"][2]["content"].as_str().unwrap().lines().nth(2).unwrap(),
        "It runs 3.4× faster (95% CI 3.2–3.6×) on an NVIDIA H100 80GB HBM3 at the `large` problem size, using shared memory and coalescing."
    );
    // The rejected answer of the preference format never claims a speedup.
    for r in all_rows(dir.path(), "preference") {
        let rejected = r["rejected"][0]["content"].as_str().unwrap();
        assert!(!rejected.contains("faster"), "{rejected}");
        assert_ne!(rejected, r["chosen"][0]["content"].as_str().unwrap());
    }
}

#[test]
fn unverified_pairs_only_with_the_flag_and_marked_identical_never() {
    let dir = tempfile::tempdir().unwrap();
    // Exact duplicates only, so that the unverified near-copies of verified pairs stay.
    export(
        dir.path(),
        &["--include-unverified", "--near-dup-threshold", "1"],
    )
    .success();
    let rows = all_rows(dir.path(), "chat");
    let unverified: Vec<&Value> = rows
        .iter()
        .filter(|r| r["metadata"]["verified"] == false)
        .collect();
    let mut statuses: Vec<&str> = unverified
        .iter()
        .map(|r| r["metadata"]["status"].as_str().unwrap())
        .collect();
    statuses.sort();
    assert_eq!(statuses, ["mismatch", "no_gpu", "not_faster", "unverified"]);
    assert!(rows.iter().all(|r| r["metadata"]["benchmark"] != "copy"));
    assert!(rows.iter().all(|r| r["metadata"]["benchmark"] != "pending"));
    let card = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    assert!(card.contains("**4 samples are not verified**"), "{card}");
}

#[test]
fn licence_exclusion_holdout_and_token_limit() {
    let dir = tempfile::tempdir().unwrap();
    export(
        dir.path(),
        &[
            "--exclude-non-redistributable",
            "--holdout",
            "matmul,extra/histogram",
            "--max-tokens",
            "350",
        ],
    )
    .success();
    let rows = all_rows(dir.path(), "sharegpt");
    assert!(rows.iter().all(|r| r["metadata"]["benchmark"] != "scale"));
    let test = lines(&dir.path().join("sharegpt/test.jsonl"));
    // matmul (488 tokens) is over the limit; histogram is held out.
    assert_eq!(benchmarks(&test), ["histogram"]);
    assert!(rows.iter().all(|r| r["metadata"]["benchmark"] != "matmul"));
    assert!(rows
        .iter()
        .all(|r| r["metadata"]["tokens"].as_u64().unwrap() <= 350));
    let report: Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("filter_report.json")).unwrap(),
    )
    .unwrap();
    assert!(
        report["too_long"].as_array().unwrap().len() >= 2,
        "{report}"
    );
    assert_eq!(
        report["excluded"]["licence does not allow redistribution (or unknown)"],
        1
    );
    let card = std::fs::read_to_string(dir.path().join("README.md")).unwrap();
    assert!(card.contains("were left out (`--exclude-non-redistributable`)"));
    assert!(!card.contains("LicenseRef-proprietary"));
    // With only MIT sources left, the card's licence is specific.
    assert!(card.contains("\nlicense: mit\n"), "{card}");
}

#[test]
fn split_is_grouped_by_benchmark_and_seeded() {
    let a = tempfile::tempdir().unwrap();
    export(a.path(), &["--split", "0.5"]).success();
    let train = benchmarks(&lines(&a.path().join("chat/train.jsonl")));
    let test = benchmarks(&lines(&a.path().join("chat/test.jsonl")));
    assert!(train.iter().all(|b| !test.contains(b)));
    assert!(!train.is_empty() && !test.is_empty());
    let b = tempfile::tempdir().unwrap();
    let mut seen = std::collections::BTreeSet::new();
    for seed in ["1", "2", "3", "4"] {
        export(b.path(), &["--split", "0.5", "--seed", seed]).success();
        seen.insert(benchmarks(&lines(&b.path().join("chat/test.jsonl"))));
    }
    assert!(seen.len() > 1, "seeds change which benchmarks are tested");
    // All in train: no test files (and a stale one is removed), the card lists train only.
    export(a.path(), &["--split", "1.0", "--format", "chat"]).success();
    assert!(!a.path().join("chat/test.jsonl").exists());
    assert!(!a.path().join("sharegpt/train.jsonl").exists());
    let card = std::fs::read_to_string(a.path().join("README.md")).unwrap();
    assert!(card.contains("path: chat/train.jsonl") && !card.contains("split: test"));
}

#[test]
fn output_is_byte_identical_whatever_the_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(PAIRS).unwrap();
    // An older, unverified copy of the first pair (same id) must lose in either order.
    let stale = text
        .lines()
        .next()
        .unwrap()
        .replace("\"status\":\"verified\"", "\"status\":\"no_gpu\"");
    let mut reversed: Vec<String> = text.lines().map(String::from).collect();
    reversed.push(stale.clone());
    reversed.reverse();
    let with_stale = dir.path().join("stale.jsonl");
    std::fs::write(&with_stale, format!("{stale}\n{text}")).unwrap();
    let c = dir.path().join("c");
    kp().args(["export", "--in"])
        .arg(&with_stale)
        .arg("--out")
        .arg(&c)
        .assert()
        .success();
    let rev = dir.path().join("rev.jsonl");
    std::fs::write(&rev, reversed.join("\n") + "\n").unwrap();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    export(&a, &[]).success();
    kp().args(["export", "--in"])
        .arg(&rev)
        .arg("--out")
        .arg(&b)
        .assert()
        .success();
    assert_eq!(files(&a), files(&b));
    assert_eq!(files(&a), files(&c));
}

#[test]
fn custom_templates_replace_the_builtin_ones_and_typos_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("t");
    std::fs::create_dir(&t).unwrap();
    std::fs::write(
        t.join("user.md"),
        "Speed up `{{kernel}}` ({{suite}}):\n{{slow_source}}\n",
    )
    .unwrap();
    let out = dir.path().join("o");
    export(&out, &["--templates", t.to_str().unwrap()]).success();
    let rows = all_rows(&out, "chat");
    let user = rows[0]["messages"][1]["content"].as_str().unwrap();
    assert!(user.starts_with("Speed up `"), "{user}");
    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(card.contains("Custom templates replaced: user.md."));

    std::fs::write(t.join("assistant.md"), "{{fast_sorce}}").unwrap();
    export(&out, &["--templates", t.to_str().unwrap()])
        .code(1)
        .stderr(
            predicates::str::contains("assistant.md").and(predicates::str::contains("fast_sorce")),
        );
}

#[test]
fn bad_inputs_fail_clearly() {
    let dir = tempfile::tempdir().unwrap();
    kp().args(["export", "--in", "no/such.jsonl", "--out"])
        .arg(dir.path())
        .assert()
        .code(1)
        .stderr(predicates::str::contains("no/such.jsonl"));
    export(dir.path(), &["--split", "1.5"])
        .code(1)
        .stderr(predicates::str::contains("split 1.5"));
    export(dir.path(), &["--format", "alpaca"]).code(2);
    // A file without verified pairs exports nothing, says so, and still succeeds.
    let empty = dir.path().join("e.jsonl");
    std::fs::write(&empty, "").unwrap();
    kp().args(["export", "--in"])
        .arg(&empty)
        .arg("--out")
        .arg(dir.path().join("o"))
        .assert()
        .success()
        .stderr(predicates::str::contains("nothing exported"));
}

/// Loads the chat export with Hugging Face `datasets`, when Python has it (CI installs it).
#[test]
fn hugging_face_datasets_loads_the_chat_export() {
    let has_datasets = std::process::Command::new("python3")
        .args(["-c", "import datasets"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_datasets {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install datasets: python3 -m pip install datasets"
        );
        eprintln!("skipped: python3 cannot import datasets (pip install datasets)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    export(dir.path(), &["--include-unverified", "--with-speedup"]).success();
    let train = lines(&dir.path().join("chat/train.jsonl")).len();
    let test = lines(&dir.path().join("chat/test.jsonl")).len();
    assert!(train > 0 && test > 0);
    let out = std::process::Command::new("python3")
        .arg("scripts/check_hf.py")
        .arg(dir.path())
        .arg(train.to_string())
        .arg(test.to_string())
        .env("HF_DATASETS_CACHE", dir.path().join("hf-cache"))
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The checker is not vacuous: wrong counts fail.
    let out = std::process::Command::new("python3")
        .arg("scripts/check_hf.py")
        .arg(dir.path())
        .arg((train + 1).to_string())
        .arg(test.to_string())
        .env("HF_DATASETS_CACHE", dir.path().join("hf-cache2"))
        .env("HF_HUB_OFFLINE", "1")
        .output()
        .unwrap();
    assert!(!out.status.success());
}

#[test]
fn ids_are_unique_across_splits() {
    let dir = tempfile::tempdir().unwrap();
    export(dir.path(), &["--include-unverified"]).success();
    let rows = all_rows(dir.path(), "preference");
    let v = ids(&rows);
    let mut d = v.clone();
    d.dedup();
    assert_eq!(v, d);
}

/// A pair that verified but failed its compute-sanitizer pass (`sanitizer_error`) is
/// left out like any unverified pair, and the filter report says why.
#[test]
fn sanitizer_error_pairs_are_not_exported() {
    use kernelpair::record::{Record, Status};
    let dir = tempfile::tempdir().unwrap();
    let mut recs = kernelpair::jsonl::read_records(Path::new(PAIRS)).unwrap();
    let mut flagged = None;
    for r in &mut recs {
        if let Record::Pair(p) = r {
            if let Some(v) = p.verification.as_mut() {
                if v.status == Status::Verified && !p.identical && flagged.is_none() {
                    v.status = Status::SanitizerError;
                    v.reason =
                        "verified, but compute-sanitizer memcheck reported 1 error(s)".into();
                    flagged = Some(p.id.clone());
                }
            }
        }
    }
    let flagged = flagged.expect("the fixture has a verified pair");
    let input = dir.path().join("pairs.jsonl");
    kernelpair::jsonl::write_records(&input, &recs).unwrap();
    let out = dir.path().join("out");
    kp().args(["export", "--in"])
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let rows = all_rows(&out, "chat");
    assert!(!rows.is_empty());
    assert!(rows.iter().all(|r| r["id"] != flagged.as_str()));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("filter_report.json")).unwrap())
            .unwrap();
    assert_eq!(
        report["excluded"]["not verified: sanitizer_error"], 1,
        "{report}"
    );
}

/// The fixture pairs written to `dir/pairs.jsonl` with the verified `scale` pair's record
/// data edited by `edit`: the input file.
fn pairs_with_scale_edited(dir: &Path, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let mut recs: Vec<Value> = std::fs::read_to_string(PAIRS)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let i = recs
        .iter()
        .position(|r| r["data"]["benchmark"] == "scale")
        .expect("the scale fixture pair");
    assert_eq!(recs[i]["data"]["verification"]["status"], "verified");
    edit(&mut recs[i]["data"]);
    let input = dir.join("pairs.jsonl");
    let text: Vec<String> = recs.iter().map(|r| r.to_string()).collect();
    std::fs::write(&input, text.join("\n") + "\n").unwrap();
    input
}

/// A pair verified at its main size but slower at another is kept by default with the
/// condition in its description, counted on the card, and dropped by
/// `--exclude-size-dependent`; the user message says how the slow kernel is launched and
/// the answer how the fast one is, since it differs; `--with-description` puts what
/// changed into the answer.
#[test]
fn size_dependent_pairs_and_launches_are_stated() {
    let dir = tempfile::tempdir().unwrap();
    let input = pairs_with_scale_edited(dir.path(), |d| {
        let v = &mut d["verification"];
        v["flags"] = serde_json::json!([{"flag": "size_dependent", "losing": [
        {"size_set": "1M", "median": 0.88, "ci_low": 0.86, "ci_high": 0.9}]}]);
        let launch = |grid: &str| {
            serde_json::json!([{"kernel": "scale", "grid": [grid], "block": ["256"],
                            "shared_mem": "0", "repeat": "1"}])
        };
        v["evidence"]["launch"] = serde_json::json!({
            "task": "out = a * in over n floats",
            "slow": launch("ceil_div(n, 256)"),
            "fast": launch("ceil_div(n, 256 * 4)"),
            // A record written before verify kept evaluated launches: export evaluates the
            // harness's expressions over the verdict's size set itself.
            "size_sets": {"large": {"n": 16777216}, "small": {"n": 4096}}
        });
    });
    let out = dir.path().join("kept");
    kp().args(["export", "--with-description", "--in"])
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let rows = all_rows(&out, "chat");
    let s = rows
        .iter()
        .find(|r| r["metadata"]["benchmark"] == "scale")
        .expect("kept by default");
    let m = &s["metadata"];
    assert_eq!(m["flags"], serde_json::json!(["size_dependent"]));
    let d = m["description"].as_str().unwrap();
    assert!(
        d.contains("Size-dependent: slower than the slow kernel at 1M (0.88×)."),
        "{d}"
    );
    // CUDA a reader can compile: the numbers of the main size set, named once.
    assert_eq!(
        m["slow_launch"],
        "scale<<<dim3(65536), dim3(256)>>>(v, k, n);"
    );
    assert_eq!(
        m["fast_launch"],
        "scale<<<dim3(16384), dim3(256)>>>(v, k, n);"
    );
    let user = s["messages"][1]["content"].as_str().unwrap();
    assert!(
        user.contains(
            "**Launch** (sizes: n = 16,777,216)\n```cuda\nscale<<<dim3(65536), dim3(256)>>>(v, k, n);\n```\n\n**Current Kernel"
        ),
        "{user}"
    );
    assert!(
        !user.contains("out = a * in"),
        "the harness's description stays out of the prompt: {user}"
    );
    let answer = s["messages"][2]["content"].as_str().unwrap();
    assert!(
        answer.contains(d),
        "the description is in the answer: {answer}"
    );
    assert!(
        answer.ends_with(
            "Launch it as:\n\n```cuda\nscale<<<dim3(16384), dim3(256)>>>(v, k, n);\n```"
        ),
        "{answer}"
    );
    // The rejected answer (the slow kernel) carries neither the launch change nor the description.
    let pref = all_rows(&out, "preference");
    let p = pref
        .iter()
        .find(|r| r["metadata"]["benchmark"] == "scale")
        .unwrap();
    let rejected = p["rejected"][0]["content"].as_str().unwrap();
    assert!(
        !rejected.contains("Launch it as") && !rejected.contains("Size-dependent"),
        "{rejected}"
    );
    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        card.contains("**1 samples are `size_dependent`**"),
        "{card}"
    );
    // Without the flag's pair when asked.
    let out2 = dir.path().join("dropped");
    kp().args(["export", "--exclude-size-dependent", "--in"])
        .arg(&input)
        .arg("--out")
        .arg(&out2)
        .assert()
        .success();
    let rows2 = all_rows(&out2, "chat");
    assert_eq!(rows2.len() + 1, rows.len());
    assert!(rows2.iter().all(|r| r["metadata"]["benchmark"] != "scale"));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(out2.join("filter_report.json")).unwrap())
            .unwrap();
    assert_eq!(
        report["excluded"]["size_dependent (--exclude-size-dependent)"],
        1
    );
}

/// Lines of every file under `root` (the suite a unit came from).
fn suite_lines(root: &Path) -> std::collections::HashSet<String> {
    walk(root)
        .into_iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .flat_map(|t| {
            t.lines()
                .map(|l| l.trim_end().to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The code block of a message.
fn code_of(message: &str) -> String {
    let start = message.find("```cuda\n").expect("a cuda block") + "```cuda\n".len();
    let end = message[start..].find("\n```").unwrap() + start;
    message[start..end].to_string()
}

/// Every exported kernel is the source's text: each line of the exported code is a line
/// of the suite's files, apart from what isolation says it did as a unit (host headers
/// kept as `#include <…>`, host-header shims under their `// from <…>` comment, `#if`
/// guards); no `extern "C"` that the source file lacks; no texture shim.
#[test]
fn exported_kernels_are_the_source_text() {
    let dir = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for suite in ["fixtures/parboil", "fixtures/generic"] {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join(suite);
        if !root.is_dir() {
            continue;
        }
        let units = dir.path().join("units.jsonl");
        kp().args(["extract", "--no-compile"])
            .arg(&root)
            .arg("-o")
            .arg(&units)
            .assert()
            .code(predicate::in_iter([0, 3]));
        let out = dir.path().join(suite.replace('/', "_"));
        kp().args([
            "export",
            "--include-unverified",
            "--max-tokens",
            "0",
            "--in",
        ])
        .arg(&units)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
        let lines = suite_lines(&root);
        for row in all_rows(&out, "chat") {
            let m = &row["messages"];
            let meta = &row["metadata"];
            for (code, unit) in [
                (code_of(m[1]["content"].as_str().unwrap()), &meta["slow"]),
                (code_of(m[2]["content"].as_str().unwrap()), &meta["fast"]),
            ] {
                let file =
                    std::fs::read_to_string(root.join(unit["path"].as_str().unwrap())).unwrap();
                assert_eq!(
                    code.contains("extern \"C\""),
                    file.contains("extern \"C\""),
                    "{}: linkage differs from the source\n{code}",
                    unit["path"]
                );
                assert!(!code.contains("kernelpair_legacy_texture"), "{code}");
                let mut in_shim = false;
                for l in code.lines().map(str::trim_end) {
                    if l.starts_with("// from <") && l.ends_with("(NVRTC has no host headers)") {
                        in_shim = true;
                        continue;
                    }
                    if l.is_empty() {
                        in_shim = false;
                        continue;
                    }
                    if in_shim
                        || l.starts_with("#include <")
                        || l.starts_with("#if ")
                        || l == "#endif"
                    {
                        continue;
                    }
                    assert!(
                        lines.contains(l),
                        "{}: exported line not in the source: {l:?}\n{code}",
                        unit["path"]
                    );
                }
                checked += 1;
            }
        }
    }
    assert!(checked >= 10, "only {checked} kernels checked");
}

/// Contributed pairs whose kernels are `extern "C"` in their files keep that linkage
/// (exactly as written) in the exported text; the others get none.
#[test]
fn source_text_keeps_linkage_the_source_wrote() {
    let planted = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/planted");
    let mut with = 0;
    for e in std::fs::read_dir(&planted).unwrap() {
        let d = e.unwrap().path();
        if !d.join("pair.toml").exists() {
            continue;
        }
        let (_, p) = kernelpair::verify::validate::load_folder(&d).unwrap();
        for u in [p.slow.unit().unwrap(), &p.fast] {
            let file = std::fs::read_to_string(d.join(&u.path)).unwrap();
            let text = kernelpair::cuda::compile_only::source_text(u);
            let count = |s: &str| s.matches("extern \"C\"").count();
            assert_eq!(
                count(&text),
                count(&file),
                "{}/{}\n{text}",
                d.display(),
                u.path
            );
            with += count(&file).min(1);
        }
    }
    assert!(with > 0, "no planted kernel is extern \"C\" in its file");
}

/// The format checks a trainer would run (scripts/check_export.py: OpenAI chat rules,
/// Hugging Face `datasets`, TRL conversational formats through the mistral-common tekken
/// chat template, the training text lint) pass on the fixture export, and fail on a broken
/// line. CI installs `datasets`, `mistral-common`, `tree-sitter` and `tree-sitter-cuda`;
/// elsewhere without them the test says it skipped.
#[test]
fn trainer_format_checks_pass_on_the_fixture_export() {
    let deps = std::process::Command::new("python3")
        .args([
            "-c",
            "import datasets, mistral_common, tree_sitter, tree_sitter_cuda",
        ])
        .output()
        .is_ok_and(|o| o.status.success());
    if !deps {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install the format checks' packages: python3 -m pip install datasets mistral-common tree-sitter tree-sitter-cuda"
        );
        eprintln!("skipped: python3 cannot import datasets, mistral_common, tree_sitter and tree_sitter_cuda (pip install datasets mistral-common tree-sitter tree-sitter-cuda)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let check = |d: &Path, extra: &[&str]| {
        std::process::Command::new("python3")
            .arg("scripts/check_export.py")
            .arg(d)
            .args(extra)
            .env("HF_DATASETS_CACHE", dir.path().join("hf-cache"))
            .env("HF_HUB_OFFLINE", "1")
            .output()
            .unwrap()
    };
    let out = dir.path().join("export");
    export(&out, &["--with-speedup", "--with-description"]).success();
    let o = check(&out, &[]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(
        o.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(text.contains(" passed, 0 failed"), "{text}");
    // Not vacuous: an empty user message breaks OpenAI's rules and the chat template.
    let p = out.join("chat/train.jsonl");
    let mut rows = lines(&p);
    rows[0]["messages"][1]["content"] = "".into();
    let body: Vec<String> = rows.iter().map(|r| r.to_string()).collect();
    std::fs::write(&p, body.join("\n") + "\n").unwrap();
    let o = check(&out, &[]);
    let text = String::from_utf8_lossy(&o.stdout).to_string();
    assert!(!o.status.success(), "{text}");
    assert!(
        text.contains("FAIL openai chat format") && text.contains("missing_content"),
        "{text}"
    );
    // A verified export is not a preview.
    export(&out, &[]).success();
    assert!(!check(&out, &["--preview"]).status.success());
}

/// The lint's dependencies (tree-sitter and the grammar extract uses); CI installs them.
fn lint_deps() -> bool {
    let ok = std::process::Command::new("python3")
        .args(["-c", "import tree_sitter, tree_sitter_cuda"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must install the lint's packages: python3 -m pip install tree-sitter tree-sitter-cuda nvidia-cuda-nvcc"
        );
        eprintln!("skipped: python3 cannot import tree_sitter and tree_sitter_cuda (pip install tree-sitter tree-sitter-cuda)");
    }
    ok
}

/// `scripts/check_export.py DIR --lint`, the fixture suites' roots given for the
/// `extern "C"` provenance check: (success, stdout).
fn lint(dir: &Path) -> (bool, String) {
    let o = std::process::Command::new("python3")
        .arg("scripts/check_export.py")
        .arg(dir)
        .args([
            "--lint",
            "--root",
            "parboil=fixtures/parboil",
            "--root",
            "rodinia=fixtures/rodinia",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&o.stdout).to_string() + &String::from_utf8_lossy(&o.stderr);
    (o.status.success(), text)
}

/// The main job's preview (the fixture suites, no GPU): its pairs with their harnesses'
/// launches, the texts a first run shows.
fn fixture_preview(dir: &Path) -> PathBuf {
    let fixtures = std::fs::canonicalize("fixtures").unwrap();
    let cfg = dir.join("build.toml");
    std::fs::write(
        &cfg,
        format!(
            "output = \"out\"\n[[suite]]\npath = \"{0}/parboil\"\nkind = \"parboil\"\n[[suite]]\npath = \"{0}/rodinia\"\nkind = \"rodinia\"\n[extract]\ncompile = false\n",
            fixtures.display()
        ),
    )
    .unwrap();
    kp().arg("build").arg(&cfg).assert().code(0);
    dir.join("out/dataset/preview")
}

/// A trainer learns exactly the text: the fixture export and the main job's preview pass
/// the training text lint with no finding (harness language, tool artifacts, fences,
/// launches as CUDA, kernel signatures, and where nvcc is found, each kernel with its
/// launch compiled).
#[test]
fn training_text_lint_passes_on_the_fixture_export_and_the_preview() {
    if !lint_deps() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("export");
    export(&out, &["--include-unverified", "--with-description"]).success();
    let (ok, text) = lint(&out);
    assert!(ok, "{text}");
    assert!(text.contains("lint: 0 findings"), "{text}");
    if matches!(
        kernelpair::gpu::probe(),
        kernelpair::gpu::Probe::Ready { .. }
    ) {
        eprintln!("skipped: the preview (a GPU is visible here, so pairs verify)");
        return;
    }
    let preview = fixture_preview(dir.path());
    let rows = all_rows(&preview, "chat");
    assert!(
        rows.iter()
            .any(|r| r["metadata"]["fast_launch"].is_string()),
        "the preview has launches to check"
    );
    let (ok, text) = lint(&preview);
    assert!(ok, "{text}");
    assert!(text.contains("lint: 0 findings"), "{text}");
    if text.contains("skipped: compile check: ") {
        eprintln!("skipped: the nvcc compile part of the lint (no nvcc here)");
    } else {
        assert!(
            text.contains(" compiled, 0 failed") && !text.contains(": 0 compiled,"),
            "{text}"
        );
    }
}

/// Each kind of finding, planted in one line of the preview, is caught by the lint, and a
/// clean line is not.
#[test]
fn training_text_lint_catches_each_planted_finding() {
    if !lint_deps()
        || matches!(
            kernelpair::gpu::probe(),
            kernelpair::gpu::Probe::Ready { .. }
        )
    {
        eprintln!("skipped: no lint packages, or a GPU is visible (no preview to plant in)");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let preview = fixture_preview(dir.path());
    let clean = all_rows(&preview, "chat")
        .into_iter()
        .find(|r| r["metadata"]["kernel"] == "reduceSum")
        .expect("the fixture's reduce pair");
    let answer = |r: &Value| r["messages"][2]["content"].as_str().unwrap().to_string();
    let user = |r: &Value| r["messages"][1]["content"].as_str().unwrap().to_string();
    assert!(
        answer(&clean).contains("(in, out, n);"),
        "{}",
        answer(&clean)
    );
    type Plant = Box<dyn Fn(&mut Value)>;
    let set_answer = |f: fn(String) -> String| -> Plant {
        Box::new(move |r: &mut Value| r["messages"][2]["content"] = f(answer(r)).into())
    };
    let plants: Vec<(&str, &str, Plant)> = vec![
        ("clean", "", Box::new(|_: &mut Value| {})),
        (
            "placeholder",
            "harness_token",
            set_answer(|a| a.replace("reduceSum<256>", "reduceSum<{block}>")),
        ),
        (
            "todo",
            "harness_token",
            set_answer(|a| a + "\n\nTODO: the block size is ASSUMED."),
        ),
        (
            "metadata",
            "harness_token",
            Box::new(|r: &mut Value| {
                r["metadata"]["slow_launch"] =
                    "reduceSum<<<dim3(ceil_div(n, 512)), dim3(512)>>>(in, out, n);".into()
            }),
        ),
        (
            "extern",
            "tool_artifact",
            Box::new(move |r: &mut Value| {
                r["messages"][1]["content"] = user(r)
                    .replace("__global__ void", "extern \"C\" __global__ void")
                    .into()
            }),
        ),
        (
            "shim",
            "tool_artifact",
            set_answer(|a| a.replace("v += in[i];", "v += kernelpair_tex_load(in + i);")),
        ),
        (
            "fence",
            "unbalanced_fence",
            set_answer(|a| a.trim_end().trim_end_matches('`').to_string()),
        ),
        (
            "no-args",
            "launch_syntax",
            set_answer(|a| a.replace("(in, out, n);", "")),
        ),
        (
            "prose",
            "launch_syntax",
            set_answer(|a| a + "\n\nOr use reduceSum<512><<<1024, 512>>>(in, out, n) instead."),
        ),
        (
            "renamed",
            "signature",
            set_answer(|a| a.replace("void reduceSum(", "void reduceAll(")),
        ),
        (
            "params",
            "signature",
            set_answer(|a| a.replace("float *out, int n)", "double *out, int n)")),
        ),
        (
            "arity",
            "compile",
            set_answer(|a| a.replace("(in, out, n);", "(in, out);")),
        ),
    ];
    let mut rows = Vec::new();
    for (name, _, plant) in &plants {
        let mut r = clean.clone();
        r["id"] = format!("plant-{name}").into();
        plant(&mut r);
        rows.push(r.to_string());
    }
    let planted = dir.path().join("planted");
    std::fs::create_dir_all(planted.join("chat")).unwrap();
    std::fs::write(planted.join("chat/train.jsonl"), rows.join("\n") + "\n").unwrap();
    let (ok, text) = lint(&planted);
    assert!(!ok, "{text}");
    let no_nvcc = text.contains("skipped: compile check: ");
    for (name, kind, _) in &plants {
        let found = text.lines().any(|l| {
            l.contains(&format!("finding {kind}: ")) && l.contains(&format!("plant-{name} "))
        });
        match *name {
            "clean" => assert!(
                !text.contains("plant-clean "),
                "the clean line has findings:\n{text}"
            ),
            "arity" if no_nvcc => eprintln!("skipped: the planted compile finding (no nvcc here)"),
            _ => assert!(found, "{name}: no {kind} finding:\n{text}"),
        }
    }
}

/// The Rust side of the lint fails the export itself: a template that brings the
/// harness's language into every answer writes nothing and names each defect.
#[test]
fn export_fails_on_a_lint_finding_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let t = dir.path().join("templates");
    std::fs::create_dir_all(&t).unwrap();
    std::fs::write(
        t.join("assistant.md"),
        "Here's the optimized CUDA kernel (TODO: check):\n\n```cuda\n{{code}}\n```\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    kp().args(["export", "--in", PAIRS, "--out"])
        .arg(&out)
        .arg("--templates")
        .arg(&t)
        .assert()
        .code(1)
        .stderr(predicate::str::contains("the training text lint found"))
        .stderr(predicate::str::contains("harness_token"))
        .stderr(predicate::str::contains("`TODO`"));
    assert!(!out.join("chat").exists(), "nothing was written");
}

/// A defect in one pair's own code (here a tool name a slow kernel kept, as a synthesized
/// answer that keeps a texture through kernelpair's shim does) leaves that sample out,
/// named on stderr, in the filter report and on the card; the other samples are written.
#[test]
fn a_lint_finding_in_one_pairs_code_leaves_that_sample_out_and_writes_the_rest() {
    use kernelpair::record::Record;
    let dir = tempfile::tempdir().unwrap();
    // A pair the plain export writes.
    let plain = dir.path().join("plain");
    kp().args(["export", "--in", PAIRS, "--out"])
        .arg(&plain)
        .assert()
        .success();
    let line = std::fs::read_to_string(plain.join("chat/train.jsonl")).unwrap();
    let first: serde_json::Value = serde_json::from_str(line.lines().next().unwrap()).unwrap();
    let id = first["id"].as_str().unwrap().to_string();
    let mut recs = kernelpair::jsonl::read_records(Path::new(PAIRS)).unwrap();
    let i = recs
        .iter()
        .position(|r| matches!(r, Record::Pair(p) if p.id == id))
        .expect("the exported pair");
    let Record::Pair(p) = &mut recs[i] else {
        unreachable!()
    };
    let slow = p.slow.unit_mut().unwrap();
    slow.source = format!(
        "__device__ kernelpair_legacy_texture<float, 1> t_in;\n{}",
        slow.source
    );
    let input = dir.path().join("pairs.jsonl");
    kernelpair::jsonl::write_records(&input, &recs).unwrap();
    let out = dir.path().join("out");
    let run = kp()
        .args(["export", "--in"])
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let err = String::from_utf8_lossy(&run.get_output().stderr).to_string();
    assert!(
        err.contains(&format!(
            "export: {id} left out by the training text lint: tool_artifact"
        )),
        "{err}"
    );
    let written: String = ["train", "test"]
        .iter()
        .map(|s| std::fs::read_to_string(out.join(format!("chat/{s}.jsonl"))).unwrap_or_default())
        .collect();
    assert!(!written.is_empty(), "the other samples are written");
    assert!(!written.contains(&id), "the defective sample is not");
    let report = std::fs::read_to_string(out.join("filter_report.json")).unwrap();
    assert!(
        report.contains("training text lint: tool_artifact"),
        "{report}"
    );
    assert!(report.contains(&id), "{report}");
    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        card.contains("| training text lint: tool_artifact | 1 |"),
        "{card}"
    );
}

/// The fixture pairs with `transpose` turned into a `reversed` record as verify writes one:
/// its slow slot a synthesized plain version (here the fixture's fast kernel) measured
/// faster than the original (the fixture's slow kernel), so the reversed view is the
/// fixture pair again and its figures must come back exactly.
fn with_a_reversed_pair(dir: &Path) -> (PathBuf, kernelpair::record::Pair) {
    use kernelpair::record::{Flag, Record, Slow, Status, SynthOutcome};
    let mut recs = kernelpair::jsonl::read_records(Path::new(PAIRS)).unwrap();
    let i = recs
        .iter()
        .position(|r| matches!(r, Record::Pair(p) if p.benchmark == "transpose"))
        .unwrap();
    let Record::Pair(p) = recs[i].clone() else {
        unreachable!()
    };
    let mut r = (*p).clone();
    r.fast = p.slow.unit().unwrap().clone();
    r.slow = Slow::Synthesized {
        unit: Box::new(p.fast.clone()),
        outcome: Box::new(SynthOutcome {
            model: "test-model".into(),
            prompt_hash: "0123456789abcdef".into(),
            attempts: 1,
            ..Default::default()
        }),
    };
    let v = r.verification.as_mut().unwrap();
    let measured = v.speedup.clone().unwrap();
    v.status = Status::Reversed;
    v.speedup = Some(kernelpair::verify::verdict::inverted(&measured));
    v.flags = vec![Flag::Reversed { speedup: measured }];
    for t in &mut v.evidence.timings {
        std::mem::swap(&mut t.slow, &mut t.fast);
        let (lo, hi) = (t.ci_low, t.ci_high);
        t.speedup = 1.0 / t.speedup;
        t.ci_low = 1.0 / hi;
        t.ci_high = 1.0 / lo;
    }
    recs[i] = Record::Pair(Box::new(r.clone()));
    let path = dir.join("pairs.jsonl");
    kernelpair::jsonl::write_records(&path, &recs).unwrap();
    (path, *p)
}

/// Reversed pairs are off by default and counted on the card either way; with
/// `--include-reversed` each is one sample, slow side the original, fast side the plain
/// version, its speedup the original's time over the plain version's, and a description
/// that names the techniques removed and the device.
#[test]
fn reversed_pairs_are_counted_always_and_exported_only_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (input, original) = with_a_reversed_pair(dir.path());
    let run = |out: &Path, extra: &[&str]| {
        kp().args(["export", "--in"])
            .arg(&input)
            .arg("--out")
            .arg(out)
            .args(extra)
            .assert()
            .success();
    };
    let off = dir.path().join("off");
    run(&off, &[]);
    assert!(!ids(&all_rows(&off, "chat"))
        .iter()
        .any(|i| i.starts_with(&original.id)));
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(off.join("filter_report.json")).unwrap())
            .unwrap();
    assert_eq!(
        report["excluded"]["reversed (--include-reversed exports them)"],
        1
    );
    let card = std::fs::read_to_string(off.join("README.md")).unwrap();
    assert!(card.contains("**1 pairs are `reversed`**"), "{card}");
    assert!(
        card.contains("Not exported (`--include-reversed`"),
        "{card}"
    );
    assert!(card.contains("| NVIDIA H100 80GB HBM3 | 1 | 0 |"), "{card}");

    let on = dir.path().join("on");
    run(&on, &["--include-reversed", "--with-description"]);
    let rows = all_rows(&on, "chat");
    let id = format!("{}-reversed", original.id);
    let row = rows.iter().find(|r| r["id"] == id.as_str()).unwrap();
    let m = &row["metadata"];
    assert_eq!(m["origin"], "reversed");
    assert_eq!(m["model"], "test-model");
    assert_eq!(m["status"], "reversed");
    assert_eq!(m["verified"], true);
    // Slow side: the original (the record's fast unit); fast side: the plain version.
    assert_eq!(m["slow"]["id"], original.slow.unit().unwrap().id.as_str());
    assert_eq!(m["fast"]["id"], original.fast.id.as_str());
    let want = original
        .verification
        .as_ref()
        .unwrap()
        .speedup
        .clone()
        .unwrap();
    let got = &m["speedup"];
    assert_eq!(got["size_set"], want.size_set.as_str());
    for (k, w) in [
        ("median", want.median),
        ("ci_low", want.ci_low),
        ("ci_high", want.ci_high),
    ] {
        assert!((got[k].as_f64().unwrap() - w).abs() < 1e-9, "{k}: {got}");
    }
    let description = m["description"].as_str().unwrap();
    assert!(
        description.starts_with("A reversed pair: the slow kernel is the original and the fast kernel its plain version with shared memory and coalescing removed, which is faster on NVIDIA H100 80GB HBM3."),
        "{description}"
    );
    assert!(description.contains("3.40× faster"), "{description}");
    let answer = row["messages"][2]["content"].as_str().unwrap();
    assert!(answer.contains("A reversed pair"), "{answer}");
    let card = std::fs::read_to_string(on.join("README.md")).unwrap();
    assert!(card.contains("**1 pairs are `reversed`**"), "{card}");
    assert!(
        card.contains("Exported the other way round (`--include-reversed`): 1 samples"),
        "{card}"
    );
    assert!(card.contains("| NVIDIA H100 80GB HBM3 | 1 | 1 |"), "{card}");
    assert!(card.contains("| reversed | test-model | 1 |"), "{card}");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string("schemas/export-chat.schema.json").unwrap())
            .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = v.iter_errors(row).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{errors:?}");
    // Without a reversed pair in the input the card still states the count.
    let none = dir.path().join("none");
    export(&none, &[]).success();
    let card = std::fs::read_to_string(none.join("README.md")).unwrap();
    assert!(card.contains("**0 pairs are `reversed`**"), "{card}");
}

/// The fixture pairs with `transpose` asked as two synth candidates (`all`, and
/// `shared_memory` undone alone), both verified, the second faster.
fn with_two_candidates(dir: &Path) -> (PathBuf, String) {
    use kernelpair::record::{Candidate, Record, Slow, SynthOutcome, Undo};
    let mut recs = kernelpair::jsonl::read_records(Path::new(PAIRS)).unwrap();
    let i = recs
        .iter()
        .position(|r| matches!(r, Record::Pair(p) if p.benchmark == "transpose"))
        .unwrap();
    let Record::Pair(p) = recs[i].clone() else {
        unreachable!()
    };
    let group = p.id.clone();
    let as_candidate = |undo: Undo, id: &str, source: String, ci_low: f64, median: f64| {
        let mut q = (*p).clone();
        q.id = id.into();
        let mut unit = p.slow.unit().unwrap().clone();
        unit.source = source;
        q.slow = Slow::Synthesized {
            unit: Box::new(unit),
            outcome: Box::new(SynthOutcome {
                model: "test-model".into(),
                prompt_hash: "0123456789abcdef".into(),
                attempts: 1,
                candidate: Some(Candidate {
                    group: group.clone(),
                    undo,
                }),
                ..Default::default()
            }),
        };
        let s = q.verification.as_mut().unwrap().speedup.as_mut().unwrap();
        (s.ci_low, s.median, s.ci_high) = (ci_low, median, median + 0.1);
        Record::Pair(Box::new(q))
    };
    let plain = p.slow.unit().unwrap().source.clone();
    let other = plain.replace(
        "if (x < w && y < h) {",
        "bool inside = x < w && y < h;\n    if (inside) {",
    );
    assert_ne!(plain, other);
    let smem = Undo::One {
        technique: "shared_memory".into(),
    };
    recs[i] = as_candidate(Undo::All, &group, plain, 3.23, 3.4);
    recs.insert(i + 1, as_candidate(smem, "cand-smem", other, 4.0, 4.2));
    let path = dir.join("pairs.jsonl");
    kernelpair::jsonl::write_records(&path, &recs).unwrap();
    (path, group)
}

/// By default a kernel's candidates give one sample, the one with the largest honest
/// speedup (CI low); `--all-candidates` exports each, sharing `metadata.group` (and they
/// are not near duplicates of each other). The card shows the yield per technique.
#[test]
fn the_best_candidate_by_default_every_candidate_on_request_and_yield_per_technique() {
    let dir = tempfile::tempdir().unwrap();
    let (input, group) = with_two_candidates(dir.path());
    let run = |out: &Path, extra: &[&str]| {
        kp().args(["export", "--in"])
            .arg(&input)
            .arg("--out")
            .arg(out)
            .args(extra)
            .assert()
            .success();
    };
    let best = dir.path().join("best");
    run(&best, &[]);
    let rows = all_rows(&best, "chat");
    let mine: Vec<&Value> = rows
        .iter()
        .filter(|r| r["metadata"]["group"] == group.as_str())
        .collect();
    assert_eq!(mine.len(), 1);
    assert_eq!(mine[0]["id"], "cand-smem");
    assert_eq!(mine[0]["metadata"]["candidate"], "shared_memory");
    let report: Value =
        serde_json::from_str(&std::fs::read_to_string(best.join("filter_report.json")).unwrap())
            .unwrap();
    assert_eq!(
        report["excluded"]
            ["another candidate of the kernel is faster (--all-candidates exports each)"],
        1
    );
    let card = std::fs::read_to_string(best.join("README.md")).unwrap();
    assert!(
        card.contains("| undid | asked | accepted | verified | not faster | reversed |"),
        "{card}"
    );
    assert!(
        card.contains("| shared_memory | 1 | 1 | 1 | 0 | 0 |"),
        "{card}"
    );
    // matmul's synthesized slow kernel and the all candidate.
    assert!(card.contains("| all | 2 | 2 | 2 | 0 | 0 |"), "{card}");
    // Pairs that are no candidate: their own group, no label.
    let others: Vec<&Value> = rows
        .iter()
        .filter(|r| r["metadata"]["group"] != group.as_str())
        .collect();
    assert!(!others.is_empty());
    for r in others {
        assert_eq!(r["metadata"]["group"], r["id"]);
        assert!(r["metadata"]["candidate"].is_null());
    }

    let all = dir.path().join("all");
    run(&all, &["--all-candidates"]);
    let rows = all_rows(&all, "chat");
    let mut mine: Vec<(String, String)> = rows
        .iter()
        .filter(|r| r["metadata"]["group"] == group.as_str())
        .map(|r| {
            (
                r["id"].as_str().unwrap().to_string(),
                r["metadata"]["candidate"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    mine.sort();
    assert_eq!(
        mine,
        [
            (group.clone(), "all".to_string()),
            ("cand-smem".to_string(), "shared_memory".to_string())
        ]
    );
    // Kept together by the split, which groups by benchmark.
    let splits: std::collections::BTreeSet<&str> = rows
        .iter()
        .filter(|r| r["metadata"]["group"] == group.as_str())
        .map(|r| r["metadata"]["split"].as_str().unwrap())
        .collect();
    assert_eq!(splits.len(), 1);
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string("schemas/export-chat.schema.json").unwrap())
            .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    for row in &rows {
        let errors: Vec<String> = v.iter_errors(row).map(|e| e.to_string()).collect();
        assert!(errors.is_empty(), "{}: {errors:?}", row["id"]);
    }
}

/// A pair verified under its captured launch whose inferred harness said otherwise is
/// exported (the flag never changes the status), counted on the card as
/// `harness_disagreement`, and counted under the `captured` origin.
#[test]
fn a_harness_disagreement_is_counted_on_the_card() {
    let dir = tempfile::tempdir().unwrap();
    let input = pairs_with_scale_edited(dir.path(), |d| {
        d["harness_origin"] = serde_json::json!({"origin": "captured"});
        d["verification"]["flags"] = serde_json::json!([{"flag": "harness_disagreement", "origin": "inferred", "status": "mismatch"}]);
        d["verification"]["evidence"]["second_opinion"] = serde_json::json!({
        "origin": "inferred", "harness": "inferred/scale.toml", "status": "mismatch",
        "reason": "mismatch: out differs"});
    });
    let out = dir.path().join("out");
    kp().args(["export", "--in"])
        .arg(&input)
        .arg("--out")
        .arg(&out)
        .assert()
        .success();
    let rows = all_rows(&out, "chat");
    let s = rows
        .iter()
        .find(|r| r["metadata"]["benchmark"] == "scale")
        .expect("exported: the flag never changes the status");
    assert_eq!(
        s["metadata"]["flags"],
        serde_json::json!(["harness_disagreement"])
    );
    let card = std::fs::read_to_string(out.join("README.md")).unwrap();
    assert!(
        card.contains("**1 samples are `harness_disagreement`**"),
        "{card}"
    );
    assert!(card.contains("| captured | 1 | 1 | 1 |"), "{card}");
}
