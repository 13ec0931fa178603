//! Runs one pair on a GPU from a [`Plan`]: compile both variants (cached), then per
//! size set and seed run slow and fast on fresh copies of the same inputs inside
//! canary zones with poisoned outputs, compare, and finally time both interleaved
//! with an L2 flush between runs. Produces a [`Verification`] with its evidence.

use super::check::{self, Comparison};
use super::plan::{ArgPlan, BufferPlan, Plan, Role, SizeSetPlan, Tol};
use crate::gpu::cache::{CacheHit, CachedCompile, CompileCache};
use crate::gpu::driver::{CudaError, DevBuf, Function, Gpu, KArg, Module, Resources};
use crate::record::{Speedup, Status, Verification};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Instant;

/// One variant's code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// File name shown in compile logs.
    pub name: String,
    pub source: String,
    /// The kernel's symbol or name expression (`k`, `k<float>`).
    pub symbol: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    pub seeds: u32,
    pub min_speedup: f64,
    /// Wall-clock budget for timing one size set (both variants), milliseconds.
    pub time_budget_ms: f64,
    pub min_runs: usize,
    pub max_runs: usize,
    pub bootstrap_iters: usize,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seeds: 3,
            min_speedup: 1.1,
            time_budget_ms: 250.0,
            min_runs: 20,
            max_runs: 400,
            bootstrap_iters: 2000,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub pair_id: String,
    pub slow: Source,
    pub fast: Source,
    pub plan: Plan,
    #[serde(default)]
    pub options: RunOptions,
}

pub struct Outcome {
    pub verification: Verification,
    /// The context is unusable (sticky error): the worker must exit and be restarted.
    pub sticky: bool,
}

/// Bytes of canary on each side of every buffer.
const CANARY: usize = 64 * 1024;
const CANARY_BYTE: u8 = 0xCB;

#[derive(Default, Serialize)]
struct Evidence {
    variants: BTreeMap<&'static str, VariantEvidence>,
    checks: Vec<CheckEvidence>,
    timings: Vec<TimingEvidence>,
    phases_ms: BTreeMap<&'static str, f64>,
}

#[derive(Default, Serialize)]
struct VariantEvidence {
    compile_ok: bool,
    compile_ms: f64,
    cache: Option<CacheHit>,
    arch: String,
    nvrtc_version: String,
    log: String,
    kernels: Vec<KernelEvidence>,
}

#[derive(Serialize)]
struct KernelEvidence {
    expression: String,
    lowered: String,
    #[serde(flatten)]
    resources: Resources,
}

#[derive(Serialize)]
struct CheckEvidence {
    size_set: String,
    seed: u32,
    output: String,
    #[serde(flatten)]
    comparison: Comparison,
}

#[derive(Serialize)]
struct VariantTiming {
    median_ms: f64,
    iqr_ms: f64,
    min_ms: f64,
    runs: usize,
}

#[derive(Serialize)]
struct TimingEvidence {
    size_set: String,
    bytes: usize,
    slow: VariantTiming,
    fast: VariantTiming,
    speedup: f64,
    ci_low: f64,
    ci_high: f64,
}

/// Why a pair stopped early.
struct Stop {
    status: Status,
    reason: String,
    sticky: bool,
}

impl Stop {
    fn new(status: Status, reason: impl Into<String>) -> Stop {
        Stop {
            status,
            reason: reason.into(),
            sticky: false,
        }
    }
    /// A CUDA error during a run: sticky ones crash the pair (and end the worker),
    /// others mean the launch itself was refused (bad grid/block/shared memory).
    fn cuda(e: CudaError, context: &str) -> Stop {
        if e.is_sticky() {
            Stop {
                status: Status::Crashed,
                reason: format!("{context}: {e}"),
                sticky: true,
            }
        } else {
            Stop::new(Status::HarnessError, format!("{context}: {e}"))
        }
    }
}

pub fn tool_version() -> String {
    format!("kernelpair {}", env!("CARGO_PKG_VERSION"))
}

