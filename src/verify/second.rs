//! Second opinions. A pair whose verdict comes from its fast kernel's captured launch,
//! and that an inferred or LLM-completed harness also covers, runs under that harness too,
//! in the same batch. The captured verdict stands (hand > captured > inferred > llm); the
//! other harness's verdict is kept beside it (`evidence.second_opinion`), flagged
//! `harness_disagreement` when its status differs, and its size sets where the two
//! kernels agreed are sizes the one captured launch does not have.
//!
//! The second run is a job of its own, under a shadow record index (`n + i` for `n`
//! records), so the pool, the history and the memo treat it as any other job; its verdict
//! joins the pair's when both have come, in either order.

use crate::evidence::SecondOpinion;
use crate::record::{Flag, HarnessOrigin, Status, Verification};
use std::collections::BTreeMap;

/// Shadow indices for `n` records: record `i`'s second run is `n + i`.
#[derive(Debug, Clone, Copy)]
pub(super) struct Shadows {
    n: usize,
}

impl Shadows {
    pub fn new(n: usize) -> Shadows {
        Shadows { n }
    }

    /// Record `i`'s second run.
    pub fn of(&self, i: usize) -> usize {
        self.n + i
    }

    /// The record whose second run `j` is, when `j` is one.
    pub fn record(&self, j: usize) -> Option<usize> {
        j.checked_sub(self.n)
    }
}

/// The second opinion of verdict `v`, run under a harness of `origin` at `harness`. Its
/// speedups are kept only where the outputs agreed at every size set (verified or
/// not faster): a timing of kernels that disagree says nothing.
pub fn opinion(origin: HarnessOrigin, harness: &str, v: &Verification) -> SecondOpinion {
    let agreed = matches!(v.status, Status::Verified | Status::NotFaster);
    SecondOpinion {
        origin: format!("{origin:?}").to_lowercase(),
        harness: harness.to_string(),
        status: v.status,
        reason: v.reason.clone(),
        speedups: if agreed {
            v.evidence.speedups()
        } else {
            Vec::new()
        },
    }
}

/// Whether a status judges the pair's kernels: a harness that could not be used, a pair
/// that never ran (no GPU, no slow side) or one stopped by the watchdog says nothing about
/// them, so its status is never a disagreement.
pub fn judges(s: Status) -> bool {
    !matches!(
        s,
        Status::HarnessError
            | Status::NoHarness
            | Status::NeedsHostLoop
            | Status::NoGpu
            | Status::MissingSlow
            | Status::Timeout
    )
}

/// `v` with the second opinion `op`: kept in its evidence, and flagged (with one clause
/// on the reason) when both statuses judge the kernels ([`judges`]) and differ. The
/// status never changes. Attaching again
/// replaces an earlier opinion and its flag and clause.
pub fn attach(v: &mut Verification, op: SecondOpinion) {
    v.flags
        .retain(|f| !matches!(f, Flag::HarnessDisagreement { .. }));
    if let Some(at) = v.reason.find(CLAUSE) {
        v.reason.truncate(at);
    }
    if op.status != v.status && judges(op.status) && judges(v.status) {
        let why = op.reason.lines().next().unwrap_or("");
        v.reason.push_str(&format!(
            "{CLAUSE} the {} harness says {}: {why}",
            op.origin,
            op.status.as_str()
        ));
        v.flags.push(Flag::HarnessDisagreement {
            origin: op.origin.clone(),
            status: op.status,
        });
    }
    v.evidence.second_opinion = Some(op);
}

/// Whether the other harness's verdict replaces the captured one: the captured launch
/// could not judge the pair (its replay failed its own check or was refused on the
/// worker: `harness_error`) and the other harness did. Inference is the fallback where a
/// capture cannot be used.
pub fn falls_back(captured: Status, other: Status) -> bool {
    captured == Status::HarnessError && judges(other)
}

