//! The dataset card: README.md with a Hugging Face YAML header (configs per format and split,
//! licence, size), counts per benchmark/technique/origin, verification devices, the speedup
//! distribution and plot, the filters' report and the source licences.

use super::filter::FilterReport;
use super::format::{Format, Sample};
use super::plot;
use super::split::Split;
use crate::record::Licence;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// What the card describes besides the samples.
pub struct CardInput<'a> {
    pub samples: &'a [Sample],
    pub formats: &'a [Format],
    pub report: &'a FilterReport,
    /// Verification status of every input pair (before any exclusion).
    pub input_status: &'a BTreeMap<String, usize>,
    /// Licences of the exported samples' source files, with how many samples use each.
    pub licences: &'a BTreeMap<LicenceKey, usize>,
    pub excluded_non_redistributable: bool,
    pub options_line: String,
    pub templates_overridden: &'a [String],
    /// Pairs by harness origin ([`harness_origins`]).
    pub harness_origins: &'a BTreeMap<String, OriginCount>,
    /// Input pairs whose status is `reversed`, by verification device.
    pub reversed_per_device: &'a BTreeMap<String, usize>,
    /// Whether they were exported (`--include-reversed`).
    pub include_reversed: bool,
    /// Synth candidates by what they undid ([`technique_yield`]).
    pub technique_yield: &'a BTreeMap<String, Yield>,
}

/// What became of the synth candidates that undid one technique (or `all`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Yield {
    /// Candidates asked (accepted or not).
    pub asked: usize,
    /// Accepted by synth's checks.
    pub accepted: usize,
    pub verified: usize,
    pub not_faster: usize,
    pub reversed: usize,
}

/// Synth candidates among the input pairs by what they undid: the candidate's technique,
/// or `all` (one answer undoing every technique, as `candidates = "all"` asks). Natural
/// pairs and pairs never sent to synth are not counted.
pub fn technique_yield<'p>(
    pairs: impl IntoIterator<Item = &'p crate::record::Pair>,
) -> BTreeMap<String, Yield> {
    use crate::record::{Slow, Status};
    let mut out: BTreeMap<String, Yield> = BTreeMap::new();
    for p in pairs {
        let Some(o) = p.slow.synth_outcome() else {
            continue;
        };
        let label = o.candidate.as_ref().map_or("all", |c| c.undo.label());
        let y = out.entry(label.to_string()).or_default();
        y.asked += 1;
        y.accepted += usize::from(matches!(p.slow, Slow::Synthesized { .. }));
        match p.verification.as_ref().map(|v| v.status) {
            Some(Status::Verified) => y.verified += 1,
            Some(Status::NotFaster) => y.not_faster += 1,
            Some(Status::Reversed) => y.reversed += 1,
            _ => {}
        }
    }
    out
}

/// How many input pairs ran under a harness of one origin, and how many of them became
/// samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OriginCount {
    pub pairs: usize,
    pub verified: usize,
    pub samples: usize,
}

/// Pairs by harness origin (`hand`, `inferred`, `llm`, or `none` where no harness was
/// recorded), from the records' `harness_origin`, with the verified ones and the samples
/// exported (by pair id).
pub fn harness_origins<'p>(
    pairs: impl IntoIterator<Item = &'p crate::record::Pair>,
    samples: &[Sample],
) -> BTreeMap<String, OriginCount> {
    let exported: BTreeSet<&str> = samples.iter().map(|s| s.metadata.id.as_str()).collect();
    let mut out: BTreeMap<String, OriginCount> = BTreeMap::new();
    for p in pairs {
        let origin = match p.harness_origin.as_ref().map(|h| h.origin) {
            Some(crate::record::HarnessOrigin::Hand) => "hand",
            Some(crate::record::HarnessOrigin::Captured) => "captured",
            Some(crate::record::HarnessOrigin::Inferred) => "inferred",
            Some(crate::record::HarnessOrigin::Llm) => "llm",
            None => "none",
        };
        let c = out.entry(origin.to_string()).or_default();
        c.pairs += 1;
        if p.verification
            .as_ref()
            .is_some_and(|v| v.status == crate::record::Status::Verified)
        {
            c.verified += 1;
        }
        if exported.contains(p.id.as_str()) {
            c.samples += 1;
        }
    }
    out
}

