//! Runs one pair on a GPU from its harness resolved per size set ([`Resolved`]):
//! compile both variants (cached), then per size set and seed run slow and fast on
//! fresh copies of the same inputs inside canary zones with poisoned outputs, compare,
//! and finally time both interleaved with an L2 flush between runs. Produces a
//! [`Verification`] with its evidence.

use super::compare;
use super::stats;
use crate::evidence::{CheckEvidence, Evidence, KernelEvidence, TimingEvidence, VariantTiming};
use crate::gpu::cache::{CacheHit, CachedCompile, CompileCache};
use crate::gpu::driver::{
    CudaError, DevArray, DevBuf, DevObject, DevView, Function, Global, Gpu, KArg, Module,
};
use crate::gpu::nvrtc::NvrtcError;
use crate::harness::{struct_arg_bytes, HostBuffer, Launch, Resolved, ResolvedArg, Variant};
use crate::record::{Speedup, Status, Verification};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// One variant's code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// File name shown in compile logs.
    pub name: String,
    pub source: String,
    /// The kernel's symbol or name expression (`k`, `k<float>`).
    pub symbol: String,
    /// NVRTC flags from the program's own build (the unit's `build_flags`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunOptions {
    pub seeds: u32,
    pub min_speedup: f64,
    /// Wall-clock budget for timing one size set (both variants), milliseconds: timing
    /// stops here at the latest (after `min_runs`).
    pub time_budget_ms: f64,
    /// Timing stops earlier, after `min_runs`, once both variants' medians are this precise:
    /// the width of each median's 95% confidence interval over the median. 0 = use the
    /// whole budget.
    #[serde(default = "default_precision")]
    pub precision: f64,
    pub min_runs: usize,
    pub max_runs: usize,
    pub bootstrap_iters: usize,
    /// A correctness-only run for `compute-sanitizer` (see `verify::sanitizer`): the
    /// parent sends one seed and the smallest size set; the worker skips timing and
    /// allocates buffers without canary zones, so that a read or write past the end
    /// of a buffer falls outside its allocation where memcheck can see it.
    #[serde(default)]
    pub check_only: bool,
    /// A harness self-check (`kernelpair harness selfcheck`): the fast kernel against
    /// itself, canaries on, no timing, and an element unwritten in both runs counts as
    /// unwritten (there is no independent reference to excuse it).
    #[serde(default)]
    pub selfcheck: bool,
    /// The most a pair may take in all, milliseconds (the parent's cut-off); 0 = none.
    /// When the first check shows the pair's remaining work would pass it (a slow kernel
    /// of many seconds per launch), the pair stops at once as a `timeout` that says so,
    /// instead of running until it is killed.
    #[serde(default)]
    pub pair_budget_ms: f64,
}

impl Default for RunOptions {
    fn default() -> Self {
        RunOptions {
            seeds: super::DEFAULT_SEEDS,
            min_speedup: super::DEFAULT_MIN_SPEEDUP,
            time_budget_ms: super::DEFAULT_TIME_BUDGET_MS,
            precision: DEFAULT_PRECISION,
            min_runs: 20,
            max_runs: 400,
            bootstrap_iters: 2000,
            check_only: false,
            selfcheck: false,
            pair_budget_ms: 0.0,
        }
    }
}

/// Default timing precision: medians known to ±0.5% (CI width 1%), well inside the 10%
/// margin a speedup must clear and the 3% repeatability target.
pub const DEFAULT_PRECISION: f64 = 0.01;

fn default_precision() -> f64 {
    DEFAULT_PRECISION
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Job {
    pub pair_id: String,
    pub slow: Source,
    pub fast: Source,
    /// Harness path, for evidence.
    pub harness: String,
    /// The harness resolved for the worker's device, one entry per size set.
    pub sets: Vec<Resolved>,
    #[serde(default)]
    pub options: RunOptions,
}

/// Timing samples of slow kernels of seconds, kept by a worker across its pairs.
///
/// Pairs that share a slow side (llm.c's naive `softmax_autoregressive_backward_kernel1`
/// against versions 2 to 6) launch the same module the same way on the same captured bytes:
/// one quantity on one device. Its samples are timed once and serve every such pair. Only
/// rounds longer than the hard cap are kept ([`long_checks`]); every shorter pair is timed
/// fully, interleaved, as before.
///
/// The outputs of such a slow side's checks are kept too (per seed, up to
/// [`MEMO_OUTPUT_BYTES`]): a later pair compares its fast kernel with them instead of
/// running the seconds-long slow kernel again (`slow_from_earlier_pair` in its checks).
/// Where they did not fit, the later pair runs the slow kernel for its check and adds that
/// launch as a sample.
#[derive(Default)]
pub struct SlowMemo {
    samples: std::collections::HashMap<u64, Vec<f64>>,
    outputs: std::collections::HashMap<(u64, usize), SlowOutputs>,
    output_bytes: usize,
}

/// A seconds-long slow side's outputs for one seed, by their place in the slow view (so
/// pairs whose size sets number their args differently find them), and its launch time.
struct SlowOutputs {
    ms: f64,
    by_position: BTreeMap<usize, HostBuffer>,
}

/// Host memory a worker's [`SlowMemo`] may hold in slow outputs.
pub const MEMO_OUTPUT_BYTES: usize = 4 << 30;

impl SlowMemo {
    /// What identifies a slow side's timing: its code and build flags, and the size set's
    /// arguments, constants, textures and slow launches. The fast launches, the expected
    /// bytes, the harness's path and where captured blobs are stored (their content id
    /// stays) are left out.
    fn key(slow: &Source, ss: &Resolved) -> u64 {
        use std::hash::{Hash, Hasher};
        let ss = &Self::slow_view(ss);
        fn strip(v: &mut serde_json::Value) {
            match v {
                serde_json::Value::Object(m) => {
                    m.remove("blobs");
                    m.values_mut().for_each(strip);
                }
                serde_json::Value::Array(a) => a.iter_mut().for_each(strip),
                _ => {}
            }
        }
        let mut v = serde_json::to_value(ss).unwrap_or_default();
        if let Some(m) = v.as_object_mut() {
            for k in ["origin", "fast", "expected"] {
                m.remove(k);
            }
        }
        strip(&mut v);
        let mut h = std::collections::hash_map::DefaultHasher::new();
        (&slow.source, &slow.symbol, &slow.flags, v.to_string()).hash(&mut h);
        h.finish()
    }

    /// The args the slow side reads, in order of first use ([`SlowMemo::slow_view`]);
    /// `None` when the whole size set is the key.
    fn slow_order(ss: &Resolved) -> Option<Vec<usize>> {
        let mut order: Vec<usize> = Vec::new();
        let mut stack: Vec<usize> = ss
            .slow
            .iter()
            .flat_map(|l| l.args.iter().copied())
            .rev()
            .collect();
        stack.extend(ss.textures.iter().map(|t| t.buffer).rev());
        while let Some(i) = stack.pop() {
            if order.contains(&i) {
                continue;
            }
            order.push(i);
            match ss.args.get(i) {
                Some(ResolvedArg::Struct { fields, .. }) => stack.extend(fields.iter().rev()),
                Some(ResolvedArg::Bytes { pointers, .. }) => {
                    stack.extend(pointers.iter().map(|p| p.arg).rev())
                }
                Some(ResolvedArg::Buffer { init, .. }) if !init.seed_free() => return None,
                Some(_) => {}
                None => return None,
            }
        }
        let whole = !ss.sparse.is_empty()
            || !ss.objects.is_empty()
            || !ss.constants.iter().all(|c| c.init.seed_free());
        (!whole).then_some(order)
    }

    /// Where each arg of `outs` sits in its slow side's key: its place in the slow view,
    /// or its own index when the whole size set is the key; `None` for an arg the slow
    /// side does not read.
    fn slow_positions(ss: &Resolved, outs: &[usize]) -> Vec<Option<usize>> {
        let order = Self::slow_order(ss);
        outs.iter()
            .map(|&i| match &order {
                Some(order) => order.iter().position(|&o| o == i),
                None => Some(i),
            })
            .collect()
    }

    /// The part of a size set the slow side reads, when that part is seed-free (a
    /// capture's snapshot, fills, formulas): the args its launches bind, directly or
    /// through struct fields and addresses inside bytes args, in order of first use and
    /// renumbered, without their names. Pairs whose fast kernels take other parameters
    /// (llm.c's versions 2 to 6 against the same naive kernel 1 on the same captured
    /// bytes) then share the key. Anything seeded, or naming args by name (a copy, an
    /// interleave, a sparse matrix), keeps the whole size set.
    fn slow_view(ss: &Resolved) -> std::borrow::Cow<'_, Resolved> {
        let Some(order) = Self::slow_order(ss) else {
            return Cow::Borrowed(ss);
        };
        let new = |i: usize| order.iter().position(|&o| o == i).unwrap_or(usize::MAX);
        let mut v = ss.clone();
        v.args = order
            .iter()
            .map(|&i| {
                let mut a = ss.args[i].clone();
                match &mut a {
                    ResolvedArg::Buffer { name, .. } | ResolvedArg::Scalar { name, .. } => {
                        name.clear()
                    }
                    ResolvedArg::Struct { name, fields } => {
                        name.clear();
                        fields.iter_mut().for_each(|f| *f = new(*f));
                    }
                    ResolvedArg::Bytes { name, pointers, .. } => {
                        name.clear();
                        pointers.iter_mut().for_each(|p| p.arg = new(p.arg));
                    }
                }
                a
            })
            .collect();
        for l in &mut v.slow {
            l.args.iter_mut().for_each(|a| *a = new(*a));
        }
        for t in &mut v.textures {
            t.buffer = new(t.buffer);
        }
        v.ignores.clear();
        v.fast.clear();
        v.expected.clear();
        Cow::Owned(v)
    }

    /// What identifies a job's slow side across its size sets: equal for pairs whose
    /// slow kernel runs the same code the same way on the same bytes, which a worker can
    /// time once for all of them (so the batch gives them to one worker).
    pub fn slow_side(job: &Job) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut h = std::collections::hash_map::DefaultHasher::new();
        for ss in &job.sets {
            Self::key(&job.slow, ss).hash(&mut h);
        }
        h.finish()
    }

    fn get(&self, key: u64) -> &[f64] {
        self.samples.get(&key).map_or(&[], Vec::as_slice)
    }

    /// An earlier pair's slow outputs for this seed of this slow side, in the order of
    /// `outs` (args of `ss`), with the launch time; `None` unless every output is there.
    fn slow_outputs(
        &self,
        key: u64,
        seed: usize,
        ss: &Resolved,
        outs: &[usize],
    ) -> Option<(Vec<HostBuffer>, f64)> {
        let kept = self.outputs.get(&(key, seed))?;
        let got = Self::slow_positions(ss, outs)
            .into_iter()
            .map(|at| kept.by_position.get(&at?).cloned())
            .collect::<Option<Vec<_>>>()?;
        Some((got, kept.ms))
    }

    /// Keep a slow side's outputs of one seed (raw, before any mask), while they fit.
    fn keep_outputs(
        &mut self,
        key: u64,
        seed: usize,
        ss: &Resolved,
        outs: &[usize],
        raw: Vec<HostBuffer>,
        ms: f64,
    ) {
        let bytes: usize = raw.iter().map(|b| b.bytes.len()).sum();
        if self.outputs.contains_key(&(key, seed)) || self.output_bytes + bytes > MEMO_OUTPUT_BYTES
        {
            return;
        }
        let by_position = Self::slow_positions(ss, outs)
            .into_iter()
            .zip(raw)
            .filter_map(|(at, b)| Some((at?, b)))
            .collect();
        self.output_bytes += bytes;
        self.outputs
            .insert((key, seed), SlowOutputs { ms, by_position });
    }
}

