//! Numerical agreement between the slow kernel's output (expected) and the fast kernel's
//! (actual), degenerate-output checks, and canary zones. Pure CPU.
//!
//! Integers compare exactly. Floats pass when every element satisfies
//! `|a - b| <= atol + scale * max|b| + rtol * |b|` (b = expected) AND the relative L2 error
//! `‖a − b‖₂ / ‖b‖₂` is at most `l2`. NaN on one side never passes; NaN on both sides is
//! agreement, counted in `both_nan` and reported. A fast kernel that writes NaN or Inf
//! from finite inputs never reaches the comparison: [`non_finite`] calls that output
//! degenerate first (the harness's inputs are outside the kernel's domain, which says
//! nothing about the slow kernel). The per-type defaults and the
//! reasoning behind them are on [`Tolerance::default_for`]: a reordered f32 reduction
//! legitimately moves single elements by up to ~1e-3 relative where terms cancel, while
//! a real bug moves elements by O(1) and the whole-buffer L2 error by far more than 1e-4.

use crate::harness::{poison_pattern, HostBuffer, Tolerance};
use crate::record::Status;
use serde::{Deserialize, Serialize};

/// How many mismatching indices a [`Comparison`] lists.
pub const FIRST_MISMATCHES: usize = 8;

pub use crate::evidence::Comparison;

/// Give the elements a harness leaves out of the comparison (`ignore`) the input's value
/// (zero for `out` buffers), so neither the comparison nor the poison and degenerate checks
/// see whatever a kernel left there.
pub fn mask_ignored(out: &mut HostBuffer, input: Option<&HostBuffer>, ig: &crate::harness::Ignore) {
    let e = out.elem.size_of();
    let n = out.len();
    // One range per period, `from..to` inside it (blk_sad: 16 K ranges over 18 M elements).
    let mut base = 0;
    while base < n && ig.period > 0 {
        let r = (base + ig.from).min(n) * e..(base + ig.to).min(n) * e;
        // The part the input covers takes its bytes, anything beyond it zeros.
        let have = input.map_or(r.start, |inp| inp.bytes.len().clamp(r.start, r.end));
        if let Some(inp) = input.filter(|_| have > r.start) {
            out.bytes[r.start..have].copy_from_slice(&inp.bytes[r.start..have]);
        }
        out.bytes[have..r.end].fill(0);
        base += ig.period;
    }
}

/// Elements per chunk of a parallel scan.
const SCAN_CHUNK: usize = 1 << 18;

/// The chunks of `0..len` a scan runs in parallel, in order.
fn chunks(len: usize) -> Vec<std::ops::Range<usize>> {
    (0..len.div_ceil(SCAN_CHUNK))
        .map(|c| c * SCAN_CHUNK..((c + 1) * SCAN_CHUNK).min(len))
        .collect()
}

/// What one chunk of a comparison found; chunks merge in order into the serial answer.
#[derive(Default)]
struct Part {
    mismatches: usize,
    nans: usize,
    both_nan: usize,
    max_abs: f64,
    max_rel: f64,
    diff2: f64,
    ref2: f64,
    /// How far the worst element is outside its tolerance (|a − b| for exact compares),
    /// and where: the first element reaching the chunk's maximum.
    worst_score: f64,
    worst: Option<usize>,
    first: Vec<usize>,
}

impl Part {
    fn mismatch(&mut self, i: usize) {
        self.mismatches += 1;
        if self.first.len() < FIRST_MISMATCHES {
            self.first.push(i);
        }
    }

    /// Fold the next chunk in: the worst element is the earliest reaching the maximum.
    fn then(mut self, next: Part) -> Part {
        self.mismatches += next.mismatches;
        self.nans += next.nans;
        self.both_nan += next.both_nan;
        self.max_abs = self.max_abs.max(next.max_abs);
        self.max_rel = self.max_rel.max(next.max_rel);
        self.diff2 += next.diff2;
        self.ref2 += next.ref2;
        if next.worst.is_some() && (self.worst.is_none() || next.worst_score > self.worst_score) {
            self.worst = next.worst;
            self.worst_score = next.worst_score;
        }
        let room = FIRST_MISMATCHES - self.first.len();
        self.first.extend(next.first.into_iter().take(room));
        self
    }
}

fn exact_part(expected: &HostBuffer, actual: &HostBuffer, r: std::ops::Range<usize>) -> Part {
    let mut p = Part::default();
    let mut worst = 0i128;
    for i in r {
        let (b, a) = (expected.get_i128(i), actual.get_i128(i));
        if a != b {
            p.mismatch(i);
            let d = (a - b).abs();
            if d > worst || p.worst.is_none() {
                worst = d;
                p.worst = Some(i);
                p.worst_score = d as f64;
            }
            p.max_abs = p.max_abs.max(d as f64);
            if b != 0 {
                p.max_rel = p.max_rel.max(d as f64 / (b as f64).abs());
            }
        }
    }
    p
}

