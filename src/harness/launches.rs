//! How each kernel of a pair is launched, as its harness says (grid, block, dynamic
//! shared memory as expressions of the problem sizes), kept with the verification
//! (`evidence.launch`) so export can tell a model how the slow kernel is launched and how
//! the fast one's launch differs: an optimization that computes 8 points per thread
//! needs a grid 8× smaller, and a record that hides it teaches a wrong transformation.

use crate::harness::{Harness, LaunchSpec};
use crate::record::Verification;

pub use crate::evidence::{LaunchConfig, LaunchValues, Launches, SizeSetLaunches};

/// A resolved launch as numbers, with as many dimensions as `spec` writes and its
/// arguments named as the harness names them.
fn values(
    spec: &LaunchSpec,
    l: &crate::harness::Launch,
    r: &crate::harness::Resolved,
) -> LaunchValues {
    LaunchValues {
        kernel: l.kernel.clone(),
        grid: l.grid[..spec.grid.len().clamp(1, 3)].to_vec(),
        block: l.block[..spec.block.len().clamp(1, 3)].to_vec(),
        shared_mem: l.shared_mem,
        repeat: l.repeat,
        args: l
            .args
            .iter()
            .enumerate()
            .map(|(i, &a)| {
                let name = r.args[a].name();
                match l.offsets.get(i).copied().unwrap_or(0) {
                    0 => name.to_string(),
                    off => format!("{name} + {off}"),
                }
            })
            .collect(),
    }
}

impl LaunchConfig {
    fn of(l: &LaunchSpec) -> LaunchConfig {
        LaunchConfig {
            kernel: l.kernel.clone(),
            grid: l.grid.clone(),
            block: l.block.clone(),
            shared_mem: l.shared_mem.clone(),
            repeat: l.repeat.clone(),
        }
    }

    /// CUDA's own notation: `k<<<dim3(ceil_div(n, 256)), dim3(256), 1024>>>`.
    pub fn text(&self) -> String {
        let dims = |d: &[String]| format!("dim3({})", d.join(", "));
        let smem = match self.shared_mem.trim() {
            "0" | "" => String::new(),
            s => format!(", {s}"),
        };
        let rep = match self.repeat.trim() {
            "1" | "" => String::new(),
            r => format!(" (repeated {r} times)"),
        };
        format!(
            "{}<<<{}, {}{smem}>>>{rep}",
            self.kernel,
            dims(&self.grid),
            dims(&self.block)
        )
    }
}

impl Launches {
    pub fn of_harness(h: &Harness) -> Launches {
        let dev = crate::harness::DeviceProps::h100();
        // Each size set resolved once, by the harness itself: the threads, the evaluated
        // launches export writes as CUDA, and the main set all come from it.
        let resolved: Vec<(&crate::harness::SizeSet, crate::harness::Resolved)> = h
            .size_sets()
            .iter()
            .filter_map(|s| Some((s, h.resolve(s, &dev).ok()?)))
            .collect();
        let most = |v: &[crate::harness::Launch]| {
            v.iter()
                .map(|l| {
                    l.grid
                        .iter()
                        .chain(&l.block)
                        .map(|&d| d as u64)
                        .product::<u64>()
                })
                .max()
                .unwrap_or(0)
        };
        let bytes = |r: &crate::harness::Resolved| -> usize {
            r.args
                .iter()
                .map(|a| match a {
                    crate::harness::ResolvedArg::Buffer { elem, len, .. } => len * elem.size_of(),
                    _ => 0,
                })
                .sum()
        };
        // The verdict's rule: `primary`, else the most bytes, the later set on a tie.
        let main = h
            .size_sets()
            .iter()
            .find(|s| s.primary)
            .map(|s| s.name.clone())
            .or_else(|| {
                let mut best: Option<(usize, &str)> = None;
                for (s, r) in &resolved {
                    if best.is_none_or(|(b, _)| bytes(r) >= b) {
                        best = Some((bytes(r), &s.name));
                    }
                }
                best.map(|(_, n)| n.to_string())
            });
        Launches {
            task: h.description.clone(),
            slow: h.slow.iter().map(LaunchConfig::of).collect(),
            fast: h.fast.iter().map(LaunchConfig::of).collect(),
            size_sets: h
                .size_sets()
                .iter()
                .map(|s| (s.name.clone(), s.values.clone()))
                .collect(),
            threads: resolved
                .iter()
                .map(|(s, r)| (s.name.clone(), [most(&r.slow), most(&r.fast)]))
                .collect(),
            evaluated: resolved
                .iter()
                .map(|(s, r)| {
                    let of = |specs: &[LaunchSpec], done: &[crate::harness::Launch]| {
                        specs
                            .iter()
                            .zip(done)
                            .map(|(sp, l)| values(sp, l, r))
                            .collect()
                    };
                    let launches = SizeSetLaunches {
                        slow: of(&h.slow, &r.slow),
                        fast: of(&h.fast, &r.fast),
                    };
                    (s.name.clone(), launches)
                })
                .collect(),
            main,
        }
    }

