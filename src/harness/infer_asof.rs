//! The value of a host variable as of a line: the writes to it before that line in the
//! function, folded in order, each write's right-hand side read as of its own line. A name
//! assigned once for a first launch and again later (Rodinia srad's `blocks_x`, reused for a
//! reduction grid after `blocks.x = blocks_x`) then means what it meant where it was used,
//! and a definition that only looked circular is not. A write inside a loop that ends before
//! the use, or through a pointer (`&n` passed to a call), leaves the value unknown, with the
//! reason: the number of iterations or the call decides it.

use crate::cuda::cexpr::{self, Kind};
// Re-exported: inference resolves host text through `infer_asof`.
use crate::cuda::host::HostFn;
use crate::cuda::host_flow::{Flow, HostWrite, WriteAt};
pub use crate::cuda::ppcond::active_text;
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// Byte offset of the start of 1-based `line` (the text's end past the last line).
pub fn line_offset(text: &str, line: u32) -> usize {
    if line <= 1 {
        return 0;
    }
    text.match_indices('\n')
        .nth(line as usize - 2)
        .map(|(i, _)| i + 1)
        .unwrap_or(text.len())
}

/// Where a value is wanted: before `pos`, within the function starting at `fn_start`, for a
/// use at `use_pos` (the launch).
#[derive(Debug, Clone, Copy)]
pub struct At<'c> {
    pub pos: usize,
    pub use_pos: usize,
    pub fn_start: usize,
    pub cx: &'c Memo,
}

/// What one evaluation shares: whether the value differs from folding every write in
/// order (a name replaced by an earlier value, a step or a loop's next pass left out), and
/// the writes and values found so far (a name's value is asked for many times).
#[derive(Debug)]
pub struct Memo {
    pub changed: Cell<bool>,
    /// Set when an evaluation hit the depth limit: its result depends on the depth it
    /// started at, so it is not remembered.
    too_deep: Cell<bool>,
    /// Values being worked out: asking for one again is a cycle.
    busy: RefCell<std::collections::HashSet<(String, Option<char>, usize)>>,
    #[allow(clippy::type_complexity)] // (name, member, position) → (value, changed)
    values: RefCell<HashMap<(String, Option<char>, usize), (Result<Option<String>, String>, bool)>>,
    writes: RefCell<HashMap<String, Rc<Vec<HostWrite>>>>,
    /// The statements of the launch's function.
    flow: Arc<Flow>,
    /// The function's parameters: each comes in with a value, which a write that reads it
    /// (`if (bs == 1024) bs = 512;`) starts from.
    params: Vec<String>,
}

impl Memo {
    /// For values in the function around `launch_line` (`fns` are the text's functions).
    fn new(text: &str, fns: &[HostFn], launch_line: u32) -> Memo {
        Memo {
            changed: Cell::default(),
            too_deep: Cell::default(),
            busy: RefCell::default(),
            values: RefCell::default(),
            writes: RefCell::default(),
            flow: Flow::of_function(text, fns, launch_line),
            params: crate::cuda::host::function_at(fns, launch_line)
                .map_or_else(Vec::new, |f| f.params.clone()),
        }
    }

    /// Where a value at the launch on `launch_line` is wanted.
    fn at_launch(&self, text: &str, launch_line: u32) -> At<'_> {
        let use_pos = line_offset(text, launch_line);
        At {
            pos: use_pos,
            use_pos,
            fn_start: self.flow.function_start(use_pos),
            cx: self,
        }
    }

    fn writes_of(&self, name: &str) -> Rc<Vec<HostWrite>> {
        self.writes
            .borrow_mut()
            .entry(name.to_string())
            .or_insert_with(|| Rc::new(self.flow.writes(name)))
            .clone()
    }
}

