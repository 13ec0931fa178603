//! `kernelpair harness infer`: a harness inferred from the host code around a pair's launch
//! site and from the kernel body. Buffer lengths come from allocations (element counts over
//! named sizes), roles from copies, memsets and the body's writes, size values from
//! defines, assignments and run scripts, scalars and launches from the launch site,
//! `__constant__` tables from `cudaMemcpyToSymbol`. Whatever the code does not say is an
//! [`Unknown`] written as a `TODO` with its reason, so `harness check` fails until someone
//! (a person or an LLM) completes it.

use super::draft::{self, idents, int_scalars, site_for, translate, Names};
pub use super::draft_value::Unknown;
use super::draft_value::{ArgDraft, ConstDraft, Field, HarnessDraft, Irregular};
use super::draft_value::{LaunchDraft, Launches, TextureDraft};
use super::infer_asof;
use super::infer_host::{self, Direction, Host};
use super::infer_kernel::{self, body_facts, BodyFacts, WriteKind};
use super::infer_template;
use super::spec::{Expr, RawHarness, RawInit, RawWindow};
use super::validate::launch_base;
use super::{c_base_type, c_is_pointer, ElemType};
use crate::cuda::cexpr::{self, Kind};
use crate::cuda::syntax;
use crate::cuda::texture::{shimmed_symbols, Declared};
use crate::record::{KernelUnit, LaunchSite, Pair, Record};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// An inferred harness: the value, and what it leaves open.
#[derive(Debug, Clone)]
pub struct Inferred {
    pub harness: HarnessDraft,
    pub unknowns: Vec<Unknown>,
    /// What `--assume-size` filled in, with why the code did not say it.
    pub assumed: Vec<Unknown>,
    /// Outputs written through float atomics: reruns may differ in the last bits.
    pub float_atomics: Vec<String>,
}

impl Inferred {
    pub fn complete(&self) -> bool {
        self.unknowns.is_empty()
    }

    /// The harness file: what is open and assumed at its head, then the tables.
    pub fn toml(&self) -> String {
        self.harness.write(&self.unknowns, &self.assumed)
    }
}

/// Whether host text defines a program's `main` (from the host index).
fn defines_main(text: &str) -> bool {
    crate::cuda::host::functions_cached(text)
        .iter()
        .any(|f| f.name == "main")
}

/// Read the host context of a unit's launch site from the suite root: the launch file, the
/// other sources in its folder, and the run command of its folder (or the folder above).
pub fn load_host(root: &Path, unit: &KernelUnit) -> Host {
    let Some(site) = site_for(unit) else {
        return Host::default();
    };
    let path = root.join(&site.path);
    let file = crate::path_io::read_text(&path)
        .map(|t| infer_host::strip_comments(&t))
        .unwrap_or_default();
    let mut others = Vec::new();
    let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
    // The launch file's folder, then its parent's own files (dwt2d's `dwt_cuda/fdwt53.cu`
    // is called from `dwt2d/dwt.cu`), never the suite root's.
    let mut dirs = vec![dir.clone()];
    if let Some(parent) = dir.parent().filter(|p| p.starts_with(root) && *p != root) {
        dirs.push(parent.to_path_buf());
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for d in &dirs {
        let Ok(rd) = std::fs::read_dir(d) else {
            continue;
        };
        let mut here: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.path())
            .filter(|p| p != &path && p.is_file())
            .filter(|p| {
                p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| ["c", "cu", "cpp", "cc", "h", "cuh", "hpp"].contains(&e))
            })
            .collect();
        here.sort();
        files.extend(here);
    }
    // A launch file with its own `main` is a whole program: a neighbour with another `main`
    // is another program (llm.c's dev/cuda: one program per file), not its host code.
    let whole_program = defines_main(&file);
    let mut near: Vec<(PathBuf, String)> = Vec::new();
    for f in files.into_iter().take(32) {
        if let Ok(t) = crate::path_io::read_text(&f) {
            if t.len() < 512 * 1024 {
                let t = infer_host::strip_comments(&t);
                if !(whole_program && defines_main(&t)) {
                    near.push((f, t));
                }
            }
        }
    }
    others.extend(crate::cuda::host_files::program_neighbours(
        &path, &file, near,
    ));
    // The host code as the compiler reads it: settled `#ifdef`s resolved, over the macros
    // the program's files define and the `-D` flags of its build.
    let build_defines: BTreeSet<String> = unit
        .build_flags
        .iter()
        .filter_map(|f| f.strip_prefix("-D"))
        .map(|d| d.split('=').next().unwrap_or(d).to_string())
        .collect();
    // Every name the program's files `#define`, read once for all the texts' conditions.
    let file_defines: BTreeSet<String> = std::iter::once(file.as_str())
        .chain(others.iter().map(String::as_str))
        .flat_map(crate::cuda::ppcond::defines)
        .map(|d| d.name.to_string())
        .collect();
    let defined = |m: &str| infer_host::macro_state(&build_defines, &file_defines, m);
    let resolved = crate::cuda::ppcond::resolved_text(&file, &defined);
    // A launch inside a branch this reading turns off (llm.c's `#ifdef ENABLE_CUDNN`
    // kernels) is built with that branch's flag: then the texts stay as they are.
    fn line(t: &str, n: u32) -> Option<&str> {
        t.lines().nth(n.saturating_sub(1) as usize).map(str::trim)
    }
    let compiled = line(&resolved, site.line) == line(&file, site.line);
    let (file, others) = if compiled {
        let others: Vec<String> = others
            .iter()
            .map(|t| crate::cuda::ppcond::resolved_text(t, &defined))
            .collect();
        (resolved, others)
    } else {
        (file, others)
    };
    let run_args =
        infer_host::run_args(&dir).or_else(|| dir.parent().and_then(infer_host::run_args));
    Host {
        file,
        compiled,
        launch_line: site.line,
        others,
        run_args,
        run_cmds: {
            let here = infer_host::run_commands(&dir);
            if here.is_empty() {
                dir.parent()
                    .map(infer_host::run_commands)
                    .unwrap_or_default()
            } else {
                here
            }
        },
        ..Host::default()
    }
}

/// [`load_host`] for a pair: the fast kernel's host code, with the slow kernel's own in
/// `slow_side` when the slow kernel is a natural one launched from another file.
pub fn load_pair_host(root: &Path, pair: &Pair) -> Host {
    let mut host = load_host(root, &pair.fast);
    if let Some(slow) = pair.slow.natural_unit() {
        let differs = match (site_for(slow), site_for(&pair.fast)) {
            (Some(a), Some(b)) => a.path != b.path || a.line != b.line,
            _ => false,
        };
        if differs {
            host.slow_side = Some(Box::new(load_host(root, slow)));
        }
    }
    host
}

/// Add to `defs` the host definitions of the names `expr` uses, recursively, where they are
/// plain arithmetic: a name set from the command line or a struct field stays a name (it
/// becomes a size whose value the run script or a person gives).
pub fn add_definitions(
    expr: &str,
    host: &Host,
    keep: &BTreeSet<String>,
    defs: &mut BTreeMap<String, String>,
) {
    let mut todo = idents(expr);
    let mut seen = BTreeSet::new();
    while let Some(w) = todo.pop() {
        if keep.contains(&w) || !seen.insert(w.clone()) {
            continue;
        }
        if let Some(d) = defs.get(&w) {
            // Already defined (a recorded launch definition): its names still need theirs.
            let body = d.split_once('=').map(|x| x.1).unwrap_or(d);
            let body = body.split_once('(').map(|x| x.1).unwrap_or(body);
            todo.extend(idents(&body.replace([';', ')'], " ").replace(['.'], " . ")));
            continue;
        }
        let Some(d) = host.definition(&w) else {
            continue;
        };
        let plain = !d.contains("argv")
            && !d.contains('[')
            && !d.contains('"')
            && cexpr::tokens(&d).is_ok()
            && !reads_member(&d);
        if !plain || d.trim() == w {
            continue;
        }
        let d = host.expand_calls(&d);
        let text = if infer_host::define_body(host.file.as_str(), &w).is_some()
            || host
                .others
                .iter()
                .any(|o| infer_host::define_body(o, &w).is_some())
        {
            format!("#define {w} {d}")
        } else {
            format!("{w} = {d}")
        };
        defs.insert(w.clone(), text);
        todo.extend(idents(&d));
    }
}

/// A parameter's element type, through one `#define fp float` or `typedef float fp;` in the
/// unit or the host code when the type is an alias: (type, the alias name).
pub fn elem_of(ty: &str, source: &str, host: &Host) -> (Option<ElemType>, Option<String>) {
    if let Some(e) = ElemType::from_c_type(ty) {
        return (Some(e), None);
    }
    let base = c_base_type(ty);
    // C++'s `bool` is one byte holding 0 or 1 on every CUDA target: a `u8` element that
    // keeps its C name (`c_type = "bool"`) and gets 0/1 inputs (see [`bool_init`]).
    if base == "bool" {
        return (Some(ElemType::U8), Some(base));
    }
    let texts = std::iter::once(source).chain(host.texts());
    for t in texts {
        let target = infer_host::define_body(t, &base).or_else(|| {
            t.lines().find_map(|l| {
                let d = l.trim().strip_prefix("typedef")?.trim().strip_suffix(';')?;
                let (old, new) = d.rsplit_once(char::is_whitespace)?;
                (new.trim() == base).then(|| old.trim().to_string())
            })
        });
        if let Some(e) = target.as_deref().and_then(ElemType::from_c_type) {
            return (Some(e), Some(base));
        }
    }
    (None, None)
}

/// `int width, height` or `float x;`: a declaration that gives `name` no value (the program
/// sets it later, with `fscanf` or in a loop), so not a definition of it.
pub fn declares_without_value(name: &str, def: &str) -> bool {
    let d = def.trim().trim_end_matches(';').trim();
    if d.starts_with('#') || d.starts_with("dim3") || d.contains(['(', '{', '[']) {
        return false;
    }
    d.split(',').any(|part| {
        let part = part.trim();
        !part.contains('=')
            && part
                .rsplit(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .next()
                == Some(name)
    })
}

/// A pointer parameter to a struct whose fields are all one scalar type
/// (`LatLong *` for `typedef struct { float lat; float lng; } LatLong;`, defined in the unit
/// or the host code): (the scalar, fields per struct, the struct's C name). None for other
/// types (pointers inside, mixed fields: those stay unknown).
pub fn struct_elem(ty: &str, source: &str, host: &Host) -> Option<(ElemType, usize, String)> {
    let base = c_base_type(ty);
    let texts = std::iter::once(source).chain(host.texts());
    infer_template::struct_of_scalars(&base, texts)
        .ok()
        .map(|(e, n)| (e, n, base))
}

/// A size the host code gives 0 that a buffer length uses: a declaration's initializer
/// before the program reads the real value (`int no_of_nodes = 0;` then `fscanf`), not a
/// size. Error (an unknown) in that case; other values pass through.
pub fn zero_length_size(name: &str, v: i64, len_texts: &[String]) -> Result<i64, String> {
    let in_len = len_texts
        .iter()
        .any(|l| idents(l).iter().any(|w| w == name));
    if v == 0 && in_len {
        return Err(format!(
            "`{name}` is 0 where it is declared, and a buffer length or the launch's grid or block uses it: the real value is set later (read from an input file or computed in a loop)"
        ));
    }
    Ok(v)
}

/// `data_d + (i * GRID_SIZE * BLOCK_SIZE)` at a launch inside `for (i = 0; …)`: the pointer
/// on the loop's first pass, where a factor of the offset is a counter that starts at 0, is
/// the base itself (`data_d`). None for other texts.
pub fn first_pass_base<'t>(
    var: &'t str,
    counters: &[(String, String)],
    host: &Host,
) -> Option<&'t str> {
    let (base, offset) = infer_host::split_top_level_plus(var)?;
    let base = base.trim();
    if !super::is_ident(base) {
        return None;
    }
    let mut off = offset.trim();
    while let Some(inner) = off.strip_prefix('(').and_then(|o| o.strip_suffix(')')) {
        off = inner.trim();
    }
    if off.contains(['+', '-', '/', '%', '(', '?']) {
        return None;
    }
    let zero_counter = off.split('*').any(|f| {
        let f = f.trim();
        counters
            .iter()
            .find(|(c, _)| c == f)
            .is_some_and(|(_, init)| host.int_value(init) == Ok(0))
    });
    zero_counter.then_some(base)
}

/// Whether `v` (size `k`'s value) is the product of two other sizes' values, each over 1.
pub fn product_of_others(k: &str, v: i64, values: &BTreeMap<String, i64>) -> bool {
    let others: Vec<i64> = values
        .iter()
        .filter(|(n, x)| n.as_str() != k && **x > 1 && **x < v)
        .map(|(_, x)| *x)
        .collect();
    others
        .iter()
        .enumerate()
        .any(|(i, a)| others[i..].iter().any(|b| a.checked_mul(*b) == Some(v)))
}

/// A launch's grid or block (`["a / 4", "1"]`) as one text of arithmetic (`a / 4 , 1`),
/// without the names in sums: an offset (`(n - offset) / 16`) is 0 legitimately.
fn launch_exprs(dims: &[String]) -> String {
    static AFTER: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"[-+]\s*[A-Za-z_]\w*").expect("regex"));
    static BEFORE: std::sync::LazyLock<regex::Regex> =
        std::sync::LazyLock::new(|| regex::Regex::new(r"[A-Za-z_]\w*\s*[-+]").expect("regex"));
    let v = dims.join(" , ");
    let v = AFTER
        .replace_all(&v.replace(['"', '[', ']'], " "), " ")
        .into_owned();
    BEFORE.replace_all(&v, " ").into_owned()
}

/// A `bool` buffer's inputs: only 0 and 1 are `bool` values (other bytes are undefined
/// behaviour in C++).
pub fn bool_init() -> Field<RawInit> {
    Field::noted(
        RawInit::IntRange {
            lo: Expr::Int(0),
            hi: Expr::Int(1),
        },
        "bool: 0 or 1",
    )
}

/// A buffer's length in elements, as host text, from its allocation or copies.
pub fn length_text(host: &Host, var: &str, elem_size: usize) -> Result<String, String> {
    match host.buffer_bytes(var) {
        Some(b) => Ok(elements_of(&b, host, elem_size)),
        None => Err(format!(
            "no cudaMalloc or cudaMemcpy of `{var}` in the host code (nor of one buffer size in every caller that passes it)"
        )),
    }
}

/// Byte-size text → element-count text, following one named byte size (`mem_size`).
pub fn elements_of(bytes: &str, host: &Host, elem_size: usize) -> String {
    // A count that reads struct fields (`d->w * d->h`) is no harness expression: the
    // named byte size stays, and its value is read with the fields.
    // `n * sizeof(float)` for a `float4` buffer is `n * 4 / 16` elements.
    let stripped = |b: &str| {
        let (e, ty) = infer_host::sizeof_factor(b)?;
        if super::draft::sizeof_type(&ty).is_none() && super::is_ident(&ty) {
            // A type parameter (`sizeof(T)` in `processDWT<T>`) sizing this buffer is its
            // element type: the buffer is the `T *` the caller allocated.
            host.sizeof_hints.borrow_mut().push((ty.clone(), elem_size));
        }
        if reads_member(&e) {
            return None;
        }
        match super::draft::sizeof_type(&ty) {
            // A smaller scalar read as a vector (`float` bytes of a `float4` list); a
            // larger type is a struct counted in its own units elsewhere.
            Some(k) if k < elem_size && !ty.contains('*') => {
                Some(format!("({e}) * {k} / {elem_size}"))
            }
            // A vector of the buffer's scalar (`n * sizeof(uint2)` for a `uint2 *` held as
            // `u32`): lengths count scalars.
            Some(k)
                if k > elem_size
                    && !ty.contains('*')
                    && ElemType::from_c_type(&ty).is_some_and(|s| s.size_of() == elem_size) =>
            {
                Some(format!("({e}) * {}", k / elem_size))
            }
            _ => Some(e),
        }
    };
    if let Some(e) = stripped(bytes) {
        return e;
    }
    let b = bytes.trim();
    if super::is_ident(b) {
        if let Some(d) = host.definition(b) {
            if let Some(e) = stripped(&d) {
                return e;
            }
        }
    }
    format!("({b}) / {elem_size}")
}

