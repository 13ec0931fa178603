//! What NVRTC provides without any header (keywords, CUDA builtins, math functions),
//! which system headers a unit may keep, and small shims for the host-header names
//! device code commonly uses (`FLT_MAX`, `M_PI`, `uint32_t`, `uint`).

use std::collections::HashSet;
use std::sync::LazyLock;

const KEYWORDS: &str =
    "alignas alignof asm auto bool break case catch char char16_t char32_t class \
const constexpr const_cast continue decltype default delete do double dynamic_cast else enum \
explicit export extern false float for friend goto if inline int long mutable namespace new \
noexcept nullptr operator private protected public register reinterpret_cast return short signed \
sizeof static static_assert static_cast struct switch template this thread_local throw true try \
typedef typeid typename union unsigned using virtual void volatile wchar_t while restrict \
defined __global__ __device__ __host__ __shared__ __constant__ __managed__ __restrict__ \
__forceinline__ __noinline__ __launch_bounds__ __align__ __inline__ __volatile__ __asm__ \
__grid_constant__ __restrict";

const CUDA_BUILTINS: &str = "threadIdx blockIdx blockDim gridDim warpSize dim3 size_t ptrdiff_t \
NULL printf assert malloc free memcpy memset clock clock64 min max umin umax llmin llmax ullmin \
ullmax std half half2 nv_bfloat16 nv_bfloat162 cudaTextureObject_t cudaSurfaceObject_t \
cudaReadModeElementType cudaReadModeNormalizedFloat cudaFilterModePoint cudaFilterModeLinear \
cudaAddressModeClamp cudaAddressModeWrap texture surface tex1D tex1Dfetch tex2D tex3D tex1DLayered \
tex2DLayered texCubemap tex2Dgather surf1Dread surf1Dwrite surf2Dread surf2Dwrite surf3Dread \
surf3Dwrite cudaBoundaryModeTrap cudaBoundaryModeClamp cudaBoundaryModeZero \
abs labs llabs fabs fabsf isnan isinf isfinite signbit sincos sincosf sincospi sincospif \
saturate rsqrt rsqrtf rcbrt rcbrtf normcdf normcdff normcdfinv normcdfinvf erfcx erfcxf \
erfinv erfinvf erfcinv erfcinvf j0 j0f j1 j1f jn jnf y0 y0f y1 y1f yn ynf cyl_bessel_i0 \
cyl_bessel_i0f cyl_bessel_i1 cyl_bessel_i1f norm normf norm3d norm3df norm4d norm4df rnorm \
rnormf rnorm3d rnorm3df rnorm4d rnorm4df rhypot rhypotf sinpi sinpif cospi cospif exp10 \
exp10f nan nanf cub thrust";

/// Names of <math.h> functions; each also exists with an `f` suffix.
const MATH: &str = "sqrt cbrt exp exp2 expm1 log log2 log10 log1p logb ilogb pow sin cos tan asin \
acos atan atan2 sinh cosh tanh asinh acosh atanh floor ceil round lround llround trunc rint \
lrint llrint nearbyint fmod remainder remquo fmin fmax fma fdim hypot erf erfc lgamma tgamma \
copysign ldexp frexp modf nextafter scalbn scalbln";

static KEYWORD_SET: LazyLock<HashSet<&'static str>> =
    LazyLock::new(|| KEYWORDS.split_whitespace().collect());

static BUILTIN_SET: LazyLock<HashSet<String>> = LazyLock::new(|| {
    let mut s: HashSet<String> = CUDA_BUILTINS
        .split_whitespace()
        .map(str::to_string)
        .collect();
    for m in MATH.split_whitespace() {
        s.insert(m.to_string());
        s.insert(format!("{m}f"));
    }
    s
});

/// A C++ or CUDA keyword (never a reference to a declaration).
pub fn is_keyword(name: &str) -> bool {
    KEYWORD_SET.contains(name)
}

