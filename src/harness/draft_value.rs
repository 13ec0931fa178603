//! An inferred harness as a value: per field what inference found, what it assumed, or why
//! it could not say (a TODO with its reason), and the notes the file carries. Later steps
//! of inference ask this value, never the text; the TOML is written from it once
//! ([`HarnessDraft::write`]), and `harness check` reads the [`RawHarness`] it converts to.

use super::spec::{Dims, Expr, RawArg, RawConst, RawHarness, RawInit, RawLaunch, RawSizeSet};
use super::spec::{RawTexture, RawVariant, RawWindow};
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// Something inference could not say, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unknown {
    /// Where in the harness: `sizes.n`, `args[2].len`, `launch.grid`, ….
    pub field: String,
    pub reason: String,
}

/// A TOML string (JSON's escapes are TOML's).
pub fn toml_str(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// One field of the harness: found (with a note on where from), assumed under
/// `--assume-size` (with why the code did not say), or left open with why.
#[derive(Debug, Clone, PartialEq)]
pub enum Field<T> {
    Known { value: T, note: Option<String> },
    Assumed { value: T, reason: String },
    Todo { reason: String },
}

impl<T> Field<T> {
    pub fn known(value: T) -> Self {
        Field::Known { value, note: None }
    }

    pub fn noted(value: T, note: impl Into<String>) -> Self {
        Field::Known {
            value,
            note: Some(note.into()),
        }
    }

    pub fn todo(reason: impl Into<String>) -> Self {
        Field::Todo {
            reason: reason.into(),
        }
    }

    /// The value, found or assumed.
    pub fn value(&self) -> Option<&T> {
        match self {
            Field::Known { value, .. } | Field::Assumed { value, .. } => Some(value),
            Field::Todo { .. } => None,
        }
    }

    pub fn map<U>(&self, f: impl FnOnce(&T) -> U) -> Field<U> {
        match self {
            Field::Known { value, note } => Field::Known {
                value: f(value),
                note: note.clone(),
            },
            Field::Assumed { value, reason } => Field::Assumed {
                value: f(value),
                reason: reason.clone(),
            },
            Field::Todo { reason } => Field::todo(reason.clone()),
        }
    }
}

/// The size sets beside `default`: an irregular one, or why there is none.
#[derive(Debug, Clone, Default)]
pub enum Irregular {
    /// The kernel bounds-checks no size that may move.
    #[default]
    None,
    /// `(size, divisor)`: the size must stay a multiple of the divisor, and no nearby sizes
    /// keep it one.
    Refused(String, String),
    /// The moved sizes; `(size, divisor)` when they were stepped down to keep a multiple.
    Set {
        values: BTreeMap<String, i64>,
        multiple_of: Option<(String, String)>,
    },
}

/// One `[[args]]` table. Which fields are present says what kind of arg it is (a buffer
/// has `len` and `role`, a scalar `value`).
#[derive(Debug, Clone)]
pub struct ArgDraft {
    pub name: String,
    /// Why an arg that is no kernel parameter exists (a buffer only a texture reads).
    pub comment: Option<String>,
    pub ty: Field<String>,
    pub c_type: Option<String>,
    pub len: Option<Field<String>>,
    pub init: Option<Field<RawInit>>,
    pub role: Option<Field<String>>,
    pub value: Option<Field<Expr>>,
    pub compare: Option<Field<RawWindow>>,
    pub allow_degenerate: Option<Field<bool>>,
    /// Written through float atomics: reruns may differ in the last bits.
    pub float_atomics: bool,
}

impl ArgDraft {
    pub fn new(name: &str, ty: Field<String>) -> Self {
        ArgDraft {
            name: name.to_string(),
            comment: None,
            ty,
            c_type: None,
            len: None,
            init: None,
            role: None,
            value: None,
            compare: None,
            allow_degenerate: None,
            float_atomics: false,
        }
    }
}

/// One `[[constants]]` table.
#[derive(Debug, Clone)]
pub struct ConstDraft {
    pub name: String,
    pub ty: Field<String>,
    pub len: Field<Expr>,
    pub init: Option<Field<RawInit>>,
}

/// One `[[textures]]` table.
#[derive(Debug, Clone)]
pub struct TextureDraft {
    pub name: String,
    pub buffer: Field<String>,
    pub width: Option<Field<String>>,
    pub height: Option<String>,
}

/// One launch table, as translated from a launch site.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchDraft {
    pub kernel: Field<String>,
    /// Which args the kernel's parameters take; all args when None.
    pub args: Option<Vec<String>>,
    /// `path:line: <<<grid, block>>>`: the launch site it was read from; None when extract
    /// recorded none (then grid and block are TODO).
    pub from: Option<String>,
    pub grid: Field<Vec<String>>,
    pub block: Field<Vec<String>>,
    pub shared_mem: Option<Field<String>>,
    /// Why the launch as a whole is open (the kernel's parameters bind to no args).
    pub todo: Option<String>,
}

