//! Seeded host-side inputs: every `in`/`inout` buffer filled deterministically from a seed
//! (ChaCha8, one stream per arg name, so adding an arg never changes the others), `out`
//! buffers filled with the poison pattern, scalars as their little-endian bytes, and sparse
//! matrices whose index arrays agree with each other.

use super::{
    Cells, CsrPart, ElemType, Field, HarnessError, Init, JdsPart, Resolved, ResolvedArg,
    SparseMatrix, Variant,
};
use rand::seq::SliceRandom;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Bytes for one buffer (or one scalar), little-endian elements.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostBuffer {
    pub elem: ElemType,
    pub bytes: Vec<u8>,
}

impl HostBuffer {
    /// Number of elements.
    pub fn len(&self) -> usize {
        self.bytes.len() / self.elem.size_of()
    }

    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// `len` elements of the poison pattern.
    pub fn poisoned(elem: ElemType, len: usize) -> HostBuffer {
        HostBuffer {
            elem,
            bytes: poison_pattern(elem).repeat(len),
        }
    }

    fn elem_bytes(&self, i: usize) -> &[u8] {
        let s = self.elem.size_of();
        &self.bytes[i * s..(i + 1) * s]
    }

    /// Whether element `i` has exactly the poison bit pattern.
    pub fn is_poison(&self, i: usize) -> bool {
        // The pattern on the stack: this runs per element of every output.
        let (p, n) = poison_bytes(self.elem);
        self.elem_bytes(i) == &p[..n]
    }

    /// Element `i` as f64 (exact for every type but i64/u64 beyond 2^53).
    pub fn get_f64(&self, i: usize) -> f64 {
        let b = self.elem_bytes(i);
        match self.elem {
            ElemType::F32 => f32::from_le_bytes(b.try_into().unwrap()) as f64,
            ElemType::F64 => f64::from_le_bytes(b.try_into().unwrap()),
            ElemType::F16 => half::f16::from_le_bytes(b.try_into().unwrap()).to_f64(),
            ElemType::BF16 => half::bf16::from_le_bytes(b.try_into().unwrap()).to_f64(),
            _ => self.get_i128(i) as f64,
        }
    }

    /// Element `i` as an integer (floats are truncated; use `get_f64` for them).
    pub fn get_i128(&self, i: usize) -> i128 {
        let b = self.elem_bytes(i);
        match self.elem {
            ElemType::I8 => b[0] as i8 as i128,
            ElemType::U8 => b[0] as i128,
            ElemType::I16 => i16::from_le_bytes(b.try_into().unwrap()) as i128,
            ElemType::U16 => u16::from_le_bytes(b.try_into().unwrap()) as i128,
            ElemType::I32 => i32::from_le_bytes(b.try_into().unwrap()) as i128,
            ElemType::U32 => u32::from_le_bytes(b.try_into().unwrap()) as i128,
            ElemType::I64 => i64::from_le_bytes(b.try_into().unwrap()) as i128,
            ElemType::U64 => u64::from_le_bytes(b.try_into().unwrap()) as i128,
            _ => self.get_f64(i) as i128,
        }
    }

    /// A buffer from f64 values (rounded to the element type).
    pub fn from_f64s(elem: ElemType, values: &[f64]) -> HostBuffer {
        let mut bytes = Vec::with_capacity(values.len() * elem.size_of());
        for &v in values {
            push_f64(&mut bytes, elem, v);
        }
        HostBuffer { elem, bytes }
    }

    /// A buffer from integer values (wrapping to the element type).
    pub fn from_i64s(elem: ElemType, values: &[i64]) -> HostBuffer {
        let mut bytes = Vec::with_capacity(values.len() * elem.size_of());
        for &v in values {
            push_i64(&mut bytes, elem, v);
        }
        HostBuffer { elem, bytes }
    }
}

/// One element of the pattern written into write-only outputs before a run: a NaN with a
/// full payload for floats (a kernel computing NaN produces the canonical 0x7FC0… instead),
/// all-ones bytes for integers.
pub fn poison_pattern(elem: ElemType) -> Vec<u8> {
    let (p, n) = poison_bytes(elem);
    p[..n].to_vec()
}

/// [`poison_pattern`] without an allocation: the first `n` bytes of the array.
fn poison_bytes(elem: ElemType) -> ([u8; 8], usize) {
    let n = elem.size_of();
    let mut p = [0xFF; 8];
    match elem {
        // Quiet NaNs with a payload no arithmetic makes: CUDA's canonical NaN (what
        // `sqrtf(-1)` or `NAN` gives) is all-ones, 0x7FFFFFFF, which must count as written.
        ElemType::F32 => p[..4].copy_from_slice(&0x7FE5_5A5Au32.to_le_bytes()),
        ElemType::F64 => p.copy_from_slice(&0x7FFC_5A5A_5A5A_5A5Au64.to_le_bytes()),
        ElemType::F16 => p[..2].copy_from_slice(&0x7E5Au16.to_le_bytes()),
        ElemType::BF16 => p[..2].copy_from_slice(&0x7FDAu16.to_le_bytes()),
        _ => {}
    }
    (p, n)
}

fn push_f64(out: &mut Vec<u8>, elem: ElemType, v: f64) {
    match elem {
        ElemType::F32 => out.extend_from_slice(&(v as f32).to_le_bytes()),
        ElemType::F64 => out.extend_from_slice(&v.to_le_bytes()),
        ElemType::F16 => out.extend_from_slice(&half::f16::from_f64(v).to_le_bytes()),
        ElemType::BF16 => out.extend_from_slice(&half::bf16::from_f64(v).to_le_bytes()),
        _ => push_i64(out, elem, v.round() as i64),
    }
}

fn push_i64(out: &mut Vec<u8>, elem: ElemType, v: i64) {
    match elem {
        ElemType::I8 | ElemType::U8 => out.push(v as u8),
        ElemType::I16 | ElemType::U16 => out.extend_from_slice(&(v as u16).to_le_bytes()),
        ElemType::I32 | ElemType::U32 => out.extend_from_slice(&(v as u32).to_le_bytes()),
        ElemType::I64 | ElemType::U64 => out.extend_from_slice(&v.to_le_bytes()),
        _ => push_f64(out, elem, v as f64),
    }
}

/// Inclusive integer range an element type holds (clamped to i64).
fn int_bounds(elem: ElemType) -> (i64, i64) {
    match elem {
        ElemType::I8 => (i8::MIN as i64, i8::MAX as i64),
        ElemType::U8 => (0, u8::MAX as i64),
        ElemType::I16 => (i16::MIN as i64, i16::MAX as i64),
        ElemType::U16 => (0, u16::MAX as i64),
        ElemType::I32 => (i32::MIN as i64, i32::MAX as i64),
        ElemType::U32 => (0, u32::MAX as i64),
        ElemType::I64 | ElemType::U64 => (i64::MIN, i64::MAX),
        // Floats hold every integer a harness would ask for up to 2^24 exactly (f32).
        ElemType::F16 => (-2048, 2048),
        ElemType::BF16 => (-256, 256),
        ElemType::F32 => (-(1 << 24), 1 << 24),
        ElemType::F64 => (-(1 << 53), 1 << 53),
    }
}

