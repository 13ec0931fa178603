//! The injection library's launch side. The CUDA driver loads the library into a benchmark
//! program when `CUDA_INJECTION64_PATH` names it, whether the program links the runtime
//! statically (nvcc's default) or not (its entry point is in `entry`). For the first K
//! launches of each kernel this records the parameters, every allocation a parameter word
//! points into and the module globals asked for, as they were just before the launch and
//! just after it ([`Manifest`], blobs in a [`BlobStore`]). Every other launch only counts.
//!
//! Configuration comes from the environment `kernelpair capture` sets:
//! `KERNELPAIR_CAPTURE_OUT` (manifest folder, required), `KERNELPAIR_CAPTURE_BLOBS`,
//! `KERNELPAIR_CAPTURE_FIRST` (K, default 1), `KERNELPAIR_CAPTURE_MAX_BYTES` (per launch,
//! default 1 GiB) and `KERNELPAIR_CAPTURE_GLOBALS` (comma-separated global names).
//! Nothing here may unwind into the driver: every callback catches panics, and a failure
//! is written down as the launch's `skipped` reason.

use super::manifest::{
    names_of, AllocKind, CapturedAlloc, CapturedGlobal, CapturedObject, CapturedParam,
    CapturedPointer, Manifest, MANIFEST_VERSION,
};
use super::store::BlobStore;
use crate::gpu::objects::{ObjectDesc, ObjectKind};
use cudarc::cupti::sys as cupti;
use cudarc::driver::sys as cu;
use std::collections::{BTreeMap, HashMap};
use std::ffi::{c_int, c_void, CStr};
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

/// Environment variable names, shared with the runner that sets them.
pub const ENV_OUT: &str = "KERNELPAIR_CAPTURE_OUT";
pub const ENV_BLOBS: &str = "KERNELPAIR_CAPTURE_BLOBS";
pub const ENV_FIRST: &str = "KERNELPAIR_CAPTURE_FIRST";
pub const ENV_MAX_BYTES: &str = "KERNELPAIR_CAPTURE_MAX_BYTES";
pub const ENV_GLOBALS: &str = "KERNELPAIR_CAPTURE_GLOBALS";
pub const ENV_QUIET: &str = "KERNELPAIR_CAPTURE_QUIET";
pub const ENV_QUIET_SECONDS: &str = "KERNELPAIR_CAPTURE_QUIET_SECONDS";
/// Written (after `p<pid>-`) when a run was ended early: N launches in a row brought
/// nothing new to snapshot.
pub const STOPPED_FILE: &str = "stopped-early.toml";
/// File (in the manifest folder, after `p<pid>-`) the library writes at exit: launches
/// per kernel symbol, captured or not.
pub const COUNTS_FILE: &str = "launch-counts.toml";

pub(super) struct Config {
    out: PathBuf,
    store: BlobStore,
    pub(super) first: u64,
    pub(super) max_bytes: u64,
    globals: Vec<String>,
    /// End the process once this many launches in a row were not snapshotted (0: never).
    quiet: u64,
    /// Or once such launches went on for this many seconds (0: never); see [`Quiet`].
    quiet_seconds: f64,
}

/// A run of launches in a row that brought nothing new to snapshot.
#[derive(Default)]
struct Quiet {
    launches: u64,
    /// Seconds the run spans, counting only gaps between its launches under [`QUIET_GAP`]:
    /// a longer pause is the program's own work (a CPU reference, file output) that may
    /// come before new kernels, not a loop of launches.
    seconds: f64,
    /// GPU seconds of the run's launches that have finished, from events around each
    /// ([`GpuClock`]). A loop whose launches the host queues at once and then waits for
    /// (a benchmark of a naive kernel of seconds) shows only tiny gaps between launch
    /// calls: its time is on the GPU. A CPU reference between launches is in neither.
    gpu_seconds: f64,
    last: Option<std::time::Instant>,
}

/// A gap between two quiet launches longer than this does not count as launch-loop time.
const QUIET_GAP: std::time::Duration = std::time::Duration::from_secs(5);
/// The time rule needs at least this many quiet launches: a few validation launches
/// followed by more work are not a loop.
const QUIET_MIN_LAUNCHES: u64 = 20;

impl Quiet {
    fn launch(&mut self, now: std::time::Instant) {
        if let Some(gap) = self.last.map(|l| now.saturating_duration_since(l)) {
            if gap < QUIET_GAP {
                self.seconds += gap.as_secs_f64();
            }
        }
        self.last = Some(now);
        self.launches += 1;
    }

    /// The run has gone on long enough: by count (`max_launches`), or by time
    /// (`max_seconds` of launch-loop time over at least [`QUIET_MIN_LAUNCHES`] launches;
    /// a naive kernel's benchmark loop of 50 ms launches reaches the count only after
    /// 100 s). Loop time is the larger of the host's gaps and the launches' GPU time:
    /// each is at most the time the run has taken. Zero turns a rule off.
    fn over(&self, max_launches: u64, max_seconds: f64) -> bool {
        (max_launches > 0 && self.launches >= max_launches)
            || (max_seconds > 0.0
                && self.launches >= QUIET_MIN_LAUNCHES
                && self.seconds.max(self.gpu_seconds) >= max_seconds)
    }
}

