//! `build`'s capture step: each suite whose description has a `[capture]` recipe (llm.c,
//! cuda-samples, a user's `extractors/*.toml`) has its own programs (by default those
//! holding a pair the build can verify) built and run once under the launch recorder
//! (`kernelpair capture`), into `<output>/captures/<suite>/`. Verify then
//! runs a pair without a hand-written harness under its fast kernel's captured launch
//! (hand > captured > inferred > llm), and that replay must reproduce what the program
//! wrote before any timing. Only the trees given to `build` are run; never a contributed
//! folder or an LLM's output. Each suite's capture keeps its own journal
//! (`programs.jsonl`), so a killed build recaptures at most the programs in flight.

use super::config::{CaptureMode, CapturePrograms, CaptureSettings, SuiteKind, SuiteSpec};
use crate::capture::{CaptureArgs, Known, ProgramStatus};
use crate::record::Record;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The capture folders, under the build's output folder (one subfolder per suite).
pub const CAPTURE_DIR: &str = "captures";

/// What the capture step did, for the build table.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Captured {
    /// Suites captured (this run or an earlier one).
    pub suites: usize,
    pub counts: BTreeMap<String, usize>,
    pub notes: Vec<String>,
    /// Capture could not run here (the reason is in the notes).
    pub skipped: bool,
    /// No suite has a `[capture]` recipe.
    pub no_recipe: bool,
}

/// Why capture cannot run on this machine, or None.
pub fn unavailable() -> Option<String> {
    if let crate::gpu::Probe::NoGpu(why) = crate::gpu::probe() {
        return Some(why);
    }
    if crate::capture::nvcc_dir().is_none() {
        return Some("no nvcc on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin".into());
    }
    if let Err(why) = crate::capture::locate_inject(None) {
        return Some(why);
    }
    crate::capture::locate_cupti(None).err()
}

/// The suite's description: its extractor file, else the built-in one for its kind, else
/// the one its tree is detected as.
fn desc_of(s: &SuiteSpec) -> Option<crate::suite::SuiteDesc> {
    use crate::suite::SuiteDesc;
    if let Some(e) = &s.extractor {
        return SuiteDesc::load(e).ok();
    }
    let kind = match s.kind {
        SuiteKind::Parboil => "parboil",
        SuiteKind::Rodinia => "rodinia",
        SuiteKind::Generic => "generic",
        SuiteKind::Records => return None,
        SuiteKind::Auto => {
            let files: Vec<String> = crate::suite::walk::walk(&s.path).files;
            return crate::suite::desc::detect(&files).ok();
        }
    };
    SuiteDesc::builtin(kind).ok()
}

/// A subfolder name for a suite: its description's name (`llm-c`), which is also the
/// `suite` of its units, so the capture index serves each suite's units only.
fn folder_name(desc: &crate::suite::SuiteDesc) -> String {
    desc.name
        .chars()
        .map(
            |c| match c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                true => c,
                false => '_',
            },
        )
        .collect()
}

/// The `__constant__`/`__device__` names the suite's units use (the recorder snapshots
/// them at each launch), from the records extract already made.
fn globals_of(records: &[Record], suite: &str) -> Vec<String> {
    crate::capture::globals_of(records.iter().filter_map(|r| match r {
        Record::Unit(u) if u.suite == suite => Some(&**u),
        _ => None,
    }))
}

/// The files of the fast kernels of `suite`'s pairs this build can verify: a slow side
/// (natural, or synthesized by now) and not identical. `[capture] programs = "paired"`
/// captures only the programs holding one of them.
fn paired_files(records: &[Record], suite: &str) -> Vec<String> {
    let files: std::collections::BTreeSet<String> = records
        .iter()
        .filter_map(|r| match r {
            Record::Pair(p) if p.suite == suite && !p.identical && p.slow.unit().is_some() => {
                Some(p.fast.path.clone())
            }
            _ => None,
        })
        .collect();
    files.into_iter().collect()
}

