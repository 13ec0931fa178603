//! Compatibility shim for legacy `texture<T, dim, mode>` references (removed in CUDA 12).
//!
//! A kept reference `texture<float, 1, cudaReadModeElementType> t;` is rewritten into
//! `__device__ kernelpair_legacy_texture<float, 1> t;`, a plain `__device__` struct the
//! verify harness fills by symbol name (`{ptr, width, height, pitch}`), and `tex1Dfetch`,
//! `tex1D` and `tex2D` overloads on that struct read global memory through `__ldg`.
//! Sampling is modelled as unnormalized coordinates, point filtering, clamp addressing
//! (out-of-range `tex1Dfetch` returns zero, as the hardware does).

use super::lex;

/// The name of the shim's struct template (never `texture`: CUDA < 12 still declares it).
pub const SHIM_TYPE: &str = "kernelpair_legacy_texture";

/// Device code prepended once to a unit that keeps a shimmed texture reference.
pub const SHIM: &str = r#"// kernelpair: legacy texture<...> references (removed in CUDA 12) read as global memory.
// The harness uploads {ptr, width, height, pitch} to each texture symbol (sizes in elements;
// width/height 0 = no bounds; pitch 0 = width). Unnormalized coordinates, point filtering,
// clamp addressing.
template <class KpT, int KpDim>
struct kernelpair_legacy_texture {
  const KpT* ptr;
  int width;
  int height;
  int pitch;
};
template <class KpT>
__device__ __forceinline__ KpT kernelpair_tex_load(const KpT* p) { return *p; }
__device__ __forceinline__ char kernelpair_tex_load(const char* p) { return __ldg(p); }
__device__ __forceinline__ signed char kernelpair_tex_load(const signed char* p) { return __ldg(p); }
__device__ __forceinline__ short kernelpair_tex_load(const short* p) { return __ldg(p); }
__device__ __forceinline__ int kernelpair_tex_load(const int* p) { return __ldg(p); }
__device__ __forceinline__ long long kernelpair_tex_load(const long long* p) { return __ldg(p); }
__device__ __forceinline__ unsigned char kernelpair_tex_load(const unsigned char* p) { return __ldg(p); }
__device__ __forceinline__ unsigned short kernelpair_tex_load(const unsigned short* p) { return __ldg(p); }
__device__ __forceinline__ unsigned int kernelpair_tex_load(const unsigned int* p) { return __ldg(p); }
__device__ __forceinline__ unsigned long long kernelpair_tex_load(const unsigned long long* p) { return __ldg(p); }
__device__ __forceinline__ int2 kernelpair_tex_load(const int2* p) { return __ldg(p); }
__device__ __forceinline__ int4 kernelpair_tex_load(const int4* p) { return __ldg(p); }
__device__ __forceinline__ uint2 kernelpair_tex_load(const uint2* p) { return __ldg(p); }
__device__ __forceinline__ uint4 kernelpair_tex_load(const uint4* p) { return __ldg(p); }
__device__ __forceinline__ float kernelpair_tex_load(const float* p) { return __ldg(p); }
__device__ __forceinline__ float2 kernelpair_tex_load(const float2* p) { return __ldg(p); }
__device__ __forceinline__ float4 kernelpair_tex_load(const float4* p) { return __ldg(p); }
__device__ __forceinline__ double kernelpair_tex_load(const double* p) { return __ldg(p); }
__device__ __forceinline__ double2 kernelpair_tex_load(const double2* p) { return __ldg(p); }
template <class KpX>
__device__ __forceinline__ int kernelpair_tex_coord(KpX x) { return (int)x; }
__device__ __forceinline__ int kernelpair_tex_coord(float x) { return (int)floorf(x); }
__device__ __forceinline__ int kernelpair_tex_coord(double x) { return (int)floor(x); }
__device__ __forceinline__ int kernelpair_tex_clamp(int i, int n) {
  return n > 0 ? (i < 0 ? 0 : (i >= n ? n - 1 : i)) : i;
}
template <class KpT>
__device__ __forceinline__ KpT tex1Dfetch(const kernelpair_legacy_texture<KpT, 1>& t, int x) {
  if (t.width > 0 && (x < 0 || x >= t.width)) return KpT();
  return kernelpair_tex_load(t.ptr + x);
}
template <class KpT, class KpX>
__device__ __forceinline__ KpT tex1D(const kernelpair_legacy_texture<KpT, 1>& t, KpX x) {
  return kernelpair_tex_load(t.ptr + kernelpair_tex_clamp(kernelpair_tex_coord(x), t.width));
}
template <class KpT, class KpX, class KpY>
__device__ __forceinline__ KpT tex2D(const kernelpair_legacy_texture<KpT, 2>& t, KpX x, KpY y) {
  const int i = kernelpair_tex_clamp(kernelpair_tex_coord(x), t.width);
  const int j = kernelpair_tex_clamp(kernelpair_tex_coord(y), t.height);
  return kernelpair_tex_load(t.ptr + (long long)j * (t.pitch > 0 ? t.pitch : t.width) + i);
}
"#;

