//! `build`'s harness step: which harness each pair runs under. A hand-written harness (found
//! as verify finds them) wins; else, with `[harness] infer = true` (the default), one is
//! inferred from the host code (`harness::infer`) and written to
//! `<output>/harnesses/inferred/<pair-id>.toml` (every pair's, complete or not, so a person
//! can review it and promote it beside the kernels as a hand-written one); a complete
//! inferred harness is used; else an LLM-completed one (`<output>/harnesses/llm/` or
//! `[harness] llm_dir`, as `harness complete -o DIR` writes them). Each pair records the
//! origin (`harness_origin`) and, where a GPU ran it, the self-check result; an inferred or
//! LLM harness that fails its self-check stops its pair as `harness_error` before any
//! timing (a hand-written one is only reported: a person vouched for it).

use super::config::{HarnessSettings, SuiteKind, SuiteSpec};
use crate::capture::replay::ReplayError;
use crate::harness::infer::{self, InferOptions};
use crate::record::{HarnessOrigin, Pair, Record, Status, Verification};
use crate::selfcheck::{CheckResult, Report};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where inferred harnesses go, under the build's output folder.
pub const INFERRED_DIR: &str = "harnesses/inferred";
/// Where LLM-completed harnesses go (and are looked for), under the output folder.
pub const LLM_DIR: &str = "harnesses/llm";

/// Pairs whose captured harness was refused that the build summary names one by one.
const REFUSALS_NAMED: usize = 5;

/// What the harness step chose, counted for the build table.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Chosen {
    pub counts: BTreeMap<String, usize>,
    pub notes: Vec<String>,
}

/// The suite root a unit's host code lives under: the first folder suite holding its
/// launch file (or, without a launch site, its own file).
pub fn root_for<'a>(suites: &'a [SuiteSpec], pair: &Pair) -> Option<&'a Path> {
    let u = &pair.fast;
    let mut files: Vec<&str> = u.launch_sites.iter().map(|s| s.path.as_str()).collect();
    files.push(u.path.as_str());
    suites
        .iter()
        .filter(|s| s.kind != SuiteKind::Records && s.path.is_dir())
        .find(|s| files.iter().any(|f| s.path.join(f).is_file()))
        .map(|s| s.path.as_path())
}

/// A hand-written harness for `pair` exists (or one is named and broken: verify reports it).
fn has_hand(pair: &Pair, hand_dirs: &[PathBuf]) -> bool {
    let mut ip = pair.clone();
    if ip.slow.is_pending() {
        ip.slow = crate::record::Slow::natural(ip.fast.clone());
    }
    // A harness chosen by an earlier build is not a hand-written one.
    if ip
        .harness_origin
        .as_ref()
        .is_some_and(|h| h.origin != HarnessOrigin::Hand)
    {
        ip.harness = None;
    }
    let base = hand_dirs.first().cloned().unwrap_or_default();
    !matches!(
        crate::verify::resolve::prepare(&ip, &base, hand_dirs, None),
        Err((Status::NoHarness, _))
    )
}

