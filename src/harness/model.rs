//! The harness data model: element types, roles, tolerances, size sets, inputs, launches,
//! the checked [`Harness`] and what it resolves to ([`Resolved`]) for one size set.

use super::*;

#[derive(Debug, thiserror::Error)]
pub enum HarnessError {
    #[error(transparent)]
    Io(#[from] crate::path_io::PathIo),
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

pub use crate::cuda::ctype::{c_base_type, c_is_pointer, ElemType};

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

pub use crate::evidence::Tolerance;

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
        let (atol, rtol, l2, scale) = match elem {
            ElemType::F32 => (1e-5, 1e-3, 1e-4, 3e-5),
            ElemType::F64 => (1e-12, 1e-9, 1e-10, 1e-13),
            ElemType::F16 => (1e-3, 1e-2, 5e-3, 5e-3),
            ElemType::BF16 => (1e-2, 5e-2, 2e-2, 2e-2),
            _ => (0.0, 0.0, 0.0, 0.0),
        };
        Tolerance {
            atol,
            rtol,
            l2,
            scale,
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
    /// The bytes a real program held (a captured allocation): blob `id` of the capture's
    /// blob store at `blobs` ([`crate::gpu::capture::BlobStore`]).
    Captured {
        blobs: std::path::PathBuf,
        id: String,
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

pub(super) fn one_i64() -> i64 {
    1
}

pub(super) fn is_one_i64(v: &i64) -> bool {
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
    /// A parameter's bytes as a real program passed them (a captured launch): any size,
    /// with the device addresses inside replaced by the replay's buffers.
    Bytes {
        name: String,
        bytes: Vec<u8>,
        pointers: Vec<BytesPointer>,
    },
}

/// An 8-byte device address inside a [`ResolvedArg::Bytes`]: at byte `at`, the address of
/// buffer arg `arg` plus `offset` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BytesPointer {
    pub at: usize,
    pub arg: usize,
    pub offset: u64,
}

impl ResolvedArg {
    pub fn name(&self) -> &str {
        match self {
            ResolvedArg::Buffer { name, .. }
            | ResolvedArg::Scalar { name, .. }
            | ResolvedArg::Struct { name, .. }
            | ResolvedArg::Bytes { name, .. } => name,
        }
    }
}

/// What a buffer must hold after the fast variant ran: the captured program's own output
/// (the third witness of a captured harness's self-check).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Expected {
    /// Index into [`Resolved::args`] (an output buffer).
    pub arg: usize,
    /// Its bytes, as an init ([`Init::Captured`]).
    pub init: Init,
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

/// A texture or surface object a kernel parameter takes: the runner creates it over buffer
/// arg `object.resource.alloc()` (over a fresh CUDA array filled from that buffer, for an
/// array resource) and writes its handle into the first 8 bytes of bytes arg `arg`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResolvedObject {
    pub name: String,
    pub arg: usize,
    pub object: crate::gpu::objects::ObjectDesc,
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
    /// A cooperative launch (`cuLaunchCooperativeKernel`): the kernel syncs its whole grid.
    #[serde(default)]
    pub cooperative: bool,
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
    /// Texture and surface objects passed as parameters (a captured launch's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub objects: Vec<ResolvedObject>,
    /// Output indices left out of the comparison, per buffer arg.
    #[serde(default)]
    pub ignores: Vec<Ignore>,
    pub sparse: Vec<SparseMatrix>,
    pub slow: Vec<Launch>,
    pub fast: Vec<Launch>,
    /// Outputs whose bytes are known in advance (a captured launch's recorded results):
    /// a self-check compares the fast variant's output with them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub expected: Vec<Expected>,
}

impl Init {
    /// The same bytes whatever the seed: a captured snapshot, a fill, a formula. Anything
    /// drawn (or made from other args) counts as seeded.
    pub fn seed_free(&self) -> bool {
        matches!(
            self,
            Init::Zeros
                | Init::Constant { .. }
                | Init::Poison
                | Init::Linspace { .. }
                | Init::Iota { .. }
                | Init::Captured { .. }
        )
    }
}

impl Resolved {
    /// Every input the same whatever the seed (a captured launch's snapshot): one seed
    /// checks all there is to check, and more seeds only repeat it.
    pub fn seed_free(&self) -> bool {
        self.args.iter().all(|a| match a {
            ResolvedArg::Buffer { init, .. } => init.seed_free(),
            _ => true,
        }) && self.constants.iter().all(|c| c.init.seed_free())
    }

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
    /// `cooperative = true`: launched with `cuLaunchCooperativeKernel`.
    pub cooperative: bool,
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
pub struct RawInitText(#[serde(skip)] pub(crate) RawInit);

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
    pub(crate) init: RawInitText,
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
    pub(crate) size_sets: Vec<SizeSet>,
    pub(crate) derived: Vec<(String, String)>,
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