pub struct Outcome {
    pub verification: Verification,
    /// The context is unusable (sticky error): the worker must exit and be restarted.
    pub sticky: bool,
}

/// Add the time since `t` to phase `key` (sub-phases of `check` are summed over seeds).
fn add_phase(ev: &mut Evidence, key: &'static str, t: Instant) {
    *ev.phases_ms.entry(key.into()).or_insert(0.0) += t.elapsed().as_secs_f64() * 1e3;
}

/// The generator seed of check run `seed` (fixed, so a rerun sees the same data).
fn seed_for(seed: u32) -> u64 {
    0x6b70_0000_u64 + seed as u64
}

/// A 64-bit FNV-1a hash of output bytes, in hex (self-check evidence).
pub fn output_hash(bytes: &[u8]) -> String {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x100000001b3);
    }
    format!("{h:016x}")
}

/// Bytes of canary on each side of every buffer.
const CANARY: usize = 64 * 1024;

/// Why a pair stopped early.
#[derive(Debug)]
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

/// Called as each step of a job finishes (a compile, a seed's check, a timing round), with
/// the step in words: the worker reports it so the parent's no-progress timeout restarts.
pub type Step<'a> = &'a mut dyn FnMut(&str);

/// Run the job; never panics on bad kernels or harnesses.
pub fn run_job(
    gpu: &mut Gpu,
    cache: &mut CompileCache,
    memo: &mut SlowMemo,
    job: &Job,
    step: Step<'_>,
) -> Outcome {
    let t0 = Instant::now();
    let mut ev = Evidence::default();
    let mut speedup = None;
    ev.harness = job.harness.clone();
    let result = run_inner(gpu, cache, memo, job, &mut ev, &mut speedup, step);
    ev.phases_ms
        .insert("total".into(), t0.elapsed().as_secs_f64() * 1e3);
    let (status, reason, sticky) = match result {
        Ok(()) if job.options.check_only || job.options.selfcheck => (
            Status::Verified,
            format!(
                "check-only run: agrees on {}; not timed",
                super::verdict::checked(&ev, job.sets.len(), job.options.seeds)
            ),
            false,
        ),
        Ok(()) => {
            let s: &Speedup = speedup.as_ref().expect("set when timing ran");
            if s.ci_low >= job.options.min_speedup {
                (
                    Status::Verified,
                    format!(
                        "agrees on {}; {:.2}× faster at {} (95% CI {:.2}–{:.2})",
                        super::verdict::checked(&ev, job.sets.len(), job.options.seeds),
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
            evidence: ev,
            speedup,
            tool_version: tool_version(),
            flags: vec![],
        },
        sticky,
    }
}

struct Loaded {
    _module: Module,
    /// Name expression → function.
    functions: BTreeMap<String, Function>,
    module_globals: Vec<(String, Global)>,
}

fn launches(r: &Resolved, which: Variant) -> &[Launch] {
    match which {
        Variant::Slow => &r.slow,
        Variant::Fast => &r.fast,
    }
}

/// Name expressions to resolve: every kernel the variant's launches name.
pub(crate) fn kernel_exprs(sets: &[Resolved], which: Variant) -> Vec<String> {
    let mut v: Vec<String> = Vec::new();
    for r in sets {
        for l in launches(r, which) {
            if !v.contains(&l.kernel) {
                v.push(l.kernel.clone());
            }
        }
    }
    v
}

fn compile_variant(
    gpu: &Gpu,
    cache: &mut CompileCache,
    which: Variant,
    src: &Source,
    sets: &[Resolved],
    ev: &mut Evidence,
) -> Result<Loaded, Stop> {
    let exprs = kernel_exprs(sets, which);
    let arch = gpu.arch();
    let (c, hit): (Arc<CachedCompile>, CacheHit) = cache
        .compile(&src.name, &src.source, &arch, &exprs, &src.flags)
        .map_err(|e| {
            // A name the source does not define fails lowering, after a good compile.
            let status = if matches!(e, NvrtcError::UnknownName { .. }) {
                Status::HarnessError
            } else {
                Status::CompileError
            };
            Stop::new(status, format!("{which}: kernels {exprs:?}: {e}"))
        })?;
    let ve = ev.variants.entry(which.name().into()).or_default();
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
    for ss in sets {
        let names = ss.constants.iter().map(|k| &k.name);
        for name in names.chain(ss.textures.iter().map(|t| &t.name)) {
            if !module_globals.iter().any(|(g, _)| g == name) {
                if let Some(global) = module.global(name) {
                    module_globals.push((name.clone(), global));
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
    /// The fast variant's own pristine copy, where the harness gives the buffer a
    /// per-variant layout (`pristine` then holds the slow variant's).
    pristine_fast: Option<DevBuf>,
    bytes: usize,
    /// Canary bytes on each side: [`CANARY`], or 0 in a check-only run.
    canary: usize,
    /// The CUDA array a texture or surface object views, when the buffer holds an
    /// array's image: filled from the buffer by [`restore`], read back by [`drain_arrays`].
    array: Option<DevArray>,
}

impl Guarded {
    /// The buffer proper, between its canary zones.
    fn data(&self) -> DevView<'_> {
        self.zone(self.canary, self.bytes)
    }

    /// The canary zone before the data.
    fn before(&self) -> DevView<'_> {
        self.zone(0, self.canary)
    }

    /// The canary zone after the data.
    fn after(&self) -> DevView<'_> {
        self.zone(self.canary + self.bytes, self.canary)
    }

    fn zone(&self, start: usize, len: usize) -> DevView<'_> {
        self.alloc
            .slice(start..start + len)
            .expect("alloc_buffers allocates bytes + 2 * canary")
    }

    fn pristine_for(&self, which: Variant) -> &DevBuf {
        match (which, &self.pristine_fast) {
            (Variant::Fast, Some(p)) => p,
            _ => &self.pristine,
        }
    }
}

fn run_inner(
    gpu: &mut Gpu,
    cache: &mut CompileCache,
    memo: &mut SlowMemo,
    job: &Job,
    ev: &mut Evidence,
    speedup: &mut Option<Speedup>,
    step: Step<'_>,
) -> Result<(), Stop> {
    let t0 = Instant::now();
    if job.sets.is_empty() {
        return Err(Stop::new(
            Status::HarnessError,
            "the harness has no size sets",
        ));
    }
    let t = Instant::now();
    let slow = compile_variant(gpu, cache, Variant::Slow, &job.slow, &job.sets, ev)?;
    let fast = compile_variant(gpu, cache, Variant::Fast, &job.fast, &job.sets, ev)?;
    ev.phases_ms
        .insert("compile".into(), t.elapsed().as_secs_f64() * 1e3);
    step("compiled both kernels");
    let mut largest: Option<(usize, Speedup)> = None;
    let (mut check_ms, mut time_ms) = (0.0, 0.0);
    for (set_no, ss) in job.sets.iter().enumerate() {
        let t = Instant::now();
        let canary = if job.options.check_only { 0 } else { CANARY };
        let mut bufs = alloc_buffers(gpu, ss, canary)?;
        // Texture shims point at the buffers, which stay put for the whole size set.
        for loaded in [&slow, &fast] {
            upload_textures(gpu, loaded, ss, &bufs)?;
        }
        // Texture and surface objects too (dropped before the buffers: declared after).
        let (_objects, patched) = make_objects(gpu, ss, &mut bufs)?;
        let run_ss = patched.as_ref().unwrap_or(ss);
        add_phase(ev, "check.alloc", t);
        let tg = Instant::now();
        // Host-side generation is the slow part for large inputs: all seeds at once.
        let data: Vec<_> = {
            use rayon::prelude::*;
            // A captured launch's inputs are the same bytes under every seed: check once.
            let seeds = if ss.seed_free() { 1 } else { job.options.seeds };
            (0..seeds)
                .into_par_iter()
                .map(|seed| {
                    let s = seed_for(seed);
                    crate::harness::generate_inputs(ss, s)
                        .and_then(|i| Ok((i, crate::harness::generate_constants(ss, s)?)))
                })
                .collect()
        };
        add_phase(ev, "check.generate", tg);
        let n_seeds = data.len();
        // The slow side's memo key, computed only for a pair of seconds-long rounds.
        let mut memo_key: Option<u64> = None;
        let key = |k: &mut Option<u64>| *k.get_or_insert_with(|| SlowMemo::key(&job.slow, ss));
        let cap_ms = hard_cap_ms(&job.options);
        let run_before_set = ev.phases_ms.get("check.run").copied().unwrap_or(0.0);
        let mut checked: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
        // Seeds whose slow outputs an earlier pair of this worker left (no slow run here).
        let mut reused: Vec<bool> = Vec::new();
        let proving = job.options.selfcheck || job.options.check_only;
        let outs = ss.outputs();
        for (seed, d) in data.into_iter().enumerate() {
            let (inputs, consts) = d.map_err(|e| Stop::new(Status::HarnessError, e.to_string()))?;
            let tc = Instant::now();
            let run_before = ev.phases_ms.get("check.run").copied().unwrap_or(0.0);
            let reuse = match proving || memo.outputs.is_empty() {
                true => None,
                false => memo.slow_outputs(key(&mut memo_key), seed, ss, &outs),
            };
            let (ran, slow_raw) = check_seed(
                gpu,
                run_ss,
                seed as u32,
                (&inputs, &consts),
                &bufs,
                (&slow, &fast),
                ev,
                job.options.selfcheck,
                reuse.as_ref().map(|(b, ms)| (b.as_slice(), *ms)),
            )?;
            if let Some(raw) = slow_raw.filter(|_| !proving && ran[0] > cap_ms) {
                memo.keep_outputs(key(&mut memo_key), seed, ss, &outs, raw, ran[0]);
            }
            reused.push(reuse.is_some());
            for (times, ms) in checked.iter_mut().zip(ran) {
                times.push(ms);
            }
            step(&format!("size set {}, seed {seed} checked", ss.size_set));
            if seed == 0 && set_no == 0 {
                let check_ms = tc.elapsed().as_secs_f64() * 1e3;
                let run_ms = ev.phases_ms.get("check.run").copied().unwrap_or(0.0) - run_before;
                over_budget(
                    &job.options,
                    job.sets.len(),
                    t0.elapsed().as_secs_f64() * 1e3,
                    check_ms,
                    run_ms,
                    n_seeds,
                    match run_ms > cap_ms {
                        true => memo.get(key(&mut memo_key)).len(),
                        false => 0,
                    },
                )?;
            }
        }
        check_ms += t.elapsed().as_secs_f64() * 1e3;
        if job.options.check_only || job.options.selfcheck {
            continue;
        }
        // The last seed's check ran both kernels at this size just now, in this process:
        // when that took over a second it was a warm-up round already. A slow side an
        // earlier pair timed is not run again, and the checks ran the fast one.
        let any_reused = reused.iter().any(|&r| r);
        let warmed = any_reused
            || ev.phases_ms.get("check.run").copied().unwrap_or(0.0) - run_before_set
                > 1000.0 * n_seeds as f64;
        let t = Instant::now();
        let long = long_checks(&checked, cap_ms);
        let earlier = match long {
            true => memo.get(key(&mut memo_key)).to_vec(),
            false => Vec::new(),
        };
        // A reused slow output's launch time is one of the earlier pair's samples already.
        let mut it = reused.iter();
        checked[0].retain(|_| !it.next().copied().unwrap_or(false));
        let (te, slow_ms) = time_size_set(
            gpu,
            job,
            run_ss,
            &bufs,
            (&slow, &fast),
            warmed,
            (checked, long, &earlier),
            step,
        )?;
        if long {
            memo.samples.insert(key(&mut memo_key), slow_ms);
        }
        time_ms += t.elapsed().as_secs_f64() * 1e3;
        let s = Speedup {
            size_set: ss.size_set.clone(),
            median: te.speedup,
            ci_low: te.ci_low,
            ci_high: te.ci_high,
        };
        if largest.as_ref().is_none_or(|(b, _)| te.bytes >= *b) {
            largest = Some((te.bytes, s));
        }
        ev.timings.push(te);
    }
    ev.phases_ms.insert("check".into(), check_ms);
    ev.phases_ms.insert("time".into(), time_ms);
    *speedup = largest.map(|(_, s)| s);
    Ok(())
}

/// After the first seed's check of the first size set: the pair's remaining work, from
/// what that check took (`check_ms` for both kernels with the copies and the comparison,
/// `run_ms` of it restoring inputs and running the kernels), and a `timeout` now when it
/// would pass the pair's budget. The estimate is each further check as long as the first,
/// and each timing round as long as its runs: two warm-ups at most and five rounds at least,
/// or for rounds longer than the size set's hard cap, no warm-up (the checks were one) and
/// three samples ([`LONG_ROUND_RUNS`]), of which each seed's check is one, and each slow
/// sample an earlier pair left in the [`SlowMemo`] (`memo_runs`) spares a slow run.
fn over_budget(
    o: &RunOptions,
    sets: usize,
    spent_ms: f64,
    check_ms: f64,
    run_ms: f64,
    seeds: usize,
    memo_runs: usize,
) -> Result<(), Stop> {
    let budget = o.pair_budget_ms;
    if budget <= 0.0 || o.check_only || o.selfcheck {
        return Ok(());
    }
    let sets = sets as f64;
    let checks_left = (seeds as f64 * sets - 1.0).max(0.0);
    let rounds = match run_ms {
        r if r > hard_cap_ms(o) => sets * LONG_ROUND_RUNS.saturating_sub(seeds + memo_runs) as f64,
        r if r > 1000.0 => sets * 6.0,
        _ => sets * 7.0,
    };
    let left = checks_left * check_ms + rounds * run_ms;
    if spent_ms + left <= budget {
        return Ok(());
    }
    Err(Stop::new(
        Status::Timeout,
        format!(
            "stopped early: the first check of both kernels took {:.1} s ({:.1} s of it running them), so the rest ({:.0} more check(s), {:.0} timing round(s)) would take about {:.0} s, past this pair's {:.0} s budget",
            check_ms / 1e3,
            run_ms / 1e3,
            checks_left,
            rounds,
            left / 1e3,
            budget / 1e3
        ),
    ))
}

fn alloc_buffers(gpu: &Gpu, ss: &Resolved, canary: usize) -> Result<Vec<Option<Guarded>>, Stop> {
    let mut out = Vec::new();
    for a in &ss.args {
        match a {
            ResolvedArg::Buffer {
                name,
                elem,
                len,
                layout,
                ..
            } => {
                let bytes = len * elem.size_of();
                let alloc = gpu
                    .alloc(bytes + 2 * canary)
                    .map_err(|e| Stop::cuda(e, &format!("allocating {name} ({bytes} bytes)")))?;
                let pristine = gpu
                    .alloc(bytes)
                    .map_err(|e| Stop::cuda(e, &format!("allocating {name}")))?;
                let pristine_fast = if layout.is_empty() {
                    None
                } else {
                    Some(
                        gpu.alloc(bytes)
                            .map_err(|e| Stop::cuda(e, &format!("allocating {name}")))?,
                    )
                };
                out.push(Some(Guarded {
                    alloc,
                    pristine,
                    pristine_fast,
                    bytes,
                    canary,
                    array: None,
                }));
            }
            ResolvedArg::Scalar { .. } | ResolvedArg::Struct { .. } | ResolvedArg::Bytes { .. } => {
                out.push(None)
            }
        }
    }
    Ok(out)
}

/// The argument list of one launch: buffers by device address (plus any element
/// offset the harness gives), scalars by value, struct args as their fields' addresses.
fn kernel_args(ss: &Resolved, l: &Launch, bufs: &[Option<Guarded>]) -> Result<Vec<KArg>, Stop> {
    l.args
        .iter()
        .enumerate()
        .map(|(p, &ai)| {
            let offset = launch_offset(l, p);
            match (ss.args.get(ai), bufs.get(ai)) {
                (
                    Some(ResolvedArg::Buffer {
                        elem, len, name, ..
                    }),
                    Some(Some(g)),
                ) => {
                    if offset > *len {
                        return Err(Stop::new(
                            Status::HarnessError,
                            format!(
                                "{name} passed at element offset {offset} past its length {len}"
                            ),
                        ));
                    }
                    let at = g
                        .data()
                        .slice(offset * elem.size_of()..g.bytes)
                        .map_err(|e| Stop::new(Status::HarnessError, format!("{name}: {e}")))?;
                    Ok(KArg::ptr(at))
                }
                (Some(ResolvedArg::Struct { name, fields }), _) if offset == 0 => {
                    let addrs = fields
                        .iter()
                        .map(|&k| match bufs.get(k) {
                            Some(Some(g)) => Ok(g.data().device_ptr()),
                            _ => Err(Stop::new(
                                Status::HarnessError,
                                format!("struct {name}: field {k} is not an allocated buffer"),
                            )),
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    KArg::structure(&struct_arg_bytes(&addrs)).ok_or_else(|| {
                        Stop::new(
                            Status::HarnessError,
                            format!("struct {name}: {} fields do not fit 16 bytes", fields.len()),
                        )
                    })
                }
                (
                    Some(ResolvedArg::Bytes {
                        name,
                        bytes,
                        pointers,
                    }),
                    _,
                ) if offset == 0 => {
                    let mut b = bytes.clone();
                    for ptr in pointers {
                        let Some(Some(g)) = bufs.get(ptr.arg) else {
                            return Err(Stop::new(
                                Status::HarnessError,
                                format!("{name}: byte {} points into arg {}, which is not an allocated buffer", ptr.at, ptr.arg),
                            ));
                        };
                        if ptr.offset > g.bytes as u64 || ptr.at + 8 > b.len() {
                            return Err(Stop::new(
                                Status::HarnessError,
                                format!("{name}: address at byte {} is outside its buffer or parameter", ptr.at),
                            ));
                        }
                        let addr = g.data().device_ptr() + ptr.offset;
                        b[ptr.at..ptr.at + 8].copy_from_slice(&addr.to_le_bytes());
                    }
                    Ok(KArg::Bytes(b))
                }
                (Some(ResolvedArg::Scalar { value, .. }), _) => {
                    let v = value.to_le_bytes();
                    let mut b = [0u8; 8];
                    b[..v.len()].copy_from_slice(&v);
                    Ok(KArg::Scalar(b))
                }
                _ => Err(Stop::new(
                    Status::HarnessError,
                    format!(
                        "launch of {} binds argument index {ai}, which does not exist",
                        l.kernel
                    ),
                )),
            }
        })
        .collect()
}

/// Element offset of launch parameter `p` (harnesses may pass `buf + k`).
fn launch_offset(l: &Launch, p: usize) -> usize {
    l.offsets.get(p).copied().unwrap_or(0)
}

/// Copy pristine contents (inputs, or the poison image of `out` buffers), as variant
/// `which` lays them out, into place.
fn restore(gpu: &Gpu, bufs: &[Option<Guarded>], which: Variant) -> Result<(), CudaError> {
    for g in bufs.iter().flatten() {
        gpu.copy(g.data(), g.pristine_for(which).view())?;
        if let Some(a) = &g.array {
            gpu.copy_array(a, g.data(), true)?;
        }
    }
    Ok(())
}

/// Copy each array's image back into its buffer once the launches ran (a surface may
/// have written it), so the buffer is the output compared.
fn drain_arrays(gpu: &Gpu, bufs: &[Option<Guarded>]) -> Result<(), CudaError> {
    for g in bufs.iter().flatten() {
        if let Some(a) = &g.array {
            gpu.copy_array(a, g.data(), false)?;
        }
    }
    Ok(())
}

/// The texture and surface objects of a size set, each created over its buffer (over a
/// fresh CUDA array for an array resource, which [`restore`] fills from the buffer), and
/// the size set with every handle written into its bytes arg (None when it has none).
/// The objects must be dropped before the buffers.
fn make_objects(
    gpu: &Gpu,
    ss: &Resolved,
    bufs: &mut [Option<Guarded>],
) -> Result<(Vec<DevObject>, Option<Resolved>), Stop> {
    use crate::gpu::objects::{
        array_bytes, ObjectKind, ObjectResource, RawArrayDesc, RawResourceDesc,
    };
    if ss.objects.is_empty() {
        return Ok((Vec::new(), None));
    }
    let bad = |o: &crate::harness::ResolvedObject, why: String| {
        Stop::new(Status::HarnessError, format!("object {}: {why}", o.name))
    };
    let mut patched = ss.clone();
    let mut live = Vec::new();
    for o in &ss.objects {
        let k = o.object.resource.alloc();
        let Some(Some(g)) = bufs.get_mut(k) else {
            return Err(bad(o, format!("arg {k} is not an allocated buffer")));
        };
        let fits = |from: u64, n: u64| from.checked_add(n).is_some_and(|e| e <= g.bytes as u64);
        let res = match &o.object.resource {
            ObjectResource::Linear {
                offset,
                format,
                channels,
                bytes,
                ..
            } => {
                let bytes = linear_view_bytes(*offset, *bytes, g.bytes as u64, *format, *channels)
                    .ok_or_else(|| {
                        bad(o, format!("{bytes} bytes from {offset} overrun its buffer"))
                    })?;
                RawResourceDesc::linear(g.data().device_ptr() + offset, *format, *channels, bytes)
            }
            ObjectResource::Pitch2d {
                offset,
                format,
                channels,
                width,
                height,
                pitch,
                ..
            } => {
                if !pitch.checked_mul(*height).is_some_and(|n| fits(*offset, n)) {
                    return Err(bad(
                        o,
                        format!("{height} rows of {pitch} bytes overrun its buffer"),
                    ));
                }
                RawResourceDesc::pitch2d(
                    g.data().device_ptr() + offset,
                    *format,
                    *channels,
                    *width,
                    *height,
                    *pitch,
                )
            }
            ObjectResource::Array {
                format,
                channels,
                width,
                height,
                depth,
                flags,
                ..
            } => {
                if g.array.is_none() {
                    let n = array_bytes(*format, *channels, *width, *height, *depth);
                    if !n.is_some_and(|n| fits(0, n)) {
                        return Err(bad(o, format!("a {width}x{height}x{depth} array of format {format} does not fit its buffer")));
                    }
                    let desc = RawArrayDesc {
                        width: *width as usize,
                        height: *height as usize,
                        depth: *depth as usize,
                        format: *format,
                        channels: *channels,
                        flags: *flags,
                    };
                    g.array = Some(gpu.alloc_array(&desc).map_err(|e| {
                        Stop::cuda(e, &format!("creating the array of {}", o.name))
                    })?);
                }
                let a = g.array.as_ref().expect("made above");
                RawResourceDesc::array(a.handle())
            }
        };
        let obj = match (o.object.kind, &o.object.sampling) {
            (ObjectKind::Texture, Some(sm)) => gpu.texture_object(&res, sm),
            (ObjectKind::Texture, None) => {
                return Err(bad(o, "a texture without sampling state".into()))
            }
            (ObjectKind::Surface, _) => gpu.surface_object(&res),
        }
        .map_err(|e| Stop::cuda(e, &format!("creating {}", o.name)))?;
        match patched.args.get_mut(o.arg) {
            Some(ResolvedArg::Bytes { bytes, .. }) if bytes.len() >= 8 => {
                bytes[..8].copy_from_slice(&obj.handle().to_le_bytes())
            }
            _ => return Err(bad(o, format!("arg {} is not an 8-byte parameter", o.arg))),
        }
        live.push(obj);
    }
    Ok((live, Some(patched)))
}

fn launch_all(
    gpu: &Gpu,
    which: Variant,
    loaded: &Loaded,
    ss: &Resolved,
    bufs: &[Option<Guarded>],
) -> Result<(), Stop> {
    let ls = launches(ss, which);
    if ls.is_empty() {
        return Err(Stop::new(
            Status::HarnessError,
            format!(
                "size set {}: no launches for the {which} variant",
                ss.size_set
            ),
        ));
    }
    for l in ls {
        let f = loaded.functions.get(&l.kernel).ok_or_else(|| {
            Stop::new(
                Status::HarnessError,
                format!("{which}: no kernel {}", l.kernel),
            )
        })?;
        let args = kernel_args(ss, l, bufs)?;
        for _ in 0..l.repeat.max(1) {
            // SAFETY: every pointer in `args` is a view of a buffer in `bufs` (made by
            // kernel_args), which the caller keeps allocated until after the stream is
            // synchronized. That the kernel stays inside its buffers cannot be proven for
            // code under test: the canary zones detect writes just outside them, and a
            // wild access raises a sticky error that ends only this worker process.
            unsafe { gpu.launch(f, l.grid, l.block, l.shared_mem, l.cooperative, &args) }.map_err(
                |e| {
                    if let CudaError::ArgumentMismatch { .. } = e {
                        Stop::new(
                            Status::HarnessError,
                            format!("{which} kernel {}: {e}", l.kernel),
                        )
                    } else {
                        Stop::cuda(
                            e,
                            &format!("{which} kernel {}, size set {}", l.kernel, ss.size_set),
                        )
                    }
                },
            )?;
        }
    }
    Ok(())
}

fn upload_constants(
    gpu: &Gpu,
    loaded: &Loaded,
    names: &[String],
    consts: &[HostBuffer],
    ctx: &str,
) -> Result<(), Stop> {
    for (name, data) in names.iter().zip(consts) {
        if let Some((_, global)) = loaded.module_globals.iter().find(|(g, _)| g == name) {
            let dst = global.view();
            // A table larger than its symbol is the harness's mistake: never cut it short.
            if data.bytes.len() > dst.len() {
                return Err(Stop::new(
                    Status::HarnessError,
                    format!(
                        "constant {name}: the harness gives {} bytes, the __constant__ symbol holds {}",
                        data.bytes.len(),
                        dst.len()
                    ),
                ));
            }
            gpu.upload(dst, &data.bytes)
                .map_err(|e| Stop::cuda(e, ctx))?;
        }
    }
    Ok(())
}

/// Fill each shimmed texture symbol the module has with its buffer's address and extent.
fn upload_textures(
    gpu: &Gpu,
    loaded: &Loaded,
    ss: &Resolved,
    bufs: &[Option<Guarded>],
) -> Result<(), Stop> {
    for t in &ss.textures {
        let Some((_, global)) = loaded.module_globals.iter().find(|(g, _)| *g == t.name) else {
            continue;
        };
        let Some(Some(g)) = bufs.get(t.buffer) else {
            return Err(Stop::new(
                Status::HarnessError,
                format!(
                    "texture {} reads arg {}, which is not a buffer",
                    t.name, t.buffer
                ),
            ));
        };
        let bytes = t.struct_bytes(g.data().device_ptr());
        let n = global.view().len();
        if n < 20 {
            return Err(Stop::new(
                Status::HarnessError,
                format!(
                    "texture {} is a {n}-byte symbol, not a kernelpair_legacy_texture shim",
                    t.name
                ),
            ));
        }
        gpu.upload(global.view(), &bytes[..bytes.len().min(n)])
            .map_err(|e| Stop::cuda(e, &format!("filling texture {}", t.name)))?;
    }
    Ok(())
}

/// One seed of the agreement check: inputs uploaded, both variants run from pristine
/// copies with canaries around every buffer, outputs downloaded in the canonical layout
/// and compared one by one.
#[allow(clippy::too_many_arguments)] // the run's context, passed explicitly rather than bundled
fn check_seed(
    gpu: &mut Gpu,
    ss: &Resolved,
    seed: u32,
    (inputs, consts): (&[HostBuffer], &[HostBuffer]),
    bufs: &[Option<Guarded>],
    (slow, fast): (&Loaded, &Loaded),
    ev: &mut Evidence,
    self_check: bool,
    reuse_slow: Option<(&[HostBuffer], f64)>,
) -> Result<([f64; 2], Option<Vec<HostBuffer>>), Stop> {
    let where_ = |v: Variant| format!("size set {}, seed {seed}, {v} kernel", ss.size_set);
    let const_names: Vec<String> = ss.constants.iter().map(|c| c.name.clone()).collect();
    constants_present(ss, slow, fast)?;
    upload_inputs(gpu, ss, inputs, bufs, ev)?;
    let canary = compare::canary_pattern(CANARY);
    let mut outputs: BTreeMap<Variant, Vec<HostBuffer>> = BTreeMap::new();
    let outs = ss.outputs();
    let mut ran_ms = [0.0; 2];
    for (vi, (which, loaded)) in [(Variant::Slow, slow), (Variant::Fast, fast)]
        .into_iter()
        .enumerate()
    {
        if let (Variant::Slow, Some((kept, ms))) = (which, reuse_slow) {
            outputs.insert(which, kept.to_vec());
            ran_ms[vi] = ms;
            continue;
        }
        let ctx = where_(which);
        let t = Instant::now();
        restore(gpu, bufs, which).map_err(|e| Stop::cuda(e, &ctx))?;
        for g in bufs.iter().flatten().filter(|g| g.canary > 0) {
            gpu.upload(g.before(), &canary)
                .and_then(|_| gpu.upload(g.after(), &canary))
                .map_err(|e| Stop::cuda(e, &ctx))?;
        }
        upload_constants(gpu, loaded, &const_names, consts, &ctx)?;
        // Timed like a timing round (L2 flushed, events around the launches): when rounds
        // are longer than the hard cap, this run is the first timing sample.
        gpu.flush_l2().map_err(|e| Stop::cuda(e, &ctx))?;
        ran_ms[vi] = timed_launches(gpu, which, loaded, ss, bufs, &ctx)?;
        drain_arrays(gpu, bufs).map_err(|e| Stop::cuda(e, &ctx))?;
        gpu.sync().map_err(|e| Stop::cuda(e, &ctx))?;
        check_canaries(gpu, ss, bufs, &ctx)?;
        add_phase(ev, "check.run", t);
        let t = Instant::now();
        outputs.insert(which, download_outputs(gpu, ss, bufs, which, &outs, &ctx)?);
        add_phase(ev, "check.download", t);
    }
    if outs.is_empty() {
        return Err(Stop::new(
            Status::HarnessError,
            "the harness names no out/inout buffer",
        ));
    }
    // The slow side's outputs as it wrote them, before any mask: for later pairs.
    let slow_raw = match reuse_slow {
        Some(_) => None,
        None => outputs.get(&Variant::Slow).cloned(),
    };
    // A captured harness proves itself first, in the same run (one GPU pass per pair):
    // the fast kernel's replay must reproduce what the program wrote, else the harness is
    // at fault, not the slow kernel.
    if !self_check && !ss.expected.is_empty() {
        compare_expected(ss, &outs, &outputs[&Variant::Fast]).map_err(|stop| {
            Stop::new(
                Status::HarnessError,
                format!("the captured harness fails its self-check: {}", stop.reason),
            )
        })?;
    }
    for (k, &i) in outs.iter().enumerate() {
        mask_output(ss, inputs, &mut outputs, k, i);
    }
    // NaN or Inf from finite inputs is the harness's fault until shown otherwise: decided
    // for every output before any comparison (and for both runs of a self-check, which
    // are both the fast kernel).
    let finite = inputs_finite(ss, inputs, consts);
    for (k, &i) in outs.iter().enumerate() {
        non_finite_output(ss, seed, finite, &outputs, k, i, self_check)?;
    }
    let checks_before = ev.checks.len();
    let mut compared = Ok(());
    for (k, &i) in outs.iter().enumerate() {
        compared = compare_output(ss, seed, inputs, &outputs, k, i, ev, self_check);
        if compared.is_err() {
            break;
        }
    }
    // Said on every comparison made against an earlier pair's slow output, pass or fail.
    if reuse_slow.is_some() {
        for c in &mut ev.checks[checks_before..] {
            c.slow_from_earlier_pair = true;
        }
    }
    compared?;
    if self_check {
        compare_expected(ss, &outs, &outputs[&Variant::Fast])?;
    }
    Ok((ran_ms, slow_raw))
}

/// A captured harness's third witness: the fast kernel's replay reproduces what the real
/// program's launch wrote (within the output's tolerance: NVRTC and the program's own
/// build may round differently).
fn compare_expected(ss: &Resolved, outs: &[usize], fast: &[HostBuffer]) -> Result<(), Stop> {
    for e in &ss.expected {
        let (
            Some(k),
            Some(ResolvedArg::Buffer {
                name,
                elem,
                len,
                tol,
                ..
            }),
        ) = (outs.iter().position(|&i| i == e.arg), ss.args.get(e.arg))
        else {
            continue;
        };
        let want = crate::harness::fill_expected(&ss.origin, name, *elem, *len, &e.init)
            .map_err(|err| Stop::new(Status::HarnessError, err.to_string()))?;
        let c = compare::compare(&want, &fast[k], tol);
        if !c.pass {
            return Err(Stop::new(
                Status::Mismatch,
                format!(
                    "the fast kernel's replay differs from what the captured program wrote to {name}: {}",
                    compare::describe(&c)
                ),
            ));
        }
    }
    Ok(())
}

/// Every `__constant__` the harness fills is in one of the two modules.
fn constants_present(ss: &Resolved, slow: &Loaded, fast: &Loaded) -> Result<(), Stop> {
    for k in &ss.constants {
        if !slow.module_globals.iter().any(|(g, _)| g == &k.name)
            && !fast.module_globals.iter().any(|(g, _)| g == &k.name)
        {
            return Err(Stop::new(
                Status::HarnessError,
                format!("__constant__ {} is in neither variant's module", k.name),
            ));
        }
    }
    Ok(())
}

/// Each variant's pristine copy of every input: the canonical input permuted into its layout.
fn upload_inputs(
    gpu: &mut Gpu,
    ss: &Resolved,
    inputs: &[HostBuffer],
    bufs: &[Option<Guarded>],
    ev: &mut Evidence,
) -> Result<(), Stop> {
    let t = Instant::now();
    for ((h, g), a) in inputs.iter().zip(bufs).zip(&ss.args) {
        if let (Some(g), ResolvedArg::Buffer { layout, .. }) = (g, a) {
            // Per-variant layouts: each variant's pristine copy is the canonical input
            // permuted into its layout.
            let view = |v: Variant| match layout.get(v) {
                Some(l) => Cow::Owned(l.apply(h)),
                None => Cow::Borrowed(h),
            };
            gpu.upload(g.pristine.view(), &view(Variant::Slow).bytes)
                .map_err(|e| Stop::cuda(e, "uploading inputs"))?;
            if let Some(p) = &g.pristine_fast {
                gpu.upload(p.view(), &view(Variant::Fast).bytes)
                    .map_err(|e| Stop::cuda(e, "uploading inputs"))?;
            }
        }
    }
    add_phase(ev, "check.upload", t);
    Ok(())
}

/// The canaries before and after every guarded buffer are intact.
fn check_canaries(
    gpu: &mut Gpu,
    ss: &Resolved,
    bufs: &[Option<Guarded>],
    ctx: &str,
) -> Result<(), Stop> {
    for (a, g) in ss.args.iter().zip(bufs) {
        if let (ResolvedArg::Buffer { name, .. }, Some(g)) = (a, g) {
            if g.canary == 0 {
                continue;
            }
            let before = gpu.download(g.before()).map_err(|e| Stop::cuda(e, ctx))?;
            let after = gpu.download(g.after()).map_err(|e| Stop::cuda(e, ctx))?;
            if let Err(d) = compare::check_canary(&after) {
                return Err(Stop::new(
                    Status::OutOfBounds,
                    format!(
                        "{ctx} wrote past the end of {name} ({} byte(s) damaged, {}..{} after its {} bytes)",
                        d.count, d.first, d.last, g.bytes
                    ),
                ));
            }
            if let Err(d) = compare::check_canary(&before) {
                return Err(Stop::new(
                    Status::OutOfBounds,
                    format!(
                        "{ctx} wrote before the start of {name} ({} byte(s) damaged, from {} bytes before it)",
                        d.count,
                        CANARY - d.first
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The outputs `outs` of the variant that just ran, in the canonical layout.
fn download_outputs(
    gpu: &mut Gpu,
    ss: &Resolved,
    bufs: &[Option<Guarded>],
    which: Variant,
    outs: &[usize],
    ctx: &str,
) -> Result<Vec<HostBuffer>, Stop> {
    let mut got = Vec::new();
    for &i in outs {
        let (ResolvedArg::Buffer { elem, layout, .. }, Some(g)) = (&ss.args[i], &bufs[i]) else {
            continue;
        };
        let raw = HostBuffer {
            elem: *elem,
            bytes: gpu.download(g.data()).map_err(|e| Stop::cuda(e, ctx))?,
        };
        // Compared in the canonical layout (canaries were checked on the device buffer).
        got.push(match layout.get(which) {
            Some(l) => l.invert(&raw),
            None => raw,
        });
    }
    Ok(got)
}

/// Output `k` (arg `i`) of both variants with the harness's ignored ranges masked.
fn mask_output(
    ss: &Resolved,
    inputs: &[HostBuffer],
    outputs: &mut BTreeMap<Variant, Vec<HostBuffer>>,
    k: usize,
    i: usize,
) {
    let ResolvedArg::Buffer { role, .. } = &ss.args[i] else {
        return;
    };
    let input = role.is_input().then_some(&inputs[i]);
    if let Some(ig) = ss.ignores.iter().find(|g| g.arg == i) {
        for which in Variant::BOTH {
            if let Some(out) = outputs.get_mut(&which) {
                compare::mask_ignored(&mut out[k], input, ig);
            }
        }
    }
}

/// Whether every input of the seed is finite: the `in`/`inout` buffers, the scalars and
/// the `__constant__` contents (`out` buffers hold the poison, a NaN, and are no input).
fn inputs_finite(ss: &Resolved, inputs: &[HostBuffer], consts: &[HostBuffer]) -> bool {
    let args = ss.args.iter().zip(inputs).filter(|(a, _)| match a {
        ResolvedArg::Buffer { role, .. } => role.is_input(),
        ResolvedArg::Scalar { .. } => true,
        _ => false,
    });
    args.map(|(_, b)| b).chain(consts).all(compare::all_finite)
}

/// Output `k` (arg `i`): a fast kernel (both runs in a self-check) that wrote NaN or Inf
/// from finite inputs makes the pair `degenerate`, with the count and first index.
fn non_finite_output(
    ss: &Resolved,
    seed: u32,
    inputs_finite: bool,
    outputs: &BTreeMap<Variant, Vec<HostBuffer>>,
    k: usize,
    i: usize,
    self_check: bool,
) -> Result<(), Stop> {
    let ResolvedArg::Buffer {
        name,
        allow_degenerate,
        compare: window,
        ..
    } = &ss.args[i]
    else {
        return Ok(());
    };
    let sides: &[Variant] = match self_check {
        true => &[Variant::Fast, Variant::Slow],
        false => &[Variant::Fast],
    };
    for &which in sides {
        let out = &outputs[&which][k];
        let part;
        let out = match window {
            Some(w) => {
                part = w.slice(out);
                &part
            }
            None => out,
        };
        if let Some(mut d) = compare::non_finite(out, inputs_finite, *allow_degenerate) {
            if let (compare::Degenerate::NonFinite { first, .. }, Some(w)) = (&mut d, window) {
                *first += w.offset;
            }
            return Err(Stop::new(
                d.status(),
                format!(
                    "size set {}, seed {seed}, {which} kernel: output {name}: {}",
                    ss.size_set,
                    d.describe()
                ),
            ));
        }
    }
    Ok(())
}

/// Output `k` (arg `i`) of both variants, ignored ranges already masked: the compare
/// window cut, degenerate checks on each side and the agreement check between them.
#[allow(clippy::too_many_arguments)] // the seed's context, passed explicitly
fn compare_output(
    ss: &Resolved,
    seed: u32,
    inputs: &[HostBuffer],
    outputs: &BTreeMap<Variant, Vec<HostBuffer>>,
    k: usize,
    i: usize,
    ev: &mut Evidence,
    self_check: bool,
) -> Result<(), Stop> {
    let where_ = |v: Variant| format!("size set {}, seed {seed}, {v} kernel", ss.size_set);
    let ResolvedArg::Buffer {
        name,
        role,
        tol,
        allow_degenerate,
        compare: window,
        ..
    } = &ss.args[i]
    else {
        return Ok(());
    };
    let t = Instant::now();
    let input = role.is_input().then_some(&inputs[i]);
    // A compare window restricts comparison and degenerate checks to the part of the
    // output the kernels define; the rest is scratch (lbm's ghost margins).
    let (s_part, f_part, in_part);
    let (s, f, input) = match window {
        Some(w) => {
            s_part = w.slice(&outputs[&Variant::Slow][k]);
            f_part = w.slice(&outputs[&Variant::Fast][k]);
            in_part = input.map(|b| w.slice(b));
            (&s_part, &f_part, in_part.as_ref())
        }
        None => (
            &outputs[&Variant::Slow][k],
            &outputs[&Variant::Fast][k],
            input,
        ),
    };
    // The three checks are independent scans of large buffers: run them at once.
    let ((df, ds), c) = rayon::join(
        || {
            let (rs, rf) = match self_check {
                true => (None, None),
                false => (Some(s), Some(f)),
            };
            rayon::join(
                || compare::check_degenerate(f, input, rs, *allow_degenerate),
                || compare::check_degenerate(s, input, rf, *allow_degenerate),
            )
        },
        || compare::compare(s, f, tol),
    );
    add_phase(ev, "check.compare", t);
    for (which, d) in [(Variant::Fast, df), (Variant::Slow, ds)] {
        if let Some(d) = d {
            return Err(Stop::new(
                d.status(),
                format!("{}: output {name}: {}", where_(which), d.describe()),
            ));
        }
    }
    let pass = c.pass;
    let (what, worst) = (compare::describe(&c), c.worst_index);
    ev.checks.push(CheckEvidence {
        size_set: ss.size_set.clone(),
        seed,
        output: name.clone(),
        fast_hash: self_check.then(|| output_hash(&f.bytes)),
        slow_from_earlier_pair: false,
        comparison: c,
    });
    if !pass {
        let detail = worst
            .map(|w| {
                format!(
                    "; worst at index {}: slow {}, fast {}",
                    w + window.map_or(0, |w| w.offset),
                    s.get_f64(w),
                    f.get_f64(w)
                )
            })
            .unwrap_or_default();
        return Err(Stop::new(
            Status::Mismatch,
            format!(
                "size set {}, seed {seed}: output {name} {what}{detail}",
                ss.size_set
            ),
        ));
    }
    Ok(())
}

/// A failure inside a timed region: the launches' own verdict, or the timer's error.
enum Timed {
    Stop(Stop),
    Cuda(CudaError),
}

impl From<CudaError> for Timed {
    fn from(e: CudaError) -> Timed {
        Timed::Cuda(e)
    }
}

/// Timed runs of each variant when every round takes longer than the size set's hard cap;
/// the checks' own launches count among them.
const LONG_ROUND_RUNS: usize = 3;

/// Launch a variant's launches between two events: their GPU time in milliseconds.
fn timed_launches(
    gpu: &Gpu,
    which: Variant,
    loaded: &Loaded,
    ss: &Resolved,
    bufs: &[Option<Guarded>],
    ctx: &str,
) -> Result<f64, Stop> {
    gpu.timed(|| launch_all(gpu, which, loaded, ss, bufs).map_err(Timed::Stop))
        .map(f64::from)
        .map_err(|e| match e {
            Timed::Stop(s) => s,
            Timed::Cuda(e) => Stop::cuda(e, ctx),
        })
}

/// Every check's round (slow + fast) took longer than the hard cap: the checks' launch
/// times are then the first timing samples (a naive kernel of seconds is not launched
/// again only to be timed). Otherwise none are (short rounds get warm-ups and many fresh
/// rounds).
fn long_checks(checked: &[Vec<f64>; 2], hard_cap_ms: f64) -> bool {
    !checked[0].is_empty()
        && checked[0].len() == checked[1].len()
        && checked[0]
            .iter()
            .zip(&checked[1])
            .all(|(s, f)| s + f > hard_cap_ms)
}

/// Timing a size set stops once it has run this long and has five rounds.
fn hard_cap_ms(o: &RunOptions) -> f64 {
    (o.time_budget_ms * 8.0).max(2000.0)
}

fn time_size_set(
    gpu: &mut Gpu,
    job: &Job,
    ss: &Resolved,
    bufs: &[Option<Guarded>],
    (slow, fast): (&Loaded, &Loaded),
    warmed: bool,
    (checked, long, earlier): ([Vec<f64>; 2], bool, &[f64]),
    step: Step<'_>,
) -> Result<(TimingEvidence, Vec<f64>), Stop> {
    let ctx = format!("timing size set {}", ss.size_set);
    let variants = [(Variant::Slow, slow), (Variant::Fast, fast)];
    // Warm-up: caches, clocks, lazy module loading. A round of over a second has warmed
    // all of that already; a second one would only spend the pair's time. Checks that ran
    // both kernels at this size for over a second each seed (`warmed`) were that round.
    for _ in 0..(if warmed { 0 } else { 2 }) {
        let t = Instant::now();
        for (which, loaded) in variants {
            restore(gpu, bufs, which).map_err(|e| Stop::cuda(e, &ctx))?;
            launch_all(gpu, which, loaded, ss, bufs)?;
        }
        gpu.sync().map_err(|e| Stop::cuda(e, &ctx))?;
        step(&format!("size set {}, warm-up round", ss.size_set));
        if t.elapsed() > Duration::from_secs(1) {
            break;
        }
    }
    let o = &job.options;
    let hard_cap_ms = hard_cap_ms(o);
    // The checks' launches are the first samples when every check's round was longer
    // than the hard cap (`long`): a naive kernel of seconds is not launched again only to
    // be timed. (The slow side's list lacks the checks whose outputs an earlier pair left.)
    let mut times = match long {
        true => checked,
        false => [Vec::new(), Vec::new()],
    };
    let from_checks = times[0].len();
    let checks_ms: f64 = times.iter().flatten().sum();
    // A long slow side timed by earlier pairs of this worker: their samples come first, and
    // this pair times only what it lacks (its fast side).
    let from_earlier = match long {
        true => earlier.len(),
        false => 0,
    };
    if from_earlier > 0 {
        times[0].splice(0..0, earlier.iter().copied());
    }
    let start = Instant::now();
    let mut round = 0usize;
    loop {
        let runs = times[0].len().min(times[1].len());
        let wall = start.elapsed().as_secs_f64() * 1e3;
        let precise = || {
            o.precision > 0.0
                && times
                    .iter()
                    .all(|t| stats::median_ci_rel_width(t).is_some_and(|w| w <= o.precision))
        };
        // Rounds that each take longer than the cap (a naive kernel of seconds) stop at 3:
        // a median of three, its spread in the confidence interval.
        let long_rounds = long || (runs > 0 && (wall + checks_ms) / runs as f64 > hard_cap_ms);
        if runs >= o.max_runs
            || (runs >= o.min_runs && (wall >= o.time_budget_ms || precise()))
            || (runs >= 5 && wall >= hard_cap_ms)
            || (runs >= LONG_ROUND_RUNS && long_rounds)
        {
            break;
        }
        // Alternate which variant goes first so neither always follows the other.
        let order = if round % 2 == 0 { [0, 1] } else { [1, 0] };
        for vi in order {
            if times[vi].len() > runs {
                continue;
            }
            let (which, loaded) = variants[vi];
            restore(gpu, bufs, which).map_err(|e| Stop::cuda(e, &ctx))?;
            gpu.flush_l2().map_err(|e| Stop::cuda(e, &ctx))?;
            times[vi].push(timed_launches(gpu, which, loaded, ss, bufs, &ctx)?);
        }
        round += 1;
        step(&format!("size set {}, timing round {round}", ss.size_set));
    }
    let vt = |t: &[f64]| {
        let s = stats::summarize(t);
        VariantTiming {
            median_ms: s.as_ref().map_or(f64::NAN, |s| s.median),
            iqr_ms: s.as_ref().map_or(f64::NAN, |s| s.iqr),
            min_ms: s.as_ref().map_or(f64::NAN, |s| s.min),
            runs: t.len(),
            from_checks,
            from_earlier_pairs: 0,
        }
    };
    let est = stats::speedup_ci(&times[0], &times[1], o.bootstrap_iters, 42)
        .ok_or_else(|| Stop::new(Status::HarnessError, format!("{ctx}: no usable timings")))?;
    let bytes = bufs.iter().flatten().map(|g| g.bytes).sum();
    let te = TimingEvidence {
        size_set: ss.size_set.clone(),
        bytes,
        speedup: est.ratio,
        slow: VariantTiming {
            from_earlier_pairs: from_earlier,
            ..vt(&times[0])
        },
        fast: vt(&times[1]),
        ci_low: est.ci_low,
        ci_high: est.ci_high,
    };
    let [slow_ms, _] = times;
    Ok((te, slow_ms))
}

/// The bytes a linear texture over `[offset, offset + declared)` of a `buffer`-byte buffer may
/// view on replay. A program may declare more than its allocation holds (cuda-samples'
/// convolutionFFT2D declares `DY * (DX + padding)` elements over a `DY * DX` buffer and never
/// fetches past it); the view then ends at the buffer's last whole element, where a fetch
/// past it reads zero instead of another allocation's bytes. None when the offset is past
/// the buffer or not even one element fits.
fn linear_view_bytes(
    offset: u64,
    declared: u64,
    buffer: u64,
    format: u32,
    channels: u32,
) -> Option<u64> {
    if offset.checked_add(declared).is_some_and(|e| e <= buffer) {
        return Some(declared);
    }
    let elem = crate::gpu::objects::channel_bytes(format)? * u64::from(channels.max(1));
    let room = buffer.checked_sub(offset)?;
    let fit = room - room % elem;
    (fit > 0).then_some(fit)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pair whose first check shows seconds-long kernels stops at once when the rest
    /// would pass its budget, naming the estimate; a quick pair, a pair without a budget,
    /// and a self-check never do.
    /// A linear texture the program declared longer than its buffer views the buffer's whole
    /// elements only; one that fits keeps its size; one starting past the end has no view.
    #[test]
    fn a_linear_texture_declared_past_its_buffer_views_only_the_buffer() {
        // float2 texels (CU_AD_FORMAT_FLOAT = 0x20, two channels): 8 bytes each.
        assert_eq!(
            linear_view_bytes(0, 17039360, 16777216, 0x20, 2),
            Some(16777216)
        );
        assert_eq!(linear_view_bytes(8, 64, 100, 0x20, 2), Some(64));
        assert_eq!(linear_view_bytes(8, 128, 100, 0x20, 2), Some(88));
        assert_eq!(linear_view_bytes(0, 64, 64, 0x20, 2), Some(64));
        assert_eq!(linear_view_bytes(0, 64, 4, 0x20, 2), None);
        assert_eq!(linear_view_bytes(128, 64, 100, 0x20, 2), None);
    }

    #[test]
    fn a_pair_stops_early_only_when_its_remaining_work_would_pass_the_budget() {
        let o = RunOptions {
            seeds: 3,
            pair_budget_ms: 120_000.0,
            ..RunOptions::default()
        };
        // 2 more checks of 30 s, and no timing round: rounds past the 2 s hard cap get no
        // warm-up and three samples, and the three seeds' checks are those (60 s left).
        let tight = RunOptions {
            pair_budget_ms: 50_000.0,
            ..o.clone()
        };
        let stop = over_budget(&tight, 1, 5_000.0, 30_000.0, 25_000.0, 3, 0).unwrap_err();
        assert_eq!(stop.status, Status::Timeout);
        assert!(
            stop.reason
                .contains("took 30.0 s (25.0 s of it running them)")
                && stop.reason.contains("0 timing round(s)")
                && stop
                    .reason
                    .contains("about 60 s, past this pair's 50 s budget"),
            "{}",
            stop.reason
        );
        assert!(over_budget(&o, 1, 5_000.0, 30_000.0, 25_000.0, 3, 0).is_ok());
        // One seed (a captured size set): its check is one sample, two rounds of 25 s are
        // left: 55 s with what was spent fits 120 s, not 50 s.
        assert!(over_budget(&o, 1, 5_000.0, 30_000.0, 25_000.0, 1, 0).is_ok());
        let stop = over_budget(&tight, 1, 5_000.0, 30_000.0, 25_000.0, 1, 0).unwrap_err();
        assert!(stop.reason.contains("2 timing round(s)"), "{}", stop.reason);
        // Rounds of 1.5 s: one warm-up and five rounds each of 2 size sets, with 5 checks
        // of 2 s: 28 s.
        let quick = RunOptions {
            pair_budget_ms: 20_000.0,
            ..o.clone()
        };
        let stop = over_budget(&quick, 2, 0.0, 2_000.0, 1_500.0, 3, 0).unwrap_err();
        assert!(
            stop.reason.contains("12 timing round(s)"),
            "{}",
            stop.reason
        );
        // Quick kernels: two warm-ups, far inside the budget.
        assert!(over_budget(&o, 2, 500.0, 200.0, 20.0, 3, 0).is_ok());
        let none = RunOptions {
            pair_budget_ms: 0.0,
            ..o.clone()
        };
        assert!(over_budget(&none, 1, 5_000.0, 30_000.0, 25_000.0, 3, 0).is_ok());
        let sc = RunOptions {
            selfcheck: true,
            ..o.clone()
        };
        assert!(over_budget(&sc, 1, 5_000.0, 30_000.0, 25_000.0, 3, 0).is_ok());
    }
    use crate::harness::tests::SAXPY;
    use crate::harness::{parse, DeviceProps, ElemType};

    /// Checks whose rounds (slow + fast) each pass the hard cap are the first timing
    /// samples; one short check, or none, and timing starts from zero.
    #[test]
    fn long_checks_are_the_first_timing_samples_and_short_ones_are_not() {
        let long = [vec![25_000.0, 24_000.0], vec![10.0, 11.0]];
        assert!(long_checks(&long, 2_000.0));
        let mixed = [vec![25_000.0, 1_000.0], vec![10.0, 11.0]];
        assert!(!long_checks(&mixed, 2_000.0));
        let short = [vec![1.5], vec![0.2]];
        assert!(!long_checks(&short, 2_000.0));
        assert!(!long_checks(&[vec![], vec![]], 2_000.0));
    }

    /// The memo's key names one slow side: its code, flags and slow launches on the same
    /// arguments. The fast launches, the harness's path and where a capture's blobs lie do
    /// not change it; the slow code, a size, or a captured blob's content do.
    #[test]
    fn a_slow_side_is_known_again_by_code_launches_and_inputs_only() {
        let src = |code: &str| Source {
            name: "slow.cu".into(),
            source: code.into(),
            symbol: "saxpy".into(),
            flags: vec![],
        };
        let slow = src("__global__ void saxpy() {}");
        let base = saxpy();
        let k = SlowMemo::key(&slow, &base);
        let mut other = base.clone();
        other.origin = "elsewhere/harness.toml".into();
        other.fast[0].grid = [7, 1, 1];
        assert_eq!(
            SlowMemo::key(&slow, &other),
            k,
            "fast launches and origin are not the slow side"
        );
        assert_ne!(SlowMemo::key(&src("__global__ void saxpy() { }"), &base), k);
        let mut bigger = base.clone();
        bigger.slow[0].grid[0] += 1;
        assert_ne!(SlowMemo::key(&slow, &bigger), k);
        let captured = |blobs: &str, id: &str| {
            let mut r = base.clone();
            for a in &mut r.args {
                if let ResolvedArg::Buffer { init, .. } = a {
                    *init = crate::harness::Init::Captured {
                        blobs: blobs.into(),
                        id: id.into(),
                    };
                }
            }
            r
        };
        let c = SlowMemo::key(&slow, &captured("/cap/run-3/blobs", "ab12"));
        assert_eq!(
            SlowMemo::key(&slow, &captured("/cap/run-4/blobs", "ab12")),
            c
        );
        assert_ne!(
            SlowMemo::key(&slow, &captured("/cap/run-3/blobs", "cd34")),
            c
        );
    }

    /// A captured size set: two buffers, the fast launch's own bytes args first (as many
    /// as its kernel takes), then the slow launch's, which point at the same buffers.
    fn captured_pair(buf_names: [&str; 2], fast_params: usize, slow_scalar: u8) -> Resolved {
        use crate::harness::{BytesPointer, Init, Role, Tolerance};
        let buffer = |name: &str, id: &str| ResolvedArg::Buffer {
            name: name.into(),
            elem: ElemType::F32,
            len: 1024,
            init: Init::Captured {
                blobs: "/cap/blobs".into(),
                id: id.into(),
            },
            role: Role::Inout,
            tol: Tolerance::default_for(ElemType::F32),
            allow_degenerate: true,
            layout: Default::default(),
            compare: None,
        };
        let ptr = |name: String, arg: usize| ResolvedArg::Bytes {
            name,
            bytes: vec![0; 8],
            pointers: vec![BytesPointer {
                at: 0,
                arg,
                offset: 0,
            }],
        };
        let mut args = vec![buffer(buf_names[0], "in01"), buffer(buf_names[1], "out02")];
        let fast: Vec<usize> = (0..fast_params)
            .map(|k| {
                args.push(ptr(format!("f{k}"), k % 2));
                args.len() - 1
            })
            .collect();
        args.push(ptr("slow.inp".into(), 0));
        args.push(ptr("slow.out".into(), 1));
        args.push(ResolvedArg::Bytes {
            name: "slow.n".into(),
            bytes: vec![slow_scalar, 0, 0, 0],
            pointers: vec![],
        });
        let n = args.len();
        let launch = |kernel: &str, args: Vec<usize>| crate::harness::Launch {
            kernel: kernel.into(),
            grid: [64, 1, 1],
            block: [256, 1, 1],
            shared_mem: 0,
            repeat: 1,
            offsets: vec![0; args.len()],
            args,
            cooperative: false,
        };
        Resolved {
            origin: "cap/p1-0000001-k.toml".into(),
            size_set: "captured".into(),
            values: BTreeMap::new(),
            args,
            constants: vec![],
            textures: vec![],
            objects: vec![],
            ignores: vec![],
            sparse: vec![],
            slow: vec![launch("k1", vec![n - 3, n - 2, n - 1])],
            fast: vec![launch("k2", fast)],
            expected: vec![],
        }
    }

    /// Under captured inputs the key follows what the slow launch reads, not how the fast
    /// kernel's parameters or the buffers are named: llm.c's kernel 1 against versions 2
    /// to 6 is one slow side.
    #[test]
    fn a_captured_slow_side_is_the_same_whatever_the_fast_kernel_takes() {
        let slow = Source {
            name: "slow.cu".into(),
            source: "__global__ void k1(float *a, float *b, int n) {}".into(),
            symbol: "k1".into(),
            flags: vec![],
        };
        let k = SlowMemo::key(&slow, &captured_pair(["dpreatt", "datt"], 2, 7));
        assert_eq!(
            SlowMemo::key(&slow, &captured_pair(["d_dpreatt", "d_datt"], 5, 7)),
            k,
            "the fast kernel's parameter count and the buffers' names are not the slow side"
        );
        assert_ne!(
            SlowMemo::key(&slow, &captured_pair(["dpreatt", "datt"], 2, 8)),
            k,
            "the slow launch's own scalar is"
        );
        let mut other_bytes = captured_pair(["dpreatt", "datt"], 2, 7);
        if let ResolvedArg::Buffer { init, .. } = &mut other_bytes.args[1] {
            *init = crate::harness::Init::Captured {
                blobs: "/cap/blobs".into(),
                id: "out99".into(),
            };
        }
        assert_ne!(SlowMemo::key(&slow, &other_bytes), k, "so is what it reads");
    }

    /// The size set with one more buffer in front (a fast-only input) and every index
    /// moved up by one: the same slow side, numbered differently.
    fn shifted(mut ss: Resolved) -> Resolved {
        use crate::harness::{Init, Role, Tolerance};
        for a in &mut ss.args {
            if let ResolvedArg::Bytes { pointers, .. } = a {
                pointers.iter_mut().for_each(|p| p.arg += 1);
            }
        }
        for l in ss.slow.iter_mut().chain(ss.fast.iter_mut()) {
            l.args.iter_mut().for_each(|a| *a += 1);
        }
        ss.args.insert(
            0,
            ResolvedArg::Buffer {
                name: "extra".into(),
                elem: ElemType::F32,
                len: 16,
                init: Init::Zeros,
                role: Role::In,
                tol: Tolerance::default_for(ElemType::F32),
                allow_degenerate: true,
                layout: Default::default(),
                compare: None,
            },
        );
        ss.fast[0].args.push(0);
        ss
    }

    /// A seconds-long slow side's outputs, kept by one pair, are found by a later pair
    /// whose size set numbers the same args differently, and only for the same seed and
    /// slow side; what would pass the byte budget is not kept.
    #[test]
    fn kept_slow_outputs_are_found_by_their_place_in_the_slow_side() {
        let slow = Source {
            name: "slow.cu".into(),
            source: "__global__ void k1(float *a, float *b, int n) {}".into(),
            symbol: "k1".into(),
            flags: vec![],
        };
        let a = captured_pair(["dpreatt", "datt"], 2, 7);
        let b = shifted(captured_pair(["d_dpreatt", "d_datt"], 5, 7));
        let key = SlowMemo::key(&slow, &a);
        assert_eq!(SlowMemo::key(&slow, &b), key, "one slow side");
        let (outs_a, outs_b) = (a.outputs(), b.outputs());
        assert_eq!(outs_a, [0, 1]);
        assert_eq!(outs_b, [1, 2], "the same two buffers, moved up by one");
        let buf = |x: u8| HostBuffer {
            elem: ElemType::F32,
            bytes: vec![x; 8],
        };
        let mut memo = SlowMemo::default();
        memo.keep_outputs(key, 0, &a, &outs_a, vec![buf(1), buf(2)], 2_500.0);
        let (got, ms) = memo.slow_outputs(key, 0, &b, &outs_b).expect("kept");
        assert_eq!((got[0].bytes[0], got[1].bytes[0], ms), (1, 2, 2_500.0));
        assert!(
            memo.slow_outputs(key, 1, &b, &outs_b).is_none(),
            "another seed"
        );
        assert!(
            memo.slow_outputs(key ^ 1, 0, &b, &outs_b).is_none(),
            "another slow side"
        );
        // An output the slow side does not read (the fast-only buffer) is not there.
        assert!(memo.slow_outputs(key, 0, &b, &[0, 1]).is_none());
        let mut full = SlowMemo {
            output_bytes: MEMO_OUTPUT_BYTES - 8,
            ..SlowMemo::default()
        };
        full.keep_outputs(key, 0, &a, &outs_a, vec![buf(1), buf(2)], 2_500.0);
        assert!(
            full.slow_outputs(key, 0, &a, &outs_a).is_none(),
            "over the budget"
        );
    }

    fn saxpy() -> Resolved {
        let h = parse(SAXPY, "t.toml").unwrap();
        h.resolve(&h.size_sets()[0], &DeviceProps::h100()).unwrap()
    }

    /// Both variants' output `y` (arg 3) with NaN where `fast_nan` and `slow_nan` say.
    fn outputs(
        n: usize,
        slow_nan: &[usize],
        fast_nan: &[usize],
    ) -> BTreeMap<Variant, Vec<HostBuffer>> {
        let with = |nan: &[usize]| {
            let v: Vec<f64> = (0..n)
                .map(|i| if nan.contains(&i) { f64::NAN } else { i as f64 })
                .collect();
            vec![HostBuffer::from_f64s(ElemType::F32, &v)]
        };
        BTreeMap::from([
            (Variant::Slow, with(slow_nan)),
            (Variant::Fast, with(fast_nan)),
        ])
    }

    /// cfd `cuda_compute_step_factor`: the fast kernel itself writes NaN under the
    /// harness's finite inputs. That is a degenerate harness, decided before the
    /// comparison, not a mismatch blamed on the slow kernel.
    #[test]
    fn fast_nan_from_finite_inputs_is_degenerate_before_any_comparison() {
        let ss = saxpy();
        let inputs = crate::harness::generate_inputs(&ss, seed_for(0)).unwrap();
        assert!(inputs_finite(&ss, &inputs, &[]));
        let n = ss.args.iter().find_map(|a| match a {
            ResolvedArg::Buffer { name, len, .. } if name == "y" => Some(*len),
            _ => None,
        });
        let n = n.unwrap();
        let outs = outputs(n, &[7, 9], &[7, 9]);
        let stop = non_finite_output(&ss, 0, true, &outs, 0, 3, false).unwrap_err();
        assert_eq!(stop.status, Status::Degenerate);
        assert!(
            stop.reason.contains(
                "fast kernel: output y: NaN output: 2 elements are NaN, the first at index 7"
            ),
            "{}",
            stop.reason
        );
        // The same NaN from NaN inputs is for the comparison to judge: both sides agree.
        let mut bad = inputs.clone();
        bad[2] = HostBuffer::from_f64s(ElemType::F32, &[f64::NAN; 4]);
        assert!(!inputs_finite(&ss, &bad, &[]));
        assert!(non_finite_output(&ss, 0, false, &outs, 0, 3, false).is_ok());
        let mut ev = Evidence::default();
        compare_output(&ss, 0, &bad, &outs, 0, 3, &mut ev, false).unwrap();
        assert_eq!(ev.checks[0].comparison.both_nan, 2);
        // NaN from the slow kernel alone is the slow kernel's fault: a mismatch, and its
        // reason does not say "rel L2 0".
        let slow_only = outputs(n, &[4], &[]);
        assert!(non_finite_output(&ss, 0, true, &slow_only, 0, 3, false).is_ok());
        let stop = compare_output(&ss, 0, &inputs, &slow_only, 0, 3, &mut ev, false).unwrap_err();
        assert_eq!(stop.status, Status::Mismatch);
        assert!(!stop.reason.contains("rel L2"), "{}", stop.reason);
        assert!(
            stop.reason.contains("1 NaN on one side only"),
            "{}",
            stop.reason
        );
        // A self-check runs the fast kernel twice: NaN in either run is degenerate.
        let stop = non_finite_output(&ss, 0, true, &slow_only, 0, 3, true).unwrap_err();
        assert!(
            stop.reason.contains("slow kernel: output y: NaN output"),
            "{}",
            stop.reason
        );
    }

    /// Constant-memory contents are inputs too.
    #[test]
    fn non_finite_constants_make_the_inputs_non_finite() {
        let ss = saxpy();
        let inputs = crate::harness::generate_inputs(&ss, seed_for(1)).unwrap();
        let k = HostBuffer::from_f64s(ElemType::F64, &[1.0, f64::INFINITY]);
        assert!(!inputs_finite(&ss, &inputs, &[k]));
    }
}
