//! A small safe layer over the CUDA driver API (cudarc's raw `sys` bindings): probe,
//! context and stream, modules and functions, device buffers, launches with arbitrary
//! argument lists, events, and the L2 flush. Every call's return code is checked.
//!
//! The raw API is used instead of cudarc's safe layer because the runner launches
//! kernels whose argument lists are only known at run time (from a harness) and hands
//! out sub-ranges of allocations (canary zones around each buffer).

use crate::record::DeviceInfo;
use cudarc::driver::sys;
use std::ffi::{c_void, CStr, CString};

/// A failed driver call, with the call's name and CUDA's own error name.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{call} failed: {name} ({message})")]
pub struct CudaError {
    pub call: &'static str,
    pub code: i32,
    pub name: String,
    pub message: String,
}

impl CudaError {
    /// Errors after which the context is unusable: only a new process recovers.
    pub fn is_sticky(&self) -> bool {
        matches!(
            self.name.as_str(),
            "CUDA_ERROR_ILLEGAL_ADDRESS"
                | "CUDA_ERROR_LAUNCH_FAILED"
                | "CUDA_ERROR_ILLEGAL_INSTRUCTION"
                | "CUDA_ERROR_MISALIGNED_ADDRESS"
                | "CUDA_ERROR_INVALID_ADDRESS_SPACE"
                | "CUDA_ERROR_INVALID_PC"
                | "CUDA_ERROR_HARDWARE_STACK_ERROR"
                | "CUDA_ERROR_ASSERT"
                | "CUDA_ERROR_LAUNCH_TIMEOUT"
                | "CUDA_ERROR_ECC_UNCORRECTABLE"
                | "CUDA_ERROR_CONTEXT_IS_DESTROYED"
        )
    }
}

fn check(call: &'static str, rc: sys::CUresult) -> Result<(), CudaError> {
    if rc == sys::CUresult::CUDA_SUCCESS {
        return Ok(());
    }
    let mut name: *const std::ffi::c_char = std::ptr::null();
    let mut msg: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: both calls only write a pointer to a static string (or leave it null
    // for an unknown code), which we read only when non-null.
    let (name, message) = unsafe {
        sys::cuGetErrorName(rc, &mut name);
        sys::cuGetErrorString(rc, &mut msg);
        let s = |p: *const std::ffi::c_char| {
            if p.is_null() {
                String::new()
            } else {
                CStr::from_ptr(p).to_string_lossy().into_owned()
            }
        };
        (s(name), s(msg))
    };
    Err(CudaError {
        call,
        code: rc as i32,
        name: if name.is_empty() {
            format!("CUDA error {}", rc as i32)
        } else {
            name
        },
        message,
    })
}

/// Whether CUDA can be used here, decided without panicking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    Ready { devices: usize },
    NoGpu(String),
}

/// Probe for the driver library FIRST (cudarc panics when it is missing), then
/// initialise and count devices. Honours `CUDA_VISIBLE_DEVICES`.
pub fn probe() -> Probe {
    // SAFETY: only tries to dlopen the driver library by its usual names.
    if !unsafe { sys::is_culib_present() } {
        return Probe::NoGpu("no GPU: the CUDA driver (libcuda.so.1) is not installed".into());
    }
    // SAFETY: the library is present, so cudarc's lazy loader finds cuInit.
    if let Err(e) = check("cuInit", unsafe { sys::cuInit(0) }) {
        return Probe::NoGpu(format!("no GPU: {e}"));
    }
    let mut n = 0;
    // SAFETY: n is a valid out-pointer; cuInit succeeded.
    if let Err(e) = check("cuDeviceGetCount", unsafe { sys::cuDeviceGetCount(&mut n) }) {
        return Probe::NoGpu(format!("no GPU: {e}"));
    }
    if n <= 0 {
        return Probe::NoGpu("no GPU: the CUDA driver reports 0 devices".into());
    }
    Probe::Ready {
        devices: n as usize,
    }
}

