//! A small safe layer over the CUDA driver API (cudarc's raw `sys` bindings): probe,
//! context and stream, modules and functions, device buffers, launches with arbitrary
//! argument lists, events, and the L2 flush. Every call's return code is checked and
//! kept ([`CudaError::Driver`] holds the `CUresult`).
//!
//! Safe to call: device memory is only reachable through a [`DevBuf`] (owns its
//! allocation, frees it once on drop; its address cannot be set from outside) or a
//! [`DevView`] borrowed from one (bounds checked when made, cannot outlive its buffer),
//! or a module's [`Global`]. Transfers take views and check their lengths. Buffers,
//! modules and functions hold the context (and functions their module) alive by `Rc`,
//! so nothing is freed under them. Launching stays `unsafe`: a kernel can do anything.
//!
//! The raw API is used instead of cudarc's safe layer (`CudaSlice`, `LaunchArgs`): the
//! runner checks every argument list against the kernel's parameter sizes
//! (`cuFuncGetParamInfo`, which the safe layer does not expose), copies through its own
//! pinned double buffer (RESULTS.md run 12), and times with one stream and no per-buffer
//! event tracking, whose extra `cuEventRecord`s around each launch would change what the
//! timings measure. The types here follow the safe layer's shape (owned buffers, views
//! with lifetimes, functions that keep their module, `unsafe` launch).

use crate::record::DeviceInfo;
use cudarc::driver::sys;
use std::ffi::{c_void, CStr, CString};
use std::marker::PhantomData;
use std::ops::Range;
use std::rc::Rc;

/// A failed GPU operation. Driver failures keep the driver's own code.
#[derive(Debug, Clone, thiserror::Error)]
pub enum CudaError {
    /// A driver call returned an error code.
    #[error("{call} failed: {name} ({message})")]
    Driver {
        call: &'static str,
        code: sys::CUresult,
        /// CUDA's name for the code (`CUDA_ERROR_ILLEGAL_ADDRESS`).
        name: String,
        message: String,
    },
    /// The argument list does not match the kernel's parameters (count or sizes);
    /// nothing was launched.
    #[error("the harness passes {given} arguments; the kernel takes {} (sizes {sizes:?}){}", sizes.len(), misfit.as_ref().map(|(i, what)| format!("; argument {i} is {what}, its parameter {} bytes", sizes[*i])).unwrap_or_default())]
    ArgumentMismatch {
        given: usize,
        sizes: Vec<usize>,
        /// The first argument that does not fit its parameter, and what it is.
        misfit: Option<(usize, String)>,
    },
    /// A kernel or symbol name with a NUL byte.
    #[error("name {0:?} contains a NUL byte")]
    NulInName(String),
    /// A range or transfer that does not fit the device memory it names.
    #[error("{what}: {need} bytes do not fit a device range of {have} bytes")]
    OutOfRange {
        what: &'static str,
        need: usize,
        have: usize,
    },
}

impl CudaError {
    /// The driver's code, for driver failures.
    pub fn code(&self) -> Option<sys::CUresult> {
        match self {
            CudaError::Driver { code, .. } => Some(*code),
            _ => None,
        }
    }

    /// Errors after which the context is unusable: only a new process recovers.
    pub fn is_sticky(&self) -> bool {
        self.code().is_some_and(is_sticky_code)
    }
}