/// Keywords old code redefines with a macro (`#define bool char`, `#define real float`):
/// a unit must carry such a macro when it uses the word.
pub fn is_redefinable(name: &str) -> bool {
    matches!(
        name,
        "bool"
            | "true"
            | "false"
            | "inline"
            | "restrict"
            | "char"
            | "int"
            | "float"
            | "double"
            | "long"
            | "short"
            | "unsigned"
            | "signed"
    )
}

/// Provided by NVRTC itself: builtin variables, types, intrinsics, math functions.
pub fn is_builtin(name: &str) -> bool {
    if is_keyword(name) || BUILTIN_SET.contains(name) || reserved_builtin(name) {
        return true;
    }
    if let Some(rest) = name.strip_prefix("atomic") {
        return rest.starts_with(char::is_uppercase);
    }
    // `make_float4`, `make_cudaExtent`, `make_half2`: CUDA's makers; a program's own
    // `make_pk` is not one (HeCBench ecdh's helper was taken for a builtin and left out).
    let maker = name.strip_prefix("make_").is_some_and(|r| {
        is_vector_type(r)
            || r.starts_with("cuda")
            || r.starts_with("half")
            || r.starts_with("bfloat")
            || r.starts_with("nv_")
    });
    if maker || is_vector_type(name) {
        return true;
    }
    // `cudaError_t`, `cudaReadModeElementType`, … are types and enumerators of the runtime.
    name.starts_with("cuda") && name[4..].starts_with(char::is_uppercase)
}

/// `float4`, `int2`, `uchar3`, `double2`, `longlong2` …
pub fn is_vector_type(name: &str) -> bool {
    let Some(last) = name.chars().last() else {
        return false;
    };
    if !('1'..='4').contains(&last) {
        return false;
    }
    let base = &name[..name.len() - 1];
    let base = base.strip_prefix('u').unwrap_or(base);
    matches!(
        base,
        "char" | "short" | "int" | "long" | "longlong" | "float" | "double"
    )
}

/// Warp-level primitives, for the feature flag.
pub fn is_warp_primitive(name: &str) -> bool {
    name.starts_with("__shfl")
        || name.starts_with("__ballot")
        || name.starts_with("__any")
        || name.starts_with("__all")
        || name == "__syncwarp"
        || name.starts_with("__reduce_")
        || name == "__activemask"
        || name.starts_with("__match_")
}

/// A device call that takes its operands by value and writes through none of them: the
/// [`MATH`] functions (not `frexp`, `modf` and `remquo`, which store through a pointer,
/// nor `sincos`), CUDA's fast intrinsics and absolute values, `min`/`max`, `__ldg`,
/// `tex1Dfetch` and `printf`.
pub fn is_pure_call(name: &str) -> bool {
    const OTHERS: &str = "min max abs fabs fabsf rsqrt rsqrtf exp10f __expf __logf __powf \
__sinf __cosf __fdividef __ldg tex1Dfetch printf";
    let math = |m: &str| {
        !matches!(m, "frexp" | "modf" | "remquo") && MATH.split_whitespace().any(|x| x == m)
    };
    math(name) || name.strip_suffix('f').is_some_and(math) || OTHERS.split(' ').any(|x| x == name)
}

pub fn is_atomic(name: &str) -> bool {
    name.strip_prefix("atomic")
        .is_some_and(|r| r.starts_with(char::is_uppercase))
}

/// Headers device code may keep: NVRTC resolves them given the toolkit's include
/// folder (the `nvidia-cuda-nvrtc` wheel ships them next to the library).
const NVRTC_HEADERS: &[&str] = &[
    "cuda_fp16.h",
    "cuda_bf16.h",
    "cuda_fp8.h",
    "cuda_fp6.h",
    "cuda_fp4.h",
    "cuda_pipeline_primitives.h",
    "cuda_awbarrier_primitives.h",
    "sm_60_atomic_functions.h",
    "sm_61_intrinsics.h",
    "math_constants.h",
    "cooperative_groups.h",
    "mma.h",
    "cuda_pipeline.h",
    "cuda_awbarrier.h",
    "cuComplex.h",
];