/// A stream per (seed, purpose, name): FNV-1a over the name mixed into the seed.
fn rng_for(seed: u64, purpose: &str, name: &str) -> ChaCha8Rng {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in purpose.bytes().chain([0u8]).chain(name.bytes()) {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    ChaCha8Rng::seed_from_u64(seed ^ h.rotate_left(17))
}

/// A sparse matrix's structure (fixed for its shape) and its values (for a seed).
struct Sparse {
    /// Column indices per row, sorted.
    rows: Vec<Vec<u32>>,
    values: Vec<Vec<f64>>,
}

fn sparse_structure(m: &SparseMatrix) -> Vec<Vec<u32>> {
    // The structure is seeded by the shape only, so lengths like `A_nnz` are known when the
    // harness is resolved, before any seed is chosen.
    use rayon::prelude::*;
    let shape = format!("{}x{}:{}", m.rows, m.cols, m.nnz_per_row);
    let max_len = (2 * m.nnz_per_row).saturating_sub(1).clamp(1, m.cols);
    // Blocks of rows draw from their own streams, so large matrices build in parallel and
    // the structure does not depend on the number of threads.
    const ROWS: usize = 4096;
    (0..m.rows.div_ceil(ROWS))
        .into_par_iter()
        .flat_map_iter(|b| {
            let mut rng = rng_for(0x5EED, &format!("{shape}/{b}"), &m.name);
            (b * ROWS..((b + 1) * ROWS).min(m.rows))
                .map(|_| {
                    let len = 1 + below(&mut rng, max_len);
                    distinct_sorted(&mut rng, m.cols, len)
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Uniform in `0..n` by multiply-shift (bias below 2^-32 for the sizes used here). Sparse
/// structures draw millions of these; rand's generic range sampling is compiled unoptimized
/// in test builds and took seconds.
fn below(rng: &mut ChaCha8Rng, n: usize) -> usize {
    use rand::RngCore;
    ((rng.next_u64() as u128 * n as u128) >> 64) as usize
}

/// Uniform in [0, 1) with 53 random bits.
fn unit(rng: &mut ChaCha8Rng) -> f64 {
    use rand::RngCore;
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// Uniform integer in `lo..=hi`.
fn int_in(rng: &mut ChaCha8Rng, lo: i64, hi: i64) -> i64 {
    use rand::RngCore;
    let span = (hi as i128 - lo as i128 + 1) as u128;
    if span > u64::MAX as u128 {
        return rng.next_u64() as i64;
    }
    lo.wrapping_add(((rng.next_u64() as u128 * span) >> 64) as i64)
}

/// `len` distinct values from `0..n`, sorted. (rand's `index::sample` may allocate all of
/// `0..n` per call, which made a 100k-row matrix take seconds.)
fn distinct_sorted(rng: &mut ChaCha8Rng, n: usize, len: usize) -> Vec<u32> {
    if len * 4 >= n {
        // Dense rows: a partial shuffle of the whole range.
        let mut all: Vec<u32> = (0..n as u32).collect();
        for i in 0..len {
            let j = i + below(rng, n - i);
            all.swap(i, j);
        }
        all.truncate(len);
        all.sort_unstable();
        return all;
    }
    let mut out: Vec<u32> = Vec::with_capacity(len);
    while out.len() < len {
        let c = below(rng, n) as u32;
        if !out.contains(&c) {
            out.push(c);
        }
    }
    out.sort_unstable();
    out
}

fn sparse_with_values(m: &SparseMatrix, seed: u64) -> Sparse {
    let rows = sparse_structure(m);
    let mut rng = rng_for(seed, "sparse-values", &m.name);
    let values = rows
        .iter()
        .map(|r| {
            r.iter()
                .map(|_| {
                    use rand::RngCore;
                    // Magnitude in [0.1, 1) so that no stored entry is an implicit zero;
                    // the lowest bit picks the sign.
                    let x = rng.next_u64();
                    let v = 0.1 + 0.9 * ((x >> 11) as f64 / (1u64 << 53) as f64);
                    if x & 1 == 0 {
                        v
                    } else {
                        -v
                    }
                })
                .collect()
        })
        .collect();
    Sparse { rows, values }
}

/// The JDS layout of a structure: (perm, ptr, zcnt, jds_len).
fn jds_layout(rows: &[Vec<u32>], pad: usize) -> (Vec<usize>, Vec<usize>, Vec<usize>, usize) {
    let mut perm: Vec<usize> = (0..rows.len()).collect();
    perm.sort_by_key(|&r| std::cmp::Reverse(rows[r].len()));
    let groups = rows.len().div_ceil(pad);
    let zcnt: Vec<usize> = (0..groups).map(|g| rows[perm[g * pad]].len()).collect();
    let depth = zcnt.first().copied().unwrap_or(0);
    let mut ptr = Vec::with_capacity(depth);
    let mut off = 0;
    for k in 0..depth {
        ptr.push(off);
        let groups_k = zcnt.iter().take_while(|&&z| z > k).count();
        off += groups_k * pad;
    }
    (perm, ptr, zcnt, off)
}

/// Figures of a sparse matrix that length expressions may use, as `<name>_<figure>`:
/// `nnz`, `depth` (longest row), `jds_len`, `zcnt_len`, `rows`, `cols`.
pub fn sparse_figures(m: &SparseMatrix) -> Vec<(&'static str, usize)> {
    let rows = sparse_structure(m);
    let nnz = rows.iter().map(Vec::len).sum();
    let (_, ptr, zcnt, jds_len) = jds_layout(&rows, m.pad);
    vec![
        ("nnz", nnz),
        ("depth", ptr.len()),
        ("jds_len", jds_len),
        ("zcnt_len", zcnt.len()),
        ("rows", m.rows),
        ("cols", m.cols),
    ]
}

fn sparse_part_len(m: &SparseMatrix, init: &Init, values: &BTreeMap<String, i64>) -> Option<usize> {
    let f = |k: &str| {
        values
            .get(&format!("{}_{k}", m.name))
            .copied()
            .unwrap_or(-1) as usize
    };
    match init {
        Init::Csr { part, .. } => Some(match part {
            CsrPart::RowPtr => m.rows + 1,
            CsrPart::ColIdx | CsrPart::Values => f("nnz"),
        }),
        Init::Jds { part, .. } => Some(match part {
            JdsPart::Perm => m.rows,
            JdsPart::Ptr => f("depth"),
            JdsPart::Zcnt => f("zcnt_len"),
            JdsPart::ColIdx | JdsPart::Values => f("jds_len"),
        }),
        _ => None,
    }
}

/// Consistency checks that need resolved lengths: copies match their source, sparse parts
/// have the lengths their matrix implies, integer ranges fit their type.
pub(crate) fn check_resolved(r: &Resolved) -> Result<(), HarnessError> {
    let err = |m: String| generate_error(&r.origin, format!("size set {}: {m}", r.size_set));
    let buffers: Vec<(&str, ElemType, usize, &Init)> = buffers(r).collect();
    for &(name, elem, len, init) in &buffers {
        match init {
            Init::CopyOf { arg } => {
                let src = buffers.iter().find(|b| b.0 == arg);
                match src {
                    Some(&(_, e, l, i)) => {
                        if e != elem || l != len {
                            return Err(err(format!(
                                "{name} copies {arg}, but they differ in type or length ({} x {len} vs {} x {l})",
                                elem.name(),
                                e.name()
                            )));
                        }
                        if matches!(i, Init::CopyOf { .. } | Init::Interleave { .. }) {
                            return Err(err(format!(
                                "{name} copies {arg}, which is itself built from others; copy the source"
                            )));
                        }
                    }
                    None => return Err(err(format!("{name} copies unknown buffer {arg}"))),
                }
            }
            Init::Interleave { args } => {
                let mut n = None;
                for a in args {
                    let (e, l) = match buffers.iter().find(|b| b.0 == a) {
                        Some(&(_, e, l, _)) => (e, l),
                        None => return Err(err(format!("{name} interleaves unknown buffer {a}"))),
                    };
                    if e != elem || *n.get_or_insert(l) != l {
                        return Err(err(format!(
                            "{name} interleaves {a}, whose type or length differs from the others"
                        )));
                    }
                }
                let want = n.unwrap_or(0) * args.len();
                if want != len {
                    return Err(err(format!(
                        "{name} interleaves {} buffers of {} elements, so its len must be {want}, not {len}",
                        args.len(),
                        n.unwrap_or(0)
                    )));
                }
            }
            Init::Csr { matrix, .. } | Init::Jds { matrix, .. } => {
                let m = r
                    .sparse
                    .iter()
                    .find(|m| &m.name == matrix)
                    .ok_or_else(|| err(format!("{name}: unknown matrix {matrix}")))?;
                let want = sparse_part_len(m, init, &r.values).expect("sparse init");
                if want != len {
                    return Err(err(format!(
                        "{name} holds a part of matrix {matrix} that has {want} elements, but its len is {len}"
                    )));
                }
            }
            Init::Cells(c) => check_cells(elem, len, c).map_err(|m| err(format!("{name}: {m}")))?,
            Init::Permutation if (len as i128 - 1) > int_bounds(elem).1 as i128 => {
                return Err(err(format!(
                    "{name}: a permutation of {len} does not fit {}",
                    elem.name()
                )));
            }
            Init::Fields { fields } => {
                let m: usize = fields.iter().map(|f| f.count).sum();
                if len % m != 0 {
                    return Err(err(format!(
                        "{name}: records of {m} fields do not tile its {len} elements"
                    )));
                }
                for (k, f) in fields.iter().enumerate() {
                    check_elementwise(&f.init, f.value_type(elem))
                        .map_err(|m| err(format!("{name}: fields[{k}]: {m}")))?;
                }
            }
            init => check_elementwise(init, elem).map_err(|m| err(format!("{name}: {m}")))?,
        }
    }
    Ok(())
}

/// A `cells` buffer is float, exactly `cells × depth × 4` long, fills at most `depth`
/// slots per cell, and its w range holds a nonzero value of the type (w = 0 ends a bin).
fn check_cells(elem: ElemType, len: usize, c: &Cells) -> Result<(), String> {
    let Cells {
        dims,
        depth,
        size,
        fill,
        w,
        ..
    } = *c;
    if !matches!(elem, ElemType::F32 | ElemType::F64) {
        return Err(format!(
            "cells holds float coordinates: its type must be f32 or f64, not {}",
            elem.name()
        ));
    }
    let want = dims
        .iter()
        .try_fold(depth * 4, |acc, &d| acc.checked_mul(d))
        .ok_or("cells: dims × depth overflow")?;
    if want != len {
        return Err(format!(
            "{}×{}×{} cells of {depth} slots of 4 values make {want} elements, but its len is {len}",
            dims[0], dims[1], dims[2]
        ));
    }
    if !(size.is_finite() && size > 0.0) {
        return Err(format!("cells: size must be > 0, is {size}"));
    }
    if !(0 <= fill.lo && fill.lo <= fill.hi && fill.hi <= depth as i64) {
        return Err(format!(
            "cells fill {}..={} must satisfy 0 <= lo <= hi <= depth ({depth})",
            fill.lo, fill.hi
        ));
    }
    if !(w.lo < w.hi && w.lo.is_finite() && w.hi.is_finite()) {
        return Err(format!("cells w needs lo < hi, got {}..{}", w.lo, w.hi));
    }
    if round_to(elem, w.lo) == 0.0 && round_to(elem, w.hi) == 0.0 {
        return Err(format!(
            "cells w {}..{} holds no nonzero {} (w = 0 marks the end of a cell)",
            w.lo,
            w.hi,
            elem.name()
        ));
    }
    Ok(())
}

/// `v` as the float type `elem` stores it.
fn round_to(elem: ElemType, v: f64) -> f64 {
    match elem {
        ElemType::F32 => v as f32 as f64,
        _ => v,
    }
}

/// Integer values of an elementwise init fit the type they are generated in.
fn check_elementwise(init: &Init, elem: ElemType) -> Result<(), String> {
    match init {
        Init::IntRange { lo, hi } => {
            let (a, b) = int_bounds(elem);
            if *lo < a || *hi > b {
                return Err(format!(
                    "int_range {lo}..={hi} does not fit {}",
                    elem.name()
                ));
            }
            if *lo == 0 && *hi == 0 {
                return Err("int_range 0..=0 is all zeros; say `zeros` if that is meant".into());
            }
        }
        Init::Choice { values, .. } if !elem.is_float() => {
            let (a, b) = int_bounds(elem);
            if let Some(v) = values
                .iter()
                .find(|v| v.fract() != 0.0 || **v < a as f64 || **v > b as f64)
            {
                return Err(format!("choice value {v} is not a {} integer", elem.name()));
            }
        }
        _ => {}
    }
    Ok(())
}

/// Sparse matrices with their values for one seed, built once per generate call.
type SparseCache = BTreeMap<String, (SparseMatrix, Sparse)>;

fn sparse_cache(r: &Resolved, seed: u64) -> SparseCache {
    r.sparse
        .iter()
        .map(|m| (m.name.clone(), (m.clone(), sparse_with_values(m, seed))))
        .collect()
}

/// Elements per chunk of parallel generation.
const GEN_CHUNK: usize = 1 << 16;

/// `len` elements drawn one after another from `proto`'s stream, each taking exactly
/// `words` 32-bit words of it and pushed by `draw`: large buffers are cut into chunks that
/// jump to their own position in the stream (`set_word_pos`) and run in parallel, giving
/// byte for byte what one serial pass gives.
fn draw_stream<F>(proto: &ChaCha8Rng, elem: ElemType, len: usize, words: u128, draw: F) -> Vec<u8>
where
    F: Fn(&mut ChaCha8Rng, &mut Vec<u8>) + Sync,
{
    let size = elem.size_of();
    if len < 4 * GEN_CHUNK {
        let mut rng = proto.clone();
        let mut out = Vec::with_capacity(len * size);
        for _ in 0..len {
            draw(&mut rng, &mut out);
        }
        return out;
    }
    use rayon::prelude::*;
    let start = proto.get_word_pos();
    let mut bytes = vec![0u8; len * size];
    bytes
        .par_chunks_mut(GEN_CHUNK * size)
        .enumerate()
        .for_each(|(c, out)| {
            let mut rng = proto.clone();
            rng.set_word_pos(start + (c * GEN_CHUNK) as u128 * words);
            let mut tmp = Vec::with_capacity(out.len());
            for _ in 0..out.len() / size {
                draw(&mut rng, &mut tmp);
            }
            out.copy_from_slice(&tmp);
        });
    bytes
}

fn fill(
    name: &str,
    elem: ElemType,
    len: usize,
    init: &Init,
    seed: u64,
    sparse: &SparseCache,
    origin: &str,
) -> Result<HostBuffer, HarnessError> {
    let mut rng = rng_for(seed, "arg", name);
    let mut bytes = Vec::with_capacity(len * elem.size_of());
    match init {
        // One u64 (two words) per element for uniform, integer and choice draws, two for
        // normals.
        Init::Uniform { .. }
        | Init::IntRange { .. }
        | Init::Choice { .. }
        | Init::Normal { .. } => {
            let words = if matches!(init, Init::Normal { .. }) {
                4
            } else {
                2
            };
            bytes = draw_stream(&rng, elem, len, words, |r, out| draw(init, elem, r, out));
        }
        Init::Constant { .. } => {
            for _ in 0..len {
                draw(init, elem, &mut rng, &mut bytes);
            }
        }
        Init::Zeros => bytes.resize(len * elem.size_of(), 0),
        Init::Poison => return Ok(HostBuffer::poisoned(elem, len)),
        Init::Permutation => {
            let mut p: Vec<i64> = (0..len as i64).collect();
            p.shuffle(&mut rng);
            for v in p {
                push_i64(&mut bytes, elem, v);
            }
        }
        Init::Iota {
            start,
            step,
            every,
            period,
        } => {
            for i in 0..len as i64 {
                let k = i / every;
                let k = period.map_or(k, |p| k % p);
                push_i64(&mut bytes, elem, start + step * k);
            }
        }
        Init::Csr { matrix, part } => {
            let (_, s) = find_matrix(sparse, matrix, origin)?;
            bytes = csr_bytes(s, *part, elem);
        }
        Init::Jds { matrix, part } => {
            let (m, s) = find_matrix(sparse, matrix, origin)?;
            bytes = jds_bytes(m, s, *part, elem);
        }
        Init::Linspace { start, stop } => {
            let step = if len > 1 {
                (stop - start) / (len - 1) as f64
            } else {
                0.0
            };
            for i in 0..len {
                push_f64(&mut bytes, elem, start + step * i as f64);
            }
        }
        Init::Fields { fields } => bytes = fill_fields(name, elem, len, fields, seed),
        Init::Cells(c) => bytes = fill_cells(name, elem, c, seed),
        Init::CopyOf { .. } | Init::Interleave { .. } => {
            unreachable!("copies and interleavings are built by `produce`")
        }
        Init::Captured { blobs, id } => {
            // What the program held: zeros included, whatever the seed.
            bytes = crate::gpu::capture::BlobStore::new(blobs)
                .get(id, (len * elem.size_of()) as u64)
                .map_err(|e| generate_error(origin, format!("{name}: {e}")))?;
            return Ok(HostBuffer { elem, bytes });
        }
    }
    let buf = HostBuffer { elem, bytes };
    debug_assert_eq!(buf.len(), len);
    if !matches!(init, Init::Zeros) && buf.bytes.iter().all(|&b| b == 0) {
        return Err(generate_error(
            origin,
            format!("{name}: the {init:?} init produced only zeros; widen it or say `zeros`"),
        ));
    }
    Ok(buf)
}

/// One part of a sparse matrix in CSR form.
fn csr_bytes(s: &Sparse, part: CsrPart, elem: ElemType) -> Vec<u8> {
    let mut bytes = Vec::new();
    match part {
        CsrPart::RowPtr => {
            let mut off = 0i64;
            push_i64(&mut bytes, elem, 0);
            for r in &s.rows {
                off += r.len() as i64;
                push_i64(&mut bytes, elem, off);
            }
        }
        CsrPart::ColIdx => {
            for c in s.rows.iter().flatten() {
                push_i64(&mut bytes, elem, *c as i64);
            }
        }
        CsrPart::Values => {
            for v in s.values.iter().flatten() {
                push_f64(&mut bytes, elem, *v);
            }
        }
    }
    bytes
}

/// One part of a sparse matrix in JDS form (rows sorted by length, stored by diagonal).
fn jds_bytes(m: &SparseMatrix, s: &Sparse, part: JdsPart, elem: ElemType) -> Vec<u8> {
    let mut bytes = Vec::new();
    let (perm, ptr, zcnt, jds_len) = jds_layout(&s.rows, m.pad);
    match part {
        JdsPart::Perm => perm
            .iter()
            .for_each(|&p| push_i64(&mut bytes, elem, p as i64)),
        JdsPart::Ptr => ptr
            .iter()
            .for_each(|&p| push_i64(&mut bytes, elem, p as i64)),
        JdsPart::Zcnt => zcnt
            .iter()
            .for_each(|&z| push_i64(&mut bytes, elem, z as i64)),
        JdsPart::ColIdx | JdsPart::Values => {
            let mut cols = vec![0i64; jds_len];
            let mut vals = vec![0f64; jds_len];
            for (k, &start) in ptr.iter().enumerate() {
                for (ix, &row) in perm.iter().enumerate() {
                    if k < s.rows[row].len() {
                        cols[start + ix] = s.rows[row][k] as i64;
                        vals[start + ix] = s.values[row][k];
                    }
                }
            }
            if part == JdsPart::ColIdx {
                cols.iter().for_each(|&c| push_i64(&mut bytes, elem, c));
            } else {
                vals.iter().for_each(|&v| push_f64(&mut bytes, elem, v));
            }
        }
    }
    bytes
}

/// Records per generation chunk of a `fields` buffer: chunks are filled in parallel, each
/// field group of each chunk from its own stream, so the bytes do not depend on threads.
const FIELD_CHUNK: usize = 1 << 14;

fn fill_fields(name: &str, elem: ElemType, len: usize, fields: &[Field], seed: u64) -> Vec<u8> {
    use rayon::prelude::*;
    let m: usize = fields.iter().map(|f| f.count).sum();
    let es = elem.size_of();
    let mut bytes = vec![0u8; len * es];
    bytes
        .par_chunks_mut(FIELD_CHUNK * m * es)
        .enumerate()
        .for_each(|(c, chunk)| {
            let mut rngs: Vec<ChaCha8Rng> = (0..fields.len())
                .map(|k| rng_for(seed, "fields", &format!("{name}/{k}/{c}")))
                .collect();
            let mut out = Vec::with_capacity(chunk.len());
            for _ in 0..chunk.len() / (m * es) {
                for (f, rng) in fields.iter().zip(&mut rngs) {
                    for _ in 0..f.count {
                        draw(&f.init, f.value_type(elem), rng, &mut out);
                    }
                }
            }
            chunk.copy_from_slice(&out);
        });
    bytes
}

/// Cells per generation chunk of a `cells` buffer: each chunk draws from its own stream
/// (`cells/<name>/<chunk>`) and chunks run in parallel, so the bytes do not depend on the
/// number of threads.
const CELL_CHUNK: usize = 1 << 12;

/// Redraws of a w that rounds to zero before falling back to a bound that does not (the
/// range was checked to have one); with any sensible range the first draw is nonzero.
const W_REDRAWS: usize = 64;

fn fill_cells(name: &str, elem: ElemType, c: &Cells, seed: u64) -> Vec<u8> {
    use rayon::prelude::*;
    let es = elem.size_of();
    let cell_bytes = c.depth * 4 * es;
    let n_cells = c.dims.iter().product::<usize>();
    let mut bytes = vec![0u8; n_cells * cell_bytes];
    let w_nonzero = |r: &mut ChaCha8Rng| -> f64 {
        for _ in 0..W_REDRAWS {
            let v = round_to(elem, c.w.lo + (c.w.hi - c.w.lo) * unit(r));
            if v != 0.0 {
                return v;
            }
        }
        if round_to(elem, c.w.lo) != 0.0 {
            c.w.lo
        } else {
            c.w.hi
        }
    };
    bytes
        .par_chunks_mut(CELL_CHUNK * cell_bytes)
        .enumerate()
        .for_each(|(chunk, out)| {
            let mut rng = rng_for(seed, "cells", &format!("{name}/{chunk}"));
            let mut tmp = Vec::with_capacity(out.len());
            let first = chunk * CELL_CHUNK;
            for n in first..first + out.len() / cell_bytes {
                let ijk = [
                    n % c.dims[0],
                    n / c.dims[0] % c.dims[1],
                    n / (c.dims[0] * c.dims[1]),
                ];
                let count = int_in(&mut rng, c.fill.lo, c.fill.hi) as usize;
                for _ in 0..count {
                    for (d, &i) in ijk.iter().enumerate() {
                        let lo = c.origin[d] + i as f64 * c.size;
                        push_f64(&mut tmp, elem, inside(elem, lo, c.size, unit(&mut rng)));
                    }
                    push_f64(&mut tmp, elem, w_nonzero(&mut rng));
                }
                tmp.resize(tmp.len() + (c.depth - count) * 4 * es, 0);
            }
            out.copy_from_slice(&tmp);
        });
    bytes
}

/// `lo + size·u` as `elem` stores it, kept below `lo + size` when rounding would reach the
/// next cell's edge.
fn inside(elem: ElemType, lo: f64, size: f64, u: f64) -> f64 {
    let v = round_to(elem, lo + size * u);
    let hi = round_to(elem, lo + size);
    if v < hi {
        return v;
    }
    match elem {
        ElemType::F32 => (hi as f32).next_down() as f64,
        _ => hi.next_down(),
    }
}

/// One element of an elementwise init, appended as `elem`'s little-endian bytes.
fn draw(init: &Init, elem: ElemType, rng: &mut ChaCha8Rng, out: &mut Vec<u8>) {
    match init {
        Init::Uniform { lo, hi } if elem.is_float() => {
            push_f64(out, elem, lo + (hi - lo) * unit(rng))
        }
        Init::Uniform { lo, hi } => {
            let (a, b) = int_bounds(elem);
            let lo_i = (lo.ceil() as i64).max(a);
            let hi_i = (hi.floor() as i64).min(b).max(lo_i);
            push_i64(out, elem, int_in(rng, lo_i, hi_i))
        }
        Init::Normal { mean, std, lo, hi } => {
            // Box-Muller; 1 - unit() is in (0, 1], so the log is finite.
            let (u1, u2) = (1.0 - unit(rng), unit(rng));
            let z = (-2.0 * u1.ln()).sqrt() * (std::f64::consts::TAU * u2).cos();
            let (lo, hi) = (lo.unwrap_or(f64::NEG_INFINITY), hi.unwrap_or(f64::INFINITY));
            push_f64(out, elem, (mean + std * z).clamp(lo, hi))
        }
        Init::IntRange { lo, hi } => push_i64(out, elem, int_in(rng, *lo, *hi)),
        Init::Zeros => push_i64(out, elem, 0),
        Init::Constant { value } => push_f64(out, elem, *value),
        Init::Choice { values, weights } => {
            let total: f64 = weights.iter().sum();
            let mut x = unit(rng) * total;
            let mut pick = values.len() - 1;
            for (k, w) in weights.iter().enumerate() {
                if x < *w {
                    pick = k;
                    break;
                }
                x -= w;
            }
            push_f64(out, elem, values[pick])
        }
        other => unreachable!("{other:?} is not an elementwise init (checked at parse)"),
    }
}

/// The inputs as `variant`'s kernel receives them: [`generate_inputs`], then every buffer
/// with a layout for that variant permuted into it ([`super::Layout::apply`]).
pub fn generate_inputs_for(
    resolved: &Resolved,
    seed: u64,
    variant: Variant,
) -> Result<Vec<HostBuffer>, HarnessError> {
    let mut inputs = generate_inputs(resolved, seed)?;
    for (a, b) in resolved.args.iter().zip(&mut inputs) {
        if let ResolvedArg::Buffer { layout, .. } = a {
            if let Some(l) = layout.get(variant) {
                *b = l.apply(b);
            }
        }
    }
    Ok(inputs)
}

fn find_matrix<'a>(
    sparse: &'a SparseCache,
    name: &str,
    origin: &str,
) -> Result<&'a (SparseMatrix, Sparse), HarnessError> {
    (sparse.get(name)).ok_or_else(|| generate_error(origin, format!("unknown matrix {name}")))
}

/// One [`HostBuffer`] per entry of `resolved.args`, in order: `in`/`inout` buffers filled
/// from `seed`, `out` buffers poisoned ([`poison_pattern`]), scalars as their value's bytes,
/// struct args empty (their addresses exist only on the device).
/// The same seed always gives the same bytes.
pub fn generate_inputs(resolved: &Resolved, seed: u64) -> Result<Vec<HostBuffer>, HarnessError> {
    use rayon::prelude::*;
    let cache = sparse_cache(resolved, seed);
    // Every input buffer drawn from its own stream, all at once; copies and interleavings
    // are then built from these rather than drawn again.
    let mut drawn: BTreeMap<&str, HostBuffer> = resolved
        .args
        .par_iter()
        .filter_map(|a| match a {
            ResolvedArg::Buffer {
                name,
                elem,
                len,
                role,
                init,
                ..
            } if role.is_input() && !is_built(init) => Some(
                fill(name, *elem, *len, init, seed, &cache, &resolved.origin)
                    .map(|b| (name.as_str(), b)),
            ),
            _ => None,
        })
        .collect::<Result<_, _>>()?;
    let built: Vec<Option<HostBuffer>> = resolved
        .args
        .iter()
        .map(|a| match a {
            ResolvedArg::Buffer {
                name, role, init, ..
            } if role.is_input() && is_built(init) => {
                produce(resolved, seed, &cache, &drawn, name, 0).map(Some)
            }
            _ => Ok(None),
        })
        .collect::<Result<_, _>>()?;
    resolved
        .args
        .iter()
        .zip(built)
        .map(|(a, b)| match (a, b) {
            (_, Some(b)) => Ok(b),
            (ResolvedArg::Scalar { value, .. }, _) => Ok(HostBuffer {
                elem: value.elem(),
                bytes: value.to_le_bytes(),
            }),
            (
                ResolvedArg::Buffer {
                    elem, len, role, ..
                },
                _,
            ) if !role.is_input() => Ok(HostBuffer::poisoned(*elem, *len)),
            (ResolvedArg::Buffer { name, .. }, _) => drawn.remove(name.as_str()).ok_or_else(|| {
                generate_error(&resolved.origin, format!("{name} was not generated"))
            }),
            // Its bytes are device addresses, known only once the buffers are allocated.
            (ResolvedArg::Struct { .. } | ResolvedArg::Bytes { .. }, _) => Ok(HostBuffer {
                elem: ElemType::U64,
                bytes: Vec::new(),
            }),
        })
        .collect()
}

/// A buffer whose bytes do not depend on a seed or on other buffers (a captured output,
/// [`Init::Captured`]), as `len` elements of `elem`.
pub fn fill_expected(
    origin: &str,
    name: &str,
    elem: ElemType,
    len: usize,
    init: &Init,
) -> Result<HostBuffer, HarnessError> {
    fill(name, elem, len, init, 0, &SparseCache::new(), origin)
}

/// Inits built from other buffers rather than drawn from their own stream.
fn is_built(init: &Init) -> bool {
    matches!(init, Init::CopyOf { .. } | Init::Interleave { .. })
}

/// One [`HostBuffer`] per entry of `resolved.constants`, in order, for `seed`.
pub fn generate_constants(resolved: &Resolved, seed: u64) -> Result<Vec<HostBuffer>, HarnessError> {
    let cache = sparse_cache(resolved, seed);
    resolved
        .constants
        .iter()
        .map(|c| produce(resolved, seed, &cache, &BTreeMap::new(), &c.name, 0))
        .collect()
}

/// A named buffer (arg or constant) as its init makes it, whatever its role: copies and
/// interleavings are built from what their sources' inits produce.
fn produce(
    r: &Resolved,
    seed: u64,
    cache: &SparseCache,
    drawn: &BTreeMap<&str, HostBuffer>,
    name: &str,
    depth: usize,
) -> Result<HostBuffer, HarnessError> {
    produce_cow(r, seed, cache, drawn, name, depth).map(Cow::into_owned)
}

/// [`produce`], borrowing a buffer already drawn (`drawn`, by name) instead of drawing it again.
fn produce_cow<'a>(
    r: &Resolved,
    seed: u64,
    cache: &SparseCache,
    drawn: &'a BTreeMap<&str, HostBuffer>,
    name: &str,
    depth: usize,
) -> Result<Cow<'a, HostBuffer>, HarnessError> {
    use rayon::prelude::*;
    let err = |m: String| generate_error(&r.origin, m);
    if depth > 4 {
        return Err(err(format!("{name}: copies nest too deeply")));
    }
    if let Some(b) = drawn.get(name) {
        return Ok(Cow::Borrowed(b));
    }
    let (_, elem, len, init) =
        (buffers(r).find(|b| b.0 == name)).ok_or_else(|| err(format!("no buffer named {name}")))?;
    match init {
        Init::CopyOf { arg } => produce_cow(r, seed, cache, drawn, arg, depth + 1),
        Init::Interleave { args } => {
            let parts = args
                .iter()
                .map(|a| produce_cow(r, seed, cache, drawn, a, depth + 1))
                .collect::<Result<Vec<_>, _>>()?;
            let e = elem.size_of();
            let m = parts.len();
            let mut bytes = vec![0u8; parts[0].len() * m * e];
            // Records in parallel chunks: record i is element i of each part, in order.
            const RECORDS: usize = 1 << 14;
            bytes
                .par_chunks_mut(RECORDS * m * e)
                .enumerate()
                .for_each(|(c, out)| {
                    for (k, rec) in out.chunks_exact_mut(m * e).enumerate() {
                        let i = c * RECORDS + k;
                        for (j, p) in parts.iter().enumerate() {
                            rec[j * e..(j + 1) * e].copy_from_slice(&p.bytes[i * e..(i + 1) * e]);
                        }
                    }
                });
            debug_assert_eq!(bytes.len(), len * e);
            Ok(Cow::Owned(HostBuffer { elem, bytes }))
        }
        _ => fill(name, elem, len, init, seed, cache, &r.origin).map(Cow::Owned),
    }
}

/// Every buffer arg, then every constant: (name, element type, length, init).
fn buffers(r: &Resolved) -> impl Iterator<Item = (&str, ElemType, usize, &Init)> {
    let args = r.args.iter().filter_map(|a| match a {
        ResolvedArg::Buffer {
            name,
            elem,
            len,
            init,
            ..
        } => Some((name.as_str(), *elem, *len, init)),
        _ => None,
    });
    args.chain((r.constants.iter()).map(|c| (c.name.as_str(), c.elem, c.len, &c.init)))
}

fn generate_error(origin: &str, message: String) -> HarnessError {
    HarnessError::Generate {
        origin: origin.into(),
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `f` run in a pool of one thread: parallel generation must give the same bytes.
    fn on_one_thread<T: Send>(f: impl FnOnce() -> T + Send) -> T {
        rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap()
            .install(f)
    }

    #[test]
    fn computed_nans_are_not_the_poison() {
        // CUDA's canonical NaNs (PTX: 0x7FFFFFFF for f32) and the IEEE default quiet NaN.
        let cases: [(ElemType, &[u8]); 6] = [
            (ElemType::F32, &0x7FFF_FFFFu32.to_le_bytes()),
            (ElemType::F32, &0x7FC0_0000u32.to_le_bytes()),
            (ElemType::F64, &0x7FFF_FFFF_FFFF_FFFFu64.to_le_bytes()),
            (ElemType::F64, &0x7FF8_0000_0000_0000u64.to_le_bytes()),
            (ElemType::F16, &0x7FFFu16.to_le_bytes()),
            (ElemType::BF16, &0x7FFFu16.to_le_bytes()),
        ];
        for (e, nan) in cases {
            let b = HostBuffer {
                elem: e,
                bytes: nan.to_vec(),
            };
            assert!(!b.is_poison(0), "{e:?} {nan:x?}");
            assert!(b.get_f64(0).is_nan());
            let p = HostBuffer::poisoned(e, 1);
            assert!(p.is_poison(0) && p.get_f64(0).is_nan(), "{e:?}");
        }
    }

    #[test]
    fn is_poison_matches_the_pattern_for_every_type() {
        for e in ElemType::ALL {
            let p = poison_pattern(e);
            let mut b = HostBuffer {
                elem: e,
                bytes: [p.clone(), vec![0; p.len()], p.clone()].concat(),
            };
            assert!(b.is_poison(0) && !b.is_poison(1) && b.is_poison(2), "{e:?}");
            // Any one byte changed is a value, not the poison.
            for k in 0..p.len() {
                b.bytes[k] ^= 0x01;
                assert!(!b.is_poison(0), "{e:?} byte {k}");
                b.bytes[k] ^= 0x01;
            }
        }
    }
    use crate::harness::tests::{err_of, resolved, SAXPY};

    #[test]
    fn inputs_are_deterministic_per_seed_and_outputs_poisoned() {
        let r = resolved(SAXPY, 0);
        let a = generate_inputs(&r, 1).unwrap();
        assert_eq!(a, generate_inputs(&r, 1).unwrap());
        let b = generate_inputs(&r, 2).unwrap();
        assert_ne!(a[2], b[2], "another seed, other data");
        assert_eq!(a[0].bytes, 1000i32.to_le_bytes(), "scalar bytes");
        assert_eq!(a[2].len(), 1000);
        let xs: Vec<f64> = (0..1000).map(|i| a[2].get_f64(i)).collect();
        assert!(xs.iter().all(|x| (-1.0..1.0).contains(x)));
        assert!(xs.iter().any(|&x| x != xs[0]));
        // Arg streams are independent: x does not depend on y's presence or order.
        let r2 = resolved(&SAXPY.replace("role = \"inout\"", "role = \"out\""), 0);
        let c = generate_inputs(&r2, 1).unwrap();
        assert_eq!(c[2], a[2]);
        assert!(
            (0..c[3].len()).all(|i| c[3].is_poison(i)),
            "out buffers are poisoned"
        );
        assert!(c[3].get_f64(0).is_nan());
    }

    const MIX: &str = r#"
[sizes]
n = 777
[[sparse]]
name = "A"
rows = "n"
cols = "n + 5"
nnz_per_row = 6
[[args]]
name = "perm"
type = "i32"
len = "n"
init = { kind = "permutation" }
role = "in"
[[args]]
name = "idx"
type = "u32"
len = "n"
init = { kind = "iota", start = 3, step = 2 }
role = "in"
[[args]]
name = "src"
type = "i16"
len = "n"
init = { kind = "int_range", lo = -5, hi = 5 }
role = "in"
[[args]]
name = "dst"
type = "i16"
len = "n"
init = { kind = "copy_of", arg = "src" }
role = "inout"
[[args]]
name = "row_ptr"
type = "i32"
len = "A_rows + 1"
init = { kind = "csr", matrix = "A", part = "row_ptr" }
role = "in"
[[args]]
name = "cols"
type = "i32"
len = "A_nnz"
init = { kind = "csr", matrix = "A", part = "col_idx" }
role = "in"
[[args]]
name = "vals"
type = "f32"
len = "A_nnz"
init = { kind = "csr", matrix = "A", part = "values" }
role = "in"
[[args]]
name = "jperm"
type = "i32"
len = "A_rows"
init = { kind = "jds", matrix = "A", part = "perm" }
role = "in"
[[args]]
name = "jcols"
type = "i32"
len = "A_jds_len"
init = { kind = "jds", matrix = "A", part = "col_idx" }
role = "in"
[[args]]
name = "jvals"
type = "f32"
len = "A_jds_len"
init = { kind = "jds", matrix = "A", part = "values" }
role = "in"
[[constants]]
name = "jds_ptr"
type = "i32"
len = "A_depth"
init = { kind = "jds", matrix = "A", part = "ptr" }
[[constants]]
name = "zcnt"
type = "i32"
len = "A_zcnt_len"
init = { kind = "jds", matrix = "A", part = "zcnt" }
[[launch]]
kernel = "k"
grid = 1
block = 1
"#;

    #[test]
    fn permutation_iota_copy_and_int_range() {
        let r = resolved(MIX, 0);
        let b = generate_inputs(&r, 7).unwrap();
        let mut p: Vec<i128> = (0..777).map(|i| b[0].get_i128(i)).collect();
        assert_ne!(p, (0..777).collect::<Vec<i128>>(), "shuffled");
        p.sort();
        assert_eq!(p, (0..777).collect::<Vec<i128>>());
        assert_eq!((b[1].get_i128(0), b[1].get_i128(10)), (3, 23));
        assert!((0..777).all(|i| (-5..=5).contains(&b[2].get_i128(i))));
        assert_eq!(b[3], b[2], "copy_of");
    }

    /// CSR and JDS parts of one matrix describe the same matrix: y = A x computed the JDS
    /// way (as Parboil's spmv kernels do) equals y computed from CSR.
    #[test]
    fn sparse_structure_blocks_are_their_own_streams_and_thread_independent() {
        let m = SparseMatrix {
            name: "A".into(),
            rows: 10_001,
            cols: 9_000,
            nnz_per_row: 5,
            pad: 32,
        };
        let rows = sparse_structure(&m);
        assert_eq!(rows.len(), 10_001);
        for r in &rows {
            assert!((1..=9).contains(&r.len()), "row length {}", r.len());
            assert!(r.windows(2).all(|w| w[0] < w[1]) && r.iter().all(|&c| c < 9_000));
        }
        // Block 1 (rows 4096..) does not repeat block 0.
        assert_ne!(rows[..100], rows[4096..4196]);
        let one = on_one_thread(|| sparse_structure(&m));
        assert!(one == rows, "structure depends on the number of threads");
    }

    #[test]
    fn sparse_parts_are_consistent() {
        let r = resolved(MIX, 0);
        let b = generate_inputs(&r, 11).unwrap();
        let c = generate_constants(&r, 11).unwrap();
        let n = 777;
        let ncols = n + 5;
        let x: Vec<f64> = (0..ncols).map(|i| (i % 13) as f64 - 6.0).collect();
        let (rp, ci, v) = (&b[4], &b[5], &b[6]);
        assert_eq!(rp.get_i128(0), 0);
        assert_eq!(rp.get_i128(n) as usize, ci.len());
        let mut y_csr = vec![0.0; n];
        for (r, y) in y_csr.iter_mut().enumerate() {
            let (s, e) = (rp.get_i128(r) as usize, rp.get_i128(r + 1) as usize);
            assert!(e > s, "every row has an entry");
            for j in s..e {
                let col = ci.get_i128(j) as usize;
                assert!(col < ncols);
                if j > s {
                    assert!(ci.get_i128(j - 1) < ci.get_i128(j), "sorted, distinct");
                }
                *y += v.get_f64(j) * x[col];
            }
        }
        let (perm, jc, jv) = (&b[7], &b[8], &b[9]);
        let (ptr, zcnt) = (&c[0], &c[1]);
        let mut y_jds = vec![0.0; n];
        for ix in 0..n {
            let bound = zcnt.get_i128(ix / 32) as usize;
            let mut sum = 0.0;
            for k in 0..bound {
                let j = ptr.get_i128(k) as usize + ix;
                sum += jv.get_f64(j) * x[jc.get_i128(j) as usize];
            }
            y_jds[perm.get_i128(ix) as usize] = sum;
        }
        for (a, b) in y_csr.iter().zip(&y_jds) {
            assert!((a - b).abs() < 1e-9, "{a} vs {b}");
        }
        // The structure is fixed per shape; values follow the seed.
        let b2 = generate_inputs(&r, 12).unwrap();
        assert_eq!(b2[4], b[4]);
        assert_ne!(b2[6], b[6]);
    }

    #[test]
    fn inconsistent_lengths_are_rejected() {
        let e = err_of(&MIX.replace(
            "len = \"A_nnz\"\ninit = { kind = \"csr\", matrix = \"A\", part = \"values\" }",
            "len = \"A_nnz + 1\"\ninit = { kind = \"csr\", matrix = \"A\", part = \"values\" }",
        ));
        assert!(e.contains("vals holds a part of matrix A"), "{e}");
        let e = err_of(&MIX.replace("arg = \"src\"", "arg = \"idx\""));
        assert!(e.contains("element types differ"), "{e}");
        let e = err_of(&MIX.replace("lo = -5, hi = 5", "lo = -5, hi = 40000"));
        assert!(e.contains("does not fit i16"), "{e}");
        let e = err_of(&MIX.replace(
            "matrix = \"A\", part = \"ptr\"",
            "matrix = \"B\", part = \"ptr\"",
        ));
        assert!(
            e.contains("constants[0].init") && e.contains("\"B\""),
            "{e}"
        );
        let e = err_of(&MIX.replace("part = \"zcnt\"", "part = \"zcount\""));
        assert!(e.contains("unknown jds part"), "{e}");
    }

    #[test]
    fn an_all_zero_input_is_an_error_unless_zeros() {
        let text = SAXPY.replace(
            "kind = \"uniform\", lo = -1.0, hi = 1.0",
            "kind = \"uniform\", lo = 0.0, hi = 1e-300",
        );
        let r = resolved(&text, 0);
        let e = generate_inputs(&r, 1).unwrap_err().to_string();
        assert!(e.contains("only zeros"), "{e}");
        let r = resolved(
            &SAXPY.replace(
                "kind = \"normal\", mean = 0.0, std = 1.0",
                "kind = \"zeros\"",
            ),
            0,
        );
        let b = generate_inputs(&r, 1).unwrap();
        assert!(b[3].bytes.iter().all(|&x| x == 0));
    }

    #[test]
    fn clamped_normals_stay_in_range_and_keep_their_spread() {
        // y (index 3) is normal(0, 1) in SAXPY; clamp it into [-0.5, 0.5].
        let r = resolved(
            &SAXPY.replace(
                "kind = \"normal\", mean = 0.0, std = 1.0",
                "kind = \"normal\", mean = 0.0, std = 1.0, lo = -0.5, hi = 0.5",
            ),
            1,
        );
        let b = generate_inputs(&r, 3).unwrap();
        let v: Vec<f64> = (0..b[3].len()).map(|i| b[3].get_f64(i)).collect();
        assert!(v.iter().all(|x| (-0.5..=0.5).contains(x)));
        // About 62% of a standard normal falls outside ±0.5 and lands on the bounds.
        let at_bounds = v.iter().filter(|x| x.abs() == 0.5).count() as f64 / v.len() as f64;
        assert!((0.55..0.69).contains(&at_bounds), "{at_bounds}");
        let e = err_of(&SAXPY.replace(
            "kind = \"normal\", mean = 0.0, std = 1.0",
            "kind = \"normal\", mean = 0.0, std = 1.0, lo = 1, hi = 0",
        ));
        assert!(e.contains("lo <= hi"), "{e}");
    }

    #[test]
    fn poison_is_nan_for_floats_and_ones_for_ints() {
        assert!(HostBuffer::poisoned(ElemType::F32, 2).get_f64(1).is_nan());
        assert!(HostBuffer::poisoned(ElemType::F16, 1).get_f64(0).is_nan());
        assert!(HostBuffer::poisoned(ElemType::BF16, 1).get_f64(0).is_nan());
        assert!(HostBuffer::poisoned(ElemType::F64, 1).get_f64(0).is_nan());
        assert_eq!(HostBuffer::poisoned(ElemType::I32, 1).get_i128(0), -1);
        assert_eq!(poison_pattern(ElemType::U16), vec![0xFF, 0xFF]);
        // A kernel-computed NaN is not mistaken for the poison.
        let computed = HostBuffer::from_f64s(ElemType::F32, &[f64::NAN]);
        assert!(!computed.is_poison(0));
    }

    const AOS: &str = r#"
[sizes]
k = 5
[[args]]
name = "kx"
type = "f32"
len = "k"
init = { kind = "uniform", lo = -1.0, hi = 1.0 }
role = "in"
[[args]]
name = "ky"
type = "f32"
len = "k"
init = { kind = "linspace", start = 1.0, stop = 2.0 }
role = "in"
[[args]]
name = "out"
type = "f32"
len = "k"
init = { kind = "zeros" }
role = "inout"
[[constants]]
name = "c"
type = "f32"
len = "2 * k"
init = { kind = "interleave", args = ["kx", "ky"] }
[[variants.slow.launch]]
kernel = "soa"
grid = 1
block = "k"
[[variants.fast.launch]]
kernel = "aos"
grid = 1
block = "k"
args = ["out + 2"]
"#;

    #[test]
    fn built_args_reuse_the_drawn_buffers_and_match_the_constant_path() {
        // Three chunks of interleaved records; a copy; the same interleave as a constant,
        // which draws its sources again on its own.
        let text = AOS
            .replace("k = 5", "k = 40000")
            .replace("block = \"k\"", "block = 256")
            .replace(
                "[[args]]\nname = \"out\"",
                "[[args]]\nname = \"s\"\ntype = \"f32\"\nlen = \"2 * k\"\ninit = { kind = \"interleave\", args = [\"kx\", \"ky\"] }\nrole = \"in\"\n[[args]]\nname = \"cp\"\ntype = \"f32\"\nlen = \"k\"\ninit = { kind = \"copy_of\", arg = \"kx\" }\nrole = \"in\"\n[[args]]\nname = \"out\"",
            );
        let r = resolved(&text, 0);
        let a = generate_inputs(&r, 9).unwrap();
        let (kx, ky, s, cp) = (&a[0], &a[1], &a[2], &a[3]);
        assert_eq!(s.len(), 80000);
        for i in [0, 1, 16383, 16384, 32768, 39999] {
            assert_eq!(s.get_f64(2 * i), kx.get_f64(i), "record {i}");
            assert_eq!(s.get_f64(2 * i + 1), ky.get_f64(i), "record {i}");
        }
        assert_eq!(cp, kx);
        assert_eq!(generate_constants(&r, 9).unwrap()[0].bytes, s.bytes);
        let one = on_one_thread(|| generate_inputs(&r, 9).unwrap());
        assert!(one == a, "bytes depend on the number of threads");
    }

    #[test]
    fn interleave_builds_structs_from_arrays_and_linspace_spans() {
        let r = resolved(AOS, 0);
        let a = generate_inputs(&r, 3).unwrap();
        let c = generate_constants(&r, 3).unwrap();
        assert_eq!(c[0].len(), 10);
        for i in 0..5 {
            assert_eq!(c[0].get_f64(2 * i), a[0].get_f64(i));
            assert_eq!(c[0].get_f64(2 * i + 1), a[1].get_f64(i));
        }
        assert_eq!(
            (a[1].get_f64(0), a[1].get_f64(2), a[1].get_f64(4)),
            (1.0, 1.5, 2.0)
        );
        assert_eq!(r.fast[0].args, vec![2]);
        assert_eq!(r.fast[0].offsets, vec![2]);
        assert_eq!(r.slow[0].offsets, vec![0, 0, 0]);
        let e = err_of(&AOS.replace("len = \"2 * k\"", "len = \"2 * k + 1\""));
        assert!(e.contains("its len must be 10, not 11"), "{e}");
        let e = err_of(&AOS.replace("\"out + 2\"", "\"out + k\""));
        assert!(
            e.contains("fast launch[0].args") && e.contains("outside the buffer's 5 elements"),
            "{e}"
        );
        let e = err_of(&AOS.replace("args = [\"kx\", \"ky\"]", "args = [\"kx\", \"kz\"]"));
        assert!(
            e.contains("constants[0].init") && e.contains("\"kz\""),
            "{e}"
        );
    }

    #[test]
    fn fields_fill_records_field_by_field_with_flag_bits() {
        use crate::harness::tests::AOS;
        let r = resolved(AOS, 0);
        let a = generate_inputs(&r, 7).unwrap();
        assert_eq!(a, generate_inputs(&r, 7).unwrap(), "deterministic");
        assert_ne!(a[0], generate_inputs(&r, 8).unwrap()[0], "seeded");
        let src = &a[0];
        assert_eq!(src.len(), 18);
        for rec in 0..6 {
            for k in 0..2 {
                let v = src.get_f64(rec * 3 + k);
                assert!((1.0..2.0).contains(&v), "record {rec} field {k}: {v}");
            }
            // The flag word: u32 bits in a float slot.
            let bits = u32::from_le_bytes(src.bytes[(rec * 3 + 2) * 4..][..4].try_into().unwrap());
            assert!(bits <= 2, "record {rec}: flag bits {bits}");
        }
        assert_eq!(a[1], a[0], "dst copies src");
    }

    #[test]
    fn choice_follows_its_weights_and_large_fields_buffers_differ_per_chunk() {
        // Two chunks' worth of records: chunks have their own streams, not one repeated.
        let records = 2 * FIELD_CHUNK + 5;
        let text = format!(
            r#"
[sizes]
n = {records}
[[args]]
name = "g"
type = "f32"
len = "n * 2"
init = {{ kind = "fields", fields = [
  {{ count = 1, init = {{ kind = "uniform", lo = 0.0, hi = 1.0 }} }},
  {{ count = 1, type = "i32", init = {{ kind = "choice", values = [0, 1, 2], weights = [90, 7, 3] }} }},
] }}
role = "inout"
[[launch]]
kernel = "k"
grid = 1
block = 1
"#
        );
        let r = resolved(&text, 0);
        let g = &generate_inputs(&r, 1).unwrap()[0];
        let flag =
            |rec: usize| i32::from_le_bytes(g.bytes[(rec * 2 + 1) * 4..][..4].try_into().unwrap());
        let mut counts = [0usize; 3];
        for rec in 0..records {
            counts[flag(rec) as usize] += 1;
        }
        let frac = |c: usize| c as f64 / records as f64;
        assert!((frac(counts[0]) - 0.90).abs() < 0.01, "{counts:?}");
        assert!((frac(counts[1]) - 0.07).abs() < 0.01, "{counts:?}");
        assert!((frac(counts[2]) - 0.03).abs() < 0.01, "{counts:?}");
        let chunk = |c: usize| &g.bytes[c * FIELD_CHUNK * 8..][..FIELD_CHUNK * 8];
        assert_ne!(chunk(0), chunk(1));
        // The last, partial chunk is filled too.
        assert!((0..5).any(|k| g.get_f64((2 * FIELD_CHUNK + k) * 2) != 0.0));
    }

    #[test]
    fn fast_inputs_are_the_canonical_ones_permuted_into_its_layout() {
        use crate::harness::tests::AOS;
        use crate::harness::{Layout, Variant};
        let r = resolved(AOS, 0);
        let canonical = generate_inputs(&r, 3).unwrap();
        assert_eq!(
            generate_inputs_for(&r, 3, Variant::Slow).unwrap(),
            canonical
        );
        let fast = generate_inputs_for(&r, 3, Variant::Fast).unwrap();
        // src: region [1, 16) as 5 x 3 → 3 x 5; elements 0, 16, 17 stay.
        let (c, f) = (&canonical[0], &fast[0]);
        for i in 0..5 {
            for j in 0..3 {
                assert_eq!(
                    f.bytes[(1 + j * 5 + i) * 4..][..4],
                    c.bytes[(1 + i * 3 + j) * 4..][..4],
                    "src cell {i} field {j}"
                );
            }
        }
        assert_eq!(f.bytes[..4], c.bytes[..4]);
        assert_eq!(f.bytes[64..], c.bytes[64..]);
        // dst: a copy of src in canonical layout, then transposed over [3, 15).
        let (c, f) = (&canonical[1], &fast[1]);
        assert_eq!(c, &canonical[0]);
        assert_eq!(f.bytes[..12], c.bytes[..12], "leading margin kept");
        assert_eq!(f.bytes[60..], c.bytes[60..], "trailing margin kept");
        for i in 0..4 {
            for j in 0..3 {
                assert_eq!(
                    f.bytes[(3 + j * 4 + i) * 4..][..4],
                    c.bytes[(3 + i * 3 + j) * 4..][..4],
                    "dst cell {i} field {j}"
                );
            }
        }
        assert_ne!(f, c);
        // And the inverse brings the fast variant's bytes back.
        let l = Layout::Transpose {
            rows: 4,
            cols: 3,
            offset: 3,
        };
        assert_eq!(&l.invert(f), c);
    }

    #[test]
    fn parallel_generation_is_the_serial_stream() {
        // Large enough to be cut into chunks; compared with one serial pass of the same stream.
        let len = 5 * GEN_CHUNK + 123;
        let proto = rng_for(9, "arg", "x");
        for (words, elem) in [
            (2u128, ElemType::F32),
            (4, ElemType::F64),
            (2, ElemType::I16),
        ] {
            let draw = |r: &mut ChaCha8Rng, out: &mut Vec<u8>| {
                if words == 4 {
                    let v = unit(r) + unit(r);
                    push_f64(out, elem, v)
                } else if elem.is_float() {
                    push_f64(out, elem, unit(r))
                } else {
                    push_i64(out, elem, int_in(r, -5, 900))
                }
            };
            let par = draw_stream(&proto, elem, len, words, draw);
            let mut serial = Vec::new();
            let mut r = proto.clone();
            for _ in 0..len {
                draw(&mut r, &mut serial);
            }
            assert_eq!(par.len(), len * elem.size_of());
            assert!(
                par == serial,
                "{elem:?}: chunks drifted from the serial stream"
            );
        }
    }

    /// A 3×4×5 grid of cells (not cubic, so a wrong cell order puts points in wrong cells).
    const CELLS: &str = r#"
[sizes]
nx = 3
[derived]
ny = 4
nz = 5
[[args]]
name = "bins"
type = "f32"
len = "nx * ny * nz * 8 * 4"
init = { kind = "cells", dims = ["nx", "ny", "nz"], depth = 8, size = 2.5, origin = [-1.0, 2.0, 0.5], fill = { lo = 2, hi = 6 }, w = { lo = -1.0, hi = 1.0 } }
role = "in"
[[args]]
name = "out"
type = "f32"
len = 1
role = "out"
[[launch]]
kernel = "k"
grid = 1
block = 1
"#;

    /// Checks every cell of a `cells` buffer (dims, depth 8, the origin and size above,
    /// fill counts in `fill`, w in [-1, 1)) and returns the per-cell counts.
    fn check_cells_buffer(
        b: &HostBuffer,
        dims: [usize; 3],
        size: f64,
        origin: [f64; 3],
        fill: (usize, usize),
    ) -> Vec<usize> {
        let depth = 8;
        assert_eq!(b.len(), dims.iter().product::<usize>() * depth * 4);
        let es = b.elem.size_of();
        let mut counts = Vec::new();
        let mut n = 0;
        // Cell order written out as nested loops: x fastest, then y, then z.
        for k in 0..dims[2] {
            for j in 0..dims[1] {
                for i in 0..dims[0] {
                    let slot = |s: usize, c: usize| b.get_f64((n * depth + s) * 4 + c);
                    let count = (0..depth).take_while(|&s| slot(s, 3) != 0.0).count();
                    assert!((fill.0..=fill.1).contains(&count), "cell {n} holds {count}");
                    for s in 0..count {
                        for (d, c) in [i, j, k].into_iter().enumerate() {
                            let lo = origin[d] + c as f64 * size;
                            let v = slot(s, d);
                            assert!(
                                lo <= v && v < lo + size,
                                "cell {n} ({i}, {j}, {k}) slot {s}: coordinate {d} = {v} is outside [{lo}, {})",
                                lo + size
                            );
                        }
                        let w = slot(s, 3);
                        assert!((-1.0..1.0).contains(&w) && w != 0.0, "w = {w}");
                    }
                    // Empty slots are all-zero bytes (+0.0, as calloc leaves them).
                    let empty =
                        &b.bytes[((n * depth + count) * 4) * es..((n + 1) * depth * 4) * es];
                    assert!(
                        empty.iter().all(|&x| x == 0),
                        "cell {n}: empty slots not zero"
                    );
                    counts.push(count);
                    n += 1;
                }
            }
        }
        counts
    }

    #[test]
    fn cells_hold_their_points_in_cell_order_and_end_with_zeros() {
        for ty in ["f32", "f64"] {
            let r = resolved(
                &CELLS.replace(
                    "type = \"f32\"\nlen = \"nx",
                    &format!("type = \"{ty}\"\nlen = \"nx"),
                ),
                0,
            );
            let b = &generate_inputs(&r, 7).unwrap()[0];
            assert_eq!(b.elem.name(), ty);
            // The resolved init travels to workers as JSON and must generate the same bytes.
            let back: Resolved = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
            assert_eq!(back, r);
            assert_eq!(&generate_inputs(&back, 7).unwrap()[0], b);
            let counts = check_cells_buffer(b, [3, 4, 5], 2.5, [-1.0, 2.0, 0.5], (2, 6));
            // Counts vary over the whole range, not one fixed fill.
            assert_eq!(counts.iter().min(), Some(&2), "{counts:?}");
            assert_eq!(counts.iter().max(), Some(&6), "{counts:?}");
        }
        // Origin defaults to 0; fill may be exactly depth (no terminating zero in a cell).
        let text = CELLS
            .replace(", origin = [-1.0, 2.0, 0.5]", "")
            .replace("lo = 2, hi = 6", "lo = 8, hi = 8");
        let b = &generate_inputs(&resolved(&text, 0), 7).unwrap()[0];
        let counts = check_cells_buffer(b, [3, 4, 5], 2.5, [0.0; 3], (8, 8));
        assert!(counts.iter().all(|&c| c == 8));
    }

    #[test]
    fn cells_are_deterministic_per_seed_and_independent_of_threads() {
        // 20×20×21 cells: more than two chunks of CELL_CHUNK.
        let text = CELLS
            .replace("nx = 3", "nx = 20")
            .replace("ny = 4", "ny = 20")
            .replace("nz = 5", "nz = 21");
        let r = resolved(&text, 0);
        let a = generate_inputs(&r, 3).unwrap();
        assert_eq!(a, generate_inputs(&r, 3).unwrap());
        assert_ne!(
            a[0],
            generate_inputs(&r, 4).unwrap()[0],
            "another seed, other points"
        );
        let one = on_one_thread(|| generate_inputs(&r, 3).unwrap());
        assert!(one == a, "bytes depend on the number of threads");
        let counts = check_cells_buffer(&a[0], [20, 20, 21], 2.5, [-1.0, 2.0, 0.5], (2, 6));
        // Chunks have their own streams: the second chunk does not repeat the first.
        assert_ne!(counts[..CELL_CHUNK], counts[CELL_CHUNK..2 * CELL_CHUNK]);
    }

    #[test]
    fn cells_never_draw_w_zero() {
        // f32 rounds most of [0, 1e-45) to 0: those draws must be redrawn.
        let text = CELLS.replace(
            "w = { lo = -1.0, hi = 1.0 }",
            "w = { lo = 0.0, hi = 1e-45 }",
        );
        let b = &generate_inputs(&resolved(&text, 0), 5).unwrap()[0];
        let mut filled = 0;
        for cell in 0..60 {
            let w = |s: usize| b.get_f64((cell * 8 + s) * 4 + 3);
            let count = (0..8).take_while(|&s| w(s) != 0.0).count();
            assert!(
                (2..=6).contains(&count),
                "cell {cell}: {count} (a zero w cut it short)"
            );
            filled += count;
            assert!((count..8).all(|s| w(s) == 0.0));
        }
        assert!(filled > 0);
    }

    #[test]
    fn bad_cells_are_refused_naming_the_arg() {
        for (from, to, want) in [
            ("len = \"nx * ny * nz * 8 * 4\"", "len = \"nx * ny * nz * 8 * 3\"", "bins: 3×4×5 cells of 8 slots of 4 values make 1920 elements, but its len is 1440"),
            ("lo = 2, hi = 6", "lo = 2, hi = 9", "bins: cells fill 2..=9 must satisfy 0 <= lo <= hi <= depth (8)"),
            ("lo = 2, hi = 6", "lo = 5, hi = 4", "bins: cells fill 5..=4"),
            ("lo = 2, hi = 6", "lo = -1, hi = 4", "bins: cells fill -1..=4"),
            ("type = \"f32\"\nlen = \"nx", "type = \"i32\"\nlen = \"nx", "bins: cells holds float coordinates: its type must be f32 or f64, not i32"),
            ("lo = -1.0, hi = 1.0", "lo = 1.0, hi = 1.0", "bins: cells w needs lo < hi"),
            ("lo = -1.0, hi = 1.0", "lo = 0.0, hi = 1e-50", "bins: cells w 0..0.00000000000000000000000000000000000000000000000001 holds no nonzero f32"),
            ("size = 2.5", "size = 0", "bins: cells: size must be > 0"),
            ("dims = [\"nx\", \"ny\", \"nz\"]", "dims = [\"nx\", \"ny\"]", "args[0].init.dims: cells needs 3 dims"),
            ("origin = [-1.0, 2.0, 0.5]", "origin = [0.0]", "args[0].init.origin: cells needs a 3D origin"),
            ("depth = 8", "depth = 0", "args[0].init.depth"),
            ("dims = [\"nx\", \"ny\", \"nz\"]", "dims = [\"nx\", \"ny - 4\", \"nz\"]", "args[0].init.dims[1]"),
        ] {
            assert!(CELLS.contains(from), "{from}");
            let e = err_of(&CELLS.replacen(from, to, 1));
            assert!(e.contains(want), "{to}: {e}");
        }
    }
}