/// Events around quiet launches, on each launch's stream, read once they have completed:
/// the GPU time of a loop of launches without synchronizing anything.
#[derive(Default)]
struct GpuClock {
    /// (start, end) event pairs in launch order, waiting to complete.
    pending: std::collections::VecDeque<(cu::CUevent, cu::CUevent)>,
    /// The start event of the launch being made (recorded at entry, ended at exit).
    open: Option<(cu::CUevent, cu::CUstream)>,
    /// Events to use again.
    free: Vec<cu::CUevent>,
}

/// At most this many launches are timed at once; later ones go untimed until some finish.
const CLOCK_PENDING: usize = 256;

// SAFETY: the events are plain driver handles, used under the STATE mutex only.
unsafe impl Send for GpuClock {}

impl GpuClock {
    fn event(&mut self) -> Option<cu::CUevent> {
        if let Some(e) = self.free.pop() {
            return Some(e);
        }
        let mut e: cu::CUevent = std::ptr::null_mut();
        // SAFETY: e is a valid out-pointer; a context is current in a launch callback.
        let rc = unsafe { cu::cuEventCreate(&mut e, 0) };
        (rc == cu::CUresult::CUDA_SUCCESS).then_some(e)
    }

    /// Before a quiet launch is queued: record its start event on its stream ([`enter`]
    /// never gets here for a stream being captured into a graph, where a record would
    /// become a graph node).
    fn start(&mut self, stream: cu::CUstream) {
        if self.open.is_some() || self.pending.len() >= CLOCK_PENDING {
            return;
        }
        let Some(e) = self.event() else { return };
        // SAFETY: e is an event of the current context; stream is the launch's.
        if unsafe { cu::cuEventRecord(e, stream) } == cu::CUresult::CUDA_SUCCESS {
            self.open = Some((e, stream));
        } else {
            self.free.push(e);
        }
    }

    /// Once the launch is queued: record its end event.
    fn end(&mut self) {
        let Some((s, stream)) = self.open.take() else {
            return;
        };
        let Some(e) = self.event() else {
            self.free.push(s);
            return;
        };
        // SAFETY: as in start.
        if unsafe { cu::cuEventRecord(e, stream) } == cu::CUresult::CUDA_SUCCESS {
            self.pending.push_back((s, e));
        } else {
            self.free.extend([s, e]);
        }
    }

    /// Seconds of the timed launches that have completed since the last call (in order:
    /// the first still running stops the reading).
    fn finished(&mut self) -> f64 {
        let mut secs = 0.0;
        while let Some(&(s, e)) = self.pending.front() {
            // SAFETY: e was recorded on a stream of this context; a query does not block.
            if unsafe { cu::cuEventQuery(e) } != cu::CUresult::CUDA_SUCCESS {
                break;
            }
            let mut ms = 0f32;
            // SAFETY: both events have completed; ms a valid out-pointer.
            if unsafe { cu::cuEventElapsedTime_v2(&mut ms, s, e) } == cu::CUresult::CUDA_SUCCESS {
                secs += f64::from(ms.max(0.0)) / 1e3;
            }
            self.pending.pop_front();
            self.free.extend([s, e]);
        }
        secs
    }

    /// A new kernel came: the launches timed so far belong to the run that ended.
    fn reset(&mut self) {
        let _ = self.finished();
        while let Some((s, e)) = self.pending.pop_front() {
            self.free.extend([s, e]);
        }
    }
}

/// One launch snapshotted at entry, waiting for its exit.
struct Pending {
    manifest: Manifest,
    /// (address, bytes, kind) per entry of `manifest.allocs`.
    ranges: Vec<(u64, u64, AllocKind)>,
    /// (address, bytes) per entry of `manifest.globals`.
    globals: Vec<(u64, u64)>,
}

#[derive(Default)]
pub(super) struct State {
    /// Per launched handle: the `CUfunction` it stands for and its symbol.
    names: HashMap<usize, (usize, String)>,
    /// Launches per symbol (all of them, captured or not).
    counts: BTreeMap<String, u64>,
    seq: u64,
    pending: HashMap<u32, Pending>,
    /// Launches in a row that were only counted.
    quiet: Quiet,
    clock: GpuClock,
    /// Kernels launched on a stream being captured into a graph (by symbol, the first such
    /// launch): they run, and are captured, when the graph is launched; one never counted
    /// by the end is written down as a skip ([`write_counts`]): (grid, block, dynamic
    /// shared memory, cooperative).
    in_graphs: BTreeMap<String, ([u32; 3], [u32; 3], u32, bool)>,
}

impl State {
    /// The `CUfunction` a launched handle stands for, and its symbol (looked up once).
    fn name_of(&mut self, f: cu::CUfunction) -> (usize, String) {
        self.names
            .entry(f as usize)
            .or_insert_with(|| {
                let g = function_of(f);
                (g as usize, symbol_of(g))
            })
            .clone()
    }

    /// Whether a launch of `f` now would be snapshotted (its kernel is within its first
    /// `first` launches).
    pub(super) fn would_capture(&mut self, f: cu::CUfunction, first: u64) -> bool {
        let (_, symbol) = self.name_of(f);
        self.counts.get(&symbol).copied().unwrap_or(0) < first
    }
}

pub(super) static CONFIG: OnceLock<Config> = OnceLock::new();
pub(super) static STATE: Mutex<Option<State>> = Mutex::new(None);

