//! The crate's one C-expression tree and its one evaluator.
//!
//! [`Expr::parse`] reads an expression over [`super::cexpr::tokens`] with C's precedence
//! (`?:`, `|| &&`, `| ^ &`, `== !=`, `< <= > >=`, `<< >>`, `+ -`, `* / %`, unary
//! `! - + ~`, calls `f(a, b)`, `defined(X)`, C++ scoped names `std::min`), parentheses and
//! casts kept as nodes so that launch translation (`harness::draft`) can print the tree
//! back; [`Expr::eval`] computes it with C's arithmetic (integers stay integers, `/`
//! truncates, a float operand makes a float, comparisons and `! && ||` give 0 or 1) over
//! the names and functions an [`Env`] knows.
//! Preprocessor conditions (`super::ppcond`), the harness's expression language
//! (`harness::expr::Scope`) and host values (`harness::infer_host::Host::value`, whose
//! [`Env`] follows names into the host code and reads struct fields, `sizeof` and casts)
//! all evaluate here.

use super::cexpr::{literal, tokens, Kind, Literal, Token};
use std::ops::Range;

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

    /// C's truth of a number: nonzero.
    pub fn truthy(self) -> bool {
        match self {
            Num::Int(i) => i != 0,
            Num::Float(f) => f != 0.0,
        }
    }

    fn int(self, what: &str) -> Result<i64, String> {
        match self {
            Num::Int(i) => Ok(i),
            Num::Float(f) => Err(format!("{what} takes integers, not {f:?}")),
        }
    }
}

