//! `kernelpair capture` on the CPU side: programs built with their own Makefiles and run
//! with timeouts, bad programs recorded by name, the journal resumed. The programs here are
//! shell scripts (no GPU is needed to build and run them; they launch no kernel). The GPU
//! side (real launches, manifests, replay) is `capture_gpu_*` below, run on the device.

use assert_cmd::Command;
use std::path::Path;

fn program(root: &Path, name: &str, makefile: &str, extra: &[(&str, &str)]) {
    let d = root.join(name);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("Makefile"), makefile).unwrap();
    // A `.cu` file marks the folder as a CUDA program for discovery.
    std::fs::write(
        d.join("k.cu"),
        "__global__ void k(float *x) { x[0] = 1.0f; }\n",
    )
    .unwrap();
    for (f, t) in extra {
        std::fs::write(d.join(f), t).unwrap();
    }
}

/// The programs here are shell scripts that never load CUDA, so the injection library is
/// a stand-in file (`cargo test` builds the crate's rlib, not its cdylib; the GPU test
/// below uses the real `libkernelpair.so`).
fn stand_in_library(dir: &Path) -> String {
    let p = dir.join("libstandin.so");
    std::fs::write(&p, b"not loaded: these programs launch no kernel").unwrap();
    p.display().to_string()
}

/// `kernelpair capture ROOT -o OUT --suite generic`, more arguments to follow.
fn capture_cmd(root: &Path, out: &Path) -> Command {
    let mut c = Command::cargo_bin("kernelpair").unwrap();
    c.arg("capture")
        .arg(root)
        .arg("-o")
        .arg(out)
        .args(["--suite", "generic"]);
    c
}

