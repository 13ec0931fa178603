//! Device measurements behind benches/RESULTS.md (run on a GPU machine; see
//! benches/device.sh): device facts, device-to-device copy bandwidth, the
//! memory-bound fixture against bytes moved / copy bandwidth, and repeatability
//! (the same pair verified 5 times). Prints a table; `--json PATH` writes the numbers.
//!
//! Usage: gpu-bench [--planted fixtures/planted] [--json out.json]

use kernelpair::evidence::Evidence;
use kernelpair::gpu::{self, cache::CompileCache, Gpu, Probe};
use kernelpair::harness::DeviceProps;
use kernelpair::verify::engine::{run_job, Job, RunOptions, SlowMemo, Source};
use kernelpair::verify::validate::load_folder;
use serde_json::json;
use std::path::{Path, PathBuf};

fn job_for(dir: &Path, options: RunOptions, g: &Gpu) -> Job {
    let (_, p) = load_folder(dir).expect("fixture folder loads");
    let path = p.harness.clone().expect("harness path");
    let h = kernelpair::harness::load(Path::new(&path)).expect("harness parses");
    let dev = DeviceProps {
        sm_count: g.props.sm_count as i64,
        max_threads_per_block: g.props.max_threads_per_block as i64,
        warp_size: 32,
        l2_bytes: g.props.l2_bytes as i64,
    };
    let sets = h
        .size_sets()
        .iter()
        .map(|s| h.resolve(s, &dev).expect("resolves"))
        .collect();
    let src = |u: &kernelpair::KernelUnit| Source {
        name: u.path.clone(),
        source: u.source.clone(),
        symbol: u.symbol.clone(),
        flags: u.build_flags.clone(),
    };
    Job {
        pair_id: p.id.clone(),
        slow: src(p.slow.unit().expect("slow")),
        fast: src(&p.fast),
        harness: path,
        sets,
        options,
    }
}

/// Median milliseconds of (slow, fast) at `size_set`, NaN where it was not timed.
fn timing(v: &Evidence, size_set: &str) -> (f64, f64) {
    v.timings
        .iter()
        .find(|t| t.size_set == size_set)
        .map_or((f64::NAN, f64::NAN), |t| {
            (t.slow.median_ms, t.fast.median_ms)
        })
}

fn main() {
    let mut planted = PathBuf::from("fixtures/planted");
    let mut json_out = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--planted" => planted = args.next().expect("value").into(),
            "--json" => json_out = args.next().map(PathBuf::from),
            "--bench" => {} // cargo bench passes this
            other => eprintln!("ignoring argument {other}"),
        }
    }
    if let Probe::NoGpu(r) = gpu::probe() {
        println!("{r}");
        return;
    }
    let nvrtc = gpu::nvrtc::load().expect("NVRTC").version_string();
    let mut g = Gpu::open(0).expect("device 0");
    println!("device: {:?}", g.info);
    println!("props: {:?}; nvrtc {nvrtc}", g.props);
    let mut report = json!({ "device": g.info, "props": g.props, "nvrtc": nvrtc });

    // Copy bandwidth: 1 GiB device-to-device, read + write counted.
    let bw = g.copy_bandwidth(1 << 30, 30).expect("copy bandwidth");
    println!(
        "copy bandwidth (D2D, 1 GiB, read+write): {:.0} GB/s",
        bw / 1e9
    );
    report["copy_bandwidth_gbs"] = json!(bw / 1e9);

    let mut cache = CompileCache::new(None);
    // Memory-bound fixture: the fast copy kernel over 64 Mi floats.
    let opts = RunOptions {
        seeds: 1,
        ..RunOptions::default()
    };
    let copy = job_for(&planted.join("good_copy"), opts.clone(), &g);
    let out = run_job(
        &mut g,
        &mut cache,
        &mut SlowMemo::default(),
        &copy,
        &mut |_| {},
    );
    let (_, fast_ms) = timing(&out.verification.evidence, "64M");
    let n = 1u64 << 26;
    let bytes = 2.0 * n as f64 * 4.0;
    let predicted_ms = bytes / bw * 1e3;
    println!(
        "memory-bound fixture good_copy fast @64M: {fast_ms:.4} ms measured, {predicted_ms:.4} ms = bytes/copy-bw ({:.1}% off); status {}",
        (fast_ms / predicted_ms - 1.0) * 100.0,
        out.verification.status.as_str()
    );
    report["memory_bound"] = json!({
        "pair": "good_copy", "size_set": "64M", "bytes": bytes,
        "measured_ms": fast_ms, "predicted_ms": predicted_ms,
        "ratio": fast_ms / predicted_ms, "status": out.verification.status,
        "reason": out.verification.reason,
    });

    // Repeatability: the same pair verified 5 times (compile cache warm after the first).
    let mut rep = json!({});
    for (name, set) in [
        ("good_transpose", "4096x4096"),
        ("good_matvec", "8192x4096"),
    ] {
        let job = job_for(&planted.join(name), RunOptions::default(), &g);
        let mut slow = vec![];
        let mut fast = vec![];
        let mut totals = vec![];
        for _ in 0..5 {
            // A fresh memo each time: every repetition times its slow side itself.
            let o = run_job(
                &mut g,
                &mut cache,
                &mut SlowMemo::default(),
                &job,
                &mut |_| {},
            );
            let ev = &o.verification.evidence;
            let (s, f) = timing(ev, set);
            slow.push(s);
            fast.push(f);
            totals.push(ev.phases_ms.get("total").copied().unwrap_or(f64::NAN));
        }
        let spread = |v: &[f64]| {
            let mx = v.iter().copied().fold(f64::MIN, f64::max);
            let mn = v.iter().copied().fold(f64::MAX, f64::min);
            (mx - mn) / kernelpair::verify::stats::median(v).unwrap_or(f64::NAN) * 100.0
        };
        println!(
            "repeat {name} @{set}: slow medians {slow:.4?} ms (spread {:.2}%), fast medians {fast:.4?} ms (spread {:.2}%), per-run total {totals:.0?} ms",
            spread(&slow),
            spread(&fast)
        );
        rep[name] = json!({"size_set": set, "slow_ms": slow, "fast_ms": fast,
            "slow_spread_pct": spread(&slow), "fast_spread_pct": spread(&fast), "total_ms": totals});
    }
    report["repeatability"] = rep;
    if let Some(p) = json_out {
        std::fs::write(&p, serde_json::to_string_pretty(&report).expect("json")).expect("write");
    }
}
