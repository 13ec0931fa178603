//! A run plan: a harness resolved for one device into concrete numbers (buffer
//! lengths, grids, blocks, scalar values) per size set. The parent process builds it
//! (it reads harness files and knows the device from the worker's hello) and the
//! worker only executes it, so the worker protocol carries plain data.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Plan {
    /// Harness name or path, for evidence.
    pub harness: String,
    pub size_sets: Vec<SizeSetPlan>,
    /// Accept constant/zero/unchanged outputs (a kernel that legitimately writes them).
    #[serde(default)]
    pub allow_degenerate: bool,
    /// Set when the kernel only runs under a data-dependent host loop (BFS, say): the
    /// pair is reported `needs_host_loop` with this reason instead of being run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_host_loop: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeSetPlan {
    pub name: String,
    /// Kernel arguments in order.
    pub args: Vec<ArgPlan>,
    /// `__constant__` symbols uploaded by name before each run.
    #[serde(default)]
    pub constants: Vec<ConstPlan>,
    pub slow: Vec<LaunchPlan>,
    pub fast: Vec<LaunchPlan>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ArgPlan {
    Buffer(BufferPlan),
    Scalar {
        name: String,
        elem: Elem,
        value: f64,
    },
}

impl ArgPlan {
    pub fn name(&self) -> &str {
        match self {
            ArgPlan::Buffer(b) => &b.name,
            ArgPlan::Scalar { name, .. } => name,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BufferPlan {
    pub name: String,
    pub elem: Elem,
    /// Elements.
    pub len: u64,
    pub role: Role,
    pub init: Init,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tol: Option<Tol>,
}

impl BufferPlan {
    pub fn bytes(&self) -> usize {
        self.len as usize * self.elem.size()
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConstPlan {
    pub name: String,
    pub elem: Elem,
    pub len: u64,
    pub init: Init,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaunchPlan {
    /// Kernel name expression in the variant's source; `None` = the unit's own symbol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    #[serde(default)]
    pub shared_mem: u32,
    #[serde(default = "one")]
    pub repeat: u32,
}

fn one() -> u32 {
    1
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Elem {
    F32,
    F64,
    F16,
    Bf16,
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
}

impl Elem {
    pub fn size(self) -> usize {
        match self {
            Elem::I8 | Elem::U8 => 1,
            Elem::F16 | Elem::Bf16 | Elem::I16 | Elem::U16 => 2,
            Elem::F32 | Elem::I32 | Elem::U32 => 4,
            Elem::F64 | Elem::I64 | Elem::U64 => 8,
        }
    }
    pub fn is_float(self) -> bool {
        matches!(self, Elem::F32 | Elem::F64 | Elem::F16 | Elem::Bf16)
    }

    /// Encode one value (rounded for integers, saturating) as little-endian bytes.
    pub fn encode(self, v: f64, out: &mut Vec<u8>) {
        match self {
            Elem::F32 => out.extend((v as f32).to_le_bytes()),
            Elem::F64 => out.extend(v.to_le_bytes()),
            Elem::F16 => out.extend(half::f16::from_f64(v).to_le_bytes()),
            Elem::Bf16 => out.extend(half::bf16::from_f64(v).to_le_bytes()),
            Elem::I8 => out.extend((v.round() as i8).to_le_bytes()),
            Elem::U8 => out.extend((v.round() as u8).to_le_bytes()),
            Elem::I16 => out.extend((v.round() as i16).to_le_bytes()),
            Elem::U16 => out.extend((v.round() as u16).to_le_bytes()),
            Elem::I32 => out.extend((v.round() as i32).to_le_bytes()),
            Elem::U32 => out.extend((v.round() as u32).to_le_bytes()),
            Elem::I64 => out.extend((v.round() as i64).to_le_bytes()),
            Elem::U64 => out.extend((v.round() as u64).to_le_bytes()),
        }
    }

    /// Decode element `i` of `bytes` as f64 (exact for integers up to 2^53).
    pub fn decode(self, bytes: &[u8], i: usize) -> f64 {
        let s = self.size();
        let b = &bytes[i * s..(i + 1) * s];
        match self {
            Elem::F32 => f32::from_le_bytes(b.try_into().unwrap()) as f64,
            Elem::F64 => f64::from_le_bytes(b.try_into().unwrap()),
            Elem::F16 => half::f16::from_le_bytes(b.try_into().unwrap()).to_f64(),
            Elem::Bf16 => half::bf16::from_le_bytes(b.try_into().unwrap()).to_f64(),
            Elem::I8 => b[0] as i8 as f64,
            Elem::U8 => b[0] as f64,
            Elem::I16 => i16::from_le_bytes(b.try_into().unwrap()) as f64,
            Elem::U16 => u16::from_le_bytes(b.try_into().unwrap()) as f64,
            Elem::I32 => i32::from_le_bytes(b.try_into().unwrap()) as f64,
            Elem::U32 => u32::from_le_bytes(b.try_into().unwrap()) as f64,
            Elem::I64 => i64::from_le_bytes(b.try_into().unwrap()) as f64,
            Elem::U64 => u64::from_le_bytes(b.try_into().unwrap()) as f64,
        }
    }

    /// A scalar argument's bytes, zero-padded to 8.
    pub fn scalar(self, v: f64) -> [u8; 8] {
        let mut out = Vec::with_capacity(8);
        self.encode(v, &mut out);
        let mut b = [0u8; 8];
        b[..out.len()].copy_from_slice(&out);
        b
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    In,
    Out,
    Inout,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "dist", rename_all = "snake_case")]
pub enum Init {
    Uniform {
        lo: f64,
        hi: f64,
    },
    Normal {
        mean: f64,
        std: f64,
    },
    /// Integers in `lo..=hi`.
    IntRange {
        lo: i64,
        hi: i64,
    },
    Zeros,
    Fill {
        value: f64,
    },
    /// A copy of an earlier buffer argument (same element type and length).
    CopyOf {
        arg: String,
    },
    /// A random permutation of 0..len.
    Permutation,
    /// 0, 1, 2, …
    Iota,
}

/// Tolerances for float outputs: elementwise `|a-b| <= atol + rtol*|b|` and a relative
/// L2 error `||a-b|| / ||b|| <= l2`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tol {
    pub atol: f64,
    pub rtol: f64,
    pub l2: f64,
}

impl Tol {
    /// Defaults by type. f32: reordered reductions (tree vs serial sums, FMA
    /// contraction) of ~1e3–1e4 terms move single elements by a few 1e-6 relative and
    /// cancellations near zero by more, so 1e-4 relative elementwise (with 1e-5 absolute
    /// for cancellations) and 1e-5 relative L2; half types keep ~3 decimal digits.
    pub fn default_for(e: Elem) -> Tol {
        match e {
            Elem::F64 => Tol {
                atol: 1e-10,
                rtol: 1e-9,
                l2: 1e-11,
            },
            Elem::F32 => Tol {
                atol: 1e-5,
                rtol: 1e-4,
                l2: 1e-5,
            },
            Elem::F16 | Elem::Bf16 => Tol {
                atol: 1e-3,
                rtol: 1e-2,
                l2: 5e-3,
            },
            _ => Tol {
                atol: 0.0,
                rtol: 0.0,
                l2: 0.0,
            },
        }
    }
}

/// Fill one buffer for `seed`. `earlier` gives the already generated buffers by name
/// (for `copy_of`). The stream depends on the seed and the argument's name, so adding
/// an argument does not change the others' data.
pub fn generate(
    elem: Elem,
    len: u64,
    init: &Init,
    seed: u64,
    name: &str,
    earlier: &dyn Fn(&str) -> Option<Vec<u8>>,
) -> Result<Vec<u8>, String> {
    // ChaCha's stream id, from the name, keeps each argument's sequence independent;
    // chunks get their own seeds so generation runs in parallel yet stays the same
    // whatever the thread count.
    let stream = u64::from_str_radix(&crate::record::content_id(&[name])[..16], 16).unwrap_or(0);
    let n = len as usize;
    let chunked = |f: &(dyn Fn(&mut ChaCha8Rng) -> f64 + Sync)| -> Vec<u8> {
        use rayon::prelude::*;
        let chunks: Vec<Vec<u8>> = (0..n.div_ceil(CHUNK))
            .into_par_iter()
            .map(|c| {
                let mut rng = ChaCha8Rng::seed_from_u64(
                    seed.wrapping_add((c as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15)),
                );
                rng.set_stream(stream);
                let m = CHUNK.min(n - c * CHUNK);
                let mut out = Vec::with_capacity(m * elem.size());
                for _ in 0..m {
                    elem.encode(f(&mut rng), &mut out);
                }
                out
            })
            .collect();
        chunks.concat()
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    let mut out = Vec::with_capacity(n * elem.size());
    match init {
        Init::Uniform { lo, hi } => {
            let (lo, hi) = (*lo, *hi);
            if lo > hi || !lo.is_finite() || !hi.is_finite() {
                return Err(format!(
                    "{name}: uniform range {lo}..{hi} is empty or not finite"
                ));
            }
            out = chunked(&|r| r.random_range(lo..=hi));
        }
        Init::Normal { mean, std } => {
            let d = Normal::new(*mean, *std).map_err(|e| format!("{name}: {e}"))?;
            out = chunked(&|r| d.sample(r));
        }
        Init::IntRange { lo, hi } => {
            let (lo, hi) = (*lo, *hi);
            if lo > hi {
                return Err(format!("{name}: int_range lo {lo} > hi {hi}"));
            }
            out = chunked(&|r| r.random_range(lo..=hi) as f64);
        }
        Init::Zeros => out.resize(n * elem.size(), 0),
        Init::Fill { value } => {
            for _ in 0..n {
                elem.encode(*value, &mut out);
            }
        }
        Init::Iota => {
            for i in 0..n {
                elem.encode(i as f64, &mut out);
            }
        }
        Init::Permutation => {
            let mut p: Vec<u64> = (0..len).collect();
            for i in (1..n).rev() {
                let j = rng.random_range(0..=i);
                p.swap(i, j);
            }
            for v in p {
                elem.encode(v as f64, &mut out);
            }
        }
        Init::CopyOf { arg } => {
            let src =
                earlier(arg).ok_or_else(|| format!("{name}: copy_of unknown argument {arg}"))?;
            if src.len() != n * elem.size() {
                return Err(format!("{name}: copy_of {arg} has a different size"));
            }
            out = src;
        }
    }
    Ok(out)
}

/// Elements per independently seeded chunk of generated input.
const CHUNK: usize = 1 << 16;

/// The poison byte written over outputs before each run: 0xFF is NaN for every float
/// type and -1 / MAX for integers.
pub const POISON: u8 = 0xFF;

#[cfg(test)]
mod tests {
    use super::*;

    fn none(_: &str) -> Option<Vec<u8>> {
        None
    }

    #[test]
    fn generation_is_seeded_and_per_name() {
        let init = Init::Uniform { lo: -1.0, hi: 1.0 };
        let a = generate(Elem::F32, 100, &init, 1, "a", &none).unwrap();
        assert_eq!(a, generate(Elem::F32, 100, &init, 1, "a", &none).unwrap());
        assert_ne!(a, generate(Elem::F32, 100, &init, 2, "a", &none).unwrap());
        assert_ne!(a, generate(Elem::F32, 100, &init, 1, "b", &none).unwrap());
        assert_eq!(a.len(), 400);
        for i in 0..100 {
            let v = Elem::F32.decode(&a, i);
            assert!((-1.0..=1.0).contains(&v), "{v}");
        }
    }

    #[test]
    fn permutation_is_a_permutation_and_copy_of_copies() {
        let p = generate(Elem::I32, 50, &Init::Permutation, 7, "p", &none).unwrap();
        let mut v: Vec<i64> = (0..50).map(|i| Elem::I32.decode(&p, i) as i64).collect();
        assert_ne!(v, (0..50).collect::<Vec<_>>(), "shuffled");
        v.sort();
        assert_eq!(v, (0..50).collect::<Vec<_>>());
        let src = p.clone();
        let c = generate(
            Elem::I32,
            50,
            &Init::CopyOf { arg: "p".into() },
            7,
            "c",
            &|n| (n == "p").then(|| src.clone()),
        )
        .unwrap();
        assert_eq!(c, p);
        assert!(generate(
            Elem::I32,
            50,
            &Init::CopyOf { arg: "q".into() },
            7,
            "c",
            &none
        )
        .is_err());
    }

    #[test]
    fn encode_decode_round_trip_and_poison_is_nan() {
        for e in [
            Elem::F32,
            Elem::F64,
            Elem::F16,
            Elem::Bf16,
            Elem::I32,
            Elem::U8,
            Elem::I64,
        ] {
            let mut b = Vec::new();
            e.encode(3.0, &mut b);
            assert_eq!(b.len(), e.size());
            assert_eq!(e.decode(&b, 0), 3.0, "{e:?}");
            let poison = vec![POISON; e.size()];
            if e.is_float() {
                assert!(e.decode(&poison, 0).is_nan(), "{e:?}");
            }
        }
        assert_eq!(Elem::I32.scalar(-2.0)[..4], (-2i32).to_le_bytes());
    }

    #[test]
    fn plan_json_round_trip() {
        let p = Plan {
            harness: "h".into(),
            allow_degenerate: false,
            needs_host_loop: None,
            size_sets: vec![SizeSetPlan {
                name: "small".into(),
                args: vec![
                    ArgPlan::Buffer(BufferPlan {
                        name: "x".into(),
                        elem: Elem::F32,
                        len: 10,
                        role: Role::Inout,
                        init: Init::Normal {
                            mean: 0.0,
                            std: 1.0,
                        },
                        tol: None,
                    }),
                    ArgPlan::Scalar {
                        name: "n".into(),
                        elem: Elem::I32,
                        value: 10.0,
                    },
                ],
                constants: vec![],
                slow: vec![LaunchPlan {
                    kernel: None,
                    grid: [1, 1, 1],
                    block: [32, 1, 1],
                    shared_mem: 0,
                    repeat: 1,
                }],
                fast: vec![],
            }],
        };
        let s = serde_json::to_string(&p).unwrap();
        assert_eq!(serde_json::from_str::<Plan>(&s).unwrap(), p);
        assert!(s.contains("\"kind\":\"buffer\""), "{s}");
    }
}