fn records(out: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(out.join("programs.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn by_program<'a>(rs: &'a [serde_json::Value], p: &str) -> &'a serde_json::Value {
    rs.iter()
        .find(|r| r["program"] == p)
        .unwrap_or_else(|| panic!("no record of {p} in {rs:?}"))
}

/// A tree of four programs: one that runs cleanly, one whose build fails, one that needs
/// a data file the tree lacks, one that hangs.
fn tree(root: &Path) {
    program(
        root,
        "clean",
        "all:\n\tcp run.sh prog && chmod +x prog\nrun: all\n\t./prog\n",
        &[("run.sh", "#!/bin/sh\necho computing\nexit 0\n")],
    );
    program(
        root,
        "badbuild",
        "all:\n\t@echo 'k.cu(3): error: identifier \"dfloat\" is undefined'; exit 2\nrun: all\n\t./prog\n",
        &[],
    );
    program(
        root,
        "needsdata",
        "all:\n\tcp run.sh prog && chmod +x prog\nrun: all\n\t./prog data/graph4096.txt\n",
        &[(
            "run.sh",
            "#!/bin/sh\nif [ ! -f \"$1\" ]; then echo \"Error: cannot open $1\" >&2; exit 1; fi\n",
        )],
    );
    program(
        root,
        "hangs",
        "all:\n\tcp run.sh prog && chmod +x prog\nrun: all\n\t./prog\n",
        &[("run.sh", "#!/bin/sh\necho waiting\nsleep 60\n")],
    );
}

/// A Makefile written for an architecture the toolkit dropped (`ARCH = sm_60`, nvcc's
/// refusal stood in by the build) is built again for the machine's own, in the scratch
/// copy only; one still refused after that says so in its reason.
#[test]
fn a_build_refused_for_a_dropped_architecture_is_retargeted_and_built_again() {
    let d = tempfile::tempdir().unwrap();
    let lib = stand_in_library(d.path());
    let root = d.path().join("tree");
    let refuse = "@grep -q '^ARCH = native' Makefile || (echo \"nvcc fatal   : Unsupported gpu architecture 'compute_60'\"; exit 1)";
    let oldarch = format!(
        "ARCH = sm_60\nall:\n\t{refuse}\n\tcp run.sh prog && chmod +x prog\nrun: all\n\t./prog\n"
    );
    program(
        &root,
        "oldarch",
        &oldarch,
        &[("run.sh", "#!/bin/sh\necho computing\n")],
    );
    // Refused whatever the Makefile says.
    program(
        &root,
        "stillold",
        "ARCH = sm_60\nall:\n\t@echo \"nvcc fatal   : Unsupported gpu architecture 'compute_60'\"; exit 1\n",
        &[],
    );
    let out = d.path().join("cap");
    capture_cmd(&root, &out)
        .args(["--timeout-s", "5", "--inject", &lib])
        .output()
        .unwrap();
    let rs = records(&out);
    let ok = by_program(&rs, "oldarch");
    assert_eq!(ok["status"], "no_launches", "built and run: {ok}");
    assert_eq!(ok["retargeted_makefiles"], 1, "{ok}");
    let bad = by_program(&rs, "stillold");
    assert_eq!(bad["status"], "capture_build_failed");
    assert!(
        bad["reason"]
            .as_str()
            .unwrap()
            .contains("retargeted to -arch=native"),
        "{bad}"
    );
    // The tree itself is untouched.
    assert!(std::fs::read_to_string(root.join("oldarch/Makefile"))
        .unwrap()
        .starts_with("ARCH = sm_60\n"));
}

#[test]
fn bad_programs_are_recorded_by_name_and_the_rest_go_on() {
    let d = tempfile::tempdir().unwrap();
    let lib = stand_in_library(d.path());
    let root = d.path().join("tree");
    tree(&root);
    let out = d.path().join("cap");
    let o = capture_cmd(&root, &out)
        .args(["--timeout-s", "2", "--jobs", "2", "--inject", &lib])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    let stdout = String::from_utf8_lossy(&o.stdout);
    // Some programs failed: the exit code says the run was partial.
    assert_eq!(o.status.code(), Some(3), "{stdout}\n{stderr}");
    let rs = records(&out);
    assert_eq!(rs.len(), 4, "{rs:?}");
    assert_eq!(by_program(&rs, "clean")["status"], "no_launches");
    let b = by_program(&rs, "badbuild");
    assert_eq!(b["status"], "capture_build_failed");
    assert!(
        b["log_tail"].as_str().unwrap().contains("dfloat"),
        "the build log's tail is kept: {b}"
    );
    assert!(
        b["reason"]
            .as_str()
            .unwrap()
            .ends_with(": k.cu(3): error: identifier \"dfloat\" is undefined"),
        "the reason names the first error: {b}"
    );
    let n = by_program(&rs, "needsdata");
    assert_eq!(n["status"], "capture_run_failed");
    assert!(
        n["reason"].as_str().unwrap().contains("data/graph4096.txt"),
        "the missing file is named: {n}"
    );
    let h = by_program(&rs, "hangs");
    assert_eq!(h["status"], "timeout");
    assert!(h["seconds"].as_f64().unwrap() < 30.0, "{h}");
    // Each failure is named on stderr as it happens; the summary counts them.
    assert!(
        stderr.contains("badbuild: capture_build_failed"),
        "{stderr}"
    );
    assert!(
        stdout.contains(
            "4 program(s): 1 capture_build_failed, 1 capture_run_failed, 1 no_launches, 1 timeout"
        ),
        "{stdout}"
    );
    // Every journal line is what schemas/capture-program.schema.json describes.
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("schemas/capture-program.schema.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let v = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(&schema)
        .unwrap();
    for r in &rs {
        let errs: Vec<String> = v.iter_errors(r).map(|e| e.to_string()).collect();
        assert!(errs.is_empty(), "{r}: {errs:?}");
    }
    let mut bad = rs[0].clone();
    bad["status"] = "fine".into();
    assert!(!v.is_valid(&bad), "the schema rejects an unknown status");
    // The programs ran in a scratch copy: the tree itself is untouched.
    assert!(!root.join("clean/prog").exists());
    assert!(out.join("work/tree/clean/prog").exists());
}

#[test]
fn a_rerun_resumes_from_the_journal_and_redoes_a_torn_record() {
    let d = tempfile::tempdir().unwrap();
    let lib = stand_in_library(d.path());
    let root = d.path().join("tree");
    program(
        &root,
        "a",
        "all:\n\tcp run.sh prog && chmod +x prog\nrun: all\n\t./prog\n",
        &[("run.sh", "#!/bin/sh\necho ran >> ../../runs.log\n")],
    );
    program(
        &root,
        "b",
        "all:\n\tcp run.sh prog && chmod +x prog\nrun: all\n\t./prog\n",
        &[("run.sh", "#!/bin/sh\necho ran >> ../../runs.log\n")],
    );
    let out = d.path().join("cap");
    let capture = || {
        capture_cmd(&root, &out)
            .args(["--inject", &lib])
            .output()
            .unwrap()
    };
    let runs = || {
        std::fs::read_to_string(out.join("work/runs.log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    assert!(capture().status.success());
    assert_eq!(runs(), 2);
    std::fs::remove_dir_all(out.join("work/tree")).unwrap();
    let o = capture();
    assert!(String::from_utf8_lossy(&o.stderr).contains("2 already in the journal, 0 to run"));
    assert_eq!(runs(), 2, "nothing is run twice");
    assert!(
        !out.join("work/tree").exists(),
        "a rerun with nothing to run copied the tree"
    );
    // A crash while writing b's record leaves half a line: b runs again, a does not.
    let j = out.join("programs.jsonl");
    let text = std::fs::read_to_string(&j).unwrap();
    let keep: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("\"program\":\"a\""))
        .collect();
    std::fs::write(&j, format!("{}\n{{\"version\":1,\"prog", keep.join("\n"))).unwrap();
    assert!(capture().status.success());
    assert_eq!(runs(), 3);
}

/// A program whose versions 1-3 exist (each writes a stand-in launch manifest where the
/// injection library would, and notes when it started and ended) and whose version 4 is
/// refused, run with `--each 1,…,8`.
fn versions_tree(root: &Path) {
    program(
        root,
        "versions",
        "all:\n\tcp run.sh prog && chmod +x prog\n",
        &[(
            "run.sh",
            "#!/bin/sh\necho \"start $1 $(date +%s%N)\" >> \"$KERNELPAIR_CAPTURE_OUT/../spans.txt\"\nsleep 1\n\
             if [ \"$1\" -gt 3 ]; then echo \"end $1 $(date +%s%N)\" >> \"$KERNELPAIR_CAPTURE_OUT/../spans.txt\"; echo \"invalid kernel $1\"; exit 1; fi\n\
             echo 'kernel = \"k\"' > \"$KERNELPAIR_CAPTURE_OUT/m.toml\"\n\
             echo \"end $1 $(date +%s%N)\" >> \"$KERNELPAIR_CAPTURE_OUT/../spans.txt\"\n",
        )],
    );
}

fn versions_capture(root: &Path, out: &Path, slots: &str) -> serde_json::Value {
    let lib = stand_in_library(root.parent().unwrap());
    capture_cmd(root, out)
        .args(["--inject", &lib, "--runs-per-gpu", slots])
        .args(["--run", "./prog {arg}", "--each", "1,2,3,4,5,6,7,8"])
        .assert()
        .success();
    by_program(&records(out), "versions").clone()
}

/// Most runs at once, from the start/end lines the runs wrote.
fn most_at_once(spans: &str) -> usize {
    let mut ev: Vec<(u128, i32)> = spans
        .lines()
        .filter_map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            let t: u128 = w.get(2)?.parse().ok()?;
            Some((t, if w[0] == "start" { 1 } else { -1 }))
        })
        .collect();
    ev.sort();
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in ev {
        now += d;
        most = most.max(now);
    }
    most as usize
}

#[test]
fn a_programs_versions_run_side_by_side_and_stop_where_the_versions_run_out() {
    // One GPU slot: the sequential order, so version 4's refusal stops the group there.
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("tree");
    versions_tree(&root);
    let cap = d.path().join("cap1");
    let r = versions_capture(&root, &cap, "1");
    assert_eq!(r["status"], "captured", "{r}");
    let runs = r["runs"].as_array().unwrap();
    let cmds: Vec<&str> = runs
        .iter()
        .map(|x| x["command"].as_str().unwrap())
        .collect();
    assert_eq!(
        cmds,
        ["./prog 1", "./prog 2", "./prog 3", "./prog 4"],
        "{r}"
    );
    let launches: Vec<i64> = runs
        .iter()
        .map(|x| x["launches"].as_i64().unwrap())
        .collect();
    assert_eq!(launches, [1, 1, 1, 0]);
    assert_eq!(runs[3]["exit"], 1);
    let spans = std::fs::read_to_string(cap.join("launches/versions/spans.txt")).unwrap();
    assert_eq!(most_at_once(&spans), 1, "{spans}");

    // Four slots: the versions overlap; the same three are captured, the refusal is still
    // recorded, and no run starts after the group has stopped.
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("tree");
    versions_tree(&root);
    let cap = d.path().join("cap4");
    let r = versions_capture(&root, &cap, "4");
    assert_eq!(r["status"], "captured", "{r}");
    assert_eq!(r["launches"], 3, "{r}");
    let runs = r["runs"].as_array().unwrap();
    let ks: Vec<String> = runs
        .iter()
        .map(|x| x["command"].as_str().unwrap().replace("./prog ", ""))
        .collect();
    assert_eq!(
        &ks[..4],
        ["1", "2", "3", "4"],
        "runs are recorded in order: {r}"
    );
    assert!(
        runs.iter()
            .skip(3)
            .all(|x| x["launches"] == 0 && x["exit"] == 1),
        "{r}"
    );
    let spans = std::fs::read_to_string(cap.join("launches/versions/spans.txt")).unwrap();
    assert!(most_at_once(&spans) > 1, "runs did not overlap:\n{spans}");
    // Runs already started when version 4 was refused finish, but the group never runs
    // all eight: a run records its result before its slot is given back, so version 8
    // (which needs version 4's slot or a later one) always sees the stop.
    assert!(runs.len() < 8, "the group did not stop: {r}");
}

#[test]
fn progress_lines_come_at_least_every_ten_seconds_off_a_terminal() {
    // The interval is 10 s; the test shortens it to 200 ms and runs a program of a second:
    // a batch log sees lines naming the running program, then where the step ended.
    let d = tempfile::tempdir().unwrap();
    let lib = stand_in_library(d.path());
    let root = d.path().join("tree");
    program(
        &root,
        "slowprog",
        "all:\n\tcp run.sh prog && chmod +x prog\nrun: all\n\t./prog\n",
        &[("run.sh", "#!/bin/sh\nsleep 1\nexit 0\n")],
    );
    let out = d.path().join("cap");
    let o = capture_cmd(&root, &out)
        .args(["--inject", &lib])
        .env("KERNELPAIR_PROGRESS_EVERY_MS", "200")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("capture: 0/1 done, 0.00/s; running: slowprog"),
        "{stderr}"
    );
    assert!(stderr.contains("capture: 1/1 done"), "{stderr}");
}

/// A Rodinia-layout tree (`cuda/<app>/` with a Makefile and a `run` script reading
/// `../../data/<app>/…`, and an empty `data/`), captured with the rodinia suite's recipe.
/// `bfs` prints no file name when its input is missing (as Rodinia's programs do) and
/// writes a stand-in launch manifest when it finds it; `backprop` needs no data.
fn rodinia_like(root: &Path) {
    std::fs::create_dir_all(root.join("data")).unwrap();
    let prog = "all:\n\tcp prog.sh prog && chmod +x prog\n";
    let bfs = "#!/bin/sh\nif [ ! -f \"$1\" ]; then echo 'Error Reading graph file'; exit 139; fi\n\
               mkdir -p out; cat \"$1\" > out/result.txt\n\
               echo 'kernel = \"k\"' > \"$KERNELPAIR_CAPTURE_OUT/m.toml\"\n";
    program(
        &root.join("cuda"),
        "bfs",
        prog,
        &[
            ("prog.sh", bfs),
            // The output file does not exist before the run either; it is not an input.
            (
                "run",
                "# small graph\nmkdir -p out\n./prog ../../data/bfs/graph4096.txt > out/log.txt\n",
            ),
        ],
    );
    let ok = "#!/bin/sh\necho 'kernel = \"k\"' > \"$KERNELPAIR_CAPTURE_OUT/m.toml\"\n";
    program(
        &root.join("cuda"),
        "backprop",
        prog,
        &[("prog.sh", ok), ("run", "./prog 65536\n")],
    );
}

#[test]
fn a_run_names_the_input_its_run_script_gives_and_data_given_later_captures_it() {
    let d = tempfile::tempdir().unwrap();
    let lib = stand_in_library(d.path());
    let root = d.path().join("tree");
    rodinia_like(&root);
    let out = d.path().join("cap");
    let capture = |data: Option<&Path>| {
        let mut c = Command::cargo_bin("kernelpair").unwrap();
        c.arg("capture")
            .arg(&root)
            .arg("-o")
            .arg(&out)
            .args(["--suite", "rodinia", "--inject", &lib]);
        if let Some(data) = data {
            c.arg("--data").arg(data);
        }
        // Exit 3 says some program failed; the journal says which.
        let code = c.output().unwrap().status.code();
        assert!(matches!(code, Some(0 | 3)), "{code:?}");
        records(&out)
    };
    let rs = capture(None);
    assert_eq!(rs.len(), 2, "{rs:?}");
    assert_eq!(by_program(&rs, "cuda/backprop")["status"], "captured");
    let bfs = by_program(&rs, "cuda/bfs");
    assert_eq!(bfs["status"], "capture_run_failed", "{bfs}");
    assert_eq!(
        bfs["runs"][0]["missing"], "../../data/bfs/graph4096.txt",
        "{bfs}"
    );
    let why = bfs["reason"].as_str().unwrap();
    assert!(
        why.contains(
            "needs input file ../../data/bfs/graph4096.txt, which the tree lacks (give --data)"
        ),
        "{why}"
    );

    // Data that lacks the input: bfs runs again (other data than it ran with) and fails
    // again; the same data once more runs nothing (a warm rerun).
    let empty = d.path().join("nodata");
    std::fs::create_dir_all(&empty).unwrap();
    assert_eq!(
        capture(Some(&empty)).len(),
        3,
        "bfs runs again with new data"
    );
    assert_eq!(
        capture(Some(&empty)).len(),
        3,
        "the same data again ran a program again"
    );

    // The data folder holds <app>/…; linked at data/ in the scratch copy, the program's
    // own relative path finds it. Only bfs, which lacked its input, runs again.
    let data = d.path().join("mydata");
    std::fs::create_dir_all(data.join("bfs")).unwrap();
    std::fs::write(data.join("bfs/graph4096.txt"), "4096\n").unwrap();
    let rs = capture(Some(&data));
    assert_eq!(rs.len(), 4, "backprop was run again: {rs:?}");
    let bfs = &rs[3];
    assert_eq!(bfs["program"], "cuda/bfs");
    assert_eq!(bfs["status"], "captured", "{bfs}");
    assert_eq!(bfs["launches"], 1, "{bfs}");
    assert!(
        root.join("data").read_dir().unwrap().next().is_none(),
        "the tree was changed"
    );
}

fn fixtures() -> std::path::PathBuf {
    match std::env::var_os("KERNELPAIR_FIXTURES") {
        Some(d) => std::path::PathBuf::from(d).join("capture"),
        None => std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/capture"),
    }
}

fn manifests(dir: &Path) -> Vec<toml::Value> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(|e| e.ok())
    {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.ends_with(".toml")
            && !n.ends_with("launch-counts.toml")
            && !n.ends_with("stopped-early.toml")
        {
            out.push(toml::from_str(&std::fs::read_to_string(e.path()).unwrap()).unwrap());
        }
    }
    out
}

/// Every capture fixture program compiles with nvcc (`-c`: no GPU and no CUDA runtime
/// library needed), so a fixture broken on the CPU side shows in CI, not first on a GPU.
#[test]
fn capture_fixture_programs_compile_with_nvcc() {
    // nvcc on PATH, $CUDA_HOME or /usr/local/cuda, else the PyPI wheel CI installs.
    let wheel = || -> Option<std::path::PathBuf> {
        let o = std::process::Command::new("python3")
            .args([
                "-c",
                "import glob, os, nvidia\nfor b in nvidia.__path__:\n    for c in sorted(glob.glob(os.path.join(b, '*', 'bin', 'nvcc'))): print(c)",
            ])
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.lines().next().map(std::path::PathBuf::from)
    };
    let Some(nvcc) = kernelpair::capture::nvcc_dir()
        .map(|d| d.join("nvcc"))
        .or_else(wheel)
    else {
        eprintln!("skipped: no nvcc here (python3 -m pip install nvidia-cuda-nvcc)");
        return;
    };
    let d = tempfile::tempdir().unwrap();
    let compile = |src: &Path, obj: &Path| {
        std::process::Command::new(&nvcc)
            .args(["-c", "-arch=sm_90", "-o"])
            .arg(obj)
            .arg(src)
            .output()
            .unwrap()
    };
    // An nvcc without CUDA's headers or a host compiler cannot say anything of the fixtures.
    let probe = d.path().join("probe.cu");
    std::fs::write(
        &probe,
        "#include <cuda_runtime.h>\n__global__ void k(int *x) { *x = 1; }\n",
    )
    .unwrap();
    let o = compile(&probe, &d.path().join("probe.o"));
    if !o.status.success() {
        eprintln!(
            "skipped: {} cannot compile a one-line kernel here: {}",
            nvcc.display(),
            String::from_utf8_lossy(&o.stderr)
                .lines()
                .next()
                .unwrap_or("")
        );
        return;
    }
    let mut compiled = 0;
    for e in std::fs::read_dir(fixtures()).unwrap().flatten() {
        let main = e.path().join("main.cu");
        if !main.is_file() {
            continue;
        }
        let o = compile(&main, &d.path().join(format!("{compiled}.o")));
        assert!(
            o.status.success(),
            "{}: {}",
            main.display(),
            String::from_utf8_lossy(&o.stderr)
        );
        compiled += 1;
    }
    assert!(compiled >= 16, "{compiled} fixture programs");
}

/// The fixture programs, captured and replayed on a GPU (needs nvcc and CUPTI: on the
/// device, `KERNELPAIR_INJECT` and `KERNELPAIR_CUPTI` name the library and CUPTI's folder).
#[test]
#[ignore = "needs a GPU, nvcc and CUPTI: run on the device with --ignored"]
fn capture_gpu_fixture_programs_are_captured_and_their_replays_reproduce_them() {
    let d = tempfile::tempdir().unwrap();
    let cap = d.path().join("cap");
    let o = Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["capture"])
        .arg(fixtures())
        .args(["-o", cap.to_str().unwrap(), "--suite", "generic"])
        .args(["--max-bytes", "33554432", "--timeout-s", "120"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&o.stdout);
    eprintln!("{stdout}\n{}", String::from_utf8_lossy(&o.stderr));
    let rs = records(&cap);
    for p in [
        "structptr",
        "constant",
        "managed",
        "hostloop",
        "manylaunch",
        "gpuloop",
        "shared",
        "pair",
        "texobj",
        "surfobj",
        "overbudget",
        "gridsync",
        "rewrite",
        "graph",
    ] {
        assert_eq!(by_program(&rs, p)["status"], "captured", "{p}");
    }
    // Graph launches: the stream-captured graph's two kernels and the first kernel of the
    // node-by-node graph are captured through the graph launch; the kernel after its host
    // node is a named skip; and the program's own checks pass (capture put back what its
    // extra run of the nodes wrote, and ran no host callback).
    let g = by_program(&rs, "graph");
    assert_eq!(g["runs"][0]["exit"], 0, "{g}");
    let gm = manifests(&cap.join("launches/graph"));
    let graph_kernel = |k: &str| {
        gm.iter()
            .find(|m| m["kernel"].as_str() == Some(k))
            .unwrap_or_else(|| panic!("no manifest of {k}: {gm:?}"))
    };
    // The child graph's kernel runs where its node stands, before the node that waits for it.
    for k in [
        "graph_scale",
        "graph_accumulate",
        "before_host",
        "in_child",
        "after_child",
        "stays_on",
    ] {
        let m = graph_kernel(k);
        assert_eq!(m["via"].as_str(), Some("cuGraphLaunch"), "{m}");
        assert!(m.get("skipped").is_none(), "{m}");
    }
    let order = |k: &str| graph_kernel(k)["seq"].as_integer().unwrap();
    assert!(order("in_child") < order("after_child"), "{gm:?}");
    let after = graph_kernel("after_host")["skipped"].as_str().unwrap();
    assert!(after.contains("a host node"), "{after}");
    // A node disabled in the executable graph (`cudaGraphNodeSetEnabled`) is not launched, so
    // capture runs it no more than the graph does; a refused `cudaGraphExecUpdate` changed
    // nothing, so stays_on (above) is captured, not skipped.
    assert!(
        !gm.iter()
            .any(|m| m["kernel"].as_str() == Some("switched_off")),
        "{gm:?}"
    );
    // The kernel of a graph never launched: a skip written at exit, by name.
    let idle = graph_kernel("never_run")["skipped"].as_str().unwrap();
    assert!(idle.contains("launched only into a CUDA graph"), "{idle}");
    // cudaLaunchCooperativeKernel: the manifest says so, whichever driver entry point the
    // runtime took (cuLaunchCooperativeKernel, or cuLaunchKernelEx with the attribute).
    let gs = &manifests(&cap.join("launches/gridsync"))[0];
    assert_eq!(gs["cooperative"].as_bool(), Some(true), "{gs}");
    let n = by_program(&rs, "needsfile");
    assert_eq!(n["status"], "capture_run_failed");
    assert!(
        n["reason"].as_str().unwrap().contains("data/input.bin"),
        "{n}"
    );
    // The crash after the first launch keeps the first launch's capture.
    let c = by_program(&rs, "crash");
    assert_eq!(c["status"], "captured", "{c}");
    let crash = manifests(&cap.join("launches/crash"));
    assert!(crash
        .iter()
        .any(|m| m["kernel"].as_str() == Some("first_ok") && m.get("skipped").is_none()));
    // Over the byte budget: a named skip with the sizes.
    let over = manifests(&cap.join("launches/overbudget"));
    let why = over[0]["skipped"].as_str().unwrap();
    assert!(
        why.contains("67108864 bytes") && why.contains("33554432"),
        "{why}"
    );
    // 10,000 launches of one kernel: one snapshot, then the run ends once 2,000 launches
    // in a row brought nothing new (--quiet-launches' default), counted and recorded.
    assert_eq!(manifests(&cap.join("launches/manylaunch")).len(), 1);
    let run_file = |suffix: &str| -> toml::Value {
        let f = std::fs::read_dir(cap.join("launches/manylaunch/run-0"))
            .unwrap()
            .filter_map(|e| e.ok())
            .find(|e| e.file_name().to_string_lossy().ends_with(suffix))
            .unwrap_or_else(|| panic!("no {suffix} in manylaunch/run-0"));
        toml::from_str(&std::fs::read_to_string(f.path()).unwrap()).unwrap()
    };
    let counts = run_file("launch-counts.toml");
    let counted = counts
        .as_table()
        .unwrap()
        .values()
        .next()
        .unwrap()
        .as_integer();
    assert_eq!(counted, Some(2001), "{counts}");
    let stopped = run_file("stopped-early.toml");
    assert_eq!(
        stopped["quiet_launches"].as_integer(),
        Some(2000),
        "{stopped}"
    );
    assert_eq!(stopped["launches_seen"].as_integer(), counted, "{stopped}");
    // Rounds of ten queued 0.6 s launches, each followed by a wait: the host's gaps add up
    // to almost nothing, the GPU time of the finished launches ends the run after about
    // 20 of its 60 launches (without it, all 36 s).
    let loop_stop = std::fs::read_dir(cap.join("launches/gpuloop/run-0"))
        .unwrap()
        .filter_map(|e| e.ok())
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .ends_with("stopped-early.toml")
        })
        .map(|e| {
            toml::from_str::<toml::Value>(&std::fs::read_to_string(e.path()).unwrap()).unwrap()
        })
        .expect("gpuloop stopped early");
    let gpu_s = loop_stop["quiet_gpu_seconds"].as_float().unwrap();
    let host_s = loop_stop["quiet_seconds"].as_float().unwrap();
    let seen = loop_stop["launches_seen"].as_integer().unwrap();
    assert!(gpu_s >= 10.0 && host_s < 10.0, "{loop_stop}");
    assert!((21..60).contains(&seen), "{loop_stop}");
    // The struct of pointers: three addresses found inside the by-value struct.
    let sp = &manifests(&cap.join("launches/structptr"))[0];
    assert_eq!(
        sp["params"][0]["pointers"].as_array().unwrap().len(),
        3,
        "{sp}"
    );
    // The __constant__ table filled by cudaMemcpyToSymbol is in the manifest.
    let k = &manifests(&cap.join("launches/constant"))[0];
    assert_eq!(k["globals"][0]["name"].as_str(), Some("taps"), "{k}");

    // Replay: each captured kernel reproduces what the program wrote.
    let units = d.path().join("units.jsonl");
    Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["extract"])
        .arg(fixtures())
        .args([
            "-o",
            units.to_str().unwrap(),
            "--suite",
            "generic",
            "--no-compile",
        ])
        .assert()
        .success();
    let report = d.path().join("replay.jsonl");
    let o = Command::cargo_bin("kernelpair")
        .unwrap()
        .args([
            "replay",
            cap.to_str().unwrap(),
            "--units",
            units.to_str().unwrap(),
        ])
        .args(["-o", report.to_str().unwrap()])
        .output()
        .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&o.stdout));
    let reps: Vec<serde_json::Value> = std::fs::read_to_string(&report)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let rep = |k: &str| {
        reps.iter()
            .find(|r| r["kernel"] == k)
            .unwrap_or_else(|| panic!("no replay of {k}: {reps:?}"))
    };
    for k in [
        "apply_gain",
        "fir",
        "square_add",
        "jacobi_step",
        "bump",
        "axpy",
        "transpose_naive",
        "transpose_tiled",
        "first_ok",
        "tex_copy",
        "surf_blur",
        // Replayed with a cooperative launch: a plain one fails at grid.sync().
        "smooth_sync",
        // Its launch changed nothing: checked through the buffer its body only writes.
        "scale_into",
        // Launched by CUDA graphs.
        "graph_scale",
        "graph_accumulate",
        "before_host",
        "in_child",
        "after_child",
        "stays_on",
    ] {
        assert_eq!(rep(k)["pass"], true, "{k}: {}", rep(k));
    }
    // The texture over linear memory and the two array objects are in their manifests.
    let tex = &manifests(&cap.join("launches/texobj"))[0];
    assert_eq!(
        tex["objects"][0]["object"]["resource"].as_str(),
        Some("linear"),
        "{tex}"
    );
    let surf = &manifests(&cap.join("launches/surfobj"))[0];
    let kinds: Vec<(&str, &str)> = surf["objects"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["object"]["kind"].as_str().unwrap(),
                o["object"]["resource"].as_str().unwrap(),
            )
        })
        .collect();
    assert!(
        kinds.contains(&("texture", "array")) && kinds.contains(&("surface", "array")),
        "{surf}"
    );
    // Named limits, not silent passes.
    assert!(rep("halve")["reason"]
        .as_str()
        .unwrap()
        .contains("byte budget"));

    // Verify the natural pair under its capture: each side replays its own launch.
    let verified = d.path().join("verified.jsonl");
    let o = Command::cargo_bin("kernelpair")
        .unwrap()
        .args([
            "verify",
            "--in",
            units.to_str().unwrap(),
            "--out",
            verified.to_str().unwrap(),
        ])
        .args(["--captures", cap.to_str().unwrap()])
        .output()
        .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&o.stdout));
    let pairs: Vec<serde_json::Value> = std::fs::read_to_string(&verified)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|r| r["type"] == "pair")
        .collect();
    let p = pairs
        .iter()
        .find(|p| {
            p["data"]["kernel"] == "transpose_tiled"
                && p["data"]["slow"]["unit"]["kernel"] == "transpose_naive"
        })
        .unwrap_or_else(|| panic!("no transpose pair: {pairs:?}"));
    let v = &p["data"]["verification"];
    assert_eq!(p["data"]["harness_origin"]["origin"], "captured", "{p}");
    assert!(
        v["status"] == "verified" || v["status"] == "not_faster",
        "the pair agrees under its capture: {v}"
    );

    // With `--first 8`, the host loop's eight sweeps (two grids swapped after each) are
    // captured and replay as one harness, as they ran.
    let cap8 = d.path().join("cap8");
    let o = Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["capture"])
        .arg(fixtures())
        .args(["-o", cap8.to_str().unwrap(), "--suite", "generic"])
        .args(["--only", "hostloop", "--first", "8"])
        .output()
        .unwrap();
    eprintln!("{}", String::from_utf8_lossy(&o.stdout));
    assert_eq!(manifests(&cap8.join("launches/hostloop")).len(), 8);
    let report8 = d.path().join("replay8.jsonl");
    Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["replay", cap8.to_str().unwrap(), "--units"])
        .arg(&units)
        .args(["-o", report8.to_str().unwrap()])
        .output()
        .unwrap();
    let j: serde_json::Value = std::fs::read_to_string(&report8)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|r| r["kernel"] == "jacobi_step")
        .expect("jacobi_step replayed");
    assert_eq!(
        (j["pass"].as_bool(), j["launches"].as_u64()),
        (Some(true), Some(8)),
        "{j}"
    );
}