    /// How many times fewer threads the fast variant launches than the slow one at
    /// `size_set` (or, without one, at the set with the most slow threads).
    pub fn coarsening(&self, size_set: Option<&str>) -> Option<f64> {
        let [slow, fast] = match size_set.and_then(|s| self.threads.get(s)) {
            Some(t) => *t,
            None => *self.threads.values().max_by_key(|t| t[0])?,
        };
        (fast > 0).then(|| slow as f64 / fast as f64)
    }

    /// From a verification's evidence, when verify recorded it.
    pub fn of(v: &Verification) -> Option<Launches> {
        v.evidence.launch.clone()
    }

    /// The launch configuration (grid, block, shared memory, repeats) changes; kernel
    /// names are compared apart (a renamed kernel launched alike is not a change).
    pub fn differ(&self) -> bool {
        let shape = |v: &[LaunchConfig]| {
            v.iter()
                .map(|l| {
                    (
                        l.grid.clone(),
                        l.block.clone(),
                        l.shared_mem.clone(),
                        l.repeat.clone(),
                    )
                })
                .collect::<Vec<_>>()
        };
        shape(&self.slow) != shape(&self.fast)
    }

    pub fn text(which: &[LaunchConfig]) -> String {
        which
            .iter()
            .map(LaunchConfig::text)
            .collect::<Vec<_>>()
            .join(", then ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::Evidence;

    #[test]
    fn launches_read_as_cuda_and_changes_are_seen() {
        let h = crate::harness::parse(
            r#"
description = "potential on a lattice"
[sizes]
w = 512
h = 512
[[args]]
name = "out"
type = "f32"
len = "w * h"
role = "out"
[[variants.slow.launch]]
kernel = "cenergy"
grid = ["ceil_div(w, 16)", "ceil_div(h, 16)"]
block = [16, 16]
[[variants.fast.launch]]
kernel = "cenergy"
grid = ["ceil_div(w, 16 * 8)", "ceil_div(h, 16)"]
block = [16, 16]
shared_mem = "16 * 4"
"#,
            "t.toml",
        )
        .unwrap();
        let l = Launches::of_harness(&h);
        assert_eq!(
            Launches::text(&l.slow),
            "cenergy<<<dim3(ceil_div(w, 16), ceil_div(h, 16)), dim3(16, 16)>>>"
        );
        assert_eq!(
            Launches::text(&l.fast),
            "cenergy<<<dim3(ceil_div(w, 16 * 8), ceil_div(h, 16)), dim3(16, 16), 16 * 4>>>"
        );
        assert!(l.differ());
        assert_eq!(l.task.as_deref(), Some("potential on a lattice"));
        assert_eq!(l.size_sets["default"]["w"], 512);
        // 32 × 32 blocks of 256 threads, then 4 × 32 of them: 8× fewer threads.
        assert_eq!(l.threads["default"], [32 * 32 * 256, 4 * 32 * 256]);
        assert_eq!(l.coarsening(None), Some(8.0));
        let mut same = l.clone();
        same.fast = same.slow.clone();
        same.fast[0].kernel = "renamed".into();
        assert!(!same.differ());
        // Through a verification's evidence and back.
        let v = Verification {
            status: crate::record::Status::NoGpu,
            reason: String::new(),
            device: None,
            evidence: Evidence::of_launch(l.clone()),
            speedup: None,
            tool_version: String::new(),
            flags: vec![],
        };
        assert_eq!(Launches::of(&v), Some(l));
    }
}