/// Run the job; never panics on bad kernels or harnesses.
pub fn run_job(gpu: &mut Gpu, cache: &mut CompileCache, job: &Job) -> Outcome {
    let t0 = Instant::now();
    let mut ev = Evidence::default();
    let mut speedup = None;
    let result = run_inner(gpu, cache, job, &mut ev, &mut speedup);
    ev.phases_ms
        .insert("total", t0.elapsed().as_secs_f64() * 1e3);
    let (status, reason, sticky) = match result {
        Ok(()) => {
            let s: &Speedup = speedup.as_ref().expect("set when timing ran");
            if s.ci_low >= job.options.min_speedup {
                (
                    Status::Verified,
                    format!(
                        "agrees on {} size sets × {} seeds; {:.2}× faster at {} (95% CI {:.2}–{:.2})",
                        job.plan.size_sets.len(),
                        job.options.seeds,
                        s.median,
                        s.size_set,
                        s.ci_low,
                        s.ci_high
                    ),
                    false,
                )
            } else {
                (
                    Status::NotFaster,
                    format!(
                        "agrees, but speedup at {} is {:.2}× (95% CI {:.2}–{:.2}); needs CI low ≥ {}",
                        s.size_set, s.median, s.ci_low, s.ci_high, job.options.min_speedup
                    ),
                    false,
                )
            }
        }
        Err(stop) => (stop.status, stop.reason, stop.sticky),
    };
    Outcome {
        verification: Verification {
            status,
            reason,
            device: Some(gpu.info.clone()),
            evidence: serde_json::to_value(&ev).unwrap_or_default(),
            speedup,
            tool_version: tool_version(),
        },
        sticky,
    }
}

struct Loaded {
    _module: Module,
    /// Name expression → function.
    functions: BTreeMap<String, Function>,
    module_globals: Vec<(String, u64, usize)>,
}

fn kernel_exprs(src: &Source, plan: &Plan, slow: bool) -> Vec<String> {
    let mut v: Vec<String> = vec![src.symbol.clone()];
    for ss in &plan.size_sets {
        let launches = if slow { &ss.slow } else { &ss.fast };
        for l in launches {
            if let Some(k) = &l.kernel {
                if !v.contains(k) {
                    v.push(k.clone());
                }
            }
        }
    }
    v
}

fn compile_variant(
    gpu: &Gpu,
    cache: &mut CompileCache,
    which: &'static str,
    src: &Source,
    plan: &Plan,
    ev: &mut Evidence,
) -> Result<Loaded, Stop> {
    let exprs = kernel_exprs(src, plan, which == "slow");
    let arch = gpu.arch();
    let (c, hit): (Arc<CachedCompile>, CacheHit) = cache
        .compile(&src.name, &src.source, &arch, &exprs)
        .map_err(|e| Stop::new(Status::CompileError, format!("{which}: {e}")))?;
    let ve = ev.variants.entry(which).or_default();
    ve.compile_ok = c.ok;
    ve.compile_ms = if hit == CacheHit::Miss {
        c.compile_ms
    } else {
        0.0
    };
    ve.cache = Some(hit);
    ve.arch = c.arch.clone();
    ve.nvrtc_version = c.nvrtc_version.clone();
    ve.log = c.log.chars().take(8000).collect();
    if !c.ok {
        let first = c.log.lines().find(|l| l.contains("error")).unwrap_or("");
        return Err(Stop::new(
            Status::CompileError,
            format!("{which} kernel {} does not compile: {first}", src.symbol),
        ));
    }
    let module = gpu
        .load(&c.image)
        .map_err(|e| Stop::cuda(e, &format!("{which}: loading module")))?;
    let mut functions = BTreeMap::new();
    for (expr, lowered) in &c.lowered {
        let f = module.function(lowered).map_err(|e| {
            Stop::new(
                Status::HarnessError,
                format!("{which}: kernel {expr} ({lowered}) not in module: {e}"),
            )
        })?;
        ve.kernels.push(KernelEvidence {
            expression: expr.clone(),
            lowered: lowered.clone(),
            resources: f.resources,
        });
        functions.insert(expr.clone(), f);
    }
    let mut module_globals = Vec::new();
    for ss in &plan.size_sets {
        for k in &ss.constants {
            if let Some((p, n)) = module.global(&k.name) {
                if !module_globals.iter().any(|(g, _, _)| g == &k.name) {
                    module_globals.push((k.name.clone(), p, n));
                }
            }
        }
    }
    Ok(Loaded {
        _module: module,
        functions,
        module_globals,
    })
}

