//! Expressions over sizes and device properties, evaluated with `evalexpr`.
//!
//! Integer arithmetic is exact (`/` on two integers truncates, as in C); the helpers
//! `ceil_div(a, b)`, `round_up(a, b)`, `log2(a)` (integer floor), `pow2(a)` join evalexpr's
//! built-in `min`, `max`, `floor`, `ceil`.

use crate::cuda::lex;
use evalexpr::{
    ContextWithMutableFunctions, ContextWithMutableVariables, DefaultNumericTypes, EvalexprError,
    Function, HashMapContext, Value,
};
use std::collections::BTreeMap;

/// A variable scope: names → integer or float values.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    vars: BTreeMap<String, Num>,
}

/// A number an expression produced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Num {
    Int(i64),
    Float(f64),
}

impl Num {
    pub fn as_f64(self) -> f64 {
        match self {
            Num::Int(i) => i as f64,
            Num::Float(f) => f,
        }
    }
}

impl Scope {
    pub fn set_int(&mut self, name: &str, v: i64) {
        self.vars.insert(name.to_string(), Num::Int(v));
    }
    pub fn set(&mut self, name: &str, v: Num) {
        self.vars.insert(name.to_string(), v);
    }
    pub fn get(&self, name: &str) -> Option<Num> {
        self.vars.get(name).copied()
    }
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.vars.keys().map(String::as_str)
    }

    fn context(&self) -> HashMapContext<DefaultNumericTypes> {
        let mut ctx = HashMapContext::<DefaultNumericTypes>::new();
        for (k, v) in &self.vars {
            let value = match v {
                Num::Int(i) => Value::Int(*i),
                Num::Float(f) => Value::Float(*f),
            };
            // Names are identifiers checked at parse time; setting cannot fail on a HashMapContext.
            let _ = ctx.set_value(k.clone(), value);
        }
        let _ = ctx.set_function(
            "ceil_div".into(),
            by_nonzero("ceil_div by zero", |x, y| (x + y - 1).div_euclid(y)),
        );
        let _ = ctx.set_function(
            "round_up".into(),
            by_nonzero("round_up to zero", |x, y| (x + y - 1).div_euclid(y) * y),
        );
        let _ = ctx.set_function(
            "log2".into(),
            Function::new(|a| {
                let x: i64 = a.as_int()?;
                if x <= 0 {
                    return Err(EvalexprError::CustomMessage(format!("log2({x})")));
                }
                Ok(Value::Int(63 - x.leading_zeros() as i64))
            }),
        );
        // C truth of a number (a ternary condition, `!`): nonzero is true; `!` gives 0 or 1.
        let _ = ctx.set_function(
            "truthy".into(),
            Function::new(|a| Ok(Value::Boolean(truthy(a)?))),
        );
        let _ = ctx.set_function(
            "c_not".into(),
            Function::new(|a| Ok(Value::Int(i64::from(!truthy(a)?)))),
        );
        let _ = ctx.set_function(
            "pow2".into(),
            Function::new(|a| {
                let x: i64 = a.as_int()?;
                if !(0..63).contains(&x) {
                    return Err(EvalexprError::CustomMessage(format!("pow2({x})")));
                }
                Ok(Value::Int(1i64 << x))
            }),
        );
        ctx
    }

    /// Evaluate to a number (integer or float).
    pub fn eval(&self, expr: &str) -> Result<Num, String> {
        let expr = &ternary_to_if(&c_not(&whole_group_shifts(&literal_shifts(expr))));
        let v = evalexpr::eval_with_context(expr, &self.context()).map_err(|e| e.to_string())?;
        match v {
            Value::Int(i) => Ok(Num::Int(i)),
            Value::Float(f) => Ok(Num::Float(f)),
            other => Err(format!("expected a number, got {other}")),
        }
    }

    /// Evaluate to an integer; a float result is an error (say `ceil_div` or `floor` instead).
    pub fn eval_int(&self, expr: &str) -> Result<i64, String> {
        match self.eval(expr)? {
            Num::Int(i) => Ok(i),
            Num::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Ok(f as i64),
            Num::Float(f) => Err(format!(
                "evaluates to the non-integer {f}; use integer arithmetic or ceil_div"
            )),
        }
    }

    /// Evaluate a boolean condition (for `require`).
    pub fn eval_bool(&self, expr: &str) -> Result<bool, String> {
        evalexpr::eval_boolean_with_context(expr, &self.context()).map_err(|e| e.to_string())
    }
}

/// `1 << 5` between integer literals (launch code's block sizes) folded to `32`: evalexpr
/// has no shift operator.
pub fn literal_shifts(e: &str) -> String {
    if !e.contains("<<") {
        return e.to_string();
    }
    let mut s = e.to_string();
    while let Some(p) = s.find("<<") {
        let left = s[..p].trim_end();
        let l_start = left
            .rfind(|c: char| !c.is_ascii_digit())
            .map_or(0, |i| i + 1);
        let right = &s[p + 2..];
        let skip = right.len() - right.trim_start().len();
        let r_len = right
            .trim_start()
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(right.trim_start().len());
        let (Ok(a), Ok(b)) = (
            left[l_start..].parse::<i64>(),
            right.trim_start()[..r_len].parse::<u32>(),
        ) else {
            return s;
        };
        if b > 62 {
            return s;
        }
        let end = p + 2 + skip + r_len;
        s = format!("{}{}{}", &s[..l_start], a << b, &s[end..]);
    }
    s
}

