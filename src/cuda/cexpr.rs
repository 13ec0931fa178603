//! The crate's one tokenizer of C expressions and its one reader of C number literals.
//!
//! [`tokens`] splits an expression (`ceil(n / 256.0f)`, `defined(R2) && N > 2`) into
//! identifiers, number literals with their C suffixes (`64u`, `0x1F`, `256.0f`) and
//! operators (`<<`, `->`, `(`, …); [`literal`] reads a number literal. Each caller maps
//! them to what it needs: the expression tree (`super::ceval`) integers and floats, `#if`
//! bodies (`super::ppcond`) plain decimal integers ([`plain_int`]), host values
//! ([`number`]) integers (any literal with an integer value, [`int_value`]) and floats.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// `[A-Za-z_][A-Za-z0-9_]*`, keywords and `defined` included.
    Ident,
    /// A number literal: a digit or `.` and a digit, then letters, digits and dots
    /// (`256`, `64u`, `0x1F`, `256.0f`, `.5`). An exponent's sign is not part of it.
    Num,
    /// An operator or punctuation: one of [`OPS2`] or of [`OPS1`].
    Op,
}

/// One token: its kind, its text and its byte offset in the expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub kind: Kind,
    pub text: &'a str,
    pub at: usize,
}

/// The two-character operators, read before the one-character ones.
pub(crate) const OPS2: [&str; 9] = ["<<", ">>", "==", "!=", "<=", ">=", "&&", "||", "->"];
/// The one-character operators and punctuation.
pub(crate) const OPS1: &str = "+-*/%()<>,?:&|^!~.";

/// A character no token starts with (`=`, `[`, `'`, `"`, `#`, …) and its byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Unreadable {
    pub c: char,
    pub at: usize,
}

/// The tokens of a C expression; whitespace (Unicode's) separates them. The first
/// character no token starts with is an error.
pub(crate) fn tokens(s: &str) -> Result<Vec<Token<'_>>, Unreadable> {
    scan(s, false)
}

/// The tokens of any text (a statement, a whole function), the characters no token starts
/// with (`=`, `;`, quotes, …) skipped.
pub(crate) fn tokens_lossy(s: &str) -> Vec<Token<'_>> {
    scan(s, true).unwrap_or_default()
}

fn scan(s: &str, lossy: bool) -> Result<Vec<Token<'_>>, Unreadable> {
    let b = s.as_bytes();
    // The end of the run of bytes from `from` that `ok` accepts.
    let run = |from: usize, ok: fn(&u8) -> bool| {
        b[from..]
            .iter()
            .position(|x| !ok(x))
            .map_or(b.len(), |n| from + n)
    };
    let ident = |x: &u8| x.is_ascii_alphanumeric() || *x == b'_';
    let number = |x: &u8| x.is_ascii_alphanumeric() || *x == b'.';
    let mut out = Vec::new();
    let mut chars = s.char_indices().peekable();
    while let Some(&(i, c)) = chars.peek() {
        let num_start = c == '.' && b.get(i + 1).is_some_and(u8::is_ascii_digit);
        let (kind, end) = if c.is_whitespace() {
            chars.next();
            continue;
        } else if c.is_ascii_alphabetic() || c == '_' {
            (Kind::Ident, run(i, ident))
        } else if c.is_ascii_digit() || num_start {
            (Kind::Num, run(i, number))
        } else if OPS2.iter().any(|o| s[i..].starts_with(o)) {
            (Kind::Op, i + 2)
        } else if OPS1.contains(c) {
            (Kind::Op, i + 1)
        } else if lossy {
            chars.next();
            continue;
        } else {
            return Err(Unreadable { c, at: i });
        };
        out.push(Token {
            kind,
            text: &s[i..end],
            at: i,
        });
        while chars.next_if(|&(j, _)| j < end).is_some() {}
    }
    Ok(out)
}

/// `s` with every identifier token `word` replaced by `with` (`n*n1` with `n` → `(m)` gives
/// `(m)*n1`); the rest of the text is kept as it is.
pub(crate) fn replace_ident(s: &str, word: &str, with: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut from = 0;
    for t in tokens_lossy(s) {
        if t.kind == Kind::Ident && t.text == word {
            out.push_str(&s[from..t.at]);
            out.push_str(with);
            from = t.at + word.len();
        }
    }
    out.push_str(&s[from..]);
    out
}

