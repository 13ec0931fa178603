//! From a pair to a job: find its harness (the pair's own `harness` path, then the
//! `--harness-dir` folders), settle what needs no GPU, and resolve the harness into
//! a [`Plan`] for the device the workers reported.

use super::engine::Source;
use super::plan::Plan;
use super::pool::Hello;
use crate::record::{KernelUnit, Pair, Status};
use std::path::{Path, PathBuf};

/// A pair's harness, found and read.
#[derive(Debug, Clone)]
pub struct Found {
    pub path: PathBuf,
    pub harness: Harness,
}

#[derive(Debug, Clone)]
pub enum Harness {
    /// A resolved plan (`*.json`): concrete sizes, no expressions.
    Plan(Box<Plan>),
    /// A harness TOML file, resolved per device.
    Toml(String),
}

type Verdict = (Status, String);

/// Where a pair's harness may be, in order.
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
            format!("{b}.plan.json"),
            format!("{b}/harness.toml"),
            format!("{b}/harness.plan.json"),
            format!("benchmarks/{b}/harness.toml"),
            format!("benchmarks/{b}/harness.plan.json"),
        ] {
            v.push(d.join(rel));
        }
    }
    v
}

pub fn prepare(pair: &Pair, base: &Path, dirs: &[PathBuf]) -> Result<Found, Verdict> {
    if pair.slow.is_none() {
        return Err((
            Status::MissingSlow,
            format!(
                "pair {} ({}) has no slow kernel yet (run synth)",
                pair.id, pair.kernel
            ),
        ));
    }
    let path = candidates(pair, base, dirs)
        .into_iter()
        .find(|p| p.is_file())
        .ok_or_else(|| {
            (
                Status::NoHarness,
                format!(
                    "no harness for {}/{} (pair.harness {:?}; looked in {} harness dir(s))",
                    pair.benchmark,
                    pair.kernel,
                    pair.harness,
                    dirs.len()
                ),
            )
        })?;
    let text = std::fs::read_to_string(&path)
        .map_err(|e| (Status::HarnessError, format!("{}: {e}", path.display())))?;
    let harness = if path.extension().is_some_and(|e| e == "json") {
        let plan: Plan = serde_json::from_str(&text)
            .map_err(|e| (Status::HarnessError, format!("{}: {e}", path.display())))?;
        if let Some(why) = &plan.needs_host_loop {
            return Err((Status::NeedsHostLoop, format!("{}: {why}", path.display())));
        }
        Harness::Plan(Box::new(plan))
    } else {
        Harness::Toml(text)
    };
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

/// The two sources and the plan for this device.
pub fn plan(pair: &Pair, found: &Found, hello: &Hello) -> Result<(Source, Source, Plan), Verdict> {
    let slow = pair
        .slow
        .as_ref()
        .ok_or((Status::MissingSlow, "no slow kernel".to_string()))?;
    let plan = match &found.harness {
        Harness::Plan(p) => (**p).clone(),
        Harness::Toml(_) => {
            let _ = hello;
            return Err((
                Status::HarnessError,
                format!(
                    "{}: TOML harnesses are resolved by the harness module, not yet wired in",
                    found.path.display()
                ),
            ));
        }
    };
    Ok((source(slow), source(&pair.fast), plan))
}