/// A device buffer with canary zones either side and a pristine copy of its input.
struct Guarded {
    alloc: DevBuf,
    pristine: DevBuf,
    bytes: usize,
}

impl Guarded {
    fn data(&self) -> u64 {
        self.alloc.ptr + CANARY as u64
    }
}

fn run_inner(
    gpu: &mut Gpu,
    cache: &mut CompileCache,
    job: &Job,
    ev: &mut Evidence,
    speedup: &mut Option<Speedup>,
) -> Result<(), Stop> {
    if job.plan.size_sets.is_empty() {
        return Err(Stop::new(Status::HarnessError, "the plan has no size sets"));
    }
    let t = Instant::now();
    let slow = compile_variant(gpu, cache, "slow", &job.slow, &job.plan, ev)?;
    let fast = compile_variant(gpu, cache, "fast", &job.fast, &job.plan, ev)?;
    ev.phases_ms
        .insert("compile", t.elapsed().as_secs_f64() * 1e3);
    let mut largest: Option<(usize, Speedup)> = None;
    let (mut check_ms, mut time_ms) = (0.0, 0.0);
    for ss in &job.plan.size_sets {
        let t = Instant::now();
        let bufs = alloc_buffers(gpu, ss)?;
        for seed in 0..job.options.seeds {
            check_seed(gpu, job, ss, seed, &bufs, &slow, &fast, ev)?;
        }
        check_ms += t.elapsed().as_secs_f64() * 1e3;
        let t = Instant::now();
        let te = time_size_set(gpu, job, ss, &bufs, &slow, &fast)?;
        time_ms += t.elapsed().as_secs_f64() * 1e3;
        let s = Speedup {
            size_set: ss.name.clone(),
            median: te.speedup,
            ci_low: te.ci_low,
            ci_high: te.ci_high,
        };
        if largest.as_ref().is_none_or(|(b, _)| te.bytes >= *b) {
            largest = Some((te.bytes, s));
        }
        ev.timings.push(te);
    }
    ev.phases_ms.insert("check", check_ms);
    ev.phases_ms.insert("time", time_ms);
    *speedup = largest.map(|(_, s)| s);
    Ok(())
}

fn alloc_buffers(gpu: &Gpu, ss: &SizeSetPlan) -> Result<Vec<Option<Guarded>>, Stop> {
    let mut out = Vec::new();
    for a in &ss.args {
        match a {
            ArgPlan::Buffer(b) => {
                let bytes = b.bytes();
                let alloc = gpu.alloc(bytes + 2 * CANARY).map_err(|e| {
                    Stop::cuda(e, &format!("allocating {} ({bytes} bytes)", b.name))
                })?;
                let pristine = gpu
                    .alloc(bytes)
                    .map_err(|e| Stop::cuda(e, &format!("allocating {}", b.name)))?;
                out.push(Some(Guarded {
                    alloc,
                    pristine,
                    bytes,
                }));
            }
            ArgPlan::Scalar { .. } => out.push(None),
        }
    }
    Ok(out)
}

fn kernel_args(ss: &SizeSetPlan, bufs: &[Option<Guarded>]) -> Vec<KArg> {
    ss.args
        .iter()
        .zip(bufs)
        .map(|(a, g)| match (a, g) {
            (ArgPlan::Buffer(_), Some(g)) => KArg::Ptr(g.data()),
            (ArgPlan::Scalar { elem, value, .. }, _) => KArg::Scalar(elem.scalar(*value)),
            (ArgPlan::Buffer(_), None) => unreachable!("buffers are allocated per buffer arg"),
        })
        .collect()
}

