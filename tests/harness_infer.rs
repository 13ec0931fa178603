//! `harness infer` and `harness selfcheck` end to end on fixtures/infer (a Rodinia-shaped
//! tree of host code we wrote): inference completes harnesses whose host code says
//! everything, leaves named TODOs where it does not (so `harness check` fails), verify
//! picks inferred harnesses up, and on the GPU (`#[ignore]`) the self-check passes good
//! harnesses and fails a broken one on the right check.

mod common;
use common::{harness_check, kp, selfcheck_inferred};

use kernelpair::record::{HarnessOrigin, Record};
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    common::fixture("infer")
}

/// Extract `root` into `dir/units.jsonl`; returns (path, pair ids by kernel).
fn extract(root: &Path, dir: &Path) -> (PathBuf, Vec<(String, String)>) {
    common::extract_units(root, dir)
}

fn infer(units: &Path, out: &Path, root: &Path) {
    common::infer_into(units, root, out)
}

fn id_of<'a>(ids: &'a [(String, String)], kernel: &str) -> &'a str {
    &ids.iter().find(|(k, _)| k == kernel).expect("pair").1
}

#[test]
fn infers_complete_harnesses_that_pass_check() {
    let t = tempfile::tempdir().unwrap();
    let (units, ids) = extract(&fixture(), t.path());
    let out = t.path().join("inferred");
    infer(&units, &out, &fixture());
    for (_, id) in &ids {
        let f = out.join(format!("{id}.toml"));
        let text = std::fs::read_to_string(&f).unwrap();
        assert!(!text.contains("\"TODO\""), "{text}");
        harness_check(&f, &units, id).success();
    }
    let g: toml::Value = toml::from_str(
        &std::fs::read_to_string(out.join(format!("{}.toml", id_of(&ids, "gather_scale"))))
            .unwrap(),
    )
    .unwrap();
    // Sizes from the run script and `m = n / 2`; lengths from cudaMalloc; roles from the body.
    assert_eq!(g["sizes"]["n"].as_integer(), Some(100000));
    assert_eq!(g["sizes"]["m"].as_integer(), Some(50000));
    let args = g["args"].as_array().unwrap();
    let arg = |n: &str| args.iter().find(|a| a["name"].as_str() == Some(n)).unwrap();
    assert_eq!(arg("x")["len"].as_str(), Some("m"));
    assert_eq!(arg("x")["role"].as_str(), Some("in"));
    assert_eq!(arg("y")["role"].as_str(), Some("out"));
    // The index buffer stays inside the buffer it subscripts.
    assert_eq!(arg("idx")["init"]["hi"].as_str(), Some("(m) - 1"));
    assert_eq!(arg("scale")["value"].as_str(), Some("0.5"));
    assert_eq!(
        g["launch"][0]["grid"][0].as_str(),
        Some("(n + 256 - 1) / 256")
    );
    // The bounds check `i < n` allows an irregular size set.
    let sets = g["size_sets"].as_array().unwrap();
    let irregular = sets
        .iter()
        .find(|s| s["name"].as_str() == Some("irregular"))
        .unwrap();
    let n = irregular["n"].as_integer().unwrap();
    assert!(n.count_ones() > 1, "{n}");

    let h: toml::Value = toml::from_str(
        &std::fs::read_to_string(out.join(format!("{}.toml", id_of(&ids, "histogram")))).unwrap(),
    )
    .unwrap();
    let hist = &h["args"][1];
    // atomicAdd after cudaMemset(…, 0, …): an accumulator that starts at zero.
    assert_eq!(hist["role"].as_str(), Some("inout"));
    assert_eq!(hist["init"]["kind"].as_str(), Some("zeros"));
    assert_eq!(hist["len"].as_str(), Some("64"));
}