/// `__syncthreads`, `__half`, `__CUDA_ARCH__`: CUDA's reserved names. A suite's own
/// `__TOptionData` (cuda-samples' option structs: `__` then an upper-case word with
/// lower-case letters) is not one and is looked up in the scope like any name.
fn reserved_builtin(name: &str) -> bool {
    let Some(rest) = name.strip_prefix("__") else {
        return false;
    };
    let user_type = rest.starts_with(|c: char| c.is_ascii_uppercase())
        && rest.chars().any(|c| c.is_ascii_lowercase())
        && !rest.ends_with("__");
    !user_type
}

/// Folders of CUDA's own headers (CCCL: CUB, Thrust, libcu++; cooperative groups) that
/// NVRTC compiles from the CUDA include path.
const NVRTC_HEADER_DIRS: &[&str] = &[
    "cooperative_groups/",
    "cub/",
    "cuda/",
    "nv/",
    "thrust/",
    "crt/",
    "curand_",
];

/// Whether a system header can stay in an isolated unit.
pub fn keep_system_header(target: &str) -> bool {
    NVRTC_HEADERS.contains(&target) || NVRTC_HEADER_DIRS.iter().any(|d| target.starts_with(d))
}

/// CUB's umbrella header, which refuses NVRTC (`#error … Including <cub/cub.cuh> is not
/// supported when compiling with NVRTC`). `CCCL_DISABLE_NVRTC_COMPATIBILITY_CHECK` gets past
/// the `#error` only to fail on CUB's host functions ("A function explicitly marked as a
/// __host__ function is not allowed in JIT mode", CCCL 3 from the PyPI wheels), so a unit
/// gets the specific device headers instead ([`cub_headers`]).
pub fn is_cub_umbrella(target: &str) -> bool {
    matches!(target, "cub/cub.cuh" | "cub.cuh")
}

/// CUB's device-side names and the header that declares each.
const CUB_HEADERS: &[(&str, &str)] = &[
    (
        "BlockAdjacentDifference",
        "cub/block/block_adjacent_difference.cuh",
    ),
    ("BlockDiscontinuity", "cub/block/block_discontinuity.cuh"),
    ("BlockExchange", "cub/block/block_exchange.cuh"),
    ("BlockHistogram", "cub/block/block_histogram.cuh"),
    ("BlockLoad", "cub/block/block_load.cuh"),
    ("BlockMergeSort", "cub/block/block_merge_sort.cuh"),
    ("BlockRadixRank", "cub/block/block_radix_rank.cuh"),
    ("BlockRadixSort", "cub/block/block_radix_sort.cuh"),
    ("BlockReduce", "cub/block/block_reduce.cuh"),
    (
        "BlockRunLengthDecode",
        "cub/block/block_run_length_decode.cuh",
    ),
    ("BlockScan", "cub/block/block_scan.cuh"),
    ("BlockShuffle", "cub/block/block_shuffle.cuh"),
    ("BlockStore", "cub/block/block_store.cuh"),
    ("WarpExchange", "cub/warp/warp_exchange.cuh"),
    ("WarpLoad", "cub/warp/warp_load.cuh"),
    ("WarpMergeSort", "cub/warp/warp_merge_sort.cuh"),
    ("WarpReduce", "cub/warp/warp_reduce.cuh"),
    ("WarpScan", "cub/warp/warp_scan.cuh"),
    ("WarpStore", "cub/warp/warp_store.cuh"),
    ("ThreadLoad", "cub/thread/thread_load.cuh"),
    ("ThreadStore", "cub/thread/thread_store.cuh"),
    ("ThreadReduce", "cub/thread/thread_reduce.cuh"),
    ("Sum", "cub/thread/thread_operators.cuh"),
    ("Max", "cub/thread/thread_operators.cuh"),
    ("Min", "cub/thread/thread_operators.cuh"),
    ("ArgMax", "cub/thread/thread_operators.cuh"),
    ("ArgMin", "cub/thread/thread_operators.cuh"),
    ("ShuffleIndex", "cub/util_ptx.cuh"),
    ("ShuffleUp", "cub/util_ptx.cuh"),
    ("ShuffleDown", "cub/util_ptx.cuh"),
    ("LaneId", "cub/util_ptx.cuh"),
    ("WarpId", "cub/util_ptx.cuh"),
    ("KeyValuePair", "cub/util_type.cuh"),
    ("Traits", "cub/util_type.cuh"),
];

