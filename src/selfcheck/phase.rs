//! The self-check as verify's first phase (`build`): each pair's harness proves itself on
//! the worker that then verifies the pair, just before it, on the modules that worker has
//! compiled and the same seeded inputs. One GPU pass per pair, no barrier between a
//! self-check pass and a verify pass.
//!
//! A proof is keyed by what it runs on (the fast kernel, the harness file's bytes, the
//! seeds), not by the pair: synth's candidates of one fast kernel are proved once, and a
//! pair whose slow slot synth fills later reuses the proof its fast kernel already has.
//! Every proof is appended to a store file as it is decided, which a rerun (after a kill,
//! or a later build) reads back.

use super::{degenerate_allowed, identity_sets, judge, prepare, report, Report, SelfcheckConfig};
use crate::record::{HarnessOrigin, Pair};
use crate::verify::engine::{Job, RunOptions};
use crate::verify::pool::{Hello, Proof, Proved};
use crate::verify::{resolve, Prover};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Seeds of a proof: two, so that "the output changes with the seed" can be judged.
const PROOF_SEEDS: u32 = 2;

/// The first phase of `build`'s verify: a [`Prover`] that self-checks each pair's harness.
pub struct FirstPhase {
    cfg: SelfcheckConfig,
    base: PathBuf,
    /// Proofs decided in earlier runs, by key (the store file's lines).
    earlier: BTreeMap<String, Report>,
    store: Option<Mutex<std::fs::File>>,
    /// This run's reports, by pair id.
    reports: Mutex<BTreeMap<String, Report>>,
    /// Per record index: the proof's key, harness path and the outputs allowed to be
    /// degenerate (to judge the verification the pool hands back).
    asked: Mutex<BTreeMap<usize, Asked>>,
}

/// A proof asked for: its key, the harness path, the outputs allowed to be degenerate.
type Asked = (String, String, BTreeSet<String>);

impl FirstPhase {
    /// A first phase with the hand-written harness folders `harness_dirs` (a pair's own
    /// `harness` path resolves against the first), keeping its proofs in `store`.
    pub fn new(harness_dirs: &[PathBuf], store: Option<&Path>) -> FirstPhase {
        let earlier = super::reports_by_inputs(store);
        let store = store.and_then(|p| {
            if let Some(dir) = p.parent() {
                let _ = std::fs::create_dir_all(dir);
            }
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(p)
                .ok()
                .map(Mutex::new)
        });
        FirstPhase {
            cfg: SelfcheckConfig {
                harness_dirs: harness_dirs.to_vec(),
                inferred_dir: None,
                suite_root: None,
                seeds: PROOF_SEEDS,
                timeout: std::time::Duration::from_secs(60),
                worker_cmd: None,
                gpus: None,
                sanitizer: Vec::new(),
                compute_sanitizer: None,
                partial: None,
            },
            base: harness_dirs.first().cloned().unwrap_or_default(),
            earlier,
            store,
            reports: Mutex::default(),
            asked: Mutex::default(),
        }
    }

    /// Every report this phase made or reused, and the stored one of each pair of `pairs`
    /// it was not asked about (a pair whose verdict a killed run had already written).
    pub fn reports(&self, pairs: &[&Pair]) -> Vec<Report> {
        let mut out = self.reports.lock().expect("not poisoned").clone();
        for p in pairs {
            if out.contains_key(&p.id) {
                continue;
            }
            let (ip, found, _) = prepare(p, &self.base, &self.cfg);
            if let Ok(f) = found {
                if let Some(r) = self.earlier.get(&proof_key(&ip, &f.path)) {
                    out.insert(p.id.clone(), for_pair(r, p));
                }
            }
        }
        out.into_values().collect()
    }

    fn keep(&self, r: Report, stored: bool) {
        if stored && !r.inputs.is_empty() {
            if let (Some(f), Ok(line)) = (&self.store, serde_json::to_string(&r)) {
                if let Ok(mut f) = f.lock() {
                    let _ = writeln!(f, "{line}");
                    let _ = f.flush();
                }
            }
        }
        self.reports
            .lock()
            .expect("not poisoned")
            .insert(r.pair_id.clone(), r);
    }
}

/// A pair's harness origin as its record says (a harness found in the folders is hand).
fn origin_of(p: &Pair) -> HarnessOrigin {
    p.harness_origin
        .as_ref()
        .map(|h| h.origin)
        .unwrap_or(HarnessOrigin::Hand)
}

