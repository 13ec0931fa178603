//! Resolving a harness for one size set on one device: every expression evaluated, buffer
//! lengths, scalars, launches, layouts, textures and constants made concrete.

use super::validate::{parse_csr_part, parse_jds_part};
use super::*;

/// The most dynamic shared memory one block may opt in to on Hopper (sm_90: 227 KiB); a
/// launch asking for more fails `cuFuncSetAttribute` on the device.
pub const MAX_DYNAMIC_SHARED_BYTES: u32 = 227 * 1024;

/// The words every "a launch, buffer or table is over a device or symbol limit" error
/// ends with: inference with `--assume-size` tries smaller sizes on exactly these.
pub const OVER_A_LIMIT: &str = "over a limit";

impl Harness {
    /// Evaluate every expression for one size set on one device.
    pub fn resolve(&self, set: &SizeSet, dev: &DeviceProps) -> Result<Resolved, HarnessError> {
        let mut rx = Rx::new(&self.origin, &set.name, dev);
        let mut values = BTreeMap::new();
        for (k, v) in &set.values {
            rx.scope.set_int(k, *v);
            values.insert(k.clone(), *v);
        }
        rx.derive(&self.derived, &mut values)?;
        let mut sparse = Vec::new();
        for (i, s) in self.sparse.iter().enumerate() {
            let m = rx.sparse(i, s)?;
            for (k, v) in gen::sparse_figures(&m) {
                let name = format!("{}_{k}", m.name);
                rx.scope.set_int(&name, v as i64);
                values.insert(name, v as i64);
            }
            sparse.push(m);
        }
        rx.require(&self.require)?;
        let args = (self.args.iter().enumerate())
            .map(|(i, a)| rx.arg(i, a, &self.args))
            .collect::<Result<Vec<_>, _>>()?;
        let mut ignores = Vec::new();
        for (i, a) in self.args.iter().enumerate() {
            if let ArgSpec::Buffer {
                ignore: Some(range),
                ..
            } = a
            {
                ignores.push(rx.ignore(i, range)?);
            }
        }
        let constants = (self.constants.iter().enumerate())
            .map(|(i, c)| {
                let f = format!("constants[{i}]");
                Ok(ResolvedConst {
                    name: c.name.clone(),
                    elem: c.elem,
                    len: rx.pos(&format!("{f}.len"), &c.len)?,
                    init: rx.init_of(&format!("{f}.init"), &c.init.0)?,
                })
            })
            .collect::<Result<Vec<_>, HarnessError>>()?;
        let textures = (self.textures.iter().enumerate())
            .map(|(i, t)| rx.texture(i, t, &args, &self.args))
            .collect::<Result<Vec<_>, _>>()?;
        let buffer_lens: Vec<Option<usize>> = args
            .iter()
            .map(|a| match a {
                ResolvedArg::Buffer { len, .. } => Some(*len),
                ResolvedArg::Scalar { .. }
                | ResolvedArg::Struct { .. }
                | ResolvedArg::Bytes { .. } => None,
            })
            .collect();
        let resolved = Resolved {
            origin: self.origin.clone(),
            size_set: set.name.clone(),
            values,
            slow: rx.launches("slow", &self.slow, &buffer_lens)?,
            fast: rx.launches("fast", &self.fast, &buffer_lens)?,
            args,
            constants,
            textures,
            objects: Vec::new(),
            ignores,
            sparse,
            expected: Vec::new(),
        };
        gen::check_resolved(&resolved)?;
        Ok(resolved)
    }
}

/// One resolution: the harness's name and size set for errors, the device, and the scope
/// of sizes, device properties and derived values every expression is evaluated in.
struct Rx<'a> {
    origin: &'a str,
    set: &'a str,
    dev: &'a DeviceProps,
    scope: Scope,
}