/// Why a launch without a recorded site is open.
const NO_SITE: &str = "extract recorded no launch site for this kernel";

impl LaunchDraft {
    /// A kernel extract recorded no launch site for: grid and block open.
    pub fn without_site(kernel: &str) -> Self {
        LaunchDraft {
            kernel: Field::known(kernel.to_string()),
            args: None,
            from: None,
            grid: Field::todo(""),
            block: Field::todo(""),
            shared_mem: None,
            todo: None,
        }
    }

    /// The first component of the grid, when known.
    pub fn grid_x(&self) -> Option<&String> {
        self.grid.value()?.first()
    }

    /// The first component of the block, when known.
    pub fn block_x(&self) -> Option<&String> {
        self.block.value()?.first()
    }

    /// The same launch, but for the site it was read from.
    pub fn same_as(&self, other: &LaunchDraft) -> bool {
        let key = |l: &LaunchDraft| {
            let mut l = l.clone();
            l.from = l.from.map(|_| String::new());
            l
        };
        key(self) == key(other)
    }

    /// What the table leaves open, in file order: (field, reason).
    pub fn todos(&self) -> Vec<(String, String)> {
        let mut out = Vec::new();
        if let Field::Todo { reason } = &self.kernel {
            out.push(("launch.kernel".to_string(), reason.clone()));
        }
        if self.from.is_none() {
            out.push(("launch".to_string(), NO_SITE.to_string()));
        }
        for (k, f) in [("grid", &self.grid), ("block", &self.block)] {
            if let Field::Todo { reason } = f {
                out.push((format!("launch.{k}"), reason.clone()));
            }
        }
        if let Some(Field::Todo { reason }) = &self.shared_mem {
            out.push(("launch.shared_mem".to_string(), reason.clone()));
        }
        if let Some(why) = &self.todo {
            out.push(("launch".to_string(), why.clone()));
        }
        out
    }

    /// The table's TOML lines (without its header).
    pub fn text(&self) -> String {
        let mut o = String::new();
        self.write(&mut o);
        o
    }

    fn write(&self, o: &mut String) {
        field(o, "kernel", &self.kernel.map(|k| toml_str(k)));
        if let Some(a) = &self.args {
            let names: Vec<String> = a.iter().map(|n| toml_str(n)).collect();
            writeln!(o, "args = [{}]", names.join(", ")).expect("string");
        }
        match &self.from {
            Some(f) => writeln!(o, "# from {}", one_line(f)).expect("string"),
            None => writeln!(o, "# TODO: {NO_SITE}").expect("string"),
        }
        field(o, "grid", &self.grid.map(|d| dims_text(d)));
        field(o, "block", &self.block.map(|d| dims_text(d)));
        if let Some(s) = &self.shared_mem {
            field(o, "shared_mem", &s.map(|s| toml_str(s)));
        }
        if let Some(why) = &self.todo {
            writeln!(o, "# TODO: {}", one_line(why)).expect("string");
        }
    }

    fn to_raw(&self) -> Result<RawLaunch, String> {
        let dims = |f: &Field<Vec<String>>, k: &str| {
            known(f, k).map(|d| Dims::Many(d.iter().map(|e| Expr::Text(e.clone())).collect()))
        };
        Ok(RawLaunch {
            kernel: known(&self.kernel, "launch.kernel")?.clone(),
            grid: dims(&self.grid, "launch.grid")?,
            block: dims(&self.block, "launch.block")?,
            shared_mem: match &self.shared_mem {
                Some(s) => Some(Expr::Text(known(s, "launch.shared_mem")?.clone())),
                None => None,
            },
            repeat: None,
            args: self.args.clone(),
            cooperative: false,
        })
    }
}

