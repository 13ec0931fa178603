//! Capture's GPU side: what one captured launch holds ([`manifest`]), the content-addressed
//! blob store ([`store`]) and the injection library loaded into a real program (`entry`,
//! where the driver enters it; [`inject`], launches; `graph`, launches through CUDA graphs).
//! The runner that builds and runs programs, and replay, live in `crate::capture`.

mod entry;
mod graph;
pub mod inject;
pub mod manifest;
pub mod store;

pub use manifest::{AllocKind, CapturedAlloc, CapturedGlobal, CapturedParam, Manifest};
pub use store::BlobStore;