/// The `CUresult`s that leave the context unusable (CUDA's documentation of each says
/// "the context cannot be used, so it must be destroyed").
pub fn is_sticky_code(code: sys::CUresult) -> bool {
    use sys::CUresult as R;
    matches!(
        code,
        R::CUDA_ERROR_ILLEGAL_ADDRESS
            | R::CUDA_ERROR_LAUNCH_FAILED
            | R::CUDA_ERROR_ILLEGAL_INSTRUCTION
            | R::CUDA_ERROR_MISALIGNED_ADDRESS
            | R::CUDA_ERROR_INVALID_ADDRESS_SPACE
            | R::CUDA_ERROR_INVALID_PC
            | R::CUDA_ERROR_HARDWARE_STACK_ERROR
            | R::CUDA_ERROR_ASSERT
            | R::CUDA_ERROR_LAUNCH_TIMEOUT
            | R::CUDA_ERROR_ECC_UNCORRECTABLE
            | R::CUDA_ERROR_CONTEXT_IS_DESTROYED
    )
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
    Err(CudaError::Driver {
        call,
        code: rc,
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
    ctx: Rc<Context>,
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

/// The retained primary context. Every buffer and module holds it by `Rc`, so the
/// context is released only after the last of them is freed.
struct Context {
    dev: sys::CUdevice,
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: retained once in Gpu::open, released once here, after everything
        // allocated in it (which holds this Rc) is gone; an error after a sticky fault is
        // ignored since the context is unusable anyway.
        unsafe {
            sys::cuDevicePrimaryCtxRelease_v2(self.dev);
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
        let context = Rc::new(Context { dev });
        // SAFETY: ctx was just retained (and is released when `context` drops).
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
            ctx: context,
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
        Ok(Module {
            inner: Rc::new(ModuleInner {
                raw: m,
                _ctx: self.ctx.clone(),
            }),
        })
    }

    /// Allocate `bytes` of device memory (at least 1 byte is reserved).
    pub fn alloc(&self, bytes: usize) -> Result<DevBuf, CudaError> {
        let mut p = 0;
        // SAFETY: p is a valid out-pointer; a context is current.
        check("cuMemAlloc", unsafe {
            sys::cuMemAlloc_v2(&mut p, bytes.max(1))
        })?;
        Ok(DevBuf {
            ptr: p,
            bytes,
            _ctx: self.ctx.clone(),
        })
    }

    /// Copy `data` to the start of `dst` (which must hold at least `data.len()` bytes)
    /// and wait for the copy.
    pub fn upload(&self, dst: DevView<'_>, data: &[u8]) -> Result<(), CudaError> {
        let dst = dst
            .slice(0..data.len())
            .map_err(|_| CudaError::OutOfRange {
                what: "upload",
                need: data.len(),
                have: dst.len(),
            })?;
        if data.is_empty() {
            return Ok(());
        }
        if data.len() < STAGE_MIN {
            // SAFETY: dst is a view of data.len() bytes inside a live allocation (checked
            // when the view was made); data is a live host slice of that length, and the
            // stream is synchronized before returning.
            check("cuMemcpyHtoD", unsafe {
                sys::cuMemcpyHtoDAsync_v2(
                    dst.ptr,
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
            // its event completes; the destination piece lies inside dst, a view of
            // data.len() bytes of a live allocation.
            check("cuMemcpyHtoD", unsafe {
                sys::cuMemcpyHtoDAsync_v2(
                    dst.ptr + (k * STAGE) as u64,
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

    /// The bytes of `src`, after all work queued on the stream has finished.
    pub fn download(&self, src: DevView<'_>) -> Result<Vec<u8>, CudaError> {
        let len = src.len();
        let mut v = vec![0u8; len];
        if len == 0 {
            return Ok(v);
        }
        self.sync()?;
        if len < STAGE_MIN {
            // SAFETY: v has len bytes; src is a view of len bytes inside a live
            // allocation; the stream was synchronized so the kernel's writes are complete.
            check("cuMemcpyDtoH", unsafe {
                sys::cuMemcpyDtoH_v2(v.as_mut_ptr() as *mut c_void, src.ptr, len)
            })?;
            return Ok(v);
        }
        let stream = self.stream;
        let st = self.staging()?;
        let pieces = len.div_ceil(STAGE);
        let issue = |k: usize| -> Result<(), CudaError> {
            let n = STAGE.min(len - k * STAGE);
            // SAFETY: the half holds STAGE >= n pinned bytes, not read until its event
            // completes; the source piece lies inside src, a view of a live allocation.
            check("cuMemcpyDtoH", unsafe {
                sys::cuMemcpyDtoHAsync_v2(
                    st.half(k).as_mut_ptr() as *mut c_void,
                    src.ptr + (k * STAGE) as u64,
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

    /// Set every byte of `dst` to `byte` (queued on the stream).
    pub fn memset(&self, dst: DevView<'_>, byte: u8) -> Result<(), CudaError> {
        if dst.is_empty() {
            return Ok(());
        }
        // SAFETY: dst is a view inside a live allocation.
        check("cuMemsetD8Async", unsafe {
            sys::cuMemsetD8Async(dst.ptr, byte, dst.len(), self.stream)
        })
    }

    /// Copy all of `src` to the start of `dst` (queued on the stream); `dst` must hold
    /// at least `src.len()` bytes.
    pub fn copy(&self, dst: DevView<'_>, src: DevView<'_>) -> Result<(), CudaError> {
        let dst = dst.slice(0..src.len()).map_err(|_| CudaError::OutOfRange {
            what: "device copy",
            need: src.len(),
            have: dst.len(),
        })?;
        if src.is_empty() {
            return Ok(());
        }
        // SAFETY: both are views of src.len() bytes inside live allocations.
        check("cuMemcpyDtoDAsync", unsafe {
            sys::cuMemcpyDtoDAsync_v2(dst.ptr, src.ptr, src.len(), self.stream)
        })
    }

    pub fn sync(&self) -> Result<(), CudaError> {
        // SAFETY: the stream belongs to this context.
        check("cuStreamSynchronize", unsafe {
            sys::cuStreamSynchronize(self.stream)
        })
    }

    /// Launch `f` on the stream. Each argument is its raw bytes (a device pointer is
    /// its 8 bytes). The argument count and each argument's size are checked against
    /// the kernel's parameters first ([`CudaError::ArgumentMismatch`]). `cooperative`
    /// launches through `cuLaunchCooperativeKernel` (every block resident at once, so the
    /// kernel may sync its grid); a grid larger than the device can hold at once fails
    /// with `CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE`.
    ///
    /// # Safety
    /// The kernel runs with the device addresses it is given and may read or write
    /// anything they reach. The caller must make sure that
    /// - every pointer argument (and every pointer inside a struct argument) is the
    ///   address of device memory (a [`DevView`], via [`KArg::ptr`]) that stays
    ///   allocated until the stream is synchronized, and
    /// - the kernel, with this grid, block and argument list, only accesses memory
    ///   inside those allocations.
    ///
    /// A kernel that breaks the second rule corrupts device memory or raises a sticky
    /// error ([`CudaError::is_sticky`]) on a later call; it cannot touch host memory.
    pub unsafe fn launch(
        &self,
        f: &Function,
        grid: [u32; 3],
        block: [u32; 3],
        shared_mem: u32,
        cooperative: bool,
        args: &[KArg],
    ) -> Result<(), CudaError> {
        if shared_mem > 48 * 1024 {
            // SAFETY: f is a live function; its module is kept loaded by f.
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
            let misfit = args
                .iter()
                .zip(&f.param_sizes)
                .position(|(a, &s)| !a.fits(s))
                .map(|i| (i, args[i].what()));
            return Err(CudaError::ArgumentMismatch {
                given: args.len(),
                sizes: f.param_sizes.clone(),
                misfit,
            });
        }
        // Eight-byte aligned storage per argument; the driver copies each by the size
        // of the kernel's parameter.
        let store: Vec<Vec<u64>> = args.iter().map(|a| a.words()).collect();
        let mut ptrs: Vec<*mut c_void> = store.iter().map(|w| w.as_ptr() as *mut c_void).collect();
        // SAFETY: ptrs holds exactly one pointer per kernel parameter (count checked
        // above against cuFuncGetParamInfo), each to at least 16 readable bytes and at
        // least the parameter's size (checked by `KArg::fits`: scalars <= 8, pointers
        // exactly 8, structs and byte parameters exactly their own size). store outlives the call. What the
        // kernel does with the addresses is the caller's contract (see # Safety).
        if cooperative {
            // SAFETY: as for cuLaunchKernel below: the same parameter array.
            return check("cuLaunchCooperativeKernel", unsafe {
                sys::cuLaunchCooperativeKernel(
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
                )
            });
        }
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

    /// Run `body` between two events on the stream and return the elapsed
    /// milliseconds. `body`'s own errors come back unchanged.
    pub fn timed<F, E>(&self, body: F) -> Result<f32, E>
    where
        F: FnOnce() -> Result<(), E>,
        E: From<CudaError>,
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
        self.memset(f.view(), 0x5a)
    }

    /// Measure device-to-device copy bandwidth in bytes/s, counting bytes read plus
    /// written, over a copy of `bytes` (median of `runs`).
    pub fn copy_bandwidth(&self, bytes: usize, runs: usize) -> Result<f64, CudaError> {
        let a = self.alloc(bytes)?;
        let b = self.alloc(bytes)?;
        self.memset(a.view(), 1)?;
        self.copy(b.view(), a.view())?;
        let mut t = Vec::new();
        for _ in 0..runs.max(1) {
            t.push(self.timed(|| self.copy(b.view(), a.view()))? as f64);
        }
        t.sort_by(f64::total_cmp);
        let med = t[t.len() / 2];
        Ok(2.0 * bytes as f64 / (med * 1e-3))
    }

    /// The device handle (for diagnostics).
    pub fn device(&self) -> i32 {
        self.ctx.dev
    }
}

impl Drop for Gpu {
    fn drop(&mut self) {
        self.flush = None;
        self.staging.take();
        // SAFETY: the stream was created in open and is destroyed once; errors (e.g.
        // after a sticky fault) are ignored since the process is ending anyway. The
        // context is released when the last buffer or module holding it drops.
        unsafe {
            sys::cuStreamDestroy_v2(self.stream);
        }
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

/// A device allocation that owns its memory and frees it once, on drop. Its address
/// is private: device memory is reached through views borrowed from it.
pub struct DevBuf {
    ptr: u64,
    bytes: usize,
    _ctx: Rc<Context>,
}

impl DevBuf {
    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The whole buffer.
    pub fn view(&self) -> DevView<'_> {
        DevView::new(self.ptr, self.bytes)
    }

    /// Bytes `range` of the buffer.
    pub fn slice(&self, range: Range<usize>) -> Result<DevView<'_>, CudaError> {
        self.view().slice(range)
    }
}

impl Drop for DevBuf {
    fn drop(&mut self) {
        // SAFETY: ptr came from cuMemAlloc and is freed once (DevBuf is neither Clone nor
        // constructible outside this module); the context is alive (self._ctx). Failure
        // after a sticky error is ignored.
        unsafe {
            sys::cuMemFree_v2(self.ptr);
        }
    }
}

/// A byte range of device memory borrowed from a [`DevBuf`] or a [`Global`]: in bounds
/// by construction, and it cannot outlive what it borrows from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DevView<'a> {
    ptr: u64,
    bytes: usize,
    _owner: PhantomData<&'a ()>,
}

impl<'a> DevView<'a> {
    /// Only for memory that lives as long as `'a` (a buffer's or a global's own).
    fn new(ptr: u64, bytes: usize) -> DevView<'a> {
        DevView {
            ptr,
            bytes,
            _owner: PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }

    /// The device address (for kernel arguments and texture descriptors; it cannot be
    /// turned back into a view or freed).
    pub fn device_ptr(&self) -> u64 {
        self.ptr
    }

    /// Bytes `range` of this view.
    pub fn slice(&self, range: Range<usize>) -> Result<DevView<'a>, CudaError> {
        if range.start > range.end || range.end > self.bytes {
            return Err(CudaError::OutOfRange {
                what: "device view",
                need: range.end.max(range.start),
                have: self.bytes,
            });
        }
        Ok(DevView::new(
            self.ptr + range.start as u64,
            range.end - range.start,
        ))
    }
}

struct ModuleInner {
    raw: sys::CUmodule,
    _ctx: Rc<Context>,
}

impl Drop for ModuleInner {
    fn drop(&mut self) {
        // SAFETY: loaded in Gpu::load, unloaded once, after every Function and Global
        // of it (each holds this Rc) is gone.
        unsafe {
            sys::cuModuleUnload(self.raw);
        }
    }
}

/// A loaded module, unloaded when it and every function and global taken from it are
/// dropped.
pub struct Module {
    inner: Rc<ModuleInner>,
}

pub use crate::evidence::Resources;

/// A kernel of a loaded module; keeps the module loaded.
pub struct Function {
    raw: sys::CUfunction,
    _module: Rc<ModuleInner>,
    pub resources: Resources,
    /// Byte size of each kernel parameter, in order (from cuFuncGetParamInfo).
    param_sizes: Vec<usize>,
}

impl Function {
    /// Byte size of each kernel parameter, in order.
    pub fn param_sizes(&self) -> &[usize] {
        &self.param_sizes
    }
}

/// A `__device__`/`__constant__` variable of a loaded module; keeps the module loaded.
pub struct Global {
    ptr: u64,
    bytes: usize,
    _module: Rc<ModuleInner>,
}

impl Global {
    /// The variable's memory (its size is the view's length).
    pub fn view(&self) -> DevView<'_> {
        DevView::new(self.ptr, self.bytes)
    }
}

impl Module {
    pub fn function(&self, lowered: &str) -> Result<Function, CudaError> {
        use sys::CUfunction_attribute as F;
        let name = CString::new(lowered).map_err(|_| CudaError::NulInName(lowered.into()))?;
        let mut f: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: the module is loaded; name is NUL-terminated and outlives the call.
        check("cuModuleGetFunction", unsafe {
            sys::cuModuleGetFunction(&mut f, self.inner.raw, name.as_ptr())
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
            _module: self.inner.clone(),
            resources,
            param_sizes,
        })
    }

    /// A `__device__`/`__constant__` global by (lowered) name, if the module has it.
    pub fn global(&self, name: &str) -> Option<Global> {
        let cname = CString::new(name).ok()?;
        let (mut p, mut n) = (0u64, 0usize);
        // SAFETY: the module is loaded; out-pointers are valid.
        let rc =
            unsafe { sys::cuModuleGetGlobal_v2(&mut p, &mut n, self.inner.raw, cname.as_ptr()) };
        (rc == sys::CUresult::CUDA_SUCCESS).then(|| Global {
            ptr: p,
            bytes: n,
            _module: self.inner.clone(),
        })
    }
}

/// A CUDA array (behind a replayed texture or surface object): owns its handle and
/// destroys it once, on drop.
pub struct DevArray {
    handle: sys::CUarray,
    desc: crate::gpu::objects::RawArrayDesc,
    bytes: usize,
    _ctx: Rc<Context>,
}

impl DevArray {
    /// The raw handle, for a resource descriptor.
    pub fn handle(&self) -> u64 {
        self.handle as u64
    }

    /// Bytes of its dense image.
    pub fn len(&self) -> usize {
        self.bytes
    }

    pub fn is_empty(&self) -> bool {
        self.bytes == 0
    }
}

impl Drop for DevArray {
    fn drop(&mut self) {
        // SAFETY: created once by cuArray3DCreate and destroyed once here; the context is
        // alive (self._ctx).
        unsafe {
            sys::cuArrayDestroy(self.handle);
        }
    }
}

/// A texture or surface object: its 64-bit handle, destroyed once on drop. It views
/// memory it does not own (a buffer's or an array's): the caller keeps that alive while
/// kernels that read the handle may run, as it does for any address in a [`KArg`].
pub struct DevObject {
    handle: u64,
    surface: bool,
    _ctx: Rc<Context>,
}

impl DevObject {
    /// The value a kernel parameter of type `cudaTextureObject_t`/`cudaSurfaceObject_t` takes.
    pub fn handle(&self) -> u64 {
        self.handle
    }
}

impl Drop for DevObject {
    fn drop(&mut self) {
        // SAFETY: created once by cuTexObjectCreate / cuSurfObjectCreate, destroyed once.
        unsafe {
            if self.surface {
                sys::cuSurfObjectDestroy(self.handle);
            } else {
                sys::cuTexObjectDestroy(self.handle);
            }
        }
    }
}

impl Gpu {
    /// A CUDA array of the given shape, format and flags.
    pub fn alloc_array(
        &self,
        desc: &crate::gpu::objects::RawArrayDesc,
    ) -> Result<DevArray, CudaError> {
        use crate::gpu::objects::array_bytes;
        let bytes = array_bytes(
            desc.format,
            desc.channels,
            desc.width as u64,
            desc.height as u64,
            desc.depth as u64,
        )
        .ok_or(CudaError::OutOfRange {
            what: "array format",
            need: desc.format as usize,
            have: 0,
        })? as usize;
        let mut h: sys::CUarray = std::ptr::null_mut();
        // SAFETY: RawArrayDesc has CUDA_ARRAY3D_DESCRIPTOR's layout (objects.rs checks the
        // size); the driver validates the format and flags; h is a valid out-pointer.
        check("cuArray3DCreate", unsafe {
            sys::cuArray3DCreate_v2(
                &mut h,
                desc as *const _ as *const sys::CUDA_ARRAY3D_DESCRIPTOR,
            )
        })?;
        Ok(DevArray {
            handle: h,
            desc: *desc,
            bytes,
            _ctx: self.ctx.clone(),
        })
    }

    /// Copy the array's dense image between it and `view` (which must hold it), queued on
    /// the stream: into the array when `into_array`, else out of it.
    pub fn copy_array(
        &self,
        a: &DevArray,
        view: DevView<'_>,
        into_array: bool,
    ) -> Result<(), CudaError> {
        if view.len() < a.bytes {
            return Err(CudaError::OutOfRange {
                what: "array copy",
                need: a.bytes,
                have: view.len(),
            });
        }
        use crate::gpu::objects::{array_copy, CopySide};
        let (buf, arr) = (CopySide::Device(view.ptr), CopySide::Array(a.handle));
        let (src, dst) = if into_array { (buf, arr) } else { (arr, buf) };
        let c = array_copy(&a.desc, src, dst).ok_or(CudaError::OutOfRange {
            what: "array format",
            need: a.desc.format as usize,
            have: 0,
        })?;
        // SAFETY: the view holds the array's whole dense image (checked above) and both
        // live until the stream is synchronized by the caller's next sync.
        check("cuMemcpy3DAsync", unsafe {
            sys::cuMemcpy3DAsync_v2(&c, self.stream)
        })
    }

    /// A texture object over linear or pitched memory at `ptr` (inside a buffer the caller
    /// keeps alive), or over `array`, with the given sampling.
    pub fn texture_object(
        &self,
        res: &crate::gpu::objects::RawResourceDesc,
        tex: &crate::gpu::objects::RawTextureDesc,
    ) -> Result<DevObject, CudaError> {
        let mut h = 0u64;
        // SAFETY: the mirrors have the driver structs' layouts; the driver validates every
        // field; h is a valid out-pointer.
        check("cuTexObjectCreate", unsafe {
            sys::cuTexObjectCreate(
                &mut h,
                res as *const _ as *const sys::CUDA_RESOURCE_DESC,
                tex as *const _ as *const sys::CUDA_TEXTURE_DESC,
                std::ptr::null(),
            )
        })?;
        Ok(DevObject {
            handle: h,
            surface: false,
            _ctx: self.ctx.clone(),
        })
    }

    /// A surface object over an array.
    pub fn surface_object(
        &self,
        res: &crate::gpu::objects::RawResourceDesc,
    ) -> Result<DevObject, CudaError> {
        let mut h = 0u64;
        // SAFETY: as for texture_object.
        check("cuSurfObjectCreate", unsafe {
            sys::cuSurfObjectCreate(&mut h, res as *const _ as *const sys::CUDA_RESOURCE_DESC)
        })?;
        Ok(DevObject {
            handle: h,
            surface: true,
            _ctx: self.ctx.clone(),
        })
    }
}

/// One kernel argument's bytes.
#[derive(Debug, Clone, PartialEq)]
pub enum KArg {
    /// A device address (see [`KArg::ptr`]).
    Ptr(u64),
    /// A scalar's little-endian bytes (1 to 8 of them).
    Scalar([u8; 8]),
    /// A struct passed by value (a struct of device pointers): its bytes, of which the
    /// first `len` (up to 16) are the struct; the kernel's parameter must be exactly `len`.
    Struct { bytes: [u8; 16], len: usize },
    /// A parameter of any size, byte for byte (a captured launch's parameter, device
    /// addresses already replaced); the kernel's parameter must be exactly this long.
    Bytes(Vec<u8>),
}

impl KArg {
    /// A pointer argument: the start of `view`.
    pub fn ptr(view: DevView<'_>) -> KArg {
        KArg::Ptr(view.device_ptr())
    }

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

    /// The argument in 8-byte words (at least two), so its storage is 8-byte aligned.
    fn words(&self) -> Vec<u64> {
        match self {
            KArg::Ptr(p) => vec![*p, 0],
            KArg::Scalar(b) => vec![u64::from_le_bytes(*b), 0],
            KArg::Struct { bytes, .. } => {
                let (lo, hi) = bytes.split_at(8);
                vec![
                    u64::from_le_bytes(lo.try_into().expect("8 bytes")),
                    u64::from_le_bytes(hi.try_into().expect("8 bytes")),
                ]
            }
            KArg::Bytes(b) => {
                let mut w: Vec<u64> = b
                    .chunks(8)
                    .map(|c| {
                        let mut x = [0u8; 8];
                        x[..c.len()].copy_from_slice(c);
                        u64::from_le_bytes(x)
                    })
                    .collect();
                w.resize(w.len().max(2), 0);
                w
            }
        }
    }

    /// Whether this argument can be passed for a kernel parameter of `size` bytes:
    /// pointers exactly 8, scalars at most 8 (the driver copies `size` bytes), structs
    /// exactly their own size.
    /// What the argument is, for an error: `an 8-byte pointer`, `a 24-byte struct`, ….
    fn what(&self) -> String {
        match self {
            KArg::Ptr(_) => "an 8-byte pointer".into(),
            KArg::Scalar(_) => "a scalar of up to 8 bytes".into(),
            KArg::Struct { len, .. } => format!("a {len}-byte struct"),
            KArg::Bytes(b) => format!("{} bytes", b.len()),
        }
    }

    fn fits(&self, size: usize) -> bool {
        match self {
            KArg::Ptr(_) => size == 8,
            KArg::Scalar(_) => size <= 8,
            KArg::Struct { len, .. } => size == *len,
            KArg::Bytes(b) => size == b.len(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{is_sticky_code, sys, CudaError, DevView, KArg};

    #[test]
    fn views_refuse_ranges_outside_what_they_borrow() {
        // A view as DevBuf::view makes it (no GPU needed: slicing is address arithmetic).
        let v = DevView::new(0x1000, 100);
        let s = v.slice(10..30).unwrap();
        assert_eq!((s.device_ptr(), s.len()), (0x100a, 20));
        let inner = s.slice(5..20).unwrap();
        assert_eq!((inner.device_ptr(), inner.len()), (0x100f, 15));
        assert!(
            s.slice(0..21).is_err(),
            "a sub-view cannot grow past its parent"
        );
        assert!(v.slice(90..101).is_err());
        #[allow(clippy::reversed_empty_ranges)] // the reversed range is what is tested
        let reversed = v.slice(30..10);
        assert!(reversed.is_err());
        assert!(
            v.slice(100..100).unwrap().is_empty(),
            "the end is a valid empty view"
        );
    }

    #[test]
    fn sticky_errors_are_classified_by_code() {
        let err = |code| CudaError::Driver {
            call: "cuStreamSynchronize",
            code,
            // A name that says the opposite: the code decides, not the text.
            name: "CUDA_ERROR_INVALID_VALUE".into(),
            message: String::new(),
        };
        assert!(err(sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS).is_sticky());
        assert!(err(sys::CUresult::CUDA_ERROR_LAUNCH_FAILED).is_sticky());
        assert!(!err(sys::CUresult::CUDA_ERROR_INVALID_VALUE).is_sticky());
        assert!(!err(sys::CUresult::CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES).is_sticky());
        assert!(!is_sticky_code(sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY));
        let mismatch = CudaError::ArgumentMismatch {
            given: 2,
            sizes: vec![8, 4, 4],
            misfit: None,
        };
        assert!(!mismatch.is_sticky() && mismatch.code().is_none());
        assert_eq!(
            mismatch.to_string(),
            "the harness passes 2 arguments; the kernel takes 3 (sizes [8, 4, 4])"
        );
        // As many arguments, one of another size (mri-gridding's struct of arrays where the
        // naive kernel takes a pointer): which one, and what it is.
        let misfit = CudaError::ArgumentMismatch {
            given: 4,
            sizes: vec![4, 8, 8, 8],
            misfit: Some((3, KArg::Bytes(vec![0; 16]).what())),
        };
        assert_eq!(
            misfit.to_string(),
            "the harness passes 4 arguments; the kernel takes 4 (sizes [4, 8, 8, 8]); argument 3 is 16 bytes, its parameter 8 bytes"
        );
        assert_eq!(
            err(sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS).code(),
            Some(sys::CUresult::CUDA_ERROR_ILLEGAL_ADDRESS)
        );
    }

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