/// What a number literal reads as, once its suffix letters (any of `f F u U l L`) are
/// dropped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Literal {
    /// Decimal digits (with a sign, as a command-line argument `-4` writes it): `256u`.
    Int(i64),
    /// `0x`/`0X` and hexadecimal digits: `0x10UL`.
    Hex(i64),
    /// Anything else a float is written as: `256.0f`, `1e3`, `1.5`.
    Float(f64),
}

/// Why a text is no number literal.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum LiteralError {
    /// `0x` with no hexadecimal value after it, or one out of `i64`'s range.
    Hex(std::num::ParseIntError),
    /// Neither an integer nor a float.
    NotANumber,
}

/// The one reader of C number literals (see [`Literal`]); decimal integers out of `i64`'s
/// range read as floats.
pub(crate) fn literal(n: &str) -> Result<Literal, LiteralError> {
    // `f`/`F` are hexadecimal digits, never a suffix of a hexadecimal literal (`0x3f` is
    // 63: SobelFilter's `~0x3f & (4 * (BlockWidth + 2) + 0x3f)`).
    if let Some(hex) = n.strip_prefix("0x").or_else(|| n.strip_prefix("0X")) {
        let hex = hex.trim_end_matches(['u', 'U', 'l', 'L']);
        return i64::from_str_radix(hex, 16)
            .map(Literal::Hex)
            .map_err(LiteralError::Hex);
    }
    let t = n.trim_end_matches(['f', 'F', 'u', 'U', 'l', 'L']);
    if let Ok(v) = t.parse::<i64>() {
        return Ok(Literal::Int(v));
    }
    t.parse::<f64>()
        .map(Literal::Float)
        .map_err(|_| LiteralError::NotANumber)
}

/// A C integer or float literal as an integer: `256.0f` → 256, `64u` → 64, `0x10` → 16;
/// the error says why not (`non-integer literal 1.5`).
fn int_value(n: &str) -> Result<i64, String> {
    match literal(n) {
        Ok(Literal::Int(v) | Literal::Hex(v)) => Ok(v),
        Ok(Literal::Float(f)) if f.fract() == 0.0 => Ok(f as i64),
        Err(LiteralError::Hex(e)) => Err(e.to_string()),
        Ok(Literal::Float(_)) | Err(LiteralError::NotANumber) => {
            Err(format!("non-integer literal {n}"))
        }
    }
}

/// A decimal integer literal written as digits and `u`/`U`/`l`/`L` suffixes only (`1`,
/// `256u`, `1UL`), as a `#if` or `#define` states an integer: its value, or None (hex,
/// floats, signs, overflow).
pub(crate) fn plain_int(n: &str) -> Option<i64> {
    let digits = n.trim_end_matches(['u', 'U', 'l', 'L']);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    match literal(n) {
        Ok(Literal::Int(v)) => Some(v),
        _ => None,
    }
}

/// A number as a host program states it (a `#define` body, a command-line argument).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Number {
    Int(i64),
    Float(f64),
}