fn float_part(
    expected: &HostBuffer,
    actual: &HostBuffer,
    r: std::ops::Range<usize>,
    tol: &Tolerance,
    floor: f64,
) -> Part {
    let mut p = Part {
        worst_score: f64::NEG_INFINITY,
        ..Part::default()
    };
    for i in r {
        let (b, a) = (expected.get_f64(i), actual.get_f64(i));
        if a.is_nan() && b.is_nan() {
            // Both kernels computed NaN here: they agree (the count is reported).
            p.nans += 1;
            p.both_nan += 1;
            continue;
        }
        if a.is_nan() || b.is_nan() {
            p.nans += 1;
            p.mismatch(i);
            if p.worst_score < f64::INFINITY {
                p.worst_score = f64::INFINITY;
                p.worst = Some(i);
            }
            continue;
        }
        if a == b {
            // Covers equal infinities, whose difference would be NaN.
            if b.is_finite() {
                p.ref2 += b * b;
            }
            if p.worst_score < 0.0 && p.worst.is_none() {
                p.worst_score = 0.0;
                p.worst = Some(i);
            }
            continue;
        }
        let d = (a - b).abs();
        let allowed = floor + tol.rtol * b.abs();
        if d.is_finite() {
            p.diff2 += d * d;
            p.ref2 += b * b;
        } else {
            p.diff2 = f64::INFINITY;
        }
        p.max_abs = p.max_abs.max(d);
        if b != 0.0 {
            p.max_rel = p.max_rel.max(d / b.abs());
        }
        let score = if allowed > 0.0 { d / allowed } else { f64::MAX };
        if score > p.worst_score {
            p.worst_score = score;
            p.worst = Some(i);
        }
        // NaN differences (from infinities) fail too.
        if d.is_nan() || d > allowed {
            p.mismatch(i);
        }
    }
    p
}

/// Compare `actual` (fast kernel) with `expected` (slow kernel). Large buffers are scanned
/// in parallel chunks that merge into the same verdict, counts and indices as one pass.
pub fn compare(expected: &HostBuffer, actual: &HostBuffer, tol: &Tolerance) -> Comparison {
    use rayon::prelude::*;
    let mut c = Comparison {
        pass: false,
        len: expected.len(),
        // Integers compare exactly unless the harness gave them a tolerance (counts that
        // may legitimately differ by a few, e.g. from float binning at bin edges).
        exact: !expected.elem.is_float() && tol.atol == 0.0 && tol.rtol == 0.0,
        mismatches: 0,
        nans: 0,
        both_nan: 0,
        max_abs_err: 0.0,
        max_rel_err: 0.0,
        l2_rel_err: 0.0,
        worst_index: None,
        first_mismatches: Vec::new(),
        tolerance: *tol,
        note: None,
    };
    if expected.elem != actual.elem || expected.bytes.len() != actual.bytes.len() {
        c.note = Some(format!(
            "cannot compare {} x {} with {} x {}",
            expected.elem.name(),
            expected.len(),
            actual.elem.name(),
            actual.len()
        ));
        c.mismatches = c.len.max(actual.len());
        return c;
    }
    let ranges = chunks(c.len);
    let merge = |parts: Vec<Part>| parts.into_iter().reduce(Part::then).unwrap_or_default();
    let p = if c.exact {
        merge(
            ranges
                .into_par_iter()
                .map(|r| exact_part(expected, actual, r))
                .collect(),
        )
    } else {
        // The normwise part of the slack: a fraction of the largest finite |expected|.
        let max_ref = (0..c.len)
            .into_par_iter()
            .with_min_len(SCAN_CHUNK)
            .map(|i| expected.get_f64(i).abs())
            .filter(|v| v.is_finite())
            .reduce(|| 0.0f64, f64::max);
        let floor = tol.atol + tol.scale * max_ref;
        merge(
            ranges
                .into_par_iter()
                .map(|r| float_part(expected, actual, r, tol, floor))
                .collect(),
        )
    };
    c.mismatches = p.mismatches;
    c.nans = p.nans;
    c.both_nan = p.both_nan;
    c.max_abs_err = p.max_abs;
    c.max_rel_err = p.max_rel;
    c.worst_index = p.worst;
    c.first_mismatches = p.first;
    c.l2_rel_err = if c.exact {
        if c.mismatches == 0 {
            0.0
        } else {
            f64::INFINITY
        }
    } else if p.diff2 == 0.0 {
        0.0
    } else if p.ref2 > 0.0 {
        p.diff2.sqrt() / p.ref2.sqrt()
    } else {
        f64::INFINITY
    };
    c.pass = if c.exact {
        c.mismatches == 0
    } else {
        c.mismatches == 0 && c.l2_rel_err <= tol.l2
    };
    c
}