/// A licence as the card lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LicenceKey {
    pub id: String,
    pub redistributable: bool,
    pub copyright: Option<String>,
}

impl LicenceKey {
    pub fn of(l: Option<&Licence>) -> LicenceKey {
        match l {
            Some(l) => LicenceKey {
                id: l.id.clone(),
                redistributable: l.redistributable,
                copyright: l.copyright.clone(),
            },
            None => LicenceKey {
                id: "unknown".into(),
                redistributable: false,
                copyright: None,
            },
        }
    }
}

/// Hugging Face's licence identifiers for the SPDX ids we can map with confidence.
fn hf_licence(spdx: &str) -> Option<&'static str> {
    Some(match spdx {
        "MIT" => "mit",
        "Apache-2.0" => "apache-2.0",
        "BSD-2-Clause" => "bsd-2-clause",
        "BSD-3-Clause" => "bsd-3-clause",
        _ => return None,
    })
}

fn size_category(n: usize) -> &'static str {
    match n {
        0..1_000 => "n<1K",
        1_000..10_000 => "1K<n<10K",
        10_000..100_000 => "10K<n<100K",
        _ => "100K<n<1M",
    }
}

fn quantile(sorted: &[f64], q: f64) -> f64 {
    // Linear interpolation between closest ranks (the "type 7" rule numpy uses by default).
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// The SVG plot of the exported speedups.
pub fn plot(samples: &[Sample]) -> String {
    let s = speedups(samples);
    let title = if s.is_empty() {
        "Speedup distribution".to_string()
    } else {
        let mut sorted = s.clone();
        sorted.sort_by(f64::total_cmp);
        format!(
            "Speedup distribution (n = {}, median {:.2}×)",
            s.len(),
            quantile(&sorted, 0.5)
        )
    };
    plot::speedup_svg(&s, &title)
}

fn speedups(samples: &[Sample]) -> Vec<f64> {
    samples
        .iter()
        .filter_map(|s| s.metadata.speedup.as_ref().map(|x| x.median))
        .collect()
}

fn splits_of(samples: &[Sample]) -> Vec<Split> {
    [Split::Train, Split::Test]
        .into_iter()
        .filter(|sp| samples.iter().any(|s| s.metadata.split == sp.as_str()))
        .collect()
}

/// The card's text. Deterministic: every table is sorted, no dates.
pub fn render(c: &CardInput) -> String {
    let n = c.samples.len();
    let splits = splits_of(c.samples);
    let mut out = String::new();
    section_yaml_header(&mut out, c, n, &splits);
    section_summary(&mut out, c, n, &splits);
    section_per_benchmark(&mut out, c);
    section_techniques_and_origins(&mut out, c);
    section_verification(&mut out, c);
    section_speedups(&mut out, c);
    section_filters(&mut out, c);
    section_licences(&mut out, c);
    section_formats(&mut out, c);
    section_provenance(&mut out, c);
    out
}

/// The card's yaml header section.
fn section_yaml_header(out: &mut String, c: &CardInput, n: usize, splits: &[Split]) {
    let ids: BTreeSet<&str> = c.licences.keys().map(|k| k.id.as_str()).collect();
    let (licence, licence_name) = match (ids.len(), ids.iter().next().and_then(|i| hf_licence(i))) {
        (1, Some(hf)) => (hf.to_string(), None),
        _ => ("other".to_string(), Some("per-source-file (see Licences)")),
    };
    out.push_str("---\n");
    out.push_str("pretty_name: kernelpair CUDA slow/fast kernel pairs\n");
    let _ = writeln!(out, "license: {licence}");
    if let Some(name) = licence_name {
        let _ = writeln!(out, "license_name: {name}");
    }
    out.push_str(
        "language:\n- en\ntags:\n- cuda\n- code\n- gpu\n- kernel-optimization\n- kernelpair\n",
    );
    out.push_str("task_categories:\n- text-generation\n");
    let _ = writeln!(out, "size_categories:\n- {}", size_category(n));
    if !splits.is_empty() {
        out.push_str("configs:\n");
        for (i, f) in c.formats.iter().enumerate() {
            let _ = writeln!(out, "- config_name: {}", f.name());
            if i == 0 {
                out.push_str("  default: true\n");
            }
            out.push_str("  data_files:\n");
            for sp in splits {
                let _ = writeln!(
                    out,
                    "  - split: {}\n    path: {}/{}.jsonl",
                    sp.as_str(),
                    f.name(),
                    sp.as_str()
                );
            }
        }
    }
    out.push_str("---\n\n");
}

/// The card's summary section.
fn section_summary(out: &mut String, c: &CardInput, n: usize, splits: &[Split]) {
    out.push_str("# kernelpair: slow/fast CUDA kernel pairs\n\n");
    out.push_str(
        "Each sample pairs a naive (\"slow\") CUDA kernel with an optimized (\"fast\") kernel that \
         computes the same result. The user message shows the slow kernel; the answer is the fast \
         one. Pairs come from benchmark suites (`natural`) or have a slow kernel written by a \
         language model (`synthesized`); `metadata.verified` says whether both kernels were run \
         on a GPU, agreed on seeded inputs at every size set, and the fast one was measurably \
         faster.\n\n",
    );
    let _ = writeln!(out, "{n} samples.\n");
    out.push_str("| split | samples | benchmarks |\n| --- | ---: | ---: |\n");
    for sp in splits {
        let in_split: Vec<&Sample> = c
            .samples
            .iter()
            .filter(|s| s.metadata.split == sp.as_str())
            .collect();
        let benches: BTreeSet<(&str, &str)> = in_split
            .iter()
            .map(|s| (s.metadata.suite.as_str(), s.metadata.benchmark.as_str()))
            .collect();
        let _ = writeln!(
            out,
            "| {} | {} | {} |",
            sp.as_str(),
            in_split.len(),
            benches.len()
        );
    }
    out.push_str("\nSplits are grouped by benchmark: no benchmark has kernels in both splits.\n\n");
}

/// The card's per benchmark section.
fn section_per_benchmark(out: &mut String, c: &CardInput) {
    out.push_str("## Benchmarks\n\n| suite | benchmark | split | samples | natural | synthesized | median speedup |\n| --- | --- | --- | ---: | ---: | ---: | ---: |\n");
    let mut per_bench: BTreeMap<(&str, &str), Vec<&Sample>> = BTreeMap::new();
    for s in c.samples {
        per_bench
            .entry((&s.metadata.suite, &s.metadata.benchmark))
            .or_default()
            .push(s);
    }
    for ((suite, bench), ss) in &per_bench {
        let natural = ss.iter().filter(|s| s.metadata.origin == "natural").count();
        let synth = ss
            .iter()
            .filter(|s| s.metadata.origin == "synthesized")
            .count();
        let mut sp: Vec<f64> = ss
            .iter()
            .filter_map(|s| s.metadata.speedup.as_ref().map(|x| x.median))
            .collect();
        sp.sort_by(f64::total_cmp);
        let med = if sp.is_empty() {
            "—".to_string()
        } else {
            format!("{:.2}×", quantile(&sp, 0.5))
        };
        let _ = writeln!(
            out,
            "| {suite} | {bench} | {} | {} | {natural} | {synth} | {med} |",
            ss[0].metadata.split,
            ss.len()
        );
    }
}

/// The card's techniques and origins section.
fn section_techniques_and_origins(out: &mut String, c: &CardInput) {
    out.push_str("\n## Techniques\n\nOptimization techniques found in the fast kernel and not in the slow one (a sample can have several).\n\n| technique | samples |\n| --- | ---: |\n");
    let mut tech: BTreeMap<&str, usize> = BTreeMap::new();
    for s in c.samples {
        for t in &s.metadata.techniques {
            *tech.entry(t).or_default() += 1;
        }
    }
    let none = c
        .samples
        .iter()
        .filter(|s| s.metadata.techniques.is_empty())
        .count();
    for (t, k) in &tech {
        let _ = writeln!(out, "| {t} | {k} |");
    }
    if none > 0 {
        let _ = writeln!(out, "| (none recorded) | {none} |");
    }
    out.push_str("\n## Origins\n\n| origin | model | samples |\n| --- | --- | ---: |\n");
    let mut origins: BTreeMap<(&str, &str), usize> = BTreeMap::new();
    for s in c.samples {
        *origins
            .entry((
                &s.metadata.origin,
                s.metadata.model.as_deref().unwrap_or("—"),
            ))
            .or_default() += 1;
    }
    for ((o, m), k) in &origins {
        let _ = writeln!(out, "| {o} | {m} | {k} |");
    }
}

/// The card's verification section.
fn section_verification(out: &mut String, c: &CardInput) {
    out.push_str("\n## Verification\n\n");
    let mut devices: BTreeMap<(&str, &str, &str, &str), usize> = BTreeMap::new();
    for s in c.samples {
        if let Some(d) = &s.metadata.device {
            *devices
                .entry((
                    &d.name,
                    &d.compute_capability,
                    &d.driver_version,
                    &d.cuda_version,
                ))
                .or_default() += 1;
        }
    }
    if devices.is_empty() {
        out.push_str("No exported sample carries a verification device.\n\n");
    } else {
        out.push_str("| device | compute capability | driver | CUDA | samples |\n| --- | --- | --- | --- | ---: |\n");
        for ((name, cc, drv, cuda), k) in &devices {
            let _ = writeln!(out, "| {name} | {cc} | {drv} | {cuda} | {k} |");
        }
        out.push('\n');
    }
    let unverified = c.samples.iter().filter(|s| !s.metadata.verified).count();
    if unverified > 0 {
        let _ = writeln!(
            out,
            "**{unverified} samples are not verified** (exported with `--include-unverified`; \
             `metadata.verified` is false and `metadata.status` says why).\n"
        );
    }
    let size_dependent = c
        .samples
        .iter()
        .filter(|s| s.metadata.flags.iter().any(|f| f == "size_dependent"))
        .count();
    let suspect = c
        .samples
        .iter()
        .filter(|s| s.metadata.flags.iter().any(|f| f == "suspect_slow"))
        .count();
    let _ = writeln!(
        out,
        "**{size_dependent} samples are `size_dependent`**: verified at their main size set but \
         slower than the slow kernel at another (`metadata.flags`; the sizes are named in \
         `metadata.description`; `--exclude-size-dependent` leaves them out).\n"
    );
    if suspect > 0 {
        let _ = writeln!(
            out,
            "**{suspect} samples are `suspect_slow`**: the slow kernel takes far longer than its \
             memory traffic needs while the fast one runs near the bandwidth; worth a look.\n"
        );
    }
    let disagree = c
        .samples
        .iter()
        .filter(|s| s.metadata.flags.iter().any(|f| f == "harness_disagreement"))
        .count();
    if disagree > 0 {
        let _ = writeln!(
            out,
            "**{disagree} samples are `harness_disagreement`**: verified under their captured \
             launch, while the inferred or LLM-completed harness that also covers them gave \
             another status (`verification.evidence.second_opinion` in the records).\n"
        );
    }
    section_reversed(out, c);
    section_technique_yield(out, c);
    out.push_str("Status of every pair in the input, before filtering:\n\n| status | pairs |\n| --- | ---: |\n");
    for (st, k) in c.input_status {
        let _ = writeln!(out, "| {st} | {k} |");
    }
    out.push_str("\nHarness each input pair ran under, by origin: `hand` (written by a person), `captured` (a launch of the real program, recorded by `kernelpair capture` and replayed), `inferred` (`kernelpair harness infer`, from the host code), `llm` (completed by a language model), `none` (no harness recorded):\n\n| harness origin | pairs | verified | samples |\n| --- | ---: | ---: | ---: |\n");
    for (o, k) in c.harness_origins {
        let _ = writeln!(
            out,
            "| {o} | {} | {} | {} |",
            k.pairs, k.verified, k.samples
        );
    }
}

/// Yield per technique: which de-optimizations still pay on the verification device.
fn section_technique_yield(out: &mut String, c: &CardInput) {
    if c.technique_yield.is_empty() {
        out.push_str("No input pair has a synthesized slow kernel.\n\n");
        return;
    }
    out.push_str("Synthesized slow kernels by the technique their candidate undid (`all`: every technique at once; `--candidates per-technique` asks one per technique too): asked, accepted by synth's checks, and the verdicts. A technique whose candidates come back `reversed` no longer pays on this device.\n\n| undid | asked | accepted | verified | not faster | reversed |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (t, y) in c.technique_yield {
        let _ = writeln!(
            out,
            "| {t} | {} | {} | {} | {} | {} |",
            y.asked, y.accepted, y.verified, y.not_faster, y.reversed
        );
    }
    out.push('\n');
}

/// Reversed pairs: how many, per device, and whether they are in the samples. Stated
/// whether or not they were exported: they say which optimizations lose on a device.
fn section_reversed(out: &mut String, c: &CardInput) {
    let n: usize = c.reversed_per_device.values().sum();
    let reversed = |s: &&Sample| s.metadata.origin == "reversed";
    let exported = c.samples.iter().filter(reversed).count();
    let what = match c.include_reversed {
        true => format!(
            "Exported the other way round (`--include-reversed`): {exported} samples whose slow \
             side is the original and whose fast side is the plain version (`metadata.origin` \
             `reversed`)."
        ),
        false => "Not exported (`--include-reversed` exports them the other way round).".into(),
    };
    let _ = writeln!(
        out,
        "**{n} pairs are `reversed`**: the synthesized plain version agreed with the original \
         and was faster than it (the plain version's speedup over the original has a 95% CI \
         low at or above the min speedup). {what}\n"
    );
    if n > 0 {
        out.push_str("| device | reversed pairs | exported |\n| --- | ---: | ---: |\n");
        for (device, k) in c.reversed_per_device {
            let on_device = |s: &&Sample| {
                s.metadata
                    .device
                    .as_ref()
                    .map_or("unknown", |d| d.name.as_str())
                    == device
            };
            let e = c.samples.iter().filter(reversed).filter(on_device).count();
            let _ = writeln!(out, "| {device} | {k} | {e} |");
        }
        out.push('\n');
    }
}

/// The card's speedups section.
fn section_speedups(out: &mut String, c: &CardInput) {
    out.push_str("\n## Speedups\n\nSpeedup = median time of the slow kernel / median time of the fast kernel at the largest size set, on the verification device.\n\n![Speedup distribution](speedup.svg)\n\n");
    let mut sp = speedups(c.samples);
    sp.sort_by(f64::total_cmp);
    if sp.is_empty() {
        out.push_str("No exported sample has a measured speedup.\n");
    } else {
        let geo = (sp.iter().map(|x| x.ln()).sum::<f64>() / sp.len() as f64).exp();
        out.push_str("| statistic | value |\n| --- | ---: |\n");
        let _ = writeln!(out, "| samples with a speedup | {} |", sp.len());
        for (name, q) in [
            ("min", 0.0),
            ("25th percentile", 0.25),
            ("median", 0.5),
            ("75th percentile", 0.75),
            ("max", 1.0),
        ] {
            let _ = writeln!(out, "| {name} | {:.2}× |", quantile(&sp, q));
        }
        let _ = writeln!(out, "| geometric mean | {geo:.2}× |");
        out.push_str("\n| speedup | samples |\n| --- | ---: |\n");
        for (label, k) in plot::bin_labels().iter().zip(plot::histogram(&sp)) {
            if k > 0 {
                let _ = writeln!(out, "| {label}× | {k} |");
            }
        }
    }
}

/// The card's filters section.
fn section_filters(out: &mut String, c: &CardInput) {
    let r = c.report;
    let exact = r.duplicates.iter().filter(|d| d.kind == "exact").count();
    let near = r.duplicates.len() - exact;
    out.push_str("\n## Filters\n\n");
    let _ = writeln!(out, "From {} input pairs:\n", r.input_pairs);
    out.push_str("| left out | pairs |\n| --- | ---: |\n");
    for (why, k) in &r.excluded {
        let _ = writeln!(out, "| {why} | {k} |");
    }
    let _ = writeln!(
        out,
        "| exact duplicate (same normalized tokens) | {exact} |"
    );
    let _ = writeln!(
        out,
        "| near duplicate (MinHash Jaccard ≥ {}) | {near} |",
        r.near_duplicate_threshold
    );
    let _ = writeln!(
        out,
        "| longer than {} tokens | {} |",
        r.max_tokens,
        r.too_long.len()
    );
    let _ = writeln!(out, "| **kept** | **{}** |", r.kept);
    let _ = writeln!(
        out,
        "\nTokens (system + user + assistant text) counted with {}.",
        r.tokenizer
    );
    if let Some(note) = &r.tokenizer_note {
        let _ = writeln!(out, "Note: {note}.");
    }
    out.push_str("Every removed pair is listed with its reason in `filter_report.json`.\n");
}

/// The card's licences section.
fn section_licences(out: &mut String, c: &CardInput) {
    out.push_str("\n## Licences\n\nThe kernels keep the licences of the files they come from; synthesized slow kernels are derived from the fast kernel's file.\n\n| licence | redistributable | copyright | samples |\n| --- | --- | --- | ---: |\n");
    for (k, count) in c.licences {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {count} |",
            k.id,
            if k.redistributable { "yes" } else { "no" },
            k.copyright.as_deref().unwrap_or("—")
        );
    }
    let not_redist: usize = c
        .licences
        .iter()
        .filter(|(k, _)| !k.redistributable)
        .map(|(_, v)| v)
        .sum();
    if c.excluded_non_redistributable {
        out.push_str("\nPairs with a source file whose licence does not allow redistribution were left out (`--exclude-non-redistributable`).\n");
    } else if not_redist > 0 {
        let _ = writeln!(
            out,
            "\n**Warning**: {not_redist} samples (counted per licence) come from files whose licence does not clearly allow redistribution. Export with `--exclude-non-redistributable` before publishing."
        );
    }
}

