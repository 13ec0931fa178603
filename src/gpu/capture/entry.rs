//! Where the CUDA driver enters the injection library: `InitializeInjection` (exported by
//! the crate's `cdylib`) reads the configuration ([`inject::configure`]), subscribes to
//! CUPTI's driver-API callbacks for the launch entry points ([`inject::LAUNCHES`]) and the
//! graph calls ([`graph::GRAPH_CALLS`]), and hands each callback to [`graph`] or
//! [`inject`]. Nothing here may unwind into the driver: every callback catches panics.

use super::{graph, inject};
use cudarc::cupti::sys as cupti;
use std::cell::Cell;
use std::ffi::{c_int, c_void};

thread_local! {
    /// Set while this thread is inside a callback: the driver calls made here must not
    /// be captured themselves.
    static BUSY: Cell<bool> = const { Cell::new(false) };
}

/// Called by the CUDA driver once, when it loads this library; 1 means success.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> c_int {
    match std::panic::catch_unwind(init) {
        Ok(Ok(())) => 1,
        Ok(Err(e)) => {
            eprintln!("kernelpair capture: not capturing: {e}");
            0
        }
        Err(_) => {
            eprintln!("kernelpair capture: not capturing: the library could not start");
            0
        }
    }
}

fn init() -> Result<(), String> {
    inject::configure()?;
    let mut sub: cupti::CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: `callback` has the signature CUPTI calls; `sub` is a valid out-pointer. The
    // bindings load libcupti on first use (a missing library panics, caught above).
    let rc = unsafe { cupti::cuptiSubscribe(&mut sub, Some(callback), std::ptr::null_mut()) };
    if rc != cupti::CUptiResult::CUPTI_SUCCESS {
        return Err(format!("cuptiSubscribe failed: {rc:?}"));
    }
    let enable = |cbid: u32| {
        // SAFETY: `sub` is the live subscriber made above; the ids are driver-API ids.
        unsafe {
            cupti::cuptiEnableCallback(
                1,
                sub,
                cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API,
                cbid,
            )
        }
    };
    for cbid in inject::LAUNCHES {
        let rc = enable(cbid as u32);
        if rc != cupti::CUptiResult::CUPTI_SUCCESS {
            return Err(format!("cuptiEnableCallback({cbid:?}) failed: {rc:?}"));
        }
    }
    for cbid in graph::GRAPH_CALLS {
        // A graph entry point this CUPTI does not know only costs the graphs that use it.
        let rc = enable(cbid as u32);
        if rc != cupti::CUptiResult::CUPTI_SUCCESS {
            eprintln!("kernelpair capture: graph launches through {cbid:?} are not seen: {rc:?}");
        }
    }
    extern "C" {
        fn atexit(f: extern "C" fn()) -> c_int;
    }
    // SAFETY: `write_counts` is a plain function that never unwinds (it catches panics).
    unsafe { atexit(inject::write_counts) };
    Ok(())
}

unsafe extern "C" fn callback(
    _userdata: *mut c_void,
    domain: cupti::CUpti_CallbackDomain,
    cbid: cupti::CUpti_CallbackId,
    cbdata: *const c_void,
) {
    if domain != cupti::CUpti_CallbackDomain::CUPTI_CB_DOMAIN_DRIVER_API || cbdata.is_null() {
        return;
    }
    if BUSY.with(|b| b.replace(true)) {
        return;
    }
    let _ = std::panic::catch_unwind(|| {
        // SAFETY: CUPTI passes a CUpti_CallbackData for driver-API callbacks.
        let data = unsafe { &*(cbdata as *const cupti::CUpti_CallbackData) };
        // SAFETY: `data` is what CUPTI gives for `cbid`.
        unsafe {
            if !graph::on_callback(cbid, data) {
                inject::on_launch(cbid, data);
            }
        }
    });
    BUSY.with(|b| b.set(false));
}