/// A host value: an integer when [`int_value`] reads one from text with no `.` or `e`
/// (`64u`, `0x10`, `-4`), else a float (`0.5f`, `1e3`), else None.
pub(crate) fn number(s: &str) -> Option<Number> {
    let t = s.trim();
    if let Ok(i) = int_value(t) {
        if !t.contains('.') && !t.contains('e') {
            return Some(Number::Int(i));
        }
    }
    t.trim_end_matches(['f', 'F'])
        .parse::<f64>()
        .ok()
        .map(Number::Float)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(s: &str) -> Vec<(Kind, &str)> {
        tokens(s)
            .expect("readable")
            .into_iter()
            .map(|t| (t.kind, t.text))
            .collect()
    }

    #[test]
    fn tokens_of_launch_and_if_expressions() {
        use Kind::*;
        assert_eq!(
            kinds("ceil(n/256.0f) + p->w"),
            vec![
                (Ident, "ceil"),
                (Op, "("),
                (Ident, "n"),
                (Op, "/"),
                (Num, "256.0f"),
                (Op, ")"),
                (Op, "+"),
                (Ident, "p"),
                (Op, "->"),
                (Ident, "w"),
            ]
        );
        assert_eq!(
            kinds("defined(R2)&&N>=0x10UL<<1"),
            vec![
                (Ident, "defined"),
                (Op, "("),
                (Ident, "R2"),
                (Op, ")"),
                (Op, "&&"),
                (Ident, "N"),
                (Op, ">="),
                (Num, "0x10UL"),
                (Op, "<<"),
                (Num, "1"),
            ]
        );
        // `.5` is a number, `.x` a member; an exponent's sign is an operator.
        assert_eq!(
            kinds("a.x*.5 1e+5"),
            vec![
                (Ident, "a"),
                (Op, "."),
                (Ident, "x"),
                (Op, "*"),
                (Num, ".5"),
                (Num, "1e"),
                (Op, "+"),
                (Num, "5"),
            ]
        );
        let t = tokens(" a\u{a0}\t<= b").expect("readable");
        assert_eq!(t.iter().map(|t| t.at).collect::<Vec<_>>(), vec![1, 5, 8]);
        assert_eq!(tokens(""), Ok(vec![]));
        assert_eq!(tokens("a = 1"), Err(Unreadable { c: '=', at: 2 }));
        assert_eq!(tokens("x[é]"), Err(Unreadable { c: '[', at: 1 }));
        assert_eq!(tokens("é"), Err(Unreadable { c: 'é', at: 0 }));
        assert_eq!(tokens("'a'").map_err(|u| u.c), Err('\''));
        let lossy: Vec<&str> = tokens_lossy("x[é] = f('a');")
            .iter()
            .map(|t| t.text)
            .collect();
        assert_eq!(lossy, vec!["x", "f", "(", "a", ")"]);
    }

    #[test]
    fn identifiers_are_replaced_as_whole_tokens() {
        assert_eq!(replace_ident("n*n1 + a.n", "n", "(m)"), "(m)*n1 + a.(m)");
        assert_eq!(
            replace_ident("0x1n + n_2 + 1e5", "n", "2"),
            "0x1n + n_2 + 1e5"
        );
        assert_eq!(
            replace_ident("f(T, \"T\")", "T", "float"),
            "f(float, \"float\")"
        );
        assert_eq!(replace_ident("abc", "", "x"), "abc");
    }

    #[test]
    fn literals_with_c_suffixes() {
        assert_eq!(literal("256u"), Ok(Literal::Int(256)));
        assert_eq!(literal("1UL"), Ok(Literal::Int(1)));
        assert_eq!(literal("0x10"), Ok(Literal::Hex(16)));
        assert_eq!(literal("256.0f"), Ok(Literal::Float(256.0)));
        assert_eq!(literal("-4"), Ok(Literal::Int(-4)));
        assert_eq!(literal("0xFF"), Ok(Literal::Hex(255)));
        assert_eq!(literal("0x3f"), Ok(Literal::Hex(63)));
        assert_eq!(literal("0xFFFFFFFFu"), Ok(Literal::Hex(0xFFFF_FFFF)));
        assert_eq!(literal("0x1fUL"), Ok(Literal::Hex(31)));
        assert!(matches!(literal("0x"), Err(LiteralError::Hex(_))));
        assert!(matches!(literal("0xg"), Err(LiteralError::Hex(_))));
        assert_eq!(literal("n"), Err(LiteralError::NotANumber));

        assert_eq!(int_value("256.0f"), Ok(256));
        assert_eq!(int_value("64u"), Ok(64));
        assert_eq!(int_value("0x1Au"), Ok(26));
        assert_eq!(int_value("1e3"), Ok(1000));
        assert_eq!(int_value("1.5"), Err("non-integer literal 1.5".into()));
        assert_eq!(int_value("1e"), Err("non-integer literal 1e".into()));

        assert_eq!(plain_int("256u"), Some(256));
        assert_eq!(plain_int("0"), Some(0));
        for no in [
            "0x10",
            "1.0",
            "-1",
            "+1",
            "2f",
            "",
            "u",
            "99999999999999999999",
        ] {
            assert_eq!(plain_int(no), None, "{no}");
        }

        assert_eq!(number(" 64u "), Some(Number::Int(64)));
        assert_eq!(number("-4"), Some(Number::Int(-4)));
        assert_eq!(number("256.0"), Some(Number::Float(256.0)));
        assert_eq!(number("0.5f"), Some(Number::Float(0.5)));
        assert_eq!(number("1e3"), Some(Number::Float(1000.0)));
        assert_eq!(number("1.5u"), None);
        assert_eq!(number("N"), None);
    }
}