/// What a failed comparison says, in words, for a `mismatch` reason: how many elements
/// differ, NaN on one side and on both (agreement), and the relative L2 error only where
/// it says something (it is over the finite elements, so `0` beside a mismatch would
/// blame nothing: the cfd `cuda_compute_step_factor` record read "rel L2 0.000e0").
pub fn describe(c: &Comparison) -> String {
    if let Some(note) = &c.note {
        return note.clone();
    }
    let mut parts = Vec::new();
    if c.mismatches > 0 {
        parts.push(format!("differs in {} of {} elements", c.mismatches, c.len));
    } else {
        parts.push(format!("agrees elementwise on {} elements", c.len));
    }
    let one_sided = c.nans - c.both_nan;
    if one_sided > 0 {
        parts.push(format!("{one_sided} NaN on one side only"));
    }
    if c.both_nan > 0 {
        parts.push(format!("{} NaN on both sides (agreement)", c.both_nan));
    }
    if c.exact {
        parts.push(format!("max abs {:.3e}", c.max_abs_err));
    } else if c.l2_rel_err > 0.0 {
        let over = if c.mismatches == 0 {
            format!(" over the bound {:.1e}", c.tolerance.l2)
        } else {
            String::new()
        };
        parts.push(format!("rel L2 {:.3e}{over}", c.l2_rel_err));
    }
    parts.join("; ")
}

/// Whether every element of `b` is finite (integers always are).
pub fn all_finite(b: &HostBuffer) -> bool {
    use rayon::prelude::*;
    !b.elem.is_float()
        || (0..b.len())
            .into_par_iter()
            .with_min_len(SCAN_CHUNK)
            .all(|i| b.get_f64(i).is_finite())
}

/// NaN or Inf in a fast kernel's output computed from finite inputs: a [`Degenerate::NonFinite`]
/// with the count and the first index, decided before any comparison. Random floats fed to
/// physics code (a `sqrt` of a negative pressure) give NaN; that is the harness's fault
/// until shown otherwise, not the slow kernel's. `inputs_finite` is false when some input
/// already held NaN or Inf (then NaN may be the answer, and the comparison judges it);
/// `allow` (the harness's `allow_degenerate`) accepts such an output too.
pub fn non_finite(actual: &HostBuffer, inputs_finite: bool, allow: bool) -> Option<Degenerate> {
    use rayon::prelude::*;
    if !inputs_finite || allow || !actual.elem.is_float() {
        return None;
    }
    // (count, NaN count, first index) per chunk, merged in order.
    let (count, nan, first) = chunks(actual.len())
        .into_par_iter()
        .map(|r| {
            let (mut count, mut nan, mut first) = (0usize, 0usize, None);
            for i in r {
                let v = actual.get_f64(i);
                // The poison is a NaN no arithmetic makes: an unwritten element, which
                // `check_degenerate` reports as such.
                if !v.is_finite() && !actual.is_poison(i) {
                    count += 1;
                    nan += usize::from(v.is_nan());
                    first = first.or(Some(i));
                }
            }
            (count, nan, first)
        })
        .reduce(|| (0, 0, None), |a, b| (a.0 + b.0, a.1 + b.1, a.2.or(b.2)));
    first.map(|first| Degenerate::NonFinite { count, nan, first })
}

/// An output that is not evidence of a computation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Degenerate {
    /// Every element still holds the poison: the kernel wrote nothing.
    Unwritten,
    /// Some elements still hold the poison (a skipped block, a short loop bound).
    PartiallyUnwritten {
        count: usize,
        first: usize,
    },
    AllZero,
    /// Every element has the same value.
    Constant {
        value: f64,
    },
    /// An `inout` buffer came back exactly as it went in.
    Unchanged,
    /// NaN or Inf from finite inputs ([`non_finite`]): `count` elements, `nan` of them NaN,
    /// the first at index `first`.
    NonFinite {
        count: usize,
        nan: usize,
        first: usize,
    },
}

impl Degenerate {
    pub fn status(&self) -> Status {
        match self {
            Degenerate::Unwritten | Degenerate::PartiallyUnwritten { .. } => Status::Unwritten,
            _ => Status::Degenerate,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Degenerate::Unwritten => "no element was written (all poison)".into(),
            Degenerate::PartiallyUnwritten { count, first } => {
                format!("{count} elements were not written, the first at index {first}")
            }
            Degenerate::AllZero => "every element is zero".into(),
            Degenerate::Constant { value } => format!("every element equals {value}"),
            Degenerate::Unchanged => "the in/out buffer is unchanged from its input".into(),
            Degenerate::NonFinite { count, nan, first } => {
                let what = match (*nan, count - nan) {
                    (_, 0) => format!("{count} elements are NaN"),
                    (0, _) => format!("{count} elements are Inf"),
                    (n, _) => format!("{count} elements are NaN or Inf ({n} NaN)"),
                };
                format!(
                    "NaN output: {what}, the first at index {first}, from finite inputs (the harness's inputs are outside the kernel's domain)"
                )
            }
        }
    }
}