/// Copy pristine inputs into place and poison write-only outputs.
fn restore(gpu: &Gpu, ss: &SizeSetPlan, bufs: &[Option<Guarded>]) -> Result<(), CudaError> {
    for (a, g) in ss.args.iter().zip(bufs) {
        if let (ArgPlan::Buffer(b), Some(g)) = (a, g) {
            if b.role == Role::Out {
                gpu.memset(g.data(), super::plan::POISON, g.bytes)?;
            } else {
                gpu.copy(g.data(), g.pristine.ptr, g.bytes)?;
            }
        }
    }
    Ok(())
}

fn launch_all(
    gpu: &Gpu,
    which: &str,
    src: &Source,
    loaded: &Loaded,
    ss: &SizeSetPlan,
    args: &[KArg],
) -> Result<(), Stop> {
    let launches = if which == "slow" { &ss.slow } else { &ss.fast };
    if launches.is_empty() {
        return Err(Stop::new(
            Status::HarnessError,
            format!("size set {}: no launches for the {which} variant", ss.name),
        ));
    }
    for l in launches {
        let expr = l.kernel.as_deref().unwrap_or(&src.symbol);
        let f = loaded
            .functions
            .get(expr)
            .ok_or_else(|| Stop::new(Status::HarnessError, format!("{which}: no kernel {expr}")))?;
        for _ in 0..l.repeat.max(1) {
            gpu.launch(f, l.grid, l.block, l.shared_mem, args)
                .map_err(|e| {
                    if e.name == "ARGUMENT_MISMATCH" {
                        Stop::new(
                            Status::HarnessError,
                            format!("{which} kernel {expr}: {}", e.message),
                        )
                    } else {
                        Stop::cuda(e, &format!("{which} kernel {expr}, size set {}", ss.name))
                    }
                })?;
        }
    }
    Ok(())
}