impl<'a> Rx<'a> {
    fn new(origin: &'a str, set: &'a str, dev: &'a DeviceProps) -> Rx<'a> {
        let mut scope = Scope::default();
        scope.set_int("sm_count", dev.sm_count);
        scope.set_int("max_threads_per_block", dev.max_threads_per_block);
        scope.set_int("warp_size", dev.warp_size);
        scope.set_int("l2_bytes", dev.l2_bytes);
        Rx {
            origin,
            set,
            dev,
            scope,
        }
    }

    fn err(&self, field: &str, expr: &str, m: String) -> HarnessError {
        HarnessError::Expr {
            origin: self.origin.to_string(),
            field: field.to_string(),
            expr: expr.to_string(),
            size_set: self.set.to_string(),
            message: m,
        }
    }

    /// A positive count.
    fn pos(&self, field: &str, e: &str) -> Result<usize, HarnessError> {
        let v = self.scope.eval_int(e).map_err(|m| self.err(field, e, m))?;
        if v <= 0 {
            return Err(self.err(field, e, format!("must be > 0, is {v}")));
        }
        usize::try_from(v).map_err(|_| self.err(field, e, "too large".into()))
    }

    /// A count that may be 0.
    fn nonneg(&self, field: &str, e: &str) -> Result<usize, HarnessError> {
        let v = self.scope.eval_int(e).map_err(|m| self.err(field, e, m))?;
        usize::try_from(v).map_err(|_| self.err(field, e, format!("must be >= 0, is {v}")))
    }

    /// Field `{f}.{sub}`, a positive count.
    fn pos_at(&self, f: &str, sub: &str, e: &Expr) -> Result<usize, HarnessError> {
        self.pos(&format!("{f}.{sub}"), &e.text())
    }

    /// Field `field` as an integer in `lo..=hi`; `what` follows the value when it is not.
    fn int_within(
        &self,
        field: &str,
        e: &str,
        (lo, hi): (i64, i64),
        what: &str,
    ) -> Result<i64, HarnessError> {
        let v = self.scope.eval_int(e).map_err(|m| self.err(field, e, m))?;
        if v < lo || v > hi {
            return Err(self.err(field, e, format!("{v} {what}")));
        }
        Ok(v)
    }

    /// Field `{f}.{sub}` as a number.
    fn num(&self, f: &str, sub: &str, e: &Expr) -> Result<f64, HarnessError> {
        let t = e.text();
        self.scope
            .eval(&t)
            .map(Num::as_f64)
            .map_err(|m| self.err(&format!("{f}.{sub}"), &t, m))
    }

    /// Field `{f}.{sub}` as an integer.
    fn int(&self, f: &str, sub: &str, e: &Expr) -> Result<i64, HarnessError> {
        let t = e.text();
        self.scope
            .eval_int(&t)
            .map_err(|m| self.err(&format!("{f}.{sub}"), &t, m))
    }

    /// Derived values may refer to each other in any order: evaluate until no progress.
    fn derive(
        &mut self,
        derived: &[(String, String)],
        values: &mut BTreeMap<String, i64>,
    ) -> Result<(), HarnessError> {
        let mut pending: Vec<&(String, String)> = derived.iter().collect();
        while !pending.is_empty() {
            let before = pending.len();
            let mut last_err = None;
            let scope = &mut self.scope;
            pending.retain(|(k, e)| match scope.eval(e) {
                Ok(v) => {
                    scope.set(k, v);
                    if let Num::Int(i) = v {
                        values.insert(k.clone(), i);
                    }
                    false
                }
                Err(m) => {
                    last_err = Some((k.clone(), e.clone(), m));
                    true
                }
            });
            if pending.len() == before {
                let (k, e, m) = last_err.expect("a pending derived value failed");
                return Err(self.err(&format!("derived.{k}"), &e, m));
            }
        }
        Ok(())
    }

    fn sparse(&self, i: usize, s: &SparseSpec) -> Result<SparseMatrix, HarnessError> {
        let f = format!("sparse[{i}]");
        Ok(SparseMatrix {
            name: s.name.clone(),
            rows: self.pos(&format!("{f}.rows"), &s.rows)?,
            cols: self.pos(&format!("{f}.cols"), &s.cols)?,
            nnz_per_row: self.pos(&format!("{f}.nnz_per_row"), &s.nnz_per_row)?,
            pad: self.pos(&format!("{f}.pad"), &s.pad)?,
        })
    }

    fn require(&self, require: &[String]) -> Result<(), HarnessError> {
        for (i, r) in require.iter().enumerate() {
            match self.scope.eval_bool(r) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(self.err(
                        &format!("require[{i}]"),
                        r,
                        "size set violates this requirement".into(),
                    ))
                }
                Err(m) => return Err(self.err(&format!("require[{i}]"), r, m)),
            }
        }
        Ok(())
    }

    /// Inits drawn element by element (the ones a `fields` group may use); None for the
    /// others.
    fn elementwise(&self, f: &str, raw: &RawInit) -> Result<Option<Init>, HarnessError> {
        Ok(Some(match raw {
            RawInit::Uniform { lo, hi } => {
                let (lo_v, hi_v) = (self.num(f, "lo", lo)?, self.num(f, "hi", hi)?);
                if lo_v >= hi_v || lo_v.is_nan() || hi_v.is_nan() {
                    return Err(self.err(f, &format!("{lo_v}..{hi_v}"), "needs lo < hi".into()));
                }
                Init::Uniform { lo: lo_v, hi: hi_v }
            }
            RawInit::Normal { mean, std, lo, hi } => {
                let sd = self.num(f, "std", std)?;
                if sd.is_nan() || sd <= 0.0 {
                    return Err(self.err(f, &std.text(), "std must be > 0".into()));
                }
                let lo = lo.as_ref().map(|e| self.num(f, "lo", e)).transpose()?;
                let hi = hi.as_ref().map(|e| self.num(f, "hi", e)).transpose()?;
                if let (Some(a), Some(b)) = (lo, hi) {
                    if a.is_nan() || b.is_nan() || a > b {
                        return Err(self.err(f, &format!("{a}..{b}"), "needs lo <= hi".into()));
                    }
                }
                Init::Normal {
                    mean: self.num(f, "mean", mean)?,
                    std: sd,
                    lo,
                    hi,
                }
            }
            RawInit::IntRange { lo, hi } => {
                let (lo_v, hi_v) = (self.int(f, "lo", lo)?, self.int(f, "hi", hi)?);
                if lo_v > hi_v {
                    return Err(self.err(f, &format!("{lo_v}..={hi_v}"), "needs lo <= hi".into()));
                }
                Init::IntRange { lo: lo_v, hi: hi_v }
            }
            RawInit::Zeros => Init::Zeros,
            RawInit::Constant { value } => Init::Constant {
                value: self.num(f, "value", value)?,
            },
            RawInit::Choice { values, weights } => Init::Choice {
                values: values
                    .iter()
                    .enumerate()
                    .map(|(k, v)| self.num(f, &format!("values[{k}]"), v))
                    .collect::<Result<_, _>>()?,
                weights: weights.clone().unwrap_or_else(|| vec![1.0; values.len()]),
            },
            _ => return Ok(None),
        }))
    }

    fn init_of(&self, f: &str, raw: &RawInit) -> Result<Init, HarnessError> {
        if let Some(i) = self.elementwise(f, raw)? {
            return Ok(i);
        }
        Ok(match raw {
            RawInit::Fields { fields } => Init::Fields {
                fields: fields
                    .iter()
                    .enumerate()
                    .map(|(k, fg)| {
                        let ff = format!("{f}.fields[{k}]");
                        Ok(Field {
                            count: self.pos_at(&ff, "count", &fg.count)?,
                            bits: fg.ty.as_deref().and_then(ElemType::from_name),
                            init: self
                                .elementwise(&format!("{ff}.init"), &fg.init)?
                                .expect("field inits are elementwise (checked at parse)"),
                        })
                    })
                    .collect::<Result<_, HarnessError>>()?,
            },
            RawInit::CopyOf { arg } => Init::CopyOf { arg: arg.clone() },
            RawInit::Permutation => Init::Permutation,
            RawInit::Poison => Init::Poison,
            RawInit::Linspace { start, stop } => Init::Linspace {
                start: self.num(f, "start", start)?,
                stop: self.num(f, "stop", stop)?,
            },
            RawInit::Interleave { args } => Init::Interleave { args: args.clone() },
            RawInit::Iota {
                start,
                step,
                every,
                period,
            } => {
                // `every` and `period` divide: they must be positive.
                let positive = |sub: &str, e: &Option<Expr>| {
                    (e.as_ref().map(|e| self.pos_at(f, sub, e).map(|v| v as i64))).transpose()
                };
                Init::Iota {
                    start: start
                        .as_ref()
                        .map(|e| self.int(f, "start", e))
                        .transpose()?
                        .unwrap_or(0),
                    step: step
                        .as_ref()
                        .map(|e| self.int(f, "step", e))
                        .transpose()?
                        .unwrap_or(1),
                    every: positive("every", every)?.unwrap_or(1),
                    period: positive("period", period)?,
                }
            }
            RawInit::Cells {
                dims,
                depth,
                size,
                origin,
                fill,
                w,
            } => {
                // Counts and extents must be positive; fill and w are checked against
                // depth and the element type with the arg's name (gen::check_resolved).
                let mut d = [0usize; 3];
                for (k, e) in dims.iter().enumerate() {
                    d[k] = self.pos_at(f, &format!("dims[{k}]"), e)?;
                }
                let mut o = [0f64; 3];
                for (k, e) in origin.iter().flatten().enumerate() {
                    o[k] = self.num(f, &format!("origin[{k}]"), e)?;
                }
                Init::Cells(Box::new(Cells {
                    dims: d,
                    depth: self.pos_at(f, "depth", depth)?,
                    size: self.num(f, "size", size)?,
                    origin: o,
                    fill: Span {
                        lo: self.int(f, "fill.lo", &fill.lo)?,
                        hi: self.int(f, "fill.hi", &fill.hi)?,
                    },
                    w: Span {
                        lo: self.num(f, "w.lo", &w.lo)?,
                        hi: self.num(f, "w.hi", &w.hi)?,
                    },
                }))
            }
            RawInit::Csr { matrix, part } => Init::Csr {
                matrix: matrix.clone(),
                part: parse_csr_part(part).expect("checked at parse"),
            },
            RawInit::Jds { matrix, part } => Init::Jds {
                matrix: matrix.clone(),
                part: parse_jds_part(part).expect("checked at parse"),
            },
            _ => unreachable!("elementwise inits are handled above"),
        })
    }

    fn arg(&self, i: usize, a: &ArgSpec, all: &[ArgSpec]) -> Result<ResolvedArg, HarnessError> {
        let f = format!("args[{i}]");
        Ok(match a {
            ArgSpec::Buffer {
                name,
                elem,
                len,
                init,
                role,
                tol,
                allow_degenerate,
                layout,
                compare,
                ..
            } => {
                let len_v = self.pos(&format!("{f}.len"), len)?;
                ResolvedArg::Buffer {
                    name: name.clone(),
                    elem: *elem,
                    len: len_v,
                    init: self.init_of(&format!("{f}.init"), &init.0)?,
                    role: *role,
                    tol: *tol,
                    allow_degenerate: *allow_degenerate,
                    layout: self.layouts(&f, layout, len_v)?,
                    compare: self.window(&f, compare.as_ref(), len_v)?,
                }
            }
            ArgSpec::Struct { name, fields, .. } => ResolvedArg::Struct {
                name: name.clone(),
                fields: fields
                    .iter()
                    .map(|m| {
                        all.iter()
                            .position(|a| a.name() == m)
                            .expect("struct fields name buffer args (checked at parse)")
                    })
                    .collect(),
            },
            ArgSpec::Scalar { name, elem, value } => {
                let fv = format!("{f}.value");
                let n = self
                    .scope
                    .eval(value)
                    .map_err(|m| self.err(&fv, value, m))?;
                ResolvedArg::Scalar {
                    name: name.clone(),
                    value: ScalarValue::from_num(*elem, n).map_err(|m| self.err(&fv, value, m))?,
                }
            }
        })
    }

    /// A buffer's per-variant layouts, each inside the buffer.
    fn layouts(
        &self,
        f: &str,
        layout: &[(Variant, LayoutSpec)],
        len_v: usize,
    ) -> Result<Layouts, HarnessError> {
        let mut layouts = Layouts::default();
        for (v, spec) in layout {
            let fl = format!("{f}.layout.{}", v.name());
            let LayoutSpec::Transpose { rows, cols, offset } = spec;
            let l = Layout::Transpose {
                rows: self.pos(&format!("{fl}.rows"), rows)?,
                cols: self.pos(&format!("{fl}.cols"), cols)?,
                offset: self.nonneg(&format!("{fl}.offset"), offset)?,
            };
            if l.extent() > len_v {
                return Err(self.err(
                    &fl,
                    &format!("{offset} + ({rows}) * ({cols})"),
                    format!(
                        "the transposed region ends at element {}, past the buffer's {len_v}",
                        l.extent()
                    ),
                ));
            }
            match v {
                Variant::Slow => layouts.slow = Some(l),
                Variant::Fast => layouts.fast = Some(l),
            }
        }
        Ok(layouts)
    }

    /// A buffer's compare window, inside the buffer.
    fn window(
        &self,
        f: &str,
        compare: Option<&(String, String)>,
        len_v: usize,
    ) -> Result<Option<Window>, HarnessError> {
        let Some((off, wlen)) = compare else {
            return Ok(None);
        };
        let w = Window {
            offset: self.nonneg(&format!("{f}.compare.offset"), off)?,
            len: self.pos(&format!("{f}.compare.len"), wlen)?,
        };
        if w.offset + w.len > len_v {
            return Err(self.err(
                &format!("{f}.compare"),
                &format!("{off} + {wlen}"),
                format!(
                    "the window ends at element {}, past the buffer's {len_v}",
                    w.offset + w.len
                ),
            ));
        }
        Ok(Some(w))
    }

    /// Arg `i`'s `ignore = { period, from, to }`.
    fn ignore(&self, i: usize, [period, from, to]: &[String; 3]) -> Result<Ignore, HarnessError> {
        let f = format!("args[{i}].ignore");
        let period_v = self.pos(&format!("{f}.period"), period)?;
        // `from` may be 0 (a range at the start of each period, or the whole buffer).
        let from_v = self.nonneg(&format!("{f}.from"), from)?;
        let to_v = self.pos(&format!("{f}.to"), to)?;
        if period_v == 0 || from_v >= to_v || to_v > period_v {
            return Err(self.err(
                &f,
                &format!("{from} .. {to} of {period}"),
                format!("needs 0 <= from < to <= period, got {from_v} .. {to_v} of {period_v}"),
            ));
        }
        Ok(Ignore {
            arg: i,
            period: period_v,
            from: from_v,
            to: to_v,
        })
    }

    fn texture(
        &self,
        i: usize,
        t: &TextureSpec,
        args: &[ResolvedArg],
        specs: &[ArgSpec],
    ) -> Result<ResolvedTexture, HarnessError> {
        let f = format!("textures[{i}]");
        let ResolvedArg::Buffer { len, .. } = &args[t.buffer] else {
            unreachable!("checked on parse: textures read buffers");
        };
        let len = *len as i64;
        let dim = |sub: &str, e: &Option<String>, default: i64| match e {
            Some(e) => self.int_within(
                &format!("{f}.{sub}"),
                e,
                (0, i32::MAX as i64),
                "is out of range",
            ),
            None => Ok(default),
        };
        let width = dim("width", &t.width, len)?;
        let height = dim("height", &t.height, 0)?;
        let pitch = dim("pitch", &t.pitch, 0)?;
        let rows_span = if height > 0 {
            (height - 1) * pitch.max(width) + width
        } else {
            width
        };
        if rows_span > len || (pitch > 0 && pitch < width) {
            return Err(self.err(
            &format!("{f}.width"),
            t.width.as_deref().unwrap_or("(buffer length)"),
            format!(
                "a {width}×{height} texture with pitch {pitch} does not fit buffer {:?} of {len} elements",
                specs[t.buffer].name()
            ),
        ));
        }
        Ok(ResolvedTexture {
            name: t.name.clone(),
            buffer: t.buffer,
            width,
            height,
            pitch,
        })
    }

    fn launches(
        &self,
        variant: &str,
        list: &[LaunchSpec],
        buffer_lens: &[Option<usize>],
    ) -> Result<Vec<Launch>, HarnessError> {
        (list.iter().enumerate())
            .map(|(i, l)| self.launch(&format!("{variant} launch[{i}]"), l, buffer_lens))
            .collect()
    }

    fn launch(
        &self,
        f: &str,
        l: &LaunchSpec,
        buffer_lens: &[Option<usize>],
    ) -> Result<Launch, HarnessError> {
        let dev = self.dev;
        let u32_of = |sub: &str, e: &str, min: i64| {
            let range = format!("is out of range (>= {min})");
            (self.int_within(&format!("{f}.{sub}"), e, (min, u32::MAX as i64), &range))
                .map(|v| v as u32)
        };
        let mut grid = [1u32; 3];
        let mut block = [1u32; 3];
        for (d, e) in l.grid.iter().enumerate() {
            grid[d] = u32_of(&format!("grid[{d}]"), e, 1)?;
        }
        for (d, e) in l.block.iter().enumerate() {
            block[d] = u32_of(&format!("block[{d}]"), e, 1)?;
        }
        let threads: u64 = block.iter().map(|&b| b as u64).product();
        if threads > dev.max_threads_per_block as u64 {
            return Err(self.err(
                &format!("{f}.block"),
                &l.block.join(", "),
                format!(
                    "{threads} threads per block exceeds the device's {}: {OVER_A_LIMIT}",
                    dev.max_threads_per_block
                ),
            ));
        }
        if grid[1] > 65535 || grid[2] > 65535 {
            return Err(self.err(
                &format!("{f}.grid"),
                &l.grid.join(", "),
                format!(
                    "grid y and z are limited to 65535 ({} and {}): {OVER_A_LIMIT}",
                    grid[1], grid[2]
                ),
            ));
        }
        let shared_mem = u32_of("shared_mem", &l.shared_mem, 0)?;
        if shared_mem > MAX_DYNAMIC_SHARED_BYTES {
            return Err(self.err(
                &format!("{f}.shared_mem"),
                &l.shared_mem,
                format!(
                    "{shared_mem} bytes of dynamic shared memory exceed the {MAX_DYNAMIC_SHARED_BYTES} a block may have: {OVER_A_LIMIT}"
                ),
            ));
        }
        Ok(Launch {
            kernel: expr::interpolate(&l.kernel, &self.scope)
                .map_err(|m| self.err(&format!("{f}.kernel"), &l.kernel, m))?,
            grid,
            block,
            shared_mem,
            repeat: u32_of("repeat", &l.repeat, 1)?,
            cooperative: l.cooperative,
            args: l.args.clone(),
            offsets: l
                .args
                .iter()
                .zip(&l.offsets)
                .map(|(&ai, e)| {
                    let fo = format!("{f}.args");
                    let v = self.scope.eval_int(e).map_err(|m| self.err(&fo, e, m))?;
                    match buffer_lens[ai] {
                        _ if v == 0 => Ok(0),
                        None => Err(self.err(&fo, e, "only a buffer can take an offset".into())),
                        Some(len) if v > 0 && (v as usize) < len => Ok(v as usize),
                        Some(len) => Err(self.err(
                            &fo,
                            e,
                            format!("offset {v} is outside the buffer's {len} elements"),
                        )),
                    }
                })
                .collect::<Result<Vec<_>, _>>()?,
        })
    }
}
