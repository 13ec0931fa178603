//! Every slow kernel, natural, contributed or synthesized, goes through synth's static
//! artificial-slowdown checks ([`crate::synth::checks::find_slowdown`]) before any GPU
//! time: a kernel padded with a timer spin, a busy loop, repeated work, an added
//! `volatile` or a huge constant trip count is `artificial_slowdown`, with the line and
//! construct as evidence, in `verify`, `validate` and `build` alike.

use super::engine::tool_version;
use crate::record::{KernelUnit, Pair, Status, Verification};
use crate::synth::checks::{find_slowdown, SlowdownHit};

/// The verdict for a pair whose slow kernel pads its runtime; `None` when it does not
/// (or has no slow kernel yet).
pub fn check(pair: &Pair) -> Option<Verification> {
    let slow = pair.slow.unit()?;
    let hit = find_slowdown(&slow.source, &pair.fast.source)?;
    Some(verdict(pair, &hit))
}

/// The line in the kernel's own file, when the hit lies in the kernel's body: isolation
/// keeps the kernel's text as written, so its lines keep their offsets from the definition.
fn file_line(unit: &KernelUnit, hit: &SlowdownHit) -> Option<u32> {
    let def = crate::cuda::syntax::kernels(&unit.source)
        .into_iter()
        .find(|d| d.name == unit.kernel)?;
    let end = def.line + unit.source[def.range.clone()].lines().count() as u32;
    (def.line..end)
        .contains(&hit.line)
        .then(|| unit.line + (hit.line - def.line))
}

fn verdict(pair: &Pair, hit: &SlowdownHit) -> Verification {
    let unit = pair.slow.unit().expect("checked by the caller");
    let file_line = file_line(unit, hit);
    let at = match file_line {
        Some(l) => format!("{} line {l}", unit.path),
        None => format!("line {} of its isolated unit", hit.line),
    };
    let evidence = crate::evidence::Evidence {
        slowdown: Some(crate::evidence::SlowdownEvidence {
            hit: hit.clone(),
            path: unit.path.clone(),
            file_line,
        }),
        ..Default::default()
    };
    Verification {
        status: Status::ArtificialSlowdown,
        reason: format!(
            "slow kernel `{}` pads its runtime: {} ({at}: `{}`)",
            unit.kernel, hit.message, hit.construct
        ),
        device: None,
        evidence,
        speedup: None,
        tool_version: tool_version(),
        flags: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{KernelUnit, PairRule, Slow, SynthOutcome};

    const FAST: &str = "__global__ void scale(float* out, const float* in, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] = 2.0f * in[i];\n}\n";

    fn pair(slow: &str, origin: fn(KernelUnit) -> Slow) -> Pair {
        let f = crate::synth::checks::tests::fast_unit(FAST, "scale");
        let mut s = crate::synth::checks::tests::fast_unit(slow, "scale");
        s.variant = "slow".into();
        Pair::new(origin(s), f, PairRule::Name)
    }

    #[test]
    fn a_padded_slow_kernel_of_any_origin_is_artificial_slowdown() {
        let spun = FAST.replace(
            "if (i < n)",
            "long long t0 = clock64();\n  while (clock64() - t0 < 2000) {}\n  if (i < n)",
        );
        let synth = |u| Slow::Synthesized {
            unit: Box::new(u),
            outcome: Box::new(SynthOutcome {
                model: "m".into(),
                attempts: 1,
                ..SynthOutcome::default()
            }),
        };
        for origin in [Slow::natural, synth] {
            let v = check(&pair(&spun, origin)).expect("rejected");
            assert_eq!(v.status, Status::ArtificialSlowdown);
            let s = v.evidence.slowdown.as_ref().expect("slowdown evidence");
            assert_eq!(s.hit.check, "timer_spin");
            assert_eq!(s.hit.line, 3);
            assert_eq!(s.file_line, Some(3));
            assert!(v.reason.contains("clock64"), "{}", v.reason);
        }
        // The same kernel without the spin is left for the GPU.
        let naive = FAST.replace("2.0f * in[i]", "in[i] + in[i]");
        assert!(check(&pair(&naive, Slow::natural)).is_none());
    }

    /// Every planted folder is refused before the GPU exactly when it expects
    /// `artificial_slowdown`: the planted spin is still caught, and no other planted slow
    /// kernel (naive loops among them) is taken for padding.
    #[test]
    fn planted_folders_are_refused_exactly_when_expected() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/planted");
        let mut caught = 0;
        for e in std::fs::read_dir(&root).unwrap() {
            let dir = e.unwrap().path();
            let (m, p) = crate::verify::validate::load_folder(&dir)
                .unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
            let expect = m.expect == Some(Status::ArtificialSlowdown);
            let got = check(&p);
            assert_eq!(got.is_some(), expect, "{}: {got:?}", dir.display());
            caught += usize::from(expect);
        }
        assert!(caught >= 1, "no planted slowdown in {}", root.display());
    }
}
