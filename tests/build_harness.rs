//! `build` chooses each pair's harness (hand > inferred > llm), writes inferred harnesses
//! into its output folder for review, records the origin per pair; the dataset card counts
//! pairs by harness origin from the records.

mod common;
use common::kp;

use kernelpair::record::{HarnessOrigin, Record};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixtures() -> PathBuf {
    std::fs::canonicalize("fixtures").unwrap()
}

fn pairs_of(path: &Path) -> Vec<kernelpair::record::Pair> {
    kernelpair::jsonl::read_records(path)
        .unwrap()
        .into_iter()
        .filter_map(|r| match r {
            Record::Pair(p) => Some(*p),
            _ => None,
        })
        .collect()
}

/// A build config over fixtures/parboil (hand-written harnesses), fixtures/rodinia and
/// fixtures/infer (none: inference), with `extra` appended.
fn config(dir: &Path, extra: &str) -> PathBuf {
    let cfg = dir.join("build.toml");
    std::fs::write(
        &cfg,
        format!(
            "output = \"out\"\n[[suite]]\npath = \"{0}/parboil\"\nkind = \"parboil\"\n[[suite]]\npath = \"{0}/rodinia\"\nkind = \"rodinia\"\n[[suite]]\npath = \"{0}/infer\"\nkind = \"rodinia\"\n[extract]\ncompile = false\n{extra}",
            fixtures().display()
        ),
    )
    .unwrap();
    cfg
}

fn origin_of(p: &kernelpair::record::Pair) -> Option<HarnessOrigin> {
    p.harness_origin.as_ref().map(|h| h.origin)
}

/// `[harness] assume_size` is `harness infer --assume-size`: the harnesses that strict
/// inference leaves with TODOs (sizes read from a file) are complete, their assumed values
/// marked, and used; a value under 1 is a config error naming the key.
#[test]
fn build_with_assume_size_completes_what_strict_inference_leaves_open() {
    let t = tempfile::tempdir().unwrap();
    let strict = config(t.path(), "");
    kp().arg("build").arg(&strict).assert().code(0);
    let out = t.path().join("out");
    let incomplete = |dir: &Path| -> Vec<String> {
        pairs_of(&out.join("verified.jsonl"))
            .iter()
            .filter(|p| !p.identical && p.suite != "parboil")
            .filter(|p| {
                std::fs::read_to_string(dir.join(format!("{}.toml", p.id)))
                    .unwrap()
                    .contains("\"TODO\"")
            })
            .map(|p| p.kernel.clone())
            .collect()
    };
    let inferred = out.join("harnesses/inferred");
    let open = incomplete(&inferred);
    assert!(
        !open.is_empty(),
        "the fixtures have a size only a data file gives"
    );
    let t2 = tempfile::tempdir().unwrap();
    let assumed = config(t2.path(), "[harness]\nassume_size = 4096\n");
    let a = kp().arg("build").arg(&assumed).assert().code(0);
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    let out2 = t2.path().join("out");
    let inferred2 = out2.join("harnesses/inferred");
    for p in pairs_of(&out2.join("verified.jsonl")) {
        if !open.contains(&p.kernel) {
            continue;
        }
        let text = std::fs::read_to_string(inferred2.join(format!("{}.toml", p.id))).unwrap();
        assert!(!text.contains("\"TODO\""), "{}: {text}", p.kernel);
        assert!(
            text.contains("ASSUMED") && text.contains("4096"),
            "{}: {text}",
            p.kernel
        );
        assert_eq!(origin_of(&p), Some(HarnessOrigin::Inferred), "{}", p.kernel);
    }
    assert!(
        !stderr.contains("inferred harnesses have TODOs"),
        "{stderr}"
    );
    let bad = config(t2.path(), "[harness]\nassume_size = 0\n");
    let a = kp().arg("build").arg(&bad).assert().failure();
    let err = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(err.contains("assume_size must be at least 1"), "{err}");
}

