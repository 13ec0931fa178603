//! Build the real Parboil pairs the committed harnesses describe, for the device
//! benchmark, without waiting on `extract`: for each `extractors/parboil/<bench>[.<x>].toml`
//! the slow kernel comes from `src/cuda_base`, the fast one from `src/<x>` when `<x>` is a
//! variant folder (stencil.cuda_fermi) and `src/cuda` otherwise; each is isolated with
//! `crate::cuda` over its variant folder, exactly as extract does.
//!
//! Usage: parboil-pairs <PARBOIL_ROOT> <HARNESS_DIR> <OUT.jsonl>
//! The output holds Parboil source: keep it out of the repository (carry/ is ignored).

use kernelpair::record::{content_id, KernelUnit, Origin, Pair, Provenance, Record};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn variant_files(root: &Path, rel_dir: &str) -> BTreeMap<String, kernelpair::cuda::FileIndex> {
    let mut files = BTreeMap::new();
    let Ok(rd) = std::fs::read_dir(root.join(rel_dir)) else {
        return files;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if [".cu", ".cuh", ".h"].iter().any(|x| name.ends_with(x)) {
            if let Ok(text) = std::fs::read_to_string(e.path()) {
                let rel = format!("{rel_dir}/{name}");
                files.insert(rel.clone(), kernelpair::cuda::index_file(&rel, &text));
            }
        }
    }
    files
}

fn unit(root: &Path, bench: &str, variant: &str, kernel: &str) -> Result<KernelUnit, String> {
    let dir = format!("benchmarks/{bench}/src/{variant}");
    let files = variant_files(root, &dir);
    let file = files
        .iter()
        .find(|(_, fi)| fi.kernels.iter().any(|k| k.name == kernel))
        .map(|(p, _)| p.clone())
        .ok_or_else(|| format!("{dir}: no kernel {kernel}"))?;
    let scope = kernelpair::cuda::Scope { files: &files };
    let iso = kernelpair::cuda::isolate(&scope, &file, kernel).map_err(|e| e.to_string())?;
    Ok(KernelUnit {
        id: content_id(&["parboil", bench, variant, &file, kernel, &iso.source]),
        suite: "parboil".into(),
        benchmark: bench.into(),
        variant: variant.into(),
        path: file,
        line: iso.line,
        kernel: kernel.into(),
        params: iso.params,
        template_params: iso.template_params,
        source: iso.source,
        symbol: iso.symbol,
        pulled: iso.pulled,
        features: iso.features,
        launch_sites: vec![],
        provenance: Provenance::default(),
        compile: None,
        diagnostics: iso.diagnostics,
    })
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
    let [root, hdir, out] = &args[..] else {
        eprintln!("usage: parboil-pairs <PARBOIL_ROOT> <HARNESS_DIR> <OUT.jsonl>");
        std::process::exit(2);
    };
    let root = PathBuf::from(root);
    let mut harnesses: Vec<PathBuf> = std::fs::read_dir(hdir)
        .expect("harness dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    harnesses.sort();
    let mut records = Vec::new();
    for h in harnesses {
        let stem = h.file_stem().unwrap().to_string_lossy().into_owned();
        let (bench, suffix) = match stem.split_once('.') {
            Some((b, s)) => (b.to_string(), Some(s.to_string())),
            None => (stem.clone(), None),
        };
        let parsed = match kernelpair::harness::load(&h) {
            Ok(p) => p,
            Err(e) => {
                eprintln!("skip {}: {e}", h.display());
                continue;
            }
        };
        if parsed.needs_host_loop.is_some() {
            eprintln!("skip {}: needs a host loop", h.display());
            continue;
        }
        let fast_variant = match &suffix {
            Some(s) if root.join(format!("benchmarks/{bench}/src/{s}")).is_dir() => s.clone(),
            _ => "cuda".to_string(),
        };
        let base = |k: &str| k.split('<').next().unwrap_or(k).trim().to_string();
        let (Some(sl), Some(fl)) = (parsed.slow.first(), parsed.fast.first()) else {
            eprintln!("skip {}: no launches", h.display());
            continue;
        };
        let made = unit(&root, &bench, "cuda_base", &base(&sl.kernel))
            .and_then(|s| Ok((s, unit(&root, &bench, &fast_variant, &base(&fl.kernel))?)));
        match made {
            Ok((slow, fast)) => {
                eprintln!(
                    "{}: {} ({}) vs {} ({})",
                    h.display(),
                    slow.kernel,
                    slow.variant,
                    fast.kernel,
                    fast.variant
                );
                records.push(Record::Pair(Box::new(Pair {
                    id: Pair::make_id(Some(&slow), &fast),
                    suite: "parboil".into(),
                    benchmark: bench.clone(),
                    kernel: fast.kernel.clone(),
                    slow: Some(slow),
                    fast,
                    origin: Origin::Natural,
                    rule: "harness".into(),
                    identical: false,
                    techniques: vec![],
                    description: parsed.description.clone(),
                    // The file name: verify resolves it against the pairs file's folder,
                    // so pairs.jsonl travels with the harnesses beside it.
                    harness: Some(h.file_name().unwrap().to_string_lossy().into_owned()),
                    verification: None,
                    synth: None,
                })));
            }
            Err(e) => eprintln!("skip {}: {e}", h.display()),
        }
    }
    kernelpair::jsonl::write_records(Path::new(out), &records).expect("write pairs");
    eprintln!("{} pairs → {out}", records.len());
}