/// The launch tables: one for both variants, or one each.
#[derive(Debug, Clone)]
pub enum Launches {
    Shared(LaunchDraft),
    PerVariant {
        /// Boxed: the enum's variants stay alike in size.
        slow: Box<LaunchDraft>,
        fast: LaunchDraft,
    },
}

impl Launches {
    pub fn tables(&self) -> Vec<&LaunchDraft> {
        match self {
            Launches::Shared(l) => vec![l],
            Launches::PerVariant { slow, fast } => vec![&**slow, fast],
        }
    }

    pub fn tables_mut(&mut self) -> Vec<&mut LaunchDraft> {
        match self {
            Launches::Shared(l) => vec![l],
            Launches::PerVariant { slow, fast } => vec![&mut **slow, fast],
        }
    }
}

/// An inferred harness, field by field.
#[derive(Debug, Clone)]
pub struct HarnessDraft {
    /// `(pair id, suite/benchmark, kernel)` for the opening comment.
    pub heading: (String, String, String),
    pub description: String,
    /// Comment lines on template values taken (see `infer_template`).
    pub template_note: String,
    /// In order: the kernel's size parameters, then host names.
    pub sizes: Vec<(String, Field<i64>)>,
    pub irregular: Irregular,
    pub args: Vec<ArgDraft>,
    pub constants: Vec<ConstDraft>,
    pub textures: Vec<TextureDraft>,
    pub launches: Launches,
    /// Why `harness check` fails a harness with nothing else open.
    pub check_fails: Option<String>,
}

/// Text for a `#` comment: host code quoted in a reason can span lines (an expression with
/// an `#ifdef` inside it, Chai's `in_size\n#ifdef CUDA_8_0\n + sizeof(int)\n#endif`), and a
/// line of it outside the comment would make the harness unreadable TOML. Each line break,
/// with the white space around it, becomes one space.
pub(super) fn one_line(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\n', '\r']) {
        return text.into();
    }
    text.split(['\n', '\r'])
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .into()
}

/// `key = value`, with its note, assumption or TODO as a comment.
fn field(o: &mut String, key: &str, f: &Field<String>) {
    match f {
        Field::Known { value, note: None } => writeln!(o, "{key} = {value}"),
        Field::Known {
            value,
            note: Some(n),
        } => writeln!(o, "{key} = {value}  # {}", one_line(n)),
        Field::Assumed { value, reason } => {
            writeln!(
                o,
                "{key} = {value}  # ASSUMED (--assume-size): {}",
                one_line(reason)
            )
        }
        Field::Todo { reason } if reason.is_empty() => writeln!(o, "{key} = \"TODO\""),
        Field::Todo { reason } => writeln!(o, "{key} = \"TODO\"  # {}", one_line(reason)),
    }
    .expect("string");
}

fn dims_text(d: &[String]) -> String {
    let parts: Vec<String> = d.iter().map(|e| toml_str(e)).collect();
    format!("[{}]", parts.join(", "))
}

fn expr_text(e: &Expr) -> String {
    match e {
        Expr::Int(i) => i.to_string(),
        Expr::Float(f) => format!("{f:?}"),
        Expr::Text(t) => toml_str(t),
    }
}

/// An init as an inline table, `kind` first, fields in declaration order.
fn init_text(i: &RawInit) -> String {
    let fields: Vec<(&str, String)> = match i {
        RawInit::Uniform { lo, hi } => vec![
            ("kind", toml_str("uniform")),
            ("lo", expr_text(lo)),
            ("hi", expr_text(hi)),
        ],
        RawInit::IntRange { lo, hi } => vec![
            ("kind", toml_str("int_range")),
            ("lo", expr_text(lo)),
            ("hi", expr_text(hi)),
        ],
        RawInit::Zeros => vec![("kind", toml_str("zeros"))],
        RawInit::CopyOf { arg } => vec![("kind", toml_str("copy_of")), ("arg", toml_str(arg))],
        // Inference writes no other kind; any other is still valid TOML.
        other => {
            return toml::Value::try_from(other).map_or_else(|e| e.to_string(), |v| v.to_string())
        }
    };
    let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k} = {v}")).collect();
    format!("{{ {} }}", parts.join(", "))
}