/// Whether host text reads a struct member (`d->w`, `s.n`; not a number `1.5`).
fn reads_member(e: &str) -> bool {
    e.contains("->")
        || cexpr::tokens(e).is_ok_and(|t| t.iter().any(|x| x.kind == Kind::Op && x.text == "."))
}

/// A role from what the body does and what the host copies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoleGuess {
    pub role: &'static str,
    /// Filled with zeros (a memset before the launch, or an atomic accumulator the host
    /// does not fill).
    pub zeros: bool,
}

/// The role rule: written by the body → `out` (or `inout` when the body also reads it, or
/// the host zeroes it or copies data into it before the launch: what the kernel does not
/// overwrite is then part of its result, as in a kernel that writes only where a mask is
/// set); atomics → `inout`; not written → `in`; passed to a function the unit lacks →
/// unknown.
pub fn role_of(
    param: &str,
    facts: &BodyFacts,
    copied_in: bool,
    memset_zero: bool,
) -> Result<RoleGuess, String> {
    match facts.writes.get(param) {
        Some(WriteKind::Atomic) => Ok(RoleGuess {
            role: "inout",
            zeros: memset_zero || !copied_in,
        }),
        Some(WriteKind::Store) => {
            let reads = facts.reads.contains(param);
            Ok(RoleGuess {
                role: if reads || memset_zero || copied_in {
                    "inout"
                } else {
                    "out"
                },
                zeros: memset_zero && !copied_in,
            })
        }
        None => match facts.opaque.get(param) {
            Some(why) => Err(format!(
                "the kernel does not write it visibly, but it is {why}"
            )),
            None => Ok(RoleGuess {
                role: "in",
                zeros: false,
            }),
        },
    }
}

/// A non-power-of-two value near `v` for the irregular size set (None for small values).
pub fn irregular(v: i64) -> Option<i64> {
    if v < 16 {
        return None;
    }
    let mut x = v - v / 8 + 1;
    if x.count_ones() == 1 {
        x += 1;
    }
    Some(x)
}

/// Choices the caller makes for what the code does not say.
#[derive(Debug, Clone, Default)]
pub struct InferOptions {
    /// Give every size the host code does not determine (read from a data file, a struct
    /// field) this value, and float scalars 0.5, marked `ASSUMED` in the file and listed in
    /// [`Inferred::assumed`], instead of leaving a TODO.
    pub assume_size: Option<i64>,
}

/// The `[[args]]` name of parameter `i` (`arg{i}` when the declaration has none).
fn arg_name(i: usize, p: &crate::record::Param) -> String {
    if p.name.is_empty() {
        format!("arg{i}")
    } else {
        p.name.clone()
    }
}

/// The init of an input with nothing more known: floats uniform in [-1, 1), integers 0..=100.
fn default_init(e: Option<ElemType>) -> Field<RawInit> {
    match e {
        Some(e) if e.is_float() => Field::known(RawInit::Uniform {
            lo: Expr::Float(-1.0),
            hi: Expr::Float(1.0),
        }),
        _ => Field::noted(
            RawInit::IntRange {
                lo: Expr::Int(0),
                hi: Expr::Int(100),
            },
            "not an index: values unconstrained",
        ),
    }
}

/// Floats drawn positive: for values that reach a log, sqrt, pow or divisor.
fn positive_init() -> Field<RawInit> {
    Field::noted(
        RawInit::Uniform {
            lo: Expr::Float(0.5),
            hi: Expr::Float(2.0),
        },
        "positive: its values reach a log, sqrt, pow or divisor",
    )
}

/// Infer a harness for a pair. `host` is the fast unit's launch context (empty when the
/// suite root is not known: then only the recorded launch definitions are used).
pub fn infer(pair: &Pair, host: &Host, opts: &InferOptions) -> Inferred {
    let first = infer_once(pair, host, opts);
    let r = match opts.assume_size {
        Some(v) if !first.assumed.is_empty() => smaller_assumption(pair, host, v, first),
        _ => first,
    };
    match opts.assume_size {
        Some(_) if only_over_a_limit(&r) => smaller_run_sizes(pair, host, opts, r),
        _ => r,
    }
}

/// With `--assume-size`, the run script's own sizes may put a launch over the device's
/// limits too (backprop's `./backprop 2097152` asks for a grid y of 131072, over 65535,
/// so the real program fails its launch): halve the script's integer arguments of 128 or
/// more until `harness check` passes, and say so in the file as an assumption.
fn smaller_run_sizes(pair: &Pair, host: &Host, opts: &InferOptions, first: Inferred) -> Inferred {
    let Some(args) = host.run_args.clone() else {
        return first;
    };
    let why = first.unknowns[0].reason.clone();
    let tries = (1..=12)
        .map_while(|k| {
            let scaled: Vec<String> = args
                .iter()
                .map(|a| match a.parse::<i64>() {
                    Ok(v) if v >= 128 => (v >> k).max(64).to_string(),
                    _ => a.clone(),
                })
                .collect();
            (scaled != args).then_some(scaled)
        })
        .map(|scaled| {
            let mut h = host.clone();
            h.set_run_args(scaled.clone());
            let note = Unknown {
                field: "run-script".into(),
                reason: format!(
                    "arguments taken as `{}`, not the script's `{}`: with the script's, {why}",
                    scaled.join(" "),
                    args.join(" ")
                ),
            };
            (infer_once(pair, &h, opts), note)
        });
    first_within_limits(first, tries)
}

/// The first of `tries` (a harness inferred with smaller sizes, and the note saying so)
/// that passes `harness check`, its note added to the file; `first` when none does, or
/// when one fails for another reason than a limit (smaller sizes will not mend that).
fn first_within_limits(
    first: Inferred,
    tries: impl Iterator<Item = (Inferred, Unknown)>,
) -> Inferred {
    for (mut r, note) in tries {
        if r.complete() {
            insert_assumed(&mut r, note);
            return r;
        }
        if !only_over_a_limit(&r) {
            break;
        }
    }
    first
}

/// Put an assumption note first in the result's list (and so in the file's "Assumed"
/// comment block).
fn insert_assumed(r: &mut Inferred, note: Unknown) {
    r.assumed.insert(0, note);
}

/// Whether a harness's only problem is a launch over the device's limits (threads per
/// block, grid extent) or a `__constant__` table larger than its symbol, which a smaller
/// assumed size may fix.
fn only_over_a_limit(r: &Inferred) -> bool {
    matches!(r.unknowns.as_slice(), [u] if u.field == "harness"
        && u.reason.contains(super::resolve::OVER_A_LIMIT))
}

/// An assumed size is a choice, not a fact: when `v` puts a launch over the device's
/// limits (a block of `grad_m - 44` threads), halve it (down to 64) until the harness
/// passes `harness check`, and say so in the file. Otherwise the first result stands.
fn smaller_assumption(pair: &Pair, host: &Host, v: i64, first: Inferred) -> Inferred {
    if !only_over_a_limit(&first) {
        return first;
    }
    let why = first.unknowns[0].reason.clone();
    let tries = std::iter::successors(Some(v / 2), |s| Some(s / 2))
        .take_while(|s| *s >= 64)
        .map(|smaller| {
            let r = infer_once(
                pair,
                host,
                &InferOptions {
                    assume_size: Some(smaller),
                },
            );
            let note = Unknown {
                field: "assume-size".into(),
                reason: format!("{smaller}, not {v}: with {v}, {why}"),
            };
            (r, note)
        });
    first_within_limits(first, tries)
}

fn infer_once(pair: &Pair, host: &Host, opts: &InferOptions) -> Inferred {
    // Template values (a launch inside a function template, a template kernel launched
    // without arguments) are substituted first: see `infer_template`.
    let inst = infer_template::instantiate(pair, host);
    let (pair, host) = match &inst {
        Some(i) => (&i.pair, &i.host),
        None => (pair, host),
    };
    let mut cx = Cx::new(pair, host, opts);
    cx.buffers();
    cx.texture_buffers();
    let mut launches = cx.launches();
    let (sizes, irregular, all_sizes) = cx.size_values(&launches);
    let args = cx.args();
    let constants = cx.constants(&all_sizes);
    let textures = cx.textures();
    cx.launch_arg_lists(&mut launches);
    let h = HarnessDraft {
        heading: (
            pair.id.clone(),
            format!("{}/{}", pair.suite, pair.benchmark),
            pair.fast.kernel.clone(),
        ),
        description: format!("{} {} (inferred)", pair.benchmark, pair.fast.kernel),
        template_note: inst.as_ref().map(|i| i.note.clone()).unwrap_or_default(),
        sizes,
        irregular,
        args,
        constants,
        textures,
        launches,
        check_fails: None,
    };
    cx.finish(h)
}

/// A pointer parameter's inferred facts.
struct Buf {
    len: Result<String, String>,
    role: Result<RoleGuess, String>,
    elem: Option<ElemType>,
    /// The C type name when it is an alias (`fp` for `#define fp float`).
    alias: Option<String>,
    /// The arg whose contents the host copies into this buffer on the device before the
    /// launch (stencil's `cudaMemcpy(d_Anext, d_A0, …, cudaMemcpyDeviceToDevice)`).
    copy_of: Option<String>,
}

/// A buffer that only a legacy texture reads: the host variable bound to the texture.
struct TexBuf {
    /// The `[[args]]` name (the host variable's, unless a parameter has it).
    name: String,
    texture: String,
    var: String,
    elem: Option<ElemType>,
    len: Result<String, String>,
    /// A CUDA array's extent (`cudaMallocArray(&a, &desc, w, h)`): the texture's width and
    /// height as harness expressions; None for a linear buffer.
    extent: Option<(String, Option<String>)>,
}

/// One inference in progress: what the kernel and launch site say, and what has been found
/// and left open so far. Each step of [`infer`] is one method.
struct Cx<'a> {
    pair: &'a Pair,
    fast: &'a KernelUnit,
    host: &'a Host,
    opts: &'a InferOptions,
    /// The kernel's integer scalar parameters (the sizes).
    sizes: Vec<String>,
    site: Option<&'a LaunchSite>,
    facts: BodyFacts,
    /// Host text → size name for the launch's args bound to integer parameters.
    host_to_size: BTreeMap<String, String>,
    /// Names add_definitions must not follow (they are sizes already).
    keep: BTreeSet<String>,
    /// Host definitions the launch and lengths use.
    defs: BTreeMap<String, String>,
    /// Recorded launch definitions whose value at the launch the code does not fix (set in
    /// a loop that ended, or through a pointer), with why.
    loop_dependent: BTreeMap<String, String>,
    /// The `for` loops around the launch: each counter and its first value (the harness
    /// runs the launch of the loop's first pass).
    counters: Vec<(String, String)>,
    /// Names a length brings in whose value at the launch the code does not settle, with
    /// why: sizes whose value is unknown.
    unsettled_sizes: BTreeMap<String, String>,
    /// Assumed sizes computed from assumed roots (imghisto's `size = DATA_W * DATA_H` from
    /// two command-line arguments): size → its host text, recomputed where the roots move.
    root_derived: BTreeMap<String, (String, Vec<String>)>,
    bufs: BTreeMap<usize, Buf>,
    /// Sizes made of struct fields the launch or a length reads (`ref_image_width` →
    /// `ref_image->width`): valued from that host text.
    members: BTreeMap<String, String>,
    /// Buffers only a legacy texture reads (the host binds them; the launch does not pass
    /// them): extra `[[args]]` after the kernel's parameters.
    tex_bufs: Vec<TexBuf>,
    /// The fast launch's grid x extent as a harness expression, once translated.
    grid_x: Option<String>,
    /// The fast launch's block x extent, likewise.
    block_x: Option<String>,
    /// [`Cx::narrowest_shared`], once worked out.
    block_cap: std::cell::OnceCell<Option<(i64, String)>>,
    /// Host names lengths or launches use that become sizes of their own.
    host_vars: Vec<String>,
    float_atomics: Vec<String>,
    unknowns: Vec<Unknown>,
    assumed: Vec<Unknown>,
}

/// Sizes a launch's grid divides by a number without rounding up (`grid = ["m / 16"]`,
/// `"n / (16 * 8)"`): not `(n + 511) / 512` or `ceil_div(n, 16)`.
pub fn floor_divided(launches: &Launches) -> BTreeSet<String> {
    static DIV: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"(?:^|[\s(\[,])([A-Za-z_]\w*)\s*/\s*\(*\s*\d").expect("valid")
    });
    launches
        .tables()
        .into_iter()
        .filter_map(|t| t.grid.value())
        .flatten()
        // Each part between commas on its own: `ceil_div(n, 16) + m / 4` floors `m`.
        .flat_map(|e| e.split(','))
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .flat_map(|c| {
            // Rounded up: `ceil_div`, `(n + 511) / 512`, `n / 4 + (n % 4 ? 1 : 0)`.
            let rounded = c.contains("ceil") || c.contains("- 1)") || c.contains('%');
            DIV.captures_iter(c)
                .filter(move |_| !rounded)
                .map(|m| m[1].to_string())
                .collect::<Vec<_>>()
        })
        .collect()
}

/// The slow launch's host names that its own code (`slow`) values differently from the fast
/// side's (`fast`): replaced by the slow side's value in `table`'s grid, block and shared
/// memory, and no longer sizes. Returns the names that stay sizes.
fn own_values(table: &mut LaunchDraft, vars: Vec<String>, slow: &Host, fast: &Host) -> Vec<String> {
    let mut keep = Vec::new();
    for v in vars {
        match (slow.int_value(&v), fast.int_value(&v)) {
            (Ok(a), b) if b != Ok(a) && super::is_ident(&v) => {
                let a = a.to_string();
                let with = |t: &str| cexpr::replace_ident(t, &v, &a);
                let dims = |f: &mut Field<Vec<String>>| match f {
                    Field::Known { value, .. } | Field::Assumed { value, .. } => {
                        value.iter_mut().for_each(|e| *e = with(e));
                    }
                    Field::Todo { reason } => *reason = with(reason),
                };
                dims(&mut table.grid);
                dims(&mut table.block);
                match &mut table.shared_mem {
                    Some(Field::Known { value, .. } | Field::Assumed { value, .. }) => {
                        *value = with(value);
                    }
                    Some(Field::Todo { reason }) => *reason = with(reason),
                    None => {}
                }
            }
            _ => keep.push(v),
        }
    }
    keep
}

/// A launch site's definitions as the host code gives them at the launch: the recorded
/// ones (last statement, calls expanded), those extract did not record, each as of the
/// launch line, divisions rounded up where the code rounds. Also the names whose value at
/// the launch the code does not settle, with why.
/// Whether one-line host text holds a conditional directive (`… #ifdef PAD + 128 #endif`).
fn has_directive(text: &str) -> bool {
    static DIRECTIVE: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"#\s*(if|ifdef|ifndef|elif|else|endif)\b").expect("static regex")
    });
    DIRECTIVE.is_match(text)
}

fn site_definitions(
    host: &Host,
    site: Option<&LaunchSite>,
    keep: &BTreeSet<String>,
) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut defs: BTreeMap<String, String> = site
        .map(|s| {
            s.definitions
                .iter()
                // The extractor records a definition on one line, `#if` lines and all: one
                // with a directive inside is read again from the host texts, whose settled
                // groups are resolved (below, as an unrecorded definition).
                .filter(|(_, v)| !(host.compiled && has_directive(v)))
                .map(|(k, v)| (k.clone(), host.expand_calls(&last_statement(k, v))))
                .collect()
        })
        .unwrap_or_default();
    if let Some(s) = site {
        unrecorded_launch_definitions(host, s, keep, &mut defs);
    }
    defs.retain(|k, v| !declares_without_value(k, v));
    let loop_dependent = definitions_as_of_launch(host, &mut defs);
    for d in defs.values_mut() {
        *d = rounded_division(d);
    }
    (defs, loop_dependent)
}

