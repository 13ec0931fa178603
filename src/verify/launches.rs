//! How each kernel of a pair is launched, as its harness says (grid, block, dynamic
//! shared memory as expressions of the problem sizes), kept with the verification
//! (`evidence.launch`) so export can tell a model how the slow kernel is launched and how
//! the fast one's launch differs: an optimization that computes 8 points per thread
//! needs a grid 8× smaller, and a record that hides it teaches a wrong transformation.

use crate::harness::{Harness, LaunchSpec};
use crate::record::{Evidence, Record, Verification};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

pub use crate::evidence::{LaunchConfig, Launches};

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
        Launches {
            task: h.description.clone(),
            slow: h.slow.iter().map(LaunchConfig::of).collect(),
            fast: h.fast.iter().map(LaunchConfig::of).collect(),
            size_sets: h
                .size_sets()
                .iter()
                .map(|s| (s.name.clone(), s.values.clone()))
                .collect(),
            threads: h
                .size_sets()
                .iter()
                .filter_map(|s| {
                    let r = h.resolve(s, &crate::harness::DeviceProps::h100()).ok()?;
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
                    Some((s.name.clone(), [most(&r.slow), most(&r.fast)]))
                })
                .collect(),
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

/// Put each pair's launches into its verification's evidence (`evidence.launch`), for
/// every pair whose harness is found, whatever its status.
pub fn attach(
    records: &[Record],
    base: &Path,
    dirs: &[PathBuf],
    suite_root: Option<&Path>,
    results: &mut BTreeMap<usize, Verification>,
) {
    for (i, v) in results.iter_mut() {
        let Some(Record::Pair(p)) = records.get(*i) else {
            continue;
        };
        let Ok(found) = super::resolve::prepare(p, base, dirs, suite_root) else {
            continue;
        };
        v.evidence.launch = Some(Launches::of_harness(&found.harness));
    }
}

/// Pairs never verified (a build without a GPU leaves them so) marked `no_gpu`, with their
/// harness's launches when one is found: what a preview export states about them.
pub fn mark_waiting(records: &[Record], base: &Path, dirs: &[PathBuf]) -> Vec<Record> {
    records
        .iter()
        .map(|r| match r {
            Record::Pair(p) if p.verification.is_none() && p.slow.unit().is_some() => {
                let mut p = p.clone();
                let mut evidence = Evidence::default();
                if let Ok(found) = super::resolve::prepare(&p, base, dirs, None) {
                    evidence = Evidence::of_launch(Launches::of_harness(&found.harness));
                }
                p.verification = Some(Verification {
                    status: crate::record::Status::NoGpu,
                    reason: "waiting for a GPU: not run, compared or timed".into(),
                    device: None,
                    evidence,
                    speedup: None,
                    tool_version: super::engine::tool_version(),
                    flags: vec![],
                });
                Record::Pair(p)
            }
            _ => r.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

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