/// The captured verdict `v` joined with the other harness's: its opinion `op` attached
/// ([`attach`]), or, where the capture could not judge and the other harness did
/// ([`falls_back`]), that harness's full verdict `full` in its place, with the captured
/// one kept as the opinion beside it and the reason saying so.
pub fn join(v: &mut Verification, op: SecondOpinion, full: Option<Verification>) {
    match full {
        Some(w) if falls_back(v.status, w.status) => {
            let was = SecondOpinion {
                origin: "captured".into(),
                harness: v.evidence.harness.clone(),
                status: v.status,
                reason: v.reason.clone(),
                speedups: Vec::new(),
            };
            let why = v.reason.lines().next().unwrap_or("").to_string();
            *v = w;
            v.reason.push_str(&format!(
                "; the {} harness's verdict: the captured launch could not judge the pair ({why})",
                op.origin
            ));
            v.evidence.second_opinion = Some(was);
        }
        _ => attach(v, op),
    }
}

/// The clause a disagreement adds to the captured verdict's reason.
const CLAUSE: &str = "; harness_disagreement:";

/// Second opinions (with the full verdict of one run on a worker) that came before their
/// pair's own verdict, by record index.
#[derive(Debug, Default)]
pub(super) struct Waiting {
    early: BTreeMap<usize, (SecondOpinion, Option<Verification>)>,
}

impl Waiting {
    /// Record `i`'s verdict `v` as it is stored: with its second opinion, if that came first.
    pub fn join(&mut self, i: usize, v: &mut Verification) {
        if let Some((op, full)) = self.early.remove(&i) {
            join(v, op, full);
        }
    }