/// `unit` with its launch site's definitions replaced by `defs` plus those its grid, block
/// and shared memory need from `host`, calls expanded; and the launch fields whose names
/// the code does not settle (set in a loop that ended, through a pointer, under a
/// condition), with why.
fn patched_launch(
    unit: &KernelUnit,
    host: &Host,
    keep: &BTreeSet<String>,
    defs: &mut BTreeMap<String, String>,
    loop_dependent: &BTreeMap<String, String>,
    mut as_names: Option<&mut BTreeMap<String, String>>,
) -> (KernelUnit, Vec<(&'static str, String)>) {
    let mut patched = unit.clone();
    let mut unsettled: Vec<(&'static str, String)> = Vec::new();
    let Some(s) = site_for(unit) else {
        return (patched, unsettled);
    };
    for t in [Some(&s.grid), Some(&s.block), s.shared_mem.as_ref()]
        .into_iter()
        .flatten()
    {
        add_definitions(t, host, keep, defs);
    }
    // Sizes take their values by the size rules, not from these definitions.
    for (key, text) in [
        ("grid", Some(&s.grid)),
        ("block", Some(&s.block)),
        ("shared_mem", s.shared_mem.as_ref()),
    ] {
        let Some(text) = text else { continue };
        let used = names_used(std::iter::once(text), defs, keep);
        let open: Vec<(String, String)> = used
            .iter()
            .filter(|n| !keep.contains(*n))
            .filter_map(|n| loop_dependent.get(n).map(|w| (n.clone(), w.clone())))
            .collect();
        match as_names.as_deref_mut() {
            // Under `--assume-size`: each such name stays a name of the launch, a size whose
            // value is unknown for that reason (then assumed).
            Some(names) => {
                for (n, why) in open {
                    defs.remove(&n);
                    names.insert(n, why);
                }
            }
            None => {
                if let Some((_, why)) = open.into_iter().next() {
                    unsettled.push((key, why));
                }
            }
        }
    }
    let idx = patched
        .launch_sites
        .iter()
        .position(|x| x.kernel == unit.kernel)
        .unwrap_or(0);
    patched.launch_sites[idx].definitions = defs.clone();
    let ps = &mut patched.launch_sites[idx];
    for t in [&mut ps.grid, &mut ps.block] {
        *t = rounded_division(&host.expand_calls(t));
    }
    if let Some(t) = ps.shared_mem.as_mut() {
        *t = rounded_division(&host.expand_calls(t));
    }
    (patched, unsettled)
}

/// The host names a launch's text keeps as sizes: each host text the launch passes for a
/// size, and each size's own name, unless the launch passes that size another host text.
/// Then the host's variable of that name is another one: scan's
/// `scanExclusiveShared2<<<iDivUp(B * arrayLength / 1024, 256), 256>>>(…, arrayLength /
/// 1024)` has a kernel `arrayLength` that is not the host's in its grid.
fn kept_names(host_to_size: &BTreeMap<String, String>, sizes: &[String]) -> BTreeSet<String> {
    let passed_otherwise = |s: &String| host_to_size.iter().any(|(h, k)| k == s && h != s);
    host_to_size
        .keys()
        .cloned()
        .chain(sizes.iter().filter(|s| !passed_otherwise(s)).cloned())
        .collect()
}

impl<'a> Cx<'a> {
    fn new(pair: &'a Pair, host: &'a Host, opts: &'a InferOptions) -> Self {
        let fast = &pair.fast;
        let sizes = int_scalars(fast);
        let site = site_for(fast);
        let param_names: Vec<String> = fast.params.iter().map(|p| p.name.clone()).collect();
        let facts = body_facts(&fast.source, &fast.kernel, &param_names).unwrap_or_default();
        let mut host_to_size = BTreeMap::new();
        if let Some(s) = site {
            for (a, p) in s.args.iter().zip(&fast.params) {
                if sizes.contains(&p.name) {
                    host_to_size.insert(a.trim().to_string(), p.name.clone());
                }
            }
        }
        let keep = kept_names(&host_to_size, &sizes);
        let (defs, loop_dependent) = site_definitions(host, site, &keep);
        let counters = if host.file.is_empty() || host.launch_line == 0 {
            Vec::new()
        } else {
            let fns = crate::cuda::host::functions_cached(&host.file);
            crate::cuda::host_flow::Flow::of_function(&host.file, &fns, host.launch_line)
                .enclosing_for_counters(infer_asof::line_offset(&host.file, host.launch_line))
        };
        Cx {
            pair,
            fast,
            host,
            opts,
            sizes,
            site,
            facts,
            host_to_size,
            keep,
            defs,
            loop_dependent,
            counters,
            unsettled_sizes: BTreeMap::new(),
            root_derived: BTreeMap::new(),
            bufs: BTreeMap::new(),
            members: BTreeMap::new(),
            tex_bufs: Vec::new(),
            grid_x: None,
            block_x: None,
            block_cap: Default::default(),
            host_vars: Vec::new(),
            float_atomics: Vec::new(),
            unknowns: Vec::new(),
            assumed: Vec::new(),
        }
    }

    fn unknown(&mut self, field: String, reason: String) {
        self.unknowns.push(Unknown { field, reason });
    }

    /// Host names found while translating that are not sizes yet become sizes.
    fn note_host_vars(&mut self, vars: impl IntoIterator<Item = String>) {
        for v in vars {
            if !self.host_vars.contains(&v) && !self.sizes.contains(&v) {
                self.host_vars.push(v);
            }
        }
    }

    /// Buffers: length, role, init facts for every pointer parameter.
    fn buffers(&mut self) {
        let (fast, host, site) = (self.fast, self.host, self.site);
        for (i, p) in fast.params.iter().enumerate() {
            if !c_is_pointer(&p.ty) {
                continue;
            }
            let (mut elem, mut alias) = elem_of(&p.ty, &fast.source, host);
            let mut per_struct = None;
            if elem.is_none() {
                if let Some((e, fields, name)) = struct_elem(&p.ty, &fast.source, host) {
                    (elem, alias, per_struct) = (Some(e), Some(name), Some(fields));
                }
            }
            let arg = site
                .and_then(|s| s.args.get(i))
                .map(|a| a.trim().to_string());
            let var = arg
                .as_deref()
                .map(|a| match first_pass_base(a, &self.counters, host) {
                    Some(base) => base.to_string(),
                    None => infer_host::pointer_name(a),
                });
            let len = match (&var, elem) {
                (None, _) => Err("no launch site records the argument passed here".to_string()),
                (Some(v), _) if !super::is_ident(v) && infer_host::indexed_base(v).is_none() => {
                    Err(format!(
                        "the launch passes `{v}`, not a plain pointer variable"
                    ))
                }
                (Some(v), Some(e)) => match (per_struct, alias.as_deref()) {
                    (Some(fields), Some(name)) => self.struct_buffer_length(v, e, name, fields),
                    _ => self.buffer_length(v, e),
                },
                (Some(_), None) => Err(format!("`{}` is not an element type", p.ty)),
            };
            let copies = var.as_deref().map(|v| host.copies(v)).unwrap_or_default();
            let copied_in = copies.iter().any(|c| {
                c.dir == Direction::ToDevice && (c.line == 0 || c.line <= host.launch_line)
            });
            // A device-to-device copy from another buffer the launch passes, after any
            // memset: the buffer starts as a copy of that arg.
            let copy_of = var
                .as_deref()
                .and_then(|v| host.device_copy_source(v))
                .and_then(|src| {
                    let s = site?;
                    let j = s
                        .args
                        .iter()
                        .position(|a| infer_host::pointer_name(a) == src)
                        .filter(|j| *j != i)?;
                    fast.params.get(j).map(|q| arg_name(j, q))
                });
            let zero = copy_of.is_none() && var.as_deref().is_some_and(|v| host.memset_zero(v));
            let role = role_of(&p.name, &self.facts, copied_in || copy_of.is_some(), zero);
            if self.facts.writes.get(&p.name) == Some(&WriteKind::Atomic)
                && elem.is_some_and(|e| e.is_float())
            {
                self.float_atomics.push(p.name.clone());
            }
            self.bufs.insert(
                i,
                Buf {
                    len,
                    role,
                    elem,
                    alias,
                    copy_of,
                },
            );
        }
    }

    /// Whether parameter `i` is a pointer neither kernel names anywhere but in its
    /// parameter list, as the compiler sees the units (`#if` branches resolved): Rodinia
    /// kmeans' `block_clusters`, used and allocated only under `#ifdef BLOCK_CENTER_REDUCE`,
    /// which its build leaves out. A name that occurs once in the whole unit (macros
    /// included) is read by nothing; a second occurrence anywhere keeps the length open.
    fn untouched(&self, i: usize) -> bool {
        let once = |u: &KernelUnit| {
            u.params.get(i).is_some_and(|p| {
                let text = &crate::cuda::syntax::unit(&u.source).text;
                let masked = crate::cuda::lex::mask(text);
                let named = crate::cuda::lex::idents(&masked)
                    .iter()
                    .filter(|w| w.text == p.name)
                    .count();
                p.ty.contains('*') && named == 1
            })
        };
        // A slow kernel synth has yet to write must compute what the fast one does, so it
        // has no use for a buffer the fast kernel never names; verify checks it on its own
        // run (an access past the buffer is a crash, never a verdict).
        once(self.fast) && self.pair.slow.unit().is_none_or(once)
    }

    /// Legacy textures the host binds to a pointer the launch does not pass (kmeans binds
    /// its transposed features, read only through `tex1Dfetch`): each becomes an input
    /// buffer of its own, with the length of the host allocation.
    fn texture_buffers(&mut self) {
        let passed: BTreeSet<String> = self
            .site
            .map(|s| s.args.iter().map(|a| infer_host::pointer_name(a)).collect())
            .unwrap_or_default();
        for (t, var) in texture_binds(&self.fast.source, self.host) {
            let (texture, texel) = (t.name, t.element);
            if passed.contains(&var) || self.tex_bufs.iter().any(|t| t.var == var) {
                continue;
            }
            let elem = ElemType::from_c_type(&texel);
            let len = match elem {
                Some(e) => self.buffer_length(&var, e),
                None => Err(format!(
                    "texture `{texture}` holds `{texel}`, not an element type"
                )),
            };
            self.push_tex_buf(texture, var, elem, len, None);
        }
        // Textures bound to CUDA arrays (`cudaBindTextureToArray(get_ref(), ref_ary)` after
        // `cudaMallocArray(&ref_ary, &desc, w, h)`): a buffer of w × h texels, row-major.
        for (t, var) in texture_array_binds(&self.fast.source, self.host) {
            let (texture, texel) = (t.name, t.element);
            if self.tex_bufs.iter().any(|t| t.texture == texture) {
                continue;
            }
            let elem = ElemType::from_c_type(&texel);
            let extent = self.host.array_extent(&var);
            let (len, ext) = match (&extent, elem) {
                (None, _) => (
                    Err(format!("no cudaMallocArray of `{var}` in the host code")),
                    None,
                ),
                (Some(_), None) => (
                    Err(format!(
                        "texture `{texture}` holds `{texel}`, not an element type"
                    )),
                    None,
                ),
                (Some((w, h)), Some(_)) => {
                    let tw = self.translate_length(w);
                    // A 1-D texture over an `n × 1` array has a width only.
                    let h = h.as_ref().filter(|_| t.dim != 1);
                    let th = h.map(|h| self.translate_length(h));
                    match (tw, th) {
                        (Ok(w), None) => (Ok(w.clone()), Some((w, None))),
                        (Ok(w), Some(Ok(h))) => (Ok(format!("({w}) * ({h})")), Some((w, Some(h)))),
                        (Err(e), _) | (_, Some(Err(e))) => (Err(e), None),
                    }
                }
            };
            self.push_tex_buf(texture, var, elem, len, ext);
        }
    }

    /// A texture-only input, named after its host variable (`_tex` added while a kernel
    /// parameter or another such input has the name).
    fn push_tex_buf(
        &mut self,
        texture: String,
        var: String,
        elem: Option<ElemType>,
        len: Result<String, String>,
        extent: Option<(String, Option<String>)>,
    ) {
        let taken = |n: &str| {
            self.fast.params.iter().any(|p| p.name == n)
                || self.tex_bufs.iter().any(|t| t.name == n)
        };
        let mut name = var.clone();
        while taken(&name) {
            name.push_str("_tex");
        }
        self.tex_bufs.push(TexBuf {
            name,
            texture,
            var,
            elem,
            len,
            extent,
        });
    }

    /// `[[args]]` for the buffers only textures read: inputs of the texel type.
    fn texture_args(&mut self) -> Vec<ArgDraft> {
        let mut unknowns = Vec::new();
        let mut out = Vec::new();
        for t in &self.tex_bufs {
            let ty = match t.elem {
                Some(e) => Field::known(e.name().to_string()),
                None => {
                    let why = format!("the texels of `{}` are not an element type", t.texture);
                    unknowns.push((format!("args.{}.type", t.name), why.clone()));
                    Field::todo(why)
                }
            };
            let mut a = ArgDraft::new(&t.name, ty);
            a.comment = Some(format!(
                "not a kernel parameter: `{}`, which the host binds to texture `{}`",
                t.var, t.texture
            ));
            a.len = Some(match &t.len {
                Ok(l) => Field::known(l.clone()),
                Err(why) => {
                    unknowns.push((format!("args.{}.len", t.name), why.clone()));
                    Field::todo(why.clone())
                }
            });
            a.init = Some(default_init(t.elem));
            a.role = Some(Field::known("in".to_string()));
            out.push(a);
        }
        for (f, why) in unknowns {
            self.unknown(f, why);
        }
        out
    }

    /// The slow kernel's launch read from its own host code: the definitions there, with
    /// the slow launch's integer arguments and the fast side's sizes kept as sizes.
    fn patched_slow(
        &mut self,
        slow: &KernelUnit,
        sh: &Host,
    ) -> (KernelUnit, Vec<(&'static str, String)>) {
        let slow_sizes = int_scalars(slow);
        let mut keep = self.keep.clone();
        if let Some(s) = site_for(slow) {
            for (a, p) in s.args.iter().zip(&slow.params) {
                if slow_sizes.contains(&p.name) {
                    keep.insert(a.trim().to_string());
                }
            }
        }
        keep.extend(slow_sizes);
        let (mut defs, loop_dependent) = site_definitions(sh, site_for(slow), &keep);
        let assume = self.opts.assume_size.is_some();
        let mut names = BTreeMap::new();
        let r = patched_launch(
            slow,
            sh,
            &keep,
            &mut defs,
            &loop_dependent,
            assume.then_some(&mut names),
        );
        self.unsettled_sizes.extend(names);
        r
    }

    /// A slow kernel whose parameters are not the fast kernel's (imghisto's naive kernel
    /// takes 4 of the fast one's 6): its launch names the args it takes (`args = [...]`),
    /// each the fast parameter of the same name and type, else the one its launch passes
    /// the same host expression to. One that matches neither is an unknown.
    fn slow_arg_list(&mut self, slow: &KernelUnit, table: &mut LaunchDraft) {
        let same = slow.params.len() == self.fast.params.len()
            && slow
                .params
                .iter()
                .zip(&self.fast.params)
                .all(|(a, b)| a.ty == b.ty);
        if same {
            return;
        }
        let (ss, fs) = (site_for(slow), self.site);
        let mut names = Vec::new();
        for (j, p) in slow.params.iter().enumerate() {
            let by_name = self
                .fast
                .params
                .iter()
                .position(|f| f.name == p.name && f.ty == p.ty);
            let by_host = || {
                let text = ss?.args.get(j)?.trim();
                fs?.args
                    .iter()
                    .enumerate()
                    .find(|(i, a)| a.trim() == text && self.fast.params[*i].ty == p.ty)
                    .map(|(i, _)| i)
            };
            // A pointer the slow launch passes where the fast kernel reads a texture bound
            // to that host variable (rpes: `d_Coors`, a buffer in cuda_base, a CUDA array
            // behind `texCoors` in cuda): the texture's input.
            let by_texture = || {
                let text = infer_host::pointer_name(ss?.args.get(j)?);
                let elem = ElemType::from_c_type(&c_base_type(&p.ty));
                self.tex_bufs
                    .iter()
                    .find(|t| t.var == text && elem.is_some() && t.elem == elem)
                    .map(|t| t.name.clone())
            };
            let name = by_name
                .or_else(by_host)
                .map(|i| arg_name(i, &self.fast.params[i]))
                .or_else(by_texture);
            match name {
                Some(n) => names.push(n),
                None => {
                    table.todo = Some(format!(
                        "the slow kernel's parameter `{} {}` is none of the fast kernel's, by name or by what the launches pass",
                        p.ty, p.name
                    ));
                    return;
                }
            }
        }
        table.args.get_or_insert(names);
    }

    /// With texture-only buffers among the args, each launch names its parameters' args
    /// (a slow launch whose kernel takes other parameters names its own already).
    fn launch_arg_lists(&self, launches: &mut Launches) {
        if self.tex_bufs.is_empty() {
            return;
        }
        let names: Vec<String> = self
            .fast
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| arg_name(i, p))
            .collect();
        for t in launches.tables_mut() {
            t.args.get_or_insert_with(|| names.clone());
        }
    }

    /// A buffer of structs of one scalar type (`struct P { float x, y; }`): its length in
    /// scalars, from the allocation's or copy's byte size (see
    /// [`infer_template::struct_len_text`]).
    fn struct_buffer_length(
        &mut self,
        var: &str,
        e: ElemType,
        name: &str,
        fields: usize,
    ) -> Result<String, String> {
        let bytes = self
            .host
            .buffer_bytes(var)
            .ok_or_else(|| format!("no cudaMalloc or cudaMemcpy of `{var}` in the host code"))?;
        let t = infer_template::struct_len_text(&bytes, &[name], e, fields);
        self.translate_length(&t)
    }

    /// A buffer's length as a harness expression over the sizes.
    fn buffer_length(&mut self, var: &str, e: ElemType) -> Result<String, String> {
        let t = length_text(self.host, var, e.size_of())?;
        self.translate_length(&t)
    }

    /// A length's host text as a harness expression over the sizes.
    fn translate_length(&mut self, t: &str) -> Result<String, String> {
        let t = t.to_string();
        let before: BTreeSet<String> = self.defs.keys().cloned().collect();
        add_definitions(&t, self.host, &self.keep, &mut self.defs);
        // The names the length brings in, as of the launch: a value a finished loop or a
        // condition decides (`current_max`, lowered in a search loop) is no length.
        let mut added: BTreeMap<String, String> = self
            .defs
            .iter()
            .filter(|(k, _)| !before.contains(*k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        // It stays a name of its own: a size whose value is unknown for that reason.
        for (k, why) in definitions_as_of_launch(self.host, &mut added) {
            added.remove(&k);
            self.defs.remove(&k);
            self.unsettled_sizes.insert(k, why);
        }
        self.defs.extend(added);
        let names = Names {
            host_to_size: self.host_to_size.clone(),
            sizes: &self.sizes,
            definitions: &self.defs,
            host_vars: Default::default(),
            members: Default::default(),
            source: &self.fast.source,
        };
        let e = translate(&t, &names, 0)?;
        let found: Vec<String> = names.host_vars.borrow().iter().cloned().collect();
        self.members.extend(names.members.take());
        self.note_host_vars(found);
        Ok(e)
    }

    /// Launches (the draft's translation, over the definitions found in the host code): the
    /// launch tables; their TODOs become unknowns.
    fn launches(&mut self) -> Launches {
        let (fast, host) = (self.fast, self.host);
        let assume = self.opts.assume_size.is_some();
        let mut names = BTreeMap::new();
        let (patched, unsettled) = patched_launch(
            fast,
            host,
            &self.keep,
            &mut self.defs,
            &self.loop_dependent,
            assume.then_some(&mut names),
        );
        self.unsettled_sizes.extend(names);
        let slow_differs = self.pair.slow.unit().is_some_and(|s| {
            let a = site_for(s).map(|x| (&x.grid, &x.block, &x.shared_mem, &x.definitions));
            let b = site_for(fast).map(|x| (&x.grid, &x.block, &x.shared_mem, &x.definitions));
            a != b || s.symbol != fast.symbol || host.slow_side.is_some()
        });
        let slow_table = slow_differs.then(|| {
            let slow = self.pair.slow.unit().expect("checked");
            let mut table = match host.slow_side.as_deref() {
                // The slow kernel's own host code (Parboil's `cuda_base/main.cu`).
                Some(sh) => {
                    let (patched, unsettled) = self.patched_slow(slow, sh);
                    let (mut table, vars) =
                        draft::draft_launch_with(&patched, &self.sizes, &mut self.members);
                    unsettle_fields(&mut table, &unsettled);
                    // A name the two variants' code gives different values (cp's
                    // `UNROLLX`, 1 in cuda_base and 8 in cuda) is no shared size: the slow
                    // launch takes its own value.
                    let vars = own_values(&mut table, vars, sh, host);
                    self.note_host_vars(vars);
                    table
                }
                None => {
                    let (table, vars) =
                        draft::draft_launch_with(slow, &self.sizes, &mut self.members);
                    self.note_host_vars(vars);
                    table
                }
            };
            self.slow_arg_list(slow, &mut table);
            table
        });
        let (mut table, vars) = draft::draft_launch_with(&patched, &self.sizes, &mut self.members);
        self.note_host_vars(vars);
        unsettle_fields(&mut table, &unsettled);
        self.grid_x = table.grid_x().cloned();
        self.block_x = table.block_x().cloned();
        // Slow and fast launches that say the same (but for where they come from) are one
        // table: rpes' `DoReduction` is launched alike from both variants' code.
        let launches = match slow_table {
            Some(slow) if !slow.same_as(&table) => Launches::PerVariant {
                slow: Box::new(slow),
                fast: table,
            },
            _ => Launches::Shared(table),
        };
        for t in launches.tables() {
            for (field, why) in t.todos() {
                self.unknown(field, why);
            }
        }
        launches
    }

    /// Size values (`[sizes]`) and the size sets; returns every size name (parameters, then
    /// host names).
    /// The kernel's sizes it splits into equal parts ([`infer_kernel::floor_split_sizes`]),
    /// each with its divisor as a harness expression: `blockDim.x` / `gridDim.x` as the
    /// fast launch's, `#define`s written out. Divisors with other names are left out.
    fn floor_splits(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        for (p, d) in
            infer_kernel::floor_split_sizes(&self.fast.source, &self.fast.kernel, &self.sizes)
        {
            let mut e = d.clone();
            for (b, with) in [("blockDim.x", &self.block_x), ("gridDim.x", &self.grid_x)] {
                if e.contains(b) {
                    match with {
                        Some(w) => e = e.replace(b, &format!("({w})")),
                        None => e.clear(),
                    }
                }
            }
            for _ in 0..4 {
                for w in idents(&e) {
                    if let Some(body) = infer_host::define_body(&self.fast.source, &w) {
                        e = cexpr::replace_ident(&e, &w, &format!("({body})"));
                    }
                }
            }
            let known = idents(&e)
                .iter()
                .all(|w| self.sizes.contains(w) || self.host_vars.contains(w));
            if !e.is_empty() && known {
                out.push((p, e));
            }
        }
        out
    }

    /// When size `s` is the x width of a launch's block and a launched kernel stores to a
    /// shared array at `[threadIdx.x]` (rpes' `Result[BLOCK_SIZE]`), the array's extent:
    /// the widest block the kernel can run, and why.
    fn block_width_cap(&self, s: &str, launches: &Launches) -> Option<(i64, String)> {
        let widths: BTreeSet<&String> = launches
            .tables()
            .into_iter()
            .filter_map(LaunchDraft::block_x)
            .collect();
        if !widths.iter().any(|w| *w == s) {
            return None;
        }
        self.block_cap
            .get_or_init(|| self.narrowest_shared(launches))
            .clone()
    }

    /// The smallest extent of a shared array a launched kernel stores to at
    /// `[threadIdx.x]`, and why (see [`Cx::block_width_cap`]).
    fn narrowest_shared(&self, launches: &Launches) -> Option<(i64, String)> {
        let units = [Some(self.fast), self.pair.slow.unit()];
        let mut best: Option<(i64, String)> = None;
        for t in launches.tables() {
            let Some(k) = t.kernel.value() else {
                continue;
            };
            for u in units.iter().flatten() {
                for (arr, ext) in infer_kernel::thread_indexed_shared(&u.source, launch_base(k)) {
                    if let Some(n) = declared_extent(&u.source, &ext).filter(|n| *n > 0) {
                        if best.as_ref().is_none_or(|(b, _)| n < *b) {
                            best = Some((
                                n,
                                format!("a block's width, at most {n}: {k} stores to `__shared__ {arr}[{ext}]` at `[threadIdx.x]`"),
                            ));
                        }
                    }
                }
            }
        }
        best
    }

    #[allow(clippy::type_complexity)] // (the [sizes] fields, the size sets, every size name)
    fn size_values(
        &mut self,
        launches: &Launches,
    ) -> (Vec<(String, Field<i64>)>, Irregular, Vec<String>) {
        // Where a size of 0 would be no size: buffer lengths, the launch's grid and block.
        let len_texts: Vec<String> = self
            .bufs
            .values()
            .filter_map(|b| b.len.as_ref().ok().cloned())
            .chain(
                launches
                    .tables()
                    .into_iter()
                    .flat_map(|t| [t.grid.value(), t.block.value()])
                    .flatten()
                    .map(|d| launch_exprs(d)),
            )
            .collect();
        let mut size_fields = Vec::new();
        let mut values: BTreeMap<String, i64> = BTreeMap::new();
        let all_sizes: Vec<String> = self
            .sizes
            .iter()
            .chain(self.host_vars.iter())
            .cloned()
            .collect();
        for s in &all_sizes {
            let host_text = self
                .site
                .and_then(|st| {
                    self.fast
                        .params
                        .iter()
                        .position(|p| &p.name == s)
                        .and_then(|i| st.args.get(i))
                })
                .cloned()
                .or_else(|| self.members.get(s).cloned())
                .unwrap_or_else(|| s.clone());
            // A counter of the loop around the launch whose value here is its init: the
            // loop's first pass (0 included).
            let first_pass = self.counters.iter().any(|(c, init)| {
                c == host_text.trim()
                    && self
                        .host
                        .int_value(init)
                        .is_ok_and(|v| Ok(v) == self.host.int_value(c))
            });
            let value = match self.unsettled_sizes.get(s) {
                Some(why) => Err(why.clone()),
                None => self.host.int_value(&host_text),
            };
            let value = value.and_then(|v| {
                if first_pass {
                    Ok(v)
                } else {
                    zero_length_size(s, v, &len_texts)
                }
            });
            match value {
                Ok(v) if v >= 0 => {
                    values.insert(s.clone(), v);
                    let how = if first_pass {
                        ": the counter of the loop around the launch, on its first pass"
                    } else {
                        ""
                    };
                    let note = format!("host `{}`{how}", host_text.trim());
                    size_fields.push((s.clone(), Field::noted(v, note)));
                }
                Ok(v) => {
                    let why = format!("host `{}` is {v}", host_text.trim());
                    size_fields.push((s.clone(), Field::todo(why)));
                    self.unknown(format!("sizes.{s}"), format!("host value {v} is negative"));
                }
                Err(why) => match self.opts.assume_size {
                    Some(a) => {
                        // Assume the names the code leaves undefined, not the size itself,
                        // so a size computed from them keeps its formula (rounding, padding).
                        let at_root = self
                            .host
                            .int_value_assuming(&host_text, a)
                            .ok()
                            .filter(|(v, roots)| *v > 0 && *v != a && !roots.is_empty());
                        let (v, how) = match at_root {
                            Some((v, roots)) => {
                                self.root_derived
                                    .insert(s.clone(), (host_text.clone(), roots.clone()));
                                (
                                    v,
                                    format!("{} = {a} in `{}`", roots.join(", "), host_text.trim()),
                                )
                            }
                            None => match self.block_width_cap(s, launches).filter(|(c, _)| *c < a)
                            {
                                Some((c, why)) => (c, why),
                                None => (a, String::new()),
                            },
                        };
                        values.insert(s.clone(), v);
                        let why = if how.is_empty() {
                            why
                        } else {
                            format!("{how}: {why}")
                        };
                        size_fields.push((
                            s.clone(),
                            Field::Assumed {
                                value: v,
                                reason: why.clone(),
                            },
                        ));
                        self.assumed.push(Unknown {
                            field: format!("sizes.{s}"),
                            reason: why,
                        });
                    }
                    None => {
                        size_fields.push((s.clone(), Field::todo(why.clone())));
                        self.unknown(format!("sizes.{s}"), why);
                    }
                },
            }
        }
        let irregular = self.size_sets(&values, launches);
        (size_fields, irregular, all_sizes)
    }

    /// The size sets beside the default one: an irregular one over the sizes the kernel
    /// bounds-checks, when some may move.
    fn size_sets(&self, values: &BTreeMap<String, i64>, launches: &Launches) -> Irregular {
        // A size that is the product of two of the kernel's other size parameters (srad's
        // `Ne = Nr * Nc`) stays: moving it alone would break the relation the kernel's
        // indexing relies on.
        let params: BTreeMap<String, i64> = values
            .iter()
            .filter(|(k, _)| self.sizes.contains(*k))
            .map(|(k, v)| (k.clone(), *v))
            .collect();
        // A size the grid divides without rounding up (sgemm's `m / 128`) must stay a
        // multiple: the kernel has no partial tiles. Its value does not move, nor do the
        // sizes that share it.
        let floored = floor_divided(launches);
        let fixed: BTreeSet<i64> = values
            .iter()
            .filter(|(k, _)| floored.contains(*k))
            .map(|(_, v)| *v)
            .collect();
        // A size computed from assumed roots that other sizes share (sad's `mb_width` from
        // `ref_image->width`, which the grid reads) moves only with its roots (below):
        // moved alone, it would no longer be what the launch computes from them.
        let shares_roots = |k: &str| {
            let Some((_, roots)) = self.root_derived.get(k) else {
                return false;
            };
            roots.iter().any(|r| {
                self.members.values().any(|m| m == r)
                    || self
                        .root_derived
                        .iter()
                        .any(|(k2, (_, rs))| k2 != k && rs.contains(r))
            })
        };
        let mut moved: BTreeMap<i64, i64> = values
            .iter()
            .filter(|(k, _)| self.facts.bounded.contains(*k))
            .filter(|(k, _)| !shares_roots(k))
            .filter(|(_, v)| !fixed.contains(v))
            .filter(|(k, v)| !product_of_others(k, **v, &params))
            .filter_map(|(_, v)| irregular(*v).map(|x| (*v, x)))
            .collect();
        // A bounds-checked size held back that way moves through its roots: the assumed
        // value itself moves (dwt2d's `pixels` from `d->pixWidth * d->pixHeight`).
        if let Some(a) = self.opts.assume_size.filter(|a| !fixed.contains(a)) {
            let held = values.iter().any(|(k, v)| {
                self.facts.bounded.contains(k) && shares_roots(k) && !fixed.contains(v)
            });
            if held {
                if let Some(x) = irregular(a) {
                    moved.insert(a, x);
                }
            }
        }
        // A size with the same value as one the bounds checks compare moves with it: the
        // host code often names one quantity twice (`pixels` in a wrapper, `n` where its
        // outputs are allocated), and moving only one would size the outputs for the other.
        let build = |moved: &BTreeMap<i64, i64>| {
            let mut set: BTreeMap<String, i64> = values
                .iter()
                .filter_map(|(k, v)| moved.get(v).map(|x| (k.clone(), *x)))
                .collect();
            // Where the assumed value moves, the sizes computed from assumed roots are
            // computed again from the moved roots (imghisto's `size = DATA_W * DATA_H`, which
            // the kernel reads `data` up to): a stale product would run past the moved buffers.
            if let Some(&x) = self.opts.assume_size.and_then(|a| moved.get(&a)) {
                for (k, (text, _)) in &self.root_derived {
                    if let Ok((v, _)) = self.host.int_value_assuming(text, x) {
                        if v > 0 && values.get(k) != Some(&v) {
                            set.insert(k.clone(), v);
                        }
                    }
                }
            }
            set
        };
        let mut irregular_set = build(&moved);
        // A size the kernel splits into equal parts, dropping the remainder (imghisto's
        // `(size / warps_block) * warpid`), stays a multiple of the parts: the moved values
        // step down until it is one, or the set is left out.
        let splits = self.floor_splits();
        let broken = |set: &BTreeMap<String, i64>| {
            let mut all = values.clone();
            all.extend(set.iter().map(|(k, v)| (k.clone(), *v)));
            splits.iter().find(|(p, d)| {
                let mut sc = crate::harness::expr::Scope::default();
                for (k, v) in &all {
                    sc.set_int(k, *v);
                }
                match (all.get(p), sc.eval_int(d)) {
                    (Some(v), Ok(d)) if d > 0 => v % d != 0,
                    _ => false,
                }
            })
        };
        let mut multiple_of = None;
        if !irregular_set.is_empty() {
            if let Some((p, d)) = broken(&irregular_set) {
                let stepped = (1..=64).find_map(|k| {
                    let m: BTreeMap<i64, i64> = moved
                        .iter()
                        .map(|(v, x)| (*v, x - k))
                        .filter(|(_, x)| *x > 0 && !(*x as u64).is_power_of_two())
                        .collect();
                    (m.len() == moved.len())
                        .then(|| build(&m))
                        .filter(|set| broken(set).is_none())
                });
                irregular_set = stepped.unwrap_or_default();
                if irregular_set.is_empty() {
                    return Irregular::Refused(p.clone(), d.clone());
                }
                multiple_of = Some((p.clone(), d.clone()));
            }
        }
        // The default set is always there, also when the launch and lengths are constants
        // (fft, lbm): a harness runs once per size set.
        if irregular_set.is_empty() {
            Irregular::None
        } else {
            Irregular::Set {
                values: irregular_set,
                multiple_of,
            }
        }
    }

    /// `[[args]]`, one per kernel parameter.
    fn args(&mut self) -> Vec<ArgDraft> {
        let fast = self.fast;
        let lens: BTreeMap<String, String> = fast
            .params
            .iter()
            .enumerate()
            .filter_map(|(i, p)| {
                self.bufs
                    .get(&i)
                    .and_then(|b| b.len.as_ref().ok())
                    .map(|l| (p.name.clone(), l.clone()))
            })
            .collect();
        let mut out = Vec::new();
        for (i, p) in fast.params.iter().enumerate() {
            let name = arg_name(i, p);
            out.push(if self.bufs.contains_key(&i) {
                self.buffer_arg(i, &name, &lens)
            } else {
                self.scalar_arg(i, &name)
            });
        }
        out.extend(self.texture_args());
        out
    }

    /// A pointer argument's type, length, init and role.
    fn buffer_arg(&mut self, i: usize, name: &str, lens: &BTreeMap<String, String>) -> ArgDraft {
        let p = &self.fast.params[i];
        let b = &self.bufs[&i];
        let mut unknowns = Vec::new();
        let mut a = match b.elem {
            Some(e) => {
                let mut a = ArgDraft::new(name, Field::known(e.name().to_string()));
                a.c_type = b.alias.clone();
                a
            }
            None => {
                let why = format!(
                    "`{}` is not an element type (a struct or struct-of-pointers input)",
                    c_base_type(&p.ty)
                );
                unknowns.push((format!("args.{name}.type"), why.clone()));
                ArgDraft::new(name, Field::todo(why))
            }
        };
        a.len = Some(match &b.len {
            Ok(l) => Field::known(l.clone()),
            // Allocated only under a branch the build leaves out (Rodinia kmeans'
            // `#ifdef BLOCK_DELTA_REDUCE`), and named by neither kernel: any length serves.
            Err(_) if self.untouched(i) => Field::noted(
                "1".to_string(),
                "neither kernel names it past its parameter list, and the host code allocates none",
            ),
            Err(why) => {
                unknowns.push((format!("args.{name}.len"), why.clone()));
                Field::todo(why.clone())
            }
        });
        let init = match self.buffer_init(b, &p.name, lens) {
            Ok(init) => init,
            Err(why) => {
                unknowns.push((format!("args.{name}.init"), why.clone()));
                Field::todo(format!("an index buffer: {why}"))
            }
        };
        let is_out = b.role.as_ref().is_ok_and(|r| r.role == "out");
        if !is_out {
            a.init = Some(init);
        }
        a.role = Some(match &b.role {
            Ok(r) => Field::known(r.role.to_string()),
            Err(why) => {
                unknowns.push((format!("args.{name}.role"), why.clone()));
                Field::todo(why.clone())
            }
        });
        if let (true, Some(g)) = (
            is_out && self.facts.per_block.contains(&p.name),
            self.grid_x.as_ref(),
        ) {
            let len = Expr::Text(g.clone());
            a.compare = match self.facts.per_block_offset.get(&p.name) {
                None => Some(Field::noted(
                    RawWindow { offset: None, len },
                    "one result per block (stored at [blockIdx.x]): the rest is not the kernel's",
                )),
                // `[blockIdx.x + Offset]`: the launch's blocks write from `Offset` on (a
                // chunk of a launch the host repeats); an offset that is no size is left
                // compared whole.
                Some(off) if self.sizes.contains(off) => Some(Field::noted(
                    RawWindow {
                        offset: Some(Expr::Text(off.clone())),
                        len,
                    },
                    format!("one result per block (stored at [blockIdx.x + {off}]): the rest is not this launch's"),
                )),
                Some(_) => None,
            };
        }
        if b.role.as_ref().is_ok_and(|r| r.role != "in")
            && self.facts.constant_stores.contains(&p.name)
        {
            a.allow_degenerate = Some(Field::noted(
                true,
                "the kernel only stores literals into it (a flag or mask it sets or clears)",
            ));
        }
        a.float_atomics = self.float_atomics.contains(&p.name);
        for (f, why) in unknowns {
            self.unknown(f, why);
        }
        a
    }

    /// A buffer's initial values: zeros, an index range bounded by the buffers it
    /// subscripts, or the element type's default distribution. Err: an index buffer whose
    /// bound is not known.
    fn buffer_init(
        &self,
        b: &Buf,
        param: &str,
        lens: &BTreeMap<String, String>,
    ) -> Result<Field<RawInit>, String> {
        let zeros = b.role.as_ref().is_ok_and(|r| r.zeros);
        if zeros {
            return Ok(Field::known(RawInit::Zeros));
        }
        if let Some(src) = &b.copy_of {
            return Ok(Field::noted(
                RawInit::CopyOf { arg: src.clone() },
                "the host copies it on the device",
            ));
        }
        if let Some(targets) = self.facts.indexes.get(param) {
            // An index buffer: in range of the shortest buffer it subscripts. One used as an
            // offset inside a larger subscript (`I[iN[row] + Nr * col]`) is taken as a map
            // onto its own range (srad's neighbour tables `iN[i] = i - 1`): also bounded by
            // its own length.
            let mut bound: Vec<&String> = targets.iter().filter_map(|t| lens.get(t)).collect();
            let offset = self.facts.offset_indexes.contains(param);
            if let (true, Ok(own)) = (offset && bound.len() == targets.len(), &b.len) {
                bound.insert(0, own);
            }
            let complete = bound.len() == targets.len() + usize::from(offset);
            // Starts of runs a block wide (`B[first + threadIdx.x]`): a block's width below
            // the end.
            let run = self.facts.thread_offset_indexes.contains(param);
            let less = match (run, &self.block_x) {
                (false, _) => "1".to_string(),
                (true, Some(bx)) => format!("({bx})"),
                (true, None) => {
                    return Err(format!(
                    "starts runs of the block's width in {}, and the block's width is not known",
                    targets.iter().cloned().collect::<Vec<_>>().join(", ")
                ))
                }
            };
            return match (bound.first(), b.elem.is_some_and(|e| !e.is_float())) {
                (Some(l), true) if complete => {
                    let hi = if bound.len() == 1 {
                        format!("({l}) - {less}")
                    } else {
                        format!(
                            "min({}) - {less}",
                            bound
                                .iter()
                                .map(|s| s.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    };
                    let range = RawInit::IntRange {
                        lo: Expr::Int(0),
                        hi: Expr::Text(hi),
                    };
                    Ok(Field::noted(
                        range,
                        format!(
                            "indexes {}{}",
                            targets.iter().cloned().collect::<Vec<_>>().join(", "),
                            if run {
                                " as the start of a run of the block's width (`[first + threadIdx.x]`)"
                            } else if offset {
                                " as an offset inside a larger subscript: a map onto its own range"
                            } else {
                                ""
                            }
                        ),
                    ))
                }
                _ => Err(format!(
                    "subscripts {} whose length is not known",
                    targets.iter().cloned().collect::<Vec<_>>().join(", ")
                )),
            };
        }
        Ok(match b.elem {
            _ if b.alias.as_deref() == Some("bool") => bool_init(),
            Some(e) if e.is_float() && self.facts.domain.contains(param) => positive_init(),
            e => default_init(e),
        })
    }

    /// A scalar argument's type and value (a size, or the host expression at the launch).
    fn scalar_arg(&mut self, i: usize, name: &str) -> ArgDraft {
        let p = &self.fast.params[i];
        let (Some(e), alias) = elem_of(&p.ty, &self.fast.source, self.host) else {
            let why = format!("`{}` passed by value is not a scalar type", p.ty);
            self.unknown(format!("args.{name}.type"), why.clone());
            return ArgDraft::new(name, Field::todo(why));
        };
        let mut a = ArgDraft::new(name, Field::known(e.name().to_string()));
        a.c_type = alias;
        if self.sizes.contains(&p.name) {
            a.value = Some(Field::known(Expr::Text(p.name.clone())));
            return a;
        }
        let host_text = self
            .site
            .and_then(|s| s.args.get(i))
            .cloned()
            .unwrap_or_default();
        match self.host.value(&host_text, 0) {
            Ok(v) => {
                let text = match v {
                    super::expr::Num::Int(x) => x.to_string(),
                    super::expr::Num::Float(f) => format!("{f:?}"),
                };
                let note = format!("host `{}`", host_text.trim());
                a.value = Some(Field::noted(Expr::Text(text), note));
            }
            Err(why) if self.opts.assume_size.is_some() && e.is_float() => {
                a.value = Some(Field::Assumed {
                    value: Expr::Float(0.5),
                    reason: why.clone(),
                });
                self.assumed.push(Unknown {
                    field: format!("args.{name}.value"),
                    reason: why,
                });
            }
            Err(why) => {
                a.value = Some(Field::todo(why.clone()));
                self.unknown(format!("args.{name}.value"), why);
            }
        }
        a
    }

    /// `[[constants]]`: the `__constant__` tables the host uploads. The element type is
    /// the declaration's, through `#define`/`typedef` aliases; a table of structs whose
    /// fields are all one scalar (`kValues c[512]`) is that scalar, `fields` per struct.
    /// When the upload's length names host values that are not sizes, the whole declared
    /// table is filled: the kernel cannot read past its declaration.
    fn constants(&mut self, all_sizes: &[String]) -> Vec<ConstDraft> {
        let uploads = self.host.symbol_uploads();
        let mut out = Vec::new();
        for (sym, bytes) in &uploads {
            let Some((ty, capacity)) = constant_table(&self.fast.source, sym) else {
                continue;
            };
            let (e, fields) = match elem_of(&ty, &self.fast.source, self.host) {
                // `float4 atominfo[N]`: four f32 per declared element.
                (Some(e), _) => (
                    e,
                    draft::sizeof_type(&ty).map_or(1, |b| (b / e.size_of()).max(1)),
                ),
                (None, _) => match struct_elem(&ty, &self.fast.source, self.host) {
                    Some((e, n, _)) => (e, n),
                    None => {
                        let why = format!("`__constant__ {ty} {sym}` is not an element type");
                        self.unknown(format!("constants.{sym}.type"), why.clone());
                        out.push(ConstDraft {
                            name: sym.clone(),
                            ty: Field::todo(why),
                            len: Field::todo("the element type is unknown"),
                            init: None,
                        });
                        continue;
                    }
                },
            };
            let t = elements_of(bytes, self.host, e.size_of() * fields);
            add_definitions(&t, self.host, &self.keep, &mut self.defs);
            let names = Names {
                host_to_size: self.host_to_size.clone(),
                sizes: all_sizes,
                definitions: &self.defs,
                host_vars: Default::default(),
                members: Default::default(),
                source: &self.fast.source,
            };
            let per = |l: String| {
                if fields == 1 {
                    l
                } else {
                    format!("({l}) * {fields}")
                }
            };
            let len = match translate(&t, &names, 0) {
                Ok(l) if names.host_vars.borrow().is_empty() => Ok(per(l)),
                Ok(l) => Err(format!("length `{l}` uses host names that are not sizes")),
                Err(why) => Err(why),
            };
            let len = match (len, capacity) {
                (Ok(l), _) => Field::known(Expr::Text(l)),
                (Err(why), Some(cap)) => Field::noted(
                    Expr::Int(cap * fields as i64),
                    format!("the whole declared table ({cap} {ty}): {why}"),
                ),
                (Err(why), None) => {
                    self.unknown(format!("constants.{sym}.len"), why.clone());
                    Field::todo(why)
                }
            };
            // A table whose values reach a log, sqrt, pow or divisor (cp's precomputed
            // `dz * dz` under `rsqrtf`) is drawn positive, as buffers are.
            let positive = e.is_float()
                && body_facts(
                    &self.fast.source,
                    &self.fast.kernel,
                    std::slice::from_ref(sym),
                )
                .is_some_and(|f| f.domain.contains(sym));
            out.push(ConstDraft {
                name: sym.clone(),
                ty: Field::known(e.name().to_string()),
                len,
                init: Some(if positive {
                    positive_init()
                } else {
                    default_init(Some(e))
                }),
            });
        }
        out
    }

    /// `[[textures]]`: each 1-D legacy texture the unit declares that the host binds
    /// (`cudaBindTexture(0, t, d_x, bytes)`) to a buffer the launch passes, with the same
    /// element type (the texture's width is then the buffer's length).
    fn textures(&mut self) -> Vec<TextureDraft> {
        let mut out = Vec::new();
        for t in self.tex_bufs.iter().filter(|t| t.extent.is_some()) {
            let Some((w, h)) = &t.extent else { continue };
            out.push(TextureDraft {
                name: t.texture.clone(),
                buffer: Field::noted(
                    t.name.clone(),
                    format!("cudaBindTextureToArray(…{}…, {})", t.texture, t.var),
                ),
                width: Some(Field::known(w.clone())),
                height: h.clone(),
            });
        }
        for (t, var) in texture_binds(&self.fast.source, self.host) {
            let (tex, texel) = (t.name, t.element);
            let site = self.site;
            let param = self.fast.params.iter().enumerate().find(|(i, p)| {
                c_is_pointer(&p.ty)
                    && site
                        .and_then(|s| s.args.get(*i))
                        .is_some_and(|a| infer_host::pointer_name(a) == var)
            });
            let bound = format!("cudaBindTexture(…, {tex}, {var}, …)");
            let Some((i, p)) = param else {
                if let Some(t) = self.tex_bufs.iter().find(|t| t.var == var) {
                    // `float4` texels over an f32 buffer: a quarter as many texels.
                    let lanes = crate::cuda::texture::texel_bytes(&texel)
                        .zip(t.elem.map(|e| e.size_of()))
                        .filter(|(tb, eb)| tb > eb && tb % eb == 0)
                        .map(|(tb, eb)| tb / eb);
                    let width = match (lanes, &t.len) {
                        (Some(k), Ok(len)) => Some(Field::noted(
                            format!("({len}) / {k}"),
                            format!("{texel} texels"),
                        )),
                        _ => None,
                    };
                    out.push(TextureDraft {
                        name: tex.clone(),
                        buffer: Field::noted(t.name.clone(), bound),
                        width,
                        height: None,
                    });
                }
                continue;
            };
            let same_type = self.bufs.get(&i).and_then(|b| b.elem) == ElemType::from_c_type(&texel);
            let buffer = if same_type {
                Field::noted(p.name.clone(), bound)
            } else {
                let why = format!(
                    "texture `{tex}` holds `{texel}`, the buffer `{}` another type: its width in texels is not known",
                    p.name
                );
                self.unknown(format!("textures.{tex}"), why.clone());
                Field::todo(why)
            };
            out.push(TextureDraft {
                name: tex.clone(),
                buffer,
                width: None,
                height: None,
            });
        }
        out
    }

    /// A harness with no unknown left must also pass `harness check` (load, bind the
    /// kernel's parameters, resolve every size set on an H100): what does not stays an
    /// unknown. Then the `# Unknowns:` / `# Assumed` head.
    fn finish(mut self, mut h: HarnessDraft) -> Inferred {
        if self.unknowns.is_empty() {
            let slow = self.pair.slow.unit().unwrap_or(self.fast);
            if let Err(why) = h
                .to_raw()
                .and_then(|raw| check_complete(raw, slow, self.fast))
            {
                h.check_fails = Some(why.clone());
                self.unknown("harness".into(), why);
            }
        }
        Inferred {
            harness: h,
            unknowns: self.unknowns,
            assumed: self.assumed,
            float_atomics: self.float_atomics,
        }
    }
}

/// CUDA's built-in variables (see [`unrecorded_launch_definitions`]).
const CUDA_NAMES: [&str; 5] = ["gridDim", "blockDim", "blockIdx", "threadIdx", "warpSize"];

/// Names the launch's grid, block or shared memory use that extract recorded no definition
/// for (a declaration after a macro call with no `;`, `dim3 threads(THREADS)`), defined as of
/// the launch line in the launch's function (see [`infer_asof`]), are added to `defs`.
/// Sizes (`keep`) and names the function does not write are left alone.
pub fn unrecorded_launch_definitions(
    host: &Host,
    site: &LaunchSite,
    keep: &BTreeSet<String>,
    defs: &mut BTreeMap<String, String>,
) {
    if host.file.is_empty() || host.launch_line == 0 {
        return;
    }
    let mut names: Vec<String> = [
        Some(&site.grid),
        Some(&site.block),
        site.shared_mem.as_ref(),
    ]
    .into_iter()
    .flatten()
    .flat_map(|t| idents(t))
    .filter(|w| !defs.contains_key(w) && !keep.contains(w))
    // CUDA's own names stay what extract made of them, also where the host shadows one (a
    // `dim3 gridDim(…)` local): reading it here would split one assumed grid size into
    // several independent ones.
    .filter(|w| !CUDA_NAMES.contains(&w.as_str()))
    .collect();
    names.sort();
    names.dedup();
    if names.is_empty() {
        return;
    }
    let fns = crate::cuda::host::functions_cached(&host.file);
    let found =
        infer_asof::definitions_at_launch(&host.file, &fns, &names, host.launch_line, &|_| true);
    for (k, d) in names.into_iter().zip(found) {
        if let Ok(Some(d)) = d {
            defs.insert(k, d);
        }
    }
}

/// Rewrite each recorded launch definition as of the launch line (see [`infer_asof`]): a
/// name written again after its use (srad's `blocks_x`) keeps the value it had there.
/// Returns the names whose value at the launch is not fixed by the code, with why.
pub fn definitions_as_of_launch(
    host: &Host,
    defs: &mut BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut unsettled = BTreeMap::new();
    if host.file.is_empty() || host.launch_line == 0 {
        return unsettled;
    }
    let defined = |m: &str| host.texts().any(|t| crate::cuda::ppcond::is_defined(t, m));
    let filtered = infer_asof::active_text(&host.file, &defined);
    // A launch inside a branch whose macro the files do not define (a `-D` flag) is built
    // with that flag: then every branch stays.
    fn line(t: &str, n: u32) -> Option<&str> {
        t.lines().nth(n as usize - 1).map(str::trim)
    }
    let text = if line(&filtered, host.launch_line) == line(&host.file, host.launch_line) {
        filtered
    } else {
        host.file.clone()
    };
    let names: Vec<String> = defs.keys().cloned().collect();
    // A recorded definition of several statements may join declarations of other scopes
    // (`dim3 block(…)` in each of three loops): the as-of one replaces it.
    let statements: BTreeSet<String> = defs
        .iter()
        .filter(|(_, d)| d.contains(';'))
        .map(|(k, _)| k.clone())
        .collect();
    let always = |k: &str| statements.contains(k);
    // `text` has the file's lines: the file's functions place the launch's.
    let fns = crate::cuda::host::functions_cached(&host.file);
    let found = infer_asof::definitions_at_launch(&text, &fns, &names, host.launch_line, &always);
    for (k, d) in names.into_iter().zip(found) {
        match d {
            Ok(Some(d)) => {
                defs.insert(k, host.expand_calls(&d));
            }
            Ok(None) => {}
            Err(why) => {
                unsettled.insert(k, why);
            }
        }
    }
    unsettled
}

/// A drafted launch table with each `(field, reason)` in `fields` turned into a TODO with
/// that reason (fields the draft left TODO already keep theirs).
pub fn unsettle_fields(table: &mut LaunchDraft, fields: &[(&str, String)]) {
    // A field already TODO keeps its reason, unless the reason is the translation's loop
    // through the unsettled name's stale definition (`per = sqrt(nb)` recorded,
    // `nb = per * per` at the launch): then the unsettled reason is the real one.
    fn unsettle<T>(f: &mut Field<T>, why: &str) {
        let stale = match f {
            Field::Todo { reason } => reason.contains("definitions nest too deeply"),
            _ => true,
        };
        if stale {
            *f = Field::todo(why);
        }
    }
    let why = |key: &str| fields.iter().find(|(k, _)| *k == key).map(|(_, w)| w);
    if let Some(w) = why("grid") {
        unsettle(&mut table.grid, w);
    }
    if let Some(w) = why("block") {
        unsettle(&mut table.block, w);
    }
    if let (Some(w), Some(s)) = (why("shared_mem"), table.shared_mem.as_mut()) {
        unsettle(s, w);
    }
}

/// The 1-D legacy textures a unit declares (extract's `kernelpair_legacy_texture<T, 1> name`)
/// that the host binds with `cudaBindTexture(offset, [&]name, ptr, …)`, with the bound
/// pointer variable.
pub fn texture_binds(source: &str, host: &Host) -> Vec<(Declared, String)> {
    let mut out = bound_textures(source, host, "cudaBindTexture", 1);
    out.retain(|(t, _)| t.dim == 1);
    out
}

/// The 1-D and 2-D legacy textures a unit declares that the host binds to a CUDA array
/// (`cudaBindTextureToArray(ref, ary)`), with the array's host variable.
pub fn texture_array_binds(source: &str, host: &Host) -> Vec<(Declared, String)> {
    bound_textures(source, host, "cudaBindTextureToArray", 0)
}

/// The legacy textures a unit declares ([`shimmed_symbols`]) that the host passes to `call`
/// as its argument `at`, by name (`[&]ref`) or through a getter `get_ref()` whose body
/// returns `ref`, with the variable passed next (`call(…, ref, var, …)`).
fn bound_textures(source: &str, host: &Host, call: &str, at: usize) -> Vec<(Declared, String)> {
    let mut out = Vec::new();
    for t in shimmed_symbols(source) {
        let names_it = |arg: &str| {
            if infer_host::pointer_name(arg) == t.name {
                return true;
            }
            let a = arg.trim();
            let Some(f) = a.strip_suffix("()").filter(|f| super::is_ident(f)) else {
                return false;
            };
            host.texts().chain(std::iter::once(source)).any(|text| {
                infer_host::return_function(text, f).is_some_and(|(_, e)| e.trim() == t.name)
            })
        };
        let bound = host.texts().find_map(|text| {
            let calls = crate::cuda::host::calls_to(text, call);
            let c = calls
                .into_iter()
                .find(|c| c.args.len() > at + 1 && names_it(&c.args[at]))?;
            Some(infer_host::pointer_name(&c.args[at + 1]))
        });
        if let Some(var) = bound.filter(|v| super::is_ident(v)) {
            out.push((t, var));
        }
    }
    out
}

/// C's round-to-nearest idiom for a launch size, `(int)((float) a / (float) b + 0.5)`, as
/// integer arithmetic: `(2 * a + b) / (2 * b)` (the same for non-negative a and b > 0, which
/// counts of threads and blocks are). Other texts are returned unchanged.
pub fn rounded_division(text: &str) -> String {
    static CASTS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(r"\(\s*(?:float|double|int|unsigned|unsigned int|long|size_t)\s*\)")
            .expect("valid")
    });
    static HALF: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
        regex::Regex::new(
            r"\(\s*\(?\s*([A-Za-z_]\w*|\d+)\s*/\s*([A-Za-z_]\w*|\d+)\s*\)?\s*\+\s*0?\.5[fF]?\s*\)",
        )
        .expect("valid")
    });
    if !text.contains(".5") {
        return text.to_string();
    }
    let plain = CASTS.replace_all(text, " ");
    if !HALF.is_match(&plain) {
        return text.to_string();
    }
    HALF.replace_all(&plain, "((2 * $1 + $2) / (2 * $2))")
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// The names host texts use, following `defs` (a launch's grid → its definitions' names),
/// but not into the definitions of `keep` (sizes: their values come from the size rules).
pub fn names_used<'t>(
    texts: impl Iterator<Item = &'t String>,
    defs: &BTreeMap<String, String>,
    keep: &BTreeSet<String>,
) -> BTreeSet<String> {
    let mut todo: Vec<String> = texts.flat_map(|t| idents(t)).collect();
    let mut seen = BTreeSet::new();
    while let Some(w) = todo.pop() {
        if !seen.insert(w.clone()) || keep.contains(&w) {
            continue;
        }
        if let Some(d) = defs.get(&w) {
            // Definitions are statements (`dim3 g; g.x = n / 8`): their names, not their
            // syntax.
            let plain = d.replace(['=', ';', '#', '{', '}', '"'], " ");
            todo.extend(idents(&plain).into_iter().filter(|x| x != &w));
        }
    }
    seen
}

/// Validate an inferred harness (the value, not its text) and check it against the fast unit
/// as `harness check` does, and resolve every size set for an H100 (block limits, lengths > 0).
pub fn check_complete(raw: RawHarness, slow: &KernelUnit, fast: &KernelUnit) -> Result<(), String> {
    let h = super::validate::build(raw, "inferred")
        .and_then(|h| h.for_pair(Some(slow), fast))
        .map_err(|e| e.to_string())?;
    if !fast.params.is_empty() {
        h.check_against(Some(slow), fast)
            .map_err(|e| e.to_string())?;
    }
    let slow_caps = thread_shared_caps(&h.slow, slow);
    let fast_caps = thread_shared_caps(&h.fast, fast);
    for set in h.size_sets() {
        let r = h
            .resolve(set, &crate::harness::DeviceProps::h100())
            .map_err(|e| e.to_string())?;
        let bytes: u64 = r
            .args
            .iter()
            .filter_map(|a| match a {
                crate::harness::ResolvedArg::Buffer { elem, len, .. } => {
                    Some(*len as u64 * elem.size_of() as u64)
                }
                _ => None,
            })
            .sum();
        // Kernels index with 32-bit `int`s: a buffer of 2^31 elements or more would be
        // reached through an overflowed index (sad's `blk_sad` at an assumed 4096 × 4096
        // frame: 41 * 1096 * 256 * 256 elements). An inferred harness keeps under it.
        if let Some((name, len)) = r.args.iter().find_map(|a| match a {
            crate::harness::ResolvedArg::Buffer { name, len, .. }
                if *len as u64 > i32::MAX as u64 =>
            {
                Some((name.clone(), *len))
            }
            _ => None,
        }) {
            return Err(format!(
                "args.{name}: {len} elements (size set {}) are more than a 32-bit int index reaches: {}",
                r.size_set,
                super::resolve::OVER_A_LIMIT
            ));
        }
        if bytes > INFERRED_BYTES_BUDGET {
            return Err(format!(
                "buffers of {bytes} bytes (size set {}) exceeds the device's budget for one harness ({INFERRED_BYTES_BUDGET} bytes: each buffer is held several times): {}",
                r.size_set,
                super::resolve::OVER_A_LIMIT
            ));
        }
        for (launches, caps) in [(&r.slow, &slow_caps), (&r.fast, &fast_caps)] {
            for l in launches {
                let Some(cap) = caps.get(launch_base(&l.kernel)) else {
                    continue;
                };
                if let Some((arr, n)) = cap.iter().find(|(_, n)| l.block[0] as i64 > **n) {
                    return Err(format!(
                        "launch of {}: {} threads per block in x (size set {}), but the kernel stores to `__shared__ {arr}[{n}]` at `[threadIdx.x]`: {}",
                        l.kernel,
                        l.block[0],
                        r.size_set,
                        super::resolve::OVER_A_LIMIT
                    ));
                }
            }
        }
        for c in &r.constants {
            if let Some(cap) = constant_scalars(&fast.source, &c.name) {
                if c.len as i64 > cap {
                    return Err(format!(
                        "constants.{}: {} elements (size set {}) exceeds the symbol's declared {cap}: {}",
                        c.name, c.len, r.size_set, super::resolve::OVER_A_LIMIT
                    ));
                }
            }
        }
    }
    Ok(())
}

/// Per launched kernel of one variant, the shared arrays it stores to at `[threadIdx.x]`
/// with their extents ([`infer_kernel::thread_indexed_shared`]): a block wider than one of
/// them writes past it.
fn thread_shared_caps(
    launches: &[crate::harness::LaunchSpec],
    unit: &KernelUnit,
) -> BTreeMap<String, BTreeMap<String, i64>> {
    let mut out = BTreeMap::new();
    for l in launches {
        let k = launch_base(&l.kernel).to_string();
        if out.contains_key(&k) {
            continue;
        }
        let caps = infer_kernel::thread_indexed_shared(&unit.source, &k)
            .into_iter()
            .filter_map(|(arr, ext)| Some((arr, declared_extent(&unit.source, &ext)?)))
            .collect();
        out.insert(k, caps);
    }
    out
}

/// The most buffer bytes one inferred harness may ask for at a size set: 8 GiB, a tenth of
/// an H100's memory, since the worker holds inputs, pristine copies and both variants'
/// outputs at once. Larger ones (an assumed 4096 in a four-dimensional size) are refused by
/// `check_complete`, and `--assume-size` then tries a smaller value.
pub const INFERRED_BYTES_BUDGET: u64 = 8 << 30;

/// The scalars a `__constant__` table holds: its declared element count times the scalars
/// per element (4 for `float4 atominfo[N]`, 5 for a `kValues` struct of five floats defined
/// in the unit). A harness's `[[constants]] len` counts scalars.
pub fn constant_scalars(source: &str, sym: &str) -> Option<i64> {
    let (ty, cap) = constant_table(source, sym)?;
    let per = match ElemType::from_c_type(&ty) {
        Some(e) => draft::sizeof_type(&ty).map_or(1, |b| (b / e.size_of()).max(1)),
        None => {
            infer_template::struct_of_scalars(&c_base_type(&ty), [source]).map_or(1, |(_, n)| n)
        }
    };
    Some(cap? * per as i64)
}

/// The element type of a `__constant__` variable the unit declares, and for a table its
/// element count when the extents fold to integers through the source's `#define`s
/// (`c_clusters[ASSUMED_NR_CLUSTERS*34]`).
pub fn constant_table(source: &str, sym: &str) -> Option<(String, Option<i64>)> {
    let (ty, extents) = syntax::unit(source).qualified_variable("__constant__", sym)?;
    let fold = |n: i64, e: &String| n.checked_mul(declared_extent(source, e)?);
    let cap = extents
        .iter()
        .try_fold(1, fold)
        .filter(|_| !extents.is_empty());
    Some((ty, cap))
}

/// An array's declared extent (`[BLOCK_SIZE]`, `[2 * TILE]`) as a number, through the
/// unit's `#define`s.
pub fn declared_extent(source: &str, inner: &str) -> Option<i64> {
    let mut e = inner.to_string();
    for _ in 0..8 {
        let words = idents(&e);
        if words.is_empty() {
            break;
        }
        for w in words {
            let body = infer_host::define_body(source, &w)?;
            e = cexpr::replace_ident(&e, &w, &format!("({body})"));
        }
    }
    crate::harness::expr::Scope::default().eval_int(&e).ok()
}

/// A recorded definition that is several statements (`int nb = 1; nb = n / 256`): the last
/// assignment of the name that does not refer to itself; dim3 member forms stay whole.
pub fn last_statement(name: &str, def: &str) -> String {
    if !def.contains(';') || def.contains(&format!("{name}.")) || def.contains("dim3") {
        return def.to_string();
    }
    let idents = |r: &str| {
        cexpr::tokens(r).map(|t| t.iter().any(|x| x.kind == Kind::Ident && x.text == name))
    };
    // Fold the assignments in order: `b = n / 4; b = b + 1` → `b = (n / 4) + 1` (a guarded
    // `if (n % 4) b++` then rounds up, which is what launch code means by it).
    let mut value: Option<String> = None;
    for (_, r) in infer_host::snippet_assignments(def, name) {
        value = match (idents(&r), value) {
            (Ok(false), _) => Some(r),
            (Ok(true), Some(v)) => Some(cexpr::replace_ident(&r, name, &format!("({v})"))),
            _ => return def.to_string(),
        };
    }
    value
        .map(|v| format!("{name} = {v}"))
        .unwrap_or_else(|| def.to_string())
}

/// Why `infer_all` stopped: the records could not be read, or a harness not written.
#[derive(Debug, thiserror::Error)]
pub enum InferError {
    #[error(transparent)]
    Records(#[from] crate::jsonl::JsonlError),
    #[error(transparent)]
    Io(#[from] crate::path_io::PathIo),
}

/// The host code of each pair (read from the suite root `root_of` gives it), read once per
/// launch site: pairs sharing a fast kernel's launch and slow side share it. Shows progress
/// on large trees (a bar, or a plain line every 10 s off a terminal).
pub fn hosts_for<'a>(pairs: &[&Pair], root_of: impl Fn(&Pair) -> Option<&'a Path>) -> Vec<Host> {
    let mut cache: HashMap<(String, String), Host> = HashMap::new();
    let reading = crate::progress::Progress::new("infer (host code)", pairs.len());
    let mut out = Vec::with_capacity(pairs.len());
    for p in pairs {
        reading.inc(1, "");
        let slow_at = p
            .slow
            .natural_unit()
            .and_then(site_for)
            .map(|s| format!("{}:{}:{}", s.path, s.kernel, s.line))
            .unwrap_or_default();
        let host = match (root_of(p), site_for(&p.fast)) {
            (Some(r), Some(s)) => cache
                .entry((s.path.clone(), format!("{}:{}|{slow_at}", s.kernel, s.line)))
                .or_insert_with(|| load_pair_host(r, p))
                .clone(),
            (Some(r), None) => load_pair_host(r, p),
            _ => Host {
                launch_line: site_for(&p.fast).map(|s| s.line).unwrap_or(0),
                ..Host::default()
            },
        };
        out.push(host);
    }
    reading.done();
    out
}

/// Infer a harness for every pair in a records file; write `DIR/<pair-id>.toml`.
/// Returns (pair id, benchmark/kernel, inferred) per pair.
pub fn infer_all(
    units: &Path,
    out: &Path,
    root: Option<&Path>,
    only: Option<&str>,
    opts: &InferOptions,
) -> Result<Vec<(String, String, Inferred)>, InferError> {
    use crate::path_io::PathIo;
    let records = crate::jsonl::read_records(units)?;
    let pairs: Vec<Pair> = records
        .into_iter()
        .filter_map(|r| match r {
            Record::Pair(p) => Some(*p),
            _ => None,
        })
        .filter(|p| only.is_none_or(|id| p.id.starts_with(id)))
        .collect();
    std::fs::create_dir_all(out).map_err(|e| PathIo::new(out, e))?;
    let refs: Vec<&Pair> = pairs.iter().collect();
    let hosts = hosts_for(&refs, |_| root);
    let jobs: Vec<(&Pair, Host)> = refs.into_iter().zip(hosts).collect();
    // Pairs are independent once their host code is read: infer them on every core, each
    // file written as soon as it is inferred (in the order the pairs come).
    use rayon::prelude::*;
    let progress = crate::progress::Progress::new("infer", jobs.len());
    let all = jobs
        .into_par_iter()
        .map(|(p, host)| {
            let inf = infer(p, &host, opts);
            let path = out.join(format!("{}.toml", p.id));
            crate::jsonl::write_atomic(&path, |w| {
                use std::io::Write;
                w.write_all(inf.toml().as_bytes())
            })?;
            progress.inc(1, &p.kernel);
            Ok((p.id.clone(), format!("{}/{}", p.benchmark, p.kernel), inf))
        })
        .collect();
    progress.done();
    all
}

/// Give each pair its harness origin for verify: a hand-written harness (found as verify
/// finds them) wins and is marked `hand`; otherwise an inferred `<inferred_dir>/<pair-id>.toml`
/// becomes the pair's harness, marked `inferred`. Returns (hand, inferred) counts.
pub fn attach_inferred(
    records: &mut [Record],
    base: &Path,
    hand_dirs: &[PathBuf],
    suite_root: Option<&Path>,
    inferred_dir: &Path,
) -> (usize, usize) {
    use crate::record::HarnessOrigin;
    let (mut hand, mut inferred) = (0, 0);
    for r in records.iter_mut() {
        let Record::Pair(p) = r else { continue };
        if p.slow.is_pending() {
            continue;
        }
        let found = super::prepare(p, base, hand_dirs, suite_root);
        let origin = match found {
            Err((crate::record::Status::NoHarness, _)) => {
                let f = inferred_dir.join(format!("{}.toml", p.id));
                if !f.is_file() {
                    continue;
                }
                p.harness = Some(f.display().to_string());
                inferred += 1;
                HarnessOrigin::Inferred
            }
            _ => {
                hand += 1;
                HarnessOrigin::Hand
            }
        };
        p.set_harness_origin(origin);
    }
    (hand, inferred)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::harness::infer_kernel::BodyFacts;

    #[test]
    fn a_neighbour_in_a_legacy_encoding_is_read_not_dropped() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("app");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("k.cu"),
            "void run(float *d) { k<<<n / 256, 256>>>(d); }\n",
        )
        .unwrap();
        // Latin-1 `\xa9` in a comment: not UTF-8.
        let mut main = b"/* \xa9 2009 */\nint n = 1 << 20;\nint main() { run(0); }\n".to_vec();
        main.push(b'\n');
        std::fs::write(dir.join("main.cu"), main).unwrap();
        let mut unit = KernelUnit::for_test("k", &[("d", "float *")], "");
        unit.launch_sites = vec![LaunchSite {
            path: "app/k.cu".into(),
            line: 1,
            kernel: "k".into(),
            template_args: None,
            grid: "n / 256".into(),
            block: "256".into(),
            shared_mem: None,
            stream: None,
            args: vec!["d".into()],
            definitions: BTreeMap::new(),
        }];
        let host = load_host(d.path(), &unit);
        assert_eq!(host.others.len(), 1, "{:?}", host.others);
        assert!(host.others[0].contains("1 << 20"), "{:?}", host.others);
    }

    /// A launch table of kernel `k` read from `a.cu:3`.
    fn launch(grid: &[&str], block: &[&str]) -> LaunchDraft {
        let dims = |d: &[&str]| Field::known(d.iter().map(|e| e.to_string()).collect());
        LaunchDraft {
            kernel: Field::known("k".to_string()),
            args: None,
            from: Some("a.cu:3: <<<…>>>".into()),
            grid: dims(grid),
            block: dims(block),
            shared_mem: None,
            todo: None,
        }
    }

    /// `check_complete` of a harness written as TOML.
    fn check_text(toml: &str, slow: &KernelUnit, fast: &KernelUnit) -> Result<(), String> {
        check_complete(toml::from_str(toml).expect("a harness"), slow, fast)
    }

    #[test]
    fn a_pointer_offset_by_a_counter_at_zero_is_its_base_on_the_first_pass() {
        let h = Host::default();
        let zero = vec![("i".to_string(), "0".to_string())];
        assert_eq!(
            first_pass_base("data_d+(i*GRID_SIZE*BLOCK_SIZE)", &zero, &h),
            Some("data_d")
        );
        assert_eq!(
            first_pass_base("inter_d + i * 64", &zero, &h),
            Some("inter_d")
        );
        // A counter that starts elsewhere, a sum in the offset, no counter: not the base.
        let one = vec![("i".to_string(), "1".to_string())];
        assert_eq!(first_pass_base("d + i * 64", &one, &h), None);
        assert_eq!(first_pass_base("d + (i * 64 + 1)", &zero, &h), None);
        assert_eq!(first_pass_base("d + j * 64", &zero, &h), None);
        assert_eq!(first_pass_base("d", &zero, &h), None);
    }

    #[test]
    fn a_name_each_variant_values_differently_takes_the_slow_sides_value() {
        let slow = Host {
            file: "#define UNROLLX 1\n#define BX 16\n".into(),
            ..Host::default()
        };
        let fast = Host {
            file: "#define UNROLLX 8\n#define BX 16\n".into(),
            ..Host::default()
        };
        let mut t = launch(&["n / (BX * UNROLLX)"], &["BX"]);
        t.from = Some("a.cu:3: <<<n / (BX * UNROLLX), BX>>>".into());
        let vars = own_values(
            &mut t,
            vec!["UNROLLX".into(), "BX".into(), "n".into()],
            &slow,
            &fast,
        );
        assert_eq!(t.grid_x().map(String::as_str), Some("n / (BX * 1)"));
        // The comment keeps the host text; shared names stay sizes.
        assert!(t.text().contains("<<<n / (BX * UNROLLX), BX>>>"), "{t:?}");
        assert_eq!(vars, vec!["BX".to_string(), "n".to_string()]);
    }

    #[test]
    fn floor_divided_grid_sizes_are_found() {
        let l = Launches::PerVariant {
            slow: Box::new(launch(&["m / ((16 * 8))", "n / 16"], &["k / 2"])),
            fast: launch(&["(p + 512 - 1) / 512", "ceil_div(q, 4)", "r"], &["1"]),
        };
        let f = floor_divided(&l);
        assert_eq!(f.into_iter().collect::<Vec<_>>(), vec!["m", "n"]);
        let l = Launches::Shared(launch(&["((s / 4) + (! (s % 4 ? 0 : 1)))"], &["1"]));
        assert!(floor_divided(&l).is_empty());
        // Each part between commas on its own: the `ceil` rounds `q` up, not `m`.
        let l = Launches::Shared(launch(&["ceil_div(q, 16) + m / 4"], &["1"]));
        assert_eq!(floor_divided(&l).into_iter().collect::<Vec<_>>(), vec!["m"]);
    }

    #[test]
    fn byte_sizes_become_scalar_counts() {
        let h = Host::default();
        assert_eq!(elements_of("n * sizeof(float)", &h, 4), "n");
        // A vector of the buffer's scalar: lengths count scalars.
        assert_eq!(elements_of("n * sizeof(uint2)", &h, 4), "(n) * 2");
        assert_eq!(elements_of("m * sizeof(float4)", &h, 4), "(m) * 4");
        // A smaller scalar read as a vector.
        assert_eq!(elements_of("n * sizeof(float)", &h, 16), "(n) * 4 / 16");
        // Another scalar type's vector is not this buffer's.
        assert_eq!(elements_of("n * sizeof(double2)", &h, 4), "n");
    }

    #[test]
    fn role_rule_covers_stores_atomics_and_opaque_calls() {
        let mut f = BodyFacts::default();
        f.writes.insert("o".into(), WriteKind::Store);
        f.writes.insert("acc".into(), WriteKind::Store);
        f.reads.insert("acc".into());
        f.writes.insert("h".into(), WriteKind::Atomic);
        f.opaque.insert("x".into(), "passed to `f`".into());
        assert_eq!(role_of("o", &f, false, false).unwrap().role, "out");
        // Copied in by the host: what the kernel leaves alone is still its result.
        assert_eq!(role_of("o", &f, true, false).unwrap().role, "inout");
        assert_eq!(role_of("acc", &f, true, false).unwrap().role, "inout");
        let h = role_of("h", &f, false, false).unwrap();
        assert_eq!((h.role, h.zeros), ("inout", true));
        assert!(!role_of("h", &f, true, false).unwrap().zeros);
        let z = role_of("o", &f, false, true).unwrap();
        assert_eq!((z.role, z.zeros), ("inout", true));
        assert_eq!(role_of("a", &f, true, false).unwrap().role, "in");
        assert!(role_of("x", &f, true, false)
            .unwrap_err()
            .contains("passed to"));
    }

    #[test]
    fn names_used_follow_definitions_through_statements() {
        let mut defs = BTreeMap::new();
        defs.insert(
            "g".to_string(),
            "dim3 g; g.x = nb * nb; g.y = 1".to_string(),
        );
        defs.insert("nb".to_string(), "nb = sqrt((double) n)".to_string());
        defs.insert("B".to_string(), "#define B 16".to_string());
        defs.insert("n".to_string(), "n = rows * cols".to_string());
        let texts = [&"g".to_string(), &"B".to_string()];
        let used = names_used(texts.into_iter(), &defs, &BTreeSet::new());
        assert!(
            used.contains("nb") && used.contains("rows") && used.contains("B"),
            "{used:?}"
        );
        // A size's own definition is not followed.
        let keep = BTreeSet::from(["n".to_string()]);
        let used = names_used(texts.into_iter(), &defs, &keep);
        assert!(used.contains("n") && !used.contains("rows"), "{used:?}");
    }

    #[test]
    fn rounding_to_nearest_becomes_integer_division() {
        let r = rounded_division(
            "int num_blocks = (int) (((float) num_threads / (float) threads_per_block) + 0.5);",
        );
        assert_eq!(
            r,
            "int num_blocks = ((2 * num_threads + threads_per_block) / (2 * threads_per_block));"
        );
        // The same numbers as the float rounding.
        for (a, b) in [(1000, 176), (1056, 176), (87, 176), (263, 176)] {
            let mut sc = crate::harness::expr::Scope::default();
            sc.set_int("num_threads", a);
            sc.set_int("threads_per_block", b);
            let e = r.split_once('=').unwrap().1.trim_end_matches(';');
            let want = ((a as f32 / b as f32) + 0.5) as i64;
            assert_eq!(sc.eval_int(e).unwrap(), want, "{a} / {b}");
        }
        // Anything else stays as written.
        assert_eq!(rounded_division("n * 0.5 + 1"), "n * 0.5 + 1");
        assert_eq!(rounded_division("(n / 2)"), "(n / 2)");
    }

    #[test]
    fn textures_bound_by_the_host_name_their_buffer() {
        let source = "__device__ kernelpair_legacy_texture<float, 1> t_in;\n\
                      __device__ kernelpair_legacy_texture<float4, 2> t_img;\n\
                      __device__ kernelpair_legacy_texture<int, 1> t_unbound;\n";
        let h = Host {
            file: "cudaBindTexture(0, t_in, d_in, n * sizeof(float));\n\
                   cudaBindTexture2D(0, &t_img, d_img, &desc, w, h, pitch);\n"
                .into(),
            others: vec!["cudaBindTexture(NULL, &t_other, d_o, &c, 4);".into()],
            ..Host::default()
        };
        let named: Vec<_> = texture_binds(source, &h)
            .into_iter()
            .map(|(t, v)| (t.name, t.element, v))
            .collect();
        assert_eq!(
            named,
            vec![("t_in".to_string(), "float".to_string(), "d_in".to_string())]
        );
    }

    #[test]
    fn textures_bound_to_cuda_arrays_name_the_array_directly_or_through_a_getter() {
        // sad: `cudaBindTextureToArray(get_ref(), ref_ary)` with `get_ref` returning `ref`;
        // rpes: the texture itself.
        let source = "__device__ kernelpair_legacy_texture<unsigned short, 2> ref;\n\
                      __device__ kernelpair_legacy_texture<float, 1> t_c;\n\
                      __device__ kernelpair_legacy_texture<int, 1> t_other;\n";
        let h = Host {
            file: "cudaMallocArray(&ref_ary, &get_ref().channelDesc, w, h);\n\
                   cudaBindTextureToArray(get_ref(), ref_ary);\n\
                   cudaMallocArray(&c_ary, &desc, n, 1);\n\
                   cudaBindTextureToArray(t_c, c_ary);\n\
                   cudaBindTextureToArray(get_other(), o_ary);\n"
                .into(),
            others: vec![
                "texture<unsigned short, 2, cudaReadModeElementType> &get_ref(void)\n{\n  return ref;\n}\n\
                 texture<int, 1> &get_other(void)\n{\n  return t_c;\n}\n"
                    .into(),
            ],
            ..Host::default()
        };
        let named: Vec<_> = texture_array_binds(source, &h)
            .into_iter()
            .map(|(t, v)| (t.name, t.element, v))
            .collect();
        assert_eq!(
            named,
            vec![
                (
                    "ref".to_string(),
                    "unsigned short".to_string(),
                    "ref_ary".to_string()
                ),
                ("t_c".to_string(), "float".to_string(), "c_ary".to_string()),
            ]
        );
        assert_eq!(
            h.array_extent("ref_ary"),
            Some(("w".to_string(), Some("h".to_string())))
        );
        assert_eq!(
            h.array_extent("c_ary"),
            Some(("n".to_string(), Some("1".to_string())))
        );
        assert_eq!(h.array_extent("o_ary"), None);
    }

    #[test]
    fn launch_names_extract_missed_are_defined_as_of_the_launch() {
        // `check("…")` has no `;`, so the statement before the launch joins it.
        let file = "void f(float *d, int n) {\n  check(\"alloc\")\n  dim3 threads(TB);\n  dim3 grid(n / TB);\n  k<<<grid, threads>>>(d, n);\n}\n";
        let host = Host {
            file: file.into(),
            launch_line: 5,
            ..Host::default()
        };
        let site = LaunchSite {
            path: "a.cu".into(),
            line: 5,
            kernel: "k".into(),
            template_args: None,
            grid: "grid".into(),
            block: "threads".into(),
            shared_mem: None,
            stream: None,
            args: vec!["d".into(), "n".into()],
            definitions: BTreeMap::from([("grid".to_string(), "dim3 grid(n / TB)".to_string())]),
        };
        let keep = BTreeSet::from(["n".to_string()]);
        let mut defs = site.definitions.clone();
        unrecorded_launch_definitions(&host, &site, &keep, &mut defs);
        assert_eq!(defs["threads"], "dim3 threads; threads.x = TB");
        // A recorded definition is not replaced here.
        assert_eq!(defs["grid"], "dim3 grid(n / TB)");
        assert_eq!(defs.len(), 2);
        // A local shadowing a CUDA name is left to extract's record.
        let shadow = LaunchSite {
            grid: "gridDim".into(),
            ..site.clone()
        };
        let host = Host {
            file: file.replace("dim3 grid(", "dim3 gridDim("),
            ..host
        };
        let mut defs = BTreeMap::new();
        unrecorded_launch_definitions(&host, &shadow, &keep, &mut defs);
        assert!(!defs.contains_key("gridDim"), "{defs:?}");
        assert!(defs.contains_key("threads"), "{defs:?}");
    }

    #[test]
    fn a_size_passed_another_host_text_is_not_the_host_name() {
        let sizes = vec!["N".to_string(), "arrayLength".to_string(), "n".to_string()];
        let passed = BTreeMap::from([
            ("N".to_string(), "N".to_string()),
            ("arrayLength / 1024".to_string(), "arrayLength".to_string()),
        ]);
        let keep = kept_names(&passed, &sizes);
        let keep: Vec<&str> = keep.iter().map(String::as_str).collect();
        // `n`, passed nothing the launch table records, keeps its name too.
        assert_eq!(keep, ["N", "arrayLength / 1024", "n"]);
    }

    #[test]
    fn unsettled_launch_fields_become_todos() {
        let mut t = launch(&["1"], &["256"]);
        t.shared_mem = Some(Field::todo("other"));
        let why = "`parts` is changed in a loop (line 9) before it is used".to_string();
        unsettle_fields(
            &mut t,
            &[("grid", why.clone()), ("shared_mem", why.clone())],
        );
        assert_eq!(t.grid, Field::todo(why.clone()));
        assert_eq!(t.block_x().map(String::as_str), Some("256"));
        assert_eq!(t.shared_mem, Some(Field::todo("other")));
        // A translation that looped through the unsettled name's stale definition says why.
        t.grid = Field::todo("host text \"nb\": definitions nest too deeply");
        unsettle_fields(&mut t, &[("grid", why.clone())]);
        assert_eq!(t.grid, Field::todo(why));
    }

    #[test]
    fn grid_x_is_the_first_grid_component() {
        let mut t = launch(&["ceil_div(n, 256)", "2"], &["1"]);
        assert_eq!(t.grid_x().map(String::as_str), Some("ceil_div(n, 256)"));
        t.grid = Field::todo("why");
        assert_eq!(t.grid_x(), None);
    }

    #[test]
    fn declarations_without_a_value_are_not_definitions() {
        assert!(declares_without_value("height", "int width, height"));
        assert!(declares_without_value("width", "int width, height;"));
        assert!(declares_without_value("n", "unsigned int n"));
        assert!(!declares_without_value("n", "int n = 4"));
        assert!(!declares_without_value("m", "int n, m = 4 * n"));
        assert!(!declares_without_value("g", "dim3 g"));
        assert!(!declares_without_value("B", "#define B 64"));
        assert!(!declares_without_value("n", "int m"));
    }

    #[test]
    fn zero_sizes_in_lengths_are_unknown() {
        let lens = vec![
            "npoints * nfeatures".to_string(),
            "(n + 1)".to_string(),
            launch_exprs(&["(listsize / 4) / 256".into(), "1".into()]),
        ];
        assert!(
            zero_length_size("listsize", 0, &lens).is_err(),
            "a grid of 0"
        );
        let grid = vec![launch_exprs(&["(dim - offset) / 16 - 1".into()])];
        assert_eq!(
            zero_length_size("offset", 0, &grid),
            Ok(0),
            "an offset in a sum"
        );
        assert!(zero_length_size("npoints", 0, &lens)
            .unwrap_err()
            .contains("set later"));
        assert_eq!(zero_length_size("npoints", 64, &lens), Ok(64));
        // An offset or a loop start is 0 legitimately.
        assert_eq!(zero_length_size("offset", 0, &lens), Ok(0));
        assert_eq!(zero_length_size("np", 0, &lens), Ok(0));
    }

    #[test]
    fn products_of_other_sizes_are_not_moved_alone() {
        let v: BTreeMap<String, i64> = [("nr", 502), ("nc", 458), ("ne", 229916), ("n", 4096)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        assert!(product_of_others("ne", 229916, &v));
        assert!(!product_of_others("n", 4096, &v));
        assert!(!product_of_others("nr", 502, &v));
        // A square of one other size counts too (`n2 = n * n`).
        let v: BTreeMap<String, i64> = [("n", 64), ("n2", 4096)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect();
        assert!(product_of_others("n2", 4096, &v));
    }

    #[test]
    fn irregular_values_are_not_powers_of_two() {
        assert_eq!(irregular(8), None);
        for v in [16, 64, 1000, 65536, 1 << 20] {
            let x = irregular(v).unwrap();
            assert!(x.count_ones() > 1 && x < v && x > v / 2, "{v} -> {x}");
        }
    }

    #[test]
    fn lengths_come_from_allocations_then_copies() {
        let h = Host {
            file: "#define WIDTH 16\nint mem = n * sizeof(float);\ncudaMalloc(&a, mem);\n\
                   cudaMemcpy(b, hb, (n + 1) * sizeof(int), cudaMemcpyHostToDevice);\n\
                   cudaMalloc(&c, nbytes);\n"
                .into(),
            launch_line: 9,
            ..Host::default()
        };
        assert_eq!(length_text(&h, "a", 4).unwrap(), "n");
        assert_eq!(length_text(&h, "b", 4).unwrap(), "(n + 1)");
        assert_eq!(length_text(&h, "c", 4).unwrap(), "(nbytes) / 4");
        assert!(length_text(&h, "d", 4)
            .unwrap_err()
            .contains("no cudaMalloc"));
        let mut defs = BTreeMap::new();
        add_definitions("blocks * WIDTH", &h, &BTreeSet::new(), &mut defs);
        assert_eq!(
            defs.get("WIDTH").map(String::as_str),
            Some("#define WIDTH 16")
        );
        assert!(!defs.contains_key("blocks"));
    }

    #[test]
    fn multi_statement_definitions_keep_the_last_assignment() {
        assert_eq!(
            last_statement("nb", "int nb = 1; nb = (int)ceil(n / 512.0)"),
            "nb = (int)ceil(n / 512.0)"
        );
        assert_eq!(
            last_statement("b", "b = n / 4; b = b + 1"),
            "b = (n / 4) + 1"
        );
        assert_eq!(
            last_statement("g", "dim3 g(4); g.x = n"),
            "dim3 g(4); g.x = n"
        );
    }

    #[test]
    fn type_aliases_resolve_to_element_types() {
        let h = Host::default();
        let (e, a) = elem_of("fp *", "#define fp float\n", &h);
        assert_eq!((e, a.as_deref()), (Some(ElemType::F32), Some("fp")));
        let (e, _) = elem_of("const real *", "typedef double real;\n", &h);
        assert_eq!(e, Some(ElemType::F64));
        assert_eq!(
            elem_of("knode *", "struct knode { int a; };", &h),
            (None, None)
        );
        assert_eq!(elem_of("int *", "", &h), (Some(ElemType::I32), None));
        let (e, a) = elem_of("bool *", "", &h);
        assert_eq!((e, a.as_deref()), (Some(ElemType::U8), Some("bool")));
    }

    #[test]
    fn complete_harnesses_stay_within_the_bytes_budget_and_int_indexing() {
        let toml = |n: i64, ty: &str| {
            format!(
                "description = \"t\"\n[sizes]\nn = {n}\n[[size_sets]]\nname = \"default\"\n\
                 [[args]]\nname = \"x\"\ntype = \"{ty}\"\nlen = \"n * n\"\nrole = \"out\"\n\
                 [[args]]\nname = \"n\"\ntype = \"i32\"\nvalue = \"n\"\n\
                 [[launch]]\nkernel = \"k\"\ngrid = [\"n\"]\nblock = [\"n / 64\"]\n"
            )
        };
        let unit = KernelUnit::for_test("k", &[("float *", "x"), ("int", "n")], "");
        assert_eq!(check_text(&toml(4096, "f32"), &unit, &unit), Ok(()));
        // 65536² floats: 2^32 elements, past what a 32-bit int index reaches, in words the
        // halving rule reads.
        let e = check_text(&toml(65536, "f32"), &unit, &unit).unwrap_err();
        assert!(
            e.contains("more than a 32-bit int index reaches: over a limit"),
            "{e}"
        );
        // 46000² doubles: under 2^31 elements, but 16.9 GB: over the budget.
        let unit = KernelUnit::for_test("k", &[("double *", "x"), ("int", "n")], "");
        let e = check_text(&toml(46000, "f64"), &unit, &unit).unwrap_err();
        assert!(e.contains("exceeds the device's budget"), "{e}");
        assert!(e.contains("over a limit"), "{e}");
    }

    #[test]
    fn a_block_wider_than_a_thread_indexed_shared_array_is_over_a_limit() {
        let toml = |b: i64| {
            format!(
                "description = \"t\"\n[sizes]\nb = {b}\n[[size_sets]]\nname = \"default\"\n\
                 [[args]]\nname = \"x\"\ntype = \"f32\"\nlen = \"1024\"\nrole = \"out\"\n\
                 [[launch]]\nkernel = \"k\"\ngrid = [\"4\"]\nblock = [\"b\"]\n"
            )
        };
        let src = "#define MAX_RUN 64\n__global__ void k(float *x) {\n\
                   __shared__ float part[MAX_RUN]; int t = threadIdx.x;\n\
                   part[t] = 1.0f; __syncthreads(); x[blockIdx.x * blockDim.x + t] = part[0];\n}\n";
        let unit = KernelUnit::for_test("k", &[("float *", "x")], src);
        assert_eq!(check_text(&toml(64), &unit, &unit), Ok(()));
        let e = check_text(&toml(128), &unit, &unit).unwrap_err();
        assert!(
            e.contains("128 threads per block in x")
                && e.contains("`__shared__ part[64]`")
                && e.ends_with("over a limit"),
            "{e}"
        );
    }

    #[test]
    fn constant_capacities_fold_the_sources_defines() {
        let src = "#define NC 5\n#define W (NC * 2)\n__constant__ float c_tab[W*34];\n__constant__ int d[N];\n";
        let constant_capacity = |s: &str, n: &str| constant_table(s, n).and_then(|(_, c)| c);
        assert_eq!(constant_capacity(src, "c_tab"), Some(340));
        assert_eq!(constant_capacity(src, "d"), None);
        assert_eq!(constant_capacity(src, "nothing"), None);
        // Several declarators on one line; a longer name that ends in the symbol is not it.
        let two = "__constant__ float a[4], b[2 * 4];\n__constant__ int xa[3];\n";
        assert_eq!(constant_capacity(two, "a"), Some(4));
        assert_eq!(constant_capacity(two, "b"), Some(8));
        assert_eq!(constant_capacity(two, "xa"), Some(3));
    }

    #[test]
    fn constant_types_are_read_from_declarations() {
        let src = "__constant__ float c_mask[16];\nstatic __constant__ int tab[N];\n\
                   struct kv { float a, b; float c; };\n__constant__ __device__ kv c[8];\n\
                   #define MAXATOMS 100\n__constant__ float4 atominfo[MAXATOMS];\n";
        let constant_type = |n: &str| constant_table(src, n).map(|(t, _)| t);
        assert_eq!(constant_type("c_mask").as_deref(), Some("float"));
        assert_eq!(constant_type("tab").as_deref(), Some("int"));
        assert_eq!(constant_type("c").as_deref(), Some("kv"));
        assert_eq!(constant_type("other"), None);
        // A table's scalars: declared elements times the scalars in each.
        assert_eq!(constant_scalars(src, "c_mask"), Some(16));
        assert_eq!(constant_scalars(src, "c"), Some(24));
        assert_eq!(constant_scalars(src, "atominfo"), Some(400));
        assert_eq!(constant_scalars(src, "tab"), None);
    }
}
