//! kernelpair: builds datasets of slow/fast CUDA kernel pairs, checked to compile,
//! agree numerically and differ in speed.
//!
//! Stages (one module each): [`suite`] walks suites and pairs kernels, [`cuda`] isolates
//! kernels with tree-sitter, [`capture`] runs a tree's programs once and records their
//! launches (the injection library is in [`gpu::capture`]), [`synth`] asks an LLM for naive
//! variants, [`harness`] describes how a pair runs (no GPU), [`verify`] runs pairs on a GPU
//! through [`gpu`], [`selfcheck`] proves harnesses there (captured ones by replay),
//! [`export`] writes training files, and [`pipeline`] chains them resumably. Layers, lowest
//! first: evidence, record → cuda, dataset, gpu, harness → synth, suite → capture → verify →
//! export, selfcheck → pipeline → cli (`tests/module_graph.rs` fails on a cycle).

pub mod capture;
pub mod cli;
pub mod cuda;
pub mod dataset;
pub mod evidence;
pub mod exit;
pub mod export;
pub mod gpu;
pub mod harness;
pub mod jsonl;
pub mod par;
pub mod path_io;
pub mod pipeline;
pub mod progress;
pub mod record;
pub mod selfcheck;
pub mod suite;
pub mod synth;
pub mod tokens;
pub mod verify;

pub use record::{
    Diagnostic, Features, KernelUnit, LaunchSite, Line, Pair, PairRule, Param, Record, Status,
    Verification,
};