/// The card's formats section.
fn section_formats(out: &mut String, c: &CardInput) {
    out.push_str("\n## Formats\n\nOne folder per format, one JSON object per line, each with `id` and the same `metadata` object (ids, suite, benchmark, kernel files and licences, origin, techniques, verification status, speedup per size set, device, tool versions, token count).\n\n");
    for f in c.formats {
        let line = match f {
            Format::Chat => "`chat/`: `messages` = system, user, assistant (`role`/`content`).",
            Format::PromptCompletion => "`prompt-completion/`: `prompt` (system text, a blank line, user text) and `completion` (the answer).",
            Format::Preference => "`preference/`: `prompt` (system and user messages), `chosen` (the answer with the fast kernel) and `rejected` (the same answer with the slow kernel), for DPO and reward models.",
            Format::Sharegpt => "`sharegpt/`: `conversations` = `from` system / human / gpt with `value`.",
        };
        let _ = writeln!(out, "- {line}");
    }
}

/// The card's provenance section.
fn section_provenance(out: &mut String, c: &CardInput) {
    out.push_str("\n## How this export was made\n\n");
    let _ = writeln!(
        out,
        "Written by kernelpair {} with: {}.",
        env!("CARGO_PKG_VERSION"),
        c.options_line
    );
    if !c.templates_overridden.is_empty() {
        let _ = writeln!(
            out,
            "Custom templates replaced: {}.",
            c.templates_overridden.join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_interpolate_like_numpy() {
        let v = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile(&v, 0.0), 1.0);
        assert_eq!(quantile(&v, 0.5), 2.5);
        assert_eq!(quantile(&v, 0.25), 1.75);
        assert_eq!(quantile(&v, 1.0), 4.0);
        assert_eq!(quantile(&[7.0], 0.5), 7.0);
    }

    #[test]
    fn licence_header_is_specific_only_when_one_known_licence() {
        assert_eq!(hf_licence("MIT"), Some("mit"));
        assert_eq!(hf_licence("NCSA"), None);
        assert_eq!(size_category(999), "n<1K");
        assert_eq!(size_category(1000), "1K<n<10K");
    }
}
