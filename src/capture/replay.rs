//! A captured launch as a harness the GPU runner executes ([`Resolved`]): every captured
//! allocation a buffer filled with the bytes the program held, every parameter its own
//! bytes with the device addresses inside replaced by those buffers
//! ([`ResolvedArg::Bytes`]), the launch's grid, block and shared memory, the module
//! globals filled as they were, and the program's own results as the outputs the fast
//! kernel must reproduce ([`crate::harness::Expected`]).
//!
//! The slow side runs under the fast kernel's capture (a synthesized kernel takes the same
//! parameters and launch). When the slow kernel was captured too, through the same
//! parameters (same sizes, addresses into allocations of the same sizes, every other byte
//! the same: one program launching both versions, or each version run by its own process
//! on the same sizes), it replays with its own grid, block and scalars on the fast
//! capture's buffers.

mod hostloop;

use super::index::{CaptureIndex, Entry};
use crate::gpu::capture::manifest::{short, CapturedParam, CapturedPointer};
use crate::gpu::capture::{BlobStore, Manifest};
use crate::gpu::objects::{ObjectDesc, ObjectKind, ObjectResource};
use crate::harness::HostBuffer;
use crate::harness::{
    BytesPointer, ElemType, Expected, Init, Launch, Resolved, ResolvedArg, ResolvedConst,
    ResolvedObject, Role, Tolerance,
};
use crate::record::KernelUnit;
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::path::Path;
use std::rc::Rc;

/// Why a pair or unit has no captured harness.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ReplayError {
    #[error("no captured launch of {0}")]
    NotCaptured(String),
    #[error("{kernel}'s captured launch was skipped: {why}")]
    Skipped { kernel: String, why: String },
    #[error("{kernel}: the unit takes {unit} parameters, the captured launch passed {captured}")]
    Params {
        kernel: String,
        unit: usize,
        captured: usize,
    },
    #[error("{kernel}: {why}")]
    Unsupported { kernel: String, why: String },
}

/// A captured harness for one pair.
#[derive(Debug, Clone)]
pub struct Replay {
    /// The fast kernel's manifest (for messages and evidence).
    pub manifest: std::path::PathBuf,
    /// One size set, `captured`.
    pub sets: Vec<Resolved>,
    /// How the slow side runs: `own launch` or `fast launch`.
    pub slow_launch: SlowLaunch,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SlowLaunch {
    /// The slow kernel's own captured launch (grid, block, shared memory, its own scalars)
    /// on the fast capture's buffers.
    Own,
    /// The fast kernel's launch (grid, block, parameters).
    Fast,
    /// The slow kernel's own captured launch (its own parameters, which are not the fast
    /// kernel's), each of its buffers the fast capture's buffer with the same contents
    /// before the launch, else its own.
    Mapped,
}

/// The name NVRTC is asked to lower for a unit: a template instance's expression from
/// the capture (`reduce<256u>`), else the unit's own symbol.
pub(super) fn symbol_for(unit: &KernelUnit, m: &Manifest) -> String {
    if m.name_expression.contains('<') || !unit.template_params.is_empty() {
        m.name_expression.clone()
    } else {
        unit.symbol.clone()
    }
}

/// The slow kernel's name expression under the fast kernel's launch: the fast one's own
/// for the same unit (a self-check); a template's with the fast instance's arguments
/// (`fast<float, 4>` gives `slow<float, 4>`: a synthesized variant keeps the template);
/// else the slow unit's symbol.
pub(super) fn slow_symbol(slow: &KernelUnit, fast: &KernelUnit, fast_expr: &str) -> String {
    if slow.id == fast.id {
        return fast_expr.to_string();
    }
    match (slow.template_params.is_empty(), fast_expr.find('<')) {
        (false, Some(i)) => format!("{}{}", slow.kernel, &fast_expr[i..]),
        _ => slow.symbol.clone(),
    }
}

/// The element type of a buffer passed directly as parameter `p` of `unit`: its pointee,
/// through the unit's typedefs and `#define`s, and through the template arguments the
/// captured instance was launched with (`Tparams *` of `k<float, float>` is a float).
pub(super) fn elem_of(unit: &KernelUnit, p: usize, expr: &str) -> Option<ElemType> {
    let ty = &unit.params.get(p)?.ty;
    if !crate::harness::c_is_pointer(ty) {
        return None;
    }
    use crate::harness::template::{bindings, substitute};
    let base = substitute(
        &crate::harness::c_base_type(ty),
        &bindings(&unit.template_params, expr),
    );
    ElemType::from_c_type(&base)
        .or_else(|| ElemType::from_c_type(&crate::harness::resolve_alias(&base, &unit.source)))
}

pub(super) fn usable(unit: &KernelUnit, m: &Manifest) -> Result<(), ReplayError> {
    if let Some(why) = &m.skipped {
        return Err(ReplayError::Skipped {
            kernel: unit.kernel.clone(),
            why: why.clone(),
        });
    }
    if m.params.len() != unit.params.len() {
        return Err(ReplayError::Params {
            kernel: unit.kernel.clone(),
            unit: unit.params.len(),
            captured: m.params.len(),
        });
    }
    for (i, p) in unit.params.iter().enumerate() {
        if let Some(kind) = object_kind(&p.ty) {
            if object_at(m, i, kind).is_none() {
                return Err(ReplayError::Unsupported {
                    kernel: unit.kernel.clone(),
                    why: format!(
                        "parameter {} is a {}, but the capture recorded no {} object for it (mipmapped arrays, and formats other than 8/16/32-bit integers, half and float, are not rebuilt)",
                        p.name,
                        p.ty,
                        match kind {
                            ObjectKind::Texture => "texture",
                            ObjectKind::Surface => "surface",
                        }
                    ),
                });
            }
        }
    }
    Ok(())
}

/// The object kind a parameter type names (`cudaTextureObject_t`, `CUtexObject`, …).
fn object_kind(ty: &str) -> Option<ObjectKind> {
    if ty.contains("cudaTextureObject_t") || ty.contains("CUtexObject") {
        Some(ObjectKind::Texture)
    } else if ty.contains("cudaSurfaceObject_t") || ty.contains("CUsurfObject") {
        Some(ObjectKind::Surface)
    } else {
        None
    }
}

/// The object of `kind` a manifest recorded for parameter `i`.
fn object_at(m: &Manifest, i: usize, kind: ObjectKind) -> Option<&ObjectDesc> {
    m.objects
        .iter()
        .find(|o| o.param == i && o.object.kind == kind)
        .map(|o| &o.object)
}

/// The element type a texture's format gives its buffer (`float4` texels are floats).
fn elem_of_format(format: u32) -> Option<ElemType> {
    Some(match format {
        1 => ElemType::U8,
        2 => ElemType::U16,
        3 => ElemType::U32,
        8 => ElemType::I8,
        9 => ElemType::I16,
        10 => ElemType::I32,
        16 => ElemType::F16,
        32 => ElemType::F32,
        _ => return None,
    })
}

/// An object's format, whatever its resource.
fn format_of(o: &ObjectDesc) -> u32 {
    match o.resource {
        ObjectResource::Linear { format, .. }
        | ObjectResource::Pitch2d { format, .. }
        | ObjectResource::Array { format, .. } => format,
    }
}

pub(super) fn param_bytes(
    unit: &KernelUnit,
    m: &Manifest,
    i: usize,
) -> Result<Vec<u8>, ReplayError> {
    hex::decode(&m.params[i].hex).map_err(|e| ReplayError::Unsupported {
        kernel: unit.kernel.clone(),
        why: format!("parameter {i}'s bytes: {e}"),
    })
}

/// The fast side of a captured harness.
struct FastSide {
    /// Buffers (one per allocation), then one bytes arg per parameter.
    args: Vec<ResolvedArg>,
    launch: Launch,
    expected: Vec<Expected>,
    constants: Vec<ResolvedConst>,
    objects: Vec<ResolvedObject>,
}

/// A captured launch's geometry, once, with `kernel` lowered by NVRTC and the runner's
/// `args` (one per parameter).
pub(super) fn captured_launch(m: &Manifest, kernel: String, args: Vec<usize>) -> Launch {
    Launch {
        kernel,
        grid: m.grid,
        block: m.block,
        shared_mem: m.shared_mem,
        repeat: 1,
        offsets: vec![0; args.len()],
        args,
        cooperative: m.cooperative(),
    }
}

/// `also`: the other side's source, whose globals are uploaded too.
fn build_fast(
    unit: &KernelUnit,
    m: &Manifest,
    blobs: &BlobStore,
    also: &str,
) -> Result<FastSide, ReplayError> {
    usable(unit, m)?;
    let mut elems: BTreeMap<usize, ElemType> = BTreeMap::new();
    let mut names: BTreeMap<usize, String> = BTreeMap::new();
    for (i, p) in m.params.iter().enumerate() {
        if let [ptr] = p.pointers.as_slice() {
            if ptr.at == 0 && p.size == 8 {
                if let Some(e) = elem_of(unit, i, &m.name_expression) {
                    elems.entry(ptr.alloc).or_insert(e);
                }
                names
                    .entry(ptr.alloc)
                    .or_insert(unit.params[i].name.clone());
            }
        }
    }
    // Memory seen only through a texture or surface takes the texels' element type.
    let mut obj_params: Vec<(usize, ObjectDesc)> = Vec::new();
    for (i, p) in unit.params.iter().enumerate() {
        if let Some(o) = object_kind(&p.ty).and_then(|k| object_at(m, i, k)) {
            if let Some(e) = elem_of_format(format_of(o)) {
                elems.entry(o.resource.alloc()).or_insert(e);
            }
            names
                .entry(o.resource.alloc())
                .or_insert(format!("{}.memory", p.name));
            obj_params.push((i, o.clone()));
        }
    }
    let mut args = Vec::new();
    let mut expected = Vec::new();
    for (k, a) in m.allocs.iter().enumerate() {
        let elem = elems
            .get(&k)
            .copied()
            .filter(|e| a.bytes % e.size_of() as u64 == 0)
            .unwrap_or(ElemType::U8);
        let changed = a.changed();
        args.push(ResolvedArg::Buffer {
            name: names
                .get(&k)
                .cloned()
                .unwrap_or_else(|| format!("alloc{k}")),
            elem,
            len: (a.bytes / elem.size_of() as u64) as usize,
            init: Init::Captured {
                blobs: blobs.root().to_path_buf(),
                id: a.before.clone(),
            },
            role: if changed { Role::Inout } else { Role::In },
            tol: Tolerance::default_for(elem),
            // The program's own data: its outputs may well be constant or zero; the
            // recorded results are the check instead.
            allow_degenerate: true,
            layout: Default::default(),
            compare: None,
        });
        if changed {
            expected.push(Expected {
                arg: k,
                init: Init::Captured {
                    blobs: blobs.root().to_path_buf(),
                    id: a.after.clone(),
                },
            });
        }
    }
    if expected.is_empty() {
        expected = written_unchanged(unit, m, blobs, &mut args);
    }
    let n_buf = args.len();
    let mut launch_args = Vec::new();
    for (i, p) in m.params.iter().enumerate() {
        launch_args.push(args.len());
        args.push(ResolvedArg::Bytes {
            name: unit.params[i].name.clone(),
            bytes: param_bytes(unit, m, i)?,
            pointers: p
                .pointers
                .iter()
                .map(|q| BytesPointer {
                    at: q.at,
                    arg: q.alloc,
                    offset: q.offset,
                })
                .collect(),
        });
    }
    debug_assert!(launch_args.iter().all(|&a| a >= n_buf));
    let objects = obj_params
        .into_iter()
        .map(|(i, object)| ResolvedObject {
            name: unit.params[i].name.clone(),
            arg: launch_args[i],
            object,
        })
        .collect();
    // The recorder snapshots every global the suite's units use that the program's module
    // has; the pair's isolated sources may need none of them (dct8x8's `DCTv8matrix` is
    // another kernel's table): those are left out, not reported missing from its modules.
    let named = identifiers(&[&unit.source, also]);
    let constants = m
        .globals
        .iter()
        .filter(|g| named.contains(g.name.as_str()))
        .map(|g| ResolvedConst {
            name: g.name.clone(),
            elem: ElemType::U8,
            len: g.bytes as usize,
            init: Init::Captured {
                blobs: blobs.root().to_path_buf(),
                id: g.before.clone(),
            },
        })
        .collect();
    let launch = captured_launch(m, symbol_for(unit, m), launch_args);
    Ok(FastSide {
        args,
        launch,
        expected,
        constants,
        objects,
    })
}

/// A captured harness as a reviewer reads it: each buffer (role, element type, length and
/// the blob its bytes come from), the expected outputs, and each side's launches.
pub fn describe(r: &Replay) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let _ = writeln!(
        o,
        "from {} (slow side: {:?} launch)",
        r.manifest.display(),
        r.slow_launch
    );
    for set in &r.sets {
        for (i, a) in set.args.iter().enumerate() {
            match a {
                ResolvedArg::Buffer {
                    name,
                    elem,
                    len,
                    init,
                    role,
                    ..
                } => {
                    let from = match init {
                        Init::Captured { id, .. } => {
                            format!("captured {}", short(id))
                        }
                        other => format!("{other:?}"),
                    };
                    let _ = writeln!(
                        o,
                        "arg {i}: buffer {name}: {len} x {elem:?}, {role:?}, {from}"
                    );
                }
                ResolvedArg::Bytes {
                    name,
                    bytes,
                    pointers,
                } => {
                    let to: Vec<String> = pointers
                        .iter()
                        .map(|p| format!("arg {} + {}", p.arg, p.offset))
                        .collect();
                    let _ = writeln!(
                        o,
                        "arg {i}: {name}: {} B{}",
                        bytes.len(),
                        if to.is_empty() {
                            String::new()
                        } else {
                            format!(" -> {}", to.join(", "))
                        }
                    );
                }
                other => {
                    let _ = writeln!(o, "arg {i}: {other:?}");
                }
            }
        }
        for e in &set.expected {
            if let Init::Captured { id, .. } = &e.init {
                let _ = writeln!(o, "expected: arg {} ends as captured {}", e.arg, short(id));
            }
        }
        for (side, ls) in [("slow", &set.slow), ("fast", &set.fast)] {
            for l in ls {
                let _ = writeln!(
                    o,
                    "{side}: {} grid {:?} block {:?} shared {} B args {:?}{}",
                    l.kernel,
                    l.grid,
                    l.block,
                    l.shared_mem,
                    l.args,
                    if l.cooperative { " cooperative" } else { "" }
                );
            }
        }
    }
    o
}