/// Check one output after a run.
///
/// `input` is what an `inout` buffer held before the launch (None for `out`). `reference`
/// is the slow kernel's output for the same inputs, when checking the fast one: an element
/// that holds the poison in both is not counted as unwritten (for integers the poison,
/// all ones, can be a legitimate value such as -1). `allow` (the harness's
/// `allow_degenerate`) accepts zero, constant and unchanged outputs, never unwritten ones.
pub fn check_degenerate(
    actual: &HostBuffer,
    input: Option<&HostBuffer>,
    reference: Option<&HostBuffer>,
    allow: bool,
) -> Option<Degenerate> {
    let n = actual.len();
    if n == 0 {
        return None;
    }
    // Poison only means "unwritten" where the buffer started as poison (an `out` buffer).
    if input.is_none() {
        use rayon::prelude::*;
        let poisoned: Vec<usize> = (0..n)
            .into_par_iter()
            .with_min_len(SCAN_CHUNK)
            .filter(|&i| actual.is_poison(i))
            .filter(|&i| {
                !reference.is_some_and(|r| r.elem == actual.elem && r.len() == n && r.is_poison(i))
            })
            .collect();
        if poisoned.len() == n {
            return Some(Degenerate::Unwritten);
        }
        if let Some(&first) = poisoned.first() {
            return Some(Degenerate::PartiallyUnwritten {
                count: poisoned.len(),
                first,
            });
        }
    }
    if allow {
        return None;
    }
    if let Some(inp) = input {
        if inp.bytes == actual.bytes {
            return Some(Degenerate::Unchanged);
        }
    }
    use rayon::prelude::*;
    let v0 = actual.get_f64(0);
    if (0..n)
        .into_par_iter()
        .with_min_len(SCAN_CHUNK)
        .all(|i| actual.get_f64(i) == 0.0)
    {
        return Some(Degenerate::AllZero);
    }
    if n > 1 {
        let e = actual.elem.size_of();
        let first = &actual.bytes[..e];
        if actual
            .bytes
            .par_chunks_exact(e)
            .with_min_len(SCAN_CHUNK)
            .all(|c| c == first)
        {
            return Some(Degenerate::Constant { value: v0 });
        }
    }
    None
}

/// Bytes of a canary zone of `len` bytes: a position-dependent pattern (not a repeated
/// byte), so an overrun that writes zeros, ones, a constant or a copy of the neighbouring
/// data is caught. It is not a valid small float or int in any common type.
pub fn canary_pattern(len: usize) -> Vec<u8> {
    (0..len).map(canary_byte).collect()
}

fn canary_byte(i: usize) -> u8 {
    // A multiplicative hash of the offset, xor-ed with 0xA5 so that offset 0 is non-zero.
    ((i as u32).wrapping_mul(0x9E37_79B1) >> 24) as u8 ^ 0xA5
}

/// Where a canary zone was overwritten.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CanaryDamage {
    /// Byte offsets within the zone of the first and last damaged byte.
    pub first: usize,
    pub last: usize,
    pub count: usize,
}

/// Check a canary zone read back from the device (as written by [`canary_pattern`] with the same length).
pub fn check_canary(bytes: &[u8]) -> Result<(), CanaryDamage> {
    let bad: Vec<usize> = bytes
        .iter()
        .enumerate()
        .filter(|&(i, &b)| b != canary_byte(i))
        .map(|(i, _)| i)
        .collect();
    match (bad.first(), bad.last()) {
        (Some(&first), Some(&last)) => Err(CanaryDamage {
            first,
            last,
            count: bad.len(),
        }),
        _ => Ok(()),
    }
}