/// Device limits the harness expressions and the runner need.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Props {
    pub sm_count: u32,
    pub max_threads_per_block: u32,
    pub max_shared_per_block_optin: u32,
    pub l2_bytes: u64,
    pub cc_major: u32,
    pub cc_minor: u32,
}

/// One device with its primary context and one stream. Not `Send`: a worker owns it
/// on one thread.
pub struct Gpu {
    pub ordinal: usize,
    pub info: DeviceInfo,
    pub props: Props,
    ctx: sys::CUcontext,
    dev: sys::CUdevice,
    stream: sys::CUstream,
    flush: Option<DevBuf>,
    /// Page-locked staging for large transfers (two halves, filled alternately).
    staging: std::cell::OnceCell<Staging>,
}

/// Bytes per half of the pinned staging buffer.
const STAGE: usize = 32 << 20;
/// Transfers below this go straight from or to pageable memory.
const STAGE_MIN: usize = 4 << 20;

/// Page-locked host memory for double-buffered transfers: pageable copies go through
/// the driver's own single-threaded staging and run at 1–2 GB/s on the lent H100 host
/// (RESULTS.md run 12); a pinned buffer filled and drained by all cores keeps up with the
/// DMA engine.
struct Staging {
    ptr: *mut u8,
    done: [Event; 2],
}

impl Staging {
    fn new() -> Result<Staging, CudaError> {
        let mut p: *mut c_void = std::ptr::null_mut();
        // SAFETY: p is a valid out-pointer; a context is current; freed in Drop.
        check("cuMemAllocHost", unsafe {
            sys::cuMemAllocHost_v2(&mut p, 2 * STAGE)
        })?;
        Ok(Staging {
            ptr: p as *mut u8,
            done: [Event::new()?, Event::new()?],
        })
    }

    /// Half `k` as a mutable slice. The caller makes sure no copy into or out of it is
    /// pending (its `done` event has completed).
    #[allow(clippy::mut_from_ref)] // the halves are disjoint and used one at a time
    fn half(&self, k: usize) -> &mut [u8] {
        // SAFETY: the allocation holds 2 * STAGE bytes and k is 0 or 1; the pinned memory
        // lives as long as self; callers synchronize on done[k] before touching it.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add((k & 1) * STAGE), STAGE) }
    }
}

impl Drop for Staging {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemAllocHost and is freed once.
        unsafe {
            sys::cuMemFreeHost(self.ptr as *mut c_void);
        }
    }
}

fn attr(dev: sys::CUdevice, a: sys::CUdevice_attribute) -> Result<i32, CudaError> {
    let mut v = 0;
    // SAFETY: v is a valid out-pointer and dev a device handle from cuDeviceGet.
    check("cuDeviceGetAttribute", unsafe {
        sys::cuDeviceGetAttribute(&mut v, a, dev)
    })?;
    Ok(v)
}