/// [`value_as_of_uncached`], remembered per (name, member, position).
pub fn value_as_of(
    text: &str,
    name: &str,
    member: Option<char>,
    at: At,
    depth: usize,
) -> Result<Option<String>, String> {
    let key = (name.to_string(), member, at.pos);
    if let Some((v, changed)) = at.cx.values.borrow().get(&key).cloned() {
        if changed {
            at.cx.changed.set(true);
        }
        return v;
    }
    if !at.cx.busy.borrow_mut().insert(key.clone()) {
        // A cycle (`g.x = b + 1` where `b = g.x / t`): not a value, and not remembered.
        at.cx.too_deep.set(true);
        return Err(format!("the writes to `{name}` refer to each other"));
    }
    let before = at.cx.changed.replace(false);
    let deep_before = at.cx.too_deep.replace(false);
    let v = value_as_of_uncached(text, name, member, at, depth);
    at.cx.busy.borrow_mut().remove(&key);
    let changed = at.cx.changed.get();
    at.cx.changed.set(before || changed);
    if !at.cx.too_deep.get() {
        at.cx.values.borrow_mut().insert(key, (v.clone(), changed));
    }
    at.cx.too_deep.set(deep_before || at.cx.too_deep.get());
    v
}

/// The value of `name` (or of its member) as of `at.pos`: its writes folded in order, each
/// right-hand side with the names written again before the use replaced by their values as
/// of that write. Ok(None): no write in the function (a macro, a global, a parameter).
fn value_as_of_uncached(
    text: &str,
    name: &str,
    member: Option<char>,
    at: At,
    depth: usize,
) -> Result<Option<String>, String> {
    if depth > 8 {
        at.cx.too_deep.set(true);
        return Err(format!("the writes to `{name}` nest too deeply"));
    }
    let shown = match member {
        Some(m) => format!("{name}.{m}"),
        None => name.to_string(),
    };
    // A parameter starts from the value it comes in with, which is its own name.
    let incoming =
        (member.is_none() && at.cx.params.iter().any(|p| p == name)).then(|| shown.clone());
    let mut folded: Result<Option<String>, String> = Ok(incoming.clone());
    // An `if` branch's value with nothing before it, waiting for its `else`: (the raw
    // condition, the condition read here, the value).
    let mut pending: Option<(String, String, String)> = None;
    for w in at.cx.writes_of(name).iter() {
        if w.pos < at.fn_start || w.pos >= at.pos || w.member != member {
            continue;
        }
        let Some(v) = &w.value else {
            folded = Err(format!(
                "`{shown}` is set through a pointer at line {}: the call decides its value",
                w.line
            ));
            continue;
        };
        let self_ref = mentions(v, &shown);
        match at.cx.flow.write_at(w.pos, at.pos, at.fn_start) {
            WriteAt::NextIteration => {
                at.cx.changed.set(true);
                continue;
            }
            WriteAt::FinishedLoop => {
                // A later write may settle it again; then the recorded definition (which
                // may be this loop's write) is not the value at the launch.
                at.cx.changed.set(true);
                folded = Err(format!(
                    "`{shown}` is changed in a loop (line {}) before it is used: its value depends on the iterations",
                    w.line
                ));
                continue;
            }
            // A write under plain `if`s: `cond ? new : previous` (`if (n % b) blocks++`
            // rounds up exactly); under an `else` or a `switch` it stays unknown.
            WriteAt::Conditional(cond) => {
                let here = At { pos: w.pos, ..at };
                at.cx.changed.set(true);
                let other = pending.take();
                folded = match (cond, folded, other) {
                    (_, Err(e), _) => Err(e),
                    // `if (c) n = a; else n = b;` → `c ? a : b`.
                    (Some(c), Ok(None), Some((raw, pc, pv))) if c == format!("(!({raw}))") => {
                        resolve_rhs(text, v, &shown, None, here, depth)
                            .map(|v| Some(format!("({pc}) ? ({pv}) : ({v})")))
                    }
                    (Some(c), Ok(None), None) if !self_ref && !c.contains(" && ") => {
                        let raw = c[1..c.len() - 1].to_string();
                        let pc = resolve_rhs(text, &c, &shown, None, here, depth)?;
                        let pv = resolve_rhs(text, v, &shown, None, here, depth)?;
                        pending = Some((raw, pc, pv));
                        Ok(None)
                    }
                    (Some(c), Ok(Some(prev)), None) => {
                        guarded(text, &c, v, &shown, &prev, here, depth)
                    }
                    _ => Err(format!(
                        "`{shown}` is set under a condition (line {}) before it is used: the value depends on it",
                        w.line
                    )),
                };
                continue;
            }
            WriteAt::Straight => {
                pending = None;
            }
        }
        if w.compound {
            at.cx.changed.set(true);
        }
        let here = At { pos: w.pos, ..at };
        folded = match (self_ref, folded) {
            (true, Err(e)) => Err(e),
            (true, Ok(prev)) => {
                resolve_rhs(text, v, &shown, prev.as_deref(), here, depth).map(Some)
            }
            (false, _) => resolve_rhs(text, v, &shown, None, here, depth).map(Some),
        };
    }
    if let Some((_, _, _)) = pending {
        return Err(format!(
            "`{shown}` is set only under a condition before it is used: the value depends on it"
        ));
    }
    // A parameter no write changes has no value here beyond its name.
    match folded {
        Ok(v) if v.is_some() && v == incoming => Ok(None),
        other => other,
    }
}