/// Whether a buffer is entirely the poison pattern (convenience for runners).
pub fn all_poison(b: &HostBuffer) -> bool {
    let p = poison_pattern(b.elem);
    b.bytes.chunks_exact(p.len()).all(|c| c == p.as_slice())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::ElemType;

    fn f32s(v: &[f64]) -> HostBuffer {
        HostBuffer::from_f64s(ElemType::F32, v)
    }
    fn tol32() -> Tolerance {
        Tolerance::default_for(ElemType::F32)
    }
    fn ramp(n: usize) -> Vec<f64> {
        (0..n)
            .map(|i| (i as f64 * 0.37).sin() * 10.0 + 0.5)
            .collect()
    }

    #[test]
    fn reordered_sums_pass_with_the_f32_defaults() {
        // Two summation orders of the same 4096 terms, as a tree reduction and a serial loop
        // would produce: elementwise within 1e-3 relative but not bit-identical.
        let n = 64;
        let mut serial = Vec::new();
        let mut tree = Vec::new();
        for r in 0..n {
            let terms: Vec<f32> = (0..4096)
                .map(|i| (((i * 7 + r * 13) % 1000) as f32 / 997.0 - 0.5) * 1.3)
                .collect();
            serial.push(terms.iter().sum::<f32>() as f64);
            let mut t = terms.clone();
            while t.len() > 1 {
                t = t.chunks(2).map(|c| c.iter().sum()).collect();
            }
            tree.push(t[0] as f64);
        }
        assert_ne!(serial, tree, "the test needs differing orders");
        let c = compare(&f32s(&serial), &f32s(&tree), &tol32());
        assert!(c.pass, "{c:?}");
        // The 1e-4/1e-4 would be stricter; L2 stays tiny either way.
        assert!(c.l2_rel_err < 1e-5, "{c:?}");
    }

    /// Long dot products in two summation orders: elements near zero (cancellation) differ
    /// by far more than rtol allows them, and the normwise `scale` term admits them.
    #[test]
    fn cancelling_sums_pass_through_the_scale_term() {
        let (rows, k) = (200, 4000);
        let mut serial = Vec::new();
        let mut blocked = Vec::new();
        let mut state = 12345u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        };
        for r in 0..rows {
            let mut t: Vec<f32> = (0..k).map(|_| next() * next()).collect();
            if r % 2 == 0 {
                // A row whose exact sum is 0: half its terms, then their negatives in
                // another order (7919 is prime to k / 2, so i * 7919 % half permutes).
                let half = k / 2;
                for i in 0..half {
                    t[half + i] = -t[(i * 7919) % half];
                }
            }
            serial.push(t.iter().sum::<f32>() as f64);
            let mut parts = [0f32; 8];
            for (i, x) in t.iter().enumerate() {
                parts[i % 8] += x;
            }
            blocked.push(parts.iter().sum::<f32>() as f64);
        }
        let no_scale = Tolerance {
            scale: 0.0,
            ..tol32()
        };
        let strict = compare(&f32s(&serial), &f32s(&blocked), &no_scale);
        let c = compare(&f32s(&serial), &f32s(&blocked), &tol32());
        assert!(c.pass, "{c:?}");
        assert!(c.l2_rel_err < 1e-5, "{c:?}");
        // The scale term is what made the difference here, or the test proves nothing.
        assert!(!strict.pass && strict.mismatches > 0, "{strict:?}");
    }

    #[test]
    fn last_few_elements_differ() {
        let e = ramp(1000);
        let mut a = e.clone();
        for x in &mut a[997..] {
            *x += 0.5;
        }
        let c = compare(&f32s(&e), &f32s(&a), &tol32());
        assert!(!c.pass);
        assert_eq!(c.mismatches, 3);
        assert_eq!(c.first_mismatches, vec![997, 998, 999]);
        assert!(c.worst_index.is_some_and(|w| w >= 997));
        assert!((c.max_abs_err - 0.5).abs() < 1e-5, "{c:?}");
    }

    #[test]
    fn nan_on_both_sides_agrees_and_on_one_side_never_passes() {
        let mut e = ramp(10);
        e[4] = f64::NAN;
        let c = compare(&f32s(&e), &f32s(&e), &tol32());
        assert!(c.pass, "{c:?}");
        assert_eq!((c.nans, c.both_nan, c.mismatches), (1, 1, 0));
        assert!(describe(&c).contains("1 NaN on both sides (agreement)"));
        let loose = Tolerance {
            atol: 1e9,
            rtol: 1e9,
            l2: 1e9,
            scale: 1e9,
        };
        let mut a = ramp(10);
        a[9] = f64::NAN;
        let c = compare(&f32s(&ramp(10)), &f32s(&a), &loose);
        assert!(!c.pass);
        assert_eq!((c.nans, c.both_nan, c.worst_index), (1, 0, Some(9)));
        // NaN on the slow side only is just as much a mismatch.
        let c = compare(&f32s(&a), &f32s(&ramp(10)), &tol32());
        assert!(!c.pass && c.mismatches == 1, "{c:?}");
    }

    /// The cfd `cuda_compute_step_factor` record: a mismatch whose differing elements are
    /// all NaN against a number read "rel L2 0.000e0", blaming nothing.
    #[test]
    fn a_mismatch_is_never_described_as_rel_l2_zero() {
        let e = ramp(16);
        let mut a = e.clone();
        a[0] = f64::NAN;
        a[3] = f64::NAN;
        let c = compare(&f32s(&e), &f32s(&a), &tol32());
        assert!(!c.pass && c.l2_rel_err == 0.0, "{c:?}");
        let d = describe(&c);
        assert!(!d.contains("rel L2"), "{d}");
        assert_eq!(d, "differs in 2 of 16 elements; 2 NaN on one side only");
        // A real numeric difference names its L2 error; an L2-only failure says so.
        a[0] = e[0] + 3.0;
        a[3] = e[3];
        let d = describe(&compare(&f32s(&e), &f32s(&a), &tol32()));
        assert!(d.starts_with("differs in 1 of 16 elements; rel L2 "), "{d}");
        let scaled: Vec<f64> = e.iter().map(|x| x * (1.0 + 5e-4)).collect();
        let d = describe(&compare(&f32s(&e), &f32s(&scaled), &tol32()));
        assert!(
            d.starts_with("agrees elementwise on 16 elements; rel L2 ")
                && d.ends_with("over the bound 1.0e-4"),
            "{d}"
        );
        // Integers say their largest difference instead.
        let c = compare(
            &HostBuffer::from_i64s(ElemType::I32, &[1, 2]),
            &HostBuffer::from_i64s(ElemType::I32, &[1, 5]),
            &Tolerance::default_for(ElemType::I32),
        );
        assert_eq!(describe(&c), "differs in 1 of 2 elements; max abs 3.000e0");
    }

    #[test]
    fn nan_or_inf_from_finite_inputs_is_degenerate_with_count_and_first_index() {
        let mut v = ramp(3 * SCAN_CHUNK);
        v[SCAN_CHUNK + 5] = f64::NAN;
        v[2 * SCAN_CHUNK] = f64::INFINITY;
        v[2 * SCAN_CHUNK + 1] = f64::NAN;
        let out = f32s(&v);
        let d = non_finite(&out, true, false).unwrap();
        assert_eq!(
            d,
            Degenerate::NonFinite {
                count: 3,
                nan: 2,
                first: SCAN_CHUNK + 5
            }
        );
        assert_eq!(d.status(), Status::Degenerate);
        let why = d.describe();
        assert!(
            why.starts_with(
                "NaN output: 3 elements are NaN or Inf (2 NaN), the first at index 262149"
            ),
            "{why}"
        );
        // Non-finite inputs make NaN a possible answer; the harness may allow it; a finite
        // output and an integer output are never non-finite.
        assert_eq!(non_finite(&out, false, false), None);
        assert_eq!(non_finite(&out, true, true), None);
        assert_eq!(non_finite(&f32s(&ramp(100)), true, false), None);
        // Poison left in place is unwritten, not computed NaN.
        let mut part = HostBuffer::poisoned(ElemType::F32, 8);
        part.bytes[..4].copy_from_slice(&1.0f32.to_le_bytes());
        assert_eq!(non_finite(&part, true, false), None);
        part.bytes[8..12].copy_from_slice(&f32::NAN.to_le_bytes());
        assert_eq!(
            non_finite(&part, true, false),
            Some(Degenerate::NonFinite {
                count: 1,
                nan: 1,
                first: 2
            })
        );
        let ints = HostBuffer::from_i64s(ElemType::I32, &[-1, 0, 7]);
        assert_eq!(non_finite(&ints, true, false), None);
        assert!(all_finite(&ints) && all_finite(&f32s(&ramp(9))));
        assert!(!all_finite(&out));
        let inf = non_finite(&f32s(&[1.0, f64::NEG_INFINITY]), true, false).unwrap();
        assert!(inf
            .describe()
            .starts_with("NaN output: 1 elements are Inf, the first at index 1"));
    }

    #[test]
    fn l2_bound_catches_spread_small_errors() {
        // Every element off by 5e-4 relative: elementwise fine (rtol 1e-3), L2 not (1e-4).
        let e = ramp(500);
        let a: Vec<f64> = e.iter().map(|x| x * (1.0 + 5e-4)).collect();
        let c = compare(&f32s(&e), &f32s(&a), &tol32());
        assert_eq!(c.mismatches, 0);
        assert!(!c.pass && c.l2_rel_err > 1e-4, "{c:?}");
    }

    #[test]
    fn integers_compare_exactly_and_types_must_agree() {
        let e = HostBuffer::from_i64s(ElemType::I32, &[1, 2, 3, -4]);
        let a = HostBuffer::from_i64s(ElemType::I32, &[1, 2, 4, -4]);
        let c = compare(&e, &a, &Tolerance::default_for(ElemType::I32));
        assert!(!c.pass && c.exact);
        assert_eq!(
            (c.mismatches, c.worst_index, c.max_abs_err),
            (1, Some(2), 1.0)
        );
        assert!(compare(&e, &e, &Tolerance::default_for(ElemType::I32)).pass);
        // With a harness tolerance, counts may differ by a little.
        let loose = Tolerance {
            atol: 1.0,
            rtol: 0.0,
            l2: 0.5,
            scale: 0.0,
        };
        let c = compare(&e, &a, &loose);
        assert!(c.pass && !c.exact, "{c:?}");
        let far = HostBuffer::from_i64s(ElemType::I32, &[1, 2, 9, -4]);
        assert!(!compare(&e, &far, &loose).pass);
        let c = compare(&e, &f32s(&[1.0, 2.0, 3.0, -4.0]), &tol32());
        assert!(!c.pass && c.note.is_some());
        let c = compare(
            &e,
            &HostBuffer::from_i64s(ElemType::I32, &[1, 2, 3]),
            &tol32(),
        );
        assert!(!c.pass && c.note.is_some());
    }

    #[test]
    fn half_precision_uses_looser_defaults() {
        let e: Vec<f64> = ramp(100);
        let a: Vec<f64> = e.iter().map(|x| x * (1.0 + 4e-3)).collect();
        let (he, ha) = (
            HostBuffer::from_f64s(ElemType::F16, &e),
            HostBuffer::from_f64s(ElemType::F16, &a),
        );
        assert!(compare(&he, &ha, &Tolerance::default_for(ElemType::F16)).pass);
        assert!(!compare(&f32s(&e), &f32s(&a), &tol32()).pass);
    }

    #[test]
    fn skipped_last_block_is_unwritten() {
        let mut out = HostBuffer::poisoned(ElemType::F32, 1000);
        let written = f32s(&ramp(768));
        out.bytes[..written.bytes.len()].copy_from_slice(&written.bytes);
        assert_eq!(
            check_degenerate(&out, None, None, false),
            Some(Degenerate::PartiallyUnwritten {
                count: 232,
                first: 768
            })
        );
        // Even when the harness allows degenerate values.
        assert_eq!(
            check_degenerate(&out, None, None, true).unwrap().status(),
            Status::Unwritten
        );
        let none = HostBuffer::poisoned(ElemType::F32, 10);
        assert_eq!(
            check_degenerate(&none, None, None, false),
            Some(Degenerate::Unwritten)
        );
        assert!(all_poison(&none) && !all_poison(&out));
    }

    #[test]
    fn integer_poison_in_the_reference_is_a_value() {
        // -1 is all-ones, like the poison: where the slow kernel also wrote -1, it is data.
        let slow = HostBuffer::from_i64s(ElemType::I32, &[3, -1, 5, -1]);
        let fast = slow.clone();
        assert_eq!(check_degenerate(&fast, None, Some(&slow), false), None);
        let bad = HostBuffer::from_i64s(ElemType::I32, &[3, -1, -1, -1]);
        assert_eq!(
            check_degenerate(&bad, None, Some(&slow), false),
            Some(Degenerate::PartiallyUnwritten { count: 1, first: 2 })
        );
    }

    #[test]
    fn zero_constant_and_unchanged_outputs() {
        let z = f32s(&[0.0; 16]);
        assert_eq!(
            check_degenerate(&z, None, None, false),
            Some(Degenerate::AllZero)
        );
        assert_eq!(check_degenerate(&z, None, None, true), None);
        let k = f32s(&[2.5; 16]);
        assert_eq!(
            check_degenerate(&k, None, None, false),
            Some(Degenerate::Constant { value: 2.5 })
        );
        assert_eq!(
            Degenerate::Constant { value: 2.5 }.status(),
            Status::Degenerate
        );
        let inp = f32s(&ramp(16));
        assert_eq!(
            check_degenerate(&inp, Some(&inp), None, false),
            Some(Degenerate::Unchanged)
        );
        // An inout buffer is not checked for poison (it never held any).
        let moved = f32s(&ramp(16).iter().map(|x| x + 1.0).collect::<Vec<_>>());
        assert_eq!(check_degenerate(&moved, Some(&inp), None, false), None);
        // A single-element result may be any value but zero.
        assert_eq!(check_degenerate(&f32s(&[3.0]), None, None, false), None);
    }

    #[test]
    fn canaries_catch_overruns() {
        let mut zone = canary_pattern(256);
        assert_eq!(check_canary(&zone), Ok(()));
        // Not a repeated byte, so a constant write anywhere shows.
        assert!(zone.windows(2).any(|w| w[0] != w[1]));
        zone[4..8].copy_from_slice(&1.0f32.to_le_bytes());
        let d = check_canary(&zone).unwrap_err();
        assert_eq!(d.first, 4);
        assert!(d.last <= 7 && d.count >= 2, "{d:?}");
        let mut zone = canary_pattern(64);
        zone[63] ^= 1;
        assert_eq!(
            check_canary(&zone),
            Err(CanaryDamage {
                first: 63,
                last: 63,
                count: 1
            })
        );
    }

    #[test]
    fn masking_by_ranges_matches_masking_element_by_element() {
        use crate::harness::Ignore;
        // A partial last period (n = 2 * 7 + 5), and an input shorter than the output.
        let out: Vec<i64> = (100..119).collect();
        let inp: Vec<i64> = (0..16).collect();
        for (from, to) in [(2, 5), (0, 7), (6, 7), (4, 7)] {
            let ig = Ignore {
                arg: 0,
                period: 7,
                from,
                to,
            };
            for input in [None, Some(HostBuffer::from_i64s(ElemType::I32, &inp))] {
                let want: Vec<f64> = (0..out.len())
                    .map(|i| match (ig.contains(i), &input) {
                        (false, _) => out[i] as f64,
                        (true, Some(_)) if i < inp.len() => inp[i] as f64,
                        (true, _) => 0.0,
                    })
                    .collect();
                let mut b = HostBuffer::from_i64s(ElemType::I32, &out);
                mask_ignored(&mut b, input.as_ref(), &ig);
                let got: Vec<f64> = (0..b.len()).map(|i| b.get_f64(i)).collect();
                assert_eq!(got, want, "{from}..{to}, input {}", input.is_some());
            }
        }
    }

    #[test]
    fn ignored_padding_is_left_out_of_the_comparison() {
        use crate::harness::Ignore;
        // Rows of 8 whose last 2 entries are padding: fast leaves garbage there.
        let input = HostBuffer::from_i64s(ElemType::U16, &[0; 24]);
        let slow: Vec<i64> = (0..24).map(|i| if i % 8 < 6 { i } else { 0 }).collect();
        let mut fast = slow.clone();
        fast[6] = 65349;
        fast[23] = 7;
        let ig = Ignore {
            arg: 0,
            period: 8,
            from: 6,
            to: 8,
        };
        let (mut s, mut f) = (
            HostBuffer::from_i64s(ElemType::U16, &slow),
            HostBuffer::from_i64s(ElemType::U16, &fast),
        );
        let tol = Tolerance::default_for(ElemType::U16);
        assert!(
            !compare(&s, &f, &tol).pass,
            "garbage in padding differs unmasked"
        );
        mask_ignored(&mut s, Some(&input), &ig);
        mask_ignored(&mut f, Some(&input), &ig);
        assert!(compare(&s, &f, &tol).pass);
        // A difference outside the padding is still caught.
        f.bytes[2] ^= 1;
        let c = compare(&s, &f, &tol);
        assert_eq!(
            (c.pass, c.mismatches, c.first_mismatches.clone()),
            (false, 1, vec![1])
        );
    }

    #[test]
    fn chunked_scans_agree_with_one_serial_pass() {
        let n = 3 * SCAN_CHUNK + 5;
        let base: Vec<f64> = (0..n).map(|i| ((i % 977) as f64 - 300.0) * 0.25).collect();
        let mut bad = base.clone();
        // Equal worst errors in two chunks (the earlier must win), a NaN late, small noise.
        for &i in &[7, SCAN_CHUNK + 3, 2 * SCAN_CHUNK + 1, n - 1] {
            bad[i] += 5.0;
        }
        bad[3 * SCAN_CHUNK] = f64::NAN;
        for i in (0..n).step_by(1001) {
            bad[i] += 1e-9;
        }
        let (e, a) = (
            HostBuffer::from_f64s(ElemType::F64, &base),
            HostBuffer::from_f64s(ElemType::F64, &bad),
        );
        let tol = Tolerance::default_for(ElemType::F64);
        let c = compare(&e, &a, &tol);
        let max_ref = base.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        let serial = float_part(&e, &a, 0..n, &tol, tol.atol + tol.scale * max_ref);
        assert_eq!(c.mismatches, serial.mismatches);
        assert_eq!(c.nans, 1);
        assert_eq!(c.worst_index, serial.worst);
        assert_eq!(c.first_mismatches, serial.first);
        assert_eq!(c.max_abs_err, serial.max_abs);
        // Integers: the first of two equally bad elements is the worst.
        let ib: Vec<i64> = (0..n as i64).map(|i| i % 1000).collect();
        let mut ia = ib.clone();
        ia[SCAN_CHUNK + 9] += 4;
        ia[2 * SCAN_CHUNK + 9] -= 4;
        let (e, a) = (
            HostBuffer::from_i64s(ElemType::I32, &ib),
            HostBuffer::from_i64s(ElemType::I32, &ia),
        );
        let c = compare(&e, &a, &Tolerance::default_for(ElemType::I32));
        let serial = exact_part(&e, &a, 0..n);
        assert_eq!((c.mismatches, c.worst_index), (2, Some(SCAN_CHUNK + 9)));
        assert_eq!(
            (c.first_mismatches, c.worst_index),
            (serial.first, serial.worst)
        );
    }
}
