//! Byte work on large host buffers, spread over all cores.

use rayon::prelude::*;

/// Bytes per piece a thread copies.
const PIECE: usize = 1 << 20;

/// Copy `src` into `dst` (same length) with all cores: fresh pages fault in parallel, and
/// a single-threaded memcpy from pinned memory lags the DMA engine.
pub fn copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len(), "par::copy needs equal lengths");
    dst.par_chunks_mut(PIECE)
        .zip(src.par_chunks(PIECE))
        .for_each(|(d, s)| d.copy_from_slice(s));
}

/// `src` as a new vector, copied with all cores.
pub fn to_vec(src: &[u8]) -> Vec<u8> {
    let mut v = vec![0u8; src.len()];
    copy(&mut v, src);
    v
}

#[cfg(test)]
mod tests {
    #[test]
    fn copies_across_piece_boundaries() {
        let src: Vec<u8> = (0..(3 << 20) + 17).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(super::to_vec(&src), src);
        let mut dst = vec![0u8; 5];
        super::copy(&mut dst, &src[100..105]);
        assert_eq!(dst, src[100..105]);
    }
}
