//! Optimization techniques visible in a kernel's source, found with tree-sitter and a few
//! regexes (no LLM): they steer the de-optimization prompt, fill `Pair.techniques`, and
//! feed the dataset card.
//!
//! Names are stable strings, always reported in the order of [`ALL`].

use crate::cuda::syntax::{parse, text, visit};
use crate::record::KernelUnit;
use regex::Regex;
use std::sync::LazyLock;

/// Every technique this module can report, in report order.
pub const ALL: &[&str] = &[
    "shared_memory",
    "coalescing",
    "loop_unrolling",
    "register_blocking",
    "vector_types",
    "warp_shuffle",
    "warp_vote",
    "read_only_cache",
    "constant_memory",
    "texture_memory",
    "atomics",
];

/// Techniques used by one unit. `coalescing` is relative, so only [`detect_pair`] reports it.
pub fn detect(unit: &KernelUnit) -> Vec<String> {
    detect_source(&unit.source)
}

/// Techniques in `fast` that `slow` does not use (all of `fast`'s when there is no slow
/// unit yet), plus `coalescing` when `slow` indexes memory with a thread-strided
/// subscript (`a[threadIdx.x * n + …]`) and `fast` does not.
pub fn detect_pair(slow: Option<&KernelUnit>, fast: &KernelUnit) -> Vec<String> {
    let f = scan(&fast.source);
    let Some(slow) = slow else {
        return f.names();
    };
    let s = scan(&slow.source);
    let mut found: Vec<&str> = f
        .set
        .iter()
        .filter(|t| !s.set.contains(t))
        .copied()
        .collect();
    if s.strided_thread_access && !f.strided_thread_access {
        found.push("coalescing");
    }
    order(found)
}

/// [`detect`] over raw source text.
pub fn detect_source(src: &str) -> Vec<String> {
    scan(src).names()
}

struct Scan {
    set: Vec<&'static str>,
    strided_thread_access: bool,
}

impl Scan {
    fn names(&self) -> Vec<String> {
        order(self.set.clone())
    }
}

fn order(found: Vec<&str>) -> Vec<String> {
    ALL.iter()
        .filter(|t| found.contains(t))
        .map(|t| t.to_string())
        .collect()
}

static PRAGMA_UNROLL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"#\s*pragma\s+unroll\b(\s*\(?\s*(\d+))?").unwrap());
/// `name + K]`: a subscript at a constant offset from a name (a hand-unrolled body's).
static OFFSET_SUBSCRIPT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b([A-Za-z_]\w*)\s*\+\s*(\d+)\s*\]").expect("valid regex"));
static STEP_LOOP: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b(\w+)\s*\+=\s*([2-9]|[1-9]\d+)\s*\)").unwrap());
static VECTOR: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b(u?char|u?short|u?int|u?long|u?longlong|float|double|half|__half)[234]\b")
        .unwrap()
});
static SHUFFLE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"\b__(shfl\w*|reduce_\w+_sync)\s*\(").unwrap());
static VOTE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\b__(ballot\w*|any_sync|all_sync|any|all|activemask|match_\w+_sync)\s*\(").unwrap()
});
static LDG: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\b__ldg\s*\(").unwrap());
static TEXTURE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"\btexture\s*<|\btex(1D|2D|3D|1Dfetch|1DLayered|2DLayered|Cubemap)\w*\s*[<(]|\bcudaTextureObject_t\b|\bsurf(1D|2D|3D)\w*\s*\(")
        .unwrap()
});
static ATOMIC: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\batomic[A-Z]\w*\s*\(").unwrap());
/// `threadIdx.x` multiplied inside a subscript: neighbouring threads touch addresses a
/// stride apart.
static STRIDED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"threadIdx\.x\s*\)?\s*\*\s*[\w(]|[\w)]\s*\*\s*\(?\s*threadIdx\.x").unwrap()
});