/// `(cond) ? (new) : (prev)`, both read as of the write.
fn guarded(
    text: &str,
    cond: &str,
    rhs: &str,
    shown: &str,
    prev: &str,
    at: At,
    depth: usize,
) -> Result<Option<String>, String> {
    let c = resolve_rhs(text, cond, shown, Some(prev), at, depth)?;
    let v = resolve_rhs(text, rhs, shown, Some(prev), at, depth)?;
    Ok(Some(format!("({c}) ? ({v}) : ({prev})")))
}

/// Whether `rhs` names `shown` (`n`, or `g.x` for a member).
pub fn mentions(rhs: &str, shown: &str) -> bool {
    let Ok(toks) = cexpr::tokens(rhs) else {
        return true;
    };
    let words: Vec<&str> = toks.iter().map(|t| t.text).collect();
    let parts: Vec<&str> = shown.split('.').collect();
    words
        .windows(parts.len() * 2 - 1)
        .enumerate()
        .any(|(i, w)| {
            let before_ok = i == 0 || !matches!(words[i - 1], "." | "->");
            before_ok && w[0] == parts[0] && (parts.len() == 1 || (w[1] == "." && w[2] == parts[1]))
        })
}

/// A write's right-hand side with its own name replaced by the previous value and every
/// name written again between this write and the use replaced by its value here.
fn resolve_rhs(
    text: &str,
    rhs: &str,
    shown: &str,
    prev: Option<&str>,
    at: At,
    depth: usize,
) -> Result<String, String> {
    let Ok(toks) = cexpr::tokens(rhs) else {
        return Ok(rhs.to_string());
    };
    let op = |i: usize, ops: &[&str]| {
        toks.get(i)
            .is_some_and(|t| t.kind == Kind::Op && ops.contains(&t.text))
    };
    let mut out: Vec<String> = Vec::new();
    // Untouched text stays as written.
    let mut changed = false;
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        let member_access = i > 0 && op(i - 1, &[".", "->"]);
        let call = op(i + 1, &["("]);
        if t.kind != Kind::Ident || member_access || call {
            out.push(t.text.to_string());
            i += 1;
            continue;
        }
        let word = t.text;
        let member = match toks.get(i + 2) {
            Some(c) if op(i + 1, &["."]) && matches!(c.text, "x" | "y" | "z") => {
                c.text.chars().next()
            }
            _ => None,
        };
        let next = if member.is_some() { i + 3 } else { i + 1 };
        let this = match member {
            Some(m) => format!("{word}.{m}"),
            None => word.to_string(),
        };
        if this == shown {
            changed = true;
            match prev {
                Some(p) => out.push(format!("({p})")),
                None => return Err(format!("`{shown}` is updated before it is given a value")),
            }
        } else if at.pos < at.use_pos && unsettled_at_use_only(text, word, member, at, depth) {
            // Unknown at the launch (set under a condition there) but known where this
            // write reads it (under the same condition).
            let v = value_as_of(text, word, member, at, depth + 1)?.unwrap_or_default();
            changed = true;
            at.cx.changed.set(true);
            out.push(format!("({v})"));
        } else if written_between(word, member, at) {
            let later = At { pos: at.pos, ..at };
            match value_as_of(text, word, member, later, depth + 1)? {
                Some(v) => {
                    changed = true;
                    at.cx.changed.set(true);
                    out.push(format!("({v})"))
                }
                None => out.push(this),
            }
        } else {
            out.push(this);
        }
        i = next;
    }
    Ok(if changed {
        out.join(" ")
    } else {
        rhs.to_string()
    })
}