#[test]
fn a_missing_injection_library_is_named_before_anything_runs() {
    let d = tempfile::tempdir().unwrap();
    let root = d.path().join("tree");
    program(&root, "a", "all:\n\ttouch built\nrun: all\n\ttrue\n", &[]);
    let out = d.path().join("cap");
    let o = capture_cmd(&root, &out)
        .args(["--inject", "/nonexistent/libkernelpair.so"])
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(
        stderr.contains("injection library /nonexistent/libkernelpair.so does not exist"),
        "{stderr}"
    );
    assert!(!out.join("work/tree/a/built").exists(), "nothing was built");
}

/// Two generic suites, `alpha` and `beta`, each with programs `p1` and `p2` whose build copies
/// `run.sh` (its text from `run_sh(suite, program)`) to `prog`, and a `[capture]` recipe
/// running `./prog`: (spec, description) pairs for `capture_side_by_side`.
fn two_suites(
    dir: &Path,
    run_sh: impl Fn(&str, &str) -> String,
) -> Vec<(
    kernelpair::pipeline::config::SuiteSpec,
    kernelpair::suite::SuiteDesc,
)> {
    use kernelpair::pipeline::config::{SuiteKind, SuiteSpec};
    let generic = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("extractors/generic.toml"),
    )
    .unwrap();
    let mut list = Vec::new();
    for suite in ["alpha", "beta"] {
        let root = dir.join(suite);
        for prog in ["p1", "p2"] {
            program(
                &root,
                prog,
                "all:\n\tcp run.sh prog && chmod +x prog\n",
                &[("run.sh", &run_sh(suite, prog))],
            );
        }
        let text = format!(
            "{}\n[capture]\nprograms = [\"p1\", \"p2\"]\nbuild = \"make\"\nrun = [\"./prog\"]\n",
            generic.replacen("name = \"generic\"", &format!("name = \"{suite}\""), 1)
        );
        let desc = kernelpair::suite::SuiteDesc::parse(&text, suite).unwrap();
        let spec = SuiteSpec {
            path: root,
            kind: SuiteKind::Generic,
            extractor: None,
            data: None,
        };
        list.push((spec, desc));
    }
    list
}

