//! Resolving a harness for one size set on one device: every expression evaluated, buffer
//! lengths, scalars, launches, layouts, textures and constants made concrete.

use super::validate::{parse_csr_part, parse_jds_part};
use super::*;

impl Harness {
    /// Evaluate every expression for one size set on one device.
    pub fn resolve(&self, set: &SizeSet, dev: &DeviceProps) -> Result<Resolved, HarnessError> {
        let o = &self.origin;
        let xerr = |field: &str, expr: &str, m: String| HarnessError::Expr {
            origin: o.clone(),
            field: field.to_string(),
            expr: expr.to_string(),
            size_set: set.name.clone(),
            message: m,
        };
        let mut scope = Scope::default();
        scope.set_int("sm_count", dev.sm_count);
        scope.set_int("max_threads_per_block", dev.max_threads_per_block);
        scope.set_int("warp_size", dev.warp_size);
        scope.set_int("l2_bytes", dev.l2_bytes);
        let mut values = BTreeMap::new();
        for (k, v) in &set.values {
            scope.set_int(k, *v);
            values.insert(k.clone(), *v);
        }
        // Derived values may refer to each other in any order: evaluate until no progress.
        let mut pending: Vec<&(String, String)> = self.derived.iter().collect();
        while !pending.is_empty() {
            let before = pending.len();
            let mut last_err = None;
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
                return Err(xerr(&format!("derived.{k}"), &e, m));
            }
        }
        let pos = |field: &str, e: &str, scope: &Scope| -> Result<usize, HarnessError> {
            let v = scope.eval_int(e).map_err(|m| xerr(field, e, m))?;
            if v <= 0 {
                return Err(xerr(field, e, format!("must be > 0, is {v}")));
            }
            usize::try_from(v).map_err(|_| xerr(field, e, "too large".into()))
        };
        let mut sparse = Vec::new();
        for (i, s) in self.sparse.iter().enumerate() {
            let f = format!("sparse[{i}]");
            let m = SparseMatrix {
                name: s.name.clone(),
                rows: pos(&format!("{f}.rows"), &s.rows, &scope)?,
                cols: pos(&format!("{f}.cols"), &s.cols, &scope)?,
                nnz_per_row: pos(&format!("{f}.nnz_per_row"), &s.nnz_per_row, &scope)?,
                pad: pos(&format!("{f}.pad"), &s.pad, &scope)?,
            };
            for (k, v) in gen::sparse_figures(&m) {
                let name = format!("{}_{k}", m.name);
                scope.set_int(&name, v as i64);
                values.insert(name, v as i64);
            }
            sparse.push(m);
        }
        for (i, r) in self.require.iter().enumerate() {
            match scope.eval_bool(r) {
                Ok(true) => {}
                Ok(false) => {
                    return Err(xerr(
                        &format!("require[{i}]"),
                        r,
                        "size set violates this requirement".into(),
                    ))
                }
                Err(m) => return Err(xerr(&format!("require[{i}]"), r, m)),
            }
        }
        // Inits drawn element by element (the ones a `fields` group may use).
        let elementwise = |f: &str,
                           raw: &RawInit,
                           scope: &Scope|
         -> Result<Option<Init>, HarnessError> {
            let num = |sub: &str, e: &Expr| -> Result<f64, HarnessError> {
                let t = e.text();
                scope
                    .eval(&t)
                    .map(Num::as_f64)
                    .map_err(|m| xerr(&format!("{f}.{sub}"), &t, m))
            };
            let int = |sub: &str, e: &Expr| -> Result<i64, HarnessError> {
                let t = e.text();
                scope
                    .eval_int(&t)
                    .map_err(|m| xerr(&format!("{f}.{sub}"), &t, m))
            };
            Ok(Some(match raw {
                RawInit::Uniform { lo, hi } => {
                    let (lo_v, hi_v) = (num("lo", lo)?, num("hi", hi)?);
                    if lo_v >= hi_v || lo_v.is_nan() || hi_v.is_nan() {
                        return Err(xerr(f, &format!("{lo_v}..{hi_v}"), "needs lo < hi".into()));
                    }
                    Init::Uniform { lo: lo_v, hi: hi_v }
                }
                RawInit::Normal { mean, std, lo, hi } => {
                    let sd = num("std", std)?;
                    if sd.is_nan() || sd <= 0.0 {
                        return Err(xerr(f, &std.text(), "std must be > 0".into()));
                    }
                    let lo = lo.as_ref().map(|e| num("lo", e)).transpose()?;
                    let hi = hi.as_ref().map(|e| num("hi", e)).transpose()?;
                    if let (Some(a), Some(b)) = (lo, hi) {
                        if a.is_nan() || b.is_nan() || a > b {
                            return Err(xerr(f, &format!("{a}..{b}"), "needs lo <= hi".into()));
                        }
                    }
                    Init::Normal {
                        mean: num("mean", mean)?,
                        std: sd,
                        lo,
                        hi,
                    }
                }
                RawInit::IntRange { lo, hi } => {
                    let (lo_v, hi_v) = (int("lo", lo)?, int("hi", hi)?);
                    if lo_v > hi_v {
                        return Err(xerr(
                            f,
                            &format!("{lo_v}..={hi_v}"),
                            "needs lo <= hi".into(),
                        ));
                    }
                    Init::IntRange { lo: lo_v, hi: hi_v }
                }
                RawInit::Zeros => Init::Zeros,
                RawInit::Constant { value } => Init::Constant {
                    value: num("value", value)?,
                },
                RawInit::Choice { values, weights } => Init::Choice {
                    values: values
                        .iter()
                        .enumerate()
                        .map(|(k, v)| num(&format!("values[{k}]"), v))
                        .collect::<Result<_, _>>()?,
                    weights: weights.clone().unwrap_or_else(|| vec![1.0; values.len()]),
                },
                _ => return Ok(None),
            }))
        };
        let init_of = |f: &str, raw: &RawInit, scope: &Scope| -> Result<Init, HarnessError> {
            if let Some(i) = elementwise(f, raw, scope)? {
                return Ok(i);
            }
            let int = |sub: &str, e: &Expr| -> Result<i64, HarnessError> {
                let t = e.text();
                scope
                    .eval_int(&t)
                    .map_err(|m| xerr(&format!("{f}.{sub}"), &t, m))
            };
            let num = |sub: &str, e: &Expr| -> Result<f64, HarnessError> {
                let t = e.text();
                scope
                    .eval(&t)
                    .map(Num::as_f64)
                    .map_err(|m| xerr(&format!("{f}.{sub}"), &t, m))
            };
            Ok(match raw {
                RawInit::Fields { fields } => Init::Fields {
                    fields: fields
                        .iter()
                        .enumerate()
                        .map(|(k, fg)| {
                            let ff = format!("{f}.fields[{k}]");
                            let count = int(&format!("fields[{k}].count"), &fg.count)?;
                            if count <= 0 {
                                return Err(xerr(
                                    &format!("{ff}.count"),
                                    &fg.count.text(),
                                    format!("must be > 0, is {count}"),
                                ));
                            }
                            Ok(Field {
                                count: count as usize,
                                bits: fg.ty.as_deref().and_then(ElemType::from_name),
                                init: elementwise(&format!("{ff}.init"), &fg.init, scope)?
                                    .expect("field inits are elementwise (checked at parse)"),
                            })
                        })
                        .collect::<Result<_, _>>()?,
                },
                RawInit::CopyOf { arg } => Init::CopyOf { arg: arg.clone() },
                RawInit::Permutation => Init::Permutation,
                RawInit::Poison => Init::Poison,
                RawInit::Linspace { start, stop } => Init::Linspace {
                    start: num("start", start)?,
                    stop: num("stop", stop)?,
                },
                RawInit::Interleave { args } => Init::Interleave { args: args.clone() },
                RawInit::Iota {
                    start,
                    step,
                    every,
                    period,
                } => {
                    // `every` and `period` divide: they must be positive.
                    let positive =
                        |sub: &str, e: &Option<Expr>| -> Result<Option<i64>, HarnessError> {
                            let Some(e) = e else { return Ok(None) };
                            let v = int(sub, e)?;
                            if v <= 0 {
                                return Err(xerr(
                                    &format!("{f}.{sub}"),
                                    &e.text(),
                                    format!("must be > 0, is {v}"),
                                ));
                            }
                            Ok(Some(v))
                        };
                    Init::Iota {
                        start: start
                            .as_ref()
                            .map(|e| int("start", e))
                            .transpose()?
                            .unwrap_or(0),
                        step: step
                            .as_ref()
                            .map(|e| int("step", e))
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
                    let positive = |sub: &str, e: &Expr| -> Result<usize, HarnessError> {
                        let v = int(sub, e)?;
                        usize::try_from(v).ok().filter(|&v| v > 0).ok_or_else(|| {
                            xerr(
                                &format!("{f}.{sub}"),
                                &e.text(),
                                format!("must be > 0, is {v}"),
                            )
                        })
                    };
                    let mut d = [0usize; 3];
                    for (k, e) in dims.iter().enumerate() {
                        d[k] = positive(&format!("dims[{k}]"), e)?;
                    }
                    let mut o = [0f64; 3];
                    for (k, e) in origin.iter().flatten().enumerate() {
                        o[k] = num(&format!("origin[{k}]"), e)?;
                    }
                    Init::Cells(Box::new(Cells {
                        dims: d,
                        depth: positive("depth", depth)?,
                        size: num("size", size)?,
                        origin: o,
                        fill: Span {
                            lo: int("fill.lo", &fill.lo)?,
                            hi: int("fill.hi", &fill.hi)?,
                        },
                        w: Span {
                            lo: num("w.lo", &w.lo)?,
                            hi: num("w.hi", &w.hi)?,
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
        };
        let mut args = Vec::new();
        for (i, a) in self.args.iter().enumerate() {
            let f = format!("args[{i}]");
            args.push(match a {
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
                    let len_v = pos(&format!("{f}.len"), len, &scope)?;
                    let nonneg = |field: &str, e: &str| -> Result<usize, HarnessError> {
                        let v = scope.eval_int(e).map_err(|m| xerr(field, e, m))?;
                        usize::try_from(v).map_err(|_| xerr(field, e, format!("must be >= 0, is {v}")))
                    };
                    let mut layouts = Layouts::default();
                    for (v, spec) in layout {
                        let fl = format!("{f}.layout.{}", v.name());
                        let LayoutSpec::Transpose { rows, cols, offset } = spec;
                        let l = Layout::Transpose {
                            rows: pos(&format!("{fl}.rows"), rows, &scope)?,
                            cols: pos(&format!("{fl}.cols"), cols, &scope)?,
                            offset: nonneg(&format!("{fl}.offset"), offset)?,
                        };
                        if l.extent() > len_v {
                            return Err(xerr(
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
                    let window = match compare {
                        None => None,
                        Some((off, wlen)) => {
                            let w = Window {
                                offset: nonneg(&format!("{f}.compare.offset"), off)?,
                                len: pos(&format!("{f}.compare.len"), wlen, &scope)?,
                            };
                            if w.offset + w.len > len_v {
                                return Err(xerr(
                                    &format!("{f}.compare"),
                                    &format!("{off} + {wlen}"),
                                    format!(
                                        "the window ends at element {}, past the buffer's {len_v}",
                                        w.offset + w.len
                                    ),
                                ));
                            }
                            Some(w)
                        }
                    };
                    ResolvedArg::Buffer {
                        name: name.clone(),
                        elem: *elem,
                        len: len_v,
                        init: init_of(&format!("{f}.init"), &init.0, &scope)?,
                        role: *role,
                        tol: *tol,
                        allow_degenerate: *allow_degenerate,
                        layout: layouts,
                        compare: window,
                    }
                }
                ArgSpec::Struct { name, fields, .. } => ResolvedArg::Struct {
                    name: name.clone(),
                    fields: fields
                        .iter()
                        .map(|m| {
                            self.args
                                .iter()
                                .position(|a| a.name() == m)
                                .expect("struct fields name buffer args (checked at parse)")
                        })
                        .collect(),
                },
                ArgSpec::Scalar { name, elem, value } => {
                    let fv = format!("{f}.value");
                    let n = scope.eval(value).map_err(|m| xerr(&fv, value, m))?;
                    ResolvedArg::Scalar {
                        name: name.clone(),
                        value: ScalarValue::from_num(*elem, n).map_err(|m| xerr(&fv, value, m))?,
                    }
                }
            });
        }
        let mut ignores = Vec::new();
        for (i, a) in self.args.iter().enumerate() {
            let ArgSpec::Buffer {
                ignore: Some([period, from, to]),
                ..
            } = a
            else {
                continue;
            };
            let f = format!("args[{i}].ignore");
            let period_v = pos(&format!("{f}.period"), period, &scope)?;
            // `from` may be 0 (a range at the start of each period, or the whole buffer).
            let from_v = {
                let field = format!("{f}.from");
                let v = scope.eval_int(from).map_err(|m| xerr(&field, from, m))?;
                usize::try_from(v)
                    .map_err(|_| xerr(&field, from, format!("must be >= 0, is {v}")))?
            };
            let to_v = pos(&format!("{f}.to"), to, &scope)?;
            if period_v == 0 || from_v >= to_v || to_v > period_v {
                return Err(xerr(
                    &f,
                    &format!("{from} .. {to} of {period}"),
                    format!("needs 0 <= from < to <= period, got {from_v} .. {to_v} of {period_v}"),
                ));
            }
            ignores.push(Ignore {
                arg: i,
                period: period_v,
                from: from_v,
                to: to_v,
            });
        }
        let mut constants = Vec::new();
        for (i, c) in self.constants.iter().enumerate() {
            let f = format!("constants[{i}]");
            constants.push(ResolvedConst {
                name: c.name.clone(),
                elem: c.elem,
                len: pos(&format!("{f}.len"), &c.len, &scope)?,
                init: init_of(&format!("{f}.init"), &c.init.0, &scope)?,
            });
        }
        let mut textures = Vec::new();
        for (i, t) in self.textures.iter().enumerate() {
            let f = format!("textures[{i}]");
            let ResolvedArg::Buffer { len, .. } = &args[t.buffer] else {
                unreachable!("checked on parse: textures read buffers");
            };
            let len = *len as i64;
            let dim = |sub: &str, e: &Option<String>, default: i64| -> Result<i64, HarnessError> {
                let Some(e) = e else { return Ok(default) };
                let v = scope
                    .eval_int(e)
                    .map_err(|m| xerr(&format!("{f}.{sub}"), e, m))?;
                if v < 0 || v > i32::MAX as i64 {
                    return Err(xerr(
                        &format!("{f}.{sub}"),
                        e,
                        format!("{v} is out of range"),
                    ));
                }
                Ok(v)
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
                return Err(xerr(
                    &format!("{f}.width"),
                    t.width.as_deref().unwrap_or("(buffer length)"),
                    format!(
                        "a {width}×{height} texture with pitch {pitch} does not fit buffer {:?} of {len} elements",
                        self.args[t.buffer].name()
                    ),
                ));
            }
            textures.push(ResolvedTexture {
                name: t.name.clone(),
                buffer: t.buffer,
                width,
                height,
                pitch,
            });
        }
        let buffer_lens: Vec<Option<usize>> = args
            .iter()
            .map(|a| match a {
                ResolvedArg::Buffer { len, .. } => Some(*len),
                ResolvedArg::Scalar { .. } | ResolvedArg::Struct { .. } => None,
            })
            .collect();
        let launches = |variant: &str, list: &[LaunchSpec]| -> Result<Vec<Launch>, HarnessError> {
            let prefix = format!("{variant} launch");
            list.iter()
                .enumerate()
                .map(|(i, l)| {
                    let f = format!("{prefix}[{i}]");
                    let u32_of = |sub: &str, e: &str, min: i64| -> Result<u32, HarnessError> {
                        let v = scope
                            .eval_int(e)
                            .map_err(|m| xerr(&format!("{f}.{sub}"), e, m))?;
                        if v < min || v > u32::MAX as i64 {
                            return Err(xerr(
                                &format!("{f}.{sub}"),
                                e,
                                format!("{v} is out of range (>= {min})"),
                            ));
                        }
                        Ok(v as u32)
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
                        return Err(xerr(
                            &format!("{f}.block"),
                            &l.block.join(", "),
                            format!(
                                "{threads} threads per block exceeds the device's {}",
                                dev.max_threads_per_block
                            ),
                        ));
                    }
                    if grid[1] > 65535 || grid[2] > 65535 {
                        return Err(xerr(
                            &format!("{f}.grid"),
                            &l.grid.join(", "),
                            "grid y and z are limited to 65535".into(),
                        ));
                    }
                    Ok(Launch {
                        kernel: expr::interpolate(&l.kernel, &scope)
                            .map_err(|m| xerr(&format!("{f}.kernel"), &l.kernel, m))?,
                        grid,
                        block,
                        shared_mem: u32_of("shared_mem", &l.shared_mem, 0)?,
                        repeat: u32_of("repeat", &l.repeat, 1)?,
                        args: l.args.clone(),
                        offsets: l
                            .args
                            .iter()
                            .zip(&l.offsets)
                            .map(|(&ai, e)| {
                                let fo = format!("{f}.args");
                                let v = scope.eval_int(e).map_err(|m| xerr(&fo, e, m))?;
                                match buffer_lens[ai] {
                                    _ if v == 0 => Ok(0),
                                    None => {
                                        Err(xerr(&fo, e, "only a buffer can take an offset".into()))
                                    }
                                    Some(len) if v > 0 && (v as usize) < len => Ok(v as usize),
                                    Some(len) => Err(xerr(
                                        &fo,
                                        e,
                                        format!(
                                            "offset {v} is outside the buffer's {len} elements"
                                        ),
                                    )),
                                }
                            })
                            .collect::<Result<Vec<_>, _>>()?,
                    })
                })
                .collect()
        };
        let resolved = Resolved {
            origin: o.clone(),
            size_set: set.name.clone(),
            values,
            slow: launches("slow", &self.slow)?,
            fast: launches("fast", &self.fast)?,
            args,
            constants,
            textures,
            ignores,
            sparse,
        };
        gen::check_resolved(&resolved)?;
        Ok(resolved)
    }
}
