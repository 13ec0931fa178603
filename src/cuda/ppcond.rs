//! The value of a preprocessor condition (`#if R2`, `#elif defined(X) && N > 2`) where the
//! macros it names have integer values the code states, so that of several `#define`s of one
//! name under `#if` branches (Parboil fft's `#if R2 … #define R 2 … #endif #if R16 … #define
//! R 16 … #endif`, with `#define R2 1` and `#define R16 0`) the one the compiler sees is taken.
//!
//! Unknown is an answer: a name with no stated integer value (a `-D` flag, a macro of another
//! file) or syntax outside the small grammar below makes the whole condition unknown, and
//! callers then keep what they did before.

/// What a name in a condition is: `defined` says whether it is a macro at all, `value` its
/// integer value where the code states one.
pub struct Macros<'a> {
    pub defined: &'a dyn Fn(&str) -> bool,
    pub value: &'a dyn Fn(&str) -> Option<i64>,
}

/// The condition's truth, or None when it depends on something the code does not state.
/// Grammar: integer literals (with `u`/`l` suffixes), names, `defined(X)` / `defined X`,
/// `( )`, unary `! - +`, `* / %`, `+ -`, `< <= > >=`, `== !=`, `&&`, `||`.
pub fn eval(expr: &str, m: &Macros) -> Option<bool> {
    let toks = tokens(expr)?;
    let mut p = P { t: &toks, i: 0, m };
    let v = p.or()?;
    (p.i == toks.len()).then_some(v != 0)
}

/// The integer a `#define NAME <body>` body stands for, when it is a plain integer literal
/// (`1`, `(0)`, `256u`).
pub fn int_literal(body: &str) -> Option<i64> {
    let b = body
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    let digits = b.trim_end_matches(['u', 'U', 'l', 'L']);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(i64),
    Name(String),
    Op(&'static str),
}

fn tokens(s: &str) -> Option<Vec<Tok>> {
    const OPS: [&str; 17] = [
        "&&", "||", "==", "!=", "<=", ">=", "<", ">", "!", "(", ")", "+", "-", "*", "/", "%", ",",
    ];
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i] as char;
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() {
            let st = i;
            while i < b.len() && (b[i] as char).is_ascii_alphanumeric() {
                i += 1;
            }
            out.push(Tok::Num(int_literal(&s[st..i])?));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let st = i;
            while i < b.len() && ((b[i] as char).is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Name(s[st..i].to_string()));
        } else {
            let op = OPS.iter().find(|o| s[i..].starts_with(**o))?;
            if *op == "," {
                return None;
            }
            out.push(Tok::Op(op));
            i += op.len();
        }
    }
    Some(out)
}

struct P<'a> {
    t: &'a [Tok],
    i: usize,
    m: &'a Macros<'a>,
}