#[test]
fn unknowns_are_todos_with_reasons_and_fail_check() {
    let t = tempfile::tempdir().unwrap();
    // The same tree without its run script: n comes from argv[1] and nothing says its value.
    let root = t.path().join("tree");
    let bench = root.join("cuda/gather");
    std::fs::create_dir_all(&bench).unwrap();
    std::fs::copy(
        fixture().join("cuda/gather/gather.cu"),
        bench.join("gather.cu"),
    )
    .unwrap();
    let (units, ids) = extract(&root, t.path());
    let out = t.path().join("inferred");
    infer(&units, &out, &root);
    let id = id_of(&ids, "gather_scale");
    let f = out.join(format!("{id}.toml"));
    let text = std::fs::read_to_string(&f).unwrap();
    assert!(
        text.contains("n = \"TODO\"  # `n` = `atoi(argv[1])`: `atoi(argv[1])` is command-line argument 1 and no run script gives it"),
        "{text}"
    );
    harness_check(&f, &units, id).failure();
    // --assume-size fills it, marked, and the harness then checks.
    let out2 = t.path().join("assumed");
    kp().args(["harness", "infer"])
        .arg(&units)
        .arg("-o")
        .arg(&out2)
        .arg("--root")
        .arg(&root)
        .args(["--assume-size", "4096"])
        .assert()
        .success();
    let f2 = out2.join(format!("{id}.toml"));
    let text = std::fs::read_to_string(&f2).unwrap();
    assert!(
        text.contains("n = 4096  # ASSUMED (--assume-size)"),
        "{text}"
    );
    harness_check(&f2, &units, id).success();
}

#[test]
fn selfcheck_without_a_gpu_reports_harness_failures_and_no_gpu() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    let bench = root.join("cuda/gather");
    std::fs::create_dir_all(&bench).unwrap();
    std::fs::copy(
        fixture().join("cuda/gather/gather.cu"),
        bench.join("gather.cu"),
    )
    .unwrap();
    let (units, _) = extract(&root, t.path());
    let out = t.path().join("inferred");
    infer(&units, &out, &root);
    let report = t.path().join("report.jsonl");
    let records = t.path().join("records.jsonl");
    let a = kp()
        .args(["harness", "selfcheck"])
        .arg(&units)
        .arg("--inferred-dir")
        .arg(&out)
        .arg("--out")
        .arg(&report)
        .arg("--records-out")
        .arg(&records)
        .assert()
        .code(kernelpair::exit::PARTIAL as i32);
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    assert!(
        stdout.contains("FAIL harness (size from the command line, no run script)"),
        "{stdout}"
    );
    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 2);
    for l in &lines {
        assert_eq!(l["origin"], "inferred");
        assert_eq!(l["pass"], false);
        assert_eq!(l["checks"][0]["name"], "harness");
        assert_eq!(l["checks"][0]["result"], "fail");
        assert_eq!(l["checks"][5]["result"], "not_run");
    }
    // The records carry the harness and its provenance for verify.
    for r in kernelpair::jsonl::read_records(&records).unwrap() {
        let Record::Pair(p) = r else { continue };
        let h = p.harness_origin.expect("provenance");
        assert_eq!(h.origin, HarnessOrigin::Inferred);
        assert_eq!(h.selfcheck_pass, Some(false));
        assert!(p.harness.unwrap().ends_with(&format!("{}.toml", p.id)));
    }
}

#[test]
fn verify_uses_inferred_harnesses_where_no_hand_written_one_exists() {
    let t = tempfile::tempdir().unwrap();
    let (units, _) = extract(&fixture(), t.path());
    let out = t.path().join("inferred");
    infer(&units, &out, &fixture());
    // Fill the slow slots with the fast kernels (an identity pair) so verify considers them.
    let recs: Vec<Record> = kernelpair::jsonl::read_records(&units)
        .unwrap()
        .into_iter()
        .map(|r| match r {
            Record::Pair(mut p) => {
                p.slow = kernelpair::record::Slow::natural(p.fast.clone());
                Record::Pair(p)
            }
            r => r,
        })
        .collect();
    let input = t.path().join("pairs.jsonl");
    kernelpair::jsonl::write_records(&input, &recs).unwrap();
    let verified = t.path().join("verified.jsonl");
    let a = kp()
        .args(["verify", "--in"])
        .arg(&input)
        .arg("--out")
        .arg(&verified)
        .arg("--inferred-dir")
        .arg(&out)
        .args(["--timeout-s", "30"])
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).to_string();
    assert!(
        stderr.contains("harnesses: 0 hand-written, 2 inferred"),
        "{stderr}"
    );
    for r in kernelpair::jsonl::read_records(&verified).unwrap() {
        let Record::Pair(p) = r else { continue };
        assert_eq!(p.harness_origin.unwrap().origin, HarnessOrigin::Inferred);
        let v = p.verification.unwrap();
        // Without a GPU the harness still resolved: the status is no_gpu, not no_harness.
        assert_ne!(v.status.as_str(), "no_harness", "{}", v.reason);
    }
}