/// `(x >> 4)` and `(x << k)`, a shift that is the whole of a parenthesized group (or of the
/// expression), as `(x / pow2(4))` and `(x * pow2(k))`: evalexpr has no shift operator, and
/// with the shift alone in its group C's precedence cannot differ. Sizes are non-negative,
/// where a right shift is a floor division. Shifts mixed with other operators in one group
/// are left (and fail to evaluate, as before).
pub fn whole_group_shifts(e: &str) -> String {
    if !e.contains(">>") && !e.contains("<<") {
        return e.to_string();
    }
    let out = map_groups(e, whole_group_shifts);
    one_shift(&out).unwrap_or(out)
}

/// `e` with the inside of each outermost parenthesized group replaced by `f` of it (an
/// unclosed group runs to the end, and gains its `)`).
fn map_groups(e: &str, f: fn(&str) -> String) -> String {
    let mut out = String::new();
    let mut i = 0;
    while i < e.len() {
        if e.as_bytes()[i] == b'(' {
            let j = lex::matching(e, i, b'(', b')').unwrap_or(e.len());
            out.push('(');
            out.push_str(&f(&e[i + 1..j]));
            out.push(')');
            i = j + 1;
        } else {
            let ch = e[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// `a >> b` / `a << b` where `a` and `b` are each one atom (a name, a number, a call or a
/// parenthesized group): the pow2 form. None for anything else.
fn one_shift(e: &str) -> Option<String> {
    let t = e.trim();
    let (p, op) = [">>", "<<"]
        .iter()
        .filter_map(|op| t.find(op).map(|p| (p, *op)))
        .min_by_key(|(p, _)| *p)?;
    let (a, b) = (t[..p].trim(), t[p + 2..].trim());
    let atom = |x: &str| {
        if x.is_empty() {
            return false;
        }
        if x.ends_with(')') {
            // `(…)` or `name(…)`: the group opened by the first `(` closes at the end.
            let open = x.find('(').expect("ends with )");
            let head = &x[..open];
            return lex::matching(x, open, b'(', b')') == Some(x.len() - 1)
                && head.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        }
        x.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
    };
    if !atom(a) || !atom(b) {
        return None;
    }
    Some(match op {
        ">>" => format!("({a} / pow2({b}))"),
        _ => format!("({a} * pow2({b}))"),
    })
}

/// C's `c ? a : b` (launch code writes `n < 256 ? n : 256`) as evalexpr's `if(c, a, b)`.
pub fn ternary_to_if(e: &str) -> String {
    if !e.contains('?') {
        return e.to_string();
    }
    // Parenthesized groups first.
    let s = map_groups(e, ternary_to_if);
    let top = |s: &str, want: u8| -> Option<usize> {
        let mut nested = 0;
        for (i, c) in lex::top_level(s, b"(", b")") {
            if c == b'?' && want == b':' {
                nested += 1;
            } else if c == want {
                if nested == 0 {
                    return Some(i);
                }
                nested -= 1;
            }
        }
        None
    };
    let Some(q) = top(&s, b'?') else { return s };
    let rest = &s[q + 1..];
    let Some(c) = top(rest, b':') else { return s };
    format!(
        "if(truthy({}), {}, {})",
        s[..q].trim(),
        ternary_to_if(rest[..c].trim()),
        ternary_to_if(rest[c + 1..].trim())
    )
}

fn truthy(a: &Value) -> Result<bool, EvalexprError> {
    match a {
        Value::Boolean(b) => Ok(*b),
        Value::Int(i) => Ok(*i != 0),
        Value::Float(f) => Ok(*f != 0.0),
        other => Err(EvalexprError::CustomMessage(format!(
            "{other} is not a condition"
        ))),
    }
}

/// C's logical not on numbers (`!(n % 16) ? 0 : 1` in launch code) as `c_not(…)`: evalexpr's
/// `!` takes only booleans. The operand is a parenthesized group or a name or number.
pub fn c_not(e: &str) -> String {
    if !e.contains('!') {
        return e.to_string();
    }
    let b = e.as_bytes();
    let mut out = String::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'!' || b.get(i + 1) == Some(&b'=') {
            let ch = e[i..].chars().next().expect("in bounds");
            out.push(ch);
            i += ch.len_utf8();
            continue;
        }
        let mut j = i + 1;
        while let Some(ch) = e[j..].chars().next().filter(|c| c.is_whitespace()) {
            j += ch.len_utf8();
        }
        let start = j;
        if b.get(j) == Some(&b'(') {
            j = lex::matching(e, j, b'(', b')').map_or(b.len(), |k| k + 1);
        } else {
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_' || b[j] == b'.') {
                j += 1;
            }
        }
        if j == start {
            out.push('!');
            i += 1;
            continue;
        }
        out.push_str(&format!("c_not({})", c_not(&e[start..j])));
        i = j;
    }
    out
}

/// A function of two integers whose second must not be zero (`error` when it is).
fn by_nonzero(error: &'static str, f: fn(i64, i64) -> i64) -> Function<DefaultNumericTypes> {
    Function::new(move |a| {
        let (x, y) = two_ints(a)?;
        if y == 0 {
            return Err(EvalexprError::CustomMessage(error.into()));
        }
        Ok(Value::Int(f(x, y)))
    })
}

fn two_ints(a: &Value) -> Result<(i64, i64), EvalexprError> {
    let t = a.as_fixed_len_tuple(2)?;
    Ok((t[0].as_int()?, t[1].as_int()?))
}

/// Replace every `{expr}` in a kernel name expression (`reduce<{block}>`) by its integer value.
pub fn interpolate(text: &str, scope: &Scope) -> Result<String, String> {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed '{{' in {text:?}"))?;
        let v = scope.eval_int(&after[..end])?;
        out.push_str(&v.to_string());
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn c_truth_of_numbers_in_not_and_ternaries() {
        let mut s = Scope::default();
        s.set_int("n", 1000);
        // Rodinia gaussian's round-up idioms, both bracketings.
        assert_eq!(s.eval_int("(n / 512) + (!(n % 512) ? 0 : 1)"), Ok(2));
        assert_eq!(s.eval_int("(n / 4) + (!(n % 4 ? 0 : 1))"), Ok(250));
        s.set_int("n", 1001);
        assert_eq!(s.eval_int("(n / 4) + (!(n % 4 ? 0 : 1))"), Ok(251));
        assert_eq!(s.eval_int("n % 2 ? 7 : 9"), Ok(7));
        assert_eq!(s.eval_int("n < 256 ? n : 256"), Ok(256));
        assert_eq!(s.eval_int("n != 3 ? 1 : 0"), Ok(1));
        assert_eq!(
            c_not("!x + !(a - b) != c"),
            "c_not(x) + c_not((a - b)) != c"
        );
    }

    #[test]
    fn integer_arithmetic_and_helpers() {
        let mut s = Scope::default();
        s.set_int("n", 1000);
        s.set_int("sm_count", 132);
        assert_eq!(s.eval_int("ceil_div(n, 256)"), Ok(4));
        assert_eq!(s.eval_int("n / 256"), Ok(3));
        assert_eq!(s.eval_int("round_up(n, 64)"), Ok(1024));
        assert_eq!(s.eval_int("min(n, sm_count * 4)"), Ok(528));
        assert_eq!(s.eval_int("max(1, n - 2000)"), Ok(1));
        assert_eq!(s.eval_int("log2(1024)"), Ok(10));
        assert_eq!(s.eval_int("pow2(5)"), Ok(32));
        assert_eq!(s.eval_int("n % 7"), Ok(6));
        assert!(s.eval_int("n / 3.0").unwrap_err().contains("non-integer"));
        assert!(s.eval_int("m + 1").is_err());
        assert!(s.eval_int("ceil_div(n, 0)").is_err());
        assert_eq!(s.eval_bool("n % 8 == 0"), Ok(true));
        assert_eq!(s.eval("0.5 * 2.0"), Ok(Num::Float(1.0)));
    }

    #[test]
    fn name_interpolation() {
        let mut s = Scope::default();
        s.set_int("b", 128);
        assert_eq!(interpolate("reduce<{b * 2}>", &s).unwrap(), "reduce<256>");
        assert_eq!(interpolate("plain", &s).unwrap(), "plain");
        assert!(interpolate("k<{b>", &s).is_err());
    }

    #[test]
    fn literal_shifts_fold() {
        let sc = Scope::default();
        assert_eq!(sc.eval_int("((1 << 5)) * 128"), Ok(4096));
        assert_eq!(literal_shifts("n << 2"), "n << 2");
    }

    #[test]
    fn shifts_alone_in_their_group_evaluate() {
        let mut sc = Scope::default();
        sc.set_int("d", 1024);
        // mri-gridding's EXPANDED_SIZE(d) * 4 and sad's `width >> 4`.
        assert_eq!(
            sc.eval_int("(((d) + ((d) >> 4) + ((d) >> (2 * 4)))) * 4"),
            Ok((1024 + 64 + 4) * 4)
        );
        assert_eq!(sc.eval_int("4096 >> 4"), Ok(256));
        assert_eq!(sc.eval_int("(d << 2) + 1"), Ok(4097));
        // A shift mixed with other operators in one group is not rewritten.
        assert_eq!(whole_group_shifts("d + d >> 2"), "d + d >> 2");
        assert!(sc.eval_int("d + d >> 2").is_err());
    }

    #[test]
    fn ternaries_evaluate_as_if() {
        let mut sc = Scope::default();
        sc.set_int("n", 100);
        assert_eq!(sc.eval_int("n < 256 ? n : 256"), Ok(100));
        assert_eq!(
            sc.eval_int("(n > 50 ? 2 : 3) * (n % 3 == 0 ? 1 : n > 99 ? 7 : 9)"),
            Ok(14)
        );
    }
}
