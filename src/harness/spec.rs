//! The harness file as written (TOML), before validation. `super::parse` turns it into a
//! checked [`super::Harness`]; nothing outside this module sees these raw types.
//! An `Option` field needs no `#[serde(default)]`: serde reads a missing one as `None`.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A number or an expression text: `len = 1024` and `len = "n * n"` both parse.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Expr {
    Int(i64),
    Float(f64),
    Text(String),
}

impl Expr {
    pub fn text(&self) -> String {
        match self {
            Expr::Int(i) => i.to_string(),
            Expr::Float(f) => {
                let s = f.to_string();
                if s.contains(['.', 'e', 'E', 'i', 'N']) {
                    s
                } else {
                    format!("{s}.0")
                }
            }
            Expr::Text(t) => t.clone(),
        }
    }
}

/// `grid = "n / 256"`, `grid = 64` or `grid = ["n / 16", "m / 16"]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Dims {
    One(Expr),
    Many(Vec<Expr>),
}

/// Every key may be left out (`Default`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RawHarness {
    pub description: Option<String>,
    pub needs_host_loop: bool,
    pub host_loop_reason: Option<String>,
    /// Conditions every size set must satisfy (`"n % 64 == 0"` for a tiled kernel).
    pub require: Vec<String>,
    pub sizes: BTreeMap<String, i64>,
    pub derived: BTreeMap<String, Expr>,
    pub size_sets: Vec<RawSizeSet>,
    pub sparse: Vec<RawSparse>,
    pub args: Vec<RawArg>,
    pub constants: Vec<RawConst>,
    pub textures: Vec<RawTexture>,
    pub launch: Vec<RawLaunch>,
    pub variants: BTreeMap<String, RawVariant>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RawSizeSet {
    pub name: String,
    /// The size set a pair's verdict stands on (default: the one with the most bytes).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub primary: bool,
    #[serde(flatten)]
    pub values: BTreeMap<String, i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSparse {
    pub name: String,
    pub rows: Expr,
    pub cols: Expr,
    /// Mean non-zeros per row; row lengths vary from 1 to about twice this.
    pub nnz_per_row: Expr,
    /// JDS row padding (rows per `zcnt` entry), 32 by default.
    pub pad: Option<Expr>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawArg {
    pub name: String,
    /// Element type; absent only on a struct arg (`struct = [...]`).
    #[serde(rename = "type", default)]
    pub ty: String,
    pub len: Option<Expr>,
    /// A struct passed by value whose fields are these buffer args' device addresses, in
    /// order (8 bytes each): `sampleArrayStruct {float2 *data; float4 *loc;}`.
    #[serde(rename = "struct")]
    pub fields: Option<Vec<String>>,
    pub init: Option<RawInit>,
    pub role: Option<String>,
    pub value: Option<Expr>,
    pub atol: Option<f64>,
    pub rtol: Option<f64>,
    pub l2: Option<f64>,
    /// Per-element slack as a fraction of the largest |expected| (Tolerance::scale).
    pub scale_tol: Option<f64>,
    #[serde(default)]
    pub allow_degenerate: bool,
    /// Elements the comparison leaves out: every index `i` with `from <= i % period < to`
    /// (padding a kernel copies out without defining it).
    pub ignore: Option<RawIgnore>,
    /// The C parameter type this buffer stands for when it is not the element type
    /// (`float4`, `struct kValues`): the check then compares this text.
    pub c_type: Option<String>,
    /// Per variant (`slow`, `fast`), how its kernel lays the buffer out when that differs
    /// from the canonical layout the inputs are generated and compared in.
    #[serde(default)]
    pub layout: BTreeMap<String, RawLayout>,
    /// Compare only this part of an output (canonical layout); the rest is scratch.
    pub compare: Option<RawWindow>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RawLayout {
    /// `[offset, offset + rows*cols)` is row-major `rows x cols` canonically, transposed here.
    Transpose {
        rows: Expr,
        cols: Expr,
        offset: Option<Expr>,
    },
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawWindow {
    pub offset: Option<Expr>,
    pub len: Expr,
}

/// One group of consecutive fields of an array-of-structs record (`init = { kind = "fields" }`).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawField {
    /// How many consecutive elements of each record this group covers.
    pub count: Expr,
    /// Generate the values as this type and store its bits (same size as the buffer's
    /// element type): an int flag word kept in a float array.
    #[serde(rename = "type")]
    pub ty: Option<String>,
    pub init: RawInit,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawConst {
    pub name: String,
    #[serde(rename = "type")]
    pub ty: String,
    pub len: Expr,
    pub init: RawInit,
}

/// A periodic set of buffer indices left out of the comparison.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawIgnore {
    pub period: Expr,
    pub from: Expr,
    pub to: Expr,
}

/// A legacy texture reference (rewritten by extract onto the `kernelpair_legacy_texture`
/// shim) filled with a buffer arg's address and extent before the launches.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawTexture {
    pub name: String,
    /// The `[[args]]` buffer the texture reads (it need not be passed to any kernel).
    pub buffer: String,
    /// Elements per row (1D: the `tex1Dfetch` bound); the buffer's length by default.
    pub width: Option<Expr>,
    /// Rows (2D textures).
    pub height: Option<Expr>,
    /// Elements between row starts; `width` by default.
    pub pitch: Option<Expr>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum RawInit {
    Uniform {
        lo: Expr,
        hi: Expr,
    },
    Normal {
        mean: Expr,
        std: Expr,
        /// Optional clamps (a pixel value range, a valid index range).
        lo: Option<Expr>,
        hi: Option<Expr>,
    },
    IntRange {
        lo: Expr,
        hi: Expr,
    },
    Zeros,
    Constant {
        value: Expr,
    },
    CopyOf {
        arg: String,
    },
    Permutation,
    /// The poison pattern: the default (and only sensible) init of an `out` buffer.
    Poison,
    /// `len` evenly spaced values from `start` to `stop` inclusive (bin edges, coordinates).
    Linspace {
        start: Expr,
        stop: Expr,
    },
    /// Array-of-structs from struct-of-arrays: element `i * m + j` is element `i` of `args[j]`
    /// (a `__constant__ float4` table built from four float args).
    Interleave {
        args: Vec<String>,
    },
    /// One of `values` per element, drawn with `weights` (equal when absent).
    Choice {
        values: Vec<Expr>,
        weights: Option<Vec<f64>>,
    },
    /// Records of consecutive field groups, each with its own init: element `r*m + k`
    /// (m = the sum of the counts) belongs to the group covering `k`.
    Fields {
        fields: Vec<RawField>,
    },
    /// `start + step * ((i / every) % period)`: `every` repeats each value (k samples per
    /// bin), `period` wraps (the x coordinate of a row-major grid's bins).
    Iota {
        start: Option<Expr>,
        step: Option<Expr>,
        every: Option<Expr>,
        period: Option<Expr>,
    },
    /// Points binned into a 3D grid of cells (Parboil cutcp's atom bins): `dims` cells,
    /// x fastest, each `depth` slots of `(x, y, z, w)`; a cell's first `fill` slots hold
    /// points inside its cube of side `size` (from `origin`), w in `w` but never 0; the
    /// other slots are zeros.
    Cells {
        dims: Vec<Expr>,
        depth: Expr,
        size: Expr,
        origin: Option<Vec<Expr>>,
        fill: RawSpan,
        w: RawSpan,
    },
    Csr {
        matrix: String,
        part: String,
    },
    Jds {
        matrix: String,
        part: String,
    },
}

/// `{ lo, hi }` bounds of a `cells` init's fill counts (inclusive) or w values (half-open).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawSpan {
    pub lo: Expr,
    pub hi: Expr,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawVariant {
    #[serde(default)]
    pub launch: Vec<RawLaunch>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawLaunch {
    pub kernel: String,
    pub grid: Dims,
    pub block: Dims,
    pub shared_mem: Option<Expr>,
    pub repeat: Option<Expr>,
    /// Which harness args the kernel's parameters take, in order; all args when absent.
    /// A buffer may be passed at an element offset: `"kx + base"`.
    pub args: Option<Vec<String>>,
    /// Launch through `cuLaunchCooperativeKernel`: the kernel synchronizes its whole grid
    /// (`cooperative_groups::this_grid().sync()`), so every block must be resident at once.
    /// A plain launch of such a kernel fails ("unspecified launch failure").
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cooperative: bool,
}