/// Choose every pair's harness (see the module doc). `hand_dirs`: verify's harness folders
/// and the suite folders; `out`: the build's output folder.
pub fn choose(
    records: &mut [Record],
    suites: &[SuiteSpec],
    hand_dirs: &[PathBuf],
    out: &Path,
    s: &HarnessSettings,
    captures: Option<&crate::capture::CaptureIndex>,
) -> Chosen {
    let mut c = Chosen::default();
    let inferred_dir = out.join(INFERRED_DIR);
    let mut llm_dirs = vec![out.join(LLM_DIR)];
    llm_dirs.extend(s.llm_dir.iter().cloned());
    let mut write_errors = 0;
    // What each pair gets, decided in record order; inference runs between the two passes,
    // on every core.
    let mut to_infer: Vec<usize> = Vec::new();
    // Captured pairs are inferred too: a complete inferred harness is their second opinion
    // (verify runs it beside the capture, and falls back to it where the capture cannot
    // judge the pair).
    let mut captured: std::collections::BTreeSet<usize> = Default::default();
    for (i, r) in records.iter_mut().enumerate() {
        let Record::Pair(p) = r else { continue };
        if p.identical {
            continue;
        }
        if has_hand(p, hand_dirs) {
            if p.harness_origin
                .as_ref()
                .is_some_and(|h| h.origin != HarnessOrigin::Hand)
            {
                p.harness = None;
            }
            p.set_harness_origin(HarnessOrigin::Hand);
            *c.counts.entry("hand".into()).or_default() += 1;
            continue;
        }
        // The fast kernel's captured launch, when it replays: verify runs the pair under
        // it (and the replay must reproduce what the program wrote before any timing).
        let slow = p.slow.unit().unwrap_or(&p.fast);
        match captures.map(|idx| crate::capture::replay::for_pair(idx, slow, &p.fast)) {
            Some(Ok(_)) => {
                p.harness = None;
                p.set_harness_origin(HarnessOrigin::Captured);
                *c.counts.entry("captured".into()).or_default() += 1;
                captured.insert(i);
            }
            // The fast kernel ran but its launch cannot serve the pair: say why (the first
            // few; `harness show CAPDIR --units … --pair ID` gives any pair's reason).
            Some(Err(e)) if !matches!(e, ReplayError::NotCaptured(_)) => {
                let n = c.counts.entry("capture_refused".into()).or_default();
                *n += 1;
                if *n <= REFUSALS_NAMED {
                    c.notes
                        .push(format!("pair {}: no captured harness: {e}", p.id));
                }
            }
            _ => {}
        }
        to_infer.push(i);
    }
    let refused = c.counts.get("capture_refused").copied().unwrap_or(0);
    if refused > REFUSALS_NAMED {
        c.notes.push(format!(
            "… and {} more pairs with no captured harness (`harness show CAPDIR --units \
             UNITS --pair ID` gives each reason)",
            refused - REFUSALS_NAMED
        ));
    }
    let inferred: BTreeMap<usize, bool> = match s.infer {
        true => {
            let pairs: Vec<&Pair> = to_infer
                .iter()
                .filter_map(|&i| match &records[i] {
                    Record::Pair(p) => Some(&**p),
                    _ => None,
                })
                .collect();
            let hosts = infer::hosts_for(&pairs, |p| root_for(suites, p));
            let progress = crate::progress::Progress::new("infer", pairs.len());
            use rayon::prelude::*;
            let done: Vec<(usize, Result<bool, String>)> = to_infer
                .par_iter()
                .zip(pairs.par_iter().zip(hosts.into_par_iter()))
                .map(|(&i, (p, host))| {
                    let opts = InferOptions {
                        assume_size: s.assume_size,
                    };
                    let inf = infer::infer(p, &host, &opts);
                    let path = inferred_dir.join(format!("{}.toml", p.id));
                    let written = std::fs::create_dir_all(&inferred_dir)
                        .and_then(|_| std::fs::write(&path, inf.toml().as_bytes()))
                        .map_err(|e| format!("{}: {e}", path.display()));
                    progress.inc(1, &p.kernel);
                    (i, written.map(|_| inf.complete()))
                })
                .collect();
            progress.done();
            done.into_iter()
                .filter_map(|(i, r)| match r {
                    Ok(complete) => Some((i, complete)),
                    Err(e) => {
                        write_errors += 1;
                        tracing::warn!("{e}");
                        None
                    }
                })
                .collect()
        }
        false => BTreeMap::new(),
    };
    for i in to_infer {
        let Record::Pair(p) = &mut records[i] else {
            continue;
        };
        if captured.contains(&i) {
            if inferred.get(&i) == Some(&true) {
                let path = inferred_dir.join(format!("{}.toml", p.id));
                p.harness = Some(path.display().to_string());
                *c.counts.entry("captured_with_inferred".into()).or_default() += 1;
            }
            continue;
        }
        match inferred.get(&i) {
            Some(true) => {
                let path = inferred_dir.join(format!("{}.toml", p.id));
                p.harness = Some(path.display().to_string());
                p.set_harness_origin(HarnessOrigin::Inferred);
                *c.counts.entry("inferred".into()).or_default() += 1;
                continue;
            }
            Some(false) => *c.counts.entry("inferred_incomplete".into()).or_default() += 1,
            None => {}
        }
        let llm = llm_dirs
            .iter()
            .map(|d| d.join(format!("{}.toml", p.id)))
            .find(|f| f.is_file());
        match llm {
            Some(f) => {
                p.harness = Some(f.display().to_string());
                p.set_harness_origin(HarnessOrigin::Llm);
                *c.counts.entry("llm".into()).or_default() += 1;
            }
            None => {
                p.harness_origin = None;
                *c.counts.entry("none".into()).or_default() += 1;
            }
        }
    }
    if let Some(k) = c.counts.get("inferred_incomplete") {
        c.notes.push(format!(
            "{k} inferred harnesses have TODOs (review them in {INFERRED_DIR}/, or let `harness complete` fill them)"
        ));
    }
    if write_errors > 0 {
        c.notes.push(format!(
            "{write_errors} inferred harnesses could not be written to {INFERRED_DIR}/"
        ));
    }
    c
}