fn scan(src: &str) -> Scan {
    // kernelpair's own legacy-texture shim (its `float4` overloads, its `__ldg` loads) is
    // not the kernel's technique, as isolation's features say: only the kernel's texture
    // fetches count (`texture_memory`), not `vector_types` or `read_only_cache` of the shim.
    let src = &src.replacen(crate::cuda::texture::SHIM, "", 1);
    let tree = parse(src);
    let root = tree.root_node();
    // Work on the code with comments blanked, so a comment mentioning `__shfl` counts for nothing.
    let mut code = src.as_bytes().to_vec();
    let mut shared = false;
    let mut constant = false;
    let mut restrict_const = false;
    let mut local_arrays = false;
    let mut strided = false;
    visit(root, &mut |n| match n.kind() {
        "comment" => {
            for b in &mut code[n.byte_range()] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
        }
        "__shared__" => shared = true,
        "__constant__" => constant = true,
        "parameter_declaration" => {
            let t = text(n, src);
            if t.contains("const") && (t.contains("__restrict__") || t.contains("__restrict")) {
                restrict_const = true;
            }
        }
        "declaration" => {
            // A fixed-size array local to a function and not __shared__: values kept in registers.
            let in_function = has_ancestor(n, "compound_statement");
            let t = text(n, src);
            if in_function
                && !t.contains("__shared__")
                && !t.contains("extern")
                && n.child_by_field_name("declarator").is_some_and(|d| {
                    let d = if d.kind() == "init_declarator" {
                        d.child_by_field_name("declarator").unwrap_or(d)
                    } else {
                        d
                    };
                    d.kind() == "array_declarator" && d.child_by_field_name("size").is_some()
                })
            {
                local_arrays = true;
            }
        }
        "subscript_argument_list" if STRIDED.is_match(text(n, src)) => strided = true,
        _ => {}
    });
    let code = String::from_utf8(code).expect("only ASCII bytes were replaced");
    let mut set = Vec::new();
    if shared {
        set.push("shared_memory");
    }
    let unroll_pragma = PRAGMA_UNROLL.captures_iter(&code).any(|c| {
        c.get(2)
            .and_then(|n| n.as_str().parse::<u32>().ok())
            .is_none_or(|n| n > 1)
    });
    if unroll_pragma || manual_unroll(&code) {
        set.push("loop_unrolling");
    }
    if local_arrays {
        set.push("register_blocking");
    }
    if VECTOR.is_match(&code) {
        set.push("vector_types");
    }
    if SHUFFLE.is_match(&code) {
        set.push("warp_shuffle");
    }
    if VOTE.is_match(&code) {
        set.push("warp_vote");
    }
    if restrict_const || LDG.is_match(&code) {
        set.push("read_only_cache");
    }
    if constant {
        set.push("constant_memory");
    }
    if TEXTURE.is_match(&code) {
        set.push("texture_memory");
    }
    if ATOMIC.is_match(&code) {
        set.push("atomics");
    }
    Scan {
        set,
        strided_thread_access: strided,
    }
}

/// A loop stepping its counter by a constant K ≥ 2 whose counter is used with offsets
/// `i + 1 … i + K-1` in subscripts: the body was unrolled by hand.
fn manual_unroll(code: &str) -> bool {
    STEP_LOOP.captures_iter(code).any(|c| {
        let var = &c[1];
        let k: u32 = c[2].parse().unwrap_or(0);
        let offsets: std::collections::BTreeSet<u32> = OFFSET_SUBSCRIPT
            .captures_iter(code)
            .filter(|m| &m[1] == var)
            .filter_map(|m| m[2].parse().ok())
            .filter(|&o| o >= 1 && o < k)
            .collect();
        offsets.len() >= 2 || (k == 2 && offsets.len() == 1)
    })
}