/// On the GPU: both inferred harnesses pass every self-check; a harness whose grid covers
/// half the output fails `writes_every_output`.
#[test]
#[ignore = "needs a GPU; run on the device with -- --ignored"]
fn gpu_selfcheck_passes_good_harnesses_and_catches_a_short_grid() {
    let t = tempfile::tempdir().unwrap();
    let (units, ids) = extract(&fixture(), t.path());
    let out = t.path().join("inferred");
    infer(&units, &out, &fixture());
    let report = t.path().join("report.jsonl");
    let rows = selfcheck_inferred(&units, &out, None, &report, 0);
    assert_eq!(rows.len(), ids.len(), "one row per pair: {rows:?}");
    for v in &rows {
        assert_eq!(v["pass"], true, "{v}");
        assert!(
            v["checks"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["result"] == "pass"),
            "{v}"
        );
    }
    let id = id_of(&ids, "gather_scale");
    let f = out.join(format!("{id}.toml"));
    let text = std::fs::read_to_string(&f).unwrap();
    std::fs::write(&f, text.replace("(n + 256 - 1) / 256", "n / 512")).unwrap();
    let rows = selfcheck_inferred(
        &units,
        &out,
        Some(id),
        &report,
        kernelpair::exit::PARTIAL as i32,
    );
    let v = &rows[0];
    assert_eq!(v["checks"][2]["name"], "writes_every_output");
    assert_eq!(v["checks"][2]["result"], "fail", "{v}");
}

// ------------------------------------------- LLM completion against a scripted loopback server

use common::{all_text, serve};

#[test]
fn llm_completion_repairs_reruns_from_cache_and_keeps_the_key_out_of_files() {
    let t = tempfile::tempdir().unwrap();
    // The gather tree without its run script: `n` (and for gather_scale, m) are TODOs.
    let root = t.path().join("tree");
    let bench = root.join("cuda/gather");
    std::fs::create_dir_all(&bench).unwrap();
    std::fs::copy(
        fixture().join("cuda/gather/gather.cu"),
        bench.join("gather.cu"),
    )
    .unwrap();
    let (units, ids) = extract(&root, t.path());
    let inferred = t.path().join("inferred");
    infer(&units, &inferred, &root);
    let scale_id = id_of(&ids, "gather_scale").to_string();
    let hist_id = id_of(&ids, "histogram").to_string();
    let drafts: std::collections::BTreeMap<String, String> = [&scale_id, &hist_id]
        .iter()
        .map(|id| {
            let d = std::fs::read_to_string(inferred.join(format!("{id}.toml"))).unwrap();
            (id.to_string(), d)
        })
        .collect();
    let good = move |kernel: &str| -> String {
        let id = if kernel == "gather_scale" {
            &scale_id
        } else {
            &hist_id
        };
        let d = &drafts[id];
        let fixed: String = d
            .lines()
            .map(|l| {
                if l.starts_with("n = \"TODO\"") {
                    "n = 1000".to_string()
                } else if l.starts_with("m = \"TODO\"") {
                    "m = 500".to_string()
                } else {
                    l.to_string()
                }
            })
            .collect::<Vec<_>>()
            .join("\n");
        format!("Here it is:\n```toml\n{fixed}\n```\n")
    };
    // gather_scale: a good answer at once. histogram: malformed TOML, then one whose
    // arguments do not match the kernel (fails `harness check`), then the fix.
    let (url, seen) = serve(move |req, before| {
        let first = req.body["messages"][1]["content"].as_str().unwrap_or("");
        let kernel = if first.contains("The kernel `histogram`") {
            "histogram"
        } else {
            "gather_scale"
        };
        let turn = req.body["messages"].as_array().map_or(0, |m| m.len());
        let _ = before;
        match (kernel, turn) {
            ("histogram", 2) => "```toml\nthis is = = not toml\n```".into(),
            ("histogram", 4) => "```toml\n[sizes]\nn = 1000\n\n[[args]]\nname = \"keys\"\ntype = \"i32\"\nlen = \"n\"\ninit = { kind = \"int_range\", lo = 0, hi = 63 }\nrole = \"in\"\n\n[[args]]\nname = \"hist\"\ntype = \"u32\"\nlen = 64\ninit = { kind = \"zeros\" }\nrole = \"inout\"\n\n[[launch]]\nkernel = \"histogram\"\ngrid = [\"4\"]\nblock = [\"256\"]\n```".into(),
            (k, _) => good(k),
        }
    });
    let llm = t.path().join("llm.toml");
    std::fs::write(
        &llm,
        format!("base_url = \"{url}\"\nmodel = \"scripted\"\napi_key_env = \"KP_HARNESS_TEST_KEY\"\nmax_retries = 0\n"),
    )
    .unwrap();
    let cache = t.path().join("cache");
    let out = t.path().join("completed");
    let run = || {
        kp().args(["harness", "complete"])
            .arg(&units)
            .arg("--inferred-dir")
            .arg(&inferred)
            .arg("-o")
            .arg(&out)
            .arg("--llm")
            .arg(&llm)
            .arg("--cache")
            .arg(&cache)
            .arg("--root")
            .arg(&root)
            .env("KP_HARNESS_TEST_KEY", "sk-secret-test-4242")
            .assert()
            .success()
    };
    let a = run();
    let stdout = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    assert!(
        stdout.contains("gather/gather_scale: completed (1 answer(s))"),
        "{stdout}"
    );
    assert!(
        stdout.contains("gather/histogram: completed (3 answer(s))"),
        "{stdout}"
    );
    let s = seen.lock().unwrap().clone();
    assert_eq!(s.len(), 4);
    assert!(s
        .iter()
        .all(|r| r.auth.as_deref() == Some("Bearer sk-secret-test-4242")));
    // The repair turns carry the errors: the TOML parse error, then the check failure.
    let repairs: Vec<String> = s
        .iter()
        .filter_map(|r| {
            let m = r.body["messages"].as_array().unwrap();
            (m.len() > 2).then(|| m.last().unwrap()["content"].as_str().unwrap().to_string())
        })
        .collect();
    assert_eq!(repairs.len(), 2, "{repairs:?}");
    assert!(repairs[0].contains("not a valid harness"), "{}", repairs[0]);
    assert!(
        repairs[1].contains("does not match kernel"),
        "{}",
        repairs[1]
    );
    // Each completed harness passes `harness check` and has no TODO.
    for id in [id_of(&ids, "gather_scale"), id_of(&ids, "histogram")] {
        let f = out.join(format!("{id}.toml"));
        assert!(std::fs::read_to_string(&f)
            .unwrap()
            .contains("# origin: llm"));
        harness_check(&f, &units, id).success();
    }
    // A rerun sends nothing: every answer comes from the cache.
    let before =
        std::fs::read_to_string(out.join(format!("{}.toml", id_of(&ids, "histogram")))).unwrap();
    let a = run();
    assert_eq!(seen.lock().unwrap().len(), 4);
    assert!(String::from_utf8_lossy(&a.get_output().stderr).contains("0 request(s) sent"));
    assert_eq!(
        std::fs::read_to_string(out.join(format!("{}.toml", id_of(&ids, "histogram")))).unwrap(),
        before
    );
    // The key is in no written file.
    for d in [&out, &cache, &inferred] {
        assert!(
            !all_text(d).contains("sk-secret-test-4242"),
            "{}",
            d.display()
        );
    }
}