/// Why a pair stops when its harness fails: an inferred or LLM harness is not trusted; a
/// hand-written one is only reported.
pub fn stop_reason(origin: HarnessOrigin, r: &Report) -> Option<String> {
    if r.pass {
        return None;
    }
    let failed = r
        .checks
        .iter()
        .find(|c| c.result == super::CheckResult::Fail);
    stopping(
        origin,
        r.category.as_deref().unwrap_or("failed"),
        failed.map_or("", |c| &c.name),
        failed.map_or("", |c| &c.detail),
    )
}

/// [`stop_reason`] of a failed check (`check`, why) in its category.
fn stopping(origin: HarnessOrigin, category: &str, check: &str, why: &str) -> Option<String> {
    (origin != HarnessOrigin::Hand).then(|| {
        let name = format!("{origin:?}").to_lowercase();
        let why = why.lines().next().unwrap_or("");
        format!("the {name} harness failed its self-check ({category}): {check}: {why}")
    })
}

/// A stored report, for another pair of the same key.
fn for_pair(r: &Report, p: &Pair) -> Report {
    Report {
        pair_id: p.id.clone(),
        benchmark: p.benchmark.clone(),
        kernel: p.kernel.clone(),
        ..r.clone()
    }
}

/// What a proof runs on: the fast kernel (its unit, not the pair's id or slow side), the
/// harness file's bytes, the seeds, the tool's version.
fn proof_key(identity: &Pair, harness: &Path) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(serde_json::to_vec(&identity.fast).unwrap_or_default());
    h.update([0u8]);
    h.update(std::fs::read(harness).unwrap_or_default());
    h.update([0u8]);
    h.update(format!("{PROOF_SEEDS} {}", env!("CARGO_PKG_VERSION")));
    hex::encode(h.finalize())
}

impl Prover for FirstPhase {
    fn proof(&self, i: usize, p: &Pair, hello: &Hello) -> Result<Option<Proof>, String> {
        let origin = origin_of(p);
        let (ip, found, _) = prepare(p, &self.base, &self.cfg);
        let path = ip.harness.clone();
        let refuse = |check: &'static str, why: String| {
            let r = report(p, path.clone(), Some(origin), Some((check, why)), None);
            let stop = stop_reason(origin, &r);
            self.keep(r, false);
            stop.map_or(Ok(None), Err)
        };
        let found = match found {
            Ok(f) => f,
            Err((status, why)) => {
                return refuse(super::failed_check(status).unwrap_or("harness"), why);
            }
        };
        let key = proof_key(&ip, &found.path);
        if let Some(r) = self.earlier.get(&key) {
            let r = for_pair(r, p);
            let stop = stop_reason(origin, &r);
            self.keep(r, false);
            return stop.map_or(Ok(None), Err);
        }
        let (slow, fast, mut sets) = match resolve::resolve(&ip, &found, hello) {
            Ok(r) => r,
            Err((status, why)) => {
                return refuse(super::failed_check(status).unwrap_or("harness"), why);
            }
        };
        identity_sets(&ip, &mut sets);
        let flags = degenerate_allowed(&sets);
        let harness = found.path.display().to_string();
        self.asked
            .lock()
            .expect("not poisoned")
            .insert(i, (key.clone(), harness.clone(), flags.clone()));
        let job = Job {
            pair_id: format!("{}:selfcheck", ip.id),
            slow,
            fast,
            harness,
            sets,
            options: RunOptions {
                seeds: PROOF_SEEDS,
                selfcheck: true,
                ..RunOptions::default()
            },
        };
        let stops = move |v: &crate::record::Verification| {
            let (check, why) = judge(v, &flags)?;
            stopping(origin, &super::category(check, &why), check, &why)
        };
        Ok(Some(Proof {
            key,
            job,
            stops: Box::new(stops),
        }))
    }

    fn proved(&self, i: usize, p: &Pair, outcome: &Proved) {
        let Some((key, harness, flags)) = self.asked.lock().expect("not poisoned").remove(&i)
        else {
            return;
        };
        let v = &outcome.verification;
        let ms = v.evidence.phases_ms.get("total").copied();
        let mut r = report(p, Some(harness), Some(origin_of(p)), judge(v, &flags), ms);
        // Only a run on the GPU is worth keeping for a rerun: a worker lost to a crash or
        // a missing GPU is asked again.
        if v.status != crate::record::Status::NoGpu {
            r.inputs = key;
        }
        // The first pair of a key stores it; the others of this batch share it.
        self.keep(r, !outcome.shared);
    }
}