impl P<'_> {
    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.t.get(self.i), Some(Tok::Op(o)) if *o == op) {
            self.i += 1;
            return true;
        }
        false
    }

    /// One level of left-associative binary operators over `next`.
    fn binary(
        &mut self,
        ops: &[&str],
        next: fn(&mut Self) -> Option<i64>,
        apply: fn(&str, i64, i64) -> Option<i64>,
    ) -> Option<i64> {
        let mut v = next(self)?;
        'outer: loop {
            for op in ops {
                if self.eat(op) {
                    let r = next(self)?;
                    v = apply(op, v, r)?;
                    continue 'outer;
                }
            }
            return Some(v);
        }
    }

    fn or(&mut self) -> Option<i64> {
        self.binary(&["||"], Self::and, |_, a, b| {
            Some(((a != 0) || (b != 0)) as i64)
        })
    }
    fn and(&mut self) -> Option<i64> {
        self.binary(&["&&"], Self::eq, |_, a, b| {
            Some(((a != 0) && (b != 0)) as i64)
        })
    }
    fn eq(&mut self) -> Option<i64> {
        self.binary(&["==", "!="], Self::rel, |op, a, b| {
            Some(if op == "==" { a == b } else { a != b } as i64)
        })
    }
    fn rel(&mut self) -> Option<i64> {
        self.binary(&["<=", ">=", "<", ">"], Self::add, |op, a, b| {
            Some(match op {
                "<=" => a <= b,
                ">=" => a >= b,
                "<" => a < b,
                _ => a > b,
            } as i64)
        })
    }
    fn add(&mut self) -> Option<i64> {
        self.binary(&["+", "-"], Self::mul, |op, a, b| {
            if op == "+" {
                a.checked_add(b)
            } else {
                a.checked_sub(b)
            }
        })
    }
    fn mul(&mut self) -> Option<i64> {
        self.binary(&["*", "/", "%"], Self::unary, |op, a, b| match op {
            "*" => a.checked_mul(b),
            "/" => a.checked_div(b),
            _ => a.checked_rem(b),
        })
    }
    fn unary(&mut self) -> Option<i64> {
        if self.eat("!") {
            return Some((self.unary()? == 0) as i64);
        }
        if self.eat("-") {
            return self.unary()?.checked_neg();
        }
        if self.eat("+") {
            return self.unary();
        }
        self.atom()
    }
    fn atom(&mut self) -> Option<i64> {
        if self.eat("(") {
            let v = self.or()?;
            return self.eat(")").then_some(v);
        }
        match self.t.get(self.i)?.clone() {
            Tok::Num(n) => {
                self.i += 1;
                Some(n)
            }
            Tok::Name(n) if n == "defined" => {
                self.i += 1;
                let paren = self.eat("(");
                let Some(Tok::Name(x)) = self.t.get(self.i).cloned() else {
                    return None;
                };
                self.i += 1;
                if paren && !self.eat(")") {
                    return None;
                }
                Some((self.m.defined)(&x) as i64)
            }
            Tok::Name(n) => {
                self.i += 1;
                (self.m.value)(&n)
            }
            Tok::Op(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with<R>(defs: &[(&str, Option<i64>)], f: impl FnOnce(&Macros) -> R) -> R {
        let defined = |n: &str| defs.iter().any(|(k, _)| *k == n);
        let value = |n: &str| defs.iter().find(|(k, _)| *k == n).and_then(|(_, v)| *v);
        f(&Macros {
            defined: &defined,
            value: &value,
        })
    }

    #[test]
    fn macros_with_stated_values_decide_their_branches() {
        let defs = [
            ("R2", Some(1)),
            ("R16", Some(0)),
            ("N", Some(256)),
            ("F", None),
        ];
        with(&defs, |m| {
            assert_eq!(eval("R2", m), Some(true));
            assert_eq!(eval("(R16)", m), Some(false));
            assert_eq!(eval("!(R2) && (R16)", m), Some(false));
            assert_eq!(eval("!(R16)", m), Some(true));
            assert_eq!(eval("N > 128 && N % 2 == 0", m), Some(true));
            assert_eq!(eval("N / 16 - 15 >= 2", m), Some(false));
            assert_eq!(eval("defined(F) || R16", m), Some(true));
            assert_eq!(eval("defined R16 && !defined(WIDE)", m), Some(true));
            assert_eq!(eval("0", m), Some(false));
            assert_eq!(eval("1UL", m), Some(true));
        });
    }

    #[test]
    fn unknown_names_and_syntax_leave_the_condition_unknown() {
        let defs = [("F", None), ("R2", Some(1))];
        with(&defs, |m| {
            assert_eq!(eval("WIDE", m), None, "a -D flag the code does not state");
            assert_eq!(eval("F", m), None, "defined, but not as an integer");
            assert_eq!(eval("R2 && WIDE", m), None);
            assert_eq!(eval("R2 ? 1 : 0", m), None);
            assert_eq!(eval("f(R2)", m), None);
            assert_eq!(eval("(R2", m), None);
            assert_eq!(eval("R2 / 0", m), None);
            assert_eq!(eval("", m), None);
        });
    }

    #[test]
    fn integer_literals_of_define_bodies() {
        assert_eq!(int_literal(" 1 "), Some(1));
        assert_eq!(int_literal("(0)"), Some(0));
        assert_eq!(int_literal("256u"), Some(256));
        assert_eq!(int_literal("4*4"), None);
        assert_eq!(int_literal("0x10"), None);
        assert_eq!(int_literal(""), None);
    }
}