type Cbid = cupti::CUpti_driver_api_trace_cbid_enum;

/// The launch entry points whose callbacks are enabled.
pub(super) const LAUNCHES: [Cbid; 6] = [
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
];

/// Reads the configuration `kernelpair capture` set in the environment and starts the
/// launch state ([`super::entry`] calls it once, before subscribing to CUPTI).
pub(super) fn configure() -> Result<(), String> {
    let out = PathBuf::from(std::env::var_os(ENV_OUT).ok_or(format!("{ENV_OUT} is not set"))?);
    std::fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let blobs = std::env::var_os(ENV_BLOBS)
        .map(PathBuf::from)
        .unwrap_or_else(|| out.join("blobs"));
    let num = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.trim().parse::<u64>().ok())
            .unwrap_or(d)
    };
    let config = Config {
        out,
        store: BlobStore::new(blobs),
        first: num(ENV_FIRST, 1),
        max_bytes: num(ENV_MAX_BYTES, 1 << 30),
        quiet: num(ENV_QUIET, 0),
        quiet_seconds: std::env::var(ENV_QUIET_SECONDS)
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|v| v.is_finite() && *v >= 0.0)
            .unwrap_or(0.0),
        globals: std::env::var(ENV_GLOBALS)
            .unwrap_or_default()
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect(),
    };
    let _ = CONFIG.set(config);
    *STATE.lock().map_err(|_| "state poisoned")? = Some(State::default());
    Ok(())
}

/// At exit (and before a quiet stop): launches per kernel symbol, to
/// `p<pid>-launch-counts.toml`, and a skip for each kernel launched only while a stream
/// was being captured into a graph whose run never reached it (a child-graph or
/// conditional body, a graph the library could not read or never saw launched).
pub(super) extern "C" fn write_counts() {
    let _ = std::panic::catch_unwind(|| {
        let (Some(cfg), Ok(mut state)) = (CONFIG.get(), STATE.lock()) else {
            return;
        };
        if let Some(s) = state.as_mut() {
            let unseen: Vec<_> = std::mem::take(&mut s.in_graphs)
                .into_iter()
                .filter(|(symbol, _)| !s.counts.contains_key(symbol))
                .collect();
            for (symbol, (grid, block, shared_mem, cooperative)) in unseen {
                let l = Launch {
                    f: std::ptr::null_mut(),
                    grid,
                    block,
                    shared_mem,
                    stream: std::ptr::null_mut(),
                    params: std::ptr::null_mut(),
                    extra: std::ptr::null_mut(),
                    via: "cuGraphLaunch",
                    cooperative,
                };
                let mut m = bare_manifest(symbol, s.seq, 0, &l);
                s.seq += 1;
                m.skipped = Some(GRAPH_ONLY.into());
                write_manifest(cfg, &m);
            }
            if let Ok(text) = toml::to_string(&s.counts) {
                let name = format!("p{}-{COUNTS_FILE}", std::process::id());
                let _ = write_atomic(&cfg.out.join(name), text.as_bytes());
            }
        }
    });
}

/// The skip of a kernel launched only into a graph that capture never ran it in.
pub const GRAPH_ONLY: &str = "launched only into a CUDA graph whose run never reached it here (a child-graph or conditional body, or a graph not run): not captured";

fn write_atomic(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, bytes)?;
    std::fs::rename(&tmp, path)
}

/// A launch callback ([`LAUNCHES`]): the launch is snapshotted at entry and finished at
/// exit.
///
/// # Safety
/// `data` must be what CUPTI gives for driver-API callback `cbid`.
pub(super) unsafe fn on_launch(cbid: u32, data: &cupti::CUpti_CallbackData) {
    // SAFETY: the params struct matches `cbid` (see `launch_of`).
    if let Some(l) = unsafe { launch_of(cbid, data.functionParams) } {
        match data.callbackSite {
            cupti::CUpti_ApiCallbackSite::CUPTI_API_ENTER => enter(&l, data.correlationId, None),
            _ => {
                // SAFETY: at exit the return value points to the call's CUresult.
                let rc = unsafe { *(data.functionReturnValue as *const cu::CUresult) };
                exit(data.correlationId, rc);
            }
        }
    }
}

/// A launch's arguments, whichever entry point made it (or a graph's kernel node).
#[derive(Clone, Copy)]
pub(super) struct Launch {
    pub(super) f: cu::CUfunction,
    pub(super) grid: [u32; 3],
    pub(super) block: [u32; 3],
    pub(super) shared_mem: u32,
    pub(super) stream: cu::CUstream,
    pub(super) params: *mut *mut c_void,
    pub(super) extra: *mut *mut c_void,
    pub(super) via: &'static str,
    /// Launched cooperatively (the whole grid resident; the kernel may sync the grid).
    pub(super) cooperative: bool,
}

