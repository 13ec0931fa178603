//! `kernelpair extract` on temporary copies of the fixture suites: what is found, how it
//! pairs, where it came from, and how bad input is reported.

use assert_cmd::Command;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

fn copy_tree(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let dst = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dst).unwrap();
        } else {
            std::fs::copy(e.path(), &dst).unwrap();
        }
    }
}

/// A temporary copy of a fixture suite.
struct Suite {
    _dir: tempfile::TempDir,
    root: PathBuf,
    out: PathBuf,
}

impl Suite {
    fn copy(name: &str) -> Suite {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join(name);
        copy_tree(&fixture(name), &root);
        let out = dir.path().join("out.jsonl");
        Suite {
            _dir: dir,
            root,
            out,
        }
    }

    fn empty() -> Suite {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("empty");
        std::fs::create_dir_all(&root).unwrap();
        let out = dir.path().join("out.jsonl");
        Suite {
            _dir: dir,
            root,
            out,
        }
    }

    fn write(&self, rel: &str, bytes: &[u8]) {
        let p = self.root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }

    /// Run extract with extra flags; returns (exit code, stderr, records).
    fn extract(&self, flags: &[&str]) -> (i32, String, Vec<Value>) {
        let out = Command::cargo_bin("kernelpair")
            .unwrap()
            .arg("extract")
            .arg(&self.root)
            .arg("-o")
            .arg(&self.out)
            .args(flags)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        let records = std::fs::read_to_string(&self.out)
            .map(|t| {
                t.lines()
                    .map(|l| serde_json::from_str(l).unwrap())
                    .collect()
            })
            .unwrap_or_default();
        (out.status.code().unwrap(), stderr, records)
    }
}

fn of_type<'a>(records: &'a [Value], ty: &str) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|r| r["type"] == ty)
        .map(|r| &r["data"])
        .collect()
}

/// `slow_variant:slow_kernel -> fast_variant:fast_kernel rule [identical]` per pair.
fn pair_lines(records: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = of_type(records, "pair")
        .iter()
        .map(|p| {
            let slow = if p["slow"]["unit"].is_null() {
                "-".to_string()
            } else {
                format!(
                    "{}:{}",
                    p["slow"]["unit"]["variant"].as_str().unwrap(),
                    p["slow"]["unit"]["kernel"].as_str().unwrap()
                )
            };
            format!(
                "{} {} -> {}:{} {}{}",
                p["benchmark"].as_str().unwrap(),
                slow,
                p["fast"]["variant"].as_str().unwrap(),
                p["fast"]["kernel"].as_str().unwrap(),
                p["rule"].as_str().unwrap(),
                if p["identical"] == true {
                    " identical"
                } else {
                    ""
                }
            )
        })
        .collect();
    v.sort();
    v
}