/// A texture declaration the shim replaces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shimmed {
    /// The rewritten declaration.
    pub text: String,
    /// Element type, as written.
    pub element: String,
    /// 1 or 2.
    pub dim: u8,
}

/// Rewrite a legacy texture declaration (`[static] texture<T[, dim[, mode]]> a[, b];`) for
/// the shim, or say why it cannot be.
pub fn rewrite(text: &str) -> Result<Shimmed, String> {
    let m = lex::mask(text);
    let ids = lex::idents(&m);
    let tex = ids
        .iter()
        .find(|i| i.text == "texture" && !i.member)
        .ok_or_else(|| "no `texture<…>` type found in the declaration".to_string())?;
    let after = tex.offset + tex.text.len();
    let open = after + m[after..].find(|c: char| !c.is_whitespace()).unwrap_or(0);
    if m.as_bytes().get(open) != Some(&b'<') {
        return Err("`texture` without template arguments".into());
    }
    // Matching `>` and the top-level commas between.
    let (mut depth, mut close, mut commas) = (0i32, None, Vec::new());
    for (i, c) in m[open..].char_indices() {
        let i = open + i;
        match c {
            '<' | '(' | '[' => depth += 1,
            ')' | ']' => depth -= 1,
            '>' => {
                depth -= 1;
                if depth == 0 {
                    close = Some(i);
                    break;
                }
            }
            ',' if depth == 1 => commas.push(i),
            _ => {}
        }
    }
    let close = close.ok_or_else(|| "unbalanced `texture<…>` arguments".to_string())?;
    let mut bounds = vec![open + 1];
    for &c in &commas {
        bounds.push(c + 1);
    }
    let mut args = Vec::new();
    for (k, &s) in bounds.iter().enumerate() {
        let e = commas.get(k).copied().unwrap_or(close);
        args.push(text[s..e].trim().to_string());
    }
    let element = args[0].clone();
    if element.is_empty() {
        return Err("empty texture element type".into());
    }
    let dim = match args.get(1).map(String::as_str) {
        None | Some("1") | Some("cudaTextureType1D") => 1,
        Some("2") | Some("cudaTextureType2D") => 2,
        Some(d) => {
            return Err(format!(
                "texture dimensionality `{d}` (3D, layered or cubemap) has no shim"
            ))
        }
    };
    match args.get(2).map(String::as_str) {
        None | Some("cudaReadModeElementType") => {}
        Some(mode) => {
            return Err(format!(
                "read mode `{mode}` converts texels in hardware; the shim only reads elements (cudaReadModeElementType)"
            ))
        }
    }
    if args.len() > 3 {
        return Err("unexpected extra texture template arguments".into());
    }
    let rest = &text[close + 1..];
    if rest.trim_start().starts_with('&') || m[close + 1..].contains('(') {
        return Err("a function or reference returning a texture, not a texture variable".into());
    }
    let text = format!(
        "{}__device__ {SHIM_TYPE}<{element}, {dim}>{rest}",
        &text[..tex.offset]
    );
    Ok(Shimmed { text, element, dim })
}

/// A shimmed texture reference found in a unit's source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Declared {
    pub name: String,
    pub dim: u8,
    /// The texel type as written (`float`, `float4`, `uint2`).
    pub element: String,
}

/// Bytes of a texel type the shim reads (`float4` → 16); None for types it does not know.
/// The scalar comes from [`ElemType::from_c_type`](crate::cuda::ctype::ElemType::from_c_type), the lanes from the vector suffix.
pub fn texel_bytes(element: &str) -> Option<usize> {
    let e = element.trim();
    let lanes = match e.chars().last() {
        Some(c @ ('2' | '3' | '4')) if !e.ends_with("int64_t") => c.to_digit(10)? as usize,
        _ => 1,
    };
    Some(super::ctype::ElemType::from_c_type(e)?.size_of() * lanes)
}