/// # Safety
/// `p` must be the `functionParams` CUPTI gives for callback `cbid`.
unsafe fn launch_of(cbid: u32, p: *const c_void) -> Option<Launch> {
    if p.is_null() {
        return None;
    }
    let is = |c: Cbid| cbid == c as u32;
    if is(Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel)
        || is(Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz)
    {
        // SAFETY: both entry points share cuLaunchKernel's parameter struct layout.
        let a = unsafe { &*(p as *const cupti::cuLaunchKernel_params) };
        return Some(Launch {
            f: a.f,
            grid: [a.gridDimX, a.gridDimY, a.gridDimZ],
            block: [a.blockDimX, a.blockDimY, a.blockDimZ],
            shared_mem: a.sharedMemBytes,
            stream: a.hStream,
            params: a.kernelParams,
            extra: a.extra,
            via: "cuLaunchKernel",
            cooperative: false,
        });
    }
    if is(Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel)
        || is(Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz)
    {
        // SAFETY: as above, for the cooperative entry points.
        let a = unsafe { &*(p as *const cupti::cuLaunchCooperativeKernel_params) };
        return Some(Launch {
            f: a.f,
            grid: [a.gridDimX, a.gridDimY, a.gridDimZ],
            block: [a.blockDimX, a.blockDimY, a.blockDimZ],
            shared_mem: a.sharedMemBytes,
            stream: a.hStream,
            params: a.kernelParams,
            extra: std::ptr::null_mut(),
            via: "cuLaunchCooperativeKernel",
            cooperative: true,
        });
    }
    if is(Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx)
        || is(Cbid::CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz)
    {
        // SAFETY: as above; the config pointer is the caller's, valid during the call.
        let a = unsafe { &*(p as *const cupti::cuLaunchKernelEx_params) };
        if a.config.is_null() {
            return None;
        }
        let c = unsafe { &*a.config };
        // SAFETY: `attrs` holds `numAttrs` attributes, valid during the call.
        let cooperative = !c.attrs.is_null()
            && (0..c.numAttrs as usize).any(|i| {
                let at = unsafe { &*c.attrs.add(i) };
                at.id == cu::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE
                    && unsafe { at.value.cooperative } != 0
            });
        return Some(Launch {
            f: a.f,
            grid: [c.gridDimX, c.gridDimY, c.gridDimZ],
            block: [c.blockDimX, c.blockDimY, c.blockDimZ],
            shared_mem: c.sharedMemBytes,
            stream: c.hStream,
            params: a.kernelParams,
            extra: a.extra,
            via: "cuLaunchKernelEx",
            cooperative,
        });
    }
    None
}

/// The `CUfunction` a launched handle stands for. The CUDA runtime (12 and later) launches
/// library kernels by passing a `CUkernel` cast to `CUfunction`, which the `cuFunc*`
/// queries refuse; `cuKernelGetFunction` gives the current context's function.
fn function_of(f: cu::CUfunction) -> cu::CUfunction {
    let mut p: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: a query on the launched handle; a handle that is no CUfunction fails
    // with an error code.
    if unsafe { cu::cuFuncGetName(&mut p, f) } == cu::CUresult::CUDA_SUCCESS {
        return f;
    }
    let mut g: cu::CUfunction = std::ptr::null_mut();
    // SAFETY: as above, reading the handle as a CUkernel; g is a valid out-pointer.
    let rc = unsafe { cu::cuKernelGetFunction(&mut g, f as cu::CUkernel) };
    if rc == cu::CUresult::CUDA_SUCCESS && !g.is_null() {
        g
    } else {
        f
    }
}

fn symbol_of(f: cu::CUfunction) -> String {
    let mut p: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: f is the function being launched; p a valid out-pointer. The name is owned
    // by the driver and copied at once.
    let rc = unsafe { cu::cuFuncGetName(&mut p, f) };
    if rc != cu::CUresult::CUDA_SUCCESS || p.is_null() {
        return format!("function@{:x}", f as usize);
    }
    unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
}

fn demangle(symbol: &str) -> String {
    cpp_demangle::Symbol::new(symbol)
        .ok()
        .and_then(|s| s.demangle().ok())
        .unwrap_or_else(|| symbol.to_string())
}

/// Whether `stream` is being captured into a CUDA graph: a launch there only adds a node,
/// which runs (and is captured, [`super::graph`]) when the graph is launched.
pub(super) fn capturing(stream: cu::CUstream) -> bool {
    let mut status = cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE;
    // SAFETY: the launch's stream; status a valid out-pointer.
    let rc = unsafe { cu::cuStreamIsCapturing(stream, &mut status) };
    rc == cu::CUresult::CUDA_SUCCESS
        && status != cu::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE
}