/// The CUB device headers for the `cub::` names a unit uses, in the table's order. A name
/// the table lacks brings every block, warp and thread header (they compile together
/// under NVRTC), so the umbrella's replacement never loses a declaration.
pub fn cub_headers<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<&'static str> {
    let names: Vec<&str> = names.into_iter().collect();
    let unknown = names
        .iter()
        .any(|n| !CUB_HEADERS.iter().any(|(c, _)| c == n));
    let mut out: Vec<&'static str> = Vec::new();
    for (name, h) in CUB_HEADERS {
        if (unknown || names.contains(name)) && !out.contains(h) {
            out.push(h);
        }
    }
    out
}

/// Thrust headers that compile under NVRTC (device-side utilities). Every other Thrust
/// header brings host code (`std::runtime_error`, `__host__` allocators, streams) that
/// NVRTC refuses, so it is dropped from a unit like a host header.
const THRUST_DEVICE_HEADERS: &[&str] = &[
    "thrust/addressof.h",
    "thrust/advance.h",
    "thrust/distance.h",
    "thrust/functional.h",
    "thrust/pair.h",
    "thrust/tuple.h",
    "thrust/version.h",
    "thrust/zip_function.h",
];

/// A Thrust header with host code, which a device unit drops.
pub fn is_thrust_host_header(target: &str) -> bool {
    target.starts_with("thrust/") && !THRUST_DEVICE_HEADERS.contains(&target)
}