/// Whether a name's value is unknown at the use but known at `at.pos`.
fn unsettled_at_use_only(
    text: &str,
    name: &str,
    member: Option<char>,
    at: At,
    depth: usize,
) -> bool {
    let at_use = At {
        pos: at.use_pos,
        ..at
    };
    // A probe: what it finds does not count as a change.
    let before = at.cx.changed.get();
    let yes = value_as_of(text, name, member, at_use, depth + 1).is_err()
        && matches!(value_as_of(text, name, member, at, depth + 1), Ok(Some(_)));
    at.cx.changed.set(before);
    yes
}

/// Whether `name` (or its member) is written between `at.pos` and the use.
fn written_between(name: &str, member: Option<char>, at: At) -> bool {
    at.cx
        .writes_of(name)
        .iter()
        .any(|w| w.member == member && w.pos >= at.pos && w.pos < at.use_pos)
}

/// A launch definition of `name` as of the launch line, in the form the launch translation
/// reads: `name = v`, or `dim3 name; name.x = v; …` for member writes. Ok(None): the writes
/// say nothing new (none in the function, or a `dim3 name(…)` constructor).
pub fn definition_at_launch(
    text: &str,
    name: &str,
    launch_line: u32,
) -> Result<Option<String>, String> {
    let fns = crate::cuda::host::functions_cached(text);
    definitions_at_launch(text, &fns, &[name.to_string()], launch_line, &|_| false)
        .pop()
        .expect("one name")
}

/// [`definition_at_launch`] for several names of one launch, sharing what is found; `fns`
/// are the functions of `text` (or of a text with the same lines). For the
/// names `always` picks (a recorded definition that is several statements, some of them
/// other scopes' declarations) the definition is given even when it says nothing new.
pub fn definitions_at_launch(
    text: &str,
    fns: &[HostFn],
    names: &[String],
    launch_line: u32,
    always: &dyn Fn(&str) -> bool,
) -> Vec<Result<Option<String>, String>> {
    let memo = Memo::new(text, fns, launch_line);
    names
        .iter()
        .map(|name| {
            memo.changed.set(false);
            let def = one_definition(text, name, memo.at_launch(text, launch_line))?;
            // The same value as every write folded in order: the recorded definition says it.
            Ok(def.filter(|_| memo.changed.get() || always(name)))
        })
        .collect()
}

/// The value of plain variable `name` as of `launch_line`, from the writes before it in the
/// function around that line (see [`value_as_of`]). Ok(None): that function does not write it.
pub fn value_at_launch(text: &str, name: &str, launch_line: u32) -> Result<Option<String>, String> {
    let memo = Memo::new(
        text,
        &crate::cuda::host::functions_cached(text),
        launch_line,
    );
    value_as_of(text, name, None, memo.at_launch(text, launch_line), 0)
}

