//! From a pair to a job: find its harness (the pair's own `harness` path, then the
//! `--harness-dir` folders, then the suite tree), settle what needs no GPU
//! (`missing_slow`, `no_harness`, `needs_host_loop`, `harness_error`), and resolve the
//! harness for the device the workers reported.

use super::engine::Source;
use super::pool::Hello;
use crate::harness::{DeviceProps, Harness, Resolved};
use crate::record::{KernelUnit, Pair, Status};
use std::path::{Path, PathBuf};

/// A pair's harness, found and parsed.
#[derive(Debug, Clone)]
pub struct Found {
    pub path: PathBuf,
    pub harness: Harness,
}

type Verdict = (Status, String);

/// Where a pair's harness may be, in order: `pair.harness` (relative to the input file's
/// folder, then to the working directory), then in each harness dir
/// `<benchmark>.toml`, `<benchmark>/harness.toml`, `benchmarks/<benchmark>/harness.toml`.
pub fn candidates(pair: &Pair, base: &Path, dirs: &[PathBuf]) -> Vec<PathBuf> {
    let mut v = Vec::new();
    if let Some(h) = &pair.harness {
        let p = PathBuf::from(h);
        if p.is_absolute() {
            v.push(p);
        } else {
            v.push(base.join(&p));
            v.push(p);
        }
    }
    let b = &pair.benchmark;
    for d in dirs {
        for rel in [
            format!("{b}.toml"),
            format!("{b}/harness.toml"),
            format!("benchmarks/{b}/harness.toml"),
        ] {
            v.push(d.join(rel));
        }
    }
    v
}

pub fn prepare(
    pair: &Pair,
    base: &Path,
    dirs: &[PathBuf],
    suite_root: Option<&Path>,
) -> Result<Found, Verdict> {
    prepare_with(pair, base, dirs, suite_root, |h| h)
}

/// [`prepare`], with the loaded harness adjusted before it is checked against the units
/// (the self-check's identity control gives the slow side the fast side's launches).
pub fn prepare_with(
    pair: &Pair,
    base: &Path,
    dirs: &[PathBuf],
    suite_root: Option<&Path>,
    adjust: impl FnOnce(Harness) -> Harness,
) -> Result<Found, Verdict> {
    if pair.slow.is_pending() {
        return Err((
            Status::MissingSlow,
            format!(
                "pair {} ({}) has no slow kernel yet (run synth)",
                pair.id, pair.kernel
            ),
        ));
    }
    // The pair's own path first; then the harness module's naming, which knows
    // variant- and kernel-specific files (`stencil.cuda_fermi.toml`) and the suite tree;
    // then the plain per-benchmark layouts.
    let own = candidates(pair, base, &[]);
    let located = own
        .into_iter()
        .find(|p| p.is_file())
        .or_else(|| {
            // Without an explicit suite root, a harness dir may itself be a suite
            // (`build` passes each suite's folder), with harnesses beside the kernels.
            dirs.iter()
                .find_map(|d| crate::harness::locate(pair, Some(d), suite_root.or(Some(d))))
                .or_else(|| crate::harness::locate(pair, None, suite_root))
        })
        .or_else(|| {
            candidates(pair, base, dirs)
                .into_iter()
                .find(|p| p.is_file())
        });
    let path = located.ok_or_else(|| {
        (
            Status::NoHarness,
            format!(
                "no harness for {}/{} (pair.harness {:?}; looked in {} harness dir(s){})",
                pair.benchmark,
                pair.kernel,
                pair.harness,
                dirs.len(),
                if suite_root.is_some() {
                    " and the suite tree"
                } else {
                    ""
                }
            ),
        )
    })?;
    let harness = crate::harness::load(&path)
        .and_then(|h| h.for_pair(pair.slow.unit(), &pair.fast))
        .map(adjust)
        .map_err(|e| (Status::HarnessError, e.to_string()))?;
    if let Some(why) = &harness.needs_host_loop {
        return Err((Status::NeedsHostLoop, format!("{}: {why}", path.display())));
    }
    // Units from extract know their parameters; check the harness binds them right.
    if pair.slow.unit().is_some_and(|u| !u.params.is_empty()) && !pair.fast.params.is_empty() {
        harness
            .check_against(pair.slow.unit(), &pair.fast)
            .map_err(|e| (Status::HarnessError, e.to_string()))?;
    }
    Ok(Found { path, harness })
}

fn source(u: &KernelUnit) -> Source {
    let name = Path::new(&u.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("{}.cu", u.kernel));
    Source {
        name,
        source: u.source.clone(),
        symbol: u.symbol.clone(),
    }
}

/// The device figures harness expressions may use, from the worker's hello.
pub fn device_props(hello: &Hello) -> DeviceProps {
    DeviceProps {
        sm_count: hello.props.sm_count as i64,
        max_threads_per_block: hello.props.max_threads_per_block as i64,
        warp_size: 32,
        l2_bytes: hello.props.l2_bytes as i64,
    }
}

/// The two sources and the harness resolved for this device, one entry per size set.
pub fn resolve(
    pair: &Pair,
    found: &Found,
    hello: &Hello,
) -> Result<(Source, Source, Vec<Resolved>), Verdict> {
    let slow = pair
        .slow
        .unit()
        .ok_or((Status::MissingSlow, "no slow kernel".to_string()))?;
    let dev = device_props(hello);
    let sets = found
        .harness
        .size_sets()
        .iter()
        .map(|s| found.harness.resolve(s, &dev))
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| (Status::HarnessError, e.to_string()))?;
    Ok((source(slow), source(&pair.fast), sets))
}