/// A launch's entry: counted, and within the first K launches of its kernel snapshotted
/// (waiting for [`exit`] under `correlation`), or written as a skip when `skip` says why
/// it is not.
pub(super) fn enter(l: &Launch, correlation: u32, skip: Option<&str>) {
    let Some(cfg) = CONFIG.get() else { return };
    let Ok(mut guard) = STATE.lock() else { return };
    let Some(state) = guard.as_mut() else { return };
    let (func, symbol) = state.name_of(l.f);
    let l = &Launch {
        f: func as cu::CUfunction,
        ..*l
    };
    if capturing(l.stream) {
        state
            .in_graphs
            .entry(symbol)
            .or_insert((l.grid, l.block, l.shared_mem, l.cooperative));
        return;
    }
    let count = state.counts.entry(symbol.clone()).or_insert(0);
    let nth = *count;
    *count += 1;
    let seq = state.seq;
    state.seq += 1;
    if nth >= cfg.first {
        state.quiet.launch(std::time::Instant::now());
        state.quiet.gpu_seconds += state.clock.finished();
        if state.quiet.over(cfg.quiet, cfg.quiet_seconds) && state.pending.is_empty() {
            // Nothing new for a long while (a benchmark loop): end the run here, without
            // the program's exit handlers (we are inside a driver call).
            let text = format!(
                "quiet_launches = {}\nquiet_seconds = {:.3}\nquiet_gpu_seconds = {:.3}\nlaunches_seen = {}\n",
                state.quiet.launches, state.quiet.seconds, state.quiet.gpu_seconds, state.seq
            );
            let name = format!("p{}-{STOPPED_FILE}", std::process::id());
            let _ = write_atomic(&cfg.out.join(name), text.as_bytes());
            drop(guard);
            write_counts();
            extern "C" {
                fn _exit(code: c_int) -> !;
            }
            // SAFETY: ends the process at once; every manifest is already on disk.
            unsafe { _exit(0) };
        }
        if cfg.quiet_seconds > 0.0 {
            state.clock.start(l.stream);
        }
        return;
    }
    state.quiet = Quiet::default();
    state.clock.reset();
    let mut m = bare_manifest(symbol, seq, nth, l);
    let mut ranges: Vec<(u64, u64, AllocKind)> = Vec::new();
    let mut globals: Vec<(u64, u64)> = Vec::new();
    m.skipped = match skip {
        Some(why) => Some(why.to_string()),
        None => snapshot_before(cfg, l, &mut m, &mut ranges, &mut globals).err(),
    };
    if m.skipped.is_some() {
        write_manifest(cfg, &m);
        return;
    }
    state.pending.insert(
        correlation,
        Pending {
            manifest: m,
            ranges,
            globals,
        },
    );
}

/// A launch's manifest without its parameters and memory.
fn bare_manifest(symbol: String, seq: u64, nth: u64, l: &Launch) -> Manifest {
    let demangled = demangle(&symbol);
    let (kernel, name_expression) = names_of(&demangled);
    Manifest {
        version: MANIFEST_VERSION,
        symbol,
        demangled,
        kernel,
        name_expression,
        seq,
        pid: std::process::id(),
        nth,
        grid: l.grid,
        block: l.block,
        shared_mem: l.shared_mem,
        via: l.via.to_string(),
        cooperative: l.cooperative,
        params: Vec::new(),
        allocs: Vec::new(),
        globals: Vec::new(),
        objects: Vec::new(),
        skipped: None,
    }
}

/// Parameters, reachable allocations and globals, and their contents before the launch.
/// `Err` is the reason the launch is skipped (params and sizes are still kept).
fn snapshot_before(
    cfg: &Config,
    l: &Launch,
    m: &mut Manifest,
    ranges: &mut Vec<(u64, u64, AllocKind)>,
    globals: &mut Vec<(u64, u64)>,
) -> Result<(), String> {
    for (i, (off, bytes)) in param_bytes(l)?.into_iter().enumerate() {
        let size = bytes.len();
        let mut pointers = Vec::new();
        for (at, w) in pointer_words(&bytes) {
            if let Some((base, len, kind)) = allocation_of(w) {
                let idx = match ranges.iter().position(|r| r.0 == base) {
                    Some(k) => k,
                    None => {
                        ranges.push((base, len, kind));
                        ranges.len() - 1
                    }
                };
                pointers.push(CapturedPointer {
                    at,
                    alloc: idx,
                    offset: w - base,
                });
            }
        }
        if size == 8 && pointers.is_empty() {
            let h = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
            for object in objects_of(h, ranges) {
                m.objects.push(CapturedObject { param: i, object });
            }
        }
        m.params.push(CapturedParam {
            offset: off,
            size,
            hex: hex::encode(&bytes),
            pointers,
        });
    }
    for (name, p, n) in module_globals(cfg, l.f) {
        globals.push((p, n));
        m.globals.push(CapturedGlobal {
            name,
            bytes: n,
            before: String::new(),
            after: String::new(),
        });
    }
    m.allocs = ranges
        .iter()
        .map(|&(_, bytes, kind)| CapturedAlloc {
            bytes,
            kind,
            before: String::new(),
            after: String::new(),
        })
        .collect();
    let total = m.total_bytes();
    if total > cfg.max_bytes {
        return Err(format!(
            "over the byte budget: {} allocation(s) and {} global(s) hold {total} bytes, the budget is {}",
            m.allocs.len(),
            m.globals.len(),
            cfg.max_bytes
        ));
    }
    sync("before the launch")?;
    for (k, &(addr, bytes, kind)) in ranges.iter().enumerate() {
        m.allocs[k].before = store(cfg, addr, bytes, kind)?;
    }
    for (k, &(addr, bytes)) in globals.iter().enumerate() {
        m.globals[k].before = store(cfg, addr, bytes, AllocKind::Device)?;
    }
    Ok(())
}