/// A C expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Num(Num),
    Name(String),
    /// `defined(X)` or `defined X`, as `#if` writes it.
    Defined(String),
    /// `! - + ~` and the operand.
    Unary(&'static str, Box<Expr>),
    Binary(&'static str, Box<Expr>, Box<Expr>),
    /// `c ? a : b`.
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `f(a, b)`; a method call keeps its object path in the name (`p->size()`).
    Call(String, Vec<Expr>),
    /// `o.f`, `o->f.g`: the object's name and each member access after it.
    Member(String, Vec<(&'static str, String)>),
    /// `sizeof(T)`: the type's tokens, space-separated.
    SizeOf(String),
    /// `(unsigned int) x`: the value is kept (sizes, not C's conversions).
    Cast(String, Box<Expr>),
    /// `(e)`: kept so that a printer (`harness::draft`) writes the source's grouping back;
    /// its value is `e`'s.
    Paren(Box<Expr>),
}

/// The words a C cast `(unsigned int)` or a functional cast `int(x)` is made of.
pub const CAST_WORDS: [&str; 12] = [
    "int", "unsigned", "float", "double", "size_t", "long", "short", "char", "const", "signed",
    "uint", "int64_t",
];

/// What the names and functions of an expression stand for.
pub trait Env {
    /// A name's value; the error says why it has none.
    fn name(&self, name: &str) -> Result<Num, String>;
    /// Whether `name` is a macro (`defined(X)`); only preprocessor conditions know.
    fn defined(&self, name: &str) -> Result<bool, String> {
        Err(format!("defined({name}) outside a preprocessor condition"))
    }
    /// A function's value on its arguments: by default the [`builtin`]s.
    fn call(&self, f: &str, args: &[Num]) -> Result<Num, String> {
        builtin(f, args)
    }
    /// Whether `f` can be called at all, asked before its arguments are evaluated (so the
    /// error names the call, not what its arguments lack).
    fn callable(&self, _f: &str) -> Result<(), String> {
        Ok(())
    }
    /// A struct member's value (`o.f`, `o->f.g`); only host code knows any.
    fn member(&self, root: &str, _path: &[(&'static str, String)]) -> Result<Num, String> {
        Err(format!("`{root}` reads a struct field"))
    }
    /// `sizeof(T)`; only host code knows any.
    fn sizeof(&self, ty: &str) -> Result<Num, String> {
        Err(format!("sizeof({ty}) is not known"))
    }
}

/// Binary operators from the loosest to the tightest binding, one level each.
const LEVELS: [&[&str]; 9] = [
    &["||"],
    &["&&"],
    &["|"],
    &["^"],
    &["&"],
    &["==", "!="],
    &["<=", ">=", "<", ">"],
    &["<<", ">>"],
    &["+", "-"],
];
const MUL: &[&str] = &["*", "/", "%"];

struct Parser<'t, 's> {
    t: &'t [Token<'s>],
    i: usize,
}

impl<'s> Parser<'_, 's> {
    fn peek(&self) -> Option<&Token<'s>> {
        self.t.get(self.i)
    }

    /// The operator at the cursor, when it is one of `ops`.
    fn op_in(&self, ops: &[&'static str]) -> Option<&'static str> {
        let t = self.peek().filter(|t| t.kind == Kind::Op)?;
        ops.iter().find(|o| **o == t.text).copied()
    }

    /// The next `n` tokens' texts, space-separated (a type: `unsigned int`).
    fn words(&self, n: usize) -> String {
        let t: Vec<&str> = self.t[self.i..self.i + n].iter().map(|w| w.text).collect();
        t.join(" ")
    }

    fn eat(&mut self, op: &str) -> bool {
        let hit = self
            .peek()
            .is_some_and(|t| t.kind == Kind::Op && t.text == op);
        self.i += usize::from(hit);
        hit
    }

    fn expect(&mut self, op: &str) -> Result<(), String> {
        match self.eat(op) {
            true => Ok(()),
            false => Err(match self.peek() {
                Some(t) => format!("expected `{op}`, found `{}`", t.text),
                None => format!("expected `{op}` at the end"),
            }),
        }
    }

    fn cond(&mut self) -> Result<Expr, String> {
        let c = self.binary(0)?;
        if !self.eat("?") {
            return Ok(c);
        }
        let a = self.cond()?;
        self.expect(":")?;
        let b = self.cond()?;
        Ok(Expr::Cond(Box::new(c), Box::new(a), Box::new(b)))
    }

    /// Left-associative operators of `LEVELS[level]` (past the last level, `* / %`) over
    /// the tighter levels.
    fn binary(&mut self, level: usize) -> Result<Expr, String> {
        let ops = LEVELS.get(level).copied().unwrap_or(MUL);
        let mut e = self.operand(level)?;
        while let Some(op) = self.op_in(ops) {
            self.i += 1;
            let r = self.operand(level)?;
            e = Expr::Binary(op, Box::new(e), Box::new(r));
        }
        Ok(e)
    }

    /// An operand of `level`'s operators: the next level's expression, or a unary one.
    fn operand(&mut self, level: usize) -> Result<Expr, String> {
        match level < LEVELS.len() {
            true => self.binary(level + 1),
            false => self.unary(),
        }
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if let Some(op) = self.op_in(&["!", "-", "+", "~"]) {
            self.i += 1;
            return Ok(Expr::Unary(op, Box::new(self.unary()?)));
        }
        self.atom()
    }

    fn atom(&mut self) -> Result<Expr, String> {
        let Some(&t) = self.peek() else {
            return Err("the expression ends early".into());
        };
        self.i += 1;
        match t.kind {
            Kind::Op if t.text == "(" => {
                if let Some(words) = self.cast() {
                    let ty = self.words(words);
                    self.i += words + 1;
                    return Ok(Expr::Cast(ty, Box::new(self.unary()?)));
                }
                let e = self.cond()?;
                self.expect(")")?;
                Ok(Expr::Paren(Box::new(e)))
            }
            // `::x`, a name of the global scope.
            Kind::Op if t.text == ":" => {
                self.i -= 1;
                match self.scoped() {
                    Some(n) => self.named(format!("::{n}")),
                    None => Err("unexpected `:`".into()),
                }
            }
            Kind::Op => Err(format!("unexpected `{}`", t.text)),
            Kind::Num => self.number(t),
            Kind::Ident if t.text == "defined" => {
                let paren = self.eat("(");
                let name = match self.peek() {
                    Some(n) if n.kind == Kind::Ident => n.text.to_string(),
                    _ => return Err("defined takes a name".into()),
                };
                self.i += 1;
                if paren {
                    self.expect(")")?;
                }
                Ok(Expr::Defined(name))
            }
            // C++'s (and C23's) boolean literals.
            Kind::Ident if matches!(t.text, "true" | "false") => {
                Ok(Expr::Num(Num::Int(i64::from(t.text == "true"))))
            }
            Kind::Ident if t.text == "sizeof" && self.eat("(") => {
                let close = self.t[self.i..]
                    .iter()
                    .position(|c| c.kind == Kind::Op && c.text == ")")
                    .ok_or("unclosed sizeof(")?;
                let ty = self.words(close);
                self.i += close + 1;
                Ok(Expr::SizeOf(ty))
            }
            Kind::Ident => {
                let mut name = t.text.to_string();
                while let Some(n) = self.scoped() {
                    name = format!("{name}::{n}");
                }
                self.named(name)
            }
        }
    }

    /// The number of type words of a cast whose `(` is just behind the cursor, when it is
    /// one: [`CAST_WORDS`] (`(unsigned int)`), a pointer type (`(knode *)`), or one name
    /// before an operand (`(IdxType)32`, `(uint64_t)B`), which C reads as nothing but a
    /// cast. `(T)(x)` is a cast too, not a call through a parenthesized name.
    fn cast(&self) -> Option<usize> {
        let rest = &self.t[self.i..];
        let idents = rest.iter().take_while(|w| w.kind == Kind::Ident).count();
        let stars = rest[idents..]
            .iter()
            .take_while(|w| w.kind == Kind::Op && w.text == "*")
            .count();
        let words = idents + stars;
        let closes = rest
            .get(words)
            .is_some_and(|c| c.kind == Kind::Op && c.text == ")");
        if idents == 0 || !closes {
            return None;
        }
        let known = rest[..idents].iter().all(|w| CAST_WORDS.contains(&w.text));
        let operand = rest.get(words + 1).is_some_and(|n| {
            matches!(n.kind, Kind::Ident | Kind::Num) || (n.kind == Kind::Op && n.text == "(")
        });
        (known || stars > 0 || (idents == 1 && operand)).then_some(words)
    }

    /// C++'s scope operator and the name after it (`::` reaches the parser as two `:`
    /// tokens, written together).
    fn scoped(&mut self) -> Option<&'s str> {
        match self.t.get(self.i..self.i + 3) {
            Some([a, b, n])
                if a.text == ":" && b.text == ":" && b.at == a.at + 1 && n.kind == Kind::Ident =>
            {
                self.i += 3;
                Some(n.text)
            }
            _ => None,
        }
    }

    /// What follows a name: member accesses (`o->f.g`), then a call's arguments.
    fn named(&mut self, root: String) -> Result<Expr, String> {
        let mut path = Vec::new();
        while let Some(op) = self.op_in(&[".", "->"]) {
            match self.t.get(self.i + 1) {
                Some(f) if f.kind == Kind::Ident => {
                    path.push((op, f.text.to_string()));
                    self.i += 2;
                }
                _ => return Err(format!("`{root}` reads a struct field")),
            }
        }
        let name = path
            .iter()
            .fold(root.clone(), |n, (op, f)| format!("{n}{op}{f}"));
        if !self.eat("(") {
            return Ok(match path.is_empty() {
                true => Expr::Name(name),
                false => Expr::Member(root, path),
            });
        }
        let mut args = Vec::new();
        if !self.eat(")") {
            loop {
                args.push(self.cond()?);
                if self.eat(")") {
                    break;
                }
                self.expect(",")?;
            }
        }
        Ok(Expr::Call(name, args))
    }

    /// A number literal; `1e` `+` `5` (the tokenizer leaves an exponent's sign apart) is
    /// one float.
    fn number(&mut self, t: Token<'s>) -> Result<Expr, String> {
        let mut text = t.text.to_string();
        let exponent = text.ends_with(['e', 'E']) && !text.starts_with("0x");
        if exponent {
            if let (Some(sign), Some(digits)) = (self.t.get(self.i), self.t.get(self.i + 1)) {
                if matches!(sign.text, "+" | "-") && digits.kind == Kind::Num {
                    text = format!("{text}{}{}", sign.text, digits.text);
                    self.i += 2;
                }
            }
        }
        match literal(&text) {
            Ok(Literal::Int(v) | Literal::Hex(v)) => Ok(Expr::Num(Num::Int(v))),
            Ok(Literal::Float(f)) => Ok(Expr::Num(Num::Float(f))),
            Err(_) => Err(format!("cannot read number {text}")),
        }
    }
}

impl Expr {
    /// The tree of a whole C expression; an error names what could not be read.
    pub fn parse(s: &str) -> Result<Expr, String> {
        let toks = tokens(s).map_err(|u| format!("unexpected `{}`", u.c))?;
        Expr::from_tokens(&toks)
    }

    /// The tree of a whole expression's [`tokens`], for a caller that reports unreadable
    /// text its own way.
    pub(crate) fn from_tokens(toks: &[Token]) -> Result<Expr, String> {
        if toks.is_empty() {
            return Err("the expression is empty".into());
        }
        let mut p = Parser { t: toks, i: 0 };
        let e = p.cond()?;
        match p.peek() {
            None => Ok(e),
            Some(t) => Err(format!("unexpected `{}` after the expression", t.text)),
        }
    }

    /// The source text inside the parentheses around the whole of `s` (`((n + 1))` →
    /// `n + 1`), repeatedly; `s` itself (trimmed) when they are not around the whole.
    pub fn unparen(s: &str) -> &str {
        let mut s = s.trim();
        while let Ok(toks) = tokens(s) {
            match (
                Expr::from_tokens(&toks),
                toks.get(1),
                toks.len().checked_sub(2),
            ) {
                (Ok(Expr::Paren(_)), Some(first), Some(last)) if toks.len() > 2 => {
                    s = &s[first.at..toks[last].at + toks[last].text.len()];
                }
                _ => break,
            }
        }
        s
    }

    /// The top of a whole expression as one level's chain: the byte ranges of its operands
    /// in `s` and the operators between them, for the level of `ops` (`["+", "-"]`,
    /// `["*", "/", "%"]`): `a*b + (c) - d` → (`a*b`, `(c)`, `d`; `+`, `-`). None when the
    /// text does not parse or its top is looser (`a + b ? c : d`); a tighter top is one
    /// operand.
    pub fn chain(s: &str, ops: &[&str]) -> Option<(Vec<Range<usize>>, Vec<&'static str>)> {
        let toks = tokens(s).ok()?;
        Expr::from_tokens(&toks).ok()?;
        let level = LEVELS
            .iter()
            .position(|l| *l == ops)
            .unwrap_or(LEVELS.len());
        let level_ops = LEVELS.get(level).copied().unwrap_or(MUL);
        let mut p = Parser { t: &toks, i: 0 };
        let (mut operands, mut between) = (Vec::new(), Vec::new());
        loop {
            let from = p.i;
            p.operand(level).ok()?;
            let last = &toks[p.i - 1];
            operands.push(toks[from].at..last.at + last.text.len());
            match p.op_in(level_ops) {
                Some(op) => {
                    between.push(op);
                    p.i += 1;
                }
                None => break,
            }
        }
        (p.i == toks.len()).then_some((operands, between))
    }

    /// Whether any node satisfies `f`.
    pub fn any(&self, f: &dyn Fn(&Expr) -> bool) -> bool {
        f(self)
            || match self {
                Expr::Num(_)
                | Expr::Name(_)
                | Expr::Defined(_)
                | Expr::Member(..)
                | Expr::SizeOf(_) => false,
                Expr::Unary(_, a) | Expr::Cast(_, a) | Expr::Paren(a) => a.any(f),
                Expr::Binary(_, a, b) => a.any(f) || b.any(f),
                Expr::Cond(c, a, b) => c.any(f) || a.any(f) || b.any(f),
                Expr::Call(_, args) => args.iter().any(|a| a.any(f)),
            }
    }

    /// The value, with C's arithmetic (see the module doc); overflow, division by zero and
    /// shifts out of range are errors.
    pub fn eval(&self, env: &dyn Env) -> Result<Num, String> {
        let flag = |b: bool| Num::Int(i64::from(b));
        Ok(match self {
            Expr::Num(n) => *n,
            Expr::Name(n) => env.name(n)?,
            Expr::Member(root, path) => env.member(root, path)?,
            Expr::SizeOf(ty) => env.sizeof(ty)?,
            Expr::Cast(_, a) | Expr::Paren(a) => a.eval(env)?,
            Expr::Defined(n) => flag(env.defined(n)?),
            Expr::Unary(op, a) => {
                let v = a.eval(env)?;
                match (*op, v) {
                    ("!", v) => flag(!v.truthy()),
                    ("-", Num::Int(i)) => Num::Int(i.checked_neg().ok_or("overflow")?),
                    ("-", Num::Float(f)) => Num::Float(-f),
                    ("~", v) => Num::Int(!v.int("~")?),
                    _ => v,
                }
            }
            Expr::Cond(c, a, b) => match c.eval(env)?.truthy() {
                true => a.eval(env)?,
                false => b.eval(env)?,
            },
            Expr::Binary("&&", a, b) => flag(a.eval(env)?.truthy() && b.eval(env)?.truthy()),
            Expr::Binary("||", a, b) => flag(a.eval(env)?.truthy() || b.eval(env)?.truthy()),
            Expr::Binary(op, a, b) => binary(op, a.eval(env)?, b.eval(env)?)?,
            Expr::Call(f, args) => {
                env.callable(f)?;
                let vals = args
                    .iter()
                    .map(|a| a.eval(env))
                    .collect::<Result<Vec<_>, _>>()?;
                env.call(f, &vals)?
            }
        })
    }
}

fn binary(op: &str, a: Num, b: Num) -> Result<Num, String> {
    let flag = |b: bool| Num::Int(i64::from(b));
    if let (Num::Int(x), Num::Int(y)) = (a, b) {
        let v = match op {
            "+" => x.checked_add(y),
            "-" => x.checked_sub(y),
            "*" => x.checked_mul(y),
            "/" | "%" if y == 0 => return Err("division by zero".into()),
            "/" => x.checked_div(y),
            "%" => x.checked_rem(y),
            "<<" | ">>" if !(0..63).contains(&y) => return Err(format!("shift by {y}")),
            "<<" => x.checked_mul(1 << y),
            ">>" => Some(x >> y),
            "&" => Some(x & y),
            "|" => Some(x | y),
            "^" => Some(x ^ y),
            _ => None,
        };
        if let Some(v) = v {
            return Ok(Num::Int(v));
        }
        if matches!(op, "+" | "-" | "*" | "/" | "%" | "<<") {
            return Err(format!("{x} {op} {y} overflows"));
        }
    }
    let (x, y) = (a.as_f64(), b.as_f64());
    Ok(match op {
        "+" => Num::Float(x + y),
        "-" => Num::Float(x - y),
        "*" => Num::Float(x * y),
        "/" => Num::Float(x / y),
        "%" => Num::Float(x % y),
        "==" => flag(x == y),
        "!=" => flag(x != y),
        "<" => flag(x < y),
        "<=" => flag(x <= y),
        ">" => flag(x > y),
        ">=" => flag(x >= y),
        _ => return Err(format!("`{op}` takes integers")),
    })
}

/// The functions every expression may call: `min(…)`, `max(…)` (an integer when every
/// argument is one), `floor(x)`, `ceil(x)` (floats), `ceil_div(a, b)`, `round_up(a, b)`,
/// `log2(a)` (integer floor), `pow2(a)`, and functional casts (`int(x)`: the value).
pub fn builtin(f: &str, args: &[Num]) -> Result<Num, String> {
    let ints = |n: usize| -> Result<Vec<i64>, String> {
        if args.len() != n {
            return Err(format!("{f} takes {n} argument(s), not {}", args.len()));
        }
        args.iter().map(|a| a.int(f)).collect()
    };
    match f {
        "min" | "max" if !args.is_empty() => {
            let pick = |a: f64, b: f64| if f == "min" { a.min(b) } else { a.max(b) };
            Ok(match args.iter().all(|a| matches!(a, Num::Int(_))) {
                true => {
                    let v = args.iter().map(|a| a.as_f64() as i64);
                    Num::Int(if f == "min" { v.min() } else { v.max() }.expect("not empty"))
                }
                false => Num::Float(args.iter().map(|a| a.as_f64()).fold(
                    if f == "min" {
                        f64::INFINITY
                    } else {
                        f64::NEG_INFINITY
                    },
                    pick,
                )),
            })
        }
        // A functional cast keeps the value, as a C cast does here.
        "int" | "unsigned" | "long" | "size_t" | "float" | "double" if args.len() == 1 => {
            Ok(args[0])
        }
        "floor" | "ceil" if args.len() == 1 => {
            let x = args[0].as_f64();
            Ok(Num::Float(if f == "floor" { x.floor() } else { x.ceil() }))
        }
        "ceil_div" | "round_up" => {
            let v = ints(2)?;
            if v[1] == 0 {
                return Err(format!("{f} by zero"));
            }
            let q = (v[0] + v[1] - 1).div_euclid(v[1]);
            Ok(Num::Int(if f == "ceil_div" { q } else { q * v[1] }))
        }
        "log2" => match ints(1)?[0] {
            x if x <= 0 => Err(format!("log2({x})")),
            x => Ok(Num::Int(63 - x.leading_zeros() as i64)),
        },
        "pow2" => match ints(1)?[0] {
            x if (0..63).contains(&x) => Ok(Num::Int(1 << x)),
            x => Err(format!("pow2({x})")),
        },
        _ => Err(format!("no function {f}() with {} argument(s)", args.len())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Vars(&'static [(&'static str, i64)]);
    impl Env for Vars {
        fn name(&self, n: &str) -> Result<Num, String> {
            self.0
                .iter()
                .find(|(k, _)| *k == n)
                .map(|(_, v)| Num::Int(*v))
                .ok_or_else(|| format!("no {n}"))
        }
        fn defined(&self, n: &str) -> Result<bool, String> {
            Ok(self.0.iter().any(|(k, _)| *k == n))
        }
    }

    fn ev(s: &str) -> Result<Num, String> {
        Expr::parse(s)?.eval(&Vars(&[("n", 1000), ("R2", 1), ("R16", 0)]))
    }

    #[test]
    fn boolean_literals_are_one_and_zero() {
        assert_eq!(ev("true"), Ok(Num::Int(1)));
        assert_eq!(ev("false == true ? 3 : n"), Ok(Num::Int(1000)));
    }

    #[test]
    fn c_precedence_and_arithmetic() {
        assert_eq!(ev("n + n >> 2"), Ok(Num::Int(500)));
        assert_eq!(ev("1 << 5 * 2"), Ok(Num::Int(1024)));
        assert_eq!(ev("n / 3"), Ok(Num::Int(333)));
        assert_eq!(ev("-7 / 2"), Ok(Num::Int(-3)));
        assert_eq!(ev("-7 % 3"), Ok(Num::Int(-1)));
        assert_eq!(ev("n / 4.0f"), Ok(Num::Float(250.0)));
        assert_eq!(ev("1e+3 + 1"), Ok(Num::Float(1001.0)));
        assert_eq!(ev("0x10 | 3 ^ 1 & 1"), Ok(Num::Int(0x10 | 2)));
        assert_eq!(ev("~0"), Ok(Num::Int(-1)));
        assert_eq!(ev("n < 256 ? n : 256"), Ok(Num::Int(256)));
        assert_eq!(ev("n > 2 ? n > 5000 ? 1 : 2 : 3"), Ok(Num::Int(2)));
        assert_eq!(ev("(n / 512) + (!(n % 512) ? 0 : 1)"), Ok(Num::Int(2)));
        assert_eq!(ev("!n + (n == 1000.0) + (n != 3 && 0.5)"), Ok(Num::Int(2)));
    }

    #[test]
    fn conditions_functions_and_errors() {
        assert_eq!(ev("defined(R2) && R2 && !R16"), Ok(Num::Int(1)));
        assert_eq!(ev("defined R8 || R16"), Ok(Num::Int(0)));
        assert_eq!(ev("min(n, 3, 7) + max(1, 2)"), Ok(Num::Int(5)));
        assert_eq!(ev("min(n, 2.5)"), Ok(Num::Float(2.5)));
        assert_eq!(
            ev("ceil_div(n, 256) * round_up(n, 64)"),
            Ok(Num::Int(4 * 1024))
        );
        assert_eq!(
            ev("log2(1024) + pow2(3) + ceil(n / 3.0)"),
            Ok(Num::Float(352.0))
        );
        assert_eq!(ev("n / 0"), Err("division by zero".into()));
        assert!(ev("9223372036854775807 + 1")
            .unwrap_err()
            .contains("overflows"));
        assert_eq!(ev("m + 1"), Err("no m".into()));
        assert!(ev("n +").is_err());
        assert!(ev("(n").is_err());
        assert!(ev("n n").is_err());
        assert!(ev("p->w").unwrap_err().contains("struct field"));
        assert!(ev("sizeof(float)").unwrap_err().contains("not known"));
        assert_eq!(
            ev("(unsigned int) n / 3 + int(n) % 7"),
            Ok(Num::Int(333 + 6))
        );
        assert!(ev("ceil_div(n, 0)").is_err());
        assert!(ev("foo(1)").unwrap_err().contains("no function foo"));
        assert!(ev("p.size()").unwrap_err().contains("no function p.size()"));
        assert_eq!(
            Expr::parse("sizeof(unsigned int) * q->d.w").unwrap(),
            Expr::Binary(
                "*",
                Box::new(Expr::SizeOf("unsigned int".into())),
                Box::new(Expr::Member(
                    "q".into(),
                    vec![("->", "d".into()), (".", "w".into())]
                ))
            )
        );
        assert!(ev("1.5 << 2").unwrap_err().contains("integers"));
    }

    #[test]
    fn parentheses_stay_in_the_tree_and_a_cast_is_a_node() {
        let name = |n: &str| Box::new(Expr::Name(n.into()));
        assert_eq!(
            Expr::parse("(float)(a + b) / c").unwrap(),
            Expr::Binary(
                "/",
                Box::new(Expr::Cast(
                    "float".into(),
                    Box::new(Expr::Paren(Box::new(Expr::Binary(
                        "+",
                        name("a"),
                        name("b")
                    ))))
                )),
                name("c")
            )
        );
        assert_eq!(ev("((n)) * (2)"), Ok(Num::Int(2000)));
    }

    #[test]
    fn chains_and_parentheses_by_their_source_texts() {
        let texts = |s: &'static str, ops: &[&str]| {
            Expr::chain(s, ops).map(|(r, o)| (r.into_iter().map(|r| &s[r]).collect(), o))
        };
        let (r, o): (Vec<&str>, _) = texts("a*b + (c)  - d->w", &["+", "-"]).unwrap();
        assert_eq!((r, o), (vec!["a*b", "(c)", "d->w"], vec!["+", "-"]));
        let (r, o): (Vec<&str>, _) = texts("(n + 1) * sizeof(float)*m", &["*", "/", "%"]).unwrap();
        assert_eq!(
            (r, o),
            (vec!["(n + 1)", "sizeof(float)", "m"], vec!["*", "*"])
        );
        // A looser top is no chain of the level; a tighter one is one operand.
        assert!(texts("n * 4 + 1", &["*", "/", "%"]).is_none());
        assert!(texts("a + b ? c : d", &["+", "-"]).is_none());
        assert!(texts("a[0] + 1", &["+", "-"]).is_none());
        assert!(texts("x << 2", &["*", "/", "%"]).is_none());
        let (r, _): (Vec<&str>, _) = texts("f(a, b)", &["+", "-"]).unwrap();
        assert_eq!(r, ["f(a, b)"]);
        assert_eq!(Expr::unparen(" ((n + 1)) "), "n + 1");
        assert_eq!(Expr::unparen("(a) * (b)"), "(a) * (b)");
        assert_eq!(Expr::unparen("(float)x"), "(float)x");
    }

    #[test]
    fn pointer_and_named_casts_and_scoped_names() {
        // A pointer type, or one name before an operand, can only be a cast.
        assert_eq!(
            ev("(uint64_t)n * 2 + (IdxType)(n) / (T *)4"),
            Ok(Num::Int(2250))
        );
        assert!(matches!(
            Expr::parse("(knode *)kmalloc(n)").unwrap(),
            Expr::Cast(t, c) if t == "knode *" && matches!(*c, Expr::Call(..))
        ));
        // A parenthesized name before an operator stays a value.
        assert_eq!(ev("(n) - 1"), Ok(Num::Int(999)));
        // `::` joins a qualified name; a lone `:` still belongs to `?:`.
        assert_eq!(
            Expr::parse("std::min(a, ::b) + x128::size").unwrap(),
            Expr::Binary(
                "+",
                Box::new(Expr::Call(
                    "std::min".into(),
                    vec![Expr::Name("a".into()), Expr::Name("::b".into())]
                )),
                Box::new(Expr::Name("x128::size".into()))
            )
        );
        assert_eq!(ev("n ? 1 : 2"), Ok(Num::Int(1)));
        assert!(ev("n ? 1 : : 2").is_err());
    }
}
