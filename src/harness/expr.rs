//! Expressions over sizes and device properties: C expressions, evaluated by the crate's
//! one C evaluator ([`crate::cuda::ceval`]).
//!
//! Integer arithmetic is exact (`/` on two integers truncates, as in C; overflow is an
//! error); a float operand makes a float. Besides C's operators (`?:`, shifts, `!`), the
//! helpers `ceil_div(a, b)`, `round_up(a, b)`, `log2(a)` (integer floor), `pow2(a)`,
//! `min(…)`, `max(…)`, `floor(x)` and `ceil(x)`.

pub use crate::cuda::ceval::Num;
use crate::cuda::ceval::{Env, Expr};
use std::collections::BTreeMap;

/// A variable scope: names → integer or float values.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    vars: BTreeMap<String, Num>,
}

impl Env for Scope {
    fn name(&self, name: &str) -> Result<Num, String> {
        self.get(name)
            .ok_or_else(|| format!("`{name}` is not a size, a derived value or a device property"))
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

    /// Evaluate to a number (integer or float).
    pub fn eval(&self, expr: &str) -> Result<Num, String> {
        Expr::parse(expr)?.eval(self)
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

    /// Evaluate a condition (for `require`): C's truth, nonzero.
    pub fn eval_bool(&self, expr: &str) -> Result<bool, String> {
        self.eval(expr).map(Num::truthy)
    }
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
        assert_eq!(s.eval_int("!n + !(n - n) != 2"), Ok(1));
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
        let mut sc = Scope::default();
        sc.set_int("n", 3);
        assert_eq!(sc.eval_int("n << 2"), Ok(12));
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
        // A shift mixed with other operators: C's precedence (it binds looser than `+`).
        assert_eq!(sc.eval_int("d + d >> 2"), Ok(512));
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
