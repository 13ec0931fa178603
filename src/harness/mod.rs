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

pub mod complete;
pub mod draft;
pub mod expr;
pub mod gen;
pub mod infer;
pub mod infer_host;
pub mod infer_kernel;
pub mod infer_llm;
pub mod layout;
pub mod selfcheck;
pub mod selfcheck_sanitize;
pub mod spec;
pub mod template;

use crate::record::{KernelUnit, Pair};
use expr::{Num, Scope};
use serde::{Deserialize, Serialize};
use spec::{Dims, Expr, RawHarness, RawInit, RawLaunch, RawLayout};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

pub use gen::{
    generate_constants, generate_inputs, generate_inputs_for, poison_pattern, HostBuffer,
};
pub use layout::{Layout, Layouts, Variant, Window};

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{origin}: not a valid harness: {message}")]
    Toml { origin: String, message: String },
    /// A field is missing, malformed or inconsistent; `field` is a path like `args[2].len`.
    #[error("{origin}: {field}: {message}")]
    Field {
        origin: String,
        field: String,
        message: String,
    },
    /// An expression failed for one size set.
    #[error("{origin}: {field}: `{expr}` (size set {size_set}): {message}")]
    Expr {
        origin: String,
        field: String,
        expr: String,
        size_set: String,
        message: String,
    },
    /// The harness does not fit the kernel it is meant to run.
    #[error("{origin}: does not match kernel {kernel}: {message}")]
    Mismatch {
        origin: String,
        kernel: String,
        message: String,
    },
    #[error("{origin}: {message}")]
    Generate { origin: String, message: String },
}

/// Element type of a buffer or scalar.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ElemType {
    F32,
    F64,
    F16,
    BF16,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
}

impl ElemType {
    pub const ALL: [ElemType; 12] = [
        ElemType::F32,
        ElemType::F64,
        ElemType::F16,
        ElemType::BF16,
        ElemType::I8,
        ElemType::U8,
        ElemType::I16,
        ElemType::U16,
        ElemType::I32,
        ElemType::U32,
        ElemType::I64,
        ElemType::U64,
    ];

    pub fn size_of(self) -> usize {
        match self {
            ElemType::I8 | ElemType::U8 => 1,
            ElemType::F16 | ElemType::BF16 | ElemType::I16 | ElemType::U16 => 2,
            ElemType::F32 | ElemType::I32 | ElemType::U32 => 4,
            ElemType::F64 | ElemType::I64 | ElemType::U64 => 8,
        }
    }

    pub fn is_float(self) -> bool {
        matches!(
            self,
            ElemType::F32 | ElemType::F64 | ElemType::F16 | ElemType::BF16
        )
    }

    pub fn is_signed(self) -> bool {
        matches!(
            self,
            ElemType::I8 | ElemType::I16 | ElemType::I32 | ElemType::I64
        ) || self.is_float()
    }

    pub fn name(self) -> &'static str {
        match self {
            ElemType::F32 => "f32",
            ElemType::F64 => "f64",
            ElemType::F16 => "f16",
            ElemType::BF16 => "bf16",
            ElemType::I8 => "i8",
            ElemType::U8 => "u8",
            ElemType::I16 => "i16",
            ElemType::U16 => "u16",
            ElemType::I32 => "i32",
            ElemType::U32 => "u32",
            ElemType::I64 => "i64",
            ElemType::U64 => "u64",
        }
    }

    pub fn from_name(s: &str) -> Option<ElemType> {
        ElemType::ALL.into_iter().find(|e| e.name() == s)
    }

    /// The element type a C type stands for, ignoring `const`, `volatile`, `__restrict__`
    /// and pointer stars: `const float *` → F32, `unsigned int` → U32, `float4` → F32
    /// (vector types count in scalar elements). `None` for structs and unknown names.
    pub fn from_c_type(c: &str) -> Option<ElemType> {
        let base = c_base_type(c);
        let t = match base.as_str() {
            "float" | "float1" | "float2" | "float3" | "float4" => ElemType::F32,
            "double" | "double1" | "double2" | "double3" | "double4" => ElemType::F64,
            "half" | "__half" | "half2" | "__half2" => ElemType::F16,
            "__nv_bfloat16" | "nv_bfloat16" | "__nv_bfloat162" => ElemType::BF16,
            "char" | "signed char" | "int8_t" | "char1" | "char2" | "char4" => ElemType::I8,
            "unsigned char" | "uchar" | "uint8_t" | "uchar1" | "uchar2" | "uchar3" | "uchar4" => {
                ElemType::U8
            }
            "short" | "short int" | "signed short" | "int16_t" | "short2" => ElemType::I16,
            "unsigned short" | "ushort" | "uint16_t" | "unsigned short int" | "ushort2"
            | "ushort4" => ElemType::U16,
            "int" | "signed" | "signed int" | "int32_t" | "int1" | "int2" | "int3" | "int4" => {
                ElemType::I32
            }
            "unsigned" | "unsigned int" | "uint" | "uint32_t" | "uint1" | "uint2" | "uint3"
            | "uint4" => ElemType::U32,
            "long long" | "long long int" | "int64_t" | "long" | "long int" | "ptrdiff_t"
            | "longlong2" => ElemType::I64,
            "unsigned long long"
            | "unsigned long long int"
            | "uint64_t"
            | "size_t"
            | "unsigned long"
            | "unsigned long int" => ElemType::U64,
            _ => return None,
        };
        Some(t)
    }
}

/// A C type without qualifiers and pointer stars, single-spaced: `const float *__restrict__` → `float`.
pub fn c_base_type(c: &str) -> String {
    c.replace(['*', '&'], " ")
        .split_whitespace()
        .filter(|w| {
            !matches!(
                *w,
                "const" | "volatile" | "__restrict__" | "__restrict" | "restrict" | "struct"
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Whether a C parameter type is a pointer (`float *`, `float*`, `const int *__restrict__`).
pub fn c_is_pointer(c: &str) -> bool {
    c.contains('*') || c.contains('[')
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    In,
    Out,
    Inout,
}

impl Role {
    /// Whether the kernel's result is read back and compared.
    pub fn is_output(self) -> bool {
        matches!(self, Role::Out | Role::Inout)
    }
    /// Whether the buffer is filled from the seed before the launch (else poisoned).
    pub fn is_input(self) -> bool {
        matches!(self, Role::In | Role::Inout)
    }
}

/// Agreement thresholds for one output (see `verify::compare` for the defaults and why).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Absolute slack per element.
    pub atol: f64,
    /// Relative slack per element, times |expected|.
    pub rtol: f64,
    /// Bound on ‖actual − expected‖₂ / ‖expected‖₂ over the whole buffer.
    pub l2: f64,
    /// Absolute slack per element as a fraction of the largest |expected| in the buffer
    /// (normwise, as BLAS tests do): covers elements near zero from cancelling sums, whose
    /// rounding error follows the size of the terms, not of the result.
    #[serde(default)]
    pub scale: f64,
}

impl Tolerance {
    /// Defaults by element type. Integers compare exactly.
    ///
    /// An element passes when `|a − b| <= atol + scale·max|b| + rtol·|b|`; the buffer also
    /// needs `‖a − b‖₂ / ‖b‖₂ <= l2`.
    ///
    /// f32: rtol 1e-3, scale 3e-5, atol 1e-5, L2 1e-4. Measured (docs/harness.md): dot
    /// products of k uniform terms summed serially vs in 8 partial sums (a tiled kernel's
    /// order) differ by up to 2e-6·max|b| at k = 4000 and 4.1e-6·max|b| at k = 16000, while
    /// relative L2 stays near 1e-6. Per element, the difference follows the size of the
    /// terms, not of the result: where terms cancel, a result near zero differs by 2e-4 at
    /// k = 4000, so purely elementwise bounds reject correct pairs (1e-3/1e-5 failed 3 of
    /// 20000 rows at k = 4000, 1e-4/1e-4 2 of 4000 at k = 16000). The scale term admits
    /// those; rtol 1e-3 admits
    /// single-op differences (FMA contraction, reciprocal vs divide) on any element; the L2
    /// bound is what catches small systematic errors (a real bug moves elements by O(1)).
    /// f64: the same reasoning 2^29 times finer. f16/bf16: 10 and 7 mantissa bits.
    pub fn default_for(elem: ElemType) -> Tolerance {
        match elem {
            ElemType::F32 => Tolerance {
                atol: 1e-5,
                rtol: 1e-3,
                l2: 1e-4,
                scale: 3e-5,
            },
            ElemType::F64 => Tolerance {
                atol: 1e-12,
                rtol: 1e-9,
                l2: 1e-10,
                scale: 1e-13,
            },
            ElemType::F16 => Tolerance {
                atol: 1e-3,
                rtol: 1e-2,
                l2: 5e-3,
                scale: 5e-3,
            },
            ElemType::BF16 => Tolerance {
                atol: 1e-2,
                rtol: 5e-2,
                l2: 2e-2,
                scale: 2e-2,
            },
            _ => Tolerance {
                atol: 0.0,
                rtol: 0.0,
                l2: 0.0,
                scale: 0.0,
            },
        }
    }
}

/// Device properties expressions may use (`sm_count`, `max_threads_per_block`,
/// `warp_size`, `l2_bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeviceProps {
    pub sm_count: i64,
    pub max_threads_per_block: i64,
    pub warp_size: i64,
    pub l2_bytes: i64,
}

impl DeviceProps {
    /// The H100 SXM figures, for drafts and checks made without a GPU.
    pub fn h100() -> DeviceProps {
        DeviceProps {
            sm_count: 132,
            max_threads_per_block: 1024,
            warp_size: 32,
            l2_bytes: 50 * 1024 * 1024,
        }
    }
}

/// A named set of size values (all sizes, with `[sizes]` filling what the set leaves out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SizeSet {
    pub name: String,
    pub values: BTreeMap<String, i64>,
    /// `primary = true`: the verdict stands on this set (else on the one with the most bytes).
    #[serde(default)]
    pub primary: bool,
}

/// How a buffer is filled, with every expression evaluated.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Init {
    Uniform {
        lo: f64,
        hi: f64,
    },
    Normal {
        mean: f64,
        std: f64,
        /// Draws are clamped into `lo..=hi` where given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        lo: Option<f64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hi: Option<f64>,
    },
    /// Integers uniform in `lo..=hi`.
    IntRange {
        lo: i64,
        hi: i64,
    },
    Zeros,
    Constant {
        value: f64,
    },
    /// The same bytes as another (earlier or later) buffer arg of the same type and length.
    CopyOf {
        arg: String,
    },
    /// A random permutation of `0..len`.
    Permutation,
    /// The poison pattern ([`poison_pattern`]): what `out` buffers hold before a launch.
    Poison,
    /// `len` evenly spaced values from `start` to `stop` inclusive.
    Linspace {
        start: f64,
        stop: f64,
    },
    /// Element `i * m + j` is element `i` of buffer `args[j]` (args or constants, same type).
    Interleave {
        args: Vec<String>,
    },
    /// `start + step * ((i / every) % period)`: `start, start+step, …` by default; `every`
    /// repeats each value, `period` (when given) wraps.
    Iota {
        start: i64,
        step: i64,
        #[serde(default = "one_i64", skip_serializing_if = "is_one_i64")]
        every: i64,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        period: Option<i64>,
    },
    /// Each element one of `values`, drawn with `weights` (parallel, non-negative).
    Choice {
        values: Vec<f64>,
        weights: Vec<f64>,
    },
    /// Array-of-structs records: element `r·m + k` (m = the sum of the counts) is drawn
    /// from the init of the field group covering `k`.
    Fields {
        fields: Vec<Field>,
    },
    /// Points binned into a grid of cells ([`gen`] builds them; boxed: the largest init).
    Cells(Box<Cells>),
    /// One part of a generated CSR matrix (see [`SparseMatrix`]).
    Csr {
        matrix: String,
        part: CsrPart,
    },
    /// One part of a generated JDS matrix, Parboil's layout (see [`SparseMatrix`]).
    Jds {
        matrix: String,
        part: JdsPart,
    },
}

/// A `cells` init: `dims[0]·dims[1]·dims[2]` cells (cell `(k·dims[1] + j)·dims[0] + i`),
/// each `depth` slots of `(x, y, z, w)`. A cell holds a count drawn from `fill.lo..=fill.hi`
/// of points uniform in its cube (`origin + (i, j, k)·size`, side `size`), first, with `w`
/// uniform in `[w.lo, w.hi)` and never 0 (w = 0 ends a bin); its other slots are all zeros.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cells {
    pub dims: [usize; 3],
    pub depth: usize,
    pub size: f64,
    pub origin: [f64; 3],
    pub fill: Span<i64>,
    pub w: Span<f64>,
}

/// `lo` and `hi` of a range: inclusive for counts, half-open for values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Span<T> {
    pub lo: T,
    pub hi: T,
}

fn one_i64() -> i64 {
    1
}

fn is_one_i64(v: &i64) -> bool {
    *v == 1
}

/// One group of consecutive fields of a record ([`Init::Fields`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Field {
    pub count: usize,
    /// Values are generated as this type and stored as its bits (same size as the
    /// buffer's element type), as C code keeps an int flag word in a float array.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bits: Option<ElemType>,
    pub init: Init,
}

impl Field {
    /// The type values are generated in.
    pub fn value_type(&self, buffer: ElemType) -> ElemType {
        self.bits.unwrap_or(buffer)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CsrPart {
    /// `rows + 1` offsets.
    RowPtr,
    /// `nnz` column indices.
    ColIdx,
    /// `nnz` values.
    Values,
}

/// Parboil's JDS layout: rows sorted by length (descending) through `perm`; diagonal `k`
/// starts at `ptr[k]` and holds one entry per sorted row of every `pad`-row group whose
/// longest row is longer than `k`; `zcnt[g]` is group `g`'s longest row; padding entries
/// have value 0 and column 0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JdsPart {
    /// `rows` entries: sorted position → original row.
    Perm,
    /// `depth` diagonal start offsets.
    Ptr,
    /// `ceil(rows / pad)` longest-row counts.
    Zcnt,
    /// `jds_len` column indices.
    ColIdx,
    /// `jds_len` values.
    Values,
}

/// A sparse matrix shape, resolved for one size set. Its structure depends only on the
/// shape (fixed seed), so lengths like `A_nnz` are known to expressions; values follow the seed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SparseMatrix {
    pub name: String,
    pub rows: usize,
    pub cols: usize,
    pub nnz_per_row: usize,
    pub pad: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ResolvedArg {
    Buffer {
        name: String,
        elem: ElemType,
        len: usize,
        init: Init,
        role: Role,
        tol: Tolerance,
        allow_degenerate: bool,
        /// Per-variant layouts; inputs are generated and outputs compared canonically.
        #[serde(default, skip_serializing_if = "Layouts::is_empty")]
        layout: Layouts,
        /// The compared part of an output; all of it when absent.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        compare: Option<Window>,
    },
    Scalar {
        name: String,
        value: ScalarValue,
    },
    /// A struct passed by value: the device addresses of these buffer args (indices into
    /// [`Resolved::args`]), 8 bytes each, in order, as the C struct of pointers lays them out.
    Struct {
        name: String,
        fields: Vec<usize>,
    },
}

impl ResolvedArg {
    pub fn name(&self) -> &str {
        match self {
            ResolvedArg::Buffer { name, .. }
            | ResolvedArg::Scalar { name, .. }
            | ResolvedArg::Struct { name, .. } => name,
        }
    }
}

/// The bytes of a struct arg: each field's device address, little-endian, in order (a C
/// struct of pointers has no padding). `addrs` holds at most [`MAX_STRUCT_FIELDS`].
pub fn struct_arg_bytes(addrs: &[u64]) -> Vec<u8> {
    addrs.iter().flat_map(|a| a.to_le_bytes()).collect()
}

/// A scalar kernel argument's value, typed as the kernel takes it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "lowercase")]
pub enum ScalarValue {
    F32(f32),
    F64(f64),
    /// IEEE half, as its bit pattern.
    F16(u16),
    /// bfloat16, as its bit pattern.
    BF16(u16),
    I8(i8),
    U8(u8),
    I16(i16),
    U16(u16),
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
}

impl ScalarValue {
    pub fn elem(&self) -> ElemType {
        match self {
            ScalarValue::F32(_) => ElemType::F32,
            ScalarValue::F64(_) => ElemType::F64,
            ScalarValue::F16(_) => ElemType::F16,
            ScalarValue::BF16(_) => ElemType::BF16,
            ScalarValue::I8(_) => ElemType::I8,
            ScalarValue::U8(_) => ElemType::U8,
            ScalarValue::I16(_) => ElemType::I16,
            ScalarValue::U16(_) => ElemType::U16,
            ScalarValue::I32(_) => ElemType::I32,
            ScalarValue::U32(_) => ElemType::U32,
            ScalarValue::I64(_) => ElemType::I64,
            ScalarValue::U64(_) => ElemType::U64,
        }
    }