fn window_text(w: &RawWindow) -> String {
    match &w.offset {
        Some(off) => format!(
            "{{ offset = {}, len = {} }}",
            expr_text(off),
            expr_text(&w.len)
        ),
        None => format!("{{ len = {} }}", expr_text(&w.len)),
    }
}

/// A field's value; Err names the field when it is open.
fn known<'f, T>(f: &'f Field<T>, name: &str) -> Result<&'f T, String> {
    f.value().ok_or_else(|| format!("{name} is TODO"))
}

impl HarnessDraft {
    /// The TOML text: the `# Unknowns:` / `# Assumed` head, then the tables.
    pub fn write(&self, unknowns: &[Unknown], assumed: &[Unknown]) -> String {
        let mut o = String::new();
        for (head, list) in [
            ("# Unknowns:", unknowns),
            ("# Assumed (review these):", assumed),
        ] {
            if !list.is_empty() {
                writeln!(o, "{head}").expect("string");
                for u in list {
                    writeln!(o, "#   {}: {}", u.field, one_line(&u.reason)).expect("string");
                }
            }
        }
        let (id, place, kernel) = &self.heading;
        writeln!(
            o,
            "# Inferred harness for pair {id} ({place}, kernel {kernel}).\n# Written by `kernelpair harness infer` from the host code and the kernel body;\n# every TODO fails `harness check` until it is resolved."
        )
        .expect("string");
        writeln!(o, "description = {}", toml_str(&self.description)).expect("string");
        o.push_str(&self.template_note);
        o.push_str("\n[sizes]\n");
        for (s, f) in &self.sizes {
            field(&mut o, s, &f.map(|v| v.to_string()));
        }
        if self.sizes.is_empty() {
            o.push_str("# (no sizes: the launch and lengths are constants)\n");
        }
        if let Irregular::Refused(p, d) = &self.irregular {
            writeln!(
                o,
                "\n# No irregular size set: `{p}` must stay a multiple of `{d}` (the kernel splits it into equal parts and drops the remainder), and no nearby sizes keep it one."
            )
            .expect("string");
        }
        o.push_str("\n[[size_sets]]\nname = \"default\"\n");
        if let Irregular::Set {
            values,
            multiple_of,
        } = &self.irregular
        {
            o.push_str("\n# Non-power-of-two sizes the kernel's bounds checks compare against.\n");
            if let Some((p, d)) = multiple_of {
                writeln!(o, "# `{p}` stays a multiple of `{d}`: the kernel splits it into that many equal parts and drops the remainder.").expect("string");
            }
            o.push_str("[[size_sets]]\nname = \"irregular\"\n");
            for (k, v) in values {
                writeln!(o, "{k} = {v}").expect("string");
            }
        }
        for a in &self.args {
            a.write(&mut o);
        }
        for c in &self.constants {
            o.push_str("\n[[constants]]\n");
            writeln!(o, "name = {}", toml_str(&c.name)).expect("string");
            field(&mut o, "type", &c.ty.map(|t| toml_str(t)));
            field(&mut o, "len", &c.len.map(expr_text));
            if let Some(i) = &c.init {
                field(&mut o, "init", &i.map(init_text));
            }
        }
        for t in &self.textures {
            o.push_str("\n[[textures]]\n");
            writeln!(o, "name = {}", toml_str(&t.name)).expect("string");
            field(&mut o, "buffer", &t.buffer.map(|b| toml_str(b)));
            if let Some(w) = &t.width {
                field(&mut o, "width", &w.map(|w| toml_str(w)));
            }
            if let Some(h) = &t.height {
                writeln!(o, "height = {}", toml_str(h)).expect("string");
            }
        }
        match &self.launches {
            Launches::Shared(l) => {
                o.push_str("\n[[launch]]\n");
                l.write(&mut o);
            }
            Launches::PerVariant { slow, fast } => {
                o.push_str("\n[[variants.slow.launch]]\n");
                slow.write(&mut o);
                o.push_str("\n[[variants.fast.launch]]\n");
                fast.write(&mut o);
            }
        }
        if let Some(why) = &self.check_fails {
            writeln!(o, "\n# TODO: harness check fails: {}", one_line(why)).expect("string");
        }
        o
    }