/// Run the capture step (see the module doc). `out`: the build's output folder.
pub fn capture(
    suites: &[SuiteSpec],
    records: &[Record],
    s: &CaptureSettings,
    out: &Path,
) -> Captured {
    let mut c = Captured::default();
    if s.mode == CaptureMode::Off {
        c.skipped = true;
        c.notes.push("off ([capture] mode = \"off\")".into());
        return c;
    }
    let with_recipe: Vec<(&SuiteSpec, crate::suite::SuiteDesc)> = suites
        .iter()
        .filter(|x| x.kind != SuiteKind::Records && x.path.is_dir())
        .filter_map(|x| desc_of(x).map(|d| (x, d)))
        .filter(|(_, d)| d.capture.is_some())
        .collect();
    if with_recipe.is_empty() {
        c.skipped = true;
        c.no_recipe = true;
        c.notes
            .push("no suite has a [capture] recipe (extractors/*.toml)".into());
        return c;
    }
    if let Some(why) = unavailable() {
        c.skipped = true;
        let names: Vec<&str> = with_recipe.iter().map(|(_, d)| d.name.as_str()).collect();
        c.notes.push(format!(
            "not run for {} ({why}); pairs use hand-written or inferred harnesses",
            names.join(", ")
        ));
        return c;
    }
    let list: Vec<(SuiteSpec, crate::suite::SuiteDesc)> = with_recipe
        .into_iter()
        .map(|(spec, desc)| (spec.clone(), desc))
        .collect();
    capture_side_by_side(&list, records, s, out, None, c)
}

/// Capture each suite's programs with its recipe, the suites side by side, sharing the
/// GPU's run slots (`runs_per_gpu` in all): one suite's builds and CPU-bound runs (llm.c's
/// references) leave slots that another's runs fill, so the step takes about its longest
/// suite rather than the sum. `inject`: the injection library (default: beside the binary).
pub fn capture_side_by_side(
    with_recipe: &[(SuiteSpec, crate::suite::SuiteDesc)],
    records: &[Record],
    s: &CaptureSettings,
    out: &Path,
    inject: Option<&Path>,
    mut c: Captured,
) -> Captured {
    let slots = crate::capture::run::GpuSlots::new(s.runs_per_gpu);
    let side_by_side = with_recipe.len() > 1;
    let suite_dir = |desc: &crate::suite::SuiteDesc| out.join(CAPTURE_DIR).join(folder_name(desc));
    let results: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = with_recipe
            .iter()
            .map(|(spec, desc)| {
                let slots = &slots;
                let dir = suite_dir(desc);
                scope.spawn(move || {
                    let args = CaptureArgs {
                        root: spec.path.clone(),
                        out: dir,
                        suite: desc.name.clone(),
                        only: vec![],
                        holding: match s.programs {
                            CapturePrograms::Paired => Some(paired_files(records, &desc.name)),
                            CapturePrograms::All => None,
                        },
                        data: spec.data.clone().or_else(|| s.data.clone()),
                        first: s.first,
                        max_bytes: s.max_bytes,
                        timeout_s: s.timeout_s,
                        jobs: None,
                        runs_per_gpu: s.runs_per_gpu,
                        quiet_launches: crate::capture::QUIET_LAUNCHES,
                        quiet_seconds: crate::capture::QUIET_SECONDS,
                        inject: inject.map(Path::to_path_buf),
                        cupti: None,
                        fresh: false,
                        programs: vec![],
                        build: None,
                        run: vec![],
                        each: vec![],
                    };
                    let known = Known {
                        globals: globals_of(records, &desc.name),
                        desc: Some(desc.clone()),
                    };
                    let label = match side_by_side {
                        true => format!("capture {}", desc.name),
                        false => "capture".to_string(),
                    };
                    crate::capture::capture_tree_sharing(&args, Some(known), slots, &label)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(anyhow::anyhow!("this suite's capture panicked")))
            })
            .collect()
    });
    for ((spec, desc), got) in with_recipe.iter().zip(results) {
        let (path, dir) = (&spec.path, suite_dir(desc));
        match got {
            Ok(programs) => {
                c.suites += 1;
                let mut latest: BTreeMap<&str, ProgramStatus> = BTreeMap::new();
                for p in &programs {
                    latest.insert(p.program.as_str(), p.status);
                }
                for st in latest.values() {
                    *c.counts
                        .entry(format!("programs_{}", st.name()))
                        .or_default() += 1;
                }
                let idx = crate::capture::CaptureIndex::open(&dir);
                *c.counts.entry("kernels_captured".into()).or_default() +=
                    idx.kernels_captured().len();
            }
            Err(e) => c.notes.push(format!("{}: {e:#}", path.display())),
        }
    }
    c
}