    /// Little-endian bytes, as the kernel parameter buffer holds them.
    pub fn to_le_bytes(&self) -> Vec<u8> {
        match *self {
            ScalarValue::F32(v) => v.to_le_bytes().to_vec(),
            ScalarValue::F64(v) => v.to_le_bytes().to_vec(),
            ScalarValue::F16(v) | ScalarValue::BF16(v) => v.to_le_bytes().to_vec(),
            ScalarValue::I8(v) => v.to_le_bytes().to_vec(),
            ScalarValue::U8(v) => v.to_le_bytes().to_vec(),
            ScalarValue::I16(v) => v.to_le_bytes().to_vec(),
            ScalarValue::U16(v) => v.to_le_bytes().to_vec(),
            ScalarValue::I32(v) => v.to_le_bytes().to_vec(),
            ScalarValue::U32(v) => v.to_le_bytes().to_vec(),
            ScalarValue::I64(v) => v.to_le_bytes().to_vec(),
            ScalarValue::U64(v) => v.to_le_bytes().to_vec(),
        }
    }

    /// Convert a number to `elem`, failing when it does not fit (or is not integral for an int type).
    pub fn from_num(elem: ElemType, n: Num) -> Result<ScalarValue, String> {
        let f = n.as_f64();
        let int = || -> Result<i128, String> {
            match n {
                Num::Int(i) => Ok(i as i128),
                Num::Float(f) if f.fract() == 0.0 && f.is_finite() => Ok(f as i128),
                Num::Float(f) => Err(format!("{f} is not an integer")),
            }
        };
        macro_rules! fit {
            ($t:ty, $v:ident) => {{
                let i = int()?;
                <$t>::try_from(i)
                    .map(ScalarValue::$v)
                    .map_err(|_| format!("{i} does not fit in {}", elem.name()))
            }};
        }
        match elem {
            ElemType::F32 => Ok(ScalarValue::F32(f as f32)),
            ElemType::F64 => Ok(ScalarValue::F64(f)),
            ElemType::F16 => Ok(ScalarValue::F16(half::f16::from_f64(f).to_bits())),
            ElemType::BF16 => Ok(ScalarValue::BF16(half::bf16::from_f64(f).to_bits())),
            ElemType::I8 => fit!(i8, I8),
            ElemType::U8 => fit!(u8, U8),
            ElemType::I16 => fit!(i16, I16),
            ElemType::U16 => fit!(u16, U16),
            ElemType::I32 => fit!(i32, I32),
            ElemType::U32 => fit!(u32, U32),
            ElemType::I64 => fit!(i64, I64),
            ElemType::U64 => fit!(u64, U64),
        }
    }
}

/// A `__constant__` symbol to upload by name before the launches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedConst {
    pub name: String,
    pub elem: ElemType,
    pub len: usize,
    pub init: Init,
}

/// Indices `i` of buffer `arg` with `from <= i % period < to` are not compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ignore {
    pub arg: usize,
    pub period: usize,
    pub from: usize,
    pub to: usize,
}

impl Ignore {
    pub fn contains(&self, i: usize) -> bool {
        (self.from..self.to).contains(&(i % self.period))
    }
}

/// A shimmed legacy texture reference to fill before the launches: the device struct
/// `{ptr, width, height, pitch}` (sizes in elements) of `kernelpair_legacy_texture`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolvedTexture {
    pub name: String,
    /// Index into [`Resolved::args`] of the buffer it reads.
    pub buffer: usize,
    pub width: i64,
    pub height: i64,
    pub pitch: i64,
}

impl ResolvedTexture {
    /// The shim struct's bytes: `const T*` (8), then three `int`s, padded to 24.
    pub fn struct_bytes(&self, data_ptr: u64) -> Vec<u8> {
        let mut b = Vec::with_capacity(24);
        b.extend_from_slice(&data_ptr.to_le_bytes());
        for v in [self.width, self.height, self.pitch] {
            b.extend_from_slice(&(v as i32).to_le_bytes());
        }
        b.resize(24, 0);
        b
    }
}

/// One kernel launch with every expression evaluated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Launch {
    /// Symbol to look up in the module: the plain name, or a template name expression
    /// with its `{…}` parts evaluated (`reduce<256>`).
    pub kernel: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory in bytes.
    pub shared_mem: u32,
    /// How many times to launch in a row (≥ 1).
    pub repeat: u32,
    /// Indices into [`Resolved::args`], one per kernel parameter, in parameter order.
    pub args: Vec<usize>,
    /// Element offset at which each bound buffer is passed (`"kx + base"`), parallel to
    /// `args`; 0 for whole buffers and for scalars.
    #[serde(default)]
    pub offsets: Vec<usize>,
}

/// A harness made concrete for one size set on one device.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Resolved {
    /// Harness origin (file path), for messages.
    pub origin: String,
    pub size_set: String,
    /// Sizes, derived values and sparse figures (`A_nnz` …) this set resolved to.
    pub values: BTreeMap<String, i64>,
    pub args: Vec<ResolvedArg>,
    pub constants: Vec<ResolvedConst>,
    #[serde(default)]
    pub textures: Vec<ResolvedTexture>,
    /// Output indices left out of the comparison, per buffer arg.
    #[serde(default)]
    pub ignores: Vec<Ignore>,
    pub sparse: Vec<SparseMatrix>,
    pub slow: Vec<Launch>,
    pub fast: Vec<Launch>,
}

impl Resolved {
    /// Indices of the buffer args compared after a run (role `out` or `inout`).
    pub fn outputs(&self) -> Vec<usize> {
        self.args
            .iter()
            .enumerate()
            .filter(|(_, a)| matches!(a, ResolvedArg::Buffer { role, .. } if role.is_output()))
            .map(|(i, _)| i)
            .collect()
    }
}

/// A launch as written, kept for resolution per size set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaunchSpec {
    pub kernel: String,
    pub grid: Vec<String>,
    pub block: Vec<String>,
    pub shared_mem: String,
    pub repeat: String,
    pub args: Vec<usize>,
    /// Offset expressions parallel to `args` ("0" when none).
    pub offsets: Vec<String>,
}

/// A buffer or scalar argument as written.
// A harness holds a handful of args, parsed once: the size of the larger variant is
// immaterial, and boxing its fields would only add indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum ArgSpec {
    Buffer {
        name: String,
        elem: ElemType,
        len: String,
        init: RawInitText,
        role: Role,
        tol: Tolerance,
        allow_degenerate: bool,
        c_type: Option<String>,
        /// Per-variant layouts as written (`rows`, `cols`, `offset` expressions).
        layout: Vec<(Variant, LayoutSpec)>,
        /// Compare window as written: (offset, len) expressions.
        compare: Option<(String, String)>,
        /// `[period, from, to]` expressions: indices left out of the comparison.
        ignore: Option<[String; 3]>,
    },
    Scalar {
        name: String,
        elem: ElemType,
        value: String,
    },
    /// A struct passed by value holding buffer args' device addresses, in order.
    Struct {
        name: String,
        /// Names of buffer args (checked at parse).
        fields: Vec<String>,
        /// The parameter's C type (`sampleArrayStruct`).
        c_type: String,
    },
}

/// A struct arg holds at most this many 8-byte addresses: 16 bytes, what the launcher's
/// per-argument storage holds.
pub const MAX_STRUCT_FIELDS: usize = 2;

impl ArgSpec {
    pub fn name(&self) -> &str {
        match self {
            ArgSpec::Buffer { name, .. }
            | ArgSpec::Scalar { name, .. }
            | ArgSpec::Struct { name, .. } => name,
        }
    }
}

/// A layout as written, kept for resolution per size set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub enum LayoutSpec {
    Transpose {
        rows: String,
        cols: String,
        offset: String,
    },
}

/// An init distribution with its parameters still as expression text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RawInitText(#[serde(skip)] RawInit);