/// The shimmed texture references a unit's source declares: every
/// `[static] __device__ kernelpair_legacy_texture<T, dim> a[, b];` line [`rewrite`] wrote.
pub fn shimmed_symbols(source: &str) -> Vec<Declared> {
    let marker = format!("__device__ {SHIM_TYPE}<");
    let mut out = Vec::new();
    for line in source.lines() {
        let Some(at) = line.find(&marker) else {
            continue;
        };
        let prefix = line[..at].trim();
        if !(prefix.is_empty() || prefix == "static" || prefix == "extern") {
            continue;
        }
        let rest = &line[at + marker.len()..];
        // The template arguments end at the first `>` at depth 0 (`<float, 1>`, `<uint4, 2>`).
        let mut depth = 0i32;
        let Some(close) = rest.char_indices().find_map(|(i, c)| match c {
            '<' => {
                depth += 1;
                None
            }
            '>' if depth == 0 => Some(i),
            '>' => {
                depth -= 1;
                None
            }
            _ => None,
        }) else {
            continue;
        };
        let targs = &rest[..close];
        let (element, dim) = match targs.rsplit_once(',') {
            Some((e, d)) => (e.trim(), if d.trim() == "2" { 2 } else { 1 }),
            None => (targs.trim(), 1),
        };
        let decl = rest[close + 1..].split(';').next().unwrap_or("");
        if decl.contains('(') || decl.contains('&') {
            continue;
        }
        for name in decl.split(',') {
            let name = name.split(['=', '[']).next().unwrap_or("").trim();
            if !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                out.push(Declared {
                    name: name.to_string(),
                    dim,
                    element: element.to_string(),
                });
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn shimmed_symbols_lists_rewritten_declarations_only() {
        let src = format!(
            "{}\n__device__ kernelpair_legacy_texture<float, 1> tex_x;\nstatic __device__ kernelpair_legacy_texture<uint4, 2> a, b; // c\n__device__ int other;\n",
            super::SHIM
        );
        let got: Vec<_> = super::shimmed_symbols(&src)
            .into_iter()
            .map(|d| (d.name, d.dim, d.element))
            .collect();
        assert_eq!(
            got,
            vec![
                ("tex_x".to_string(), 1, "float".to_string()),
                ("a".to_string(), 2, "uint4".to_string()),
                ("b".to_string(), 2, "uint4".to_string())
            ]
        );
        assert!(super::shimmed_symbols(super::SHIM).is_empty());
        assert_eq!(super::texel_bytes("float4"), Some(16));
        assert_eq!(super::texel_bytes("unsigned char"), Some(1));
        assert_eq!(super::texel_bytes("int2"), Some(8));
        assert_eq!(super::texel_bytes("Node"), None);
    }

    use super::*;

    #[test]
    fn rewrites_1d_2d_and_defaulted_declarations() {
        let s = rewrite("texture<float, 1, cudaReadModeElementType> texRef;").unwrap();
        assert_eq!(
            s.text,
            "__device__ kernelpair_legacy_texture<float, 1> texRef;"
        );
        assert_eq!((s.element.as_str(), s.dim), ("float", 1));
        let s = rewrite("static texture<uint4, 2, cudaReadModeElementType> a, b; // c").unwrap();
        assert_eq!(
            s.text,
            "static __device__ kernelpair_legacy_texture<uint4, 2> a, b; // c"
        );
        assert_eq!(s.dim, 2);
        let s = rewrite("texture<Node> g;").unwrap();
        assert_eq!(s.text, "__device__ kernelpair_legacy_texture<Node, 1> g;");
        let s = rewrite("texture<unsigned short,cudaTextureType2D> r;").unwrap();
        assert_eq!((s.element.as_str(), s.dim), ("unsigned short", 2));
    }

    #[test]
    fn refuses_what_the_shim_cannot_model() {
        let e = rewrite("texture<unsigned char, 2, cudaReadModeNormalizedFloat> t;").unwrap_err();
        assert!(e.contains("cudaReadModeNormalizedFloat"), "{e}");
        let e = rewrite("texture<float, 3, cudaReadModeElementType> t;").unwrap_err();
        assert!(e.contains("`3`"), "{e}");
        let e = rewrite("texture<float, cudaTextureType1DLayered> t;").unwrap_err();
        assert!(e.contains("layered"), "{e}");
        assert!(rewrite("texture<float, 2> &get_ref(void);").is_err());
        assert!(rewrite("float x;").is_err());
    }
}
