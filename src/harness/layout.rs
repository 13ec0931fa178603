//! Per-variant data layouts: a buffer is generated once in the canonical layout (the one the
//! comparison happens in), and a variant whose kernel reads the same data laid out otherwise
//! (Parboil lbm: 20 values per cell as an array of structs in `cuda_base`, as a struct of
//! arrays in `cuda`) gets it through an exact permutation; its outputs come back through the
//! inverse before they are compared. Canaries and the device buffer itself are untouched:
//! only the host-side bytes are permuted.

use super::HostBuffer;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// Which kernel of a pair (a record-level noun: `Pair::shared_launches` names one).
pub use crate::record::Variant;

/// How one variant lays out a buffer, relative to the canonical layout.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Layout {
    /// The region `[offset, offset + rows·cols)` is a row-major `rows × cols` matrix in the
    /// canonical layout and its transpose in the variant's: variant element
    /// `offset + j·rows + i` = canonical element `offset + i·cols + j`. Elements outside the
    /// region are the same in both.
    Transpose {
        rows: usize,
        cols: usize,
        offset: usize,
    },
}

impl Layout {
    /// Elements the layout needs the buffer to hold.
    pub fn extent(&self) -> usize {
        match *self {
            Layout::Transpose { rows, cols, offset } => offset + rows * cols,
        }
    }

    /// Canonical bytes → the variant's bytes.
    pub fn apply(&self, canonical: &HostBuffer) -> HostBuffer {
        match *self {
            Layout::Transpose { rows, cols, offset } => {
                permute_region(canonical, offset, rows, cols)
            }
        }
    }

    /// The variant's bytes → canonical bytes (the inverse of [`Layout::apply`]).
    pub fn invert(&self, variant: &HostBuffer) -> HostBuffer {
        match *self {
            // The inverse of a transpose is the transpose of the transposed shape.
            Layout::Transpose { rows, cols, offset } => permute_region(variant, offset, cols, rows),
        }
    }
}

/// Per variant, the layout that differs from the canonical one (none: canonical).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Layouts {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow: Option<Layout>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fast: Option<Layout>,
}

impl Layouts {
    pub fn is_empty(&self) -> bool {
        self.slow.is_none() && self.fast.is_none()
    }

    pub fn get(&self, v: Variant) -> Option<&Layout> {
        match v {
            Variant::Slow => self.slow.as_ref(),
            Variant::Fast => self.fast.as_ref(),
        }
    }
}

/// The part of an output buffer (canonical layout) that is compared: `[offset, offset + len)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Window {
    pub offset: usize,
    pub len: usize,
}

impl Window {
    /// The window's elements as their own buffer.
    pub fn slice(&self, b: &HostBuffer) -> HostBuffer {
        let s = b.elem.size_of();
        // Windows are most of a large grid (lbm: 187 MB): copied by all cores.
        HostBuffer {
            elem: b.elem,
            bytes: crate::par::to_vec(&b.bytes[self.offset * s..(self.offset + self.len) * s]),
        }
    }
}

/// A copy of `b` whose region `[offset, offset + rows·cols)` (a row-major `rows × cols`
/// matrix) is replaced by its transpose (`cols × rows`).
fn permute_region(b: &HostBuffer, offset: usize, rows: usize, cols: usize) -> HostBuffer {
    let s = b.elem.size_of();
    let (start, end) = (offset * s, (offset + rows * cols) * s);
    assert!(
        end <= b.bytes.len(),
        "layout region {offset}+{rows}x{cols} exceeds the buffer's {} elements",
        b.len()
    );
    let mut out = vec![0u8; b.bytes.len()];
    out[..start].copy_from_slice(&b.bytes[..start]);
    out[end..].copy_from_slice(&b.bytes[end..]);
    let (src, dst) = (&b.bytes[start..end], &mut out[start..end]);
    match s {
        1 => transpose::<1>(src, dst, rows, cols),
        2 => transpose::<2>(src, dst, rows, cols),
        4 => transpose::<4>(src, dst, rows, cols),
        8 => transpose::<8>(src, dst, rows, cols),
        n => unreachable!("no element type is {n} bytes"),
    }
    HostBuffer {
        elem: b.elem,
        bytes: out,
    }
}