impl Gpu {
    /// Open device `ordinal` (after [`probe`] said Ready).
    pub fn open(ordinal: usize) -> Result<Gpu, CudaError> {
        use sys::CUdevice_attribute as A;
        // SAFETY: idempotent; the caller probed that the library exists.
        check("cuInit", unsafe { sys::cuInit(0) })?;
        let mut dev = 0;
        // SAFETY: dev is a valid out-pointer.
        check("cuDeviceGet", unsafe {
            sys::cuDeviceGet(&mut dev, ordinal as i32)
        })?;
        let mut ctx: sys::CUcontext = std::ptr::null_mut();
        // SAFETY: dev is valid; the primary context is released in Drop.
        check("cuDevicePrimaryCtxRetain", unsafe {
            sys::cuDevicePrimaryCtxRetain(&mut ctx, dev)
        })?;
        // SAFETY: ctx was just retained.
        check("cuCtxSetCurrent", unsafe { sys::cuCtxSetCurrent(ctx) })?;
        let mut stream: sys::CUstream = std::ptr::null_mut();
        // SAFETY: a context is current; the stream is destroyed in Drop.
        check("cuStreamCreate", unsafe {
            sys::cuStreamCreate(
                &mut stream,
                sys::CUstream_flags::CU_STREAM_NON_BLOCKING as u32,
            )
        })?;
        let mut name = [0 as std::ffi::c_char; 256];
        // SAFETY: the buffer holds 256 bytes and the driver writes a NUL-terminated name.
        check("cuDeviceGetName", unsafe {
            sys::cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, dev)
        })?;
        // SAFETY: NUL-terminated by the driver.
        let name = unsafe { CStr::from_ptr(name.as_ptr()) }
            .to_string_lossy()
            .into_owned();
        let mut drv = 0;
        // SAFETY: drv is a valid out-pointer.
        check("cuDriverGetVersion", unsafe {
            sys::cuDriverGetVersion(&mut drv)
        })?;
        let props = Props {
            sm_count: attr(dev, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            max_threads_per_block: attr(dev, A::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)? as u32,
            max_shared_per_block_optin: attr(
                dev,
                A::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
            )? as u32,
            l2_bytes: attr(dev, A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
            cc_major: attr(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32,
            cc_minor: attr(dev, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32,
        };
        let clock = |a| {
            attr(dev, a)
                .ok()
                .filter(|&k| k > 0)
                .map(|k| k as u32 / 1000)
        };
        let info = DeviceInfo {
            name,
            sm_count: props.sm_count,
            compute_capability: format!("{}.{}", props.cc_major, props.cc_minor),
            // The driver API gives the CUDA version the driver supports (e.g. 13000);
            // the kernel-module version (580.x) is read from /proc where available.
            driver_version: kernel_driver_version().unwrap_or_else(|| drv.to_string()),
            cuda_version: format!("{}.{}", drv / 1000, (drv % 1000) / 10),
            sm_clock_mhz: clock(A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
            mem_clock_mhz: clock(A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
        };
        Ok(Gpu {
            ordinal,
            info,
            props,
            ctx,
            dev,
            stream,
            flush: None,
            staging: std::cell::OnceCell::new(),
        })
    }

    /// The device's own architecture for NVRTC, e.g. `sm_90`.
    pub fn arch(&self) -> String {
        format!("sm_{}{}", self.props.cc_major, self.props.cc_minor)
    }

    /// Load a CUBIN (or NUL-terminated PTX) image.
    pub fn load(&self, image: &[u8]) -> Result<Module, CudaError> {
        let mut m: sys::CUmodule = std::ptr::null_mut();
        let owned;
        let ptr = if image.last() == Some(&0) || image.starts_with(b"\x7fELF") {
            image.as_ptr()
        } else {
            owned = [image, b"\0"].concat();
            owned.as_ptr()
        };
        // SAFETY: ptr points to a complete CUBIN or NUL-terminated PTX image that stays
        // alive for the call (the driver copies it).
        check("cuModuleLoadData", unsafe {
            sys::cuModuleLoadData(&mut m, ptr as *const c_void)
        })?;
        Ok(Module { raw: m })
    }

    /// Allocate `bytes` of device memory (at least 1 byte).
    pub fn alloc(&self, bytes: usize) -> Result<DevBuf, CudaError> {
        let mut p = 0;
        // SAFETY: p is a valid out-pointer; a context is current.
        check("cuMemAlloc", unsafe {
            sys::cuMemAlloc_v2(&mut p, bytes.max(1))
        })?;
        Ok(DevBuf { ptr: p, bytes })
    }

    pub fn upload(&self, dst: u64, data: &[u8]) -> Result<(), CudaError> {
        if data.is_empty() {
            return Ok(());
        }
        if data.len() < STAGE_MIN {
            // SAFETY: dst..dst+len lies inside an allocation the caller owns (DevBuf/Guarded
            // compute it from their sizes); data is a live host slice of that length, and the
            // stream is synchronized before returning.
            check("cuMemcpyHtoD", unsafe {
                sys::cuMemcpyHtoDAsync_v2(
                    dst,
                    data.as_ptr() as *const c_void,
                    data.len(),
                    self.stream,
                )
            })?;
            return self.sync();
        }
        let st = self.staging()?;
        for (k, piece) in data.chunks(STAGE).enumerate() {
            let ev = &st.done[k & 1];
            // The copy issued from this half two pieces ago must be finished.
            ev.wait()?;
            let half = &mut st.half(k)[..piece.len()];
            crate::par::copy(half, piece);
            // SAFETY: the half holds piece.len() pinned bytes that stay untouched until
            // its event completes; the destination range lies inside a caller-owned
            // allocation.
            check("cuMemcpyHtoD", unsafe {
                sys::cuMemcpyHtoDAsync_v2(
                    dst + (k * STAGE) as u64,
                    half.as_ptr() as *const c_void,
                    piece.len(),
                    self.stream,
                )
            })?;
            ev.record(self.stream)?;
        }
        self.sync()
    }

    /// The pinned staging buffer, allocated on first use.
    fn staging(&self) -> Result<&Staging, CudaError> {
        if self.staging.get().is_none() {
            let _ = self.staging.set(Staging::new()?);
        }
        Ok(self.staging.get().expect("set above"))
    }

    pub fn download(&self, src: u64, len: usize) -> Result<Vec<u8>, CudaError> {
        let mut v = vec![0u8; len];
        if len == 0 {
            return Ok(v);
        }
        self.sync()?;
        if len < STAGE_MIN {
            // SAFETY: v has len bytes; src..src+len lies inside a caller-owned allocation;
            // the stream was synchronized so the kernel's writes are complete.
            check("cuMemcpyDtoH", unsafe {
                sys::cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, src, len)
            })?;
            return Ok(v);
        }
        let stream = self.stream;
        let st = self.staging()?;
        let pieces = len.div_ceil(STAGE);
        let issue = |k: usize| -> Result<(), CudaError> {
            let n = STAGE.min(len - k * STAGE);
            // SAFETY: the half holds STAGE >= n pinned bytes, not read until its event
            // completes; the source range lies inside a caller-owned allocation.
            check("cuMemcpyDtoH", unsafe {
                sys::cuMemcpyDtoHAsync_v2(
                    st.half(k).as_mut_ptr() as *mut c_void,
                    src + (k * STAGE) as u64,
                    n,
                    stream,
                )
            })?;
            st.done[k & 1].record(stream)
        };
        // Two pieces in flight: drain one half while the other fills.
        issue(0)?;
        if pieces > 1 {
            issue(1)?;
        }
        for (k, out) in v.chunks_mut(STAGE).enumerate() {
            st.done[k & 1].wait()?;
            crate::par::copy(out, &st.half(k)[..out.len()]);
            if k + 2 < pieces {
                issue(k + 2)?;
            }
        }
        Ok(v)
    }

    pub fn memset(&self, dst: u64, byte: u8, len: usize) -> Result<(), CudaError> {
        if len == 0 {
            return Ok(());
        }
        // SAFETY: dst..dst+len lies inside a caller-owned allocation.
        check("cuMemsetD8Async", unsafe {
            sys::cuMemsetD8Async(dst, byte, len, self.stream)
        })
    }

    pub fn copy(&self, dst: u64, src: u64, len: usize) -> Result<(), CudaError> {
        if len == 0 {
            return Ok(());
        }
        // SAFETY: both ranges lie inside caller-owned allocations of at least len bytes.
        check("cuMemcpyDtoDAsync", unsafe {
            sys::cuMemcpyDtoDAsync_v2(dst, src, len, self.stream)
        })
    }

    pub fn sync(&self) -> Result<(), CudaError> {
        // SAFETY: the stream belongs to this context.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(self.stream)
        })
    }

    /// Launch `f`. Each argument is its raw bytes (a device pointer is its 8 bytes).
    pub fn launch(
        &self,
        f: &Function,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem: u32,
        args: &[KArg],
    ) -> Result<(), CudaError> {
        if shared_mem > 48 * 1024 {
            // SAFETY: f is a live function of a loaded module.
            check("cuFuncSetAttribute", unsafe {
                sys::cuFuncSetAttribute(
                    f.raw,
                    sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                    shared_mem as i32,
                )
            })?;
        }
        if args.len() != f.param_sizes.len()
            || args.iter().zip(&f.param_sizes).any(|(a, &s)| !a.fits(s))
        {
            return Err(CudaError {
                call: "cuLaunchKernel",
                code: -1,
                name: "ARGUMENT_MISMATCH".into(),
                message: format!(
                    "the harness passes {} arguments; the kernel takes {} (sizes {:?})",
                    args.len(),
                    f.param_sizes.len(),
                    f.param_sizes
                ),
            });
        }
        // Eight-byte aligned storage per argument; the driver copies each by the size
        // of the kernel's parameter.
        let store: Vec<[u64; 2]> = args.iter().map(|a| a.words()).collect();
        let mut ptrs: Vec<*mut c_void> = store.iter().map(|w| w.as_ptr() as *mut c_void).collect();
        // SAFETY: ptrs holds exactly one pointer per kernel parameter (count checked
        // above against cuFuncGetParamInfo), each to 16 readable bytes, at least any
        // parameter's size (checked by `KArg::fits`: scalars <= 8, pointers exactly 8,
        // structs exactly their own size, at most 16). store outlives the call.
        check("cuLaunchKernel", unsafe {
            sys::cuLaunchKernel(
                f.raw,
                grid[0],
                grid[1],
                grid[2],
                block[0],
                block[1],
                block[2],
                shared_mem,
                self.stream,
                ptrs.as_mut_ptr(),
                std::ptr::null_mut(),
            )
        })
    }

    /// Run `body` between two events on the stream and return the elapsed milliseconds.
    pub fn timed<F>(&self, body: F) -> Result<f32, CudaError>
    where
        F: FnOnce() -> Result<(), CudaError>,
    {
        let start = Event::new()?;
        let end = Event::new()?;
        start.record(self.stream)?;
        body()?;
        end.record(self.stream)?;
        end.wait()?;
        let mut ms = 0f32;
        // SAFETY: both events completed.
        check("cuEventElapsedTime", unsafe {
            sys::cuEventElapsedTime_v2(&mut ms, start.raw, end.raw)
        })?;
        Ok(ms)
    }

    /// Evict the L2 by writing a buffer of twice its size.
    pub fn flush_l2(&mut self) -> Result<(), CudaError> {
        if self.flush.is_none() {
            let bytes = (self.props.l2_bytes as usize * 2).max(8 << 20);
            self.flush = Some(self.alloc(bytes)?);
        }
        let f = self.flush.as_ref().expect("allocated above");
        self.memset(f.ptr, 0x5a, f.bytes)
    }

    /// Measure device-to-device copy bandwidth in bytes/s, counting bytes read plus
    /// written, over a copy of `bytes` (median of `runs`).
    pub fn copy_bandwidth(&self, bytes: usize, runs: usize) -> Result<f64, CudaError> {
        let a = self.alloc(bytes)?;
        let b = self.alloc(bytes)?;
        self.memset(a.ptr, 1, bytes)?;
        self.copy(b.ptr, a.ptr, bytes)?;
        let mut t = Vec::new();
        for _ in 0..runs.max(1) {
            t.push(self.timed(|| self.copy(b.ptr, a.ptr, bytes))? as f64);
        }
        t.sort_by(f64::total_cmp);
        let med = t[t.len() / 2];
        Ok(2.0 * bytes as f64 / (med * 1e-3))
    }

    /// The device handle (for diagnostics).
    pub fn device(&self) -> i32 {
        self.dev
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        self.flush = None;
        self.staging.take();
        // SAFETY: stream and context were created in open and are released once; errors
        // (e.g. after a sticky fault) are ignored since the process is ending anyway.
        unsafe {
            sys::cuStreamDestroy_v2(self.stream);
            sys::cuDevicePrimaryCtxRelease_v2(self.dev);
        }
        let _ = self.ctx;
    }
}

fn kernel_driver_version() -> Option<String> {
    let s = std::fs::read_to_string("/proc/driver/nvidia/version").ok()?;
    // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  ..."
    s.lines()
        .next()?
        .split_whitespace()
        .find(|w| w.chars().next().is_some_and(|c| c.is_ascii_digit()) && w.contains('.'))
        .map(str::to_string)
}

struct Event {
    raw: sys::CUevent,
}

impl Event {
    fn new() -> Result<Event, CudaError> {
        let mut e: sys::CUevent = std::ptr::null_mut();
        // SAFETY: e is a valid out-pointer; destroyed in Drop.
        check("cuEventCreate", unsafe {
            sys::cuEventCreate(&mut e, sys::CUevent_flags::CU_EVENT_DEFAULT as u32)
        })?;
        Ok(Event { raw: e })
    }

    fn record(&self, stream: sys::CUstream) -> Result<(), CudaError> {
        // SAFETY: the event and the stream belong to the current context.
        check("cuEventRecord", unsafe {
            sys::cuEventRecord(self.raw, stream)
        })
    }

    /// Wait until the work recorded before this event is done (at once if never recorded).
    fn wait(&self) -> Result<(), CudaError> {
        // SAFETY: the event belongs to the current context.
        check("cuEventSynchronize", unsafe {
            sys::cuEventSynchronize(self.raw)
        })
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: created in new, destroyed once.
        unsafe {
            sys::cuEventDestroy_v2(self.raw);
        }
    }
}

/// A device allocation, freed on drop.
pub struct DevBuf {
    pub ptr: u64,
    pub bytes: usize,
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemAlloc and is freed once; failure after a sticky
        // error is ignored.
        unsafe {
            sys::cuMemFree_v2(self.ptr);
        }
    }
}

/// A loaded module, unloaded on drop.
pub struct Module {
    raw: sys::CUmodule,
}

/// Resource use the driver reports for one kernel.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Resources {
    pub registers: i32,
    pub static_shared_bytes: i32,
    pub local_bytes: i32,
    pub max_threads_per_block: i32,
}

