//! From a pair to a job: find its harness ([`crate::harness::prepare`]: the pair's own
//! `harness` path, then the `--harness-dir` folders, then the suite tree), settle what needs
//! no GPU (`missing_slow`, `no_harness`, `needs_host_loop`, `harness_error`), and resolve the
//! harness for the device the workers reported.

use super::engine::Source;
use super::pool::Hello;
/// Finding a pair's harness needs no GPU: it lives in the harness module.
pub use crate::harness::{prepare, prepare_with, Found};
use crate::harness::{DeviceProps, Resolved};

type Verdict = (Status, String);
use crate::record::{KernelUnit, Pair, Status};
use std::path::Path;

/// A unit as the worker compiles it.
pub fn source(u: &KernelUnit) -> Source {
    let name = Path::new(&u.path)
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| format!("{}.cu", u.kernel));
    Source {
        name,
        source: u.source.clone(),
        symbol: u.symbol.clone(),
        flags: u.build_flags.clone(),
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
