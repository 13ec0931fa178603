//! Harness files: how to run a slow/fast pair — sizes, arguments and their inputs, launch
//! sequences — parsed from TOML, validated on load, resolved per size set and device, and
//! drafted from recorded launch sites.
//!
//! The GPU runner's entry points: [`locate`] a pair's file → [`load`]/[`parse`] →
//! [`Harness::check_against`] the pair's units → [`Harness::resolve`] per size set and
//! device → [`generate_inputs`]/[`generate_constants`] per seed (one [`HostBuffer`] per arg:
//! inputs filled, `out` buffers poisoned, scalars as bytes). A [`Launch`] binds args by
//! index (`args`) at element offsets (`offsets`). Agreement and speed checks live in
//! `verify::compare` and `verify::stats`. The format is described in docs/harness.md.

pub mod draft;
pub mod draft_value;
pub mod expr;
pub mod gen;
pub mod infer;
pub mod infer_asof;
pub mod infer_host;
pub mod infer_kernel;
pub mod infer_llm;
pub mod infer_template;
pub mod launches;
pub mod layout;
pub mod spec;
pub mod template;

mod locate;
mod model;
mod resolve;
mod validate;

pub(crate) use locate::resolve_alias;
pub use locate::{candidate_names, locate, prepare, prepare_with, Found};
pub use model::*;
pub(crate) use validate::is_ident;
pub use validate::{load, parse, to_json};

use crate::record::{KernelUnit, Pair};
use expr::{Num, Scope};
use serde::{Deserialize, Serialize};
use spec::{Dims, Expr, RawHarness, RawInit, RawLaunch, RawLayout};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use gen::{
    fill_expected, generate_constants, generate_inputs, generate_inputs_for, poison_pattern,
    HostBuffer,
};
pub use layout::{Layout, Layouts, Variant, Window};

#[cfg(test)]
pub(crate) mod tests;