pub struct Function {
    raw: sys::CUfunction,
    pub resources: Resources,
    /// Byte size of each kernel parameter, in order (from cuFuncGetParamInfo).
    pub param_sizes: Vec<usize>,
}

impl Module {
    pub fn function(&self, lowered: &str) -> Result<Function, CudaError> {
        use sys::CUfunction_attribute as F;
        let name = CString::new(lowered).map_err(|_| CudaError {
            call: "cuModuleGetFunction",
            code: -1,
            name: "NUL in name".into(),
            message: lowered.into(),
        })?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: the module is loaded; name is NUL-terminated and outlives the call.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut f, self.raw, name.as_ptr())
        })?;
        let get = |a| {
            let mut v = 0;
            // SAFETY: f is a live function; v a valid out-pointer.
            check("cuFuncGetAttribute", unsafe {
                sys::cuFuncGetAttribute(&mut v, a, f)
            })
            .map(|_| v)
        };
        let resources = Resources {
            registers: get(F::CU_FUNC_ATTRIBUTE_NUM_REGS)?,
            static_shared_bytes: get(F::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES)?,
            local_bytes: get(F::CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES)?,
            max_threads_per_block: get(F::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        };
        let mut param_sizes = Vec::new();
        loop {
            let (mut off, mut size) = (0usize, 0usize);
            // SAFETY: f is live; out-pointers are valid. An index past the last
            // parameter returns CUDA_ERROR_INVALID_VALUE, which ends the loop.
            let rc = unsafe { sys::cuFuncGetParamInfo(f, param_sizes.len(), &mut off, &mut size) };
            if rc != sys::CUresult::CUDA_SUCCESS || param_sizes.len() >= 4096 {
                break;
            }
            param_sizes.push(size);
        }
        Ok(Function {
            raw: f,
            resources,
            param_sizes,
        })
    }

    /// A `__device__`/`__constant__` global by (lowered) name: its address and size.
    pub fn global(&self, name: &str) -> Option<(u64, usize)> {
        let cname = CString::new(name).ok()?;
        let (mut p, mut n) = (0u64, 0usize);
        // SAFETY: the module is loaded; out-pointers are valid.
        let rc = unsafe { sys::cuModuleGetGlobal_v2(&mut p, &mut n, self.raw, cname.as_ptr()) };
        (rc == sys::CUresult::CUDA_SUCCESS).then_some((p, n))
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: loaded in Gpu::load, unloaded once.
        unsafe {
            sys::cuModuleUnload(self.raw);
        }
    }
}