/// Elements per tile side: a 64 × 64 tile of 8-byte elements is 32 KiB, so a tile's source
/// and destination stay in L1/L2 while it is copied.
const TILE: usize = 64;

/// `dst[j·rows + i] = src[i·cols + j]` for elements of `N` bytes: a blocked transpose,
/// parallel over tiles. Two shapes matter: few long output rows (lbm's 20 fields of 2.4M
/// cells) are split into column blocks, each task reading one contiguous run of the source
/// and writing a piece of every output row; many short output rows (the inverse) are split
/// into groups of whole rows, each task reading `cols`-contiguous runs of the source.
fn transpose<const N: usize>(src: &[u8], dst: &mut [u8], rows: usize, cols: usize) {
    debug_assert_eq!(src.len(), rows * cols * N);
    debug_assert_eq!(dst.len(), rows * cols * N);
    if rows == 0 || cols == 0 {
        return;
    }
    if rows >= cols {
        // Output: `cols` rows of `rows` elements. Block b covers source rows
        // [b·B, b·B + B) and, in every output row, elements [b·B, b·B + B).
        let block = (TILE * TILE).max(1);
        let nblocks = rows.div_ceil(block);
        let mut pieces: Vec<Vec<&mut [u8]>> =
            (0..nblocks).map(|_| Vec::with_capacity(cols)).collect();
        for out_row in dst.chunks_mut(rows * N) {
            for (b, piece) in out_row.chunks_mut(block * N).enumerate() {
                pieces[b].push(piece);
            }
        }
        pieces
            .into_par_iter()
            .enumerate()
            .for_each(|(b, mut outs)| {
                let i0 = b * block;
                let n = outs[0].len() / N;
                for ii in (0..n).step_by(TILE) {
                    for jj in (0..cols).step_by(TILE) {
                        for i in ii..(ii + TILE).min(n) {
                            let row = &src[(i0 + i) * cols * N..(i0 + i + 1) * cols * N];
                            for j in jj..(jj + TILE).min(cols) {
                                outs[j][i * N..(i + 1) * N]
                                    .copy_from_slice(&row[j * N..(j + 1) * N]);
                            }
                        }
                    }
                }
            });
    } else {
        // Output: `cols` short rows of `rows` elements; a task owns `group` whole rows.
        let group = (TILE * TILE / rows).max(1);
        dst.par_chunks_mut(group * rows * N)
            .enumerate()
            .for_each(|(g, chunk)| {
                let j0 = g * group;
                let nj = chunk.len() / (rows * N);
                for jj in (0..nj).step_by(TILE) {
                    for ii in (0..rows).step_by(TILE) {
                        for i in ii..(ii + TILE).min(rows) {
                            for j in jj..(jj + TILE).min(nj) {
                                let s = (i * cols + j0 + j) * N;
                                let d = (j * rows + i) * N;
                                chunk[d..d + N].copy_from_slice(&src[s..s + N]);
                            }
                        }
                    }
                }
            });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::ElemType;

    fn iota(elem: ElemType, n: usize) -> HostBuffer {
        HostBuffer::from_i64s(elem, &(0..n as i64).collect::<Vec<_>>())
    }

    /// The definition, element by element.
    fn naive(b: &HostBuffer, offset: usize, rows: usize, cols: usize) -> HostBuffer {
        let s = b.elem.size_of();
        let mut out = b.bytes.clone();
        for i in 0..rows {
            for j in 0..cols {
                let d = (offset + j * rows + i) * s;
                let c = (offset + i * cols + j) * s;
                out[d..d + s].copy_from_slice(&b.bytes[c..c + s]);
            }
        }
        HostBuffer {
            elem: b.elem,
            bytes: out,
        }
    }

    #[test]
    fn transpose_matches_the_definition_for_every_shape_and_element_size() {
        // Shapes on both sides of the rows >= cols split, with partial tiles and blocks.
        let shapes = [
            (1, 1),
            (1, 7),
            (7, 1),
            (20, 3),
            (3, 20),
            (65, 130),
            (130, 65),
            (4097, 20),
            (20, 4097),
            (5000, 3),
            (3, 5000),
        ];
        for elem in [ElemType::U8, ElemType::F16, ElemType::F32, ElemType::F64] {
            for &(rows, cols) in &shapes {
                for (offset, tail) in [(0, 0), (13, 5)] {
                    // u8 iota wraps; still a test of positions because neighbours differ.
                    let b = iota(elem, offset + rows * cols + tail);
                    let l = Layout::Transpose { rows, cols, offset };
                    let fast = l.apply(&b);
                    assert_eq!(
                        fast,
                        naive(&b, offset, rows, cols),
                        "{} {rows}x{cols}+{offset}",
                        elem.name()
                    );
                    assert_eq!(l.invert(&fast), b, "round trip {rows}x{cols}+{offset}");
                }
            }
        }
    }

    #[test]
    fn apply_is_a_permutation_that_keeps_margins() {
        let (rows, cols, offset) = (37, 20, 11);
        let b = iota(ElemType::U32, offset + rows * cols + 9);
        let l = Layout::Transpose { rows, cols, offset };
        let f = l.apply(&b);
        // Margins untouched.
        assert_eq!(f.bytes[..offset * 4], b.bytes[..offset * 4]);
        assert_eq!(
            f.bytes[(offset + rows * cols) * 4..],
            b.bytes[(offset + rows * cols) * 4..]
        );
        // Field j of cell i moved to j*rows + i (struct of arrays).
        for (i, j) in [(0, 0), (0, 1), (1, 0), (36, 19), (5, 7)] {
            assert_eq!(
                f.get_i128(offset + j * rows + i),
                (offset + i * cols + j) as i128
            );
        }
        // A permutation: every value once.
        let mut seen: Vec<i128> = (0..f.len()).map(|k| f.get_i128(k)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..b.len() as i128).collect::<Vec<_>>());
        // Not the identity.
        assert_ne!(f, b);
    }

    #[test]
    fn a_transposed_output_compares_equal_after_the_inverse() {
        let (rows, cols, offset) = (300, 20, 40);
        let canonical = HostBuffer::from_f64s(
            ElemType::F32,
            &(0..offset + rows * cols + 40)
                .map(|k| (k as f64 * 0.37).sin())
                .collect::<Vec<_>>(),
        );
        let l = Layout::Transpose { rows, cols, offset };
        // What a struct-of-arrays kernel would leave in its buffer.
        let device = l.apply(&canonical);
        let back = l.invert(&device);
        let tol = crate::harness::Tolerance::default_for(ElemType::F32);
        let c = crate::verify::compare::compare(&canonical, &back, &tol);
        assert!(c.pass && c.mismatches == 0);
        // Without the inverse the same bytes do not agree.
        assert!(!crate::verify::compare::compare(&canonical, &device, &tol).pass);
    }

    #[test]
    fn window_slices_elements() {
        let b = iota(ElemType::I64, 10);
        let w = Window { offset: 3, len: 4 };
        let s = w.slice(&b);
        assert_eq!(
            (0..4).map(|k| s.get_i128(k)).collect::<Vec<_>>(),
            [3, 4, 5, 6]
        );
    }

    #[test]
    #[ignore = "timing: run with --release -- --ignored"]
    fn lbm_sized_transpose_is_fast() {
        let n = 20 * 2_365_440 + 1_228_800;
        let b = iota(ElemType::U32, n);
        let l = Layout::Transpose {
            rows: 2_365_440,
            cols: 20,
            offset: 614_400,
        };
        let t = std::time::Instant::now();
        let f = l.apply(&b);
        let a = t.elapsed();
        let t = std::time::Instant::now();
        let back = l.invert(&f);
        eprintln!("apply {a:?}, invert {:?}", t.elapsed());
        assert_eq!(back, b);
    }
}