/// Capture `list` side by side into `dir/out`, as `build`'s capture step does (through the
/// library: the build's own step needs a GPU to start), with a stand-in injection library:
/// the counts, and the folder they went to.
fn capture_suites(
    dir: &Path,
    list: &[(
        kernelpair::pipeline::config::SuiteSpec,
        kernelpair::suite::SuiteDesc,
    )],
    recs: &[kernelpair::record::Record],
    settings: &kernelpair::pipeline::config::CaptureSettings,
) -> (kernelpair::pipeline::capture::Captured, std::path::PathBuf) {
    use kernelpair::pipeline::capture::{capture_side_by_side, Captured};
    let lib = stand_in_library(dir);
    let out = dir.join("out");
    let c = capture_side_by_side(
        list,
        recs,
        settings,
        &out,
        Some(Path::new(&lib)),
        Captured::default(),
    );
    (c, out)
}

/// `build` captures its suites side by side, sharing the GPU's run slots: with two
/// suites of two one-second programs each and 3 slots in all, runs of both suites overlap,
/// never more than 3 run at once, and every program of both is journaled in its suite's
/// folder. (Through the library: the build's own step needs a GPU to start.)
#[test]
fn suites_are_captured_side_by_side_within_one_pool_of_run_slots() {
    use kernelpair::pipeline::config::CaptureSettings;
    let d = tempfile::tempdir().unwrap();
    let spans = d.path().join("spans.txt");
    let list = two_suites(d.path(), |suite, prog| {
        format!(
            "#!/bin/sh\necho \"start {suite}/{prog} $(date +%s%N)\" >> {s}\nsleep 1\n\
             echo 'kernel = \"k\"' > \"$KERNELPAIR_CAPTURE_OUT/m.toml\"\n\
             echo \"end {suite}/{prog} $(date +%s%N)\" >> {s}\n",
            s = spans.display()
        )
    });
    let settings = CaptureSettings {
        runs_per_gpu: 3,
        programs: kernelpair::pipeline::config::CapturePrograms::All,
        ..CaptureSettings::default()
    };
    let (c, out) = capture_suites(d.path(), &list, &[], &settings);
    assert_eq!(c.suites, 2, "{c:?}");
    assert_eq!(c.counts.get("programs_captured"), Some(&4), "{c:?}");
    let text = std::fs::read_to_string(&spans).unwrap();
    // Each suite has 2 programs: 3 at once means both suites ran together, and not 4
    // means the 3 slots were shared.
    assert_eq!(most_at_once(&text), 3, "3 slots in all:\n{text}");
    for suite in ["alpha", "beta"] {
        let recs = records(&out.join("captures").join(suite));
        assert_eq!(recs.len(), 2, "{suite}: {recs:?}");
    }
}