fn upload_constants(
    gpu: &Gpu,
    loaded: &Loaded,
    consts: &[(String, Vec<u8>)],
) -> Result<(), CudaError> {
    for (name, data) in consts {
        if let Some((_, p, n)) = loaded.module_globals.iter().find(|(g, _, _)| g == name) {
            gpu.upload(*p, &data[..data.len().min(*n)])?;
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)] // the run's context, passed explicitly rather than bundled
fn check_seed(
    gpu: &mut Gpu,
    job: &Job,
    ss: &SizeSetPlan,
    seed: u32,
    bufs: &[Option<Guarded>],
    slow: &Loaded,
    fast: &Loaded,
    ev: &mut Evidence,
) -> Result<(), Stop> {
    let where_ = |v: &str| format!("size set {}, seed {seed}, {v} kernel", ss.name);
    // Host inputs for this seed.
    let mut host: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let seed64 = 0x6b70_0000_u64 + seed as u64;
    for a in &ss.args {
        if let ArgPlan::Buffer(b) = a {
            if b.role == Role::Out {
                continue;
            }
            let data = super::plan::generate(b.elem, b.len, &b.init, seed64, &b.name, &|n| {
                host.get(n).cloned()
            })
            .map_err(|e| Stop::new(Status::HarnessError, e))?;
            host.insert(b.name.clone(), data);
        }
    }
    let mut consts = Vec::new();
    for k in &ss.constants {
        let data = super::plan::generate(k.elem, k.len, &k.init, seed64, &k.name, &|n| {
            host.get(n).cloned()
        })
        .map_err(|e| Stop::new(Status::HarnessError, e))?;
        consts.push((k.name.clone(), data));
    }
    for k in &ss.constants {
        if !slow.module_globals.iter().any(|(g, _, _)| g == &k.name)
            && !fast.module_globals.iter().any(|(g, _, _)| g == &k.name)
        {
            return Err(Stop::new(
                Status::HarnessError,
                format!("__constant__ {} is in neither variant's module", k.name),
            ));
        }
    }
    for (a, g) in ss.args.iter().zip(bufs) {
        if let (ArgPlan::Buffer(b), Some(g)) = (a, g) {
            if let Some(d) = host.get(&b.name) {
                gpu.upload(g.pristine.ptr, d)
                    .map_err(|e| Stop::cuda(e, "uploading inputs"))?;
            }
        }
    }
    let args = kernel_args(ss, bufs);
    let mut outputs: BTreeMap<&'static str, Vec<Vec<u8>>> = BTreeMap::new();
    for (which, src, loaded) in [("slow", &job.slow, slow), ("fast", &job.fast, fast)] {
        let ctx = where_(which);
        restore(gpu, ss, bufs).map_err(|e| Stop::cuda(e, &ctx))?;
        for g in bufs.iter().flatten() {
            gpu.memset(g.alloc.ptr, CANARY_BYTE, CANARY)
                .and_then(|_| gpu.memset(g.data() + g.bytes as u64, CANARY_BYTE, CANARY))
                .map_err(|e| Stop::cuda(e, &ctx))?;
        }
        upload_constants(gpu, loaded, &consts).map_err(|e| Stop::cuda(e, &ctx))?;
        launch_all(gpu, which, src, loaded, ss, &args)?;
        gpu.sync().map_err(|e| Stop::cuda(e, &ctx))?;
        for (a, g) in ss.args.iter().zip(bufs) {
            if let (ArgPlan::Buffer(b), Some(g)) = (a, g) {
                let before = gpu
                    .download(g.alloc.ptr, CANARY)
                    .map_err(|e| Stop::cuda(e, &ctx))?;
                let after = gpu
                    .download(g.data() + g.bytes as u64, CANARY)
                    .map_err(|e| Stop::cuda(e, &ctx))?;
                let hit = |z: &[u8]| z.iter().position(|&x| x != CANARY_BYTE);
                if let Some(off) = hit(&after) {
                    return Err(Stop::new(
                        Status::OutOfBounds,
                        format!(
                            "{ctx} wrote past the end of {} (byte {} after its {} bytes)",
                            b.name, off, g.bytes
                        ),
                    ));
                }
                if let Some(off) = hit(&before) {
                    return Err(Stop::new(
                        Status::OutOfBounds,
                        format!(
                            "{ctx} wrote before the start of {} ({} bytes before it)",
                            b.name,
                            CANARY - off
                        ),
                    ));
                }
            }
        }
        let mut outs = Vec::new();
        for (a, g) in ss.args.iter().zip(bufs) {
            if let (ArgPlan::Buffer(b), Some(g)) = (a, g) {
                if b.role != Role::In {
                    outs.push(
                        gpu.download(g.data(), g.bytes)
                            .map_err(|e| Stop::cuda(e, &ctx))?,
                    );
                }
            }
        }
        outputs.insert(which, outs);
    }
    let out_args: Vec<&BufferPlan> = ss
        .args
        .iter()
        .filter_map(|a| match a {
            ArgPlan::Buffer(b) if b.role != Role::In => Some(b),
            _ => None,
        })
        .collect();
    if out_args.is_empty() {
        return Err(Stop::new(
            Status::HarnessError,
            "the harness names no out/inout buffer",
        ));
    }
    for (i, b) in out_args.iter().enumerate() {
        let (s, f) = (&outputs["slow"][i], &outputs["fast"][i]);
        for (which, this, other) in [("fast", f, s), ("slow", s, f)] {
            if let Some((count, first)) = check::unwritten(b.elem, this, other) {
                return Err(Stop::new(
                    Status::Unwritten,
                    format!(
                        "{}: left {count} element(s) of {} unwritten (first at index {first})",
                        where_(which),
                        b.name
                    ),
                ));
            }
        }
        if !job.plan.allow_degenerate {
            let input = host.get(&b.name).map(Vec::as_slice);
            for (which, out) in [("slow", s), ("fast", f)] {
                if let Some(why) = check::degenerate(b.elem, out, input) {
                    return Err(Stop::new(
                        Status::Degenerate,
                        format!("{}: output {}: {why}", where_(which), b.name),
                    ));
                }
            }
        }
        let tol = b.tol.unwrap_or_else(|| Tol::default_for(b.elem));
        let c = check::compare(b.elem, s, f, &tol);
        let pass = c.pass;
        let first = c.first_mismatch;
        let (mism, l2) = (c.mismatches, c.rel_l2);
        ev.checks.push(CheckEvidence {
            size_set: ss.name.clone(),
            seed,
            output: b.name.clone(),
            comparison: c,
        });
        if !pass {
            let detail = first
                .map(|(i, e, a)| format!("; first at index {i}: slow {e}, fast {a}"))
                .unwrap_or_default();
            return Err(Stop::new(
                Status::Mismatch,
                format!(
                    "size set {}, seed {seed}: output {} differs in {mism} of {} elements (rel L2 {l2:.3e}){detail}",
                    ss.name, b.name, b.len
                ),
            ));
        }
    }
    Ok(())
}

fn time_size_set(
    gpu: &mut Gpu,
    job: &Job,
    ss: &SizeSetPlan,
    bufs: &[Option<Guarded>],
    slow: &Loaded,
    fast: &Loaded,
) -> Result<TimingEvidence, Stop> {
    let args = kernel_args(ss, bufs);
    let ctx = format!("timing size set {}", ss.name);
    let variants = [("slow", &job.slow, slow), ("fast", &job.fast, fast)];
    // Warm-up: caches, clocks, lazy module loading.
    for _ in 0..2 {
        for (which, src, loaded) in variants {
            restore(gpu, ss, bufs).map_err(|e| Stop::cuda(e, &ctx))?;
            launch_all(gpu, which, src, loaded, ss, &args)?;
        }
    }
    gpu.sync().map_err(|e| Stop::cuda(e, &ctx))?;
    let mut times: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    let start = Instant::now();
    let o = &job.options;
    let hard_cap_ms = (o.time_budget_ms * 8.0).max(2000.0);
    let mut round = 0usize;
    loop {
        let runs = times[0].len();
        let wall = start.elapsed().as_secs_f64() * 1e3;
        if runs >= o.max_runs
            || (runs >= o.min_runs && wall >= o.time_budget_ms)
            || (runs >= 5 && wall >= hard_cap_ms)
        {
            break;
        }
        // Alternate which variant goes first so neither always follows the other.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for vi in order {
            let (which, src, loaded) = variants[vi];
            restore(gpu, ss, bufs).map_err(|e| Stop::cuda(e, &ctx))?;
            gpu.flush_l2().map_err(|e| Stop::cuda(e, &ctx))?;
            let mut stop = None;
            let ms = gpu
                .timed(|| {
                    launch_all(gpu, which, src, loaded, ss, &args).map_err(|s| {
                        let e = CudaError {
                            call: "launch",
                            code: -1,
                            name: String::new(),
                            message: String::new(),
                        };
                        stop = Some(s);
                        e
                    })
                })
                .map_err(|e| Stop::cuda(e, &ctx));
            if let Some(s) = stop {
                return Err(s);
            }
            times[vi].push(ms? as f64);
        }
        round += 1;
    }
    let vt = |t: &[f64]| VariantTiming {
        median_ms: check::median(t),
        iqr_ms: check::iqr(t),
        min_ms: t.iter().copied().fold(f64::INFINITY, f64::min),
        runs: t.len(),
    };
    let (lo, hi) = check::bootstrap_ratio_ci(&times[0], &times[1], o.bootstrap_iters, 42);
    let bytes = bufs.iter().flatten().map(|g| g.bytes).sum();
    Ok(TimingEvidence {
        size_set: ss.name.clone(),
        bytes,
        speedup: check::median(&times[0]) / check::median(&times[1]),
        slow: vt(&times[0]),
        fast: vt(&times[1]),
        ci_low: lo,
        ci_high: hi,
    })
}