/// Regression (self-check launch bug): the fixture sgemm harness launches `sgemm_naive` on the
/// slow side and `sgemm_tiled` on the fast side. The identity control must give both sides
/// the fast launches: the harness stage passes and (without a GPU) the run stops at
/// `runs_clean` for want of a GPU, not at `harness` with "the slow unit's kernel is ...".
#[test]
fn selfcheck_runs_the_fast_kernel_with_the_fast_sides_launches() {
    let t = tempfile::tempdir().unwrap();
    let root = match std::env::var_os("KERNELPAIR_FIXTURES") {
        Some(d) => PathBuf::from(d).join("parboil"),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/parboil"),
    };
    let (units, ids) = extract(&root, t.path());
    let id = id_of(&ids, "sgemm_tiled");
    let report = t.path().join("report.jsonl");
    let a = kp()
        .args(["harness", "selfcheck"])
        .arg(&units)
        .arg("--pair")
        .arg(id)
        .arg("--harness-dir")
        .arg(&root)
        .arg("--out")
        .arg(&report)
        .assert();
    let out = String::from_utf8_lossy(&a.get_output().stdout).to_string();
    let v: serde_json::Value = serde_json::from_str(
        std::fs::read_to_string(&report)
            .unwrap()
            .lines()
            .next()
            .unwrap(),
    )
    .unwrap();
    assert_eq!(v["checks"][0]["name"], "harness");
    assert_eq!(v["checks"][0]["result"], "pass", "{out}\n{v}");
    // On a GPU the fast kernel runs clean under its own launches; here it stops for want
    // of one.
    let ran = &v["checks"][1];
    assert_eq!(ran["name"], "runs_clean");
    assert!(
        ran["result"] == "pass" || ran["detail"].as_str().is_some_and(|d| d.contains("no_gpu")),
        "{v}"
    );
}