/// `std::` names device code uses that NVRTC has no declaration of (`namespace "std" has
/// no member "uint32_t"`), and the libcu++ header that declares each in `cuda::std`.
const CUDA_STD: &[(&str, &str)] = &[
    ("int8_t", "cuda/std/cstdint"),
    ("int16_t", "cuda/std/cstdint"),
    ("int32_t", "cuda/std/cstdint"),
    ("int64_t", "cuda/std/cstdint"),
    ("uint8_t", "cuda/std/cstdint"),
    ("uint16_t", "cuda/std/cstdint"),
    ("uint32_t", "cuda/std/cstdint"),
    ("uint64_t", "cuda/std/cstdint"),
    ("intptr_t", "cuda/std/cstdint"),
    ("uintptr_t", "cuda/std/cstdint"),
    ("intmax_t", "cuda/std/cstdint"),
    ("uintmax_t", "cuda/std/cstdint"),
    ("size_t", "cuda/std/cstddef"),
    ("ptrdiff_t", "cuda/std/cstddef"),
    ("nullptr_t", "cuda/std/cstddef"),
    ("numeric_limits", "cuda/std/limits"),
    ("min", "cuda/std/algorithm"),
    ("max", "cuda/std/algorithm"),
    ("integral_constant", "cuda/std/type_traits"),
    ("true_type", "cuda/std/type_traits"),
    ("false_type", "cuda/std/type_traits"),
    ("conditional", "cuda/std/type_traits"),
    ("conditional_t", "cuda/std/type_traits"),
    ("enable_if", "cuda/std/type_traits"),
    ("enable_if_t", "cuda/std/type_traits"),
    ("is_same", "cuda/std/type_traits"),
    ("is_same_v", "cuda/std/type_traits"),
    ("is_integral", "cuda/std/type_traits"),
    ("is_integral_v", "cuda/std/type_traits"),
    ("is_floating_point", "cuda/std/type_traits"),
    ("is_floating_point_v", "cuda/std/type_traits"),
    ("is_signed", "cuda/std/type_traits"),
    ("is_unsigned", "cuda/std/type_traits"),
    ("is_pointer", "cuda/std/type_traits"),
    ("is_const", "cuda/std/type_traits"),
    ("make_signed", "cuda/std/type_traits"),
    ("make_signed_t", "cuda/std/type_traits"),
    ("make_unsigned", "cuda/std/type_traits"),
    ("make_unsigned_t", "cuda/std/type_traits"),
    ("remove_cv", "cuda/std/type_traits"),
    ("remove_cv_t", "cuda/std/type_traits"),
    ("remove_const", "cuda/std/type_traits"),
    ("remove_const_t", "cuda/std/type_traits"),
    ("remove_reference", "cuda/std/type_traits"),
    ("remove_reference_t", "cuda/std/type_traits"),
    ("remove_pointer", "cuda/std/type_traits"),
    ("remove_pointer_t", "cuda/std/type_traits"),
    ("decay", "cuda/std/type_traits"),
    ("decay_t", "cuda/std/type_traits"),
    ("common_type", "cuda/std/type_traits"),
    ("common_type_t", "cuda/std/type_traits"),
    ("bool_constant", "cuda/std/type_traits"),
    ("is_arithmetic", "cuda/std/type_traits"),
    ("is_arithmetic_v", "cuda/std/type_traits"),
    ("is_void", "cuda/std/type_traits"),
    ("void_t", "cuda/std/type_traits"),
    ("is_signed_v", "cuda/std/type_traits"),
    ("is_unsigned_v", "cuda/std/type_traits"),
    ("is_pointer_v", "cuda/std/type_traits"),
    ("is_const_v", "cuda/std/type_traits"),
    ("is_reference", "cuda/std/type_traits"),
    ("is_base_of", "cuda/std/type_traits"),
    ("is_convertible", "cuda/std/type_traits"),
    ("is_trivially_copyable", "cuda/std/type_traits"),
    ("underlying_type_t", "cuda/std/type_traits"),
    ("remove_cvref", "cuda/std/type_traits"),
    ("remove_cvref_t", "cuda/std/type_traits"),
    ("type_identity_t", "cuda/std/type_traits"),
    ("conjunction", "cuda/std/type_traits"),
    ("disjunction", "cuda/std/type_traits"),
    ("negation", "cuda/std/type_traits"),
    ("swap", "cuda/std/utility"),
    ("pair", "cuda/std/utility"),
    ("make_pair", "cuda/std/utility"),
    ("forward", "cuda/std/utility"),
    ("index_sequence", "cuda/std/utility"),
    ("make_index_sequence", "cuda/std/utility"),
    ("integer_sequence", "cuda/std/utility"),
    ("make_integer_sequence", "cuda/std/utility"),
    ("tuple", "cuda/std/tuple"),
    ("make_tuple", "cuda/std/tuple"),
    ("tie", "cuda/std/tuple"),
    ("get", "cuda/std/tuple"),
    ("array", "cuda/std/array"),
    ("complex", "cuda/std/complex"),
    ("clamp", "cuda/std/algorithm"),
    ("plus", "cuda/std/functional"),
    ("minus", "cuda/std/functional"),
    ("multiplies", "cuda/std/functional"),
    ("less", "cuda/std/functional"),
    ("greater", "cuda/std/functional"),
    ("bit_cast", "cuda/std/bit"),
    ("popcount", "cuda/std/bit"),
    ("abs", "cuda/std/cmath"),
    ("fabs", "cuda/std/cmath"),
    ("sqrt", "cuda/std/cmath"),
    ("exp", "cuda/std/cmath"),
    ("log", "cuda/std/cmath"),
    ("pow", "cuda/std/cmath"),
    ("floor", "cuda/std/cmath"),
    ("ceil", "cuda/std/cmath"),
    ("round", "cuda/std/cmath"),
    ("trunc", "cuda/std/cmath"),
    ("nearbyint", "cuda/std/cmath"),
    ("fmin", "cuda/std/cmath"),
    ("fmax", "cuda/std/cmath"),
    ("sin", "cuda/std/cmath"),
    ("cos", "cuda/std/cmath"),
    ("tanh", "cuda/std/cmath"),
    ("isnan", "cuda/std/cmath"),
    ("isinf", "cuda/std/cmath"),
    ("isfinite", "cuda/std/cmath"),
];

/// The libcu++ header that declares `std::name` for device code (`uint32_t` →
/// `cuda/std/cstdint`), for the `std::` names NVRTC lacks.
pub fn cuda_std_header(name: &str) -> Option<&'static str> {
    CUDA_STD.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
}

