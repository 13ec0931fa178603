//! Reading a harness: TOML → [`RawHarness`](super::spec::RawHarness) → a checked
//! [`Harness`] (every expression, name and field validated on load, errors naming the file
//! and field), and checking it against a pair's units ([`Harness::check_against`]).

use super::locate::type_matches;
use super::spec::{RawArg, RawField};
use super::*;

/// Read and validate a harness file.
pub fn load(path: &Path) -> Result<Harness, HarnessError> {
    let text = std::fs::read_to_string(path).map_err(|source| {
        HarnessError::Io(crate::path_io::PathIo::new(path.to_path_buf(), source))
    })?;
    parse(&text, &path.display().to_string())
}

/// Parse and validate harness TOML; `origin` names it in errors.
pub fn parse(text: &str, origin: &str) -> Result<Harness, HarnessError> {
    build(
        toml::from_str(text).map_err(|e| not_toml(origin, e))?,
        origin,
    )
}

/// Parse TOML into the JSON value the schema describes (for schema checks and tooling).
pub fn to_json(text: &str, origin: &str) -> Result<serde_json::Value, HarnessError> {
    let v: toml::Value = toml::from_str(text).map_err(|e| not_toml(origin, e))?;
    serde_json::to_value(v).map_err(|e| not_toml(origin, e))
}

fn not_toml(origin: &str, e: impl std::fmt::Display) -> HarnessError {
    HarnessError::Toml {
        origin: origin.to_string(),
        message: e.to_string(),
    }
}

pub(crate) fn is_ident(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

pub(super) const DEVICE_VARS: [&str; 4] =
    ["sm_count", "max_threads_per_block", "warp_size", "l2_bytes"];

/// Where a harness came from, for errors that name the file and field.
pub(super) struct Ctx<'a> {
    pub(super) origin: &'a str,
}

impl Ctx<'_> {
    pub(super) fn field(&self, f: &str, m: String) -> HarnessError {
        HarnessError::Field {
            origin: self.origin.to_string(),
            field: f.to_string(),
            message: m,
        }
    }

    /// [`Ctx::field`] for field `{f}.{sub}`.
    pub(super) fn at(&self, f: &str, sub: &str, m: String) -> HarnessError {
        self.field(&format!("{f}.{sub}"), m)
    }
}

/// Check a parsed harness section by section and assemble it; every expression must
/// then resolve for every size set on a reference device.
pub(super) fn build(raw: RawHarness, origin: &str) -> Result<Harness, HarnessError> {
    let c = &Ctx { origin };
    check_size_names(&raw, c)?;
    let size_sets = size_sets_of(&raw, c)?;
    let args = args_of(&raw, c)?;
    check_struct_fields(&args, c)?;
    let sparse_names: BTreeSet<&str> = raw.sparse.iter().map(|s| s.name.as_str()).collect();
    check_buffer_inits(&args, &sparse_names, c)?;
    let constants = constants_of(&raw, &args, &sparse_names, c)?;
    let textures = textures_of(&raw, &args, c)?;
    let sparse = sparse_of(&raw, c)?;
    let (slow, fast, by_kernel) = launches_of(&raw, &args, c)?;
    let needs_host_loop = host_loop_of(&raw, &args, c)?;
    let h = Harness {
        origin: origin.to_string(),
        description: raw.description,
        needs_host_loop,
        require: raw.require,
        size_sets,
        derived: raw
            .derived
            .iter()
            .map(|(k, v)| (k.clone(), v.text()))
            .collect(),
        sparse,
        args,
        constants,
        textures,
        slow,
        fast,
        by_kernel,
    };
    // Every expression must evaluate for every size set (on a reference device).
    if h.needs_host_loop.is_none() {
        for set in &h.size_sets {
            h.resolve(set, &DeviceProps::h100())?;
        }
    }
    Ok(h)
}

/// Size and derived names are identifiers, not device properties, and not both.
fn check_size_names(raw: &RawHarness, c: &Ctx) -> Result<(), HarnessError> {
    for name in raw.sizes.keys().chain(raw.derived.keys()) {
        if !is_ident(name) {
            return Err(c.field("sizes", format!("{name:?} is not an identifier")));
        }
        if DEVICE_VARS.contains(&name.as_str()) {
            return Err(c.field(
                "sizes",
                format!("{name:?} is a device property name and cannot be a size"),
            ));
        }
    }
    if let Some(dup) = raw.derived.keys().find(|k| raw.sizes.contains_key(*k)) {
        return Err(c.field(
            "derived",
            format!("{dup:?} is both a size and a derived value"),
        ));
    }
    Ok(())
}