    /// The harness as `harness check` reads it; Err names a field left open.
    pub fn to_raw(&self) -> Result<RawHarness, String> {
        let mut raw = RawHarness {
            description: Some(self.description.clone()),
            ..RawHarness::default()
        };
        for (s, f) in &self.sizes {
            raw.sizes
                .insert(s.clone(), *known(f, &format!("sizes.{s}"))?);
        }
        raw.size_sets.push(RawSizeSet {
            name: "default".into(),
            primary: false,
            values: BTreeMap::new(),
        });
        if let Irregular::Set { values, .. } = &self.irregular {
            raw.size_sets.push(RawSizeSet {
                name: "irregular".into(),
                primary: false,
                values: values.clone(),
            });
        }
        for a in &self.args {
            raw.args.push(a.to_raw()?);
        }
        for c in &self.constants {
            let at = |f: &str| format!("constants.{}.{f}", c.name);
            raw.constants.push(RawConst {
                name: c.name.clone(),
                ty: known(&c.ty, &at("type"))?.clone(),
                len: known(&c.len, &at("len"))?.clone(),
                init: match &c.init {
                    Some(i) => known(i, &at("init"))?.clone(),
                    None => return Err(format!("{} has no init", at("init"))),
                },
            });
        }
        for t in &self.textures {
            raw.textures.push(RawTexture {
                name: t.name.clone(),
                buffer: known(&t.buffer, &format!("textures.{}", t.name))?.clone(),
                width: match &t.width {
                    Some(w) => Some(Expr::Text(known(w, "width")?.clone())),
                    None => None,
                },
                height: t.height.clone().map(Expr::Text),
                pitch: None,
            });
        }
        match &self.launches {
            Launches::Shared(l) => raw.launch.push(l.to_raw()?),
            Launches::PerVariant { slow, fast } => {
                for (v, l) in [("slow", &**slow), ("fast", fast)] {
                    raw.variants.insert(
                        v.to_string(),
                        RawVariant {
                            launch: vec![l.to_raw()?],
                        },
                    );
                }
            }
        }
        Ok(raw)
    }
}

impl ArgDraft {
    fn write(&self, o: &mut String) {
        o.push_str("\n[[args]]\n");
        writeln!(o, "name = {}", toml_str(&self.name)).expect("string");
        if let Some(c) = &self.comment {
            writeln!(o, "# {}", one_line(c)).expect("string");
        }
        field(o, "type", &self.ty.map(|t| toml_str(t)));
        if let Some(c) = &self.c_type {
            writeln!(o, "c_type = {}", toml_str(c)).expect("string");
        }
        if let Some(l) = &self.len {
            field(o, "len", &l.map(|l| toml_str(l)));
        }
        if let Some(i) = &self.init {
            field(o, "init", &i.map(init_text));
        }
        if let Some(r) = &self.role {
            field(o, "role", &r.map(|r| toml_str(r)));
        }
        if let Some(v) = &self.value {
            field(o, "value", &v.map(expr_text));
        }
        if let Some(c) = &self.compare {
            field(o, "compare", &c.map(window_text));
        }
        if let Some(d) = &self.allow_degenerate {
            field(o, "allow_degenerate", &d.map(|d| d.to_string()));
        }
        if self.float_atomics {
            o.push_str("# float atomics: the summation order varies between runs\n");
        }
    }