impl PartialEq for RawInit {
    fn eq(&self, other: &Self) -> bool {
        serde_json::to_value(self).ok() == serde_json::to_value(other).ok()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConstSpec {
    pub name: String,
    pub elem: ElemType,
    pub len: String,
    init: RawInitText,
}

/// A `[[textures]]` entry as written.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TextureSpec {
    pub name: String,
    /// Index into [`Harness::args`] (always a buffer).
    pub buffer: usize,
    pub width: Option<String>,
    pub height: Option<String>,
    pub pitch: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SparseSpec {
    pub name: String,
    pub rows: String,
    pub cols: String,
    pub nnz_per_row: String,
    pub pad: String,
}

/// A parsed and validated harness.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Harness {
    /// Where it came from (a path or a label), named in every error.
    pub origin: String,
    pub description: Option<String>,
    /// `Some(reason)` when the pair's host code is a data-dependent loop this format cannot express.
    pub needs_host_loop: Option<String>,
    pub require: Vec<String>,
    size_sets: Vec<SizeSet>,
    derived: Vec<(String, String)>,
    pub sparse: Vec<SparseSpec>,
    pub args: Vec<ArgSpec>,
    pub constants: Vec<ConstSpec>,
    pub textures: Vec<TextureSpec>,
    pub slow: Vec<LaunchSpec>,
    pub fast: Vec<LaunchSpec>,
    /// Launch sequences by kernel name (`[[variants.reduce3.launch]]`): one harness for
    /// every member of a progression; [`Harness::for_pair`] picks a pair's two.
    pub by_kernel: BTreeMap<String, Vec<LaunchSpec>>,
}

/// Read and validate a harness file.
pub fn load(path: &Path) -> Result<Harness, HarnessError> {
    let text = std::fs::read_to_string(path).map_err(|source| HarnessError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    parse(&text, &path.display().to_string())
}

/// Parse and validate harness TOML; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Harness, HarnessError> {
    let raw: RawHarness = toml::from_str(text).map_err(|e| HarnessError::Toml {
        origin: origin.to_string(),
        message: e.to_string(),
    })?;
    build(raw, origin)
}

/// Parse TOML into the JSON value the schema describes (for schema checks and tooling).
pub fn to_json(text: &str, origin: &str) -> Result<serde_json::Value, HarnessError> {
    let v: toml::Value = toml::from_str(text).map_err(|e| HarnessError::Toml {
        origin: origin.to_string(),
        message: e.to_string(),
    })?;
    serde_json::to_value(v).map_err(|e| HarnessError::Toml {
        origin: origin.to_string(),
        message: e.to_string(),
    })
}

pub(crate) fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

const DEVICE_VARS: [&str; 4] = ["sm_count", "max_threads_per_block", "warp_size", "l2_bytes"];

fn build(raw: RawHarness, origin: &str) -> Result<Harness, HarnessError> {
    let field = |f: &str, m: String| HarnessError::Field {
        origin: origin.to_string(),
        field: f.to_string(),
        message: m,
    };
    for name in raw.sizes.keys().chain(raw.derived.keys()) {
        if !is_ident(name) {
            return Err(field("sizes", format!("{name:?} is not an identifier")));
        }
        if DEVICE_VARS.contains(&name.as_str()) {
            return Err(field(
                "sizes",
                format!("{name:?} is a device property name and cannot be a size"),
            ));
        }
    }
    if let Some(dup) = raw.derived.keys().find(|k| raw.sizes.contains_key(*k)) {
        return Err(field(
            "derived",
            format!("{dup:?} is both a size and a derived value"),
        ));
    }

    // Size sets: [sizes] is the base; each set overrides some of it.
    let mut size_sets = Vec::new();
    if raw.size_sets.is_empty() {
        if raw.sizes.is_empty() && !raw.needs_host_loop {
            return Err(field("sizes", "no sizes and no size_sets".into()));
        }
        size_sets.push(SizeSet {
            name: "default".into(),
            values: raw.sizes.clone(),
            primary: false,
        });
    }
    if raw.size_sets.iter().filter(|s| s.primary).count() > 1 {
        return Err(field(
            "size_sets",
            "more than one size set says primary = true".into(),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, s) in raw.size_sets.iter().enumerate() {
        let f = format!("size_sets[{i}]");
        if !seen.insert(s.name.clone()) {
            return Err(field(&f, format!("duplicate size set name {:?}", s.name)));
        }
        let mut values = raw.sizes.clone();
        for (k, v) in &s.values {
            if !raw.sizes.contains_key(k) {
                return Err(field(
                    &format!("{f}.{k}"),
                    format!(
                        "size set {:?} sets {k:?}, which [sizes] does not declare",
                        s.name
                    ),
                ));
            }
            values.insert(k.clone(), *v);
        }
        size_sets.push(SizeSet {
            name: s.name.clone(),
            values,
            primary: s.primary,
        });
    }

    // Args.
    let mut names = BTreeSet::new();
    let mut args = Vec::new();
    for (i, a) in raw.args.iter().enumerate() {
        let f = format!("args[{i}]");
        if !is_ident(&a.name) {
            return Err(field(
                &format!("{f}.name"),
                format!("{:?} is not an identifier", a.name),
            ));
        }
        if !names.insert(a.name.clone()) {
            return Err(field(
                &format!("{f}.name"),
                format!("duplicate arg name {:?}", a.name),
            ));
        }
        if let Some(members) = &a.fields {
            let mixed = [
                ("type", !a.ty.is_empty()),
                ("len", a.len.is_some()),
                ("value", a.value.is_some()),
                ("init", a.init.is_some()),
                ("role", a.role.is_some()),
                ("layout", !a.layout.is_empty()),
                ("compare", a.compare.is_some()),
                ("ignore", a.ignore.is_some()),
                (
                    "a tolerance",
                    a.atol.is_some() || a.rtol.is_some() || a.l2.is_some() || a.scale_tol.is_some(),
                ),
                ("allow_degenerate", a.allow_degenerate),
            ];
            if let Some((k, _)) = mixed.iter().find(|(_, set)| *set) {
                return Err(field(
                    &f,
                    format!(
                        "struct arg {:?} (it has `struct`) takes only name, struct and c_type, not {k}",
                        a.name
                    ),
                ));
            }
            if members.is_empty() || members.len() > MAX_STRUCT_FIELDS {
                return Err(field(
                    &format!("{f}.struct"),
                    format!(
                        "a struct arg packs 1 to {MAX_STRUCT_FIELDS} buffer addresses (8 bytes each), not {}",
                        members.len()
                    ),
                ));
            }
            let Some(c_type) = a.c_type.clone() else {
                return Err(field(
                    &format!("{f}.c_type"),
                    format!(
                        "struct arg {:?} needs c_type: the struct's type as the kernel parameter names it",
                        a.name
                    ),
                ));
            };
            args.push(ArgSpec::Struct {
                name: a.name.clone(),
                fields: members.clone(),
                c_type,
            });
            continue;
        }
        let elem = ElemType::from_name(&a.ty).ok_or_else(|| {
            field(
                &format!("{f}.type"),
                format!(
                    "unknown element type {:?} (one of {})",
                    a.ty,
                    ElemType::ALL.map(|e| e.name()).join(", ")
                ),
            )
        })?;
        match (&a.len, &a.value) {
            (Some(len), None) => {
                let role = match a.role.as_deref() {
                    Some("in") => Role::In,
                    Some("out") => Role::Out,
                    Some("inout") => Role::Inout,
                    Some(r) => {
                        return Err(field(
                            &format!("{f}.role"),
                            format!("{r:?} is not one of in, out, inout"),
                        ))
                    }
                    None => {
                        return Err(field(
                            &format!("{f}.role"),
                            format!("buffer {:?} needs a role (in, out, inout)", a.name),
                        ))
                    }
                };
                // An `out` buffer is poisoned before each run, so it needs no init.
                let init = match (&a.init, role) {
                    (Some(i), _) => i.clone(),
                    (None, Role::Out) => RawInit::Poison,
                    (None, _) => {
                        return Err(field(
                            &format!("{f}.init"),
                            format!(
                                "buffer {:?} is read by the kernel and needs an init",
                                a.name
                            ),
                        ))
                    }
                };
                let mut tol = Tolerance::default_for(elem);
                for (v, slot, n) in [
                    (a.atol, &mut tol.atol, "atol"),
                    (a.rtol, &mut tol.rtol, "rtol"),
                    (a.l2, &mut tol.l2, "l2"),
                    (a.scale_tol, &mut tol.scale, "scale_tol"),
                ] {
                    if let Some(v) = v {
                        if !(v >= 0.0 && v.is_finite()) {
                            return Err(field(
                                &format!("{f}.{n}"),
                                format!("{v} is not a finite non-negative number"),
                            ));
                        }
                        *slot = v;
                    }
                }
                let mut layout = Vec::new();
                for (k, l) in &a.layout {
                    let v = Variant::from_name(k).ok_or_else(|| {
                        field(
                            &format!("{f}.layout.{k}"),
                            "layouts are per variant: `slow` or `fast`".into(),
                        )
                    })?;
                    let RawLayout::Transpose { rows, cols, offset } = l;
                    layout.push((
                        v,
                        LayoutSpec::Transpose {
                            rows: rows.text(),
                            cols: cols.text(),
                            offset: offset.as_ref().map(Expr::text).unwrap_or("0".into()),
                        },
                    ));
                }
                if layout.len() == 2 && layout[0].1 == layout[1].1 {
                    return Err(field(
                        &format!("{f}.layout"),
                        "slow and fast have the same layout: that is the canonical one, give neither".into(),
                    ));
                }
                let compare = match &a.compare {
                    Some(_) if !role.is_output() => {
                        return Err(field(
                            &format!("{f}.compare"),
                            format!("{:?} is an input (role in): nothing to compare", a.name),
                        ))
                    }
                    Some(w) => Some((
                        w.offset.as_ref().map(Expr::text).unwrap_or("0".into()),
                        w.len.text(),
                    )),
                    None => None,
                };
                args.push(ArgSpec::Buffer {
                    name: a.name.clone(),
                    elem,
                    len: len.text(),
                    init: RawInitText(init),
                    role,
                    tol,
                    allow_degenerate: a.allow_degenerate,
                    c_type: a.c_type.clone(),
                    layout,
                    compare,
                    ignore: a
                        .ignore
                        .as_ref()
                        .map(|g| [g.period.text(), g.from.text(), g.to.text()]),
                });
            }
            (None, Some(value)) => {
                if a.init.is_some() || a.role.is_some() {
                    return Err(field(
                        &f,
                        format!("scalar {:?} (it has `value`) takes no init or role", a.name),
                    ));
                }
                if !a.layout.is_empty() || a.compare.is_some() {
                    return Err(field(
                        &f,
                        format!(
                            "scalar {:?} (it has `value`) takes no layout or compare window",
                            a.name
                        ),
                    ));
                }
                args.push(ArgSpec::Scalar {
                    name: a.name.clone(),
                    elem,
                    value: value.text(),
                });
            }
            (Some(_), Some(_)) => {
                return Err(field(
                    &f,
                    format!("{:?} has both `len` (buffer) and `value` (scalar)", a.name),
                ))
            }
            (None, None) => {
                return Err(field(
                    &f,
                    format!("{:?} needs `len` (a buffer) or `value` (a scalar)", a.name),
                ))
            }
        }
    }
    let arg_index = |n: &str| args.iter().position(|a| a.name() == n);
    // A struct's fields are buffers, declared before or after it.
    for (i, a) in args.iter().enumerate() {
        if let ArgSpec::Struct { name, fields, .. } = a {
            for (k, m) in fields.iter().enumerate() {
                match args.iter().find(|x| x.name() == m) {
                    Some(ArgSpec::Buffer { .. }) => {}
                    Some(_) => {
                        return Err(field(
                            &format!("args[{i}].struct[{k}]"),
                            format!("struct {name:?}: {m:?} is not a buffer arg (it has no `len`)"),
                        ))
                    }
                    None => {
                        return Err(field(
                            &format!("args[{i}].struct[{k}]"),
                            format!("struct {name:?}: no arg is named {m:?}"),
                        ))
                    }
                }
            }
        }
    }

    // Inits that name other things.
    let sparse_names: BTreeSet<&str> = raw.sparse.iter().map(|s| s.name.as_str()).collect();
    let check_init = |f: &str, init: &RawInit, elem: ElemType| -> Result<(), HarnessError> {
        match init {
            RawInit::CopyOf { arg } => match args.iter().find(|a| a.name() == arg) {
                Some(ArgSpec::Buffer { elem: e, .. }) if *e == elem => Ok(()),
                Some(ArgSpec::Buffer { elem: e, .. }) => Err(field(
                    f,
                    format!(
                        "copy_of {arg:?}: element types differ ({} vs {})",
                        e.name(),
                        elem.name()
                    ),
                )),
                _ => Err(field(f, format!("copy_of names no buffer arg {arg:?}"))),
            },
            RawInit::Csr { matrix, part } | RawInit::Jds { matrix, part } => {
                if !sparse_names.contains(matrix.as_str()) {
                    return Err(field(
                        f,
                        format!("matrix {matrix:?} is not declared in [[sparse]]"),
                    ));
                }
                let csr = matches!(init, RawInit::Csr { .. });
                let (is_index, known) = if csr {
                    match parse_csr_part(part) {
                        Some(p) => (p != CsrPart::Values, true),
                        None => (false, false),
                    }
                } else {
                    match parse_jds_part(part) {
                        Some(p) => (p != JdsPart::Values, true),
                        None => (false, false),
                    }
                };
                if !known {
                    return Err(field(
                        f,
                        format!(
                            "unknown {} part {part:?} (one of {})",
                            if csr { "csr" } else { "jds" },
                            if csr {
                                "row_ptr, col_idx, values"
                            } else {
                                "perm, ptr, zcnt, col_idx, values"
                            }
                        ),
                    ));
                }
                if is_index && elem.is_float() {
                    return Err(field(
                        f,
                        format!("part {part:?} holds indices; give it an integer type"),
                    ));
                }
                Ok(())
            }
            RawInit::Interleave { args: list } => {
                if list.is_empty() {
                    return Err(field(f, "interleave needs at least one arg".into()));
                }
                for a in list {
                    match args.iter().find(|x| x.name() == a) {
                        Some(ArgSpec::Buffer { elem: e, .. }) if *e == elem => {}
                        Some(ArgSpec::Buffer { elem: e, .. }) => {
                            return Err(field(
                                f,
                                format!(
                                    "interleave {a:?}: element types differ ({} vs {})",
                                    e.name(),
                                    elem.name()
                                ),
                            ))
                        }
                        _ => return Err(field(f, format!("interleave names no buffer arg {a:?}"))),
                    }
                }
                Ok(())
            }
            RawInit::Cells { dims, origin, .. } => {
                if dims.len() != 3 {
                    return Err(field(
                        &format!("{f}.dims"),
                        format!("cells needs 3 dims (x, y, z), not {}", dims.len()),
                    ));
                }
                if let Some(o) = origin.as_ref().filter(|o| o.len() != 3) {
                    return Err(field(
                        &format!("{f}.origin"),
                        format!("cells needs a 3D origin [x, y, z], not {} values", o.len()),
                    ));
                }
                Ok(())
            }
            RawInit::Permutation if elem.is_float() => {
                Err(field(f, "a permutation needs an integer type".into()))
            }
            RawInit::Choice { values, weights } => {
                check_choice(values, weights.as_deref()).map_err(|m| field(f, m))
            }
            RawInit::Fields { fields } => {
                if fields.is_empty() {
                    return Err(field(f, "fields needs at least one field group".into()));
                }
                for (k, fg) in fields.iter().enumerate() {
                    let ff = format!("{f}.fields[{k}]");
                    let ty = match &fg.ty {
                        None => elem,
                        Some(t) => {
                            let t = ElemType::from_name(t).ok_or_else(|| {
                                field(&format!("{ff}.type"), format!("unknown element type {t:?}"))
                            })?;
                            if t.size_of() != elem.size_of() {
                                return Err(field(
                                    &format!("{ff}.type"),
                                    format!(
                                        "{} is {} bytes, the buffer's {} is {}: the bits must fill one element",
                                        t.name(),
                                        t.size_of(),
                                        elem.name(),
                                        elem.size_of()
                                    ),
                                ));
                            }
                            t
                        }
                    };
                    match &fg.init {
                        RawInit::Uniform { .. }
                        | RawInit::Normal { .. }
                        | RawInit::IntRange { .. }
                        | RawInit::Constant { .. }
                        | RawInit::Zeros => {}
                        RawInit::Choice { values, weights } => {
                            check_choice(values, weights.as_deref())
                                .map_err(|m| field(&format!("{ff}.init"), m))?
                        }
                        other => {
                            return Err(field(
                                &format!("{ff}.init"),
                                format!(
                                    "a field takes an elementwise init (uniform, normal, int_range, constant, zeros, choice), not {}",
                                    serde_json::to_value(other)
                                        .ok()
                                        .and_then(|v| v["kind"].as_str().map(str::to_string))
                                        .unwrap_or_default()
                                ),
                            ))
                        }
                    }
                    if matches!(fg.init, RawInit::IntRange { .. }) && ty.is_float() {
                        return Err(field(
                            &format!("{ff}.init"),
                            "int_range in a float field: give the field an integer `type`".into(),
                        ));
                    }
                }
                Ok(())
            }
            _ => Ok(()),
        }
    };
    for (i, a) in args.iter().enumerate() {
        if let ArgSpec::Buffer {
            init, elem, role, ..
        } = a
        {
            let f = format!("args[{i}].init");
            check_init(&f, &init.0, *elem)?;
            if let RawInit::CopyOf { arg } = &init.0 {
                if arg == a.name() {
                    return Err(field(&f, "copy_of names the arg itself".into()));
                }
            }
            // An `out` buffer is poisoned, not filled, so a kernel that accumulates into
            // it must say so by being `inout`.
            if *role == Role::Out && matches!(init.0, RawInit::Zeros) {
                return Err(field(
                    &f,
                    format!(
                        "{:?} starts as zeros, so the kernel reads it: make its role inout",
                        a.name()
                    ),
                ));
            }
        }
    }

    let mut constants = Vec::new();
    for (i, c) in raw.constants.iter().enumerate() {
        let f = format!("constants[{i}]");
        if !is_ident(&c.name) {
            return Err(field(
                &format!("{f}.name"),
                format!("{:?} is not an identifier", c.name),
            ));
        }
        let elem = ElemType::from_name(&c.ty).ok_or_else(|| {
            field(
                &format!("{f}.type"),
                format!("unknown element type {:?}", c.ty),
            )
        })?;
        if matches!(c.init, RawInit::CopyOf { .. }) {
            return Err(field(
                &format!("{f}.init"),
                "copy_of is not supported for constants".into(),
            ));
        }
        check_init(&format!("{f}.init"), &c.init, elem)?;
        constants.push(ConstSpec {
            name: c.name.clone(),
            elem,
            len: c.len.text(),
            init: RawInitText(c.init.clone()),
        });
    }

    let mut textures: Vec<TextureSpec> = Vec::new();
    for (i, t) in raw.textures.iter().enumerate() {
        let f = format!("textures[{i}]");
        if !is_ident(&t.name) || textures.iter().any(|o| o.name == t.name) {
            return Err(field(
                &format!("{f}.name"),
                format!("{:?} is not a new identifier", t.name),
            ));
        }
        let buffer = args
            .iter()
            .position(|a| a.name() == t.buffer)
            .filter(|&k| matches!(args[k], ArgSpec::Buffer { .. }))
            .ok_or_else(|| {
                field(
                    &format!("{f}.buffer"),
                    format!("{:?} is not a buffer in [[args]]", t.buffer),
                )
            })?;
        if t.pitch.is_some() && t.height.is_none() {
            return Err(field(
                &format!("{f}.pitch"),
                "a pitch needs a height (2D texture)".into(),
            ));
        }
        textures.push(TextureSpec {
            name: t.name.clone(),
            buffer,
            width: t.width.as_ref().map(Expr::text),
            height: t.height.as_ref().map(Expr::text),
            pitch: t.pitch.as_ref().map(Expr::text),
        });
    }

    let mut sparse = Vec::new();
    let mut sparse_seen = BTreeSet::new();
    for (i, s) in raw.sparse.iter().enumerate() {
        if !is_ident(&s.name) || !sparse_seen.insert(s.name.clone()) {
            return Err(field(
                &format!("sparse[{i}].name"),
                format!("{:?} is not a new identifier", s.name),
            ));
        }
        sparse.push(SparseSpec {
            name: s.name.clone(),
            rows: s.rows.text(),
            cols: s.cols.text(),
            nnz_per_row: s.nnz_per_row.text(),
            pad: s
                .pad
                .as_ref()
                .map(Expr::text)
                .unwrap_or_else(|| "32".into()),
        });
    }

    // Launches: shared [[launch]] or per-variant; a variant's own list wins. Other
    // variant names are kernel (or version) names: a progression's harness gives each
    // member its launches once, and a pair takes its two sides' lists (`for_pair`).
    for k in raw.variants.keys() {
        if !is_ident(k) {
            return Err(field(
                &format!("variants.{k}"),
                "variants are `slow`, `fast` or a kernel name".into(),
            ));
        }
    }
    let mut by_kernel = BTreeMap::new();
    for (k, var) in raw
        .variants
        .iter()
        .filter(|(k, _)| *k != "slow" && *k != "fast")
    {
        let list = var
            .launch
            .iter()
            .enumerate()
            .map(|(i, l)| {
                launch_spec(
                    l,
                    &format!("variants.{k}.launch[{i}]"),
                    &arg_index,
                    args.len(),
                    origin,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        if list.is_empty() {
            return Err(field(
                &format!("variants.{k}"),
                "a kernel's variant needs at least one launch".into(),
            ));
        }
        by_kernel.insert(k.clone(), list);
    }
    let variant_launches = |v: &str| -> Result<Vec<LaunchSpec>, HarnessError> {
        let (list, prefix) = match raw.variants.get(v) {
            Some(var) if !var.launch.is_empty() => (&var.launch, format!("variants.{v}.launch")),
            _ => (&raw.launch, "launch".to_string()),
        };
        list.iter()
            .enumerate()
            .map(|(i, l)| launch_spec(l, &format!("{prefix}[{i}]"), &arg_index, args.len(), origin))
            .collect()
    };
    let slow = variant_launches("slow")?;
    let fast = variant_launches("fast")?;
    if !raw.needs_host_loop && by_kernel.is_empty() && (fast.is_empty() || slow.is_empty()) {
        return Err(field(
            "launch",
            "no launch sequence: give [[launch]] or [[variants.slow.launch]] and [[variants.fast.launch]]"
                .into(),
        ));
    }
    if !raw.needs_host_loop
        && !args
            .iter()
            .any(|a| matches!(a, ArgSpec::Buffer { role, .. } if role.is_output()))
    {
        return Err(field(
            "args",
            "no buffer has role out or inout: there would be nothing to compare".into(),
        ));
    }
    let needs_host_loop = if raw.needs_host_loop {
        Some(
            raw.host_loop_reason
                .clone()
                .filter(|r| !r.trim().is_empty())
                .ok_or_else(|| {
                    field(
                        "host_loop_reason",
                        "needs_host_loop = true needs a reason".into(),
                    )
                })?,
        )
    } else {
        None
    };

    let h = Harness {
        origin: origin.to_string(),
        description: raw.description,
        needs_host_loop,
        require: raw.require,
        size_sets,
        derived: raw
            .derived
            .iter()
            .map(|(k, v)| (k.clone(), v.text()))
            .collect(),
        sparse,
        args,
        constants,
        textures,
        slow,
        fast,
        by_kernel,
    };
    // Every expression must evaluate for every size set (on a reference device).
    if h.needs_host_loop.is_none() {
        for set in &h.size_sets {
            h.resolve(set, &DeviceProps::h100())?;
        }
    }
    Ok(h)
}

/// A `choice` init's lists: values given, weights (if any) one per value, non-negative,
/// not all zero.
fn check_choice(values: &[Expr], weights: Option<&[f64]>) -> Result<(), String> {
    if values.is_empty() {
        return Err("choice needs at least one value".into());
    }
    if let Some(w) = weights {
        if w.len() != values.len() {
            return Err(format!(
                "choice has {} values but {} weights",
                values.len(),
                w.len()
            ));
        }
        if w.iter().any(|x| !(x.is_finite() && *x >= 0.0)) || w.iter().sum::<f64>() <= 0.0 {
            return Err("choice weights must be finite, non-negative and not all zero".into());
        }
    }
    Ok(())
}

fn dims_list(d: &Dims) -> Vec<String> {
    match d {
        Dims::One(e) => vec![e.text()],
        Dims::Many(v) => v.iter().map(Expr::text).collect(),
    }
}

fn launch_spec(
    l: &RawLaunch,
    f: &str,
    arg_index: &dyn Fn(&str) -> Option<usize>,
    nargs: usize,
    origin: &str,
) -> Result<LaunchSpec, HarnessError> {
    let field = |sub: &str, m: String| HarnessError::Field {
        origin: origin.to_string(),
        field: format!("{f}.{sub}"),
        message: m,
    };
    if l.kernel.trim().is_empty() {
        return Err(field("kernel", "empty kernel name".into()));
    }
    let grid = dims_list(&l.grid);
    let block = dims_list(&l.block);
    for (n, d) in [("grid", &grid), ("block", &block)] {
        if d.is_empty() || d.len() > 3 {
            return Err(field(
                n,
                format!("needs 1 to 3 dimensions, has {}", d.len()),
            ));
        }
    }
    let (args, offsets) = match &l.args {
        None => ((0..nargs).collect(), vec!["0".to_string(); nargs]),
        Some(list) => {
            let mut args = Vec::new();
            let mut offsets = Vec::new();
            for entry in list {
                let (n, off) = match entry.split_once('+') {
                    Some((n, off)) => (n.trim(), off.trim().to_string()),
                    None => (entry.trim(), "0".to_string()),
                };
                args.push(
                    arg_index(n)
                        .ok_or_else(|| field("args", format!("{n:?} is not a declared arg")))?,
                );
                offsets.push(off);
            }
            (args, offsets)
        }
    };
    Ok(LaunchSpec {
        kernel: l.kernel.clone(),
        grid,
        block,
        shared_mem: l.shared_mem.as_ref().map(Expr::text).unwrap_or("0".into()),
        repeat: l.repeat.as_ref().map(Expr::text).unwrap_or("1".into()),
        args,
        offsets,
    })
}

pub(crate) fn parse_csr_part(s: &str) -> Option<CsrPart> {
    Some(match s {
        "row_ptr" => CsrPart::RowPtr,
        "col_idx" => CsrPart::ColIdx,
        "values" => CsrPart::Values,
        _ => return None,
    })
}

pub(crate) fn parse_jds_part(s: &str) -> Option<JdsPart> {
    Some(match s {
        "perm" => JdsPart::Perm,
        "ptr" => JdsPart::Ptr,
        "zcnt" => JdsPart::Zcnt,
        "col_idx" => JdsPart::ColIdx,
        "values" => JdsPart::Values,
        _ => return None,
    })
}

impl Harness {
    /// The harness for one pair: where the file gives launches by kernel name, the slow
    /// side takes its kernel's list and the fast side its own; `slow`/`fast`/`[[launch]]`
    /// lists stay the default.
    pub fn for_pair(
        &self,
        slow: Option<&KernelUnit>,
        fast: &KernelUnit,
    ) -> Result<Harness, HarnessError> {
        let mut h = self.clone();
        if self.needs_host_loop.is_some() {
            return Ok(h);
        }
        for (side, unit, list) in [
            ("slow", slow, &mut h.slow),
            ("fast", Some(fast), &mut h.fast),
        ] {
            if let Some(own) = unit.and_then(|u| self.by_kernel.get(&u.kernel)) {
                *list = own.clone();
            }
            if list.is_empty() {
                return Err(HarnessError::Mismatch {
                    origin: self.origin.clone(),
                    kernel: format!(
                        "{} ({side})",
                        unit.map(|u| u.kernel.as_str()).unwrap_or("-")
                    ),
                    message: format!(
                        "no launch sequence for this kernel: the harness has variants for {}",
                        self.by_kernel
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
        }
        Ok(h)
    }

    pub fn size_sets(&self) -> &[SizeSet] {
        &self.size_sets
    }

    /// Check the harness against the pair's units: every launch names the unit's kernel, and
    /// the args bound to it match the parameter list in count, pointer-ness and element type.
    pub fn check_against(
        &self,
        slow: Option<&KernelUnit>,
        fast: &KernelUnit,
    ) -> Result<(), HarnessError> {
        if let Some(s) = slow {
            self.check_variant("slow", &self.slow, s)?;
        }
        self.check_variant("fast", &self.fast, fast)?;
        // Every constant must be a `__constant__` symbol of at least one unit (units without
        // source text, as in hand-made records, are not checked).
        let sources: Vec<&str> = slow
            .into_iter()
            .chain([fast])
            .map(|u| u.source.as_str())
            .filter(|s| !s.is_empty())
            .collect();
        if !sources.is_empty() {
            for c in &self.constants {
                let declared = sources.iter().any(|s| {
                    s.lines().any(|l| {
                        l.contains("__constant__")
                            && l.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                                .any(|w| w == c.name)
                    })
                });
                if !declared {
                    return Err(HarnessError::Mismatch {
                        origin: self.origin.clone(),
                        kernel: fast.kernel.clone(),
                        message: format!(
                            "constant {:?} is not a __constant__ symbol of either unit",
                            c.name
                        ),
                    });
                }
            }
        }
        // Shimmed texture references and `[[textures]]` entries must correspond: an unfilled
        // shim reads through a null pointer. (A pair that never runs needs none.)
        if self.needs_host_loop.is_none() {
            self.check_textures(slow, fast)?;
        }
        Ok(())
    }

    fn check_textures(
        &self,
        slow: Option<&KernelUnit>,
        fast: &KernelUnit,
    ) -> Result<(), HarnessError> {
        use crate::cuda::texture::{shimmed_symbols, texel_bytes};
        let mismatch = |kernel: &str, message: String| HarnessError::Mismatch {
            origin: self.origin.clone(),
            kernel: kernel.to_string(),
            message,
        };
        let units: Vec<&KernelUnit> = slow.into_iter().chain([fast]).collect();
        for u in &units {
            for d in shimmed_symbols(&u.source) {
                if !self.textures.iter().any(|t| t.name == d.name) {
                    return Err(mismatch(
                        &u.kernel,
                        format!(
                            "{} reads legacy texture {:?}: add a [[textures]] entry naming the buffer it reads",
                            u.variant, d.name
                        ),
                    ));
                }
            }
        }
        if units.iter().all(|u| u.source.is_empty()) {
            return Ok(());
        }
        for t in &self.textures {
            let Some(d) = units
                .iter()
                .flat_map(|u| shimmed_symbols(&u.source))
                .find(|d| d.name == t.name)
            else {
                return Err(mismatch(
                    &fast.kernel,
                    format!(
                        "texture {:?} is not a legacy texture reference of either unit",
                        t.name
                    ),
                ));
            };
            if d.dim == 1 && t.height.is_some() {
                return Err(mismatch(
                    &fast.kernel,
                    format!("texture {:?} is 1D but has a height", t.name),
                ));
            }
            // Widths count texels: a float4 texture over an f32 buffer has len / 4 of them.
            let ArgSpec::Buffer { elem, name, .. } = &self.args[t.buffer] else {
                continue;
            };
            if t.width.is_none() && texel_bytes(&d.element) != Some(elem.size_of()) {
                return Err(mismatch(
                    &fast.kernel,
                    format!(
                        "texture {:?} reads {} texels from {name:?} ({} elements): give its width in texels",
                        t.name,
                        d.element,
                        elem.name()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn check_variant(
        &self,
        variant: &str,
        launches: &[LaunchSpec],
        unit: &KernelUnit,
    ) -> Result<(), HarnessError> {
        let err = |m: String| HarnessError::Mismatch {
            origin: self.origin.clone(),
            kernel: format!("{} ({variant})", unit.kernel),
            message: m,
        };
        // A version unit (a host launcher's kernels, docs/pairing.md) holds several
        // kernels: a launch naming another kernel is checked against that kernel's
        // definition in the unit's source.
        let index = crate::cuda::index_file(&unit.path, &unit.source);
        let sym_base = unit.symbol.split('<').next().unwrap_or("").trim();
        let mut kernels: Vec<std::borrow::Cow<KernelUnit>> = Vec::new();
        for (li, l) in launches.iter().enumerate() {
            let base = l.kernel.split('<').next().unwrap_or("").trim();
            if base == unit.kernel || base == sym_base {
                kernels.push(std::borrow::Cow::Borrowed(unit));
                continue;
            }
            let Some(k) = index.kernels().iter().find(|k| k.name == base) else {
                return Err(err(format!(
                    "launch[{li}] runs {:?}, but the {variant} unit's kernel is {:?}",
                    l.kernel, unit.kernel
                )));
            };
            kernels.push(std::borrow::Cow::Owned(KernelUnit {
                kernel: k.name.clone(),
                symbol: k.name.clone(),
                params: k.params.clone(),
                template_params: k.template_params.clone(),
                ..unit.clone()
            }));
        }
        // Outputs some launch of the sequence writes through a non-const pointer: a later
        // launch may read them through a const one (a version's `mean` feeding `rstd_kernel`).
        let written: BTreeSet<usize> = launches
            .iter()
            .zip(&kernels)
            .flat_map(|(l, k)| {
                l.args.iter().zip(&k.params).filter_map(|(&ai, p)| {
                    let pointee_const =
                        p.ty.split('*')
                            .next()
                            .is_some_and(|t| t.split_whitespace().any(|w| w == "const"));
                    (c_is_pointer(&p.ty) && !pointee_const).then_some(ai)
                })
            })
            .collect();
        for (li, (l, unit)) in launches.iter().zip(&kernels).enumerate() {
            let unit: &KernelUnit = unit;
            if l.args.len() != unit.params.len() {
                return Err(err(format!(
                    "launch[{li}] passes {} args, the kernel takes {} parameters ({})",
                    l.args.len(),
                    unit.params.len(),
                    unit.params
                        .iter()
                        .map(|p| format!("{} {}", p.ty, p.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            // `k<int, 256>` binds the kernel's template parameters (`T *` checks as `int *`).
            let binds = template::bindings(&unit.template_params, &l.kernel);
            for (pi, (&ai, p)) in l.args.iter().zip(&unit.params).enumerate() {
                let p = &template::bind_param(p, &binds);
                let hint = || {
                    template::unbound_hint(&p.ty, &unit.template_params, &l.kernel)
                        .map(|h| format!(" ({h})"))
                        .unwrap_or_default()
                };
                let a = &self.args[ai];
                let ptr = c_is_pointer(&p.ty);
                match a {
                    ArgSpec::Buffer {
                        name,
                        elem,
                        c_type,
                        role,
                        ..
                    } => {
                        let pointee_const =
                            p.ty.split('*')
                                .next()
                                .is_some_and(|t| t.split_whitespace().any(|w| w == "const"));
                        if pointee_const && role.is_output() && !written.contains(&ai) {
                            return Err(err(format!(
                                "parameter {pi} `{} {}` points to const, but arg {name:?} is an output",
                                p.ty, p.name
                            )));
                        }
                        if !ptr {
                            return Err(err(format!(
                                "parameter {pi} `{} {}` is a value, but arg {name:?} is a buffer",
                                p.ty, p.name
                            )));
                        }
                        type_matches(&p.ty, *elem, c_type.as_deref(), &unit.source).map_err(
                            |m| {
                                err(format!(
                                    "parameter {pi} `{} {}` vs arg {name:?}: {m}{}",
                                    p.ty,
                                    p.name,
                                    hint()
                                ))
                            },
                        )?;
                    }
                    ArgSpec::Struct { name, c_type, .. } => {
                        if ptr {
                            return Err(err(format!(
                                "parameter {pi} `{} {}` is a pointer, but arg {name:?} is a struct passed by value",
                                p.ty, p.name
                            )));
                        }
                        let base = c_base_type(&p.ty);
                        let declared = c_base_type(c_type);
                        if base != declared {
                            return Err(err(format!(
                                "parameter {pi} `{} {}` vs arg {name:?}: declared c_type {declared:?} but the parameter is {base:?}",
                                p.ty, p.name
                            )));
                        }
                    }
                    ArgSpec::Scalar { name, elem, .. } => {
                        if ptr {
                            return Err(err(format!(
                                "parameter {pi} `{} {}` is a pointer, but arg {name:?} is a scalar",
                                p.ty, p.name
                            )));
                        }
                        type_matches(&p.ty, *elem, None, &unit.source).map_err(|m| {
                            err(format!(
                                "parameter {pi} `{} {}` vs arg {name:?}: {m}{}",
                                p.ty,
                                p.name,
                                hint()
                            ))
                        })?;
                    }
                }
            }
        }
        Ok(())
    }

    /// Evaluate every expression for one size set on one device.
    pub fn resolve(&self, set: &SizeSet, dev: &DeviceProps) -> Result<Resolved, HarnessError> {
        let o = &self.origin;
        let xerr = |field: &str, expr: &str, m: String| HarnessError::Expr {
            origin: o.clone(),
            field: field.to_string(),
            expr: expr.to_string(),
            size_set: set.name.clone(),
            message: m,
        };
        let mut scope = Scope::default();
        scope.set_int("sm_count", dev.sm_count);
        scope.set_int("max_threads_per_block", dev.max_threads_per_block);
        scope.set_int("warp_size", dev.warp_size);
        scope.set_int("l2_bytes", dev.l2_bytes);
        let mut values = BTreeMap::new();
        for (k, v) in &set.values {
            scope.set_int(k, *v);
            values.insert(k.clone(), *v);
        }
        // Derived values may refer to each other in any order: evaluate until no progress.
        let mut pending: Vec<&(String, String)> = self.derived.iter().collect();
        while !pending.is_empty() {
            let before = pending.len();
            let mut last_err = None;
            pending.retain(|(k, e)| match scope.eval(e) {
                Ok(v) => {
                    scope.set(k, v);
                    if let Num::Int(i) = v {
                        values.insert(k.clone(), i);
                    }
                    false
                }
                Err(m) => {
                    last_err = Some((k.clone(), e.clone(), m));
                    true
                }
            });
            if pending.len() == before {
                let (k, e, m) = last_err.expect("a pending derived value failed");
                return Err(xerr(&format!("derived.{k}"), &e, m));
            }
        }
        let pos = |field: &str, e: &str, scope: &Scope| -> Result<usize, HarnessError> {
            let v = scope.eval_int(e).map_err(|m| xerr(field, e, m))?;
            if v <= 0 {
                return Err(xerr(field, e, format!("must be > 0, is {v}")));
            }
            usize::try_from(v).map_err(|_| xerr(field, e, "too large".into()))
        };
        let mut sparse = Vec::new();
        for (i, s) in self.sparse.iter().enumerate() {
            let f = format!("sparse[{i}]");
            let m = SparseMatrix {
                name: s.name.clone(),
                rows: pos(&format!("{f}.rows"), &s.rows, &scope)?,
                cols: pos(&format!("{f}.cols"), &s.cols, &scope)?,
                nnz_per_row: pos(&format!("{f}.nnz_per_row"), &s.nnz_per_row, &scope)?,
                pad: pos(&format!("{f}.pad"), &s.pad, &scope)?,
            };
            for (k, v) in gen::sparse_figures(&m) {
                let name = format!("{}_{k}", m.name);
                scope.set_int(&name, v as i64);
                values.insert(name, v as i64);
            }
            sparse.push(m);
        }
        for (i, r) in self.require.iter().enumerate() {
            match scope.eval_bool(r) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(xerr(
                        &format!("require[{i}]"),
                        r,
                        "size set violates this requirement".into(),
                    ))
                }
                Err(m) => return Err(xerr(&format!("require[{i}]"), r, m)),
            }
        }
        // Inits drawn element by element (the ones a `fields` group may use).
        let elementwise = |f: &str,
                           raw: &RawInit,
                           scope: &Scope|
         -> Result<Option<Init>, HarnessError> {
            let num = |sub: &str, e: &Expr| -> Result<f64, HarnessError> {
                let t = e.text();
                scope
                    .eval(&t)
                    .map(Num::as_f64)
                    .map_err(|m| xerr(&format!("{f}.{sub}"), &t, m))
            };
            let int = |sub: &str, e: &Expr| -> Result<i64, HarnessError> {
                let t = e.text();
                scope
                    .eval_int(&t)
                    .map_err(|m| xerr(&format!("{f}.{sub}"), &t, m))
            };
            Ok(Some(match raw {
                RawInit::Uniform { lo, hi } => {
                    let (lo_v, hi_v) = (num("lo", lo)?, num("hi", hi)?);
                    if lo_v >= hi_v || lo_v.is_nan() || hi_v.is_nan() {
                        return Err(xerr(f, &format!("{lo_v}..{hi_v}"), "needs lo < hi".into()));
                    }
                    Init::Uniform { lo: lo_v, hi: hi_v }
                }
                RawInit::Normal { mean, std, lo, hi } => {
                    let sd = num("std", std)?;
                    if sd.is_nan() || sd <= 0.0 {
                        return Err(xerr(f, &std.text(), "std must be > 0".into()));
                    }
                    let lo = lo.as_ref().map(|e| num("lo", e)).transpose()?;
                    let hi = hi.as_ref().map(|e| num("hi", e)).transpose()?;
                    if let (Some(a), Some(b)) = (lo, hi) {
                        if a.is_nan() || b.is_nan() || a > b {
                            return Err(xerr(f, &format!("{a}..{b}"), "needs lo <= hi".into()));
                        }
                    }
                    Init::Normal {
                        mean: num("mean", mean)?,
                        std: sd,
                        lo,
                        hi,
                    }
                }
                RawInit::IntRange { lo, hi } => {
                    let (lo_v, hi_v) = (int("lo", lo)?, int("hi", hi)?);
                    if lo_v > hi_v {
                        return Err(xerr(
                            f,
                            &format!("{lo_v}..={hi_v}"),
                            "needs lo <= hi".into(),
                        ));
                    }
                    Init::IntRange { lo: lo_v, hi: hi_v }
                }
                RawInit::Zeros => Init::Zeros,
                RawInit::Constant { value } => Init::Constant {
                    value: num("value", value)?,
                },
                RawInit::Choice { values, weights } => Init::Choice {
                    values: values
                        .iter()
                        .enumerate()
                        .map(|(k, v)| num(&format!("values[{k}]"), v))
                        .collect::<Result<_, _>>()?,
                    weights: weights.clone().unwrap_or_else(|| vec![1.0; values.len()]),
                },
                _ => return Ok(None),
            }))
        };
        let init_of = |f: &str, raw: &RawInit, scope: &Scope| -> Result<Init, HarnessError> {
            if let Some(i) = elementwise(f, raw, scope)? {
                return Ok(i);
            }
            let int = |sub: &str, e: &Expr| -> Result<i64, HarnessError> {
                let t = e.text();
                scope
                    .eval_int(&t)
                    .map_err(|m| xerr(&format!("{f}.{sub}"), &t, m))
            };
            let num = |sub: &str, e: &Expr| -> Result<f64, HarnessError> {
                let t = e.text();
                scope
                    .eval(&t)
                    .map(Num::as_f64)
                    .map_err(|m| xerr(&format!("{f}.{sub}"), &t, m))
            };
            Ok(match raw {
                RawInit::Fields { fields } => Init::Fields {
                    fields: fields
                        .iter()
                        .enumerate()
                        .map(|(k, fg)| {
                            let ff = format!("{f}.fields[{k}]");
                            let count = int(&format!("fields[{k}].count"), &fg.count)?;
                            if count <= 0 {
                                return Err(xerr(
                                    &format!("{ff}.count"),
                                    &fg.count.text(),
                                    format!("must be > 0, is {count}"),
                                ));
                            }
                            Ok(Field {
                                count: count as usize,
                                bits: fg.ty.as_deref().and_then(ElemType::from_name),
                                init: elementwise(&format!("{ff}.init"), &fg.init, scope)?
                                    .expect("field inits are elementwise (checked at parse)"),
                            })
                        })
                        .collect::<Result<_, _>>()?,
                },
                RawInit::CopyOf { arg } => Init::CopyOf { arg: arg.clone() },
                RawInit::Permutation => Init::Permutation,
                RawInit::Poison => Init::Poison,
                RawInit::Linspace { start, stop } => Init::Linspace {
                    start: num("start", start)?,
                    stop: num("stop", stop)?,
                },
                RawInit::Interleave { args } => Init::Interleave { args: args.clone() },
                RawInit::Iota {
                    start,
                    step,
                    every,
                    period,
                } => {
                    // `every` and `period` divide: they must be positive.
                    let positive =
                        |sub: &str, e: &Option<Expr>| -> Result<Option<i64>, HarnessError> {
                            let Some(e) = e else { return Ok(None) };
                            let v = int(sub, e)?;
                            if v <= 0 {
                                return Err(xerr(
                                    &format!("{f}.{sub}"),
                                    &e.text(),
                                    format!("must be > 0, is {v}"),
                                ));
                            }
                            Ok(Some(v))
                        };
                    Init::Iota {
                        start: start
                            .as_ref()
                            .map(|e| int("start", e))
                            .transpose()?
                            .unwrap_or(0),
                        step: step
                            .as_ref()
                            .map(|e| int("step", e))
                            .transpose()?
                            .unwrap_or(1),
                        every: positive("every", every)?.unwrap_or(1),
                        period: positive("period", period)?,
                    }
                }
                RawInit::Cells {
                    dims,
                    depth,
                    size,
                    origin,
                    fill,
                    w,
                } => {
                    // Counts and extents must be positive; fill and w are checked against
                    // depth and the element type with the arg's name (gen::check_resolved).
                    let positive = |sub: &str, e: &Expr| -> Result<usize, HarnessError> {
                        let v = int(sub, e)?;
                        usize::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| {
                            xerr(
                                &format!("{f}.{sub}"),
                                &e.text(),
                                format!("must be > 0, is {v}"),
                            )
                        })
                    };
                    let mut d = [0usize; 3];
                    for (k, e) in dims.iter().enumerate() {
                        d[k] = positive(&format!("dims[{k}]"), e)?;
                    }
                    let mut o = [0f64; 3];
                    for (k, e) in origin.iter().flatten().enumerate() {
                        o[k] = num(&format!("origin[{k}]"), e)?;
                    }
                    Init::Cells(Box::new(Cells {
                        dims: d,
                        depth: positive("depth", depth)?,
                        size: num("size", size)?,
                        origin: o,
                        fill: Span {
                            lo: int("fill.lo", &fill.lo)?,
                            hi: int("fill.hi", &fill.hi)?,
                        },
                        w: Span {
                            lo: num("w.lo", &w.lo)?,
                            hi: num("w.hi", &w.hi)?,
                        },
                    }))
                }
                RawInit::Csr { matrix, part } => Init::Csr {
                    matrix: matrix.clone(),
                    part: parse_csr_part(part).expect("checked at parse"),
                },
                RawInit::Jds { matrix, part } => Init::Jds {
                    matrix: matrix.clone(),
                    part: parse_jds_part(part).expect("checked at parse"),
                },
                _ => unreachable!("elementwise inits are handled above"),
            })
        };
        let mut args = Vec::new();
        for (i, a) in self.args.iter().enumerate() {
            let f = format!("args[{i}]");
            args.push(match a {
                ArgSpec::Buffer {
                    name,
                    elem,
                    len,
                    init,
                    role,
                    tol,
                    allow_degenerate,
                    layout,
                    compare,
                    ..
                } => {
                    let len_v = pos(&format!("{f}.len"), len, &scope)?;
                    let nonneg = |field: &str, e: &str| -> Result<usize, HarnessError> {
                        let v = scope.eval_int(e).map_err(|m| xerr(field, e, m))?;
                        usize::try_from(v).map_err(|_| xerr(field, e, format!("must be >= 0, is {v}")))
                    };
                    let mut layouts = Layouts::default();
                    for (v, spec) in layout {
                        let fl = format!("{f}.layout.{}", v.name());
                        let LayoutSpec::Transpose { rows, cols, offset } = spec;
                        let l = Layout::Transpose {
                            rows: pos(&format!("{fl}.rows"), rows, &scope)?,
                            cols: pos(&format!("{fl}.cols"), cols, &scope)?,
                            offset: nonneg(&format!("{fl}.offset"), offset)?,
                        };
                        if l.extent() > len_v {
                            return Err(xerr(
                                &fl,
                                &format!("{offset} + ({rows}) * ({cols})"),
                                format!(
                                    "the transposed region ends at element {}, past the buffer's {len_v}",
                                    l.extent()
                                ),
                            ));
                        }
                        match v {
                            Variant::Slow => layouts.slow = Some(l),
                            Variant::Fast => layouts.fast = Some(l),
                        }
                    }
                    let window = match compare {
                        None => None,
                        Some((off, wlen)) => {
                            let w = Window {
                                offset: nonneg(&format!("{f}.compare.offset"), off)?,
                                len: pos(&format!("{f}.compare.len"), wlen, &scope)?,
                            };
                            if w.offset + w.len > len_v {
                                return Err(xerr(
                                    &format!("{f}.compare"),
                                    &format!("{off} + {wlen}"),
                                    format!(
                                        "the window ends at element {}, past the buffer's {len_v}",
                                        w.offset + w.len
                                    ),
                                ));
                            }
                            Some(w)
                        }
                    };
                    ResolvedArg::Buffer {
                        name: name.clone(),
                        elem: *elem,
                        len: len_v,
                        init: init_of(&format!("{f}.init"), &init.0, &scope)?,
                        role: *role,
                        tol: *tol,
                        allow_degenerate: *allow_degenerate,
                        layout: layouts,
                        compare: window,
                    }
                }
                ArgSpec::Struct { name, fields, .. } => ResolvedArg::Struct {
                    name: name.clone(),
                    fields: fields
                        .iter()
                        .map(|m| {
                            self.args
                                .iter()
                                .position(|a| a.name() == m)
                                .expect("struct fields name buffer args (checked at parse)")
                        })
                        .collect(),
                },
                ArgSpec::Scalar { name, elem, value } => {
                    let fv = format!("{f}.value");
                    let n = scope.eval(value).map_err(|m| xerr(&fv, value, m))?;
                    ResolvedArg::Scalar {
                        name: name.clone(),
                        value: ScalarValue::from_num(*elem, n).map_err(|m| xerr(&fv, value, m))?,
                    }
                }
            });
        }
        let mut ignores = Vec::new();
        for (i, a) in self.args.iter().enumerate() {
            let ArgSpec::Buffer {
                ignore: Some([period, from, to]),
                ..
            } = a
            else {
                continue;
            };
            let f = format!("args[{i}].ignore");
            let period_v = pos(&format!("{f}.period"), period, &scope)?;
            // `from` may be 0 (a range at the start of each period, or the whole buffer).
            let from_v = {
                let field = format!("{f}.from");
                let v = scope.eval_int(from).map_err(|m| xerr(&field, from, m))?;
                usize::try_from(v)
                    .map_err(|_| xerr(&field, from, format!("must be >= 0, is {v}")))?
            };
            let to_v = pos(&format!("{f}.to"), to, &scope)?;
            if period_v == 0 || from_v >= to_v || to_v > period_v {
                return Err(xerr(
                    &f,
                    &format!("{from} .. {to} of {period}"),
                    format!("needs 0 <= from < to <= period, got {from_v} .. {to_v} of {period_v}"),
                ));
            }
            ignores.push(Ignore {
                arg: i,
                period: period_v,
                from: from_v,
                to: to_v,
            });
        }
        let mut constants = Vec::new();
        for (i, c) in self.constants.iter().enumerate() {
            let f = format!("constants[{i}]");
            constants.push(ResolvedConst {
                name: c.name.clone(),
                elem: c.elem,
                len: pos(&format!("{f}.len"), &c.len, &scope)?,
                init: init_of(&format!("{f}.init"), &c.init.0, &scope)?,
            });
        }
        let mut textures = Vec::new();
        for (i, t) in self.textures.iter().enumerate() {
            let f = format!("textures[{i}]");
            let ResolvedArg::Buffer { len, .. } = &args[t.buffer] else {
                unreachable!("checked on parse: textures read buffers");
            };
            let len = *len as i64;
            let dim = |sub: &str, e: &Option<String>, default: i64| -> Result<i64, HarnessError> {
                let Some(e) = e else { return Ok(default) };
                let v = scope
                    .eval_int(e)
                    .map_err(|m| xerr(&format!("{f}.{sub}"), e, m))?;
                if v < 0 || v > i32::MAX as i64 {
                    return Err(xerr(
                        &format!("{f}.{sub}"),
                        e,
                        format!("{v} is out of range"),
                    ));
                }
                Ok(v)
            };
            let width = dim("width", &t.width, len)?;
            let height = dim("height", &t.height, 0)?;
            let pitch = dim("pitch", &t.pitch, 0)?;
            let rows_span = if height > 0 {
                (height - 1) * pitch.max(width) + width
            } else {
                width
            };
            if rows_span > len || (pitch > 0 && pitch < width) {
                return Err(xerr(
                    &format!("{f}.width"),
                    t.width.as_deref().unwrap_or("(buffer length)"),
                    format!(
                        "a {width}×{height} texture with pitch {pitch} does not fit buffer {:?} of {len} elements",
                        self.args[t.buffer].name()
                    ),
                ));
            }
            textures.push(ResolvedTexture {
                name: t.name.clone(),
                buffer: t.buffer,
                width,
                height,
                pitch,
            });
        }
        let buffer_lens: Vec<Option<usize>> = args
            .iter()
            .map(|a| match a {
                ResolvedArg::Buffer { len, .. } => Some(*len),
                ResolvedArg::Scalar { .. } | ResolvedArg::Struct { .. } => None,
            })
            .collect();
        let launches = |variant: &str, list: &[LaunchSpec]| -> Result<Vec<Launch>, HarnessError> {
            let prefix = format!("{variant} launch");
            list.iter()
                .enumerate()
                .map(|(i, l)| {
                    let f = format!("{prefix}[{i}]");
                    let u32_of = |sub: &str, e: &str, min: i64| -> Result<u32, HarnessError> {
                        let v = scope
                            .eval_int(e)
                            .map_err(|m| xerr(&format!("{f}.{sub}"), e, m))?;
                        if v < min || v > u32::MAX as i64 {
                            return Err(xerr(
                                &format!("{f}.{sub}"),
                                e,
                                format!("{v} is out of range (>= {min})"),
                            ));
                        }
                        Ok(v as u32)
                    };
                    let mut grid = [1u32; 3];
                    let mut block = [1u32; 3];
                    for (d, e) in l.grid.iter().enumerate() {
                        grid[d] = u32_of(&format!("grid[{d}]"), e, 1)?;
                    }
                    for (d, e) in l.block.iter().enumerate() {
                        block[d] = u32_of(&format!("block[{d}]"), e, 1)?;
                    }
                    let threads: u64 = block.iter().map(|&b| b as u64).product();
                    if threads > dev.max_threads_per_block as u64 {
                        return Err(xerr(
                            &format!("{f}.block"),
                            &l.block.join(", "),
                            format!(
                                "{threads} threads per block exceeds the device's {}",
                                dev.max_threads_per_block
                            ),
                        ));
                    }
                    if grid[1] > 65535 || grid[2] > 65535 {
                        return Err(xerr(
                            &format!("{f}.grid"),
                            &l.grid.join(", "),
                            "grid y and z are limited to 65535".into(),
                        ));
                    }
                    Ok(Launch {
                        kernel: expr::interpolate(&l.kernel, &scope)
                            .map_err(|m| xerr(&format!("{f}.kernel"), &l.kernel, m))?,
                        grid,
                        block,
                        shared_mem: u32_of("shared_mem", &l.shared_mem, 0)?,
                        repeat: u32_of("repeat", &l.repeat, 1)?,
                        args: l.args.clone(),
                        offsets: l
                            .args
                            .iter()
                            .zip(&l.offsets)
                            .map(|(&ai, e)| {
                                let fo = format!("{f}.args");
                                let v = scope.eval_int(e).map_err(|m| xerr(&fo, e, m))?;
                                match buffer_lens[ai] {
                                    _ if v == 0 => Ok(0),
                                    None => {
                                        Err(xerr(&fo, e, "only a buffer can take an offset".into()))
                                    }
                                    Some(len) if v > 0 && (v as usize) < len => Ok(v as usize),
                                    Some(len) => Err(xerr(
                                        &fo,
                                        e,
                                        format!(
                                            "offset {v} is outside the buffer's {len} elements"
                                        ),
                                    )),
                                }
                            })
                            .collect::<Result<Vec<_>, _>>()?,
                    })
                })
                .collect()
        };
        let resolved = Resolved {
            origin: o.clone(),
            size_set: set.name.clone(),
            values,
            slow: launches("slow", &self.slow)?,
            fast: launches("fast", &self.fast)?,
            args,
            constants,
            textures,
            ignores,
            sparse,
        };
        gen::check_resolved(&resolved)?;
        Ok(resolved)
    }
}

/// File names a pair's harness may have, most specific first:
/// `{stem}.{kernel}.{variant}.toml`, `{stem}.{kernel}.toml`, `{stem}.{variant}.toml`,
/// `{stem}.toml` (kernel and variant of the fast unit).
pub fn candidate_names(pair: &Pair, stem: &str) -> Vec<String> {
    let (k, v) = (&pair.fast.kernel, &pair.fast.variant);
    let mut out = vec![format!("{stem}.{k}.{v}.toml"), format!("{stem}.{k}.toml")];
    // One harness per progression file (llm.c: `dev/cuda.softmax_forward.toml`).
    if let Some(file) = Path::new(&pair.fast.path).file_stem() {
        out.push(format!("{stem}.{}.toml", file.to_string_lossy()));
    }
    if !v.is_empty() {
        out.push(format!("{stem}.{v}.toml"));
    }
    out.push(format!("{stem}.toml"));
    out
}

/// Find a pair's harness: first in `harness_dir` (e.g. `extractors/parboil/`, files named
/// after the benchmark: `sgemm.toml`, `stencil.cuda_fermi.toml`), then in the suite tree,
/// from the fast kernel's folder up to `suite_root` (files named `harness….toml`, as the
/// fixtures keep them in `benchmarks/<app>/harness.toml`).
pub fn locate(
    pair: &Pair,
    harness_dir: Option<&Path>,
    suite_root: Option<&Path>,
) -> Option<PathBuf> {
    if let Some(d) = harness_dir {
        for n in candidate_names(pair, &pair.benchmark) {
            let p = d.join(n);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    let root = suite_root?;
    let mut dir = Path::new(&pair.fast.path).parent();
    while let Some(d) = dir {
        for n in candidate_names(pair, "harness") {
            let p = root.join(d).join(n);
            if p.is_file() {
                return Some(p);
            }
        }
        if d.as_os_str().is_empty() {
            break;
        }
        dir = d.parent();
    }
    None
}

/// Whether a C parameter type can take an arg of element type `elem`.
/// `source` is the unit's isolated source, where `#define REAL float` and
/// `typedef unsigned long hist_t;` give names their meaning.
fn type_matches(
    c_type: &str,
    elem: ElemType,
    declared: Option<&str>,
    source: &str,
) -> Result<(), String> {
    let base = c_base_type(c_type);
    let resolved = resolve_alias(&base, source);
    if let Some(d) = declared {
        let d = c_base_type(d);
        return if d == base || d == resolved || resolve_alias(&d, source) == resolved {
            Ok(())
        } else {
            Err(format!(
                "declared c_type {d:?} but the parameter is {base:?}"
            ))
        };
    }
    match ElemType::from_c_type(&resolved) {
        Some(e) if e == elem => Ok(()),
        // `int` params commonly take unsigned sizes and vice versa: same width is fine for scalars
        // only when the harness says so explicitly, so report it.
        Some(e) => Err(format!(
            "the parameter holds {} but the arg is {}",
            e.name(),
            elem.name()
        )),
        None if base == "void" => Ok(()),
        None => Err(format!(
            "unknown C type {base:?}: set `c_type = {base:?}` on the arg to accept it"
        )),
    }
}

/// Follow `#define NAME type` and `typedef type NAME;` in a unit's source (a few levels).
fn resolve_alias(base: &str, source: &str) -> String {
    let mut cur = base.to_string();
    for _ in 0..4 {
        if cur.is_empty() || !is_ident(&cur.replace(' ', "_")) {
            break;
        }
        let next = source.lines().find_map(|l| {
            let l = l.split("//").next().unwrap_or("").trim();
            if let Some(rest) = l.strip_prefix("#define") {
                let mut it = rest.trim().splitn(2, char::is_whitespace);
                if it.next() == Some(cur.as_str()) {
                    let body = it.next().unwrap_or("").trim();
                    return (!body.is_empty()).then(|| c_base_type(body));
                }
            }
            let t = l.strip_prefix("typedef ")?.strip_suffix(';')?.trim();
            let (ty, name) = t.rsplit_once(char::is_whitespace)?;
            (name == cur).then(|| c_base_type(ty))
        });
        match next {
            Some(n) if n != cur => cur = n,
            _ => break,
        }
    }
    cur
}

/// The `harness` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum HarnessCommand {
    /// Draft a harness for a pair from its units and recorded launch sites.
    Draft {
        /// JSONL file holding the pair (and its units).
        units: PathBuf,
        /// Pair id (a unique prefix is enough).
        pair_id: String,
        /// Write the draft here instead of stdout.
        #[arg(short, long)]
        output: Option<PathBuf>,
    },
    /// Parse and validate harness files, optionally against a pair's units.
    Check {
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// JSONL file holding the pair to check against.
        #[arg(long)]
        units: Option<PathBuf>,
        /// Pair id (a unique prefix) in `--units`.
        #[arg(long)]
        pair: Option<String>,
    },
    /// Infer a harness for every pair from the host code and kernel bodies: DIR/<pair-id>.toml.
    Infer {
        /// JSONL file holding the pairs (and their units), as extract writes it.
        units: PathBuf,
        /// Folder for the inferred harnesses.
        #[arg(short, long)]
        output: PathBuf,
        /// Suite root the units' paths are relative to (to read the host code); without
        /// it only the definitions extract recorded at each launch are used.
        #[arg(long)]
        root: Option<PathBuf>,
        /// Only the pair with this id (a prefix).
        #[arg(long)]
        pair: Option<String>,
        /// Give sizes the host code does not determine this value (and float scalars 0.5),
        /// marked ASSUMED in the file, instead of a TODO.
        #[arg(long)]
        assume_size: Option<i64>,
    },
    /// Let an LLM fill the TODOs of inferred harnesses (synth's client, cache and key
    /// handling; bounded repair turns): OUT/<pair-id>.toml.
    Complete(complete::CompleteCmd),
    /// Prove harnesses on the GPU: each pair's fast kernel against itself, 2 seeds × each
    /// size set; pass/fail per check (runs clean, writes every output, deterministic,
    /// non-degenerate, depends on the seed).
    Selfcheck {
        /// JSONL file holding the pairs.
        units: PathBuf,
        /// Folders with hand-written harnesses (as `verify --harness-dir`).
        #[arg(long = "harness-dir")]
        harness_dirs: Vec<PathBuf>,
        /// Folder of inferred harnesses (`<pair-id>.toml`), used where no hand-written one exists.
        #[arg(long = "inferred-dir")]
        inferred_dir: Option<PathBuf>,
        #[arg(long = "suite-root")]
        suite_root: Option<PathBuf>,
        /// Only the pair with this id (a prefix).
        #[arg(long)]
        pair: Option<String>,
        /// Seeds per size set (at least 2: the output must change with the seed).
        #[arg(long, default_value_t = 2)]
        seeds: u32,
        #[arg(long = "timeout-s", default_value_t = 30.0)]
        timeout_s: f64,
        /// Write one JSON report per pair here.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Write the input records here with each pair's harness path and provenance
        /// (origin + self-check result) set, for `verify --in`.
        #[arg(long = "records-out")]
        records_out: Option<PathBuf>,
        /// Command to start a worker instead of this binary (`{device}` is replaced). For tests.
        #[arg(long = "worker-cmd", hide = true)]
        worker_cmd: Option<String>,
        #[arg(long, hide = true)]
        gpus: Option<usize>,
        /// Also run each harness whose kernel ran under these compute-sanitizer tools
        /// (memcheck catches reads past a too-short buffer); one more check per tool.
        #[arg(long, value_delimiter = ',')]
        sanitizer: Vec<crate::verify::sanitizer::Tool>,
        /// compute-sanitizer's path (else PATH, $CUDA_HOME/bin, $CUDA_PATH/bin, /usr/local/cuda/bin).
        #[arg(long = "compute-sanitizer")]
        compute_sanitizer: Option<PathBuf>,
    },
}

pub fn run(cmd: HarnessCommand) -> anyhow::Result<u8> {
    draft::run(cmd)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::record::{Features, Param, Provenance, Pulled};

    /// A unit with just what `check_against` reads.
    pub(crate) fn unit(kernel: &str, params: &[(&str, &str)]) -> KernelUnit {
        KernelUnit {
            id: format!("id-{kernel}"),
            suite: "test".into(),
            benchmark: "b".into(),
            variant: "v".into(),
            path: "k.cu".into(),
            line: 1,
            kernel: kernel.into(),
            params: params
                .iter()
                .map(|(t, n)| Param {
                    name: n.to_string(),
                    ty: t.to_string(),
                })
                .collect(),
            template_params: vec![],
            source: String::new(),
            symbol: kernel.into(),
            pulled: Pulled::default(),
            features: Features::default(),
            launch_sites: vec![],
            provenance: Provenance::default(),
            compile: None,
            diagnostics: vec![],
        }
    }

    pub(crate) const SAXPY: &str = r#"
description = "y = a*x + y"
[sizes]
n = 4096
[[size_sets]]
name = "small"
n = 1000
[[size_sets]]
name = "large"
[derived]
threads = "256"
[[args]]
name = "n"
type = "i32"
value = "n"
[[args]]
name = "a"
type = "f32"
value = 2.5
[[args]]
name = "x"
type = "f32"
len = "n"
init = { kind = "uniform", lo = -1.0, hi = 1.0 }
role = "in"
[[args]]
name = "y"
type = "f32"
len = "n"
init = { kind = "normal", mean = 0.0, std = 1.0 }
role = "inout"
rtol = 1e-5
[[launch]]
kernel = "saxpy"
grid = "ceil_div(n, threads)"
block = "threads"
"#;

    fn saxpy_unit() -> KernelUnit {
        unit(
            "saxpy",
            &[
                ("int", "n"),
                ("float", "a"),
                ("const float *__restrict__", "x"),
                ("float *", "y"),
            ],
        )
    }

    fn err_of(text: &str) -> String {
        parse(text, "h.toml").unwrap_err().to_string()
    }

    #[test]
    fn parses_and_resolves_every_size_set() {
        let h = parse(SAXPY, "saxpy.toml").unwrap();
        let names: Vec<_> = h.size_sets().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["small", "large"]);
        assert_eq!(h.size_sets()[0].values["n"], 1000);
        assert_eq!(h.size_sets()[1].values["n"], 4096);
        let r = h.resolve(&h.size_sets()[0], &DeviceProps::h100()).unwrap();
        assert_eq!(r.fast.len(), 1);
        assert_eq!(r.slow, r.fast, "a shared [[launch]] serves both variants");
        let l = &r.fast[0];
        assert_eq!(
            (l.grid, l.block, l.shared_mem, l.repeat),
            ([4, 1, 1], [256, 1, 1], 0, 1)
        );
        assert_eq!(l.args, vec![0, 1, 2, 3]);
        assert_eq!(r.values["threads"], 256);
        assert!(matches!(
            &r.args[0],
            ResolvedArg::Scalar {
                value: ScalarValue::I32(1000),
                ..
            }
        ));
        assert!(
            matches!(&r.args[1], ResolvedArg::Scalar { value: ScalarValue::F32(v), .. } if *v == 2.5)
        );
        match &r.args[3] {
            ResolvedArg::Buffer { len, role, tol, .. } => {
                assert_eq!((*len, *role), (1000, Role::Inout));
                assert_eq!(tol.rtol, 1e-5, "override");
                assert_eq!(
                    tol.atol,
                    Tolerance::default_for(ElemType::F32).atol,
                    "default kept"
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(r.outputs(), vec![3]);
        h.check_against(Some(&saxpy_unit()), &saxpy_unit()).unwrap();
    }

    #[test]
    fn variants_launch_differently_and_templates_interpolate() {
        let text = SAXPY.replace(
            "[[launch]]\nkernel = \"saxpy\"\ngrid = \"ceil_div(n, threads)\"\nblock = \"threads\"\n",
            r#"
[[variants.slow.launch]]
kernel = "saxpy"
grid = ["n", 1]
block = 1
[[variants.fast.launch]]
kernel = "saxpy_t<{threads * 2}>"
grid = ["ceil_div(n, 512)"]
block = ["512"]
shared_mem = "512 * 4"
repeat = 2
"#,
        );
        let h = parse(&text, "t.toml").unwrap();
        let r = h.resolve(&h.size_sets()[1], &DeviceProps::h100()).unwrap();
        assert_eq!(r.slow[0].grid, [4096, 1, 1]);
        assert_eq!(r.fast[0].kernel, "saxpy_t<512>");
        assert_eq!(
            (r.fast[0].grid[0], r.fast[0].shared_mem, r.fast[0].repeat),
            (8, 2048, 2)
        );
        let mut fast = saxpy_unit();
        fast.kernel = "saxpy_t".into();
        fast.symbol = "saxpy_t<512>".into();
        h.check_against(Some(&saxpy_unit()), &fast).unwrap();
    }

    /// A small array-of-structs grid (4 records of 3 fields, one record of margin each side), laid out
    /// as a struct of arrays for the fast kernel, with a compare window.
    pub(crate) const AOS: &str = r#"
[sizes]
cells = 4
[derived]
fields = 3
margin = 3
len = "cells * fields + 2 * margin"
[[args]]
name = "src"
type = "f32"
len = "len"
init = { kind = "fields", fields = [
  { count = 2, init = { kind = "uniform", lo = 1.0, hi = 2.0 } },
  { count = 1, type = "u32", init = { kind = "choice", values = [0, 1, 2], weights = [2, 1, 1] } },
] }
role = "in"
layout.fast = { kind = "transpose", rows = "cells + 1", cols = "fields", offset = "margin - 2" }
[[args]]
name = "dst"
type = "f32"
len = "len"
init = { kind = "copy_of", arg = "src" }
role = "inout"
layout.fast = { kind = "transpose", rows = "cells", cols = "fields", offset = "margin" }
compare = { offset = "margin", len = "cells * fields" }
[[launch]]
kernel = "k"
grid = 1
block = "cells"
args = ["src + margin", "dst + margin"]
"#;

    #[test]
    fn layouts_and_compare_windows_resolve() {
        let r = resolve_first(AOS, "aos.toml");
        match &r.args[1] {
            ResolvedArg::Buffer {
                len,
                layout,
                compare,
                ..
            } => {
                assert_eq!(*len, 18);
                assert_eq!(layout.slow, None, "slow is canonical");
                assert_eq!(
                    layout.fast,
                    Some(Layout::Transpose {
                        rows: 4,
                        cols: 3,
                        offset: 3
                    })
                );
                assert_eq!(*compare, Some(Window { offset: 3, len: 12 }));
            }
            other => panic!("{other:?}"),
        }
        match &r.args[0] {
            ResolvedArg::Buffer {
                init: Init::Fields { fields },
                compare: None,
                ..
            } => {
                assert_eq!(fields.len(), 2);
                assert_eq!((fields[0].count, fields[0].bits), (2, None));
                assert_eq!(fields[1].bits, Some(ElemType::U32));
                assert_eq!(
                    fields[1].init,
                    Init::Choice {
                        values: vec![0.0, 1.0, 2.0],
                        weights: vec![2.0, 1.0, 1.0]
                    }
                );
            }
            other => panic!("{other:?}"),
        }
        // Resolved harnesses travel to workers as JSON: layouts and windows survive it.
        let back: Resolved = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        // Buffers without them serialize as before (no new keys).
        let saxpy = parse(SAXPY, "s.toml").unwrap();
        let rs = saxpy
            .resolve(&saxpy.size_sets()[0], &DeviceProps::h100())
            .unwrap();
        let json = serde_json::to_string(&rs).unwrap();
        assert!(
            !json.contains("layout") && !json.contains("compare"),
            "{json}"
        );
    }

    #[test]
    fn layout_compare_and_field_errors_name_the_field() {
        for (from, to, want) in [
            (
                "layout.fast = { kind = \"transpose\", rows = \"cells\"",
                "layout.medium = { kind = \"transpose\", rows = \"cells\"",
                "args[1].layout.medium: layouts are per variant",
            ),
            (
                "kind = \"transpose\", rows = \"cells\", cols",
                "kind = \"shuffle\", rows = \"cells\", cols",
                "not a valid harness",
            ),
            (
                "rows = \"cells\", cols = \"fields\", offset = \"margin\" }",
                "rows = \"cells\", cols = \"fields\", offset = \"margin + 4\" }",
                "args[1].layout.fast: `margin + 4 + (cells) * (fields)` (size set default): the transposed region ends at element 19, past the buffer's 18",
            ),
            (
                "offset = \"margin\" }",
                "offset = \"0 - 1\" }",
                "args[1].layout.fast.offset: `0 - 1`",
            ),
            (
                "rows = \"cells\", cols",
                "rows = \"0\", cols",
                "args[1].layout.fast.rows: `0` (size set default): must be > 0",
            ),
            (
                "compare = { offset = \"margin\", len = \"cells * fields\" }",
                "compare = { offset = \"margin\", len = \"cells * fields + 4\" }",
                "args[1].compare: `margin + cells * fields + 4` (size set default): the window ends at element 19, past the buffer's 18",
            ),
            (
                "role = \"in\"\nlayout",
                "role = \"in\"\ncompare = { len = 2 }\nlayout",
                "args[0].compare: \"src\" is an input",
            ),
            (
                "{ count = 1, type = \"u32\"",
                "{ count = 1, type = \"u64\"",
                "args[0].init.fields[1].type: u64 is 8 bytes, the buffer's f32 is 4",
            ),
            (
                "{ count = 2, init = { kind = \"uniform\", lo = 1.0, hi = 2.0 } }",
                "{ count = 2, init = { kind = \"permutation\" } }",
                "args[0].init.fields[0].init: a field takes an elementwise init",
            ),
            (
                "{ count = 2, init = { kind = \"uniform\", lo = 1.0, hi = 2.0 } }",
                "{ count = 2, init = { kind = \"int_range\", lo = 1, hi = 2 } }",
                "int_range in a float field",
            ),
            (
                "weights = [2, 1, 1]",
                "weights = [2, 1]",
                "args[0].init.fields[1].init: choice has 3 values but 2 weights",
            ),
            (
                "weights = [2, 1, 1]",
                "weights = [0, 0, 0]",
                "not all zero",
            ),
            (
                "{ count = 2, init",
                "{ count = 4, init",
                "src: records of 5 fields do not tile its 18 elements",
            ),
            (
                "{ count = 2, init",
                "{ count = \"fields - 3\", init",
                "args[0].init.fields[0].count: `fields - 3` (size set default): must be > 0, is 0",
            ),
            (
                "values = [0, 1, 2]",
                "values = [0, 1.5, 2]",
                "src: fields[1]: choice value 1.5 is not a u32 integer",
            ),
        ] {
            assert!(AOS.contains(from), "{from}");
            let e = err_of(&AOS.replace(from, to));
            assert!(e.contains(want), "{to}: {e}");
            assert!(e.starts_with("h.toml"), "{e}");
        }
        // A scalar takes no layout.
        let e = err_of(&SAXPY.replace(
            "value = \"n\"",
            "value = \"n\"\nlayout.fast = { kind = \"transpose\", rows = 1, cols = 1 }",
        ));
        assert!(e.contains("takes no layout"), "{e}");
        // The same layout on both sides is the canonical one: say neither.
        let both = AOS.replace(
            "layout.fast = { kind = \"transpose\", rows = \"cells\", cols = \"fields\", offset = \"margin\" }",
            "layout.fast = { kind = \"transpose\", rows = \"cells\", cols = \"fields\", offset = \"margin\" }\nlayout.slow = { kind = \"transpose\", rows = \"cells\", cols = \"fields\", offset = \"margin\" }",
        );
        assert!(err_of(&both).contains("same layout"), "{}", err_of(&both));
    }

    #[test]
    fn errors_name_the_file_and_field() {
        let e = err_of(&SAXPY.replace("type = \"f32\"\nlen", "type = \"float\"\nlen"));
        assert!(
            e.contains("h.toml: args[2].type") && e.contains("unknown element type"),
            "{e}"
        );
        let e = err_of(&SAXPY.replace("role = \"in\"\n", ""));
        assert!(
            e.contains("args[2].role") && e.contains("needs a role"),
            "{e}"
        );
        let e = err_of(&SAXPY.replace("role = \"in\"", "role = \"input\""));
        assert!(e.contains("args[2].role"), "{e}");
        let e = err_of(&SAXPY.replace("name = \"small\"\nn = 1000", "name = \"small\"\nm = 1000"));
        assert!(
            e.contains("size_sets[0].m") && e.contains("does not declare"),
            "{e}"
        );
        // An expression that fails for one size set only names that set.
        let e = err_of(&SAXPY.replace(
            "len = \"n\"\ninit = { kind = \"uniform\"",
            "len = \"n - 1000\"\ninit = { kind = \"uniform\"",
        ));
        assert!(
            e.contains("args[2].len") && e.contains("size set small") && e.contains("must be > 0"),
            "{e}"
        );
        let e = err_of(&SAXPY.replace("block = \"threads\"", "block = \"threads * 8\""));
        assert!(
            e.contains("launch[0].block") && e.contains("exceeds"),
            "{e}"
        );
        let e = err_of(&SAXPY.replace("block = \"threads\"", "block = \"TODO\""));
        assert!(
            e.contains("launch[0].block[0]") && e.contains("TODO"),
            "{e}"
        );
        let e = err_of(&SAXPY.replace("value = \"n\"", "value = \"n\"\nrole = \"in\""));
        assert!(
            e.contains("args[0]") && e.contains("takes no init or role"),
            "{e}"
        );
        let e = err_of(&format!("require = [\"n % 64 == 0\"]\n{SAXPY}"));
        assert!(
            e.contains("require[0]") && e.contains("size set small"),
            "{e}"
        );
        let e = err_of(&format!("{SAXPY}\nbogus = 1\n"));
        assert!(e.contains("unknown field"), "{e}");
        let e = err_of(
            &SAXPY.replace("role = \"inout\"", "role = \"out\"").replace(
                "kind = \"normal\", mean = 0.0, std = 1.0",
                "kind = \"zeros\"",
            ),
        );
        assert!(e.contains("make its role inout"), "{e}");
        let e = err_of(&SAXPY.replace("role = \"inout\"", "role = \"in\""));
        assert!(e.contains("args: no buffer has role out or inout"), "{e}");
        let e = err_of(&SAXPY.replace("[[launch]]", "[[xlaunch]]"));
        assert!(e.contains("unknown field"), "{e}");
        let e = err_of(&SAXPY.replace(
            "kernel = \"saxpy\"",
            "kernel = \"saxpy\"\nargs = [\"n\", \"zz\"]",
        ));
        assert!(e.contains("launch[0].args") && e.contains("\"zz\""), "{e}");
    }

    #[test]
    fn check_against_catches_signature_mismatches() {
        let h = parse(SAXPY, "s.toml").unwrap();
        let short = unit("saxpy", &[("int", "n"), ("float", "a"), ("float *", "x")]);
        let e = h.check_against(None, &short).unwrap_err().to_string();
        assert!(e.contains("passes 4 args, the kernel takes 3"), "{e}");
        let dbl = unit(
            "saxpy",
            &[
                ("int", "n"),
                ("float", "a"),
                ("const double *", "x"),
                ("float *", "y"),
            ],
        );
        let e = h.check_against(None, &dbl).unwrap_err().to_string();
        assert!(
            e.contains("parameter 2") && e.contains("f64") && e.contains("f32"),
            "{e}"
        );
        let swapped = unit(
            "saxpy",
            &[
                ("int *", "n"),
                ("float", "a"),
                ("const float *", "x"),
                ("float *", "y"),
            ],
        );
        let e = h.check_against(None, &swapped).unwrap_err().to_string();
        assert!(e.contains("is a pointer, but arg \"n\" is a scalar"), "{e}");
        let const_y = unit(
            "saxpy",
            &[
                ("int", "n"),
                ("float", "a"),
                ("const float *", "x"),
                ("const float *", "y"),
            ],
        );
        let e = h.check_against(None, &const_y).unwrap_err().to_string();
        assert!(
            e.contains("points to const, but arg \"y\" is an output"),
            "{e}"
        );
        let const_ptr = unit(
            "saxpy",
            &[
                ("int", "n"),
                ("float", "a"),
                ("const float *", "x"),
                ("float *const", "y"),
            ],
        );
        h.check_against(None, &const_ptr).unwrap();
        // Constants must exist in a unit's source.
        let with_const = format!("{SAXPY}\n[[constants]]\nname = \"table\"\ntype = \"f32\"\nlen = 4\ninit = {{ kind = \"zeros\" }}\n");
        let h2 = parse(&with_const, "c.toml").unwrap();
        let mut u = saxpy_unit();
        u.source = "__constant__ float other[4];\n__global__ void saxpy() {}".into();
        let e = h2.check_against(None, &u).unwrap_err().to_string();
        assert!(
            e.contains("constant \"table\" is not a __constant__ symbol"),
            "{e}"
        );
        u.source = "__constant__ float table[4];\n".into();
        h2.check_against(None, &u).unwrap();
        let other = unit(
            "daxpy",
            &saxpy_unit()
                .params
                .iter()
                .map(|p| (p.ty.as_str(), p.name.as_str()))
                .collect::<Vec<_>>(),
        );
        let e = h
            .check_against(Some(&other), &saxpy_unit())
            .unwrap_err()
            .to_string();
        assert!(e.contains("(slow)") && e.contains("daxpy"), "{e}");
    }

    #[test]
    fn c_types_map_to_elements() {
        assert_eq!(
            ElemType::from_c_type("const float *__restrict__"),
            Some(ElemType::F32)
        );
        assert_eq!(ElemType::from_c_type("unsigned int*"), Some(ElemType::U32));
        assert_eq!(ElemType::from_c_type("uchar4 *"), Some(ElemType::U8));
        assert_eq!(ElemType::from_c_type("const int"), Some(ElemType::I32));
        assert_eq!(ElemType::from_c_type("struct kValues *"), None);
        assert!(c_is_pointer("float*") && !c_is_pointer("float"));
        assert_eq!(c_base_type("const struct kValues *"), "kValues");
        // A struct pointer is accepted when the arg declares it.
        assert!(type_matches("struct kValues *", ElemType::F32, Some("kValues"), "").is_ok());
        assert!(type_matches("struct kValues *", ElemType::F32, None, "").is_err());
        // Macros and typedefs in the unit's source give names their types.
        let src =
            "#define REAL float\ntypedef unsigned long hist_t;\n#define SCALAR REAL // alias\n";
        assert!(type_matches("REAL *", ElemType::F32, None, src).is_ok());
        assert!(type_matches("const SCALAR *", ElemType::F32, None, src).is_ok());
        assert!(type_matches("hist_t *", ElemType::U64, None, src).is_ok());
        assert!(type_matches("hist_t *", ElemType::U32, None, src).is_err());
        assert!(type_matches("hist_t *", ElemType::U64, Some("unsigned long"), src).is_ok());
    }

    #[test]
    fn scalar_values_must_fit() {
        assert_eq!(
            ScalarValue::from_num(ElemType::U8, Num::Int(255)),
            Ok(ScalarValue::U8(255))
        );
        assert!(ScalarValue::from_num(ElemType::U8, Num::Int(256)).is_err());
        assert!(ScalarValue::from_num(ElemType::I32, Num::Float(1.5)).is_err());
        assert_eq!(
            ScalarValue::I32(-2).to_le_bytes(),
            vec![0xFE, 0xFF, 0xFF, 0xFF]
        );
        assert_eq!(
            ScalarValue::from_num(ElemType::F16, Num::Float(1.0))
                .unwrap()
                .to_le_bytes(),
            vec![0x00, 0x3C]
        );
    }

    #[test]
    fn locate_prefers_specific_names_then_walks_the_suite_tree() {
        let dir = tempfile::tempdir().unwrap();
        let ext = dir.path().join("extractors/parboil");
        let suite = dir.path().join("suite");
        std::fs::create_dir_all(&ext).unwrap();
        std::fs::create_dir_all(suite.join("benchmarks/stencil/src/cuda_fermi")).unwrap();
        let mut fast = unit("block2D_reg_tiling", &[]);
        fast.variant = "cuda_fermi".into();
        fast.path = "benchmarks/stencil/src/cuda_fermi/kernels.cu".into();
        let pair = Pair {
            id: "p".into(),
            suite: "parboil".into(),
            benchmark: "stencil".into(),
            kernel: fast.kernel.clone(),
            slow: None,
            fast,
            origin: crate::record::Origin::Natural,
            rule: "r".into(),
            identical: false,
            techniques: vec![],
            description: None,
            harness: None,
            harness_origin: None,
            verification: None,
            synth: None,
        };
        assert_eq!(locate(&pair, Some(&ext), Some(&suite)), None);
        std::fs::write(suite.join("benchmarks/stencil/harness.toml"), "").unwrap();
        assert_eq!(
            locate(&pair, Some(&ext), Some(&suite)),
            Some(suite.join("benchmarks/stencil/harness.toml"))
        );
        std::fs::write(ext.join("stencil.toml"), "").unwrap();
        assert_eq!(
            locate(&pair, Some(&ext), Some(&suite)),
            Some(ext.join("stencil.toml"))
        );
        std::fs::write(ext.join("stencil.cuda_fermi.toml"), "").unwrap();
        assert_eq!(
            locate(&pair, Some(&ext), None),
            Some(ext.join("stencil.cuda_fermi.toml"))
        );
    }

    /// SAXPY whose `x` is also read through a 2D texture `tx` (8 × 125 with a pitch of 125).
    fn saxpy_tex(entry: &str) -> String {
        format!("{SAXPY}\n[[textures]]\n{entry}\n")
    }

    #[test]
    fn textures_resolve_to_the_shim_struct() {
        let h = parse(
            &saxpy_tex(
                "name = \"tx\"\nbuffer = \"x\"\nwidth = 100\nheight = \"n / 125\"\npitch = 125",
            ),
            "t.toml",
        )
        .unwrap();
        let r = h.resolve(&h.size_sets()[0], &DeviceProps::h100()).unwrap();
        let t = &r.textures[0];
        assert_eq!((t.name.as_str(), t.buffer), ("tx", 2));
        assert_eq!((t.width, t.height, t.pitch), (100, 8, 125));
        let b = t.struct_bytes(0x1122_3344_5566_7788);
        assert_eq!(b.len(), 24);
        assert_eq!(&b[..8], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(&b[8..12], &100i32.to_le_bytes());
        assert_eq!(&b[12..16], &8i32.to_le_bytes());
        assert_eq!(&b[16..20], &125i32.to_le_bytes());
        // A 1D texture defaults to the whole buffer.
        let h = parse(&saxpy_tex("name = \"tx\"\nbuffer = \"x\""), "t.toml").unwrap();
        let r = h.resolve(&h.size_sets()[1], &DeviceProps::h100()).unwrap();
        assert_eq!(
            (
                r.textures[0].width,
                r.textures[0].height,
                r.textures[0].pitch
            ),
            (4096, 0, 0)
        );
    }

    #[test]
    fn bad_textures_are_refused_with_the_field() {
        let e = err_of(&saxpy_tex("name = \"tx\"\nbuffer = \"a\""));
        assert!(
            e.contains("textures[0].buffer") && e.contains("not a buffer"),
            "{e}"
        );
        let e = err_of(&saxpy_tex("name = \"tx\"\nbuffer = \"x\"\npitch = 4"));
        assert!(e.contains("needs a height"), "{e}");
        // 9 rows of 125 do not fit the 1000 elements of x in size set `small`.
        let e = err_of(&saxpy_tex(
            "name = \"tx\"\nbuffer = \"x\"\nwidth = 125\nheight = 9",
        ));
        assert!(
            e.contains("does not fit buffer") && e.contains("small"),
            "{e}"
        );
        let e = err_of(&saxpy_tex("name = \"tx\"\nbuffer = \"x\"\ncolour = 1"));
        assert!(e.contains("colour"), "{e}");
    }

    #[test]
    fn check_requires_every_shimmed_texture_filled_and_no_stray_entries() {
        let mut u = saxpy_unit();
        u.source = format!(
            "{}\n__device__ kernelpair_legacy_texture<float, 1> tx;\n__global__ void saxpy(int n, float a, const float *__restrict__ x, float *y) {{}}\n",
            crate::cuda::texture::SHIM
        );
        let bare = parse(SAXPY, "s.toml").unwrap();
        let e = bare.check_against(None, &u).unwrap_err().to_string();
        assert!(e.contains("\"tx\"") && e.contains("[[textures]]"), "{e}");
        let filled = parse(&saxpy_tex("name = \"tx\"\nbuffer = \"x\""), "t.toml").unwrap();
        filled.check_against(None, &u).unwrap();
        let stray = parse(
            &saxpy_tex(
                "name = \"tx\"\nbuffer = \"x\"\n[[textures]]\nname = \"ty\"\nbuffer = \"y\"",
            ),
            "t.toml",
        )
        .unwrap();
        let e = stray.check_against(None, &u).unwrap_err().to_string();
        assert!(
            e.contains("\"ty\"") && e.contains("not a legacy texture"),
            "{e}"
        );
        let two_d = parse(
            &saxpy_tex("name = \"tx\"\nbuffer = \"x\"\nwidth = 100\nheight = 2"),
            "t.toml",
        )
        .unwrap();
        let e = two_d.check_against(None, &u).unwrap_err().to_string();
        assert!(e.contains("1D"), "{e}");
    }

    /// The first size set of harness `text`, resolved for an H100.
    fn resolve_first(text: &str, origin: &str) -> Resolved {
        let h = parse(text, origin).unwrap();
        h.resolve(&h.size_sets()[0], &DeviceProps::h100()).unwrap()
    }

    #[test]
    fn ignore_resolves_per_size_set_and_rejects_empty_ranges() {
        let with =
            |g: &str| SAXPY.replace("rtol = 1e-5\n", &format!("rtol = 1e-5\nignore = {g}\n"));
        let h = parse(
            &with("{ period = \"n / 10\", from = 98, to = 100 }"),
            "i.toml",
        )
        .unwrap();
        let r = h.resolve(&h.size_sets()[0], &DeviceProps::h100()).unwrap();
        assert_eq!(
            r.ignores,
            vec![Ignore {
                arg: 3,
                period: 100,
                from: 98,
                to: 100
            }]
        );
        assert!(r.ignores[0].contains(198) && !r.ignores[0].contains(197));
        let e = err_of(&with("{ period = 100, from = 5, to = 5 }"));
        assert!(
            e.contains("args[3].ignore") && e.contains("from < to"),
            "{e}"
        );
        let e = err_of(&with("{ period = 100, from = 5 }"));
        assert!(e.contains("to"), "{e}");
        // A range from the start of each period, here the whole buffer (scratch).
        let r = resolve_first(&with("{ period = 1, from = 0, to = 1 }"), "i.toml");
        assert!((0..5).all(|i| r.ignores[0].contains(i)));
        let e = err_of(&with("{ period = 4, from = -1, to = 2 }"));
        assert!(e.contains("ignore.from") && e.contains(">= 0"), "{e}");
    }

    /// A gather kernel that takes two buffers' addresses in one struct, by value.
    const SOA: &str = r#"
[sizes]
n = 64
[[args]]
name = "pair"
struct = ["xs", "ys"]
c_type = "xy_t"
[[args]]
name = "xs"
type = "f32"
len = "n"
init = { kind = "iota", every = 4, period = 3 }
role = "in"
[[args]]
name = "ys"
type = "f32"
len = "2 * n"
init = { kind = "uniform", lo = 0.0, hi = 1.0 }
role = "in"
[[args]]
name = "out"
type = "f32"
len = "n"
role = "out"
[[launch]]
kernel = "gather"
grid = 1
block = "n"
args = ["pair", "out"]
"#;

    #[test]
    fn struct_args_resolve_to_their_buffers_and_check_the_c_type() {
        let h = parse(SOA, "soa.toml").unwrap();
        let r = h.resolve(&h.size_sets()[0], &DeviceProps::h100()).unwrap();
        assert_eq!(
            r.args[0],
            ResolvedArg::Struct {
                name: "pair".into(),
                fields: vec![1, 2],
            },
            "fields in the order written, as indices of the buffer args"
        );
        assert_eq!(r.fast[0].args, vec![0, 3]);
        assert_eq!(r.outputs(), vec![3], "a struct is no output");
        // It travels to workers inside the resolved set (JSON), as does iota's every/period.
        let back: Resolved = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
        assert_eq!(back, r);
        let u = unit("gather", &[("xy_t", "p"), ("float *", "out")]);
        h.check_against(None, &u).unwrap();
        let u = unit("gather", &[("struct xy_t", "p"), ("float *", "out")]);
        h.check_against(None, &u).unwrap();
        let u = unit("gather", &[("other_t", "p"), ("float *", "out")]);
        let e = h.check_against(None, &u).unwrap_err().to_string();
        assert!(
            e.contains("declared c_type \"xy_t\" but the parameter is \"other_t\""),
            "{e}"
        );
        let u = unit("gather", &[("xy_t *", "p"), ("float *", "out")]);
        let e = h.check_against(None, &u).unwrap_err().to_string();
        assert!(
            e.contains("is a pointer, but arg \"pair\" is a struct"),
            "{e}"
        );
        // Its fields' addresses, 8 bytes each, little-endian, in order.
        let b = struct_arg_bytes(&[0x1122_3344_5566_7788, 0x0102]);
        assert_eq!(b.len(), 16);
        assert_eq!(&b[..8], &0x1122_3344_5566_7788u64.to_le_bytes());
        assert_eq!(&b[8..], &[2, 1, 0, 0, 0, 0, 0, 0]);
        // A struct cannot be passed at an offset.
        let off = SOA.replace("[\"pair\", \"out\"]", "[\"pair + 1\", \"out\"]");
        let e = err_of(&off);
        assert!(e.contains("only a buffer can take an offset"), "{e}");
    }

    #[test]
    fn bad_struct_args_are_refused_with_the_field() {
        let e = err_of(&SOA.replace("[\"xs\", \"ys\"]", "[\"xs\", \"zs\"]"));
        assert!(
            e.contains("args[0].struct[1]") && e.contains("no arg is named \"zs\""),
            "{e}"
        );
        let scalar = format!("{SOA}[[args]]\nname = \"m\"\ntype = \"i32\"\nvalue = 3\n");
        let e = err_of(&scalar.replace("[\"xs\", \"ys\"]", "[\"m\", \"ys\"]"));
        assert!(
            e.contains("args[0].struct[0]") && e.contains("\"m\" is not a buffer arg"),
            "{e}"
        );
        let e = err_of(&SOA.replace("[\"xs\", \"ys\"]", "[\"xs\", \"ys\", \"out\"]"));
        assert!(
            e.contains("args[0].struct")
                && e.contains("1 to 2 buffer addresses")
                && e.contains("not 3"),
            "{e}"
        );
        let e = err_of(&SOA.replace("[\"xs\", \"ys\"]", "[]"));
        assert!(e.contains("not 0"), "{e}");
        let e = err_of(&SOA.replace("c_type = \"xy_t\"\n", ""));
        assert!(
            e.contains("args[0].c_type") && e.contains("needs c_type"),
            "{e}"
        );
        for (extra, what) in [
            ("len = \"n\"", "len"),
            ("type = \"u64\"", "type"),
            ("value = 1", "value"),
            ("role = \"in\"", "role"),
            ("rtol = 0.1", "a tolerance"),
        ] {
            let e = err_of(&SOA.replace(
                "c_type = \"xy_t\"\n",
                &format!("c_type = \"xy_t\"\n{extra}\n"),
            ));
            assert!(
                e.contains("args[0]")
                    && e.contains(&format!("takes only name, struct and c_type, not {what}")),
                "{extra}: {e}"
            );
        }
        // A struct is no buffer: nothing may copy or interleave it.
        let e = err_of(&SOA.replace(
            "init = { kind = \"uniform\", lo = 0.0, hi = 1.0 }",
            "init = { kind = \"copy_of\", arg = \"pair\" }",
        ));
        assert!(e.contains("copy_of names no buffer arg \"pair\""), "{e}");
    }

    #[test]
    fn iota_repeats_with_every_and_wraps_with_period() {
        let r = resolve_first(SOA, "soa.toml");
        let xs = &gen::generate_inputs(&r, 1).unwrap()[1];
        let got: Vec<f64> = (0..16).map(|i| xs.get_f64(i)).collect();
        let want: Vec<f64> = (0..16).map(|i| ((i / 4) % 3) as f64).collect();
        assert_eq!(got, want);
        for (bad, field) in [("every = 0", "every"), ("period = -2", "period")] {
            // Parse resolves every size set, so the error comes from parse.
            let e = err_of(&SOA.replace("every = 4, period = 3", bad));
            assert!(
                e.contains(&format!("init.{field}")) && e.contains("must be > 0"),
                "{e}"
            );
        }
    }
}