fn one_definition(text: &str, name: &str, at: At) -> Result<Option<String>, String> {
    let writes = at.cx.writes_of(name);
    let mut writes = writes
        .iter()
        .filter(|w| w.pos >= at.fn_start && w.pos < at.use_pos)
        .peekable();
    if writes.peek().is_none() {
        return Ok(None);
    }
    if writes.any(|w| w.member.is_some()) {
        let mut comps = Vec::new();
        for m in ['x', 'y', 'z'] {
            comps.push((m, value_as_of(text, name, Some(m), at, 0)?));
        }
        while comps.len() > 1
            && comps
                .last()
                .is_some_and(|(_, v)| v.as_deref().is_none_or(|v| v.trim() == "1"))
        {
            comps.pop();
        }
        let mut parts = vec![format!("dim3 {name}")];
        for (m, v) in comps {
            parts.push(format!("{name}.{m} = {}", v.as_deref().unwrap_or("1")));
        }
        return Ok(Some(parts.join("; ")));
    }
    match value_as_of(text, name, None, at, 0)? {
        // A parameter changed from the value it comes in with: the launch's translation
        // has no value for that one.
        Some(v) if at.cx.params.iter().any(|p| p == name) && mentions(&v, name) => Err(format!(
            "`{name}` is a parameter changed before the launch (to `{v}`), from the value it comes in with"
        )),
        v => Ok(v.map(|v| format!("{name} = {v}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cuda::host::functions;

    // A host function written for these tests: a grid computed once for a first launch,
    // then the same counter reused for a shrinking second grid in a loop.
    const TWO_GRIDS: &str = "void run(int n) {\n\
        dim3 threads;\n\
        int bx;\n\
        dim3 grid;\n\
        threads.x = 128;\n\
        bx = n / threads.x;\n\
        if (n % threads.x != 0)\n\
            bx = bx + 1;\n\
        grid.x = bx;\n\
        grid.y = 1;\n\
        first<<<grid, threads>>>(n);\n\
        dim3 g2;\n\
        g2.x = grid.x;\n\
        while (g2.x > 1) {\n\
            bx = g2.x / threads.x;\n\
            g2.x = bx + 1;\n\
            step<<<g2, threads>>>(n);\n\
        }\n\
        last<<<grid, threads>>>(n);\n\
    }\n";

    #[test]
    fn a_name_reused_after_its_use_keeps_the_value_it_had_there() {
        let d = definition_at_launch(TWO_GRIDS, "grid", 19)
            .unwrap()
            .unwrap();
        // bx as of `grid.x = bx` (line 9), not the loop's later value.
        assert_eq!(
            d,
            "dim3 grid; grid.x = (((n % threads.x != 0)) ? ((n / threads.x) + 1) : (n / threads.x))"
        );
        assert!(!d.contains("g2"));
    }

    #[test]
    fn a_value_changed_in_a_finished_loop_is_unknown() {
        // At the last launch, bx was last set inside the while loop.
        let e = definition_at_launch(TWO_GRIDS, "bx", 19).unwrap_err();
        assert!(e.contains("changed in a loop (line 15)"), "{e}");
        // Inside the loop, at the launch it encloses, the loop's own writes count.
        let d = definition_at_launch(TWO_GRIDS, "bx", 17).unwrap().unwrap();
        // (g2.x as of line 15 is still grid.x: it changes on line 16.)
        assert_eq!(d, "bx = (grid.x) / threads.x");
        let t = "void f(int n) {\n int b = n / 8;\n int s = 1;\n while (s * s < b) s++;\n k<<<s * s, 8>>>(n);\n}\n";
        let e = definition_at_launch(t, "s", 5).unwrap_err();
        assert!(e.contains("`s` is changed in a loop (line 4)"), "{e}");
        // A for loop's counter.
        let t = "void f(int n) {\n int i = 0;\n for (i = 0; i < n; i++) { }\n k<<<i, 8>>>(n);\n}\n";
        assert!(definition_at_launch(t, "i", 4).is_err());
    }

    #[test]
    fn a_conditional_round_up_folds_and_pointers_are_unknown() {
        let t = "void f(int n) {\n int b = n / 8;\n if (n % 8) b++;\n int m = 0;\n read(&m);\n k<<<b, m>>>(n);\n}\n";
        let b = definition_at_launch(t, "b", 6).unwrap().unwrap();
        assert_eq!(b, "b = ((n % 8)) ? ((n / 8) + 1) : (n / 8)");
        // It rounds up exactly: 16 → 2 blocks, 17 → 3.
        for (n, want) in [(16, 2), (17, 3)] {
            let mut sc = crate::harness::expr::Scope::default();
            sc.set_int("n", n);
            let v = sc.eval(b.trim_start_matches("b = ")).unwrap();
            assert_eq!(v, crate::harness::expr::Num::Int(want), "n = {n}");
        }
        let e = definition_at_launch(t, "m", 6).unwrap_err();
        assert!(e.contains("set through a pointer at line 5"), "{e}");
        // Writes in another function do not count (g's step would have no value to
        // start from); a definition the plain fold gives already is left as recorded.
        let t = "void g() { b++; }\nvoid f(int n) {\n int b = n;\n k<<<b, B>>>(n);\n}\n";
        assert_eq!(definition_at_launch(t, "b", 4), Ok(None));
        assert_eq!(definition_at_launch(t, "B", 4).unwrap(), None);
    }

    #[test]
    fn a_guarded_assignment_is_a_ternary_an_else_branch_unknown() {
        let t = "void f(int n) {\n dim3 g(n / 64, 2);\n if (g.x < 8) {\n  g.x = 8;\n }\n k<<<g, 64>>>(n);\n}\n";
        assert_eq!(
            definition_at_launch(t, "g", 6).unwrap().as_deref(),
            Some("dim3 g; g.x = (( (n / 64) < 8 )) ? (8) : (n / 64); g.y = 2")
        );
        // A one-statement `if` and its `else` make one ternary over the earlier value.
        let t = "void f(int n) {\n int b = 4;\n if (n > 512) b = 2;\n else b = n;\n k<<<b, 64>>>(n);\n}\n";
        assert_eq!(
            definition_at_launch(t, "b", 5).unwrap().as_deref(),
            Some("b = ((!(n > 512))) ? (n) : (((n > 512)) ? (2) : (4))")
        );
        // An `else if` branch: which branch ran is not one condition.
        let t = "void f(int n) {\n int b = 4;\n if (n > 512) b = 2;\n else if (n > 64) b = n;\n k<<<b, 64>>>(n);\n}\n";
        let e = definition_at_launch(t, "b", 5).unwrap_err();
        assert!(e.contains("`b` is set under a condition (line 4)"), "{e}");
        // A condition that holds the launch too is no condition for it.
        let t =
            "void f(int n) {\n int b = 4;\n if (n > 0) {\n  b = n;\n  k<<<b, 64>>>(n);\n }\n}\n";
        assert_eq!(definition_at_launch(t, "b", 5).unwrap(), None);
        // No value before the guarded one: unknown.
        let t = "void f(int n) {\n int b;\n if (n > 0) b = n;\n k<<<b, 64>>>(n);\n}\n";
        assert!(definition_at_launch(t, "b", 4).is_err());
    }

    #[test]
    fn a_for_loops_first_pass_sees_its_init_not_its_step() {
        let t =
            "void f(int n) {\n for (int i = 2; i < n; i *= 2) {\n  k<<<n / i, 64>>>(n);\n }\n}\n";
        assert_eq!(
            definition_at_launch(t, "i", 3).unwrap().as_deref(),
            Some("i = 2")
        );
    }

    #[test]
    fn a_write_after_a_finished_loop_settles_the_value() {
        // The loop's writes are over by the launch; the write after the loop is the value,
        // not the recorded definition (which may be a write inside the loop).
        let t = "void f(int n) {\n dim3 b(64);\n while (n > 1) {\n  b.x = n / 2;\n  n = n / 2;\n }\n b.x = 256;\n k<<<n, b>>>(n);\n}\n";
        let d = definitions_at_launch(t, &functions(t), &["b".to_string()], 8, &|_| false);
        assert_eq!(d[0].as_ref().unwrap().as_deref(), Some("dim3 b; b.x = 256"));
    }

    #[test]
    fn a_declaration_in_each_loop_is_its_own_variable() {
        // Two loops declare their own `g`; the launch in the second sees only its own.
        let t = "void f(int n, int m) {\n for (int i = 0; i < 4; i++) {\n  dim3 g(m / 2);\n  a<<<g, 32>>>(m);\n }\n for (int j = 0; j < 4; j++) {\n  dim3 g(n / 8);\n  b<<<g, 32>>>(n);\n }\n}\n";
        let d = definitions_at_launch(t, &functions(t), &["g".to_string()], 8, &|_| true);
        assert_eq!(
            d[0].as_ref().unwrap().as_deref(),
            Some("dim3 g; g.x = n / 8")
        );
    }

    #[test]
    fn a_constructor_gives_every_member() {
        // `dim3 g;` is 1 × 1 × 1 until a branch sets it.
        let t = "void f(int n) {\n dim3 g;\n if (n > 1024) {\n  g.x = n / 512;\n }\n k<<<g, 512>>>(n);\n}\n";
        assert_eq!(
            definition_at_launch(t, "g", 6).unwrap().as_deref(),
            Some("dim3 g; g.x = ((n > 1024)) ? (n / 512) : (1)")
        );
        let t = "void f(int n) {\n dim3 g(n / 16, n / 8);\n int m = n;\n g.y = m;\n m = 0;\n k<<<g, 64>>>(n);\n}\n";
        // g.y = m as of line 4 (m is zeroed after it).
        assert_eq!(
            definition_at_launch(t, "g", 6).unwrap().as_deref(),
            Some("dim3 g; g.x = n / 16; g.y = (n)")
        );
    }

    #[test]
    fn if_and_else_branches_make_one_ternary() {
        // Written for this test: a launch shaped by a branch on the workload.
        let t = "void f(int w) {\n dim3 th, bl;\n int bx;\n if (w == 1) {\n  th.x = 32;\n  bl.x = 4;\n }\n else {\n  th.x = 128;\n  bx = w / th.x;\n  if (w % th.x != 0) {\n   bx = bx + 1;\n  }\n  bl.x = bx;\n }\n k<<<bl, th>>>(w);\n}\n";
        let th = definition_at_launch(t, "th", 16).unwrap().unwrap();
        assert_eq!(
            th,
            "dim3 th; th.x = ((!(w == 1))) ? (128) : (((w == 1)) ? (32) : (1))"
        );
        let bl = definition_at_launch(t, "bl", 16).unwrap().unwrap();
        let x = bl
            .strip_prefix("dim3 bl; bl.x = ")
            .unwrap()
            .replace("th.x", "128");
        for (w, want) in [(1, 4), (256, 2), (257, 3)] {
            let mut sc = crate::harness::expr::Scope::default();
            sc.set_int("w", w);
            assert_eq!(
                sc.eval(&x).unwrap(),
                crate::harness::expr::Num::Int(want),
                "w = {w}: {x}"
            );
        }
        // bx alone is unknown at the launch: nothing sets it when w == 1.
        assert!(definition_at_launch(t, "bx", 16).is_err());
    }
}