/// A key for what the capture folders hold (each suite's programs: outcome, launches and
/// the data they ran with, not their run times), so verify's journal entry and chunks
/// change when a capture does and survive a program run again to the same end; empty when
/// nothing was captured.
pub fn state_key(out: &Path) -> String {
    let dir = out.join(CAPTURE_DIR);
    let mut subs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .into_iter()
        .flatten()
        .filter_map(|e| e.ok())
        .map(|e| e.path())
        .collect();
    subs.sort();
    let parts: Vec<String> = subs
        .iter()
        .filter(|d| crate::capture::journal_path(d).is_file())
        .map(|d| {
            // What the harnesses depend on: each program's outcome and launches, and the
            // data it ran with; not its run times, which a program run again changes.
            let mut recs: Vec<String> = crate::capture::read_journal(d)
                .iter()
                .map(|r| {
                    format!(
                        "{}|{}|{}|{}",
                        r.program,
                        r.status.name(),
                        r.launches,
                        r.data.as_deref().unwrap_or("")
                    )
                })
                .collect();
            recs.sort();
            format!(
                "{}:{}",
                d.file_name().unwrap_or_default().to_string_lossy(),
                recs.join(";")
            )
        })
        .collect();
    match parts.is_empty() {
        true => String::new(),
        false => super::journal::key(&parts.iter().map(String::as_str).collect::<Vec<_>>()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::capture::{ProgramRecord, ProgramStatus};

    fn write(out: &Path, recs: &[ProgramRecord]) {
        let d = out.join(CAPTURE_DIR).join("suite");
        std::fs::create_dir_all(&d).unwrap();
        let text: String = recs
            .iter()
            .map(|r| serde_json::to_string(r).unwrap() + "\n")
            .collect();
        std::fs::write(crate::capture::journal_path(&d), text).unwrap();
    }

    /// Verify's chunks stay valid when a program is run again to the same end (its run
    /// times differ); they are redone when what was captured changes.
    #[test]
    fn the_capture_key_follows_what_was_captured_not_how_long_it_took() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(state_key(t.path()), "", "nothing captured");
        let mut a = ProgramRecord::new("apps/bfs");
        a.status = ProgramStatus::Captured;
        a.launches = 2;
        a.seconds = 1.5;
        write(t.path(), std::slice::from_ref(&a));
        let k = state_key(t.path());
        assert!(!k.is_empty());
        let mut again = a.clone();
        again.seconds = 9.25;
        again.build_seconds = 3.0;
        // The journal appends: the program's later record is the one that counts.
        write(t.path(), &[a.clone(), again]);
        assert_eq!(state_key(t.path()), k, "run times changed the key");
        let mut more = a.clone();
        more.launches = 3;
        write(t.path(), &[more]);
        assert_ne!(state_key(t.path()), k);
        let mut data = a.clone();
        data.data = Some("/data".into());
        write(t.path(), &[data]);
        assert_ne!(state_key(t.path()), k);
    }
}