#[test]
fn build_infers_harnesses_writes_them_for_review_and_prefers_hand_then_inferred_then_llm() {
    let t = tempfile::tempdir().unwrap();
    let cfg = config(t.path(), "");
    let a = kp().arg("build").arg(&cfg).assert().code(0);
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    let out = t.path().join("out");
    let inferred = out.join("harnesses/inferred");
    let pairs = pairs_of(&out.join("verified.jsonl"));
    assert!(!pairs.is_empty());
    let (mut hand, mut inf, mut none) = (0, 0, 0);
    // Identical pairs (same kernel in both variants) are never verified: no harness.
    for p in pairs.iter().filter(|p| !p.identical) {
        let file = inferred.join(format!("{}.toml", p.id));
        match p.suite.as_str() {
            // Parboil pairs have hand-written harnesses: no inference for them.
            "parboil" => {
                assert_eq!(origin_of(p), Some(HarnessOrigin::Hand), "{}", p.id);
                assert!(!file.exists(), "{}", file.display());
                hand += 1;
            }
            _ => {
                // Every other pair's inferred harness is written, complete or not.
                let text = std::fs::read_to_string(&file).unwrap();
                if text.contains("\"TODO\"") {
                    assert_eq!(origin_of(p), None, "{}: {text}", p.kernel);
                    assert_eq!(p.harness, None);
                    none += 1;
                } else {
                    assert_eq!(origin_of(p), Some(HarnessOrigin::Inferred), "{}", p.kernel);
                    assert_eq!(p.harness.as_deref(), Some(file.to_str().unwrap()));
                    inf += 1;
                }
            }
        }
    }
    // gather_scale and histogram (run script) and path_row are complete (heat_step too,
    // since argv values come from the run script); the cluster kernels (sizes read from a
    // file) are not.
    let kernels_inferred: Vec<&str> = pairs
        .iter()
        .filter(|p| origin_of(p) == Some(HarnessOrigin::Inferred))
        .map(|p| p.kernel.as_str())
        .collect();
    for k in ["gather_scale", "histogram", "path_row"] {
        assert!(kernels_inferred.contains(&k), "{kernels_inferred:?}");
    }
    assert!(hand > 0 && inf >= 3 && none >= 1, "{hand} {inf} {none}");
    // The table row counts the same.
    let row = stderr
        .lines()
        .find(|l| l.starts_with("harness "))
        .unwrap_or_else(|| panic!("{stderr}"));
    assert!(row.contains(&format!("hand={hand}")), "{row}");
    assert!(row.contains(&format!("inferred={inf}")), "{row}");
    assert!(
        row.contains(&format!("inferred_incomplete={none}")),
        "{row}"
    );
    assert!(stderr.contains("inferred harnesses have TODOs"), "{stderr}");

    // The dataset card counts pairs by harness origin, from the records.
    let card = std::fs::read_to_string(out.join("dataset/README.md")).unwrap();
    // Identical pairs carry no harness: they count as `none`.
    let identical = pairs.iter().filter(|p| p.identical).count();
    for (o, k) in [
        ("hand", hand),
        ("inferred", inf),
        ("none", none + identical),
    ] {
        assert!(
            card.contains(&format!("| {o} | {k} | 0 | 0 |")),
            "{o} {k}\n{card}"
        );
    }

    // An LLM-completed harness for heat_step (incomplete inferred) is used, marked llm; one
    // for path_row is not: its complete inferred harness comes first.
    let id_of = |k: &str| pairs.iter().find(|p| p.kernel == k).unwrap().id.clone();
    let llm = out.join("harnesses/llm");
    std::fs::create_dir_all(&llm).unwrap();
    let heat = id_of("heat_step");
    let heat_text = std::fs::read_to_string(inferred.join(format!("{heat}.toml")))
        .unwrap()
        .replace("\"TODO\"", "256");
    std::fs::write(llm.join(format!("{heat}.toml")), heat_text).unwrap();
    let path_row = id_of("path_row");
    std::fs::write(llm.join(format!("{path_row}.toml")), "# never used\n").unwrap();
    kp().arg("build").arg(&cfg).assert().code(0);
    let again = pairs_of(&out.join("verified.jsonl"));
    let get = |id: &str| again.iter().find(|p| p.id == id).unwrap();
    assert_eq!(origin_of(get(&heat)), Some(HarnessOrigin::Llm));
    assert!(get(&heat)
        .harness
        .as_deref()
        .unwrap()
        .ends_with(&format!("llm/{heat}.toml")));
    assert_eq!(origin_of(get(&path_row)), Some(HarnessOrigin::Inferred));
    let card = std::fs::read_to_string(out.join("dataset/README.md")).unwrap();
    assert!(card.contains("| llm | 1 | 0 | 0 |"), "{card}");
    assert!(
        card.contains(&format!("| none | {} | 0 | 0 |", none + identical - 1)),
        "{card}"
    );
}