/// A launcher's launches: (kernel, argument texts), in order.
type LaunchSeq = Vec<(String, Vec<String>)>;

/// One process's launches: (capture folder's run directory, program, pid).
type ProcessKey<'a> = (&'a Path, &'a str, u32);

/// A host launcher's parameter names and the launches its own body makes, in order
/// (kernel, argument texts): the launch sites of the unit's source inside the function the
/// unit is named after. None for a kernel (its source defines a `__global__` of the name),
/// or a function that launches nothing.
/// A unit holds device code only, so the launcher's own body is read from the program's
/// file in the capture's scratch copy of the tree (`CAPDIR/work/tree/<path>`), the
/// definition at or after the unit's line; a unit whose source has the function (a test's)
/// is read as it is.
fn launcher_sequence(idx: &CaptureIndex, unit: &KernelUnit) -> Option<(Vec<String>, LaunchSeq)> {
    let own = crate::cuda::index_file("unit.cu", &unit.source);
    if own.kernels().iter().any(|k| k.name == unit.kernel) {
        return None;
    }
    let defines = |text: &str| {
        crate::cuda::host::functions(text)
            .into_iter()
            .filter(|f| f.name == unit.kernel)
            .collect::<Vec<_>>()
    };
    let (text, fns) = match defines(&unit.source) {
        fns if !fns.is_empty() => (unit.source.clone(), fns),
        _ => {
            let (e, _) = idx.of_unit(unit).next()?;
            let text = std::fs::read(e.root.join("work/tree").join(&unit.path)).ok()?;
            let text = String::from_utf8_lossy(&text).into_owned();
            let fns = defines(&text);
            (text, fns)
        }
    };
    let f = fns
        .iter()
        .filter(|f| f.body_lines.0 >= unit.line)
        .min_by_key(|f| f.body_lines.0)
        .or(fns.last())?;
    let file = crate::cuda::index_file(&unit.path, &text);
    let inside = f.body_lines.0..=f.body_lines.1;
    let seq: Vec<(String, Vec<String>)> = file
        .launch_sites()
        .iter()
        .filter(|s| inside.contains(&s.line))
        .map(|s| (s.kernel.clone(), s.args.clone()))
        .collect();
    (!seq.is_empty()).then(|| (f.params.clone(), seq))
}

/// The earliest run of one process's captured launches, consecutive in the process's
/// launch count, whose kernels are `kernels` in order: a launcher's launches as they ran.
fn find_sequence<'a>(
    idx: &'a CaptureIndex,
    unit: &KernelUnit,
    seq: &[(String, Vec<String>)],
) -> Option<Vec<&'a (Entry, Manifest)>> {
    let mut by_process: BTreeMap<ProcessKey, Vec<&(Entry, Manifest)>> = BTreeMap::new();
    for em in idx.of_unit(unit) {
        by_process
            .entry((
                em.0.path.parent().unwrap_or(Path::new("")),
                em.0.program.as_str(),
                em.1.pid,
            ))
            .or_default()
            .push(em);
    }
    let mut found: Option<Vec<&(Entry, Manifest)>> = None;
    for ms in by_process.values_mut() {
        ms.sort_by_key(|(_, m)| m.seq);
        for w in ms.windows(seq.len()) {
            let fits = w.iter().zip(seq).all(|((_, m), (k, _))| &m.kernel == k)
                && w.windows(2).all(|p| p[1].1.seq == p[0].1.seq + 1);
            let earlier = found.as_ref().is_none_or(|f| w[0].1.seq < f[0].1.seq);
            if fits && earlier {
                found = Some(w.to_vec());
            }
        }
    }
    found
}

/// Each launcher parameter a launch passes directly (`k<<<…>>>(out, inp, n)`), with the
/// launch and the allocation it points to: parameter → [(launch, allocation)]. A pointer
/// argument that is not one of the launcher's parameters as it is (`inp + off`, a buffer
/// the launcher allocates) is refused by name.
type Bindings = BTreeMap<String, Vec<(usize, usize)>>;

fn bind(
    unit: &KernelUnit,
    params: &[String],
    seq: &[(String, Vec<String>)],
    ms: &[&(Entry, Manifest)],
) -> Result<Bindings, ReplayError> {
    let refuse = |why: String| ReplayError::Unsupported {
        kernel: unit.kernel.clone(),
        why,
    };
    let mut out = Bindings::new();
    for (j, ((kernel, args), (_, m))) in seq.iter().zip(ms).enumerate() {
        if let Some(why) = &m.skipped {
            return Err(refuse(format!("its launch of {kernel} was skipped: {why}")));
        }
        if !m.objects.is_empty() {
            return Err(refuse(format!("{kernel} takes texture or surface objects")));
        }
        if m.params.len() != args.len() {
            return Err(refuse(format!(
                "{kernel} is launched with {} arguments, the capture has {} parameters",
                args.len(),
                m.params.len()
            )));
        }
        for (p, arg) in m.params.iter().zip(args) {
            let arg = arg.trim();
            match p.pointers.as_slice() {
                [] => continue,
                [q] if q.at == 0
                    && q.offset == 0
                    && p.size == 8
                    && params.iter().any(|n| n == arg) =>
                {
                    out.entry(arg.to_string()).or_default().push((j, q.alloc))
                }
                _ => {
                    return Err(refuse(format!(
                        "{kernel}'s argument `{arg}` is not one of the launcher's parameters"
                    )))
                }
            }
        }
    }
    Ok(out)
}