/// What the LLM completion of the build's harness step did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Completed {
    pub done: usize,
    pub failed: usize,
    pub notes: Vec<String>,
}

/// Let the synth endpoint complete the inferred harnesses that still have TODOs, for pairs
/// with no harness (`harness complete`: synth's client, cache and key handling; self-checked
/// in the repair loop when a GPU is visible). Completed harnesses go to
/// `<out>/harnesses/llm/<pair-id>.toml`; one already there is kept (a person may have
/// edited it). `synth`: the settings the build's synth stage runs with (endpoint file,
/// offline, response cache); the repair turns are `[harness] max_repairs`.
pub fn complete_missing(
    records: &[Record],
    suites: &[SuiteSpec],
    out: &Path,
    s: &HarnessSettings,
    synth: crate::synth::Settings,
) -> Completed {
    use crate::selfcheck::complete::{self, Llm, Outcome};
    let mut c = Completed::default();
    let todo: Vec<&Pair> = records
        .iter()
        .filter_map(|r| match r {
            Record::Pair(p) if !p.identical && p.harness_origin.is_none() => Some(p.as_ref()),
            _ => None,
        })
        .filter(|p| !out.join(LLM_DIR).join(format!("{}.toml", p.id)).exists())
        .collect();
    let drafts: Vec<(&Pair, String)> = todo
        .into_iter()
        .filter_map(|p| {
            let d = std::fs::read_to_string(out.join(INFERRED_DIR).join(format!("{}.toml", p.id)))
                .ok()?;
            d.contains("\"TODO\"").then_some((p, d))
        })
        .collect();
    if drafts.is_empty() {
        return c;
    }
    let llm = match Llm::new(synth) {
        Ok(llm) => llm,
        Err(e) => {
            c.failed = drafts.len();
            c.notes.push(format!("harness completion: {e:#}"));
            return c;
        }
    };
    let ep = llm.endpoint();
    let gpu = matches!(crate::gpu::probe(), crate::gpu::Probe::Ready { .. });
    let checker = complete::selfcheck_checker(
        crate::selfcheck::SelfcheckConfig {
            harness_dirs: Vec::new(),
            inferred_dir: None,
            suite_root: None,
            seeds: 2,
            timeout: std::time::Duration::from_secs(30),
            worker_cmd: None,
            gpus: None,
            sanitizer: Vec::new(),
            compute_sanitizer: None,
            partial: None,
        },
        out.to_path_buf(),
    );
    let check: Option<&complete::Checker> = if gpu { Some(&checker) } else { None };
    let dir = out.join(LLM_DIR);
    for (p, draft) in drafts {
        let host = crate::harness::infer_llm::host_excerpt(root_for(suites, p), p);
        match complete::complete(p, &draft, &host, &ep, s.max_repairs, check) {
            Outcome::Done {
                toml, selfchecked, ..
            } => {
                let text = format!(
                    "{}{toml}",
                    complete::header(&llm.cfg.llm.model, selfchecked)
                );
                let path = dir.join(format!("{}.toml", p.id));
                match std::fs::create_dir_all(&dir).and_then(|_| std::fs::write(&path, text)) {
                    Ok(()) => c.done += 1,
                    Err(e) => {
                        c.failed += 1;
                        c.notes.push(format!("{}: {e}", path.display()));
                    }
                }
            }
            Outcome::Failed { reason, .. } => {
                c.failed += 1;
                c.notes.push(format!(
                    "{}/{}: harness not completed: {}",
                    p.benchmark,
                    p.kernel,
                    reason.lines().next().unwrap_or("")
                ));
            }
        }
    }
    c
}

/// The failed check of a self-check report, as `check: first line of detail`.
fn failure(r: &Report) -> Option<String> {
    r.checks
        .iter()
        .find(|c| c.result == CheckResult::Fail)
        .map(|c| format!("{}: {}", c.name, c.detail.lines().next().unwrap_or("")))
}