fn has_ancestor(n: tree_sitter::Node, kind: &str) -> bool {
    let mut p = n.parent();
    while let Some(x) = p {
        if x.kind() == kind {
            return true;
        }
        p = x.parent();
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A legacy texture reference rewritten to kernelpair's shim is `texture_memory`; the
    /// shim's own `float4` overloads and `__ldg` loads are not the kernel's vector types or
    /// read-only cache (Rodinia kmeans, leukocyte, hybridsort: per-technique prompts asked
    /// to undo techniques the kernel never used).
    #[test]
    fn the_texture_shims_own_code_is_no_technique_of_the_kernel() {
        let kernel = "kernelpair_legacy_texture<float, 1> t_in;\n\
                      __global__ void k(float* out, int n) {\n\
                        int i = blockIdx.x * blockDim.x + threadIdx.x;\n\
                        if (i < n) out[i] = tex1Dfetch(t_in, i) * 2.0f;\n\
                      }\n";
        let src = format!("{}\n{kernel}", crate::cuda::texture::SHIM);
        assert_eq!(detect_source(&src), vec!["texture_memory"]);
        // The same fetches through float4 and __ldg written in the kernel still count.
        let own = format!(
            "{src}__global__ void v(const float4* __restrict__ a, float4* b) {{ b[threadIdx.x] = __ldg(&a[threadIdx.x]); }}\n"
        );
        let got = detect_source(&own);
        assert!(
            got.contains(&"vector_types".to_string())
                && got.contains(&"read_only_cache".to_string()),
            "{got:?}"
        );
    }

    fn has(src: &str, t: &str) -> bool {
        detect_source(src).iter().any(|x| x == t)
    }

    #[test]
    fn each_technique_is_found_and_not_invented() {
        let plain = "__global__ void k(float* a, const float* b, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) a[i] = b[i]; }";
        assert!(
            detect_source(plain).is_empty(),
            "{:?}",
            detect_source(plain)
        );
        assert!(has(
            "__global__ void k(float* a){ __shared__ float s[32]; s[threadIdx.x]=a[0]; }",
            "shared_memory"
        ));
        assert!(has(
            "__global__ void k(float* a){\n#pragma unroll\n for(int i=0;i<4;i++) a[i]=0; }",
            "loop_unrolling"
        ));
        assert!(!has(
            "__global__ void k(float* a){\n#pragma unroll 1\n for(int i=0;i<4;i++) a[i]=0; }",
            "loop_unrolling"
        ));
        assert!(has("__global__ void k(float* a, int n){ for(int i=0;i<n;i+=4){ a[i]=0; a[i + 1]=0; a[i + 2]=0; a[i + 3]=0; } }", "loop_unrolling"));
        assert!(has(
            "__global__ void k(float* a){ float acc[4]; acc[0]=a[0]; a[1]=acc[0]; }",
            "register_blocking"
        ));
        assert!(!has(
            "__global__ void k(float* a){ __shared__ float t[4]; t[0]=a[0]; }",
            "register_blocking"
        ));
        assert!(has(
            "__global__ void k(float4* a){ a[0].x = 1; }",
            "vector_types"
        ));
        assert!(has("__global__ void k(float* a){ float v = __shfl_down_sync(0xffffffff, a[0], 1); a[0]=v; }", "warp_shuffle"));
        assert!(has(
            "__global__ void k(int* a){ a[0] = __ballot_sync(0xffffffff, a[1] > 0); }",
            "warp_vote"
        ));
        assert!(has(
            "__global__ void k(float* a, const float* __restrict__ b){ a[0]=b[0]; }",
            "read_only_cache"
        ));
        assert!(has(
            "__global__ void k(float* a, const float* b){ a[0]=__ldg(&b[0]); }",
            "read_only_cache"
        ));
        assert!(has(
            "__constant__ float c[16];\n__global__ void k(float* a){ a[0]=c[0]; }",
            "constant_memory"
        ));
        assert!(has(
            "texture<float, 1> t;\n__global__ void k(float* a){ a[0]=tex1Dfetch(t, 0); }",
            "texture_memory"
        ));
        assert!(has(
            "__global__ void k(int* a){ atomicAdd(a, 1); }",
            "atomics"
        ));
        // Comments do not count.
        assert!(detect_source(
            "__global__ void k(int* a){ /* atomicAdd(a,1); __shfl_sync */ a[0]=1; }"
        )
        .is_empty());
    }

    fn unit(src: &str) -> KernelUnit {
        serde_json::from_value(serde_json::json!({
            "id": "x", "suite": "s", "benchmark": "b", "variant": "v", "path": "p.cu", "line": 1,
            "kernel": "k", "params": [], "source": src, "symbol": "k",
            "pulled": {}, "features": {"shared_memory": false, "dynamic_shared_memory": false,
            "constant_memory": false, "texture_references": false, "atomics": false,
            "templates": false, "warp_primitives": false, "vector_types": false},
            "provenance": {}
        }))
        .unwrap()
    }

    #[test]
    fn pair_reports_only_what_fast_adds_and_coalescing() {
        let slow = unit("__global__ void k(float* a, const float* b, int n){ a[threadIdx.x * n] = b[threadIdx.x * n]; atomicAdd(a, 1.0f); }");
        let fast = unit("__global__ void k(float* a, const float* b, int n){ __shared__ float s[256]; s[threadIdx.x] = b[blockIdx.x * n + threadIdx.x]; a[threadIdx.x] = s[threadIdx.x]; atomicAdd(a, 1.0f); }");
        assert_eq!(
            detect_pair(Some(&slow), &fast),
            ["shared_memory", "coalescing"]
        );
        assert_eq!(detect_pair(None, &fast), ["shared_memory", "atomics"]);
        assert_eq!(detect(&slow), ["atomics"]);
    }
}
