//! Tree-sitter parsing of CUDA sources and isolation of each __global__ kernel into a self-contained unit.
//!
//! Two steps, so that a suite is parsed once and isolated many times: [`index_file`]
//! splits a file into top-level declarations (see [`lex`]), parses each with
//! tree-sitter-cuda (hand-written tree walks in `queries.rs`, specified by the queries in
//! `queries/*.scm`) and records the names each defines and
//! uses; [`isolate`] then computes, over a [`Scope`] of indexed files, the closure of
//! what one kernel needs and writes it out as a unit that NVRTC compiles alone.

pub(crate) mod builtins;
pub(crate) mod ceval;
pub(crate) mod cexpr;
pub mod compile_only;
pub mod ctype;
pub mod host;
pub mod host_files;
pub mod host_flow;
mod index;
pub use index::local_includes;
pub use index::DESIGNATED_INITIALIZER;
mod inspect;
mod isolate;
pub mod lex;
pub(crate) mod ppcond;
pub(crate) mod queries;
pub mod structs;
pub mod syntax;
pub mod texture;
mod tree;

use crate::record::{Diagnostic, LaunchSite, Param};
use std::collections::{BTreeMap, HashMap};

pub use inspect::{run_inspect, InspectArgs};
pub use isolate::{
    features_of, isolate, isolate_at, kernel_with_helpers, resolve_in, resolve_include, HelperCut,
};
pub use lex::normalized_tokens;

/// Everything isolation needs from one file. Built once by [`index_file`]; `Send + Sync`.
/// Cloning is cheap (a reference count): the scopes that reach a file share one index,
/// so memory grows with the tree, not with scopes × headers.
#[derive(Debug, Clone)]
pub struct FileIndex(std::sync::Arc<FileData>);

impl std::ops::Deref for FileIndex {
    type Target = FileData;
    fn deref(&self) -> &FileData {
        &self.0
    }
}

/// The contents of a [`FileIndex`].
#[derive(Debug)]
pub struct FileData {
    path: String,
    kernels: Vec<KernelInfo>,
    /// For each kernel, its item in `items`.
    kernel_items: Vec<usize>,
    items: Vec<index::Item>,
    by_name: HashMap<String, Vec<usize>>,
    launch_sites: Vec<LaunchSite>,
    diagnostics: Vec<Diagnostic>,
    includes: Vec<Include>,
    /// The `#if` branches each include sits in (parallel to `includes`).
    include_conds: Vec<Vec<index::CondBranch>>,
    /// Items that overload an operator.
    operators: Vec<usize>,
    /// Namespaces a file-scope `using namespace X;` opens (`X`).
    using_namespaces: Vec<String>,
}

/// A `__global__` kernel definition found in a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelInfo {
    pub name: String,
    /// 1-based line where the definition starts (its `template` line for templates).
    pub line: u32,
    pub params: Vec<Param>,
    /// Template parameters (`typename T`, `int N`), empty for ordinary kernels.
    pub template_params: Vec<String>,
}

/// An `#include` directive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Include {
    /// As written, without the quotes or angle brackets.
    pub target: String,
    /// `<…>` rather than `"…"`.
    pub system: bool,
    pub line: u32,
}

/// All indexed files one kernel may see (keys: suite-root-relative paths with `/`): its
/// benchmark's files and every file their `#include`s reach, so includes resolve in both
/// directions. `#include "x"` resolves like a compiler's: relative to the including file's
/// folder, then through `include_dirs` (the suite's `-I` folders, then the scope folder).
pub struct Scope<'a> {
    pub files: &'a BTreeMap<String, FileIndex>,
    /// Root-relative folders searched after the including file's own folder, in order.
    pub include_dirs: &'a [String],
}

impl<'a> Scope<'a> {
    /// A scope whose includes resolve relative to the including file only.
    pub fn new(files: &'a BTreeMap<String, FileIndex>) -> Scope<'a> {
        Scope {
            files,
            include_dirs: &[],
        }
    }
}

/// One kernel made self-contained: the body of a [`crate::record::KernelUnit`].
pub type IsolatedKernel = crate::record::UnitBody;

#[derive(Debug, thiserror::Error)]
pub enum CudaError {
    #[error("{file} is not among the indexed files of this scope")]
    FileNotInScope { file: String },
    #[error("no kernel named `{kernel}` in {file}; kernels there: {available}")]
    KernelNotFound {
        file: String,
        kernel: String,
        available: String,
    },
    #[error("kernel index {index} is out of range: {file} has {count} kernels")]
    KernelIndexOutOfRange {
        file: String,
        index: usize,
        count: usize,
    },
}

/// Parse once. Never fails: parse trouble becomes diagnostics on the index.
pub fn index_file(rel_path: &str, text: &str) -> FileIndex {
    index::index_file(rel_path, text)
}

impl FileIndex {
    pub fn path(&self) -> &str {
        &self.path
    }
    /// Every `__global__` definition (prototypes are not kernels), in file order.
    pub fn kernels(&self) -> &[KernelInfo] {
        &self.kernels
    }
    /// Host launch sites in this file (`path` is the file's).
    pub fn launch_sites(&self) -> &[LaunchSite] {
        &self.launch_sites
    }
    pub fn diagnostics(&self) -> &[Diagnostic] {
        &self.diagnostics
    }
    pub fn includes(&self) -> &[Include] {
        &self.includes
    }
}
