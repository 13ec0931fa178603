//! `kernelpair inspect FILE.cu [--kernel NAME]`: index the file and its folder
//! neighbours as one scope, and print each kernel's isolated unit and what it pulled in.

use super::{index_file, isolate_at, FileIndex, IsolatedKernel, Scope};
use crate::record::Level;
use anyhow::{bail, Context};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

#[derive(Debug, clap::Args)]
pub struct InspectArgs {
    /// The .cu file.
    pub file: std::path::PathBuf,
    /// Only this kernel.
    #[arg(long)]
    pub kernel: Option<String>,
}

/// Extensions of the neighbours read into the scope (headers and sources that may
/// include, or be included by, the file).
const NEIGHBOUR_EXTENSIONS: &[&str] = &[
    "cu", "cuh", "h", "hpp", "hh", "c", "cc", "cpp", "cxx", "inc",
];

/// Files larger than this are not source code worth isolating from.
const MAX_FILE_BYTES: u64 = 8 << 20;

pub fn run_inspect(args: InspectArgs) -> anyhow::Result<u8> {
    let file = &args.file;
    let bytes = std::fs::read(file).with_context(|| format!("cannot read {}", file.display()))?;
    let text = String::from_utf8(bytes)
        .map_err(|_| anyhow::anyhow!("{} is not UTF-8 text", file.display()))?;
    let name = file
        .file_name()
        .and_then(|n| n.to_str())
        .with_context(|| format!("{} has no usable file name", file.display()))?
        .to_string();
    let dir = file
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));

    let mut files: BTreeMap<String, FileIndex> = BTreeMap::new();
    files.insert(name.clone(), index_file(&name, &text));
    let mut skipped = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            let Some(n) = p.file_name().and_then(|n| n.to_str()).map(str::to_string) else {
                continue;
            };
            let ext_ok = p
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| NEIGHBOUR_EXTENSIONS.contains(&e));
            if n == name || !ext_ok || !p.is_file() {
                continue;
            }
            if p.metadata()
                .map(|m| m.len() > MAX_FILE_BYTES)
                .unwrap_or(true)
            {
                skipped.push(format!("{n}: larger than {MAX_FILE_BYTES} bytes"));
                continue;
            }
            match std::fs::read(&p).map(String::from_utf8) {
                Ok(Ok(t)) => {
                    files.insert(n.clone(), index_file(&n, &t));
                }
                Ok(Err(_)) => skipped.push(format!("{n}: not UTF-8")),
                Err(e) => skipped.push(format!("{n}: {e}")),
            }
        }
    }
    let scope = Scope::new(&files);
    let fi = &files[&name];
    let indices: Vec<usize> = match &args.kernel {
        Some(k) => {
            let v: Vec<usize> = fi
                .kernels()
                .iter()
                .enumerate()
                .filter(|(_, ki)| &ki.name == k)
                .map(|(i, _)| i)
                .collect();
            if v.is_empty() {
                let have: Vec<&str> = fi.kernels().iter().map(|k| k.name.as_str()).collect();
                bail!(
                    "no kernel named `{k}` in {}; kernels there: {}",
                    file.display(),
                    if have.is_empty() {
                        "none".to_string()
                    } else {
                        have.join(", ")
                    }
                );
            }
            v
        }
        None => (0..fi.kernels().len()).collect(),
    };
    let mut out = String::new();
    writeln!(
        out,
        "{}: {} kernel(s); scope: {} file(s) in {}",
        file.display(),
        fi.kernels().len(),
        files.len(),
        dir.display()
    )?;
    for s in &skipped {
        writeln!(out, "  skipped neighbour {s}")?;
    }
    for d in fi.diagnostics() {
        writeln!(out, "  file diagnostic {}: {}", d.code, d.message)?;
    }
    for i in indices {
        let unit = isolate_at(&scope, &name, i)?;
        print_unit(&mut out, &unit, fi, &files)?;
    }
    print!("{out}");
    Ok(crate::exit::OK)
}

fn print_unit(
    out: &mut String,
    u: &IsolatedKernel,
    fi: &FileIndex,
    files: &BTreeMap<String, FileIndex>,
) -> std::fmt::Result {
    writeln!(
        out,
        "\n=== kernel {} ({}:{}) ===",
        u.kernel,
        fi.path(),
        u.line
    )?;
    writeln!(out, "symbol: {}", u.symbol)?;
    if !u.template_params.is_empty() {
        writeln!(out, "template: <{}>", u.template_params.join(", "))?;
    }
    let params: Vec<String> = u
        .params
        .iter()
        .map(|p| format!("{} {}", p.ty, p.name).trim().to_string())
        .collect();
    writeln!(out, "params: ({})", params.join(", "))?;
    writeln!(out, "pulled:")?;
    for (what, v) in [
        ("helpers", &u.pulled.helpers),
        ("globals", &u.pulled.globals),
        ("macros", &u.pulled.macros),
        ("types", &u.pulled.types),
        ("headers", &u.pulled.headers),
        ("local files", &u.pulled.local_files),
    ] {
        writeln!(
            out,
            "  {what}: {}",
            if v.is_empty() {
                "-".to_string()
            } else {
                v.join(", ")
            }
        )?;
    }
    let f = &u.features;
    let flags: Vec<&str> = [
        (f.shared_memory, "shared_memory"),
        (f.dynamic_shared_memory, "dynamic_shared_memory"),
        (f.constant_memory, "constant_memory"),
        (f.texture_references, "texture_references"),
        (f.atomics, "atomics"),
        (f.templates, "templates"),
        (f.warp_primitives, "warp_primitives"),
        (f.vector_types, "vector_types"),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, n)| n)
    .collect();
    writeln!(
        out,
        "features: {}",
        if flags.is_empty() {
            "-".to_string()
        } else {
            flags.join(", ")
        }
    )?;
    if u.diagnostics.is_empty() {
        writeln!(out, "diagnostics: -")?;
    } else {
        writeln!(out, "diagnostics:")?;
        for d in &u.diagnostics {
            let level = match d.level {
                Level::Info => "info",
                Level::Warning => "warning",
                Level::Error => "error",
            };
            let line = d.line.map(|l| format!(" (line {l})")).unwrap_or_default();
            writeln!(out, "  {level} {}{line}: {}", d.code, d.message)?;
        }
    }
    let launches: Vec<_> = files
        .values()
        .flat_map(|f| f.launch_sites())
        .filter(|l| l.kernel == u.kernel)
        .collect();
    for l in launches {
        writeln!(
            out,
            "launch {}:{}: <<<{}, {}{}{}>>>({})",
            l.path,
            l.line,
            l.grid,
            l.block,
            l.shared_mem
                .as_deref()
                .map(|s| format!(", {s}"))
                .unwrap_or_default(),
            l.stream
                .as_deref()
                .map(|s| format!(", {s}"))
                .unwrap_or_default(),
            l.args.join(", ")
        )?;
        for (k, v) in &l.definitions {
            writeln!(out, "  {k}: {v}")?;
        }
    }
    writeln!(out, "--- unit ---")?;
    out.push_str(&u.source);
    Ok(())
}