    /// Record `i`'s second opinion: `Some(verdict)` to store again when the pair's own
    /// verdict (`stored`) is already in, else kept until it comes.
    pub fn arrive(
        &mut self,
        i: usize,
        (op, full): (SecondOpinion, Option<Verification>),
        stored: Option<&Verification>,
    ) -> Option<Verification> {
        match stored {
            Some(v) => {
                let mut v = v.clone();
                join(&mut v, op, full);
                Some(v)
            }
            None => {
                self.early.insert(i, (op, full));
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::Evidence;

    fn verdict(status: Status, reason: &str) -> Verification {
        Verification {
            status,
            reason: reason.to_string(),
            device: None,
            evidence: Evidence::default(),
            speedup: None,
            tool_version: "t".into(),
            flags: vec![],
        }
    }

    fn timed(status: Status) -> Verification {
        let mut v = crate::verify::verdict::tests::timed(&[("large", 1 << 20, 3.0, 1.0, 2.5, 3.5)]);
        v.status = status;
        v
    }

    /// Shadow indices never meet a record's own, and lead back to it.
    #[test]
    fn a_second_run_has_an_index_of_its_own_that_leads_back_to_its_record() {
        let s = Shadows::new(5);
        assert_eq!(s.of(2), 7);
        assert_eq!(s.record(7), Some(2));
        assert_eq!(s.record(4), None);
    }

    /// A disagreement is flagged and said in the reason; the captured status stands.
    /// An agreeing opinion is kept without a flag, with the sizes it timed.
    #[test]
    fn a_different_status_is_flagged_and_the_captured_verdict_stands() {
        let mut v = verdict(Status::Verified, "verified at captured");
        let op = opinion(
            HarnessOrigin::Inferred,
            "h.toml",
            &verdict(Status::Mismatch, "mismatch: out differs at 3\nmore"),
        );
        assert!(op.speedups.is_empty(), "no timing of kernels that disagree");
        attach(&mut v, op);
        assert_eq!(v.status, Status::Verified);
        assert_eq!(
            v.flags,
            vec![Flag::HarnessDisagreement {
                origin: "inferred".into(),
                status: Status::Mismatch
            }]
        );
        assert_eq!(
            v.reason,
            "verified at captured; harness_disagreement: the inferred harness says mismatch: mismatch: out differs at 3"
        );
        // A later opinion replaces the first, its flag and its clause.
        let agree = opinion(HarnessOrigin::Inferred, "h.toml", &timed(Status::Verified));
        assert_eq!(agree.speedups.len(), 1);
        assert_eq!(agree.speedups[0].size_set, "large");
        attach(&mut v, agree.clone());
        assert!(v.flags.is_empty());
        assert_eq!(v.reason, "verified at captured");
        assert_eq!(v.evidence.second_opinion, Some(agree));
        // The opinion survives the record's round trip.
        let back: Verification = serde_json::from_str(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(back, v);
    }

    /// A harness that could not be used, on either side, is kept but is no disagreement.
    #[test]
    fn a_harness_that_could_not_judge_is_no_disagreement() {
        let unusable = opinion(
            HarnessOrigin::Inferred,
            "h.toml",
            &verdict(Status::HarnessError, "n is a TODO"),
        );
        let mut v = verdict(Status::Verified, "v");
        attach(&mut v, unusable.clone());
        assert!(v.flags.is_empty() && v.reason == "v");
        assert_eq!(v.evidence.second_opinion, Some(unusable));
        let mut v = verdict(Status::HarnessError, "replay failed its self-check");
        let said = opinion(
            HarnessOrigin::Inferred,
            "h.toml",
            &verdict(Status::Mismatch, "m"),
        );
        attach(&mut v, said);
        assert!(v.flags.is_empty());
    }

    /// Where the capture could not judge the pair and the other harness did, the pair takes
    /// that verdict, the captured one kept beside it; where neither judged, the captured
    /// verdict stands.
    #[test]
    fn a_capture_that_could_not_judge_gives_way_to_the_harness_that_did() {
        let mut v = verdict(
            Status::HarnessError,
            "the fast kernel's replay differs from the capture",
        );
        v.evidence.harness = "/cap/launches/p/run-0/m.toml".into();
        let mut other = timed(Status::Verified);
        other.evidence.harness = "inf/p.toml".into();
        let op = opinion(HarnessOrigin::Inferred, "inf/p.toml", &other);
        join(&mut v, op, Some(other.clone()));
        assert_eq!(v.status, Status::Verified);
        assert_eq!(v.evidence.harness, "inf/p.toml");
        assert!(v.reason.ends_with("; the inferred harness's verdict: the captured launch could not judge the pair (the fast kernel's replay differs from the capture)"), "{}", v.reason);
        let was = v.evidence.second_opinion.clone().unwrap();
        assert_eq!(
            (was.origin.as_str(), was.status),
            ("captured", Status::HarnessError)
        );
        assert_eq!(was.harness, "/cap/launches/p/run-0/m.toml");
        // Neither judged: the captured verdict stands, the other kept as its opinion.
        let mut v = verdict(Status::HarnessError, "replay failed");
        let bad = verdict(Status::HarnessError, "TODO");
        let op = opinion(HarnessOrigin::Inferred, "inf/p.toml", &bad);
        join(&mut v, op, Some(bad));
        assert_eq!(
            (v.status, v.reason.as_str()),
            (Status::HarnessError, "replay failed")
        );
        assert!(
            !falls_back(Status::Mismatch, Status::Verified),
            "a judged capture stands"
        );
    }

    /// An opinion joins its pair's verdict in either order.
    #[test]
    fn an_opinion_joins_its_verdict_whichever_comes_first() {
        let op = opinion(
            HarnessOrigin::Llm,
            "l.toml",
            &verdict(Status::NotFaster, "nf"),
        );
        let mut w = Waiting::default();
        // First: kept until the verdict comes.
        assert!(w.arrive(3, (op.clone(), None), None).is_none());
        let mut v = verdict(Status::Verified, "v");
        w.join(3, &mut v);
        assert_eq!(v.evidence.second_opinion.as_ref(), Some(&op));
        assert_eq!(v.flags.len(), 1);
        // Second: the stored verdict comes back with it, to be stored again.
        let stored = verdict(Status::NotFaster, "nf too");
        let again = w.arrive(4, (op.clone(), None), Some(&stored)).unwrap();
        assert_eq!(again.evidence.second_opinion, Some(op));
        assert!(again.flags.is_empty(), "same status: no disagreement");
        // Nothing is left waiting, and a verdict with no opinion stays as it was.
        let mut plain = verdict(Status::Verified, "p");
        w.join(3, &mut plain);
        assert!(plain.evidence.second_opinion.is_none());
    }
}