/// Each kernel parameter's (offset, bytes), laid out by `cuFuncGetParamInfo`.
pub(super) fn param_bytes(l: &Launch) -> Result<Vec<(usize, Vec<u8>)>, String> {
    if l.params.is_null() {
        return Err(if l.extra.is_null() {
            "the launch passes no parameter array".into()
        } else {
            "parameters passed through `extra` (CU_LAUNCH_PARAM_BUFFER_POINTER)".into()
        });
    }
    let mut out = Vec::new();
    for i in 0..4096usize {
        let (mut off, mut size) = (0usize, 0usize);
        // SAFETY: f is live; out-pointers are valid; an index past the end fails.
        let rc = unsafe { cu::cuFuncGetParamInfo(l.f, i, &mut off, &mut size) };
        if rc != cu::CUresult::CUDA_SUCCESS {
            break;
        }
        // SAFETY: the caller passes one pointer per kernel parameter, each to `size` bytes.
        let bytes = unsafe {
            let p = *l.params.add(i) as *const u8;
            if p.is_null() {
                return Err(format!(
                    "parameter {i} is a null pointer in the parameter array"
                ));
            }
            std::slice::from_raw_parts(p, size).to_vec()
        };
        out.push((off, bytes));
    }
    Ok(out)
}

/// The 8-byte-aligned words of a parameter that may be device addresses: (offset, word).
pub(super) fn pointer_words(bytes: &[u8]) -> impl Iterator<Item = (usize, u64)> + '_ {
    (0..bytes.len().saturating_sub(7))
        .step_by(8)
        .map(|at| {
            let w = u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
            (at, w)
        })
        .filter(|&(_, w)| w >= 4096)
}

/// The module globals capture was asked for (`KERNELPAIR_CAPTURE_GLOBALS`) that `f`'s
/// module holds: (name, address, bytes).
pub(super) fn module_globals(cfg: &Config, f: cu::CUfunction) -> Vec<(String, u64, u64)> {
    let mut out = Vec::new();
    if cfg.globals.is_empty() {
        return out;
    }
    let mut module: cu::CUmodule = std::ptr::null_mut();
    // SAFETY: f is live; module a valid out-pointer.
    if unsafe { cu::cuFuncGetModule(&mut module, f) } != cu::CUresult::CUDA_SUCCESS {
        return out;
    }
    for name in &cfg.globals {
        let Ok(c) = std::ffi::CString::new(name.as_str()) else {
            continue;
        };
        let (mut p, mut n) = (0u64, 0usize);
        // SAFETY: module is the launching function's module; out-pointers valid.
        let rc = unsafe { cu::cuModuleGetGlobal_v2(&mut p, &mut n, module, c.as_ptr()) };
        if rc == cu::CUresult::CUDA_SUCCESS && n > 0 {
            out.push((name.clone(), p, n as u64));
        }
    }
    out
}

/// The texture and surface objects handle `h` names (a small integer may be valid as
/// both: each is recorded, and replay takes the kind the parameter's type names), their
/// memory added to `ranges`. A handle of neither kind, or of a resource this tool does not
/// rebuild (mipmapped arrays, formats other than 8/16/32-bit integers, half and float),
/// gives nothing.
fn objects_of(h: u64, ranges: &mut Vec<(u64, u64, AllocKind)>) -> Vec<ObjectDesc> {
    use crate::gpu::objects::{self as o, RawResourceDesc, RawTextureDesc};
    let mut out = Vec::new();
    if h == 0 {
        return out;
    }
    let mut index_of =
        |base: u64, bytes: u64, kind: AllocKind| match ranges.iter().position(|r| r.0 == base) {
            Some(k) => k,
            None => {
                ranges.push((base, bytes, kind));
                ranges.len() - 1
            }
        };
    for kind in [ObjectKind::Texture, ObjectKind::Surface] {
        let mut rd = RawResourceDesc::zeroed();
        let rdp = &mut rd as *mut RawResourceDesc as *mut cu::CUDA_RESOURCE_DESC;
        // SAFETY: RawResourceDesc has CUDA_RESOURCE_DESC's layout (checked in objects.rs);
        // a handle that is no object of this kind fails with an error code.
        let rc = unsafe {
            match kind {
                ObjectKind::Texture => cu::cuTexObjectGetResourceDesc(rdp, h),
                ObjectKind::Surface => cu::cuSurfObjectGetResourceDesc(rdp, h),
            }
        };
        if rc != cu::CUresult::CUDA_SUCCESS {
            continue;
        }
        let resource = match rd.res_type {
            o::RES_LINEAR | o::RES_PITCH2D => {
                let Some((base, len, akind)) = allocation_of(rd.handle()) else {
                    continue;
                };
                let (format, channels) = rd.format();
                let alloc = index_of(base, len, akind);
                let offset = rd.handle() - base;
                if rd.res_type == o::RES_LINEAR {
                    o::ObjectResource::Linear {
                        alloc,
                        offset,
                        format,
                        channels,
                        bytes: rd.res[2],
                    }
                } else {
                    o::ObjectResource::Pitch2d {
                        alloc,
                        offset,
                        format,
                        channels,
                        width: rd.res[2],
                        height: rd.res[3],
                        pitch: rd.res[4],
                    }
                }
            }
            o::RES_ARRAY => {
                let Some(d) = array_desc(rd.handle()) else {
                    continue;
                };
                let Some(bytes) = o::array_bytes(
                    d.format,
                    d.channels,
                    d.width as u64,
                    d.height as u64,
                    d.depth as u64,
                ) else {
                    continue;
                };
                if d.flags & !o::ARRAY_FLAGS != 0 {
                    continue;
                }
                o::ObjectResource::Array {
                    alloc: index_of(rd.handle(), bytes, AllocKind::Array),
                    format: d.format,
                    channels: d.channels,
                    width: d.width as u64,
                    height: d.height as u64,
                    depth: d.depth as u64,
                    flags: d.flags,
                }
            }
            _ => continue,
        };
        let sampling = match kind {
            ObjectKind::Surface => None,
            ObjectKind::Texture => {
                let mut td = RawTextureDesc::default();
                // SAFETY: RawTextureDesc has CUDA_TEXTURE_DESC's layout; h is a texture.
                let rc = unsafe {
                    cu::cuTexObjectGetTextureDesc(
                        &mut td as *mut RawTextureDesc as *mut cu::CUDA_TEXTURE_DESC,
                        h,
                    )
                };
                if rc != cu::CUresult::CUDA_SUCCESS {
                    continue;
                }
                Some(td)
            }
        };
        out.push(ObjectDesc {
            kind,
            resource,
            sampling,
        });
    }
    out
}

