//! The short table `extract` prints at the end: per benchmark, what was found.

use super::Extraction;
use std::collections::BTreeMap;
use std::fmt::Write;

#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Row {
    pub files: usize,
    pub kernels: usize,
    pub compiled_ok: usize,
    pub pairs: usize,
    pub identical: usize,
    pub unpaired: usize,
    pub skipped: usize,
}

/// Figures per benchmark (`""` is a generic tree's root).
pub fn rows(ex: &Extraction) -> BTreeMap<String, Row> {
    let mut rows: BTreeMap<String, Row> = BTreeMap::new();
    for (k, n) in &ex.kernel_files {
        rows.entry(k.benchmark.clone()).or_default().files += n;
    }
    for u in &ex.units {
        let r = rows.entry(u.benchmark.clone()).or_default();
        r.kernels += 1;
        r.compiled_ok += u.compile.as_ref().is_some_and(|c| c.ok) as usize;
    }
    for p in &ex.pairs {
        let r = rows.entry(p.benchmark.clone()).or_default();
        r.pairs += 1;
        r.identical += p.identical as usize;
    }
    // A refused progression candidate is counted on the progressions line, not here: its
    // kernel may well be paired otherwise.
    for u in ex.unpaired.iter().filter(|u| u.reason.code().is_none()) {
        rows.entry(u.benchmark.clone()).or_default().unpaired += 1;
    }
    for (b, n) in &ex.skipped_by_benchmark {
        rows.entry(b.clone()).or_default().skipped += n;
    }
    rows
}

/// Numbered-series progression candidates: (candidates, accepted, refused as
/// `not_a_progression`). Accepted ones are the pairs of the series rules.
pub fn progressions(ex: &Extraction) -> (usize, usize, usize) {
    use crate::record::PairRule;
    let accepted = ex
        .pairs
        .iter()
        .filter(|p| {
            matches!(
                p.rule,
                PairRule::ProgressionStep
                    | PairRule::ProgressionFromFirst
                    | PairRule::SiblingVariant
            )
        })
        .count();
    let refused = ex
        .unpaired
        .iter()
        .filter(|u| u.reason.code().is_some())
        .count();
    (accepted + refused, accepted, refused)
}

/// The table as text, with a total line.
pub fn table(ex: &Extraction) -> String {
    table_of(ex, None)
}

/// Benchmarks shown in the end-of-run summary before it is cut to the worst ones.
pub const SUMMARY_ROWS: usize = 25;

/// The summary for a terminal: with more than `limit` benchmarks, only the `limit`
/// worst (most kernels failing to compile, then skipped inputs, then most kernels) and
/// the total, with a line saying how many were left out.
pub fn table_of(ex: &Extraction, limit: Option<usize>) -> String {
    let all = rows(ex);
    let hidden = limit.map_or(0, |l| all.len().saturating_sub(l));
    let mut rows = all.clone();
    if hidden > 0 {
        let mut order: Vec<(&String, &Row)> = all.iter().collect();
        order.sort_by_key(|(name, r)| {
            (
                std::cmp::Reverse(r.kernels - r.compiled_ok.min(r.kernels)),
                std::cmp::Reverse(r.skipped),
                std::cmp::Reverse(r.kernels),
                (*name).clone(),
            )
        });
        let keep: std::collections::BTreeSet<&String> = order
            .iter()
            .take(limit.unwrap_or(0))
            .map(|(n, _)| *n)
            .collect();
        rows.retain(|k, _| keep.contains(k));
    }
    let mut total = Row::default();
    for r in all.values() {
        total.files += r.files;
        total.kernels += r.kernels;
        total.compiled_ok += r.compiled_ok;
        total.pairs += r.pairs;
        total.identical += r.identical;
        total.unpaired += r.unpaired;
        total.skipped += r.skipped;
    }
    let width = rows
        .keys()
        .map(|k| k.chars().count())
        .chain([9, 5])
        .max()
        .unwrap_or(9);
    let mut s = String::new();
    let compiled = |r: &Row| {
        if ex.units.iter().any(|u| u.compile.is_some()) {
            r.compiled_ok.to_string()
        } else {
            "-".to_string()
        }
    };
    let _ = writeln!(
        s,
        "{:<width$}  {:>5}  {:>7}  {:>8}  {:>5}  {:>9}  {:>8}  {:>7}",
        "benchmark", "files", "kernels", "compiled", "pairs", "identical", "unpaired", "skipped"
    );
    let mut line = |name: &str, r: &Row| {
        let _ = writeln!(
            s,
            "{:<width$}  {:>5}  {:>7}  {:>8}  {:>5}  {:>9}  {:>8}  {:>7}",
            name,
            r.files,
            r.kernels,
            compiled(r),
            r.pairs,
            r.identical,
            r.unpaired,
            r.skipped
        );
    };
    for (name, r) in &rows {
        line(if name.is_empty() { "(root)" } else { name }, r);
    }
    line("total", &total);
    if hidden > 0 {
        let _ = writeln!(
            s,
            "… {hidden} more benchmarks not shown (the {} with the most failures are)",
            rows.len()
        );
    }
    let (candidates, accepted, refused) = progressions(ex);
    if candidates > 0 {
        let _ = writeln!(
            s,
            "progressions (numbered series, sibling variants): {candidates} candidates, {accepted} accepted, {refused} refused as not_a_progression (different outputs; each named in the output)"
        );
    }
    let _ = writeln!(s, "suite: {}", ex.suite);
    s
}