/// A suite's own `data` (Parboil's datasets beside Rodinia's data folder) is the one its
/// programs run with; a suite naming none runs with `[capture] data`. Each program's
/// record keeps the folder, and the run reads its file from there.
#[test]
fn each_suite_captures_with_its_own_data_folder_or_the_builds() {
    use kernelpair::pipeline::config::CaptureSettings;
    let d = tempfile::tempdir().unwrap();
    let (own, shared) = (d.path().join("own-data"), d.path().join("shared-data"));
    for (dir, word) in [(&own, "mine"), (&shared, "everyone's")] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("input.txt"), word).unwrap();
    }
    let mut list = two_suites(d.path(), |_, _| {
        "#!/bin/sh\nprintf 'kernel = \"%s\"\\n' \"$(cat \"$KP_DATA/input.txt\")\" \
         > \"$KERNELPAIR_CAPTURE_OUT/m.toml\"\n"
            .to_string()
    });
    for (_, desc) in &mut list {
        let c = desc.capture.as_mut().unwrap();
        c.run = vec!["KP_DATA={data} ./prog".into()];
    }
    list[0].0.data = Some(own.clone());
    let settings = CaptureSettings {
        programs: kernelpair::pipeline::config::CapturePrograms::All,
        data: Some(shared.clone()),
        ..CaptureSettings::default()
    };
    let (c, out) = capture_suites(d.path(), &list, &[], &settings);
    assert_eq!(c.counts.get("programs_captured"), Some(&4), "{c:?}");
    for (suite, data, word) in [("alpha", &own, "mine"), ("beta", &shared, "everyone's")] {
        let dir = out.join("captures").join(suite);
        for r in records(&dir) {
            assert_eq!(r["data"], data.display().to_string(), "{suite}: {r}");
        }
        let prog = dir.join("launches/p1");
        let manifests: Vec<String> = walkdir::WalkDir::new(&dir)
            .into_iter()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name() == "m.toml")
            .map(|e| std::fs::read_to_string(e.path()).unwrap())
            .collect();
        assert!(
            !manifests.is_empty() && manifests.iter().all(|m| m.contains(word)),
            "{suite} ({}): {manifests:?}",
            prog.display()
        );
    }
}

