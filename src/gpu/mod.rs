//! Everything that touches CUDA: NVRTC compilation and (verify stage) the device runner.
//! The only module with `unsafe`.

pub mod nvrtc;