/// Size sets: [sizes] is the base; each set overrides some of it.
fn size_sets_of(raw: &RawHarness, c: &Ctx) -> Result<Vec<SizeSet>, HarnessError> {
    let mut size_sets = Vec::new();
    if raw.size_sets.is_empty() {
        if raw.sizes.is_empty() && !raw.needs_host_loop {
            return Err(c.field("sizes", "no sizes and no size_sets".into()));
        }
        size_sets.push(SizeSet {
            name: "default".into(),
            values: raw.sizes.clone(),
            primary: false,
        });
    }
    if raw.size_sets.iter().filter(|s| s.primary).count() > 1 {
        return Err(c.field(
            "size_sets",
            "more than one size set says primary = true".into(),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, s) in raw.size_sets.iter().enumerate() {
        let f = format!("size_sets[{i}]");
        if !seen.insert(s.name.clone()) {
            return Err(c.field(&f, format!("duplicate size set name {:?}", s.name)));
        }
        let mut values = raw.sizes.clone();
        for (k, v) in &s.values {
            if !raw.sizes.contains_key(k) {
                return Err(c.field(
                    &format!("{f}.{k}"),
                    format!(
                        "size set {:?} sets {k:?}, which [sizes] does not declare",
                        s.name
                    ),
                ));
            }
            values.insert(k.clone(), *v);
        }
        size_sets.push(SizeSet {
            name: s.name.clone(),
            values,
            primary: s.primary,
        });
    }
    Ok(size_sets)
}

/// The [[args]], in order, each checked alone.
fn args_of(raw: &RawHarness, c: &Ctx) -> Result<Vec<ArgSpec>, HarnessError> {
    let mut names = BTreeSet::new();
    let mut args = Vec::new();
    for (i, a) in raw.args.iter().enumerate() {
        let f = format!("args[{i}]");
        if !is_ident(&a.name) {
            return Err(c.at(&f, "name", format!("{:?} is not an identifier", a.name)));
        }
        if !names.insert(a.name.clone()) {
            return Err(c.at(&f, "name", format!("duplicate arg name {:?}", a.name)));
        }
        args.push(arg_spec(&f, a, c)?);
    }
    Ok(args)
}

/// One arg (`args[i]` is `f`): a struct of buffer addresses, a buffer or a scalar.
fn arg_spec(f: &str, a: &RawArg, c: &Ctx) -> Result<ArgSpec, HarnessError> {
    if let Some(members) = &a.fields {
        let mixed = [
            ("type", !a.ty.is_empty()),
            ("len", a.len.is_some()),
            ("value", a.value.is_some()),
            ("init", a.init.is_some()),
            ("role", a.role.is_some()),
            ("layout", !a.layout.is_empty()),
            ("compare", a.compare.is_some()),
            ("ignore", a.ignore.is_some()),
            (
                "a tolerance",
                a.atol.is_some() || a.rtol.is_some() || a.l2.is_some() || a.scale_tol.is_some(),
            ),
            ("allow_degenerate", a.allow_degenerate),
        ];
        if let Some((k, _)) = mixed.iter().find(|(_, set)| *set) {
            return Err(c.field(
                f,
                format!(
                    "struct arg {:?} (it has `struct`) takes only name, struct and c_type, not {k}",
                    a.name
                ),
            ));
        }
        if members.is_empty() || members.len() > MAX_STRUCT_FIELDS {
            return Err(c.field(
                &format!("{f}.struct"),
                format!(
                    "a struct arg packs 1 to {MAX_STRUCT_FIELDS} buffer addresses (8 bytes each), not {}",
                    members.len()
                ),
            ));
        }
        let Some(c_type) = a.c_type.clone() else {
            return Err(c.field(
                &format!("{f}.c_type"),
                format!(
                    "struct arg {:?} needs c_type: the struct's type as the kernel parameter names it",
                    a.name
                ),
            ));
        };
        return Ok(ArgSpec::Struct {
            name: a.name.clone(),
            fields: members.clone(),
            c_type,
        });
    }
    let elem = ElemType::from_name(&a.ty).ok_or_else(|| {
        c.field(
            &format!("{f}.type"),
            format!(
                "unknown element type {:?} (one of {})",
                a.ty,
                ElemType::ALL.map(|e| e.name()).join(", ")
            ),
        )
    })?;
    match (&a.len, &a.value) {
        (Some(len), None) => buffer_arg(f, a, elem, len, c),
        (None, Some(value)) => {
            if a.init.is_some() || a.role.is_some() {
                return Err(c.field(
                    f,
                    format!("scalar {:?} (it has `value`) takes no init or role", a.name),
                ));
            }
            if !a.layout.is_empty() || a.compare.is_some() {
                return Err(c.field(
                    f,
                    format!(
                        "scalar {:?} (it has `value`) takes no layout or compare window",
                        a.name
                    ),
                ));
            }
            Ok(ArgSpec::Scalar {
                name: a.name.clone(),
                elem,
                value: value.text(),
            })
        }
        (Some(_), Some(_)) => Err(c.field(
            f,
            format!("{:?} has both `len` (buffer) and `value` (scalar)", a.name),
        )),
        (None, None) => Err(c.field(
            f,
            format!("{:?} needs `len` (a buffer) or `value` (a scalar)", a.name),
        )),
    }
}

/// A buffer arg: its role, init, tolerance, per-variant layout and compare window.
fn buffer_arg(
    f: &str,
    a: &RawArg,
    elem: ElemType,
    len: &Expr,
    c: &Ctx,
) -> Result<ArgSpec, HarnessError> {
    let role = match a.role.as_deref() {
        Some("in") => Role::In,
        Some("out") => Role::Out,
        Some("inout") => Role::Inout,
        Some(r) => return Err(c.at(f, "role", format!("{r:?} is not one of in, out, inout"))),
        None => {
            return Err(c.field(
                &format!("{f}.role"),
                format!("buffer {:?} needs a role (in, out, inout)", a.name),
            ))
        }
    };
    // An `out` buffer is poisoned before each run, so it needs no init.
    let init = match (&a.init, role) {
        (Some(i), _) => i.clone(),
        (None, Role::Out) => RawInit::Poison,
        (None, _) => {
            return Err(c.field(
                &format!("{f}.init"),
                format!(
                    "buffer {:?} is read by the kernel and needs an init",
                    a.name
                ),
            ))
        }
    };
    let mut tol = Tolerance::default_for(elem);
    for (v, slot, n) in [
        (a.atol, &mut tol.atol, "atol"),
        (a.rtol, &mut tol.rtol, "rtol"),
        (a.l2, &mut tol.l2, "l2"),
        (a.scale_tol, &mut tol.scale, "scale_tol"),
    ] {
        if let Some(v) = v {
            if !(v >= 0.0 && v.is_finite()) {
                return Err(c.field(
                    &format!("{f}.{n}"),
                    format!("{v} is not a finite non-negative number"),
                ));
            }
            *slot = v;
        }
    }
    let mut layout = Vec::new();
    for (k, l) in &a.layout {
        let v = Variant::from_name(k).ok_or_else(|| {
            c.field(
                &format!("{f}.layout.{k}"),
                "layouts are per variant: `slow` or `fast`".into(),
            )
        })?;
        let RawLayout::Transpose { rows, cols, offset } = l;
        layout.push((
            v,
            LayoutSpec::Transpose {
                rows: rows.text(),
                cols: cols.text(),
                offset: offset.as_ref().map(Expr::text).unwrap_or("0".into()),
            },
        ));
    }
    if layout.len() == 2 && layout[0].1 == layout[1].1 {
        return Err(c.field(
            &format!("{f}.layout"),
            "slow and fast have the same layout: that is the canonical one, give neither".into(),
        ));
    }
    let compare = match &a.compare {
        Some(_) if !role.is_output() => {
            return Err(c.field(
                &format!("{f}.compare"),
                format!("{:?} is an input (role in): nothing to compare", a.name),
            ))
        }
        Some(w) => Some((
            w.offset.as_ref().map(Expr::text).unwrap_or("0".into()),
            w.len.text(),
        )),
        None => None,
    };
    Ok(ArgSpec::Buffer {
        name: a.name.clone(),
        elem,
        len: len.text(),
        init: RawInitText(init),
        role,
        tol,
        allow_degenerate: a.allow_degenerate,
        c_type: a.c_type.clone(),
        layout,
        compare,
        ignore: a
            .ignore
            .as_ref()
            .map(|g| [g.period.text(), g.from.text(), g.to.text()]),
    })
}

/// A struct's fields are buffers, declared before or after it.
fn check_struct_fields(args: &[ArgSpec], c: &Ctx) -> Result<(), HarnessError> {
    for (i, a) in args.iter().enumerate() {
        if let ArgSpec::Struct { name, fields, .. } = a {
            for (k, m) in fields.iter().enumerate() {
                match args.iter().find(|x| x.name() == m) {
                    Some(ArgSpec::Buffer { .. }) => {}
                    Some(_) => {
                        return Err(c.field(
                            &format!("args[{i}].struct[{k}]"),
                            format!("struct {name:?}: {m:?} is not a buffer arg (it has no `len`)"),
                        ))
                    }
                    None => {
                        return Err(c.field(
                            &format!("args[{i}].struct[{k}]"),
                            format!("struct {name:?}: no arg is named {m:?}"),
                        ))
                    }
                }
            }
        }
    }
    Ok(())
}

/// An init that names other things (buffers, sparse matrices, fields) names them right.
fn check_init(
    f: &str,
    init: &RawInit,
    elem: ElemType,
    args: &[ArgSpec],
    sparse_names: &BTreeSet<&str>,
    c: &Ctx,
) -> Result<(), HarnessError> {
    match init {
        RawInit::CopyOf { arg } => {
            same_type_buffer("copy_of", arg, elem, args).map_err(|m| c.field(f, m))
        }
        RawInit::Csr { matrix, part } | RawInit::Jds { matrix, part } => {
            if !sparse_names.contains(matrix.as_str()) {
                return Err(c.field(
                    f,
                    format!("matrix {matrix:?} is not declared in [[sparse]]"),
                ));
            }
            let (kind, parts, is_index) = match init {
                RawInit::Csr { .. } => (
                    "csr",
                    "row_ptr, col_idx, values",
                    parse_csr_part(part).map(|p| p != CsrPart::Values),
                ),
                _ => (
                    "jds",
                    "perm, ptr, zcnt, col_idx, values",
                    parse_jds_part(part).map(|p| p != JdsPart::Values),
                ),
            };
            let Some(is_index) = is_index else {
                return Err(c.field(f, format!("unknown {kind} part {part:?} (one of {parts})")));
            };
            if is_index && elem.is_float() {
                return Err(c.field(
                    f,
                    format!("part {part:?} holds indices; give it an integer type"),
                ));
            }
            Ok(())
        }
        RawInit::Interleave { args: list } => {
            if list.is_empty() {
                return Err(c.field(f, "interleave needs at least one arg".into()));
            }
            for a in list {
                same_type_buffer("interleave", a, elem, args).map_err(|m| c.field(f, m))?;
            }
            Ok(())
        }
        RawInit::Cells { dims, origin, .. } => {
            if dims.len() != 3 {
                return Err(c.field(
                    &format!("{f}.dims"),
                    format!("cells needs 3 dims (x, y, z), not {}", dims.len()),
                ));
            }
            if let Some(o) = origin.as_ref().filter(|o| o.len() != 3) {
                return Err(c.field(
                    &format!("{f}.origin"),
                    format!("cells needs a 3D origin [x, y, z], not {} values", o.len()),
                ));
            }
            Ok(())
        }
        RawInit::Permutation if elem.is_float() => {
            Err(c.field(f, "a permutation needs an integer type".into()))
        }
        RawInit::Choice { values, weights } => {
            check_choice(values, weights.as_deref()).map_err(|m| c.field(f, m))
        }
        RawInit::Fields { fields } => check_fields_init(f, fields, elem, c),
        _ => Ok(()),
    }
}

/// What a `copy_of` or `interleave` init (`what`) names: a buffer of the same element type.
fn same_type_buffer(
    what: &str,
    name: &str,
    elem: ElemType,
    args: &[ArgSpec],
) -> Result<(), String> {
    match args.iter().find(|a| a.name() == name) {
        Some(ArgSpec::Buffer { elem: e, .. }) if *e == elem => Ok(()),
        Some(ArgSpec::Buffer { elem: e, .. }) => Err(format!(
            "{what} {name:?}: element types differ ({} vs {})",
            e.name(),
            elem.name()
        )),
        _ => Err(format!("{what} names no buffer arg {name:?}")),
    }
}

/// A `fields` init: each group's type fills one element, and its init is elementwise.
fn check_fields_init(
    f: &str,
    fields: &[RawField],
    elem: ElemType,
    c: &Ctx,
) -> Result<(), HarnessError> {
    if fields.is_empty() {
        return Err(c.field(f, "fields needs at least one field group".into()));
    }
    for (k, fg) in fields.iter().enumerate() {
        let ff = format!("{f}.fields[{k}]");
        let ty = match &fg.ty {
            None => elem,
            Some(t) => {
                let t = ElemType::from_name(t)
                    .ok_or_else(|| c.at(&ff, "type", format!("unknown element type {t:?}")))?;
                if t.size_of() != elem.size_of() {
                    return Err(c.field(
                        &format!("{ff}.type"),
                        format!(
                            "{} is {} bytes, the buffer's {} is {}: the bits must fill one element",
                            t.name(),
                            t.size_of(),
                            elem.name(),
                            elem.size_of()
                        ),
                    ));
                }
                t
            }
        };
        match &fg.init {
            RawInit::Uniform { .. }
            | RawInit::Normal { .. }
            | RawInit::IntRange { .. }
            | RawInit::Constant { .. }
            | RawInit::Zeros => {}
            RawInit::Choice { values, weights } => {
                check_choice(values, weights.as_deref())
                    .map_err(|m| c.at(&ff, "init", m))?
            }
            other => {
                return Err(c.field(
                    &format!("{ff}.init"),
                    format!(
                        "a field takes an elementwise init (uniform, normal, int_range, constant, zeros, choice), not {}",
                        serde_json::to_value(other)
                            .ok()
                            .and_then(|v| v["kind"].as_str().map(str::to_string))
                            .unwrap_or_default()
                    ),
                ))
            }
        }
        if matches!(fg.init, RawInit::IntRange { .. }) && ty.is_float() {
            return Err(c.field(
                &format!("{ff}.init"),
                "int_range in a float field: give the field an integer `type`".into(),
            ));
        }
    }
    Ok(())
}

/// Every buffer's init, and the `out` buffers that must be `inout`.
fn check_buffer_inits(
    args: &[ArgSpec],
    sparse_names: &BTreeSet<&str>,
    c: &Ctx,
) -> Result<(), HarnessError> {
    for (i, a) in args.iter().enumerate() {
        if let ArgSpec::Buffer {
            init, elem, role, ..
        } = a
        {
            let f = format!("args[{i}].init");
            check_init(&f, &init.0, *elem, args, sparse_names, c)?;
            if let RawInit::CopyOf { arg } = &init.0 {
                if arg == a.name() {
                    return Err(c.field(&f, "copy_of names the arg itself".into()));
                }
            }
            // An `out` buffer is poisoned, not filled, so a kernel that accumulates into
            // it must say so by being `inout`.
            if *role == Role::Out && matches!(init.0, RawInit::Zeros) {
                return Err(c.field(
                    &f,
                    format!(
                        "{:?} starts as zeros, so the kernel reads it: make its role inout",
                        a.name()
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The [[constants]] (`__constant__` uploads).
fn constants_of(
    raw: &RawHarness,
    args: &[ArgSpec],
    sparse_names: &BTreeSet<&str>,
    c: &Ctx,
) -> Result<Vec<ConstSpec>, HarnessError> {
    let mut constants = Vec::new();
    for (i, k) in raw.constants.iter().enumerate() {
        let f = format!("constants[{i}]");
        if !is_ident(&k.name) {
            return Err(c.at(&f, "name", format!("{:?} is not an identifier", k.name)));
        }
        let elem = ElemType::from_name(&k.ty)
            .ok_or_else(|| c.at(&f, "type", format!("unknown element type {:?}", k.ty)))?;
        if matches!(k.init, RawInit::CopyOf { .. }) {
            return Err(c.at(&f, "init", "copy_of is not supported for constants".into()));
        }
        check_init(&format!("{f}.init"), &k.init, elem, args, sparse_names, c)?;
        constants.push(ConstSpec {
            name: k.name.clone(),
            elem,
            len: k.len.text(),
            init: RawInitText(k.init.clone()),
        });
    }
    Ok(constants)
}

/// The [[textures]], each bound to a buffer arg.
fn textures_of(
    raw: &RawHarness,
    args: &[ArgSpec],
    c: &Ctx,
) -> Result<Vec<TextureSpec>, HarnessError> {
    let mut textures: Vec<TextureSpec> = Vec::new();
    for (i, t) in raw.textures.iter().enumerate() {
        let f = format!("textures[{i}]");
        if !is_ident(&t.name) || textures.iter().any(|o| o.name == t.name) {
            return Err(c.at(&f, "name", format!("{:?} is not a new identifier", t.name)));
        }
        let buffer = args
            .iter()
            .position(|a| a.name() == t.buffer)
            .filter(|&k| matches!(args[k], ArgSpec::Buffer { .. }))
            .ok_or_else(|| {
                c.field(
                    &format!("{f}.buffer"),
                    format!("{:?} is not a buffer in [[args]]", t.buffer),
                )
            })?;
        if t.pitch.is_some() && t.height.is_none() {
            return Err(c.at(&f, "pitch", "a pitch needs a height (2D texture)".into()));
        }
        textures.push(TextureSpec {
            name: t.name.clone(),
            buffer,
            width: t.width.as_ref().map(Expr::text),
            height: t.height.as_ref().map(Expr::text),
            pitch: t.pitch.as_ref().map(Expr::text),
        });
    }
    Ok(textures)
}

/// The [[sparse]] matrices.
fn sparse_of(raw: &RawHarness, c: &Ctx) -> Result<Vec<SparseSpec>, HarnessError> {
    let mut sparse = Vec::new();
    let mut sparse_seen = BTreeSet::new();
    for (i, s) in raw.sparse.iter().enumerate() {
        if !is_ident(&s.name) || !sparse_seen.insert(s.name.clone()) {
            return Err(c.field(
                &format!("sparse[{i}].name"),
                format!("{:?} is not a new identifier", s.name),
            ));
        }
        sparse.push(SparseSpec {
            name: s.name.clone(),
            rows: s.rows.text(),
            cols: s.cols.text(),
            nnz_per_row: s.nnz_per_row.text(),
            pad: s
                .pad
                .as_ref()
                .map(Expr::text)
                .unwrap_or_else(|| "32".into()),
        });
    }
    Ok(sparse)
}

/// Launch lists by variant and by kernel name.
type Launches = (
    Vec<LaunchSpec>,
    Vec<LaunchSpec>,
    BTreeMap<String, Vec<LaunchSpec>>,
);

/// Launches: shared [[launch]] or per-variant; a variant's own list wins. Other variant
/// names are kernel (or version) names: a progression's harness gives each member its
/// launches once, and a pair takes its two sides' lists (`for_pair`).
fn launches_of(raw: &RawHarness, args: &[ArgSpec], c: &Ctx) -> Result<Launches, HarnessError> {
    let specs = |list: &[RawLaunch], prefix: &str| -> Result<Vec<LaunchSpec>, HarnessError> {
        (list.iter().enumerate())
            .map(|(i, l)| launch_spec(l, &format!("{prefix}[{i}]"), args, c))
            .collect()
    };
    for k in raw.variants.keys() {
        if !is_ident(k) {
            return Err(c.field(
                &format!("variants.{k}"),
                "variants are `slow`, `fast` or a kernel name".into(),
            ));
        }
    }
    let mut by_kernel = BTreeMap::new();
    for (k, var) in raw
        .variants
        .iter()
        .filter(|(k, _)| *k != "slow" && *k != "fast")
    {
        let list = specs(&var.launch, &format!("variants.{k}.launch"))?;
        if list.is_empty() {
            return Err(c.field(
                &format!("variants.{k}"),
                "a kernel's variant needs at least one launch".into(),
            ));
        }
        by_kernel.insert(k.clone(), list);
    }
    let variant_launches = |v: &str| match raw.variants.get(v) {
        Some(var) if !var.launch.is_empty() => specs(&var.launch, &format!("variants.{v}.launch")),
        _ => specs(&raw.launch, "launch"),
    };
    let slow = variant_launches("slow")?;
    let fast = variant_launches("fast")?;
    if !raw.needs_host_loop && by_kernel.is_empty() && (fast.is_empty() || slow.is_empty()) {
        return Err(c.field(
            "launch",
            "no launch sequence: give [[launch]] or [[variants.slow.launch]] and [[variants.fast.launch]]"
                .into(),
        ));
    }
    Ok((slow, fast, by_kernel))
}

/// Something to compare, or a host loop with its reason.
fn host_loop_of(
    raw: &RawHarness,
    args: &[ArgSpec],
    c: &Ctx,
) -> Result<Option<String>, HarnessError> {
    if !raw.needs_host_loop
        && !args
            .iter()
            .any(|a| matches!(a, ArgSpec::Buffer { role, .. } if role.is_output()))
    {
        return Err(c.field(
            "args",
            "no buffer has role out or inout: there would be nothing to compare".into(),
        ));
    }
    Ok(if raw.needs_host_loop {
        Some(
            raw.host_loop_reason
                .clone()
                .filter(|r| !r.trim().is_empty())
                .ok_or_else(|| {
                    c.field(
                        "host_loop_reason",
                        "needs_host_loop = true needs a reason".into(),
                    )
                })?,
        )
    } else {
        None
    })
}

/// A `choice` init's lists: values given, weights (if any) one per value, non-negative,
/// not all zero.
pub(super) fn check_choice(values: &[Expr], weights: Option<&[f64]>) -> Result<(), String> {
    if values.is_empty() {
        return Err("choice needs at least one value".into());
    }
    if let Some(w) = weights {
        if w.len() != values.len() {
            return Err(format!(
                "choice has {} values but {} weights",
                values.len(),
                w.len()
            ));
        }
        if w.iter().any(|x| !(x.is_finite() && *x >= 0.0)) || w.iter().sum::<f64>() <= 0.0 {
            return Err("choice weights must be finite, non-negative and not all zero".into());
        }
    }
    Ok(())
}

pub(super) fn dims_list(d: &Dims) -> Vec<String> {
    match d {
        Dims::One(e) => vec![e.text()],
        Dims::Many(v) => v.iter().map(Expr::text).collect(),
    }
}

/// Launch `f` (`launch[0]`), its args named among `args`.
fn launch_spec(
    l: &RawLaunch,
    f: &str,
    args: &[ArgSpec],
    c: &Ctx,
) -> Result<LaunchSpec, HarnessError> {
    let field = |sub: &str, m: String| c.field(&format!("{f}.{sub}"), m);
    if l.kernel.trim().is_empty() {
        return Err(field("kernel", "empty kernel name".into()));
    }
    let grid = dims_list(&l.grid);
    let block = dims_list(&l.block);
    for (n, d) in [("grid", &grid), ("block", &block)] {
        if d.is_empty() || d.len() > 3 {
            return Err(field(
                n,
                format!("needs 1 to 3 dimensions, has {}", d.len()),
            ));
        }
    }
    let (bound, offsets) = match &l.args {
        None => ((0..args.len()).collect(), vec!["0".to_string(); args.len()]),
        Some(list) => {
            let mut bound = Vec::new();
            let mut offsets = Vec::new();
            for entry in list {
                let (n, off) = entry.split_once('+').unwrap_or((entry, "0"));
                let n = n.trim();
                let i = args.iter().position(|a| a.name() == n);
                bound.push(i.ok_or_else(|| field("args", format!("{n:?} is not a declared arg")))?);
                offsets.push(off.trim().to_string());
            }
            (bound, offsets)
        }
    };
    Ok(LaunchSpec {
        kernel: l.kernel.clone(),
        grid,
        block,
        shared_mem: l.shared_mem.as_ref().map(Expr::text).unwrap_or("0".into()),
        repeat: l.repeat.as_ref().map(Expr::text).unwrap_or("1".into()),
        args: bound,
        offsets,
        cooperative: l.cooperative,
    })
}

/// A launch's kernel name without its template arguments (`reduce<int, 256>` → `reduce`).
pub(super) fn launch_base(kernel: &str) -> &str {
    kernel.split('<').next().unwrap_or("").trim()
}

/// Whether a parameter type points to const (`const float *`, not `float *const`).
fn points_to_const(ty: &str) -> bool {
    (ty.split('*').next()).is_some_and(|t| t.split_whitespace().any(|w| w == "const"))
}

/// The launch name `launch` (which names another kernel) becomes for `unit`: the unit's
/// name expression when it has one, else its name with the launch's template arguments.
fn renamed_launch(launch: &str, unit: &KernelUnit) -> String {
    if unit.symbol.contains('<') {
        return unit.symbol.clone();
    }
    match launch.find('<') {
        Some(i) => format!("{}{}", unit.kernel, &launch[i..]),
        None => unit.kernel.clone(),
    }
}

pub(crate) fn parse_csr_part(s: &str) -> Option<CsrPart> {
    Some(match s {
        "row_ptr" => CsrPart::RowPtr,
        "col_idx" => CsrPart::ColIdx,
        "values" => CsrPart::Values,
        _ => return None,
    })
}

pub(crate) fn parse_jds_part(s: &str) -> Option<JdsPart> {
    Some(match s {
        "perm" => JdsPart::Perm,
        "ptr" => JdsPart::Ptr,
        "zcnt" => JdsPart::Zcnt,
        "col_idx" => JdsPart::ColIdx,
        "values" => JdsPart::Values,
        _ => return None,
    })
}

impl Harness {
    /// The harness for one pair: where the file gives launches by kernel name, the slow
    /// side takes its kernel's list and the fast side its own; `slow`/`fast`/`[[launch]]`
    /// lists stay the default.
    pub fn for_pair(
        &self,
        slow: Option<&KernelUnit>,
        fast: &KernelUnit,
    ) -> Result<Harness, HarnessError> {
        let mut h = self.clone();
        if self.needs_host_loop.is_some() {
            return Ok(h);
        }
        for (side, unit, list) in [
            ("slow", slow, &mut h.slow),
            ("fast", Some(fast), &mut h.fast),
        ] {
            if let Some(own) = unit.and_then(|u| self.by_kernel.get(&u.kernel)) {
                *list = own.clone();
            }
            if list.is_empty() {
                return Err(HarnessError::Mismatch {
                    origin: self.origin.clone(),
                    kernel: format!(
                        "{} ({side})",
                        unit.map(|u| u.kernel.as_str()).unwrap_or("-")
                    ),
                    message: format!(
                        "no launch sequence for this kernel: the harness has variants for {}",
                        self.by_kernel
                            .keys()
                            .cloned()
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                });
            }
        }
        Ok(h)
    }

    /// The one kernel every launch of the file names (its name without template arguments),
    /// when there is exactly one: a harness written for one kernel of a pair.
    pub fn sole_launched_kernel(&self) -> Option<&str> {
        let mut names = self
            .slow
            .iter()
            .chain(&self.fast)
            .chain(self.by_kernel.values().flatten())
            .map(|l| launch_base(&l.kernel));
        let first = names.next()?;
        names.all(|n| n == first).then_some(first)
    }

    /// The harness as `pair` runs it: where its launches are shared
    /// ([`crate::record::Pair::shared_launches`]), the other side runs them with its own
    /// kernel ([`Harness::share_launches`]); then [`Harness::for_pair`].
    pub fn for_record(&self, pair: &crate::record::Pair) -> Result<Harness, HarnessError> {
        match (pair.shared_launches, pair.slow.unit()) {
            (Some(from), Some(slow)) => self
                .share_launches(from, slow, &pair.fast)
                .for_pair(Some(slow), &pair.fast),
            _ => self.for_pair(pair.slow.unit(), &pair.fast),
        }
    }

    /// `from`'s launches serve both sides: the other side keeps its own list when the file
    /// gives one, else takes `from`'s, and every launch of it that names `from`'s kernel
    /// names the other side's kernel instead (same grid, block, shared memory and args).
    pub fn share_launches(&self, from: Variant, slow: &KernelUnit, fast: &KernelUnit) -> Harness {
        let mut h = self.clone();
        let (from_unit, to_unit) = match from {
            Variant::Slow => (slow, fast),
            Variant::Fast => (fast, slow),
        };
        let from_list = match self.by_kernel.get(&from_unit.kernel) {
            Some(own) => own.clone(),
            None => match from {
                Variant::Slow => self.slow.clone(),
                Variant::Fast => self.fast.clone(),
            },
        };
        let to_list = match from {
            Variant::Slow => &mut h.fast,
            Variant::Fast => &mut h.slow,
        };
        if to_list.is_empty() {
            *to_list = from_list;
        }
        for l in to_list.iter_mut() {
            if launch_base(&l.kernel) == from_unit.kernel {
                l.kernel = renamed_launch(&l.kernel, to_unit);
            }
        }
        h
    }

    pub fn size_sets(&self) -> &[SizeSet] {
        &self.size_sets
    }

    /// Check the harness against the pair's units: every launch names the unit's kernel, and
    /// the args bound to it match the parameter list in count, pointer-ness and element type.
    pub fn check_against(
        &self,
        slow: Option<&KernelUnit>,
        fast: &KernelUnit,
    ) -> Result<(), HarnessError> {
        if let Some(s) = slow {
            self.check_variant("slow", &self.slow, s)?;
        }
        self.check_variant("fast", &self.fast, fast)?;
        // Every constant must be a `__constant__` symbol of at least one unit (units without
        // source text, as in hand-made records, are not checked).
        let sources: Vec<&str> = slow
            .into_iter()
            .chain([fast])
            .map(|u| u.source.as_str())
            .filter(|s| !s.is_empty())
            .collect();
        if !sources.is_empty() {
            for c in &self.constants {
                let declared = sources.iter().any(|s| {
                    s.lines().any(|l| {
                        l.contains("__constant__")
                            && l.split(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                                .any(|w| w == c.name)
                    })
                });
                if !declared {
                    return Err(HarnessError::Mismatch {
                        origin: self.origin.clone(),
                        kernel: fast.kernel.clone(),
                        message: format!(
                            "constant {:?} is not a __constant__ symbol of either unit",
                            c.name
                        ),
                    });
                }
            }
        }
        // Shimmed texture references and `[[textures]]` entries must correspond: an unfilled
        // shim reads through a null pointer. (A pair that never runs needs none.)
        if self.needs_host_loop.is_none() {
            self.check_textures(slow, fast)?;
        }
        Ok(())
    }

    fn check_textures(
        &self,
        slow: Option<&KernelUnit>,
        fast: &KernelUnit,
    ) -> Result<(), HarnessError> {
        use crate::cuda::texture::{shimmed_symbols, texel_bytes};
        let mismatch = |kernel: &str, message: String| HarnessError::Mismatch {
            origin: self.origin.clone(),
            kernel: kernel.to_string(),
            message,
        };
        let units: Vec<&KernelUnit> = slow.into_iter().chain([fast]).collect();
        for u in &units {
            for d in shimmed_symbols(&u.source) {
                if !self.textures.iter().any(|t| t.name == d.name) {
                    return Err(mismatch(
                        &u.kernel,
                        format!(
                            "{} reads legacy texture {:?}: add a [[textures]] entry naming the buffer it reads",
                            u.variant, d.name
                        ),
                    ));
                }
            }
        }
        if units.iter().all(|u| u.source.is_empty()) {
            return Ok(());
        }
        for t in &self.textures {
            let Some(d) = units
                .iter()
                .flat_map(|u| shimmed_symbols(&u.source))
                .find(|d| d.name == t.name)
            else {
                return Err(mismatch(
                    &fast.kernel,
                    format!(
                        "texture {:?} is not a legacy texture reference of either unit",
                        t.name
                    ),
                ));
            };
            if d.dim == 1 && t.height.is_some() {
                return Err(mismatch(
                    &fast.kernel,
                    format!("texture {:?} is 1D but has a height", t.name),
                ));
            }
            // Widths count texels: a float4 texture over an f32 buffer has len / 4 of them.
            let ArgSpec::Buffer { elem, name, .. } = &self.args[t.buffer] else {
                continue;
            };
            if t.width.is_none() && texel_bytes(&d.element) != Some(elem.size_of()) {
                return Err(mismatch(
                    &fast.kernel,
                    format!(
                        "texture {:?} reads {} texels from {name:?} ({} elements): give its width in texels",
                        t.name,
                        d.element,
                        elem.name()
                    ),
                ));
            }
        }
        Ok(())
    }

    fn check_variant(
        &self,
        variant: &str,
        launches: &[LaunchSpec],
        unit: &KernelUnit,
    ) -> Result<(), HarnessError> {
        let err = |m: String| HarnessError::Mismatch {
            origin: self.origin.clone(),
            kernel: format!("{} ({variant})", unit.kernel),
            message: m,
        };
        // A version unit (a host launcher's kernels, docs/pairing.md) holds several
        // kernels: a launch naming another kernel is checked against that kernel's
        // definition in the unit's source.
        // Parsed only when a launch names another kernel: most name the unit's own, and
        // inference checks every draft (and every halved assumption) against its kernels.
        let index = std::cell::OnceCell::new();
        let sym_base = launch_base(&unit.symbol);
        let mut kernels: Vec<std::borrow::Cow<KernelUnit>> = Vec::new();
        for (li, l) in launches.iter().enumerate() {
            let base = launch_base(&l.kernel);
            if base == unit.kernel || base == sym_base {
                kernels.push(std::borrow::Cow::Borrowed(unit));
                continue;
            }
            let index = index.get_or_init(|| crate::cuda::index_file(&unit.path, &unit.source));
            let Some(k) = index.kernels().iter().find(|k| k.name == base) else {
                return Err(err(format!(
                    "launch[{li}] runs {:?}, but the {variant} unit's kernel is {:?}",
                    l.kernel, unit.kernel
                )));
            };
            kernels.push(std::borrow::Cow::Owned(KernelUnit {
                kernel: k.name.clone(),
                symbol: k.name.clone(),
                params: k.params.clone(),
                template_params: k.template_params.clone(),
                ..unit.clone()
            }));
        }
        // Outputs some launch of the sequence writes through a non-const pointer: a later
        // launch may read them through a const one (a version's `mean` feeding `rstd_kernel`).
        let written: BTreeSet<usize> = launches
            .iter()
            .zip(&kernels)
            .flat_map(|(l, k)| {
                (l.args.iter().zip(&k.params)).filter_map(|(&ai, p)| {
                    (c_is_pointer(&p.ty) && !points_to_const(&p.ty)).then_some(ai)
                })
            })
            .collect();
        for (li, (l, unit)) in launches.iter().zip(&kernels).enumerate() {
            let unit: &KernelUnit = unit;
            // A kernel that syncs its whole grid fails under a plain launch ("unspecified
            // launch failure"): say so before any GPU time.
            if !l.cooperative && crate::cuda::lex::syncs_grid(&unit.source) {
                return Err(err(format!(
                    "launch[{li}] runs {:?}, whose code syncs the whole grid (cooperative \
                     groups' `this_grid().sync()`): a plain launch fails there; add \
                     `cooperative = true` to the launch",
                    l.kernel
                )));
            }
            if l.args.len() != unit.params.len() {
                return Err(err(format!(
                    "launch[{li}] passes {} args, the kernel takes {} parameters ({})",
                    l.args.len(),
                    unit.params.len(),
                    unit.params
                        .iter()
                        .map(|p| format!("{} {}", p.ty, p.name))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            // `k<int, 256>` binds the kernel's template parameters (`T *` checks as `int *`).
            let binds = template::bindings(&unit.template_params, &l.kernel);
            for (pi, (&ai, p)) in l.args.iter().zip(&unit.params).enumerate() {
                let p = &template::bind_param(p, &binds);
                // Every complaint about a parameter starts by naming it.
                let perr = |m: String| err(format!("parameter {pi} `{} {}` {m}", p.ty, p.name));
                let ptr = c_is_pointer(&p.ty);
                let (name, elem, c_type) = match &self.args[ai] {
                    ArgSpec::Buffer { name, role, .. }
                        if points_to_const(&p.ty) && role.is_output() && !written.contains(&ai) =>
                    {
                        return Err(perr(format!(
                            "points to const, but arg {name:?} is an output"
                        )))
                    }
                    ArgSpec::Buffer { name, .. } if !ptr => {
                        return Err(perr(format!("is a value, but arg {name:?} is a buffer")))
                    }
                    ArgSpec::Buffer {
                        name, elem, c_type, ..
                    } => (name, *elem, c_type.as_deref()),
                    ArgSpec::Struct { name, .. } if ptr => {
                        return Err(perr(format!(
                            "is a pointer, but arg {name:?} is a struct passed by value"
                        )))
                    }
                    ArgSpec::Struct { name, c_type, .. } => {
                        let (base, declared) = (c_base_type(&p.ty), c_base_type(c_type));
                        if base != declared {
                            return Err(perr(format!(
                                "vs arg {name:?}: declared c_type {declared:?} but the parameter is {base:?}"
                            )));
                        }
                        continue;
                    }
                    ArgSpec::Scalar { name, .. } if ptr => {
                        return Err(perr(format!("is a pointer, but arg {name:?} is a scalar")))
                    }
                    ArgSpec::Scalar { name, elem, .. } => (name, *elem, None),
                };
                type_matches(&p.ty, elem, c_type, &unit.source).map_err(|m| {
                    let hint = template::unbound_hint(&p.ty, &unit.template_params, &l.kernel);
                    let hint = hint.map(|h| format!(" ({h})")).unwrap_or_default();
                    perr(format!("vs arg {name:?}: {m}{hint}"))
                })?;
            }
        }
        Ok(())
    }
}