/// Two programs in one folder (llm.c's dev/cuda: one program per file, each with its own
/// `main`): a size one program's host code never gives is not taken from the other's.
#[test]
fn a_program_with_its_own_main_does_not_borrow_another_programs_sizes() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("scale.cu"),
        "__global__ void scale(float *x, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) x[i] *= 2.0f;\n}\n\
         void run(float *d, int n) {\n  scale<<<(n + 255) / 256, 256>>>(d, n);\n}\n\
         int main(int argc, char **argv) {\n  float *d;\n  cudaMalloc(&d, N * sizeof(float));\n  run(d, N);\n  return 0;\n}\n",
    )
    .unwrap();
    // Another program of the folder defines an `N` of its own.
    std::fs::write(
        root.join("other.cu"),
        "int main() {\n  int N = 4096;\n  return N;\n}\n",
    )
    .unwrap();
    // A helper file without a `main` is host code of either program.
    std::fs::write(
        root.join("common.h"),
        "static int unused_helper(int a) { return a; }\n",
    )
    .unwrap();
    let (units, ids) = extract(&root, t.path());
    let out = t.path().join("inferred");
    infer(&units, &out, &root);
    let text = std::fs::read_to_string(out.join(format!("{}.toml", id_of(&ids, "scale")))).unwrap();
    assert!(!text.contains("4096"), "{text}");
    assert!(
        text.contains("`N` has no definition in the host code"),
        "{text}"
    );
    // Without the other program's `main`, its `N` is file-level host code of this one.
    std::fs::write(root.join("other.cu"), "int N = 4096;\n").unwrap();
    let out2 = t.path().join("inferred2");
    infer(&units, &out2, &root);
    let text =
        std::fs::read_to_string(out2.join(format!("{}.toml", id_of(&ids, "scale")))).unwrap();
    assert!(text.contains("4096"), "{text}");
}

/// Host code is read as the compiler reads it: a size under an `#ifdef` of a macro nothing
/// defines is not taken, one inside an expression leaves the expression whole (Chai's
/// `in_size` / `#ifdef CUDA_8_0` / `+ sizeof(int)` / `#endif`), the default of a dataset
/// choice is the one compiled (PolyBench's `STANDARD_DATASET`, not the first `#define`), and a
/// pointer the kernel names nowhere past its parameter list, allocated only under an
/// `#ifdef` that is off, gets length 1.
#[test]
fn host_code_is_read_with_its_settled_ifdefs_and_unused_pointers_take_length_1() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("tree");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(
        root.join("sizes.h"),
        "#ifndef SIZES_H\n#define SIZES_H\n\
         #if !defined(MINI) && !defined(LARGE)\n#define STANDARD\n#endif\n\
         #ifdef MINI\n#define N 512\n#endif\n#ifdef STANDARD\n#define N 2048\n#endif\n\
         #ifdef LARGE\n#define N 8192\n#endif\n#endif\n",
    )
    .unwrap();
    std::fs::write(
        root.join("main.cu"),
        "#include \"sizes.h\"\n\
         __global__ void scale(float *x, float *spare, int n) {\n\
           extern __shared__ float tile[];\n\
           int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
           if (i < n) { tile[threadIdx.x] = x[i]; x[i] = 2.0f * tile[threadIdx.x]; }\n\
         #ifdef KEEP_SPARE\n  spare[i] = x[i];\n#endif\n}\n\
         int main() {\n  float *d, *s;\n  int n = N;\n\
           cudaMalloc(&d, n * sizeof(float));\n\
         #ifdef KEEP_SPARE\n  cudaMalloc(&s, n * sizeof(float));\n#endif\n\
           unsigned int smem = 256 * sizeof(float)\n\
         #ifdef PAD_SHARED\n      + 128\n#endif\n      ;\n\
           scale<<<(n + 255) / 256, 256, smem>>>(d, s, n);\n  return 0;\n}\n",
    )
    .unwrap();
    let (units, ids) = extract(&root, t.path());
    let out = t.path().join("inferred");
    infer(&units, &out, &root);
    let text = std::fs::read_to_string(out.join(format!("{}.toml", id_of(&ids, "scale")))).unwrap();
    assert!(text.contains("n = 2048  # host `n`"), "{text}");
    assert!(!text.contains("unexpected `#`"), "{text}");
    assert!(text.contains("shared_mem = \"256 * 4\""), "{text}");
    assert!(
        text.contains(
            "len = \"1\"  # neither kernel names it past its parameter list, and the host code allocates none"
        ),
        "{text}"
    );
    assert!(!text.contains("= \"TODO\""), "{text}");
}
