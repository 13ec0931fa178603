//! Everything that touches CUDA: NVRTC compilation, the compile cache and the driver
//! layer the verify stage runs pairs through, and capture's injection library. The only
//! module with `unsafe`.

pub mod cache;
pub mod capture;
pub mod driver;
pub mod nvrtc;
pub mod objects;

pub use driver::{probe, Gpu, Probe, Props};