fn units_per_benchmark(records: &[Value]) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for u in of_type(records, "unit") {
        *m.entry(u["benchmark"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
    }
    m
}

#[test]
fn parboil_fixture_units_pairs_and_unpaired() {
    let s = Suite::copy("parboil");
    let (code, stderr, recs) = s.extract(&["--no-compile"]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        units_per_benchmark(&recs),
        BTreeMap::from([
            ("histo".to_string(), 6),
            ("reduce".to_string(), 2),
            ("sgemm".to_string(), 2),
            ("stencil".to_string(), 3),
            ("vecadd".to_string(), 5),
        ])
    );
    assert_eq!(
        pair_lines(&recs),
        [
            "histo cuda_base:histo_kernel -> cuda:histo_kernel name_and_params",
            "histo cuda_base:histo_normalize -> cuda:histo_normalize name_and_params identical",
            "histo cuda_base_tex:histo_float_kernel -> cuda_tex:histo_float_kernel name_and_params",
            "reduce cuda_base:reduceSum -> cuda:reduceSum name_and_params",
            "sgemm cuda_base:sgemm_naive -> cuda:sgemm_tiled renamed_sole_kernel",
            "stencil cuda_base:stencil7 -> cuda:stencil7 name_and_params",
            "stencil cuda_base:stencil7 -> cuda_fermi:stencil7 name_and_params",
            "vecadd cuda_base:vecAdd -> cuda:vecAdd name_and_params",
            "vecadd cuda_base:vecScale -> cuda:vecScale name_and_params identical",
        ]
    );
    let unpaired = of_type(&recs, "unpaired");
    assert_eq!(unpaired.len(), 1);
    assert_eq!(unpaired[0]["kernel"], "vecCopyChecked");
    assert_eq!(unpaired[0]["variant"], "cuda_base");
    assert!(unpaired[0]["reason"]
        .as_str()
        .unwrap()
        .contains("no kernel in cuda matches"));
    assert!(of_type(&recs, "skipped").is_empty());
    // OpenCL and CPU variants are ignored.
    assert!(of_type(&recs, "unit")
        .iter()
        .all(|u| u["variant"].as_str().unwrap().starts_with("cuda")));
    // Natural pairs carry both units; ids are content hashes.
    for p in of_type(&recs, "pair") {
        assert_eq!(p["slow"]["kind"], "natural");
        assert_ne!(p["slow"]["unit"]["id"], p["fast"]["id"]);
    }
    // The summary table names every benchmark and the totals.
    for word in ["benchmark", "vecadd", "stencil", "total", "suite: parboil"] {
        assert!(stderr.contains(word), "{word} missing from:\n{stderr}");
    }
}

#[test]
fn units_record_where_they_are_and_how_they_launch() {
    let s = Suite::copy("parboil");
    let (_, _, recs) = s.extract(&["--no-compile"]);
    let unit = |variant: &str, kernel: &str| -> Value {
        (*of_type(&recs, "unit")
            .into_iter()
            .find(|u| u["variant"] == variant && u["kernel"] == kernel)
            .unwrap_or_else(|| panic!("no unit {variant}:{kernel}")))
        .clone()
    };
    let naive = unit("cuda_base", "sgemm_naive");
    assert_eq!(
        naive["path"],
        "benchmarks/sgemm/src/cuda_base/sgemm_kernel.cu"
    );
    assert_eq!(naive["line"], 4);
    let types: Vec<&str> = naive["params"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["A", "B", "C", "M", "N", "K", "alpha", "beta"]);
    // Launch sites come from the host file of the same variant only.
    let tiled = unit("cuda", "sgemm_tiled");
    let sites = tiled["launch_sites"].as_array().unwrap();
    assert_eq!(sites.len(), 1, "{sites:?}");
    assert_eq!(sites[0]["path"], "benchmarks/sgemm/src/cuda/main.cu");
    assert_eq!(sites[0]["grid"], "grid");
    assert_eq!(sites[0]["block"], "threads");
    let naive_sites = naive["launch_sites"].as_array().unwrap();
    assert_eq!(naive_sites.len(), 1);
    assert_eq!(
        naive_sites[0]["path"],
        "benchmarks/sgemm/src/cuda_base/main.cu"
    );
    // Licence: the MIT LICENSE at the suite root; no commit outside a git checkout.
    let lic = &naive["provenance"]["licence"];
    assert_eq!(lic["id"], "MIT");
    assert_eq!(lic["source"], "LICENSE");
    assert_eq!(lic["redistributable"], true);
    assert!(naive["provenance"]["commit"].is_null());
}

#[test]
fn rodinia_fixture_gives_pending_pairs_only() {
    let s = Suite::copy("rodinia");
    let (code, stderr, recs) = s.extract(&["--no-compile"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("suite: rodinia"), "auto-detected: {stderr}");
    assert_eq!(
        units_per_benchmark(&recs),
        BTreeMap::from([
            ("cluster".to_string(), 2),
            ("heat2d".to_string(), 1),
            ("pathcost".to_string(), 1),
        ])
    );
    assert_eq!(
        pair_lines(&recs),
        [
            "cluster - -> cuda:assign_clusters no_naive_variant",
            "cluster - -> cuda:transpose_points no_naive_variant",
            "heat2d - -> cuda:heat_step no_naive_variant",
            "pathcost - -> cuda:path_row no_naive_variant",
        ]
    );
    for p in of_type(&recs, "pair") {
        assert_eq!(p["slow"]["kind"], "pending");
    }
    assert!(of_type(&recs, "unpaired").is_empty());
    // The kernel in a header (.cuh) is found; opencl/ and openmp/ are ignored.
    assert!(of_type(&recs, "unit")
        .iter()
        .any(|u| u["path"] == "cuda/pathcost/pathcost_kernel.cuh"));
    assert!(of_type(&recs, "unit")
        .iter()
        .all(|u| u["path"].as_str().unwrap().starts_with("cuda/")));
}

#[test]
fn generic_tree_and_licence_header_override() {
    let s = Suite::copy("generic");
    let (code, stderr, recs) = s.extract(&["--no-compile"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("suite: generic"), "{stderr}");
    let units = of_type(&recs, "unit");
    let names: Vec<&str> = units
        .iter()
        .map(|u| u["kernel"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["saxpy", "dot_partial", "transpose_tiled"]);
    assert_eq!(of_type(&recs, "pair").len(), 3);
    let lic =
        |k: &str| units.iter().find(|u| u["kernel"] == k).unwrap()["provenance"]["licence"].clone();
    let header = lic("transpose_tiled");
    assert_eq!(header["id"], "BSD-3-Clause");
    assert_eq!(header["source"], "header");
    assert_eq!(
        header["copyright"],
        "Copyright (c) 2026, kernelpair authors"
    );
    let root = lic("saxpy");
    assert_eq!(
        (root["id"].as_str(), root["source"].as_str()),
        (Some("MIT"), Some("LICENSE"))
    );
}

#[test]
fn bad_inputs_are_named_skipped_and_the_rest_extracted() {
    let s = Suite::copy("parboil");
    s.write(
        "benchmarks/vecadd/src/cuda/blob.cu",
        b"\x7fELF\x02\x01\0\0binary",
    );
    s.write(
        "benchmarks/sgemm/src/cuda/latin1.cu",
        b"// r\xe9sum\xe9\n__global__ void k() {}\n",
    );
    let big = format!("// {}\n", "x".repeat(3 * 1024 * 1024));
    s.write("benchmarks/histo/src/cuda/huge.cu", big.as_bytes());
    #[cfg(unix)]
    std::os::unix::fs::symlink("..", s.root.join("benchmarks/reduce/src/cuda/loop")).unwrap();
    // A binary file outside any extracted variant is not even read.
    s.write("benchmarks/vecadd/src/opencl_base/blob.cu", b"\0\0");
    let (code, stderr, recs) = s.extract(&["--no-compile"]);
    assert_eq!(code, 3, "{stderr}");
    let mut skipped: Vec<(String, String)> = of_type(&recs, "skipped")
        .iter()
        .map(|r| {
            (
                r["path"].as_str().unwrap().to_string(),
                r["reason"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    skipped.sort();
    let mut want = vec![
        ("benchmarks/histo/src/cuda/huge.cu", "too_large"),
        ("benchmarks/vecadd/src/cuda/blob.cu", "binary"),
    ];
    if cfg!(unix) {
        want.push(("benchmarks/reduce/src/cuda/loop", "symlink_loop"));
    }
    want.sort();
    let want: Vec<(String, String)> = want
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(skipped, want);
    for (path, _) in &want {
        assert!(
            stderr.contains(&format!("warning: skipped {path}")),
            "{path} not in:\n{stderr}"
        );
    }
    // Everything else is still extracted; one Latin-1 byte costs no kernel: the file is
    // decoded as Windows-1252 and its unit says so.
    let units = of_type(&recs, "unit");
    assert_eq!(units.len(), 19);
    assert_eq!(of_type(&recs, "pair").len(), 9);
    let k = units
        .iter()
        .find(|u| u["path"] == "benchmarks/sgemm/src/cuda/latin1.cu")
        .expect("the Latin-1 file's kernel");
    assert!(k["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["code"] == "decoded_non_utf8"));
    assert!(
        stderr
            .contains("benchmarks/sgemm/src/cuda/latin1.cu is not UTF-8; read it as windows-1252"),
        "{stderr}"
    );
}

#[test]
fn max_file_size_flag_applies() {
    let s = Suite::copy("rodinia");
    let (code, _, recs) = s.extract(&["--no-compile", "--max-file-size", "1500"]);
    assert_eq!(code, 3);
    let skipped = of_type(&recs, "skipped");
    // heat2d.cu and cluster files are larger than 1500 bytes; pathcost_kernel.cuh is not.
    assert!(skipped
        .iter()
        .any(|r| r["path"] == "cuda/heat2d/heat2d.cu" && r["reason"] == "too_large"));
    assert!(of_type(&recs, "unit")
        .iter()
        .any(|u| u["kernel"] == "path_row"));
    assert!(!of_type(&recs, "unit")
        .iter()
        .any(|u| u["kernel"] == "heat_step"));
}

#[cfg(unix)]
#[test]
fn unreadable_file_is_skipped() {
    use std::os::unix::fs::PermissionsExt;
    let s = Suite::copy("generic");
    let p = s.root.join("blas/saxpy.cu");
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o000)).unwrap();
    if std::fs::read(&p).is_ok() {
        eprintln!("skipped: running as root, permissions do not stop reads");
        return;
    }
    let (code, _, recs) = s.extract(&["--no-compile"]);
    assert_eq!(code, 3);
    let skipped = of_type(&recs, "skipped");
    assert_eq!(skipped[0]["path"], "blas/saxpy.cu");
    assert_eq!(skipped[0]["reason"], "unreadable");
    assert_eq!(of_type(&recs, "unit").len(), 1);
}

#[test]
fn nonexistent_suite_is_fatal_with_a_clear_message() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-suite");
    Command::cargo_bin("kernelpair")
        .unwrap()
        .arg("extract")
        .arg(&missing)
        .arg("-o")
        .arg(dir.path().join("o.jsonl"))
        .assert()
        .code(1)
        .stderr(predicates::str::contains("does not exist"))
        .stderr(predicates::str::contains("no-such-suite"));
    assert!(!dir.path().join("o.jsonl").exists());
}

#[test]
fn empty_suite_is_partial_with_an_empty_output() {
    let s = Suite::empty();
    let (code, stderr, recs) = s.extract(&["--no-compile"]);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("no CUDA kernel files found"), "{stderr}");
    assert!(recs.is_empty());
    assert!(s.out.exists(), "an empty output file is still written");
}

#[test]
fn user_extractor_file_describes_a_new_suite() {
    let s = Suite::empty();
    let k =
        "__global__ void add(float *x, int n) { int i = threadIdx.x; if (i < n) x[i] += 1.0f; }\n";
    let k2 = "__global__ void add(float *x, int n) { for (int i = threadIdx.x; i < n; i += blockDim.x) x[i] += 1.0f; }\n";
    s.write("apps/add/slow/k.cu", k.as_bytes());
    s.write("apps/add/fast/k.cu", k2.as_bytes());
    s.write("apps/add/ref/k.cu", k.as_bytes());
    let desc = s.root.join("../mine.toml");
    std::fs::write(
        &desc,
        r#"
name = "mine"
[layout]
scope = "apps/{benchmark}/{variant}"
variants = ["slow*", "fast*"]
[files]
kernel = ["*.cu"]
[pairing]
mode = "variants"
naive = '^slow(?P<suffix>.*)$'
counterpart = "fast{suffix}"
"#,
    )
    .unwrap();
    let (code, stderr, recs) = s.extract(&["--no-compile", "--extractor", desc.to_str().unwrap()]);
    assert_eq!(code, 0, "{stderr}");
    assert_eq!(
        pair_lines(&recs),
        ["add slow:add -> fast:add name_and_params"]
    );
    assert_eq!(of_type(&recs, "unit")[0]["suite"], "mine");
    // A broken description is fatal and names the file.
    std::fs::write(&desc, "name = \"x\"\n[layout]\nscope = 3\n").unwrap();
    let (code, stderr, _) = s.extract(&["--extractor", desc.to_str().unwrap()]);
    assert_eq!(code, 1);
    assert!(stderr.contains("mine.toml"), "{stderr}");
}

#[test]
fn output_is_deterministic_and_jobs_do_not_change_it() {
    let s = Suite::copy("parboil");
    s.extract(&["--no-compile"]);
    let first = std::fs::read(&s.out).unwrap();
    s.extract(&["--no-compile", "--jobs", "1"]);
    assert_eq!(first, std::fs::read(&s.out).unwrap());
    let out = Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["extract", "--no-compile", "-o", "-"])
        .arg(&s.root)
        .output()
        .unwrap();
    assert_eq!(
        out.stdout, first,
        "`-o -` writes the same records to stdout"
    );
}

#[test]
fn provenance_records_the_git_commit_of_a_checkout() {
    let s = Suite::copy("generic");
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(&s.root)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .output()
    };
    match git(&["init", "-q"]) {
        Ok(o) if o.status.success() => {}
        _ => {
            eprintln!("skipped: no git here");
            return;
        }
    }
    git(&["add", "."]).unwrap();
    assert!(git(&["commit", "-qm", "x"]).unwrap().status.success());
    let head = String::from_utf8(git(&["rev-parse", "HEAD"]).unwrap().stdout).unwrap();
    let (_, _, recs) = s.extract(&["--no-compile"]);
    for u in of_type(&recs, "unit") {
        assert_eq!(u["provenance"]["commit"], head.trim());
    }
}

#[test]
fn compile_check_records_results_or_reports_missing_nvrtc_once() {
    let s = Suite::copy("parboil");
    let cache = s.root.parent().unwrap().join("cache");
    let cache_flag = ["--cache-dir", cache.to_str().unwrap()];
    let (code, stderr, recs) = s.extract(&cache_flag);
    let units = of_type(&recs, "unit");
    if stderr.contains("no NVRTC found") {
        assert!(
            std::env::var_os("KERNELPAIR_REQUIRE_NVRTC").is_none(),
            "NVRTC required"
        );
        eprintln!(
            "skipped: compile results (no NVRTC here); the one missing-NVRTC line is checked"
        );
        assert_eq!(code, 3);
        assert_eq!(stderr.matches("no NVRTC found").count(), 1, "{stderr}");
        assert!(units.iter().all(|u| u["compile"].is_null()));
        return;
    }
    assert_eq!(code, 0, "{stderr}");
    for u in &units {
        assert_eq!(u["compile"]["arch"], "sm_90");
    }
    // The legacy texture reference compiles on CUDA 12+ through the shim; the unit says
    // what the harness must upload.
    let tex = units.iter().find(|u| u["variant"] == "cuda_tex").unwrap();
    assert_eq!(tex["compile"]["ok"], true, "{}", tex["compile"]["log"]);
    assert!(tex["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .any(|d| d["code"] == "texture_shim"));
    // Everything in the fixtures compiles.
    let failed: Vec<String> = units
        .iter()
        .filter(|u| u["compile"]["ok"] != true)
        .map(|u| format!("{}: {}", u["kernel"], u["compile"]["log"]))
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
    // A second run reads the cached results and writes the same file; identical units
    // (the two identical pairs) share one entry.
    let first = std::fs::read(&s.out).unwrap();
    // (Results are `<key>.json`; the folder also remembers the NVRTC version.)
    let entries = std::fs::read_dir(&cache)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
        .count();
    assert_eq!(entries, units.len() - 2, "one entry per distinct unit");
    let (code2, _, _) = s.extract(&cache_flag);
    assert_eq!(code2, 0);
    assert_eq!(std::fs::read(&s.out).unwrap(), first);
}

/// `slow_kernel -> fast_kernel rule` of every natural pair, sorted.
fn natural_pairs(recs: &[Value]) -> Vec<String> {
    let mut v: Vec<String> = of_type(recs, "pair")
        .iter()
        .filter(|p| p["slow"]["kind"] == "natural")
        .map(|p| {
            format!(
                "{} -> {} {}",
                p["slow"]["unit"]["kernel"].as_str().unwrap(),
                p["fast"]["kernel"].as_str().unwrap(),
                p["rule"].as_str().unwrap()
            )
        })
        .collect();
    v.sort();
    v
}

/// Progressions inside whole sample programs (cuda-samples layout): `--suite auto`
/// recognises the tree, numbered series and naming pairs become natural pairs with their
/// rule, and kernels outside any progression still await synthesis.
#[test]
fn cuda_samples_progressions_pair_inside_files() {
    let s = Suite::copy("cuda-samples");
    let (code, stderr, recs) = s.extract(&["--no-compile"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("suite: cuda-samples"), "{stderr}");
    assert_eq!(
        natural_pairs(&recs),
        [
            "reduce0 -> reduce1 progression_step",
            "reduce0 -> reduce2 progression_from_first",
            "reduce1 -> reduce2 progression_step",
            "transposeNaive -> transposeCoalesced naming_pair",
        ]
    );
    let pending: Vec<&str> = of_type(&recs, "pair")
        .iter()
        .filter(|p| p["slow"]["kind"] == "pending")
        .map(|p| p["fast"]["kernel"].as_str().unwrap())
        .collect();
    assert_eq!(pending, ["copyMatrix"]);
    // Each sample is its own benchmark; host code never reaches a unit.
    let units = of_type(&recs, "unit");
    let bench: BTreeMap<&str, &str> = units
        .iter()
        .map(|u| {
            (
                u["kernel"].as_str().unwrap(),
                u["benchmark"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(bench["reduce2"], "reduceDemo");
    assert_eq!(bench["transposeNaive"], "transposeDemo");
    for u in &units {
        let src = u["source"].as_str().unwrap();
        assert!(
            !src.contains("int main") && !src.contains("checkCudaErrors"),
            "{src}"
        );
    }
}

/// llm.c's layout: numbered kernels pair when their parameters agree; a member whose
/// parameters changed is reported with the reason.
#[test]
fn llm_c_numbered_kernels_pair_when_parameters_agree() {
    let s = Suite::copy("llm-c");
    let (code, stderr, recs) = s.extract(&["--no-compile"]);
    assert_eq!(code, 0, "{stderr}");
    assert!(stderr.contains("suite: llm-c"), "{stderr}");
    // Kernels pair by number; versions (host launchers) pair where one side launches
    // several kernels (scale_forward2: scale_kernel then bias_kernel).
    assert_eq!(
        natural_pairs(&recs),
        [
            "scale_forward1 -> scale_forward2 version_step",
            "scale_forward2 -> scale_forward3 version_step",
            "scale_forward_kernel1 -> scale_forward_kernel3 progression_step",
        ]
    );
    let pairs = of_type(&recs, "pair");
    let v2 = pairs
        .iter()
        .find(|p| p["fast"]["kernel"] == "scale_forward2")
        .unwrap();
    let src = v2["fast"]["source"].as_str().unwrap();
    assert!(
        src.contains("void scale_kernel(") && src.contains("void bias_kernel("),
        "{src}"
    );
    // Each helper once (ceil_div is used by no kernel; the typedef-free merge keeps
    // exactly one copy of each kernel).
    assert_eq!(src.matches("void scale_kernel(").count(), 1);
    assert!(v2["fast"]["diagnostics"][0]["message"]
        .as_str()
        .unwrap()
        .contains("launches scale_kernel, bias_kernel in this order"));
    // A version's kernels no longer await synthesis; other kernels still do.
    let pending: Vec<&str> = pairs
        .iter()
        .filter(|p| p["slow"]["kind"] == "pending")
        .map(|p| p["fast"]["kernel"].as_str().unwrap())
        .collect();
    assert_eq!(pending, ["scale_forward_kernel4"]);
    let mut left: Vec<String> = of_type(&recs, "unpaired")
        .iter()
        .map(|u| {
            format!(
                "{}: {}",
                u["kernel"].as_str().unwrap(),
                u["reason"].as_str().unwrap()
            )
        })
        .collect();
    left.sort();
    assert_eq!(left.len(), 3, "{left:#?}");
    assert!(left[0].starts_with("scale_forward5: ") && left[0].contains("cuBLAS (`cublasCreate`)"));
    assert!(left[1].starts_with("scale_forward6: ") && left[1].contains("host `for` loop"));
    assert!(
        left[2].starts_with("scale_forward_kernel4: ")
            && left[2].contains("series scale_forward_kernelN")
            && left[2].contains("const float *"),
        "{}",
        left[2]
    );
}

/// A tree of `n` small programs, each a benchmark folder with a build file, a kernel file
/// and a header of helpers, plus one include folder every program reads.
fn many_programs(root: &Path, n: usize) {
    let put = |rel: String, text: String| {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    };
    put(
        "common/scale.cuh".into(),
        "#define SCALE 3\n__device__ inline float scaled(float x) { return SCALE * x; }\n".into(),
    );
    for i in 0..n {
        put(format!("p{i:04}/Makefile"), "all:\n\tnvcc main.cu\n".into());
        put(
            format!("p{i:04}/helpers.h"),
            format!("__device__ float h{i}(float x) {{ return x + {i}; }}\n"),
        );
        put(
            format!("p{i:04}/main.cu"),
            format!(
                "#include \"helpers.h\"\n#include \"../common/scale.cuh\"\n\
                 __global__ void k{i}(float *out, const float *in, int n) {{\n\
                 \x20   int t = blockIdx.x * blockDim.x + threadIdx.x;\n\
                 \x20   if (t < n) out[t] = scaled(h{i}(in[t]));\n}}\n\
                 __global__ void z{i}(float *out, int n) {{ if (threadIdx.x < n) out[threadIdx.x] = 0; }}\n\
                 int main() {{ k{i}<<<4, 256>>>(0, 0, 1024); return 0; }}\n"
            ),
        );
    }
}

/// Start `extract` on `root` and `kill -9` it once its journal holds `at_least` finished
/// scopes. Returns the entries present after the kill, or `None` when the run finished
/// before it could be killed.
fn kill_mid_run(root: &Path, out: &Path, at_least: usize) -> Option<usize> {
    let mut journal = out.as_os_str().to_owned();
    journal.push(".journal");
    let journal = PathBuf::from(journal);
    // Finished scopes: complete lines of the journal.
    let entries = || {
        std::fs::read(&journal)
            .map(|t| t.iter().filter(|&&b| b == b'\n').count())
            .unwrap_or(0)
    };
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_kernelpair"))
        .args(["extract", "--no-compile", "-j", "1", "-o"])
        .arg(out)
        .arg(root)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    loop {
        if child.try_wait().unwrap().is_some() {
            return None;
        }
        if entries() >= at_least {
            child.kill().unwrap(); // SIGKILL: nothing of the process runs after it
            child.wait().unwrap();
            return Some(entries());
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// `kill -9` in the middle of `extract` loses no finished benchmark: the journal beside
/// the output holds every scope finished before the kill, the output is never a
/// half-written file, and the rerun reuses the journal and ends with exactly the output
/// of an uninterrupted run (then removes the journal).
#[test]
fn kill_9_mid_run_keeps_finished_scopes_and_the_rerun_resumes_to_the_same_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out.jsonl");
    let journal = dir.path().join("out.jsonl.journal");
    let mut killed = None;
    let mut programs = 0;
    // The run must still be going when the journal has a few entries: a slow machine
    // makes that easier, a fast one may need a bigger tree.
    for n in [300, 1200, 4000] {
        let root = dir.path().join(format!("tree{n}"));
        many_programs(&root, n);
        let _ = std::fs::remove_file(&journal);
        let _ = std::fs::remove_file(&out);
        if let Some(k) = kill_mid_run(&root, &out, 5) {
            killed = Some((root, k));
            programs = n;
            break;
        }
    }
    let Some((root, kept)) = killed else {
        panic!("extract finished every tree before it could be killed");
    };
    let scopes = programs + 1; // the programs and the include folder
    assert!(
        (5..scopes).contains(&kept),
        "killed mid-run: {kept} of {scopes}"
    );
    assert!(!out.exists(), "a killed run must leave no output file");

    // The uninterrupted run, elsewhere.
    let reference = dir.path().join("reference.jsonl");
    Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["extract", "--no-compile", "-o"])
        .arg(&reference)
        .arg(&root)
        .assert()
        .success();
    assert!(!dir.path().join("reference.jsonl.journal").exists());

    // The rerun reuses every kept scope and gives the same bytes.
    let a = Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["extract", "--no-compile", "-o"])
        .arg(&out)
        .arg(&root)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        stderr.contains(&format!(
            "resumed: {kept} of {scopes} benchmark scopes from {}",
            journal.display()
        )),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(&out).unwrap(),
        std::fs::read(&reference).unwrap(),
        "the resumed output differs from the uninterrupted one"
    );
    assert!(!journal.exists(), "the journal outlived a complete output");

    // What the rerun takes from the journal really is the journal's: a marked entry shows
    // in the output, and a damaged entry is computed again.
    std::fs::remove_file(&out).unwrap();
    let kept = kill_mid_run(&root, &out, 5).expect("the second run was killed too");
    assert!(kept >= 2);
    let text = std::fs::read_to_string(&journal).unwrap();
    let mut lines: Vec<String> = text.split('\n').map(str::to_string).collect();
    let marked = lines
        .iter()
        .position(|l| {
            serde_json::from_str::<Value>(l)
                .is_ok_and(|v| !v["result"]["units"].as_array().unwrap().is_empty())
        })
        .expect("an entry with units");
    let mut v: Value = serde_json::from_str(&lines[marked]).unwrap();
    let src = v["result"]["units"][0]["source"]
        .as_str()
        .unwrap()
        .to_string();
    v["result"]["units"][0]["source"] = Value::String(format!("{src}// taken from the journal\n"));
    lines[marked] = v.to_string();
    let damaged = if marked == 0 { 1 } else { 0 };
    lines[damaged] = "{\"key\":\"0\",\"result\":{".to_string();
    std::fs::write(&journal, lines.join("\n")).unwrap();
    let a = Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["extract", "--no-compile", "-o"])
        .arg(&out)
        .arg(&root)
        .assert()
        .success();
    let stderr = String::from_utf8_lossy(&a.get_output().stderr).into_owned();
    assert!(
        stderr.contains(&format!("resumed: {} of {scopes}", kept - 1)),
        "{stderr}"
    );
    let text = std::fs::read_to_string(&out).unwrap();
    // The unit record, and the pair that embeds the unit.
    assert!(text.contains("// taken from the journal"));
    let reference = std::fs::read_to_string(&reference).unwrap();
    assert_eq!(
        text.replace("// taken from the journal\\n", ""),
        reference,
        "only the marked unit differs"
    );
}

/// Issue 26: numbered steps that write different outputs are refused before any GPU time,
/// as `not_a_progression` with the reason, and the summary counts candidates, accepted
/// and refused.
#[test]
fn numbered_phases_are_refused_and_counted() {
    let s = Suite::empty();
    s.write(
        "app/phases.cu",
        b"__global__ void phase1(float *a, float *b, int n) { int i = threadIdx.x; if (i < n) a[i] = b[i] * 2.0f; }\n\
          __global__ void phase2(float *a, float *b, int n) { int i = threadIdx.x; if (i < n) b[i] = a[i] + 1.0f; }\n\
          __global__ void axpy1(float *x, float *y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += 2.0f * x[i]; }\n\
          __global__ void axpy2(float *x, float *y, int n) { for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) y[i] += 2.0f * x[i]; }\n",
    );
    let (code, stderr, recs) = s.extract(&["--no-compile", "--suite", "generic"]);
    assert_eq!(code, 0, "{stderr}");
    let lines = pair_lines(&recs);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("axpy1") && l.contains("axpy2")),
        "{lines:?}"
    );
    assert!(!lines
        .iter()
        .any(|l| l.contains("phase1") && l.contains("phase2")));
    let refused: Vec<&Value> = of_type(&recs, "unpaired")
        .into_iter()
        .filter(|u| {
            u["reason"]
                .as_str()
                .unwrap()
                .starts_with("not_a_progression")
        })
        .collect();
    assert_eq!(refused.len(), 1, "{recs:?}");
    assert_eq!(refused[0]["kernel"], "phase2");
    assert!(refused[0]["reason"]
        .as_str()
        .unwrap()
        .contains("`phase1` writes (a) and `phase2` writes (b)"));
    assert!(
        stderr.contains(
            "progressions (numbered series, sibling variants): 2 candidates, 1 accepted, 1 refused"
        ),
        "{stderr}"
    );
}

/// Issue 26, item 1: a unit compiles with its program's own build flags. The names
/// `dfloat` and `TILE` are defined only by the build (CMake's `target_compile_definitions`,
/// a Makefile's NVCC flags); each unit records the flags and the compile check passes them.
#[test]
fn units_compile_with_the_flags_of_their_programs_build() {
    let s = Suite::empty();
    s.write(
        "solver/CMakeLists.txt",
        b"add_executable(solver main.cu)\ntarget_compile_definitions(solver PRIVATE dfloat=double)\nset(CMAKE_CUDA_STANDARD 17)\n",
    );
    s.write(
        "solver/main.cu",
        b"__global__ void axpy(dfloat a, const dfloat *x, dfloat *y, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i]; }\n",
    );
    s.write(
        "tiles/Makefile",
        b"NVCCFLAGS := -O3 -DTILE=16 -DNDEBUG\ntiles: tiles.cu\n\tnvcc $(NVCCFLAGS) -o $@ $<\n",
    );
    s.write(
        "tiles/tiles.cu",
        b"__global__ void tile_copy(const float *in, float *out) { __shared__ float t[TILE]; t[threadIdx.x] = in[threadIdx.x]; __syncthreads(); out[threadIdx.x] = t[TILE - 1 - threadIdx.x]; }\n",
    );
    s.write(
        "plain/k.cu",
        b"__global__ void plain(float *x) { x[0] = 1.0f; }\n",
    );
    let nvrtc = kernelpair::gpu::nvrtc::load().is_ok();
    let flags: &[&str] = if nvrtc {
        &["--suite", "generic", "--no-cache"]
    } else {
        eprintln!("skipped: the compile check (no NVRTC here); the flags are still recorded");
        &["--suite", "generic", "--no-compile"]
    };
    let (code, stderr, recs) = s.extract(flags);
    let units = of_type(&recs, "unit");
    let unit = |k: &str| *units.iter().find(|u| u["kernel"] == k).unwrap();
    let recorded = |k: &str| unit(k)["build_flags"].clone();
    assert_eq!(
        recorded("axpy"),
        serde_json::json!(["-Ddfloat=double", "--std=c++17"])
    );
    assert_eq!(
        recorded("tile_copy"),
        serde_json::json!(["-DTILE=16", "-DNDEBUG"])
    );
    assert!(recorded("plain").is_null(), "no build file, no flags");
    if nvrtc {
        assert_eq!(code, 0, "{stderr}");
        for k in ["axpy", "tile_copy", "plain"] {
            assert_eq!(unit(k)["compile"]["ok"], true, "{k}: {:#}", unit(k));
        }
    }
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/record.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::validator_for(&schema).unwrap();
    for r in &recs {
        assert!(v.is_valid(r), "{r:#}");
    }
}

/// NVRTC compiles one program at a time per process, so the compile check runs in worker
/// processes (`kernelpair compile-worker`, one per core): their results are exactly those
/// of compiling in this process. Where NVRTC is missing the test says so and checks nothing.
#[test]
fn compile_checks_in_worker_processes_equal_those_in_one_process() {
    if kernelpair::gpu::nvrtc::load().is_err() {
        assert!(
            std::env::var_os("KERNELPAIR_REQUIRE_NVRTC").is_none(),
            "NVRTC required"
        );
        eprintln!("skipped: no NVRTC here, nothing to compile");
        return;
    }
    let s = Suite::copy("parboil");
    let run = |procs: &str| -> BTreeMap<String, Value> {
        let out = Command::cargo_bin("kernelpair")
            .unwrap()
            .arg("extract")
            .arg(&s.root)
            .arg("-o")
            .arg(&s.out)
            .arg("--no-cache")
            .env("KERNELPAIR_COMPILE_PROCS", procs)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(0), "{err}");
        // The worker path really ran: no worker fell back to compiling in-process.
        assert!(!err.contains("compile worker could not start"), "{err}");
        let text = std::fs::read_to_string(&s.out).unwrap();
        text.lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["type"] == "unit")
            .map(|r| {
                let mut c = r["data"]["compile"].clone();
                c.as_object_mut().unwrap().remove("millis");
                (r["data"]["id"].as_str().unwrap().to_string(), c)
            })
            .collect()
    };
    let one = run("0");
    let many = run("3");
    assert!(
        one.len() >= 6,
        "enough units to go to workers: {}",
        one.len()
    );
    assert!(one.values().all(|c| c["ok"] == true));
    assert_eq!(one, many);
}
