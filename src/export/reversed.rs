//! Reversed pairs (issue 27): a synthesized plain variant that agrees with the original
//! and is faster than it on the verification device (`reversed`). With
//! `--include-reversed` each becomes a sample whose slow side is the original kernel and
//! whose fast side is the plain version; off by default, and the card counts them either way.

use crate::evidence::{Evidence, Launches};
use crate::record::{Flag, Pair, Slow, Status};
use std::collections::BTreeMap;

/// What a reversed sample's id adds to its pair's id.
pub const ID_SUFFIX: &str = "-reversed";

/// The pair as its reversed sample sees it: slow = the original (the pair's fast unit),
/// fast = the synthesized plain version, the speedup the original's time over the plain
/// version's (the `reversed` flag's), timings and launches swapped to match, techniques
/// those the plain version removed. None unless the pair is `reversed`.
pub fn view(p: &Pair) -> Option<Pair> {
    let v = p
        .verification
        .as_ref()
        .filter(|v| v.status == Status::Reversed)?;
    let Slow::Synthesized { unit, .. } = &p.slow else {
        return None;
    };
    let back = v.flags.iter().find_map(|f| match f {
        Flag::Reversed { speedup } => Some(speedup.clone()),
        _ => None,
    })?;
    let mut w = v.clone();
    w.speedup = Some(back);
    w.evidence = swapped(&v.evidence);
    let mut q = p.clone();
    q.id = format!("{}{ID_SUFFIX}", p.id);
    q.techniques = super::describe::techniques(p);
    q.slow = Slow::natural(p.fast.clone());
    q.fast = (**unit).clone();
    // A description from `synth --describe` explains the original's optimization.
    q.description = None;
    q.verification = Some(w);
    Some(q)
}

/// Evidence with slow and fast exchanged: each size set's timings and speedup (inverted,
/// interval ends swapped) and the launches.
fn swapped(e: &Evidence) -> Evidence {
    let mut e = e.clone();
    for t in &mut e.timings {
        std::mem::swap(&mut t.slow, &mut t.fast);
        let (lo, hi) = (t.ci_low, t.ci_high);
        t.speedup = 1.0 / t.speedup;
        t.ci_low = 1.0 / hi;
        t.ci_high = 1.0 / lo;
    }
    if let Some(l) = &mut e.launch {
        swap_launches(l);
    }
    e
}

fn swap_launches(l: &mut Launches) {
    std::mem::swap(&mut l.slow, &mut l.fast);
    for t in l.threads.values_mut() {
        t.swap(0, 1);
    }
    for s in l.evaluated.values_mut() {
        std::mem::swap(&mut s.slow, &mut s.fast);
    }
}

/// Reversed pairs among `pairs` by verification device name (`unknown` without one).
pub fn per_device<'p>(pairs: impl IntoIterator<Item = &'p Pair>) -> BTreeMap<String, usize> {
    let mut out = BTreeMap::new();
    for p in pairs {
        if let Some(v) = p
            .verification
            .as_ref()
            .filter(|v| v.status == Status::Reversed)
        {
            let device = v.device.as_ref().map_or("unknown", |d| d.name.as_str());
            *out.entry(device.to_string()).or_default() += 1;
        }
    }
    out
}