/// An array's descriptor, or None for a handle that is no array.
fn array_desc(handle: u64) -> Option<crate::gpu::objects::RawArrayDesc> {
    let mut d = crate::gpu::objects::RawArrayDesc::default();
    // SAFETY: RawArrayDesc has CUDA_ARRAY3D_DESCRIPTOR's layout; a bad handle fails.
    let rc = unsafe {
        cu::cuArray3DGetDescriptor_v2(
            &mut d as *mut _ as *mut cu::CUDA_ARRAY3D_DESCRIPTOR,
            handle as cu::CUarray,
        )
    };
    (rc == cu::CUresult::CUDA_SUCCESS).then_some(d)
}

/// The allocation holding device address `w`, if any: (start, bytes, kind).
pub(super) fn allocation_of(w: u64) -> Option<(u64, u64, AllocKind)> {
    let (mut base, mut len) = (0u64, 0usize);
    // SAFETY: out-pointers are valid; an address outside every allocation fails.
    let rc = unsafe { cu::cuMemGetAddressRange_v2(&mut base, &mut len, w) };
    if rc == cu::CUresult::CUDA_SUCCESS && len > 0 {
        let mut managed: u32 = 0;
        // SAFETY: `managed` is the u32 this attribute writes.
        let rc = unsafe {
            cu::cuPointerGetAttribute(
                &mut managed as *mut u32 as *mut c_void,
                cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_IS_MANAGED,
                w,
            )
        };
        let kind = if rc == cu::CUresult::CUDA_SUCCESS && managed != 0 {
            AllocKind::Managed
        } else {
            AllocKind::Device
        };
        return Some((base, len as u64, kind));
    }
    // Pinned host memory mapped for the device: its range comes from pointer attributes.
    let mut mem_type: u32 = 0;
    // SAFETY: as above, for CU_POINTER_ATTRIBUTE_MEMORY_TYPE (a u32 enum).
    let rc = unsafe {
        cu::cuPointerGetAttribute(
            &mut mem_type as *mut u32 as *mut c_void,
            cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
            w,
        )
    };
    if rc != cu::CUresult::CUDA_SUCCESS || mem_type != cu::CUmemorytype::CU_MEMORYTYPE_HOST as u32 {
        return None;
    }
    let (mut start, mut size) = (0u64, 0u64);
    // SAFETY: RANGE_START_ADDR writes a CUdeviceptr, RANGE_SIZE a size_t.
    let ok = unsafe {
        cu::cuPointerGetAttribute(
            &mut start as *mut u64 as *mut c_void,
            cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
            w,
        ) == cu::CUresult::CUDA_SUCCESS
            && cu::cuPointerGetAttribute(
                &mut size as *mut u64 as *mut c_void,
                cu::CUpointer_attribute::CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                w,
            ) == cu::CUresult::CUDA_SUCCESS
    };
    (ok && size > 0).then_some((start, size, AllocKind::HostMapped))
}

pub(super) fn sync(when: &str) -> Result<(), String> {
    // SAFETY: no arguments; waits for the current context.
    let rc = unsafe { cu::cuCtxSynchronize() };
    if rc == cu::CUresult::CUDA_SUCCESS {
        Ok(())
    } else {
        Err(format!("cuCtxSynchronize {when} failed: {rc:?}"))
    }
}

/// Copy `bytes` at `addr` to the host and store them; the blob id.
fn store(cfg: &Config, addr: u64, bytes: u64, kind: AllocKind) -> Result<String, String> {
    let mut host = vec![0u8; bytes as usize];
    // SAFETY: `addr..addr+bytes` is one live allocation (found by cuMemGetAddressRange or
    // pointer attributes, or a module global) and `host` holds `bytes` bytes. Mapped host
    // memory goes through the unified cuMemcpy.
    let rc = unsafe {
        match kind {
            AllocKind::HostMapped => cu::cuMemcpy(host.as_mut_ptr() as u64, addr, bytes as usize),
            AllocKind::Array => {
                // `addr` is the array's handle; its dense image is `bytes` long.
                use crate::gpu::objects::{array_copy, CopySide};
                let (src, dst) = (
                    CopySide::Array(addr as cu::CUarray),
                    CopySide::Host(host.as_mut_ptr() as *mut c_void),
                );
                let Some(c) = array_desc(addr).and_then(|d| array_copy(&d, src, dst)) else {
                    return Err(format!("the array {addr:#x} has no descriptor"));
                };
                cu::cuMemcpy3D_v2(&c)
            }
            _ => cu::cuMemcpyDtoH_v2(host.as_mut_ptr() as *mut c_void, addr, bytes as usize),
        }
    };
    if rc != cu::CUresult::CUDA_SUCCESS {
        return Err(format!("copying {bytes} bytes at {addr:#x} failed: {rc:?}"));
    }
    cfg.store.put(&host).map_err(|e| e.to_string())
}