/// The header (or header folder, `cub/`) that declares namespace `ns`, for a
/// `using namespace ns;` a unit may carry: only one the unit includes can be opened.
pub fn namespace_header(ns: &str) -> Option<&'static str> {
    let root = ns.split("::").next().unwrap_or(ns).trim();
    match root {
        "cooperative_groups" => Some("cooperative_groups"),
        "nvcuda" => Some("mma.h"),
        "cub" => Some("cub/"),
        _ => None,
    }
}

/// The CUDA header that declares a name code may use without including it (nvcc's
/// implicit `cuda_runtime.h`, or a library header such as `cublas_v2.h`, brought it in):
/// `__nv_bfloat16` → `cuda_bf16.h`, `half` → `cuda_fp16.h`, `__nv_fp8_e4m3` → `cuda_fp8.h`.
pub fn implied_headers(name: &str) -> &'static [&'static str] {
    // `namespace cg = cooperative_groups;` in a kernel whose file has the include in a
    // header of its own (HeCBench's layernorm): the API and its `cg::reduce`.
    if name == "cooperative_groups" {
        return &["cooperative_groups.h"];
    }
    if name == "cg::reduce" || name == "cooperative_groups::reduce" {
        return &["cooperative_groups/reduce.h"];
    }
    match implied_header(name) {
        Some("mma.h") => &["mma.h"],
        Some("cuda_bf16.h") => &["cuda_bf16.h"],
        Some("cuda_fp8.h") => &["cuda_fp8.h"],
        Some("cuda_fp16.h") => &["cuda_fp16.h"],
        _ => &[],
    }
}

fn implied_header(name: &str) -> Option<&'static str> {
    // `nvcuda::wmma::fragment`: the WMMA API of <mma.h>.
    if name == "nvcuda" || name == "wmma" {
        return Some("mma.h");
    }
    if name.contains("bfloat16") || name.contains("bfloat162") {
        return Some("cuda_bf16.h");
    }
    if name.starts_with("__nv_fp8") {
        return Some("cuda_fp8.h");
    }
    let half = matches!(
        name,
        "half" | "half2" | "__half" | "__half2" | "__half_raw" | "__half2_raw"
    ) || name.starts_with("__float2half")
        || name.starts_with("__half2")
        || name.starts_with("__halves2half")
        || name.starts_with("__int2half")
        || name.starts_with("__float22half");
    half.then_some("cuda_fp16.h")
}

/// One name a host header would have provided, with the definition NVRTC lacks.
pub struct Shim {
    pub name: &'static str,
    pub header: &'static str,
    pub definition: &'static str,
}

macro_rules! shims {
    ($($name:literal, $header:literal, $def:literal;)*) => {
        &[$(Shim { name: $name, header: $header, definition: $def }),*]
    };
}

