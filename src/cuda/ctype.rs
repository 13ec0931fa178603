//! C types as kernels spell them, mapped to the element types buffers and scalars hold:
//! shared by the CUDA front end (texture shims) and the harness (buffers, generation),
//! so it lives here, below both.

use serde::{Deserialize, Serialize};

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
/// After the first `*` or `&` only qualifiers can follow, whatever they are spelled as
/// (`const float * RESTRICT`, a macro for `__restrict__`): they are not the base type.
pub fn c_base_type(c: &str) -> String {
    let head = c.split(['*', '&']).next().unwrap_or(c);
    head.replace(['*', '&'], " ")
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_type_stops_at_the_first_star_whatever_qualifiers_follow() {
        assert_eq!(c_base_type("const float *__restrict__"), "float");
        assert_eq!(c_base_type("const float * RESTRICT"), "float");
        assert_eq!(
            c_base_type("const unsigned int * const * p"),
            "unsigned int"
        );
        assert_eq!(c_base_type("struct node &"), "node");
        assert_eq!(c_base_type("volatile double"), "double");
        assert_eq!(
            ElemType::from_c_type(&c_base_type("real * RESTRICT")),
            None,
            "a template parameter is bound elsewhere"
        );
    }
}