pub(super) fn exit(correlation: u32, rc: cu::CUresult) {
    let Some(cfg) = CONFIG.get() else { return };
    let Ok(mut guard) = STATE.lock() else { return };
    let Some(state) = guard.as_mut() else { return };
    let Some(mut p) = state.pending.remove(&correlation) else {
        // A quiet launch: close its timing.
        state.clock.end();
        return;
    };
    drop(guard);
    let mut after = || -> Result<(), String> {
        if rc != cu::CUresult::CUDA_SUCCESS {
            return Err(format!("the launch itself failed: {rc:?}"));
        }
        sync("after the launch")?;
        for (k, &(addr, bytes, kind)) in p.ranges.iter().enumerate() {
            p.manifest.allocs[k].after = store(cfg, addr, bytes, kind)?;
        }
        for (k, &(addr, bytes)) in p.globals.iter().enumerate() {
            p.manifest.globals[k].after = store(cfg, addr, bytes, AllocKind::Device)?;
        }
        Ok(())
    };
    if let Err(e) = after() {
        p.manifest.skipped = Some(e);
    }
    write_manifest(cfg, &p.manifest);
}

fn write_manifest(cfg: &Config, m: &Manifest) {
    match toml::to_string_pretty(m) {
        Ok(text) => {
            if let Err(e) = write_atomic(&cfg.out.join(m.file_name()), text.as_bytes()) {
                eprintln!("kernelpair capture: writing {}: {e}", m.file_name());
            }
        }
        Err(e) => eprintln!("kernelpair capture: manifest of {}: {e}", m.kernel),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, Instant};

    fn run(gaps_ms: &[u64]) -> Quiet {
        let t0 = Instant::now();
        let mut q = Quiet::default();
        let mut t = t0;
        q.launch(t);
        for g in gaps_ms {
            t += Duration::from_millis(*g);
            q.launch(t);
        }
        q
    }

    /// The symbol of a kernel template instantiated with a function's address, through the
    /// demangler capture uses, gives a name expression NVRTC reads (`k<&f>`).
    #[test]
    fn a_function_address_template_argument_demangles_to_a_readable_name_expression() {
        let d = demangle("_Z13trimul_globalIXadL_Z16matmul_tri_naivePfiPKfiS2_iiifEEEvS0_S2_iii");
        assert!(d.starts_with("void trimul_global<&"), "{d}");
        assert_eq!(
            names_of(&d),
            (
                "trimul_global".to_string(),
                "trimul_global<&matmul_tri_naive>".to_string()
            )
        );
    }

    #[test]
    fn a_loop_of_slow_launches_is_quiet_by_time_long_before_the_count() {
        // A naive kernel of 50 ms in a benchmark loop: 10 s pass after about 200 launches,
        // where the count rule (2000) would wait 100 s.
        let q = run(&[50; 198]);
        assert!(!q.over(2000, 10.0), "{} s", q.seconds);
        let q = run(&[50; 201]);
        assert!(q.over(2000, 10.0), "{} s", q.seconds);
        assert!(!q.over(2000, 0.0), "the time rule is off at 0");
    }

    /// llm.c's attention_backward 1: each round of its benchmark queues nine launches at
    /// once, one a naive kernel of 12.75 s, then waits. The host's gaps add up to
    /// milliseconds; the GPU time of the finished launches ends the run.
    #[test]
    fn a_queued_loop_of_seconds_long_launches_is_quiet_by_gpu_time() {
        let mut q = run(&[1; 24]);
        assert!(q.seconds < 0.1);
        assert!(!q.over(2000, 10.0));
        q.gpu_seconds = 12.75;
        assert!(q.over(2000, 10.0));
        // Few launches are still no loop, however long they ran.
        let mut few = run(&[1; 5]);
        few.gpu_seconds = 60.0;
        assert!(!few.over(2000, 10.0));
    }

    #[test]
    fn pauses_of_the_programs_own_work_and_a_few_launches_are_not_a_loop() {
        // Three validation launches, then a 60 s CPU reference, then two more: 60 s have
        // passed, but neither the gap nor so few launches make a loop.
        let q = run(&[10, 10, 60_000, 10]);
        assert!(
            q.seconds < 1.0,
            "the long gap is not loop time: {}",
            q.seconds
        );
        assert!(!q.over(2000, 10.0));
        // Many fast launches around long pauses count only their own gaps.
        let mut gaps = vec![1; 30];
        gaps.push(30_000);
        gaps.extend([1; 30]);
        let q = run(&gaps);
        assert_eq!(q.launches, 62);
        assert!(!q.over(2000, 10.0), "{} s", q.seconds);
        // The count rule alone still ends a long run of fast launches.
        assert!(run(&[0; 1999]).over(2000, 10.0));
    }
}