pub const SHIMS: &[Shim] = shims![
    "wmma", "<mma.h>", "using namespace nvcuda;";
    "CUtexObject", "<cuda.h>", "typedef unsigned long long CUtexObject;";
    "CUsurfObject", "<cuda.h>", "typedef unsigned long long CUsurfObject;";
    "FLT_MAX", "<float.h>", "#define FLT_MAX 3.402823466e+38F";
    "FLT_MIN", "<float.h>", "#define FLT_MIN 1.175494351e-38F";
    "FLT_EPSILON", "<float.h>", "#define FLT_EPSILON 1.192092896e-07F";
    "DBL_MAX", "<float.h>", "#define DBL_MAX 1.7976931348623158e+308";
    "DBL_MIN", "<float.h>", "#define DBL_MIN 2.2250738585072014e-308";
    "DBL_EPSILON", "<float.h>", "#define DBL_EPSILON 2.2204460492503131e-016";
    "INT_MAX", "<limits.h>", "#define INT_MAX 2147483647";
    "INT_MIN", "<limits.h>", "#define INT_MIN (-2147483647 - 1)";
    "UINT_MAX", "<limits.h>", "#define UINT_MAX 0xffffffffU";
    "LONG_MAX", "<limits.h>", "#define LONG_MAX 9223372036854775807L";
    "LONG_MIN", "<limits.h>", "#define LONG_MIN (-9223372036854775807L - 1)";
    "SHRT_MAX", "<limits.h>", "#define SHRT_MAX 32767";
    "CHAR_BIT", "<limits.h>", "#define CHAR_BIT 8";
    "M_PI", "<math.h>", "#define M_PI 3.14159265358979323846";
    "M_PI_2", "<math.h>", "#define M_PI_2 1.57079632679489661923";
    "M_PI_4", "<math.h>", "#define M_PI_4 0.78539816339744830962";
    "M_1_PI", "<math.h>", "#define M_1_PI 0.31830988618379067154";
    "M_2_PI", "<math.h>", "#define M_2_PI 0.63661977236758134308";
    "M_E", "<math.h>", "#define M_E 2.7182818284590452354";
    "M_LN2", "<math.h>", "#define M_LN2 0.69314718055994530942";
    "M_LN10", "<math.h>", "#define M_LN10 2.30258509299404568402";
    "M_LOG2E", "<math.h>", "#define M_LOG2E 1.4426950408889634074";
    "M_SQRT2", "<math.h>", "#define M_SQRT2 1.41421356237309504880";
    "M_SQRT1_2", "<math.h>", "#define M_SQRT1_2 0.70710678118654752440";
    "INFINITY", "<math.h>", "#define INFINITY __int_as_float(0x7f800000)";
    "NAN", "<math.h>", "#define NAN __int_as_float(0x7fffffff)";
    "HUGE_VALF", "<math.h>", "#define HUGE_VALF __int_as_float(0x7f800000)";
    "HUGE_VAL", "<math.h>", "#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)";
    "MAXFLOAT", "<math.h>", "#define MAXFLOAT 3.402823466e+38F";
    "RAND_MAX", "<stdlib.h>", "#define RAND_MAX 2147483647";
    "int8_t", "<stdint.h>", "typedef signed char int8_t;";
    "uint8_t", "<stdint.h>", "typedef unsigned char uint8_t;";
    "int16_t", "<stdint.h>", "typedef short int16_t;";
    "uint16_t", "<stdint.h>", "typedef unsigned short uint16_t;";
    "int32_t", "<stdint.h>", "typedef int int32_t;";
    "uint32_t", "<stdint.h>", "typedef unsigned int uint32_t;";
    "int64_t", "<stdint.h>", "typedef long long int64_t;";
    "uint64_t", "<stdint.h>", "typedef unsigned long long uint64_t;";
    "intptr_t", "<stdint.h>", "typedef long long intptr_t;";
    "uintptr_t", "<stdint.h>", "typedef unsigned long long uintptr_t;";
    "INT32_MAX", "<stdint.h>", "#define INT32_MAX 2147483647";
    "UINT32_MAX", "<stdint.h>", "#define UINT32_MAX 0xffffffffU";
    "INT64_MAX", "<stdint.h>", "#define INT64_MAX 9223372036854775807LL";
    "UINT64_MAX", "<stdint.h>", "#define UINT64_MAX 0xffffffffffffffffULL";
    "INT8_C", "<stdint.h>", "#define INT8_C(c) c";
    "INT16_C", "<stdint.h>", "#define INT16_C(c) c";
    "INT32_C", "<stdint.h>", "#define INT32_C(c) c";
    "INT64_C", "<stdint.h>", "#define INT64_C(c) c ## LL";
    "UINT8_C", "<stdint.h>", "#define UINT8_C(c) c";
    "UINT16_C", "<stdint.h>", "#define UINT16_C(c) c";
    "UINT32_C", "<stdint.h>", "#define UINT32_C(c) c ## U";
    "UINT64_C", "<stdint.h>", "#define UINT64_C(c) c ## ULL";
    "ssize_t", "<sys/types.h>", "typedef long ssize_t;";
    "uint", "<sys/types.h>", "typedef unsigned int uint;";
    "ushort", "<sys/types.h>", "typedef unsigned short ushort;";
    "ulong", "<sys/types.h>", "typedef unsigned long ulong;";
    "uchar", "<sys/types.h>", "typedef unsigned char uchar;";
];