/// A pair of host launchers (versions of one computation as a sequence of launches) under
/// their captured launches: each launcher parameter is one buffer, filled with what the
/// fast launcher's first launch to pass it found there, and expected to end as its last
/// launch to pass it left it. Each side runs its own launches (its kernels, geometry and
/// scalars, from its own process) on those buffers. Both launchers' runs must have passed
/// buffers of the same sizes, and nothing may have changed a buffer between two launches of
/// the fast sequence (the host copying into it, say).
fn for_launchers(
    idx: &CaptureIndex,
    slow: &KernelUnit,
    fast: &KernelUnit,
    (fparams, fseq): (Vec<String>, LaunchSeq),
) -> Result<Replay, ReplayError> {
    let fms = find_sequence(idx, fast, &fseq)
        .ok_or_else(|| ReplayError::NotCaptured(fast.kernel.clone()))?;
    let (sparams, sseq) = launcher_sequence(idx, slow).ok_or_else(|| ReplayError::Unsupported {
        kernel: slow.kernel.clone(),
        why: format!("a kernel, paired with the launcher {}", fast.kernel),
    })?;
    let sms = find_sequence(idx, slow, &sseq).ok_or_else(|| ReplayError::Unsupported {
        kernel: slow.kernel.clone(),
        why: format!(
            "its launches ({}) were not captured in one run",
            sseq.iter()
                .map(|(k, _)| k.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    })?;
    let fb = bind(fast, &fparams, &fseq, &fms)?;
    let sb = bind(slow, &sparams, &sseq, &sms)?;
    let root = &fms[0].0.root;
    let blobs = BlobStore::new(root.join("blobs"));
    let captured = |id: &str| Init::Captured {
        blobs: blobs.root().to_path_buf(),
        id: id.to_string(),
    };
    let refuse = |kernel: &str, why: String| ReplayError::Unsupported {
        kernel: kernel.to_string(),
        why,
    };
    let mut args = Vec::new();
    let mut expected = Vec::new();
    let mut buffer_of: BTreeMap<&str, usize> = BTreeMap::new();
    for name in fparams.iter().filter(|n| fb.contains_key(*n)) {
        let uses = &fb[name];
        let alloc = |&(j, a): &(usize, usize)| &fms[j].1.allocs[a];
        for w in uses.windows(2) {
            if alloc(&w[1]).before != alloc(&w[0]).after {
                return Err(refuse(
                    &fast.kernel,
                    format!(
                        "`{name}` changed between its launches of {} and {}",
                        fseq[w[0].0].0, fseq[w[1].0].0
                    ),
                ));
            }
        }
        let (first, last) = (alloc(&uses[0]), alloc(&uses[uses.len() - 1]));
        if let Some(&(j, a)) = sb.get(name).and_then(|u| u.first()) {
            let theirs = sms[j].1.allocs[a].bytes;
            if theirs != first.bytes {
                return Err(refuse(
                    &slow.kernel,
                    format!(
                        "`{name}` held {theirs} bytes in its run, {} in {}'s",
                        first.bytes, fast.kernel
                    ),
                ));
            }
        }
        let p = fparams.iter().position(|n| n == name).unwrap_or(0);
        let elem = elem_of(fast, p, &fast.kernel)
            .filter(|e| first.bytes % e.size_of() as u64 == 0)
            .unwrap_or(ElemType::U8);
        let changed = first.before != last.after;
        buffer_of.insert(name, args.len());
        if changed {
            expected.push(Expected {
                arg: args.len(),
                init: captured(&last.after),
            });
        }
        args.push(ResolvedArg::Buffer {
            name: name.clone(),
            elem,
            len: (first.bytes / elem.size_of() as u64) as usize,
            init: captured(&first.before),
            role: if changed { Role::Inout } else { Role::In },
            tol: Tolerance::default_for(elem),
            allow_degenerate: true,
            layout: Default::default(),
            compare: None,
        });
    }
    if let Some(name) = sb.keys().find(|n| !buffer_of.contains_key(n.as_str())) {
        return Err(refuse(
            &slow.kernel,
            format!("it passes `{name}`, which {} does not", fast.kernel),
        ));
    }
    let mut launches = |unit: &KernelUnit,
                        seq: &[(String, Vec<String>)],
                        ms: &[&(Entry, Manifest)]|
     -> Result<Vec<Launch>, ReplayError> {
        let mut out = Vec::new();
        for ((_, call_args), (_, m)) in seq.iter().zip(ms) {
            let mut launch_args = Vec::new();
            for (i, (p, arg)) in m.params.iter().zip(call_args).enumerate() {
                launch_args.push(args.len());
                let pointers = match p.pointers.first() {
                    Some(q) => vec![BytesPointer {
                        at: q.at,
                        arg: buffer_of[arg.trim()],
                        offset: q.offset,
                    }],
                    None => Vec::new(),
                };
                args.push(ResolvedArg::Bytes {
                    name: format!("{}.{}", m.kernel, i),
                    bytes: param_bytes(unit, m, i)?,
                    pointers,
                });
            }
            out.push(captured_launch(m, m.name_expression.clone(), launch_args));
        }
        Ok(out)
    };
    let fast_launches = launches(fast, &fseq, &fms)?;
    let slow_launches = launches(slow, &sseq, &sms)?;
    Ok(sequence_replay(
        &fms,
        &[&fast.source, &slow.source],
        (args, expected),
        (slow_launches, fast_launches),
        SlowLaunch::Own,
    ))
}

/// A replay of a launch sequence (a host launcher's, a host loop's), captured as `ms`: the
/// buffers and expected outputs built, each side's launches, and the globals the sources
/// (`sources`) name, each as the sequence's first launch to see it found it.
pub(super) fn sequence_replay(
    ms: &[&(Entry, Manifest)],
    sources: &[&str],
    (args, expected): (Vec<ResolvedArg>, Vec<Expected>),
    (slow, fast): (Vec<Launch>, Vec<Launch>),
    how: SlowLaunch,
) -> Replay {
    let blobs = ms[0].0.root.join("blobs");
    let named = identifiers(sources);
    let mut seen = std::collections::BTreeSet::new();
    let constants = ms
        .iter()
        .flat_map(|(_, m)| &m.globals)
        .filter(|g| named.contains(g.name.as_str()) && seen.insert(g.name.clone()))
        .map(|g| ResolvedConst {
            name: g.name.clone(),
            elem: ElemType::U8,
            len: g.bytes as usize,
            init: Init::Captured {
                blobs: blobs.clone(),
                id: g.before.clone(),
            },
        })
        .collect();
    let set = Resolved {
        origin: ms[0].0.path.display().to_string(),
        size_set: "captured".into(),
        values: BTreeMap::new(),
        args,
        constants,
        textures: Vec::new(),
        objects: Vec::new(),
        ignores: Vec::new(),
        sparse: Vec::new(),
        slow,
        fast,
        expected,
    };
    Replay {
        manifest: ms[0].0.path.clone(),
        sets: vec![set],
        slow_launch: how,
    }
}

/// A launch that changed no allocation wrote what was already there (a result computed
/// again into the same buffer, a value set twice), or nothing. Its outputs are then the
/// buffers the body only stores to: each passed alone and whole (one parameter, at its
/// start), never read, never handed to a function the unit does not define. Those become
/// `out` buffers, poisoned before the launch, with the captured bytes expected after it,
/// so the check still proves the kernel writes every byte and what it writes. None: the
/// launch names no output (a kernel that writes nothing, or writes through memory it
/// also reads), as before.
fn written_unchanged(
    unit: &KernelUnit,
    m: &Manifest,
    blobs: &BlobStore,
    args: &mut [ResolvedArg],
) -> Vec<Expected> {
    use crate::harness::infer_kernel::{body_facts, WriteKind};
    let names: Vec<String> = unit.params.iter().map(|p| p.name.clone()).collect();
    let Some(facts) = body_facts(&unit.source, &unit.kernel, &names) else {
        return Vec::new();
    };
    let mut holders: BTreeMap<usize, usize> = BTreeMap::new();
    for p in &m.params {
        for q in &p.pointers {
            *holders.entry(q.alloc).or_default() += 1;
        }
    }
    let mut expected = Vec::new();
    for (i, p) in m.params.iter().enumerate() {
        let ([q], Some(name)) = (p.pointers.as_slice(), names.get(i)) else {
            continue;
        };
        let write_only = facts.writes.get(name) == Some(&WriteKind::Store)
            && !facts.reads.contains(name)
            && !facts.opaque.contains_key(name);
        if !write_only || q.at != 0 || q.offset != 0 || p.size != 8 || holders[&q.alloc] != 1 {
            continue;
        }
        let (Some(ResolvedArg::Buffer { role, init, .. }), Some(a)) =
            (args.get_mut(q.alloc), m.allocs.get(q.alloc))
        else {
            continue;
        };
        *role = Role::Out;
        *init = Init::Poison;
        expected.push(Expected {
            arg: q.alloc,
            init: Init::Captured {
                blobs: blobs.root().to_path_buf(),
                id: a.after.clone(),
            },
        });
    }
    expected
}

/// The identifiers the sources name in code (not in comments or literals).
pub(super) fn identifiers(sources: &[&str]) -> std::collections::HashSet<String> {
    use crate::cuda::lex;
    sources
        .iter()
        .flat_map(|s| {
            lex::idents(&lex::mask(s))
                .into_iter()
                .map(|i| i.text.to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The slow kernel's own launch on the fast capture's buffers, when its capture read the
/// same parameters: each the same size, addresses at the same places into allocations of the
/// same sizes and offsets, and every byte that is not an address the same (the sizes and
/// flags the program passed). The allocations' contents may differ: each version of a
/// numbered series is often run by its own process, whose upstream kernels round
/// differently (llm.c's attention_backward 1 to 8). A kernel's launch geometry belongs
/// to the kernel (the naive kernel 1 takes one thread per row, version 3 a warp per row):
/// the fast one's grid could leave the slow kernel's work half done or run it out of
/// bounds.
fn slow_own(
    slow: &KernelUnit,
    sm: &Manifest,
    fast: &Manifest,
    args: &mut Vec<ResolvedArg>,
    objects: &mut Vec<ResolvedObject>,
) -> Option<Launch> {
    if usable(slow, sm).is_err() || sm.params.len() != fast.params.len() {
        return None;
    }
    let mut launch_args = Vec::new();
    let mut new_args = Vec::new();
    let mut new_objects = Vec::new();
    for (i, (sp, fp)) in sm.params.iter().zip(&fast.params).enumerate() {
        // A texture or surface: the same kind of object over the same kind of memory
        // (its handle's value is the process's own); it reads the fast capture's.
        if let Some(kind) = object_kind(&slow.params[i].ty) {
            let (so, fo) = (object_at(sm, i, kind)?, object_at(fast, i, kind)?);
            let same = ObjectDesc {
                resource: so.resource.with_alloc(fo.resource.alloc()),
                ..so.clone()
            };
            if same != *fo {
                return None;
            }
            launch_args.push(args.len() + new_args.len());
            new_objects.push(ResolvedObject {
                name: format!("slow.{}", slow.params[i].name),
                arg: args.len() + new_args.len(),
                object: fo.clone(),
            });
            new_args.push(ResolvedArg::Bytes {
                name: format!("slow.{}", slow.params[i].name),
                bytes: vec![0; 8],
                pointers: vec![],
            });
            continue;
        }
        let (sb, pairs) = same_param(sp, fp)?;
        let mut pointers = Vec::new();
        for (sq, fq) in pairs {
            let (sa, fa) = (sm.allocs.get(sq.alloc)?, fast.allocs.get(fq.alloc)?);
            if sq.offset != fq.offset || sa.bytes != fa.bytes {
                return None;
            }
            pointers.push(BytesPointer {
                at: sq.at,
                arg: fq.alloc,
                offset: sq.offset,
            });
        }
        launch_args.push(args.len() + new_args.len());
        new_args.push(ResolvedArg::Bytes {
            name: format!("slow.{}", slow.params[i].name),
            bytes: sb,
            pointers,
        });
    }
    args.extend(new_args);
    objects.extend(new_objects);
    Some(Launch {
        kernel: symbol_for(slow, sm),
        grid: sm.grid,
        block: sm.block,
        shared_mem: sm.shared_mem,
        repeat: 1,
        offsets: vec![0; launch_args.len()],
        args: launch_args,
        cooperative: sm.cooperative(),
    })
}

/// Whether the slow kernel can run with the fast kernel's captured launch (its grid, its
/// parameter bytes, its buffers), where its own capture could not serve. Refused, by name:
/// - a parameter whose size is not the fast launch's: the slow kernel's own captured size,
///   else 8 for a pointer in the unit's text (mri-gridding's `cuda-base` kernels take
///   `ReconstructionSample*` where the optimized ones take a struct of arrays by value);
/// - the same parameters (every byte that is not an address equal) pointing into
///   allocations of other sizes or at other offsets in the slow kernel's own capture: the
///   versions lay their data out differently, and the sizes come from the kernels' own code,
///   not from what the program passed (Parboil lbm's `cuda_base` and `cuda` grids).
///
/// Scalars that differ (another problem size, llm.c's versions run by their own processes)
/// leave the fast launch to stand for the slow one.
pub(super) fn fits_fast_launch(
    slow: &KernelUnit,
    own: Option<&Manifest>,
    fast: &Manifest,
) -> Result<(), ReplayError> {
    let own = own.filter(|sm| usable(slow, sm).is_ok() && sm.params.len() == fast.params.len());
    let refuse = |why: String| ReplayError::Unsupported {
        kernel: slow.kernel.clone(),
        why,
    };
    let name = |i: usize| slow.params.get(i).map_or("?", |p| p.name.as_str());
    for (i, fp) in fast.params.iter().enumerate() {
        let size = match own {
            Some(sm) => Some(sm.params[i].size),
            None => slow
                .params
                .get(i)
                .filter(|p| crate::cuda::ctype::c_is_pointer(&p.ty))
                .map(|_| 8),
        };
        if let Some(size) = size.filter(|&n| n != fp.size) {
            return Err(refuse(format!(
                "parameter {i} (`{}`) is {size} bytes where the fast kernel's captured launch \
                 passes {}: the two versions take different data structures",
                name(i),
                fp.size
            )));
        }
    }
    let Some(sm) = own else { return Ok(()) };
    let mut differ = Vec::new();
    for (i, (sp, fp)) in sm.params.iter().zip(&fast.params).enumerate() {
        let Some((_, pairs)) = same_param(sp, fp) else {
            return Ok(());
        };
        for (sq, fq) in pairs {
            let (Some(sa), Some(fa)) = (sm.allocs.get(sq.alloc), fast.allocs.get(fq.alloc)) else {
                return Ok(());
            };
            if sa.bytes != fa.bytes || sq.offset != fq.offset {
                differ.push(format!(
                    "{}: {} bytes at offset {}, not {} at {}",
                    name(i),
                    sa.bytes,
                    sq.offset,
                    fa.bytes,
                    fq.offset
                ));
            }
        }
    }
    match differ.is_empty() {
        true => Ok(()),
        false => Err(refuse(format!(
            "its own capture passes the same parameters into buffers laid out otherwise ({}): \
             the versions lay their data out differently, so it cannot run on the fast \
             kernel's buffers",
            differ.join("; ")
        ))),
    }
}

/// The slow kernel's own captured launch where its parameters are not the fast kernel's
/// (Parboil mri-fhd's naive `ComputeFH_GPU` takes the k-space arrays as 12 parameters, the
/// optimized one reads them from a `__constant__` table and takes 7). Both programs read
/// the same inputs, so the slow capture's allocations are matched to the fast capture's:
/// - one the slow run only read, to one of the same size with the same bytes before the
///   launch (blob ids are content hashes);
/// - one the slow run wrote, to one the fast run wrote that started with the same bytes and
///   ended with what the slow run ended with (by verify's tolerance: the two programs are
///   the witnesses that the buffers hold the same thing; versions that lay their data out
///   differently, Parboil lbm's, or whose inputs differ, mri-gridding's racy binning, match
///   nothing);
///
/// several candidates told apart by the name of the parameter passing them, then by order.
/// An allocation with no twin becomes a buffer of its own, filled as the slow program had
/// it. Every buffer the fast kernel writes must have a twin, or the pair has nothing to
/// compare. `args` holds the fast side's buffers first (one per fast allocation, in order),
/// then its parameters.
fn slow_mapped(
    slow: &KernelUnit,
    se: &Entry,
    sm: &Manifest,
    fm: &Manifest,
    fast_blobs: &BlobStore,
    args: &mut Vec<ResolvedArg>,
) -> Result<Launch, String> {
    usable(slow, sm).map_err(|e| e.to_string())?;
    if let Some(p) = slow.params.iter().find(|p| object_kind(&p.ty).is_some()) {
        return Err(format!(
            "parameter {} is a texture or surface object",
            p.name
        ));
    }
    let slow_blobs = BlobStore::new(se.root.join("blobs"));
    // The parameter each allocation is first passed by.
    let passed_by = |m: &Manifest| {
        let mut out: BTreeMap<usize, usize> = BTreeMap::new();
        for (i, p) in m.params.iter().enumerate() {
            for q in &p.pointers {
                out.entry(q.alloc).or_insert(i);
            }
        }
        out
    };
    let (s_param, f_param) = (passed_by(sm), passed_by(fm));
    let s_names: BTreeMap<usize, String> = s_param
        .iter()
        .map(|(&k, &i)| (k, slow.params[i].name.clone()))
        .collect();
    let f_names: BTreeMap<usize, String> = f_param
        .iter()
        .filter_map(|(&j, &i)| match args.get(fm.allocs.len() + i) {
            Some(ResolvedArg::Bytes { name, .. }) => Some((j, name.clone())),
            _ => None,
        })
        .collect();
    // Each side's results, read once, as the element type of the slow parameter passing
    // them; and each pair's verdict, judged once.
    type Key = (bool, usize, ElemType);
    let results: RefCell<BTreeMap<Key, Option<Rc<HostBuffer>>>> = Default::default();
    let read = |fast: bool, i: usize, elem: ElemType| {
        let (store, a) = match fast {
            true => (fast_blobs, &fm.allocs[i]),
            false => (&slow_blobs, &sm.allocs[i]),
        };
        let key = (fast, i, elem);
        if let Some(r) = results.borrow().get(&key) {
            return r.clone();
        }
        let r = store
            .get(&a.after, a.bytes)
            .ok()
            .map(|bytes| Rc::new(HostBuffer { elem, bytes }));
        results.borrow_mut().insert(key, r.clone());
        r
    };
    let judged: RefCell<BTreeMap<(usize, usize), bool>> = Default::default();
    let twins = |k: usize, j: usize| {
        let (a, b) = (&sm.allocs[k], &fm.allocs[j]);
        if a.bytes != b.bytes || a.before.is_empty() || a.before != b.before {
            return false;
        }
        match (a.changed(), b.changed()) {
            (false, _) => true,
            (true, false) => false,
            (true, true) if a.after == b.after => true,
            (true, true) => {
                if let Some(&v) = judged.borrow().get(&(k, j)) {
                    return v;
                }
                let elem = s_param
                    .get(&k)
                    .and_then(|&i| elem_of(slow, i, &sm.name_expression))
                    .filter(|e| a.bytes % e.size_of() as u64 == 0)
                    .unwrap_or(ElemType::U8);
                let v = match (read(false, k, elem), read(true, j, elem)) {
                    (Some(x), Some(y)) => outputs_agree(&x, &y),
                    _ => false,
                };
                judged.borrow_mut().insert((k, j), v);
                v
            }
        }
    };
    let mut twin: BTreeMap<usize, usize> = BTreeMap::new();
    // Twins passed by the same name first, then the rest in order.
    for by_name in [true, false] {
        for k in 0..sm.allocs.len() {
            if twin.contains_key(&k) {
                continue;
            }
            let named = |j: usize| s_names.contains_key(&k) && s_names.get(&k) == f_names.get(&j);
            let hit = (0..fm.allocs.len()).find(|&j| {
                !twin.values().any(|&t| t == j) && (!by_name || named(j)) && twins(k, j)
            });
            if let Some(j) = hit {
                twin.insert(k, j);
            }
        }
    }
    for (j, a) in fm.allocs.iter().enumerate() {
        let written = twin.iter().any(|(&k, &t)| t == j && sm.allocs[k].changed());
        if a.changed() && !written {
            return Err(format!(
                "the fast kernel writes `{}` ({} bytes), and no buffer the slow kernel's own \
                 run wrote held the same bytes before it and the same results after",
                f_names.get(&j).map_or("?", String::as_str),
                a.bytes
            ));
        }
    }
    let mut arg_of = twin.clone();
    for (k, a) in sm.allocs.iter().enumerate() {
        if twin.contains_key(&k) {
            continue;
        }
        arg_of.insert(k, args.len());
        let name = s_names
            .get(&k)
            .cloned()
            .unwrap_or_else(|| format!("alloc{k}"));
        args.push(ResolvedArg::Buffer {
            name: format!("slow.{name}"),
            elem: ElemType::U8,
            len: a.bytes as usize,
            init: Init::Captured {
                blobs: slow_blobs.root().to_path_buf(),
                id: a.before.clone(),
            },
            role: Role::In,
            tol: Tolerance::default_for(ElemType::U8),
            allow_degenerate: true,
            layout: Default::default(),
            compare: None,
        });
    }
    let mut launch_args = Vec::new();
    for (i, p) in sm.params.iter().enumerate() {
        launch_args.push(args.len());
        args.push(ResolvedArg::Bytes {
            name: format!("slow.{}", slow.params[i].name),
            bytes: param_bytes(slow, sm, i).map_err(|e| e.to_string())?,
            pointers: p
                .pointers
                .iter()
                .map(|q| BytesPointer {
                    at: q.at,
                    arg: arg_of[&q.alloc],
                    offset: q.offset,
                })
                .collect(),
        });
    }
    Ok(captured_launch(sm, symbol_for(slow, sm), launch_args))
}

/// Whether two programs' results in buffers of one element type are the same by the rule
/// verify judges a pair with: every element within the type's default tolerance (floats:
/// `atol + scale * max|y| + rtol * |y|`, NaN where both are; integers: equal). Where the two
/// programs' own results differ (a racy binning step upstream, another layout), their
/// inputs were not the same either, and the buffers are no twins. (Verify's own
/// `verify::compare::compare` also asks for a relative L2 bound; it sits above capture.)
fn outputs_agree(x: &HostBuffer, y: &HostBuffer) -> bool {
    if x.elem != y.elem || x.bytes.len() != y.bytes.len() {
        return false;
    }
    let n = x.len();
    if !x.elem.is_float() {
        return (0..n).all(|i| x.get_i128(i) == y.get_i128(i));
    }
    let tol = Tolerance::default_for(x.elem);
    let big = (0..n)
        .map(|i| y.get_f64(i).abs())
        .filter(|v| v.is_finite())
        .fold(0.0, f64::max);
    let floor = tol.atol + tol.scale * big;
    (0..n).all(|i| {
        let (p, q) = (x.get_f64(i), y.get_f64(i));
        (p.is_nan() && q.is_nan()) || p == q || (p - q).abs() <= floor + tol.rtol * q.abs()
    })
}

/// A slow parameter's addresses, each with the fast parameter's at the same place.
type PointerPairs<'m> = Vec<(&'m CapturedPointer, &'m CapturedPointer)>;

/// Whether the slow capture passed parameter `sp` as the fast capture passed `fp`: the same
/// size, addresses at the same places, every other byte the same (the sizes and flags the
/// program passed; an address's value is the process's own). Then the slow parameter's
/// bytes and its addresses paired with the fast one's.
fn same_param<'m>(
    sp: &'m CapturedParam,
    fp: &'m CapturedParam,
) -> Option<(Vec<u8>, PointerPairs<'m>)> {
    let (a, b) = (hex::decode(&sp.hex).ok()?, hex::decode(&fp.hex).ok()?);
    let pairs: Vec<_> = sp.pointers.iter().zip(&fp.pointers).collect();
    let same = sp.size == fp.size
        && a.len() == b.len()
        && sp.pointers.len() == fp.pointers.len()
        && pairs.iter().all(|(s, f)| s.at == f.at)
        && a.iter()
            .zip(&b)
            .enumerate()
            .all(|(k, (x, y))| x == y || sp.pointers.iter().any(|p| (p.at..p.at + 8).contains(&k)));
    same.then_some((a, pairs))
}

/// How a pair's slow kernel runs under its fast kernel's capture `fm`.
struct SlowSide<'a> {
    slow: &'a KernelUnit,
    fast: &'a KernelUnit,
    fm: &'a Manifest,
    blobs: &'a BlobStore,
}

impl SlowSide<'_> {
    /// The slow launch, in order of preference: its own captured launch on the same
    /// parameters ([`slow_own`]); its own launch on the buffers the two captures share
    /// ([`slow_mapped`]); the fast launch standing for it ([`fits_fast_launch`]); else
    /// refused, with every reason. `own` is the slow kernel's capture.
    fn launch(
        &self,
        own: Option<&(Entry, Manifest)>,
        fast_launch: &Launch,
        args: &mut Vec<ResolvedArg>,
        objects: &mut Vec<ResolvedObject>,
    ) -> Result<(Launch, SlowLaunch), ReplayError> {
        let (slow, fm) = (self.slow, self.fm);
        if let Some(l) = own.and_then(|(_, sm)| slow_own(slow, sm, fm, args, objects)) {
            return Ok((l, SlowLaunch::Own));
        }
        let n = args.len();
        let mapped = own.map(|(se, sm)| slow_mapped(slow, se, sm, fm, self.blobs, args));
        if let Some(Ok(l)) = mapped {
            return Ok((l, SlowLaunch::Mapped));
        }
        args.truncate(n);
        let fits = match slow.params.len() == self.fast.params.len() {
            true => fits_fast_launch(slow, own.map(|(_, m)| m), fm),
            false => Err(ReplayError::Params {
                kernel: slow.kernel.clone(),
                unit: slow.params.len(),
                captured: fm.params.len(),
            }),
        };
        match (fits, mapped) {
            (Ok(()), _) => {
                let mut l = fast_launch.clone();
                l.kernel = slow_symbol(slow, self.fast, &fast_launch.kernel);
                Ok((l, SlowLaunch::Fast))
            }
            (Err(e), Some(Err(why))) => Err(ReplayError::Unsupported {
                kernel: slow.kernel.clone(),
                why: format!(
                    "{e}; nor can its own launch run on the fast capture's buffers: {why}"
                ),
            }),
            (Err(e), _) => Err(e),
        }
    }
}

/// The captured harness of a pair whose fast kernel was captured.
pub fn for_pair(
    idx: &CaptureIndex,
    slow: &KernelUnit,
    fast: &KernelUnit,
) -> Result<Replay, ReplayError> {
    let Some((entry, fm)) = idx.find(fast) else {
        // A host launcher (llm.c's `layernorm_forward2`) is no kernel of its own: its
        // captured launches are the kernels it launches, one after another.
        return match launcher_sequence(idx, fast) {
            Some(seq) => for_launchers(idx, slow, fast, seq),
            None => Err(ReplayError::NotCaptured(fast.kernel.clone())),
        };
    };
    // A host loop of the fast kernel's launches (captured with `--first K`) replays as it ran.
    if let Some(run) = hostloop::loop_run(idx, fast, entry, fm) {
        return hostloop::for_loop(idx, slow, fast, &run);
    }
    let blobs = BlobStore::new(entry.root.join("blobs"));
    let FastSide {
        mut args,
        launch: fast_launch,
        expected,
        constants,
        mut objects,
    } = build_fast(fast, fm, &blobs, &slow.source)?;
    let own = idx.find(slow).filter(|_| slow.id != fast.id);
    let slow_side = SlowSide {
        slow,
        fast,
        fm,
        blobs: &blobs,
    };
    let (slow_launch, how) = slow_side.launch(own, &fast_launch, &mut args, &mut objects)?;
    let set = Resolved {
        origin: entry.path.display().to_string(),
        size_set: "captured".into(),
        values: BTreeMap::new(),
        args,
        constants,
        textures: Vec::new(),
        objects,
        ignores: Vec::new(),
        sparse: Vec::new(),
        slow: vec![slow_launch],
        fast: vec![fast_launch],
        expected,
    };
    Ok(Replay {
        manifest: entry.path.clone(),
        sets: vec![set],
        slow_launch: how,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::capture::manifest::{AllocKind, CapturedAlloc, CapturedParam};

    /// A unit in the program `pair/`, parameters as (name, type).
    fn unit(kernel: &str, params: &[(&str, &str)]) -> KernelUnit {
        let typed: Vec<(&str, &str)> = params.iter().map(|(n, t)| (*t, *n)).collect();
        let mut u = KernelUnit::for_test(kernel, &typed, "");
        u.id = format!("u-{kernel}");
        u.path = "pair/main.cu".into();
        u
    }

    fn manifest(kernel: &str, block: [u32; 3], input: &str, out_after: &str) -> Manifest {
        Manifest {
            grid: [64, 32, 1],
            block,
            ..Manifest::for_test(
                kernel,
                vec![
                    CapturedParam::address(0, 0, 0),
                    CapturedParam::address(0, 0, 1),
                    CapturedParam::scalar(16, "00080000"),
                ],
                vec![
                    CapturedAlloc::device(input, input),
                    CapturedAlloc::device("zeros", out_after),
                ],
            )
        }
    }

    fn index_of(ms: Vec<Manifest>) -> CaptureIndex {
        index_in("pair", ms)
    }

    /// An index of the launches `ms` of one program, `program`, captured under `/cap`.
    pub(super) fn index_in(program: &str, ms: Vec<Manifest>) -> CaptureIndex {
        CaptureIndex {
            root: "/cap".into(),
            manifests: ms
                .into_iter()
                .map(|m| {
                    (
                        Entry {
                            program: program.into(),
                            path: format!("/cap/launches/{program}/run-0/{}", m.file_name()).into(),
                            root: "/cap".into(),
                            suite: String::new(),
                        },
                        m,
                    )
                })
                .collect(),
            unreadable: vec![],
        }
    }

    /// The recorder snapshots every global of the suite the module has; a unit that names
    /// none of them (dct8x8's kernels beside the one reading `DCTv8matrix`) replays without
    /// them, and one that names a global keeps it.
    #[test]
    fn only_the_globals_a_unit_names_are_uploaded_for_its_replay() {
        use crate::gpu::capture::manifest::CapturedGlobal;
        let mut m = manifest("k", [256, 1, 1], "in", "out");
        let g = |name: &str| CapturedGlobal {
            name: name.into(),
            bytes: 256,
            before: format!("{name}-bytes"),
            after: format!("{name}-bytes"),
        };
        m.globals = vec![g("DCTv8matrix"), g("c_Table")];
        let mut u = unit("k", &[("a", "const float*"), ("b", "float*"), ("n", "int")]);
        u.source = "__constant__ float c_Table[64];\n__global__ void k(const float* a, float* b, int n) { b[0] = a[0] * c_Table[n]; /* DCTv8matrixT is not it */ }".into();
        let blobs = BlobStore::new(std::path::PathBuf::from("/cap/blobs"));
        let side = build_fast(&u, &m, &blobs, "").unwrap();
        let names: Vec<&str> = side.constants.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["c_Table"]);
        // A slow side that reads the other table brings it along; one that only names it
        // in a comment does not.
        let side = build_fast(&u, &m, &blobs, "/* DCTv8matrix */ x = c_Table[i];").unwrap();
        assert_eq!(side.constants.len(), 1);
        let side = build_fast(&u, &m, &blobs, "x = DCTv8matrix[i];").unwrap();
        assert_eq!(side.constants.len(), 2);
    }

    /// `build` keeps one capture folder per suite under `<output>/captures/`: opened
    /// together, each serves its own suite's units, and its own blobs.
    #[test]
    fn a_folder_of_capture_folders_serves_each_suite_its_own_launches() {
        let dir = tempfile::tempdir().unwrap();
        for suite in ["llm-c", "other"] {
            let m = manifest("k", [256, 1, 1], "in", "out");
            let d = dir.path().join(suite).join("launches/pair/run-0");
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(m.file_name()), toml::to_string(&m).unwrap()).unwrap();
        }
        let idx = CaptureIndex::open(dir.path());
        assert_eq!(idx.manifests.len(), 2, "{:?}", idx.unreadable);
        let mut u = unit("k", &[("a", "float*"), ("b", "float*"), ("n", "int")]);
        u.suite = "llm-c".into();
        let (e, _) = idx
            .find(&u)
            .expect("the llm-c capture serves an llm-c unit");
        assert_eq!(e.root, dir.path().join("llm-c"));
        assert_eq!(e.suite, "llm-c");
        u.suite = "parboil".into();
        assert!(
            idx.find(&u).is_none(),
            "no suite's capture serves another's units"
        );
        // A capture folder opened by itself serves any unit.
        let one = CaptureIndex::open(&dir.path().join("other"));
        assert!(one.find(&u).is_some_and(|(e, _)| e.suite.is_empty()));
    }

    #[test]
    fn a_captured_launch_becomes_buffers_params_and_expected_outputs() {
        let ps = [("in", "const float *"), ("out", "float *"), ("n", "int")];
        let (slow, fast) = (unit("t_naive", &ps), unit("t_tiled", &ps));
        let idx = index_of(vec![manifest("t_tiled", [32, 8, 1], "in-a", "out-a")]);
        let r = for_pair(&idx, &slow, &fast).unwrap();
        assert_eq!(r.slow_launch, SlowLaunch::Fast);
        let s = &r.sets[0];
        // Two buffers typed from the parameters, then one bytes arg per parameter.
        assert!(
            matches!(&s.args[0], ResolvedArg::Buffer { name, elem: ElemType::F32, len: 1024, role: Role::In, .. } if name == "in")
        );
        assert!(
            matches!(&s.args[1], ResolvedArg::Buffer { name, role: Role::Inout, .. } if name == "out")
        );
        assert_eq!(s.fast[0].args, vec![2, 3, 4]);
        assert_eq!(s.fast[0].block, [32, 8, 1]);
        assert_eq!(
            (s.slow[0].kernel.as_str(), s.slow[0].block),
            ("t_naive", [32, 8, 1])
        );
        assert_eq!(s.expected.len(), 1);
        assert_eq!(s.expected[0].arg, 1);
        assert!(
            matches!(&s.args[4], ResolvedArg::Bytes { bytes, pointers, .. } if bytes == &[0, 8, 0, 0] && pointers.is_empty())
        );
        assert!(!s.fast[0].cooperative && !s.slow[0].cooperative);
    }

    /// A kernel the program launched cooperatively (it syncs its grid) replays
    /// cooperatively on both sides: a plain launch would fail at `grid.sync()`.
    /// A launch that left every buffer as it was (the result computed again into the same
    /// buffer): the buffer the body only stores to becomes an output, poisoned before the
    /// launch and expected to hold the captured bytes after it; one the body also reads
    /// (`+=`) stays an input, and the launch then names no output.
    #[test]
    fn an_unchanged_launch_expects_the_buffers_its_body_only_writes() {
        let ps = [("in", "const float *"), ("out", "float *"), ("n", "int")];
        let body = |op: &str| {
            format!(
                "__global__ void k(const float *in, float *out, int n) {{\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) out[i] {op} in[i] * 2.0f;\n}}\n"
            )
        };
        let with_source = |src: String| {
            let mut u = unit("k", &ps);
            u.source = src;
            u
        };
        let idx = index_of(vec![manifest("k", [256, 1, 1], "in-a", "zeros")]);
        let set = with_source(body("="));
        let r = for_pair(&idx, &set, &set).unwrap();
        let s = &r.sets[0];
        assert!(
            matches!(&s.args[1], ResolvedArg::Buffer { name, role: Role::Out, init: Init::Poison, .. } if name == "out"),
            "{:?}",
            s.args[1]
        );
        assert!(matches!(
            &s.args[0],
            ResolvedArg::Buffer { role: Role::In, .. }
        ));
        assert_eq!(s.expected.len(), 1);
        assert_eq!(s.expected[0].arg, 1);
        assert!(matches!(&s.expected[0].init, Init::Captured { id, .. } if id == "zeros"));
        let acc = with_source(body("+="));
        let r = for_pair(&idx, &acc, &acc).unwrap();
        assert!(r.sets[0].expected.is_empty());
        assert!(matches!(
            &r.sets[0].args[1],
            ResolvedArg::Buffer { role: Role::In, .. }
        ));
    }

    /// Of two launches of one kernel, the one that changed memory serves, even when a launch
    /// that changed nothing came first (another run of the program, or an earlier process).
    #[test]
    fn a_launch_that_changed_memory_is_preferred_to_an_earlier_one_that_did_not() {
        let first = manifest("k", [32, 1, 1], "in-a", "zeros");
        let mut later = manifest("k", [64, 1, 1], "in-a", "out-a");
        later.seq = 7;
        let idx = index_of(vec![first, later]);
        let u = unit(
            "k",
            &[("in", "const float *"), ("out", "float *"), ("n", "int")],
        );
        let (_, m) = idx.find(&u).unwrap();
        assert_eq!((m.seq, m.block), (7, [64, 1, 1]));
    }

    /// One launch's manifest for the launcher tests: `ptrs` are (allocation, bytes, before,
    /// after) passed in order, then one int parameter.
    fn launch_of(kernel: &str, pid: u32, seq: u64, ptrs: &[(usize, &str, &str)]) -> Manifest {
        let mut m = manifest(kernel, [256, 1, 1], "x", "x");
        m.pid = pid;
        m.seq = seq;
        m.params = ptrs
            .iter()
            .enumerate()
            .map(|(i, (alloc, _, _))| CapturedParam::address(8 * i, 0, *alloc))
            .chain([CapturedParam::scalar(8 * ptrs.len(), "00040000")])
            .collect();
        m.allocs = ptrs
            .iter()
            .map(|(_, before, after)| CapturedAlloc::device(before, after))
            .collect();
        m
    }

    const LAUNCHERS: &str = "__global__ void ka(float *m, const float *x, int n) { int i = threadIdx.x; if (i < n) m[i] = x[i]; }\n\
__global__ void kb(float *o, const float *m, const float *x, int n) { int i = threadIdx.x; if (i < n) o[i] = m[i] + x[i]; }\n\
__global__ void kf(float *o, float *m, const float *x, int n) { int i = threadIdx.x; if (i < n) { m[i] = x[i]; o[i] = 2.0f * x[i]; } }\n\
void two_step(float *o, float *m, const float *x, int n) {\n  ka<<<n / 256, 256>>>(m, x, n);\n  kb<<<n / 256, 256>>>(o, m, x, n);\n}\n\
void fused(float *o, float *m, const float *x, int n) {\n  kf<<<n / 256, 256>>>(o, m, x, n);\n}\n\
void shifted(float *o, float *m, const float *x, int n) {\n  kf<<<n / 256, 256>>>(o, m, x + 4, n);\n}\n";

    /// Two host launchers, each captured in its own process: the slow one's two launches and
    /// the fast one's one run on buffers named by the launchers' parameters, filled as the fast
    /// run found them and expected as it left them; a launcher passing `x + 4` is refused by
    /// name, and a sequence whose buffer changed between its launches is refused.
    #[test]
    fn host_launchers_replay_their_captured_sequences_on_shared_buffers() {
        let ps = [
            ("o", "float *"),
            ("m", "float *"),
            ("x", "const float *"),
            ("n", "int"),
        ];
        let launcher = |name: &str| {
            let mut u = unit(name, &ps);
            u.source = LAUNCHERS.into();
            u
        };
        // The slow launcher's process runs ka then kb (`m` as kb found it), the fast one kf.
        let processes = |kb_m: &str| {
            index_of(vec![
                launch_of("ka", 1, 0, &[(0, "m0", "m1"), (1, "x0", "x0")]),
                launch_of(
                    "kb",
                    1,
                    1,
                    &[(0, "o0", "o1"), (1, kb_m, kb_m), (2, "x0", "x0")],
                ),
                launch_of(
                    "kf",
                    2,
                    0,
                    &[(0, "o0", "o1"), (1, "m0", "m1"), (2, "x0", "x0")],
                ),
            ])
        };
        let idx = processes("m1");
        let r = for_pair(&idx, &launcher("two_step"), &launcher("fused")).unwrap();
        let s = &r.sets[0];
        let names: Vec<(&str, Role)> = s
            .args
            .iter()
            .filter_map(|a| match a {
                ResolvedArg::Buffer { name, role, .. } => Some((name.as_str(), *role)),
                _ => None,
            })
            .collect();
        assert_eq!(
            names,
            vec![("o", Role::Inout), ("m", Role::Inout), ("x", Role::In)]
        );
        let kernels = |l: &[Launch]| l.iter().map(|l| l.kernel.clone()).collect::<Vec<_>>();
        assert_eq!(kernels(&s.slow), vec!["ka", "kb"]);
        assert_eq!(kernels(&s.fast), vec!["kf"]);
        // kb's first argument is `o`: buffer 0; its `m` is buffer 1.
        let kb_args = &s.slow[1].args;
        let ptr = |i: usize| match &s.args[kb_args[i]] {
            ResolvedArg::Bytes { pointers, .. } => pointers.first().map(|p| p.arg),
            _ => None,
        };
        assert_eq!(
            (ptr(0), ptr(1), ptr(2), ptr(3)),
            (Some(0), Some(1), Some(2), None)
        );
        let exp: Vec<(usize, String)> = s
            .expected
            .iter()
            .map(|e| match &e.init {
                Init::Captured { id, .. } => (e.arg, id.clone()),
                _ => (e.arg, String::new()),
            })
            .collect();
        assert_eq!(exp, vec![(0, "o1".to_string()), (1, "m1".to_string())]);

        let err = for_pair(&idx, &launcher("two_step"), &launcher("shifted")).unwrap_err();
        assert!(err.to_string().contains("`x + 4`"), "{err}");

        // `m` changed between ka and kb: the host wrote it.
        let broken = processes("m9");
        let err = for_pair(&broken, &launcher("fused"), &launcher("two_step")).unwrap_err();
        assert!(err.to_string().contains("`m` changed between"), "{err}");
    }

    /// A unit holds device code only: the launcher's own body comes from the program's file
    /// in the capture's scratch copy of the tree, the definition at or after the unit's line
    /// (an earlier function of the same name launches something else).
    #[test]
    fn a_launchers_body_is_read_from_the_captures_scratch_tree() {
        let d = tempfile::tempdir().unwrap();
        let tree = d.path().join("work/tree/pair");
        std::fs::create_dir_all(&tree).unwrap();
        let host = format!("{LAUNCHERS}\nnamespace old {{ void fused(float *o, float *m, const float *x, int n) {{ ka<<<1, 1>>>(m, x, n); }} }}\n");
        // The old `fused` comes last in the file; the unit's line names the first.
        std::fs::write(tree.join("main.cu"), &host).unwrap();
        let line = host
            .lines()
            .position(|l| l.starts_with("void fused("))
            .unwrap() as u32
            + 1;
        let device_only: String = host
            .lines()
            .filter(|l| l.starts_with("__global__"))
            .map(|l| format!("{l}\n"))
            .collect();
        let ps = [
            ("o", "float *"),
            ("m", "float *"),
            ("x", "const float *"),
            ("n", "int"),
        ];
        let mut fused = unit("fused", &ps);
        fused.source = device_only;
        fused.line = line;
        let mut idx = index_of(vec![launch_of(
            "kf",
            2,
            0,
            &[(0, "o0", "o1"), (1, "m0", "m1"), (2, "x0", "x0")],
        )]);
        for (e, _) in &mut idx.manifests {
            e.root = d.path().to_path_buf();
        }
        let (params, seq) = launcher_sequence(&idx, &fused).unwrap();
        assert_eq!(params, vec!["o", "m", "x", "n"]);
        assert_eq!(
            seq,
            vec![(
                "kf".to_string(),
                vec!["o".into(), "m".into(), "x".into(), "n".into()]
            )]
        );
        // A kernel unit is not a launcher.
        let mut kf = unit("kf", &ps);
        kf.source = LAUNCHERS.into();
        assert!(launcher_sequence(&idx, &kf).is_none());
    }

    #[test]
    fn a_cooperative_capture_replays_cooperatively_on_both_sides() {
        let ps = [("in", "const float *"), ("out", "float *"), ("n", "int")];
        let (slow, fast) = (unit("t_naive", &ps), unit("t_tiled", &ps));
        let mut m = manifest("t_tiled", [32, 8, 1], "in-a", "out-a");
        m.via = "cuLaunchKernelEx".into();
        m.cooperative = true;
        let r = for_pair(&index_of(vec![m]), &slow, &fast).unwrap();
        let s = &r.sets[0];
        assert!(s.fast[0].cooperative && s.slow[0].cooperative);
    }

    #[test]
    fn a_slow_kernel_captured_with_the_same_parameters_keeps_its_own_launch() {
        let ps = [("in", "const float *"), ("out", "float *"), ("n", "int")];
        let (slow, fast) = (unit("t_naive", &ps), unit("t_tiled", &ps));
        let idx = index_of(vec![
            manifest("t_naive", [32, 32, 1], "in-a", "out-a"),
            manifest("t_tiled", [32, 8, 1], "in-a", "out-a"),
        ]);
        let r = for_pair(&idx, &slow, &fast).unwrap();
        assert_eq!(r.slow_launch, SlowLaunch::Own);
        assert_eq!(r.sets[0].slow[0].block, [32, 32, 1]);
        // Its pointers land on the fast capture's buffers.
        let ResolvedArg::Bytes { pointers, .. } = &r.sets[0].args[r.sets[0].slow[0].args[1]] else {
            panic!("bytes arg")
        };
        assert_eq!(pointers[0].arg, 1);
        // Other input bytes (each version run by its own process): still its own grid
        // and scalars, on the fast capture's bytes.
        let idx = index_of(vec![
            manifest("t_naive", [32, 32, 1], "in-b", "out-b"),
            manifest("t_tiled", [32, 8, 1], "in-a", "out-a"),
        ]);
        let r = for_pair(&idx, &slow, &fast).unwrap();
        assert_eq!(r.slow_launch, SlowLaunch::Own);
        assert_eq!(r.sets[0].slow[0].block, [32, 32, 1]);
        let ResolvedArg::Buffer { init, .. } = &r.sets[0].args[0] else {
            panic!("buffer")
        };
        assert!(matches!(init, Init::Captured { id, .. } if id == "in-a"));
        // Another scalar passed (`n`) over the same buffers, ending with the same results:
        // its own launch, scalars included, on the buffers they share.
        let mut other_n = manifest("t_naive", [32, 32, 1], "in-a", "out-a");
        other_n.params[2].hex = "00100000".into();
        let idx = index_of(vec![
            other_n.clone(),
            manifest("t_tiled", [32, 8, 1], "in-a", "out-a"),
        ]);
        let r = for_pair(&idx, &slow, &fast).unwrap();
        assert_eq!(r.slow_launch, SlowLaunch::Mapped);
        let set = &r.sets[0];
        assert!(
            matches!(&set.args[set.slow[0].args[2]], ResolvedArg::Bytes { bytes, .. } if bytes == &[0, 0x10, 0, 0])
        );
        // Ending with other results: not the same problem, so the fast launch instead.
        other_n.allocs[1].after = "out-b".into();
        let idx = index_of(vec![
            other_n,
            manifest("t_tiled", [32, 8, 1], "in-a", "out-a"),
        ]);
        assert_eq!(
            for_pair(&idx, &slow, &fast).unwrap().slow_launch,
            SlowLaunch::Fast
        );
        // The same parameters over buffers of other sizes (Parboil lbm's two grid
        // layouts): refused by name, neither launch stands for the other.
        let mut other_layout = manifest("t_naive", [32, 32, 1], "in-a", "out-b");
        other_layout.allocs[0].bytes = 6144;
        let idx = index_of(vec![
            other_layout,
            manifest("t_tiled", [32, 8, 1], "in-a", "out-a"),
        ]);
        let e = for_pair(&idx, &slow, &fast).unwrap_err();
        assert!(
            matches!(&e, ReplayError::Unsupported { kernel, why }
                if kernel == "t_naive" && why.contains("in: 6144 bytes at offset 0, not 4096 at 0")),
            "{e}"
        );
        // Or the same sizes, but pointers at another offset into them (lbm passes each
        // grid past a margin whose size its layout sets).
        let mut other_offset = manifest("t_naive", [32, 32, 1], "in-a", "out-b");
        other_offset.params[1].pointers[0].offset = 1024;
        let idx = index_of(vec![
            other_offset,
            manifest("t_tiled", [32, 8, 1], "in-a", "out-a"),
        ]);
        let e = for_pair(&idx, &slow, &fast).unwrap_err();
        assert!(
            e.to_string()
                .contains("out: 4096 bytes at offset 1024, not 4096 at 0"),
            "{e}"
        );
        // Addresses differ between processes: they are not compared.
        let mut moved = manifest("t_naive", [32, 32, 1], "in-a", "out-a");
        moved.params[0].hex = "00007f0000200000".into();
        let idx = index_of(vec![
            moved,
            manifest("t_tiled", [32, 8, 1], "in-a", "out-a"),
        ]);
        assert_eq!(
            for_pair(&idx, &slow, &fast).unwrap().slow_launch,
            SlowLaunch::Own
        );
    }

    /// A slow kernel taking a pointer where the fast one takes a struct by value (Parboil
    /// mri-gridding's `ReconstructionSample*` against a struct of arrays): the fast launch
    /// cannot stand for it, whether or not the slow kernel was captured.
    #[test]
    fn a_slow_kernel_whose_parameters_are_other_data_structures_is_refused() {
        let slow = unit(
            "reorder_aos",
            &[
                ("in", "const float *"),
                ("out", "float *"),
                ("sorted", "Sample *"),
            ],
        );
        let fast = unit(
            "reorder_soa",
            &[
                ("in", "const float *"),
                ("out", "float *"),
                ("sorted", "SoA"),
            ],
        );
        let mut fm = manifest("reorder_soa", [32, 8, 1], "in-a", "out-a");
        fm.params[2] = CapturedParam {
            offset: 16,
            size: 24,
            hex: "00".repeat(24),
            pointers: vec![],
        };
        let e = for_pair(&index_of(vec![fm.clone()]), &slow, &fast).unwrap_err();
        assert!(
            matches!(&e, ReplayError::Unsupported { kernel, why } if kernel == "reorder_aos"
                && why.starts_with("parameter 2 (`sorted`) is 8 bytes where the fast kernel's captured launch passes 24")),
            "{e}"
        );
        // Its own capture says the same.
        let mut sm = manifest("reorder_aos", [32, 8, 1], "in-a", "out-b");
        sm.params[2] = CapturedParam::address(16, 0xa0_0000_0000, 0);
        let e = for_pair(&index_of(vec![sm, fm]), &slow, &fast).unwrap_err();
        assert!(e.to_string().contains("is 8 bytes where"), "{e}");
    }

    /// Versions with other parameters (mri-fhd's naive kernel takes the k-space arrays the
    /// optimized one reads from `__constant__`): the slow kernel's own launch, its buffers
    /// the fast capture's ones with the same bytes before the launch (outputs that both
    /// start as zeros told apart by name), the rest its own; refused when the fast kernel
    /// writes a buffer no slow buffer it wrote started as.
    #[test]
    fn a_slow_kernel_with_other_parameters_runs_its_own_launch_on_the_buffers_it_shares() {
        use crate::gpu::capture::manifest::CapturedAlloc as A;
        let slow = unit(
            "fh_naive",
            &[
                ("k", "const float *"),
                ("x", "const float *"),
                ("im", "float *"),
                ("re", "float *"),
                ("n", "int"),
            ],
        );
        let fast = unit(
            "fh_const",
            &[("x", "const float *"), ("re", "float *"), ("im", "float *")],
        );
        let addr = |a: usize| CapturedParam::address(8 * a, 0xa0_0000_0000 + a as u64 * 4096, a);
        let fm = Manifest::for_test(
            "fh_const",
            vec![addr(0), addr(1), addr(2)],
            vec![
                A::device("x0", "x0"),
                A::device("zeros", "re1"),
                A::device("zeros", "im1"),
            ],
        );
        let mut sm = Manifest::for_test(
            "fh_naive",
            vec![
                addr(0),
                addr(1),
                addr(2),
                addr(3),
                CapturedParam::scalar(32, "00100000"),
            ],
            vec![
                A::device("k0", "k0"),
                A::device("x0", "x0"),
                A::device("zeros", "im1"),
                A::device("zeros", "re1"),
            ],
        );
        sm.block = [64, 1, 1];
        let r = for_pair(&index_of(vec![sm.clone(), fm.clone()]), &slow, &fast).unwrap();
        assert_eq!(r.slow_launch, SlowLaunch::Mapped);
        let set = &r.sets[0];
        assert_eq!(set.slow[0].block, [64, 1, 1]);
        let target = |p: usize| match &set.args[set.slow[0].args[p]] {
            ResolvedArg::Bytes { pointers, .. } => pointers.first().map(|q| q.arg),
            _ => panic!("bytes"),
        };
        // x, im and re are the fast capture's buffers 0, 2 and 1; k is a buffer of its own.
        assert_eq!(
            (target(1), target(2), target(3), target(4)),
            (Some(0), Some(2), Some(1), None)
        );
        let k = target(0).unwrap();
        assert!(k >= 3);
        assert!(matches!(&set.args[k],
            ResolvedArg::Buffer { name, init: Init::Captured { id, .. }, role: Role::In, .. }
                if name == "slow.k" && id == "k0"));
        // The slow kernel's run ended `re` with other results (blobs that differ and,
        // here, cannot be read): nothing to compare with the fast kernel's `re`.
        sm.allocs[3].after = "re2".into();
        let e = for_pair(&index_of(vec![sm.clone(), fm.clone()]), &slow, &fast).unwrap_err();
        assert!(
            e.to_string()
                .contains("the fast kernel writes `re` (4096 bytes)"),
            "{e}"
        );
        // Results the two programs wrote, read from the blobs: the same within verify's
        // tolerance (another rounding) is a twin; one point off is not.
        let d = tempfile::tempdir().unwrap();
        let store = BlobStore::new(d.path().join("blobs"));
        let put = |v: &[f32]| {
            let bytes: Vec<u8> = v.iter().flat_map(|x| x.to_le_bytes()).collect();
            store.put(&bytes).unwrap()
        };
        let re: Vec<f32> = (0..1024).map(|i| (i as f32 * 0.1).cos() * 50.0).collect();
        let rounded: Vec<f32> = re.iter().map(|x| x * (1.0 + 2e-4)).collect();
        let mut wrong = rounded.clone();
        wrong[700] += 10.0;
        let in_tmp = |ms: Vec<Manifest>| {
            let mut idx = index_of(ms);
            for (e, _) in &mut idx.manifests {
                e.root = d.path().to_path_buf();
            }
            idx
        };
        let (mut fm, mut sm) = (fm, sm);
        fm.allocs[1].after = put(&re);
        sm.allocs[3].after = put(&rounded);
        let r = for_pair(&in_tmp(vec![sm.clone(), fm.clone()]), &slow, &fast).unwrap();
        assert_eq!(r.slow_launch, SlowLaunch::Mapped);
        sm.allocs[3].after = put(&wrong);
        assert!(for_pair(&in_tmp(vec![sm, fm]), &slow, &fast).is_err());
    }

    #[test]
    fn two_programs_outputs_agree_within_verifys_tolerance_and_other_layouts_do_not() {
        let f32s = |v: &[f32]| HostBuffer {
            elem: ElemType::F32,
            bytes: v.iter().flat_map(|x| x.to_le_bytes()).collect(),
        };
        let a: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.37).sin() * 100.0).collect();
        let near: Vec<f32> = a.iter().map(|x| x * 1.0005 + 1e-4).collect();
        assert!(outputs_agree(&f32s(&a), &f32s(&near)));
        // One element off by more than the tolerance (mri-gridding's programs bin their
        // samples differently and differ in 219 of 524,288 grid points).
        let mut one_off = near.clone();
        one_off[500] += 5.0;
        assert!(!outputs_agree(&f32s(&a), &f32s(&one_off)));
        // The same values in another order (an array of structs against a struct of arrays).
        let mut moved = a.clone();
        moved.rotate_left(1);
        assert!(!outputs_agree(&f32s(&a), &f32s(&moved)));
        // Integers: equal.
        let u32s = |b: &[u8]| HostBuffer {
            elem: ElemType::U32,
            bytes: b.to_vec(),
        };
        let ints: Vec<u8> = (0..400u32).flat_map(|i| i.to_le_bytes()).collect();
        assert!(outputs_agree(&u32s(&ints), &u32s(&ints)));
        let mut off = ints.clone();
        off[0] ^= 1;
        assert!(!outputs_agree(&u32s(&ints), &u32s(&off)));
        assert!(!outputs_agree(&u32s(&ints), &u32s(&ints[4..])));
        // Other element types are no twins.
        assert!(!outputs_agree(&u32s(&ints), &f32s(&[0.0; 400])));
    }

    #[test]
    fn a_template_instance_replays_under_its_captured_name_expression_on_both_sides() {
        let ps = [("in", "const float *"), ("out", "float *"), ("n", "int")];
        let mut u = unit("norm", &ps);
        u.template_params = vec!["class T".into()];
        let mut m = manifest("norm", [256, 1, 1], "in-a", "out-a");
        m.name_expression = "norm<float>".into();
        let r = for_pair(&index_of(vec![m]), &u, &u).unwrap();
        assert_eq!(r.sets[0].fast[0].kernel, "norm<float>");
        assert_eq!(
            r.sets[0].slow[0].kernel, "norm<float>",
            "the self-check's slow side"
        );
        let mut naive = unit("norm_naive", &ps);
        naive.template_params = vec!["class T".into()];
        assert_eq!(slow_symbol(&naive, &u, "norm<float>"), "norm_naive<float>");
    }

    #[test]
    fn template_parameters_take_the_captured_instances_arguments() {
        assert_eq!(
            crate::harness::template::launch_args("k<float, Op<int, 2>, 4>"),
            ["float", "Op<int, 2>", "4"]
        );
        assert!(crate::harness::template::launch_args("k").is_empty());
        let ps = [("dinp", "Tdinp *"), ("dweight", "Tparams *"), ("n", "int")];
        let mut u = unit("lnb", &ps);
        u.template_params = vec!["typename Tdinp".into(), "typename Tparams".into()];
        assert_eq!(
            elem_of(&u, 1, "lnb<float, __nv_bfloat16>"),
            Some(ElemType::BF16)
        );
        assert_eq!(
            elem_of(&u, 0, "lnb<float, __nv_bfloat16>"),
            Some(ElemType::F32)
        );
        assert_eq!(elem_of(&u, 0, "lnb"), None, "no instance: unknown");
    }

    #[test]
    fn skipped_launches_texture_objects_and_other_arities_are_named() {
        let ps = [("in", "const float *"), ("out", "float *"), ("n", "int")];
        let fast = unit("t_tiled", &ps);
        let mut m = manifest("t_tiled", [32, 8, 1], "in-a", "out-a");
        m.skipped = Some("over the byte budget".into());
        let idx = index_of(vec![m]);
        assert!(matches!(
            for_pair(&idx, &fast, &fast),
            Err(ReplayError::Skipped { .. })
        ));
        let idx = index_of(vec![manifest("t_tiled", [32, 8, 1], "in-a", "out-a")]);
        let two = unit("t_tiled", &ps[..2]);
        assert!(matches!(
            for_pair(&idx, &two, &two),
            Err(ReplayError::Params { .. })
        ));
        let tex = unit(
            "t_tiled",
            &[
                ("t", "cudaTextureObject_t"),
                ("out", "float *"),
                ("n", "int"),
            ],
        );
        let err = for_pair(&idx, &tex, &tex).unwrap_err();
        assert!(
            matches!(&err, ReplayError::Unsupported { why, .. } if why.contains("recorded no texture object")),
            "{err}"
        );
        assert!(matches!(
            for_pair(&index_of(vec![]), &fast, &fast),
            Err(ReplayError::NotCaptured(_))
        ));
    }

    /// A texture object over a CUDA array, as the injector records it: the array's image
    /// is an allocation like any other, typed by the texels, and the parameter's handle is
    /// made anew by the runner (the object entry names the bytes arg to write it into).
    /// The slow kernel, captured with its own texture over the same kind of array, keeps
    /// its own launch and gets its own object over the fast capture's image.
    #[test]
    fn a_texture_object_parameter_replays_over_its_captured_array() {
        use crate::gpu::capture::manifest::CapturedObject;
        use crate::gpu::objects::{ObjectDesc, ObjectKind, ObjectResource, Sampling};
        let ps = [
            ("t", "cudaTextureObject_t"),
            ("out", "float *"),
            ("n", "int"),
        ];
        let (slow, fast) = (unit("tex_naive", &ps), unit("tex_tiled", &ps));
        let with_tex = |kernel: &str, block, image: &str, handle: &str| {
            let mut m = manifest(kernel, block, image, "out-a");
            // Parameter 0 is a handle, not an address; allocation 0 is the array's image.
            m.params[0].pointers.clear();
            m.params[0].hex = handle.into();
            m.allocs[0].kind = AllocKind::Array;
            m.objects = vec![CapturedObject {
                param: 0,
                object: ObjectDesc {
                    kind: ObjectKind::Texture,
                    resource: ObjectResource::Array {
                        alloc: 0,
                        format: 32,
                        channels: 1,
                        width: 32,
                        height: 32,
                        depth: 0,
                        flags: 0,
                    },
                    sampling: Some(Sampling {
                        address_mode: [1, 1, 1],
                        filter_mode: 0,
                        flags: 0,
                        max_anisotropy: 0,
                        mipmap_filter_mode: 0,
                        mipmap_level_bias: 0.0,
                        min_mipmap_level_clamp: 0.0,
                        max_mipmap_level_clamp: 0.0,
                        border_color: [0.0; 4],
                        reserved: [0; 12],
                    }),
                },
            }];
            m
        };
        let idx = index_of(vec![with_tex(
            "tex_tiled",
            [16, 16, 1],
            "img-a",
            "0100000000000000",
        )]);
        let r = for_pair(&idx, &fast, &fast).unwrap();
        let s = &r.sets[0];
        assert!(
            matches!(&s.args[0], ResolvedArg::Buffer { name, elem: ElemType::F32, len: 1024, .. } if name == "t.memory"),
            "{:?}",
            s.args[0]
        );
        assert_eq!(s.objects.len(), 1);
        assert_eq!(s.objects[0].arg, s.fast[0].args[0]);
        assert_eq!(s.objects[0].object.resource.alloc(), 0);
        // The slow kernel's own capture: another process, another handle value, another image.
        let idx = index_of(vec![
            with_tex("tex_naive", [32, 32, 1], "img-b", "0200000000000000"),
            with_tex("tex_tiled", [16, 16, 1], "img-a", "0100000000000000"),
        ]);
        let r = for_pair(&idx, &slow, &fast).unwrap();
        assert_eq!(r.slow_launch, SlowLaunch::Own);
        let s = &r.sets[0];
        assert_eq!(s.slow[0].block, [32, 32, 1]);
        assert_eq!(s.objects.len(), 2);
        assert_eq!(s.objects[1].arg, s.slow[0].args[0]);
        assert_eq!(
            s.objects[1].object.resource.alloc(),
            0,
            "the fast capture's image"
        );
    }
}