/// `build` captures only the programs holding the fast kernel of a pair it can verify
/// (`[capture] programs = "paired"`, the default): of two suites with two programs each,
/// one pair's program runs, and nothing else is built or run.
#[test]
fn build_captures_only_the_programs_holding_a_pair_it_can_verify() {
    use kernelpair::pipeline::config::CaptureSettings;
    use kernelpair::record::Record;
    let d = tempfile::tempdir().unwrap();
    let list = two_suites(d.path(), |_, _| {
        "#!/bin/sh\necho 'kernel = \"k\"' > \"$KERNELPAIR_CAPTURE_OUT/m.toml\"\n".to_string()
    });
    // One pair of suite beta whose fast kernel lies in p2; a pair of alpha still waiting
    // for its slow side (nothing to verify yet) holds nothing.
    let pair_dir = d.path().join("pair");
    std::fs::create_dir_all(&pair_dir).unwrap();
    std::fs::write(
        pair_dir.join("slow.cu"),
        "__global__ void k(float* x) { x[0] = 1.0f; }",
    )
    .unwrap();
    std::fs::write(
        pair_dir.join("fast.cu"),
        "__global__ void k(float* x) { *x = 1.0f; }",
    )
    .unwrap();
    let mut ready = kernelpair::verify::validate::load_folder(&pair_dir)
        .unwrap()
        .1;
    ready.suite = "beta".into();
    ready.identical = false;
    ready.fast.path = "p2/k.cu".into();
    let mut waiting = ready.clone();
    waiting.suite = "alpha".into();
    waiting.fast.path = "p1/k.cu".into();
    waiting.slow = kernelpair::record::Slow::Pending { rejected: None };
    let recs = vec![
        Record::Pair(Box::new(ready)),
        Record::Pair(Box::new(waiting)),
    ];
    let (c, out) = capture_suites(d.path(), &list, &recs, &CaptureSettings::default());
    assert_eq!(c.counts.get("programs_captured"), Some(&1), "{c:?}");
    let ran: Vec<String> = ["alpha", "beta"]
        .iter()
        .flat_map(|s| {
            let j = out.join("captures").join(s).join("programs.jsonl");
            std::fs::read_to_string(j)
                .unwrap_or_default()
                .lines()
                .map(|l| {
                    format!(
                        "{s}/{}",
                        serde_json::from_str::<serde_json::Value>(l).unwrap()["program"]
                            .as_str()
                            .unwrap()
                    )
                })
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(ran, vec!["beta/p2".to_string()]);
}

/// `harness show` prints a manifest for review: the launch, each parameter (pointers with
/// the allocation they point into), each allocation as input or output, and a skip's
/// reason; a file that is not a manifest is named in the error.
#[test]
fn harness_show_prints_a_manifest_for_review() {
    let d = tempfile::tempdir().unwrap();
    let m = d.path().join("p1-0000003-scale.toml");
    std::fs::write(
        &m,
        r#"version = 1
symbol = "_Z5scalePfPKfi"
demangled = "scale(float*, float const*, int)"
kernel = "scale"
name_expression = "scale"
seq = 3
pid = 1
nth = 0
grid = [64, 1, 1]
block = [256, 1, 1]
shared_mem = 0
via = "cuLaunchKernel"

[[params]]
offset = 0
size = 8
hex = "0000a00000000000"
[[params.pointers]]
at = 0
alloc = 0
offset = 0

[[params]]
offset = 8
size = 8
hex = "0000b00000000000"
[[params.pointers]]
at = 0
alloc = 1
offset = 0

[[params]]
offset = 16
size = 4
hex = "00400000"

[[allocs]]
bytes = 65536
kind = "device"
before = "aaaaaaaaaaaaaaaaaaaa"
after = "bbbbbbbbbbbbbbbbbbbb"

[[allocs]]
bytes = 65536
kind = "device"
before = "cccccccccccccccccccc"
after = "cccccccccccccccccccc"
"#,
    )
    .unwrap();
    let o = Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["harness", "show", m.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = String::from_utf8_lossy(&o.stdout);
    for want in [
        "kernel scale (scale(float*, float const*, int))",
        "launch 3 of the process (pid 1)",
        "grid [64, 1, 1] block [256, 1, 1]",
        "param 0: 8 B at 0: word 0 -> alloc 0 + 0",
        "param 2: 4 B at 16 = 00400000",
        "alloc 0: 65536 B Device, output: aaaaaaaaaaaa -> bbbbbbbbbbbb",
        "alloc 1: 65536 B Device, input: cccccccccccc",
    ] {
        assert!(out.contains(want), "missing {want:?} in:\n{out}");
    }
    let bad = d.path().join("not.toml");
    std::fs::write(&bad, "kernel = 3\n").unwrap();
    let o = Command::cargo_bin("kernelpair")
        .unwrap()
        .args(["harness", "show", bad.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a capture manifest"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