pub fn shim(name: &str) -> Option<&'static Shim> {
    SHIMS.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pure_calls_are_math_and_intrinsics_without_pointer_outputs() {
        let pure =
            "sqrtf sqrt __expf atan2f fminf min fabs rsqrtf __ldg tex1Dfetch printf lgammaf \
                    erff fmaf expm1f __fdividef";
        for f in pure.split_whitespace() {
            assert!(is_pure_call(f), "{f}");
        }
        for f in "sincosf sincos modff frexp remquof atomicAdd foo f".split(' ') {
            assert!(!is_pure_call(f), "{f}");
        }
    }

    #[test]
    fn cudas_makers_are_builtins_and_a_programs_are_not() {
        for b in [
            "make_float4",
            "make_uint2",
            "make_cudaExtent",
            "make_half2",
            "make_double2",
        ] {
            assert!(is_builtin(b), "{b}");
        }
        for p in ["make_pk_slow", "make_positive", "make_hash"] {
            assert!(!is_builtin(p), "{p}");
        }
    }

    #[test]
    fn cccl_header_choices() {
        assert_eq!(
            cub_headers(["BlockReduce", "WarpScan", "BlockReduce"]),
            ["cub/block/block_reduce.cuh", "cub/warp/warp_scan.cuh"]
        );
        // A name the table lacks brings every device header rather than lose one.
        let all = cub_headers(["BlockReduce", "SomethingNew"]);
        assert!(all.len() > 10 && all.contains(&"cub/warp/warp_store.cuh"));
        assert!(cub_headers([]).is_empty());
        assert!(is_cub_umbrella("cub/cub.cuh") && !is_cub_umbrella("cub/block/block_scan.cuh"));
        assert!(is_thrust_host_header("thrust/device_vector.h"));
        assert!(!is_thrust_host_header("thrust/functional.h"));
        assert!(!is_thrust_host_header("cub/cub.cuh"));
        assert_eq!(cuda_std_header("uint32_t"), Some("cuda/std/cstdint"));
        assert_eq!(cuda_std_header("conditional"), Some("cuda/std/type_traits"));
        // llm.c's `std::bool_constant<…>` (four units of matmul_backward_bias and the
        // fused classifier failed on it).
        assert_eq!(
            cuda_std_header("bool_constant"),
            Some("cuda/std/type_traits")
        );
        // PyTorch-style unrolled loops (HeCBench rotary: `std::index_sequence<I...>`).
        assert_eq!(
            cuda_std_header("make_index_sequence"),
            Some("cuda/std/utility")
        );
        assert_eq!(cuda_std_header("vector"), None);
    }

    #[test]
    fn classifies_builtins() {
        for b in [
            "threadIdx",
            "__syncthreads",
            "atomicAdd",
            "sqrtf",
            "expf",
            "make_float4",
            "float4",
            "uchar2",
            "cudaReadModeElementType",
            "tex1Dfetch",
            "min",
        ] {
            assert!(is_builtin(b), "{b}");
        }
        for n in [
            "N", "atomic", "compute", "uint", "FLT_MAX", "float5", "cudafoo",
        ] {
            assert!(!is_builtin(n), "{n}");
        }
    }

    #[test]
    fn warp_and_atomic_names() {
        assert!(is_warp_primitive("__shfl_down_sync"));
        assert!(is_warp_primitive("__ballot_sync"));
        assert!(!is_warp_primitive("__syncthreads"));
        assert!(is_atomic("atomicCAS"));
        assert!(!is_atomic("atomically"));
    }

    #[test]
    fn shims_are_unique_and_define_their_name() {
        let mut seen = HashSet::new();
        for s in SHIMS {
            assert!(seen.insert(s.name), "duplicate shim {}", s.name);
            // A shim defines its name, or brings it in (`using namespace nvcuda;` for `wmma`).
            assert!(s.definition.contains(s.name) || s.name == "wmma");
            assert!(!is_builtin(s.name), "{} is both", s.name);
        }
    }
}