    fn to_raw(&self) -> Result<RawArg, String> {
        let at = |f: &str| format!("args.{}.{f}", self.name);
        fn opt<T: Clone>(f: &Option<Field<T>>, name: String) -> Result<Option<T>, String> {
            f.as_ref().map(|f| known(f, &name).cloned()).transpose()
        }
        Ok(RawArg {
            name: self.name.clone(),
            ty: known(&self.ty, &at("type"))?.clone(),
            len: opt(&self.len, at("len"))?.map(Expr::Text),
            fields: None,
            init: opt(&self.init, at("init"))?,
            role: opt(&self.role, at("role"))?,
            value: opt(&self.value, at("value"))?,
            atol: None,
            rtol: None,
            l2: None,
            scale_tol: None,
            allow_degenerate: opt(&self.allow_degenerate, at("allow_degenerate"))?.unwrap_or(false),
            ignore: None,
            c_type: self.c_type.clone(),
            layout: BTreeMap::new(),
            compare: opt(&self.compare, at("compare"))?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(kernel: &str, grid: &str) -> LaunchDraft {
        LaunchDraft {
            kernel: Field::known(kernel.to_string()),
            args: None,
            from: Some("a.cu:3: <<<g, b>>>".into()),
            grid: Field::known(vec![grid.to_string(), "1".to_string()]),
            block: Field::known(vec!["256".to_string()]),
            shared_mem: Some(Field::known("b * 4".to_string())),
            todo: None,
        }
    }

    /// A draft with every kind of table and field inference writes.
    fn draft() -> HarnessDraft {
        let mut x = ArgDraft::new("x", Field::known("f32".into()));
        x.c_type = Some("fp".into());
        x.len = Some(Field::known("n * 2".into()));
        x.init = Some(Field::noted(
            RawInit::IntRange {
                lo: Expr::Int(0),
                hi: Expr::Text("(n) - 1".into()),
            },
            "indexes y",
        ));
        x.role = Some(Field::known("inout".into()));
        x.compare = Some(Field::noted(
            RawWindow {
                offset: Some(Expr::Text("n".into())),
                len: Expr::Text("g".into()),
            },
            "one result per block",
        ));
        x.allow_degenerate = Some(Field::noted(true, "a flag"));
        x.float_atomics = true;
        let mut a = ArgDraft::new("a", Field::known("f32".into()));
        a.value = Some(Field::Assumed {
            value: Expr::Float(0.5),
            reason: "read from a file".into(),
        });
        let mut n = ArgDraft::new("n", Field::known("i32".into()));
        n.value = Some(Field::known(Expr::Text("n".into())));
        let mut t = ArgDraft::new("tex_in", Field::known("f32".into()));
        t.comment = Some("not a kernel parameter".into());
        t.len = Some(Field::known("n".into()));
        t.init = Some(Field::known(RawInit::Uniform {
            lo: Expr::Float(-1.0),
            hi: Expr::Float(1.0),
        }));
        t.role = Some(Field::known("in".into()));
        let mut slow = launch("k_slow", "g");
        slow.args = Some(vec!["x".into(), "n".into()]);
        HarnessDraft {
            heading: ("p1".into(), "suite/bench".into(), "k".into()),
            description: "bench k (inferred)".into(),
            template_note: "# template values: none\n".into(),
            sizes: vec![
                ("n".into(), Field::noted(1024, "host `N`")),
                (
                    "g".into(),
                    Field::Assumed {
                        value: 64,
                        reason: "read from a file".into(),
                    },
                ),
                ("b".into(), Field::known(8)),
            ],
            irregular: Irregular::Set {
                values: [("n".to_string(), 1000)].into(),
                multiple_of: Some(("n".into(), "8".into())),
            },
            args: vec![x, a, n, t],
            constants: vec![ConstDraft {
                name: "c".into(),
                ty: Field::known("f32".into()),
                len: Field::noted(Expr::Int(64), "the whole declared table"),
                init: Some(Field::known(RawInit::Zeros)),
            }],
            textures: vec![TextureDraft {
                name: "tex".into(),
                buffer: Field::noted("tex_in".into(), "cudaBindTexture(…)"),
                width: Some(Field::noted("(n) / 4".into(), "float4 texels")),
                height: Some("2".into()),
            }],
            launches: Launches::PerVariant {
                slow: Box::new(slow),
                fast: launch("k", "g / 2"),
            },
            check_fails: None,
        }
    }

    #[test]
    fn the_text_says_what_the_value_says() {
        let d = draft();
        let text = d.write(&[], &d_assumed());
        let read: RawHarness = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let json = |h: &RawHarness| serde_json::to_value(h).expect("json");
        assert_eq!(json(&read), json(&d.to_raw().expect("complete")), "{text}");
        // Notes and assumptions are comments beside their fields.
        for line in [
            "n = 1024  # host `N`",
            "g = 64  # ASSUMED (--assume-size): read from a file",
            "value = 0.5  # ASSUMED (--assume-size): read from a file",
            "init = { kind = \"int_range\", lo = 0, hi = \"(n) - 1\" }  # indexes y",
            "compare = { offset = \"n\", len = \"g\" }  # one result per block",
            "kernel = \"k_slow\"\nargs = [\"x\", \"n\"]\n# from a.cu:3",
            "#   sizes.g: read from a file",
        ] {
            assert!(text.contains(line), "{line}\n{text}");
        }
    }

    /// Host code quoted in a reason may span lines (Chai's `l_mem_size = in_size` with an
    /// `#ifdef CUDA_8_0` line inside the expression): each comment stays one line, so the
    /// file is still TOML and reads back as the same harness.
    #[test]
    fn reasons_quoting_code_over_several_lines_stay_one_comment_line() {
        let code = "`in_size\n#ifdef CUDA_8_0\n                + sizeof(int)\n#endif`";
        let mut d = draft();
        d.sizes[1].1 = Field::Assumed {
            value: 64,
            reason: format!("{code}: unexpected `#`"),
        };
        d.args[1].comment = Some(format!("from {code}"));
        let unknown = Unknown {
            field: "sizes.l_mem_size".into(),
            reason: format!("`l_mem_size` = {code}: unexpected `#`"),
        };
        let text = d.write(
            std::slice::from_ref(&unknown),
            std::slice::from_ref(&unknown),
        );
        let read: RawHarness = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        let json = |h: &RawHarness| serde_json::to_value(h).expect("json");
        assert_eq!(json(&read), json(&d.to_raw().expect("complete")), "{text}");
        let flat = "`in_size #ifdef CUDA_8_0 + sizeof(int) #endif`";
        assert!(
            text.contains(&format!(
                "g = 64  # ASSUMED (--assume-size): {flat}: unexpected `#`\n"
            )),
            "{text}"
        );
        assert!(
            text.contains(&format!(
                "#   sizes.l_mem_size: `l_mem_size` = {flat}: unexpected `#`\n"
            )),
            "{text}"
        );
        assert!(
            text.lines()
                .all(|l| !l.trim_start().starts_with("+ sizeof")),
            "{text}"
        );
    }

    fn d_assumed() -> Vec<Unknown> {
        vec![Unknown {
            field: "sizes.g".into(),
            reason: "read from a file".into(),
        }]
    }

    #[test]
    fn open_fields_are_todos_with_their_reasons_and_no_raw_harness() {
        let mut d = draft();
        d.launches = Launches::Shared(LaunchDraft::without_site("k"));
        d.sizes[2].1 = Field::todo("read with fscanf");
        let text = d.write(&[], &[]);
        assert!(
            text.contains("b = \"TODO\"  # read with fscanf\n"),
            "{text}"
        );
        assert!(
            text.contains("[[launch]]\nkernel = \"k\"\n# TODO: extract recorded no launch site for this kernel\ngrid = \"TODO\"\nblock = \"TODO\"\n"),
            "{text}"
        );
        assert_eq!(d.to_raw().unwrap_err(), "sizes.b is TODO");
        let Launches::Shared(l) = &d.launches else {
            unreachable!()
        };
        let todos: Vec<String> = l.todos().into_iter().map(|(f, _)| f).collect();
        assert_eq!(todos, ["launch", "launch.grid", "launch.block"]);
    }

    #[test]
    fn launches_that_differ_only_in_their_site_are_the_same() {
        let (a, mut b) = (launch("k", "g"), launch("k", "g"));
        b.from = Some("b.cu:9: <<<g, b>>>".into());
        assert!(a.same_as(&b));
        b.args = Some(vec!["x".into()]);
        assert!(!a.same_as(&b));
    }
}