/// Put self-check reports into the records (by pair id): every pair gets the result in its
/// provenance; an inferred or LLM harness that failed stops the pair (`harness_error`, not
/// verified). Returns (passed, failed, stopped).
pub fn apply_selfcheck(records: &mut [Record], reports: &[Report]) -> (usize, usize, usize) {
    let by_id: BTreeMap<&str, &Report> = reports.iter().map(|r| (r.pair_id.as_str(), r)).collect();
    let (mut pass, mut fail, mut stopped) = (0, 0, 0);
    for r in records.iter_mut() {
        let Record::Pair(p) = r else { continue };
        let (Some(rep), Some(h)) = (by_id.get(p.id.as_str()), p.harness_origin.as_mut()) else {
            continue;
        };
        h.selfcheck_pass = Some(rep.pass);
        h.selfcheck_failure = failure(rep);
        if rep.pass {
            pass += 1;
            continue;
        }
        fail += 1;
        if h.origin != HarnessOrigin::Hand && p.slow.unit().is_some() {
            stopped += 1;
            let origin = format!("{:?}", h.origin).to_lowercase();
            p.verification = Some(Verification {
                status: Status::HarnessError,
                reason: format!(
                    "the {origin} harness failed its self-check ({}): {}",
                    rep.category.as_deref().unwrap_or("failed"),
                    h.selfcheck_failure.as_deref().unwrap_or("")
                ),
                device: None,
                evidence: Default::default(),
                speedup: None,
                tool_version: crate::verify::engine::tool_version(),
                flags: vec![],
            });
        }
    }
    (pass, fail, stopped)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::selfcheck::checks_from;

    fn report(id: &str, failed: Option<(&'static str, String)>) -> Report {
        Report {
            pair_id: id.into(),
            benchmark: "b".into(),
            kernel: "k".into(),
            harness: None,
            origin: None,
            pass: failed.is_none(),
            category: failed.as_ref().map(|_| "crash".to_string()),
            checks: checks_from(failed),
            ms: None,
            inputs: String::new(),
        }
    }

    #[test]
    fn a_failed_selfcheck_stops_inferred_pairs_and_only_reports_hand_ones() {
        let text = include_str!("../../tests/data/pairs.jsonl");
        let mut recs: Vec<Record> = text
            .lines()
            .map(|l| crate::record::upgrade::parse_line(l).unwrap().record)
            .filter(|r| matches!(r, Record::Pair(p) if p.slow.unit().is_some()))
            .take(3)
            .collect();
        let origins = [
            HarnessOrigin::Hand,
            HarnessOrigin::Inferred,
            HarnessOrigin::Inferred,
        ];
        let mut ids = Vec::new();
        for (r, o) in recs.iter_mut().zip(origins) {
            let Record::Pair(p) = r else { unreachable!() };
            p.verification = None;
            p.set_harness_origin(o);
            ids.push(p.id.clone());
        }
        let broke = || Some(("runs_clean", "crashed: illegal address".to_string()));
        let reports = vec![
            report(&ids[0], broke()),
            report(&ids[1], broke()),
            report(&ids[2], None),
        ];
        assert_eq!(apply_selfcheck(&mut recs, &reports), (1, 2, 1));
        let p = |i: usize| match &recs[i] {
            Record::Pair(p) => p.as_ref().clone(),
            _ => unreachable!(),
        };
        let hand = p(0);
        assert_eq!(
            hand.harness_origin.as_ref().unwrap().selfcheck_pass,
            Some(false)
        );
        assert!(
            hand.verification.is_none(),
            "a hand harness is only reported"
        );
        let bad = p(1);
        let v = bad.verification.unwrap();
        assert_eq!(v.status, Status::HarnessError);
        assert!(
            v.reason.starts_with(
                "the inferred harness failed its self-check (crash): runs_clean: crashed"
            ),
            "{}",
            v.reason
        );
        let good = p(2);
        assert_eq!(good.harness_origin.unwrap().selfcheck_pass, Some(true));
        assert!(good.verification.is_none());
    }

    /// A program `p/k.cu` launching `twice` (its host code in a temporary tree), the pair
    /// of `twice` with itself, and a capture index holding `m`, the kernel's launch.
    fn twice_program(
        m: impl FnOnce(crate::gpu::capture::Manifest) -> crate::gpu::capture::Manifest,
    ) -> (
        tempfile::TempDir,
        [SuiteSpec; 1],
        Pair,
        crate::capture::CaptureIndex,
    ) {
        use crate::capture::index::Entry;
        use crate::gpu::capture::manifest::{CapturedAlloc, CapturedParam};
        use crate::gpu::capture::Manifest;
        let src = "__global__ void twice(float *x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) x[i] = 2.0f * x[i]; }";
        let mut u =
            crate::record::KernelUnit::for_test("twice", &[("float *", "x"), ("int", "n")], src);
        u.path = "p/k.cu".into();
        // The program's host code, where inference reads the launch and its sizes.
        let d = tempfile::tempdir().unwrap();
        let host = format!(
            "{src}\nint main() {{\n  int n = 1024;\n  float *x;\n  cudaMalloc(&x, n * sizeof(float));\n  twice<<<(n + 255) / 256, 256>>>(x, n);\n  return 0;\n}}\n"
        );
        std::fs::create_dir_all(d.path().join("p")).unwrap();
        std::fs::write(d.path().join("p/k.cu"), host).unwrap();
        u.launch_sites = vec![crate::record::LaunchSite {
            path: "p/k.cu".into(),
            line: 6,
            kernel: "twice".into(),
            template_args: None,
            grid: "(n + 255) / 256".into(),
            block: "256".into(),
            shared_mem: None,
            stream: None,
            args: vec!["x".into(), "n".into()],
            definitions: Default::default(),
        }];
        let suites = [SuiteSpec {
            path: d.path().to_path_buf(),
            kind: SuiteKind::Generic,
            extractor: None,
            data: None,
        }];
        let pair = Pair::new(
            crate::record::Slow::natural(u.clone()),
            u,
            crate::record::PairRule::Name,
        );
        let m0 = Manifest::for_test(
            "twice",
            vec![
                CapturedParam::address(0, 0xa0_0000_0000, 0),
                CapturedParam::scalar(8, "00040000"),
            ],
            vec![CapturedAlloc::device("x0", "x1")],
        );
        let idx = crate::capture::CaptureIndex {
            root: "/cap".into(),
            manifests: vec![(
                Entry {
                    program: "p".into(),
                    path: "/cap/launches/p/run-0/m.toml".into(),
                    root: "/cap".into(),
                    suite: String::new(),
                },
                m(m0),
            )],
            unreadable: vec![],
        };
        (d, suites, pair, idx)
    }

    /// A pair whose fast kernel replays from a capture is chosen as captured, and gets its
    /// complete inferred harness beside it (verify's second opinion and fallback); an
    /// incomplete one is not given.
    #[test]
    fn a_captured_pair_keeps_its_origin_and_gets_its_inferred_harness_beside() {
        let (_d, suites, pair, idx) = twice_program(|m| m);
        let out = tempfile::tempdir().unwrap();
        // Without its launch site, inference leaves TODOs: no harness beside the capture.
        let mut unlaunched = pair.clone();
        unlaunched.fast.launch_sites.clear();
        if let Some(u) = unlaunched.slow.unit_mut() {
            u.launch_sites.clear();
        }
        for (pair, assume, beside) in [
            (&pair, None, true),
            (&pair, Some(4096), true),
            (&unlaunched, None, false),
        ] {
            let mut recs = vec![Record::Pair(Box::new(pair.clone()))];
            let s = HarnessSettings {
                assume_size: assume,
                ..HarnessSettings::default()
            };
            let c = choose(&mut recs, &suites, &[], out.path(), &s, Some(&idx));
            let Record::Pair(p) = &recs[0] else {
                unreachable!()
            };
            assert_eq!(
                p.harness_origin.as_ref().unwrap().origin,
                HarnessOrigin::Captured
            );
            assert_eq!(c.counts.get("captured"), Some(&1));
            assert_eq!(
                p.harness.is_some(),
                beside,
                "{assume:?}: {:?} {:?}",
                p.harness,
                c.counts
            );
            if beside {
                assert_eq!(c.counts.get("captured_with_inferred"), Some(&1));
                assert!(p
                    .harness
                    .as_ref()
                    .unwrap()
                    .ends_with(&format!("{}.toml", p.id)));
            }
        }
    }

    /// A fast kernel captured but not replayable (its launch was skipped): the pair is not
    /// captured, the build counts and names why, and inference answers as for any pair.
    #[test]
    fn a_refused_capture_is_counted_and_named_and_the_pair_is_inferred() {
        let (_d, suites, pair, idx) = twice_program(|mut m| {
            m.skipped = Some("allocation of 2 GiB over the budget of 1 GiB".into());
            m
        });
        let out = tempfile::tempdir().unwrap();
        let mut recs = vec![Record::Pair(Box::new(pair))];
        let c = choose(
            &mut recs,
            &suites,
            &[],
            out.path(),
            &HarnessSettings::default(),
            Some(&idx),
        );
        let Record::Pair(p) = &recs[0] else {
            unreachable!()
        };
        assert_ne!(
            p.harness_origin.as_ref().map(|h| h.origin),
            Some(HarnessOrigin::Captured)
        );
        assert_eq!(c.counts.get("capture_refused"), Some(&1), "{:?}", c.counts);
        assert_eq!(c.counts.get("captured"), None);
        assert!(
            c.notes.iter().any(
                |n| n.starts_with(&format!("pair {}: no captured harness", p.id))
                    && n.contains("over the budget")
            ),
            "{:?}",
            c.notes
        );
        assert_eq!(c.counts.get("inferred"), Some(&1), "{:?}", c.counts);
    }
}
