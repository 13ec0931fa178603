//! Launch configurations in the records: each pair's harness launches attached to its
//! verification, and pairs never run marked waiting with theirs (for the preview).

use crate::evidence::Evidence;
use crate::harness::launches::Launches;
use crate::record::{Record, Verification};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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