/// One kernel argument's bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KArg {
    Ptr(u64),
    /// A scalar's little-endian bytes (1 to 8 of them).
    Scalar([u8; 8]),
    /// A struct passed by value (a struct of device pointers): its bytes, of which the
    /// first `len` (up to 16) are the struct; the kernel's parameter must be exactly `len`.
    Struct {
        bytes: [u8; 16],
        len: usize,
    },
}

impl KArg {
    /// A struct argument from its bytes; `None` when there are more than 16.
    pub fn structure(b: &[u8]) -> Option<KArg> {
        if b.len() > 16 {
            return None;
        }
        let mut bytes = [0u8; 16];
        bytes[..b.len()].copy_from_slice(b);
        Some(KArg::Struct {
            bytes,
            len: b.len(),
        })
    }

    fn words(&self) -> [u64; 2] {
        match self {
            KArg::Ptr(p) => [*p, 0],
            KArg::Scalar(b) => [u64::from_le_bytes(*b), 0],
            KArg::Struct { bytes, .. } => {
                let (lo, hi) = bytes.split_at(8);
                [
                    u64::from_le_bytes(lo.try_into().expect("8 bytes")),
                    u64::from_le_bytes(hi.try_into().expect("8 bytes")),
                ]
            }
        }
    }

    /// Whether this argument can be passed for a kernel parameter of `size` bytes:
    /// pointers exactly 8, scalars at most 8 (the driver copies `size` bytes), structs
    /// exactly their own size.
    fn fits(&self, size: usize) -> bool {
        match self {
            KArg::Ptr(_) => size == 8,
            KArg::Scalar(_) => size <= 8,
            KArg::Struct { len, .. } => size == *len,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::KArg;

    #[test]
    fn struct_args_fill_both_words_and_fit_only_their_own_size() {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&0xAAAA_0000_0000_1000u64.to_le_bytes());
        b[8..].copy_from_slice(&0xBBBB_0000_0000_2000u64.to_le_bytes());
        let a = KArg::structure(&b).unwrap();
        assert_eq!(a.words(), [0xAAAA_0000_0000_1000, 0xBBBB_0000_0000_2000]);
        assert!(a.fits(16));
        assert!(
            !a.fits(8) && !a.fits(24),
            "a struct parameter of another size is refused"
        );
        let one = KArg::structure(&b[..8]).unwrap();
        assert_eq!(one.words(), [0xAAAA_0000_0000_1000, 0]);
        assert!(one.fits(8) && !one.fits(16));
        assert!(KArg::structure(&[0u8; 17]).is_none());
        // Pointers and scalars keep their rules: pointers exactly 8, scalars at most 8.
        assert!(KArg::Ptr(1).fits(8) && !KArg::Ptr(1).fits(16) && !KArg::Ptr(1).fits(4));
        assert!(KArg::Scalar([0; 8]).fits(4) && !KArg::Scalar([0; 8]).fits(16));
    }
}