#[test]
fn build_with_inference_off_leaves_pairs_without_a_harness() {
    let t = tempfile::tempdir().unwrap();
    let cfg = config(t.path(), "[harness]\ninfer = false\n");
    kp().arg("build").arg(&cfg).assert().code(0);
    let out = t.path().join("out");
    assert!(!out.join("harnesses/inferred").exists());
    for p in pairs_of(&out.join("verified.jsonl"))
        .into_iter()
        .filter(|p| !p.identical)
    {
        match p.suite.as_str() {
            "parboil" => assert_eq!(origin_of(&p), Some(HarnessOrigin::Hand)),
            _ => assert_eq!(origin_of(&p), None, "{}", p.kernel),
        }
    }
}

/// The card's harness table on verified records: each origin's pairs, verified pairs and
/// exported samples, counted here from the records and the exported files.
#[test]
fn the_card_counts_pairs_by_harness_origin() {
    let t = tempfile::tempdir().unwrap();
    let mut recs = kernelpair::jsonl::read_records(Path::new("tests/data/pairs.jsonl")).unwrap();
    let origins = [
        Some(HarnessOrigin::Hand),
        Some(HarnessOrigin::Inferred),
        Some(HarnessOrigin::Llm),
        None,
    ];
    let mut n = 0;
    for r in recs.iter_mut() {
        if let Record::Pair(p) = r {
            p.harness_origin = origins[n % 4].map(|origin| kernelpair::record::HarnessProvenance {
                origin,
                selfcheck_pass: Some(true),
                selfcheck_failure: None,
            });
            n += 1;
        }
    }
    let input = t.path().join("in.jsonl");
    kernelpair::jsonl::write_records(&input, &recs).unwrap();
    let ds = t.path().join("ds");
    kp().args(["export", "--in"])
        .arg(&input)
        .arg("--out")
        .arg(&ds)
        .args(["--format", "chat"])
        .assert()
        .success();
    let mut exported = std::collections::BTreeSet::new();
    for split in ["train", "test"] {
        let f = ds.join(format!("chat/{split}.jsonl"));
        for l in std::fs::read_to_string(f).unwrap_or_default().lines() {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            exported.insert(v["metadata"]["id"].as_str().unwrap().to_string());
        }
    }
    assert!(!exported.is_empty());
    let mut want: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
    let mut seen = std::collections::BTreeSet::new();
    for r in &recs {
        let Record::Pair(p) = r else { continue };
        if !seen.insert(p.id.clone()) {
            continue;
        }
        let o = match origin_of(p) {
            Some(HarnessOrigin::Hand) => "hand",
            Some(HarnessOrigin::Captured) => "captured",
            Some(HarnessOrigin::Inferred) => "inferred",
            Some(HarnessOrigin::Llm) => "llm",
            None => "none",
        };
        let e = want.entry(o).or_default();
        e.0 += 1;
        if p.verification
            .as_ref()
            .is_some_and(|v| v.status.as_str() == "verified")
        {
            e.1 += 1;
        }
        if exported.contains(&p.id) {
            e.2 += 1;
        }
    }
    assert_eq!(want.len(), 4, "{want:?}");
    assert!(want.values().map(|c| c.2).sum::<usize>() == exported.len());
    let card = std::fs::read_to_string(ds.join("README.md")).unwrap();
    for (o, (pairs, verified, samples)) in &want {
        let row = format!("| {o} | {pairs} | {verified} | {samples} |");
        assert!(card.contains(&row), "{row}\n{card}");
    }
}

/// With an endpoint (`[synth] llm`), inferred harnesses that still have TODOs are completed
/// by the LLM into `<output>/harnesses/llm/` and used (origin `llm`); a rerun sends nothing.
#[test]
fn build_lets_the_endpoint_complete_inferred_harnesses_with_todos() {
    let t = tempfile::tempdir().unwrap();
    // The scripted endpoint: a harness completion gets the draft with every TODO set to
    // 256; a de-optimization request gets an answer without code (rejected, pair pending).
    let (url, seen) = common::serve(|req, _| {
        let user = req.body["messages"][1]["content"].as_str().unwrap_or("");
        match user.split_once("Draft harness:\n```toml\n") {
            Some((_, rest)) => {
                let draft = rest.split("\n```").next().unwrap_or("");
                format!("```toml\n{}\n```", draft.replace("\"TODO\"", "256"))
            }
            None => "I would rather not.".to_string(),
        }
    });
    std::fs::write(
        t.path().join("llm.toml"),
        format!("base_url = \"{url}\"\nmodel = \"scripted\"\napi_key_env = \"KP_BUILD_HARNESS_KEY\"\nmax_retries = 0\n"),
    )
    .unwrap();
    let cfg = t.path().join("build.toml");
    std::fs::write(
        &cfg,
        format!(
            "output = \"out\"\n[[suite]]\npath = \"{}/rodinia\"\nkind = \"rodinia\"\n[extract]\ncompile = false\n[synth]\nllm = \"llm.toml\"\n",
            fixtures().display()
        ),
    )
    .unwrap();
    let run = || {
        let a = kp()
            .arg("build")
            .arg(&cfg)
            .env("KP_BUILD_HARNESS_KEY", "sk-build-harness-9")
            .assert();
        String::from_utf8_lossy(&a.get_output().stderr).to_string()
    };
    let stderr = run();
    let out = t.path().join("out");
    let pairs = pairs_of(&out.join("verified.jsonl"));
    let heat = pairs.iter().find(|p| p.kernel == "heat_step").unwrap();
    assert_eq!(origin_of(heat), Some(HarnessOrigin::Llm), "{stderr}");
    let f = out.join(format!("harnesses/llm/{}.toml", heat.id));
    assert_eq!(heat.harness.as_deref(), Some(f.to_str().unwrap()));
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(text.contains("# origin: llm\n# selfcheck: "), "{text}");
    assert!(!text.contains("\"TODO\""), "{text}");
    // The inferred draft stays for review beside it.
    assert!(
        std::fs::read_to_string(out.join(format!("harnesses/inferred/{}.toml", heat.id)))
            .unwrap()
            .contains("\"TODO\"")
    );
    let row = stderr.lines().find(|l| l.starts_with("harness ")).unwrap();
    assert!(
        row.contains("llm=") && row.contains("llm_completed="),
        "{row}"
    );
    let completions = |s: &[common::Seen]| {
        s.iter()
            .filter(|r| r.body.to_string().contains("needs a test harness"))
            .count()
    };
    let sent = seen.lock().unwrap().clone();
    assert!(completions(&sent) >= 1);
    // A rerun: the completed harness is kept, nothing is asked again for it.
    run();
    let again = seen.lock().unwrap().clone();
    assert_eq!(
        completions(&again),
        completions(&sent),
        "completions come from the cache or the file"
    );
    assert!(!common::all_text(&out).contains("sk-build-harness-9"));
}
