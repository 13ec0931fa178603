//! The value of a preprocessor condition (`#if R2`, `#elif defined(X) && N > 2`) where the
//! macros it names have integer values the code states, so that of several `#define`s of one
//! name under `#if` branches (Parboil fft's `#if R2 … #define R 2 … #endif #if R16 … #define
//! R 16 … #endif`, with `#define R2 1` and `#define R16 0`) the one the compiler sees is taken.
//!
//! Unknown is an answer: a name with no stated integer value (a `-D` flag, a macro of another
//! file) or syntax outside the small grammar below makes the whole condition unknown, and
//! callers then keep what they did before.
//!
//! [`active_text`] applies these conditions to a whole text: what the compiler sees of host
//! code, and of a kernel unit (`super::syntax::UnitSyntax`).

use super::ceval::{Env, Expr, Num};
use super::lex::strip_comments;

/// What a name in a condition is: `defined` says whether it is a macro at all, `value` its
/// integer value where the code states one.
pub struct Macros<'a> {
    pub defined: &'a dyn Fn(&str) -> bool,
    pub value: &'a dyn Fn(&str) -> Option<i64>,
}

/// The condition's truth, or None when it depends on something the code does not state:
/// a name with no stated integer value, a float or a call (the preprocessor reads
/// integers only), or text that is no C expression. Evaluated by the crate's one C
/// evaluator ([`super::ceval`]), `defined(X)` / `defined X` included.
pub fn eval(expr: &str, m: &Macros) -> Option<bool> {
    struct Names<'a>(&'a Macros<'a>);
    impl Env for Names<'_> {
        fn name(&self, n: &str) -> Result<Num, String> {
            (self.0.value)(n)
                .map(Num::Int)
                .ok_or_else(|| format!("{n} has no stated value"))
        }
        fn defined(&self, n: &str) -> Result<bool, String> {
            Ok((self.0.defined)(n))
        }
    }
    let e = Expr::parse(expr).ok()?;
    if e.any(&|x| matches!(x, Expr::Num(Num::Float(_)) | Expr::Call(..))) {
        return None;
    }
    e.eval(&Names(m)).ok().map(Num::truthy)
}

/// The integer a `#define NAME <body>` body stands for, when it is a plain integer literal
/// (`1`, `(0)`, `256u`).
pub fn int_literal(body: &str) -> Option<i64> {
    let b = body
        .trim()
        .trim_start_matches('(')
        .trim_end_matches(')')
        .trim();
    super::cexpr::plain_int(b)
}

/// One `#define` line of a text: the macro's name, the text between the parentheses of a
/// function-like macro, and the body (trimmed; comments are kept).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Define<'a> {
    pub name: &'a str,
    pub params: Option<&'a str>,
    pub body: &'a str,
}

impl Define<'_> {
    /// A function-like macro's parameter names (`#define SQ(x) …` → `[x]`).
    pub fn param_names(&self) -> Vec<String> {
        self.params
            .unwrap_or("")
            .split(',')
            .map(|p| p.trim().to_string())
            .filter(|p| !p.is_empty())
            .collect()
    }
}

/// Every `#define` of `text`, in order: the one reader of macro definitions (a line
/// `# define NAME body` or `#define NAME(a, b) body`).
pub fn defines(text: &str) -> impl Iterator<Item = Define<'_>> {
    text.lines().filter_map(|l| {
        let rest = l
            .trim()
            .strip_prefix('#')?
            .trim_start()
            .strip_prefix("define")?
            .trim_start();
        let end = rest
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(rest.len());
        if end == 0 {
            return None;
        }
        let (name, after) = rest.split_at(end);
        match after.strip_prefix('(') {
            Some(p) => {
                let close = p.find(')')?;
                Some(Define {
                    name,
                    params: Some(&p[..close]),
                    body: p[close + 1..].trim(),
                })
            }
            None => Some(Define {
                name,
                params: None,
                body: after.trim(),
            }),
        }
    })
}

/// The bodies of every object-like `#define name body` in `text`, in order.
pub fn define_bodies(text: &str, name: &str) -> Vec<String> {
    defines(text)
        .filter(|d| d.name == name && d.params.is_none())
        .map(|d| d.body.to_string())
        .collect()
}

/// A function-like macro `#define NAME(a, b) body` in `text`: (parameters, body).
pub fn function_macro(text: &str, name: &str) -> Option<(Vec<String>, String)> {
    defines(text)
        .find(|d| d.name == name && d.params.is_some())
        .map(|d| (d.param_names(), d.body.to_string()))
}

/// Whether `text` `#define`s `name` (object-like or function-like, as `#ifdef` asks).
pub fn is_defined(text: &str, name: &str) -> bool {
    defines(text).any(|d| d.name == name)
}

/// The text with the lines of `#ifdef`/`#ifndef` branches that are off blanked (line
/// numbers kept): a branch is on when `defined(macro)` says so. An `#if`/`#elif` condition
/// is evaluated over the macros `text` defines once with an integer (`#if R2` with
/// `#define R2 1`, above); one whose value is not known keeps every branch.
pub fn active_text(text: &str, defined: &dyn Fn(&str) -> bool) -> String {
    resolve(text, &|m| Some(defined(m)), false)
}

/// [`active_text`], with the `#if`/`#ifdef`/`#ifndef`/`#elif`/`#else`/`#endif` lines of
/// every group whose conditions were all known blanked too (and every directive inside a
/// branch that is off): host code read as the compiler reads it, so an expression with a
/// settled `#ifdef` inside it (Chai's `l_mem_size = in_size` / `#ifdef CUDA_8_0` /
/// `+ sizeof(int)` / `#endif` / `;`) is one expression. A group with a condition whose value
/// is not known keeps its directives, and all its branches, as [`active_text`] does.
/// `known` says whether a macro is defined where the test stands, or None when that is
/// not known: a name the program's own files `#define` is defined only from its
/// `#define` on (an include guard, PolyBench's `#if !defined(NI)` before its own `#define
/// NI`), which this reading without include order cannot place; a test of it, or a
/// condition naming it in `defined(…)`, keeps its group.
pub fn resolved_text(text: &str, known: &dyn Fn(&str) -> Option<bool>) -> String {
    resolve(text, known, true)
}

fn resolve(text: &str, known: &dyn Fn(&str) -> Option<bool>, drop_settled: bool) -> String {
    let defined = |m: &str| known(m).unwrap_or(true);
    // A macro's value: its one `#define` in `text`, when that is an integer literal (one
    // defined under several branches has no one value: its value is the question).
    let value = |n: &str| match define_bodies(text, n).as_slice() {
        [body] => int_literal(&strip_comments(body)),
        _ => None,
    };
    let macros = Macros {
        defined: &defined,
        value: &value,
    };
    // A condition that tests whether a macro of unknown state is defined is unknown.
    let cond = |d: &str, k: &str| {
        let c = strip_comments(&d[k.len()..]);
        let tested = DEFINED_NAME
            .captures_iter(&c)
            .any(|t| known(&t[1]).is_none());
        if tested {
            return None;
        }
        eval(&c, &macros)
    };
    let mut stack: Vec<Cond> = Vec::new();
    let on = |st: &Vec<Cond>| st.last().is_none_or(|c| c.outer_on && c.on);
    // Each group's number on the stack, and whether all its conditions were known.
    let mut group_of: Vec<usize> = Vec::new();
    let mut settled: Vec<bool> = Vec::new();
    // Kept lines, and for a directive its group and whether the text around it was on.
    let mut lines: Vec<Line> = Vec::new();
    for line in text.split_inclusive('\n') {
        let t = line.trim_start();
        let directive = t.strip_prefix('#').map(str::trim_start);
        let word = |d: &str, k: &str| {
            d.strip_prefix(k)
                .map(|r| r.split_whitespace().next().unwrap_or("").to_string())
        };
        let mut keep = on(&stack);
        let mut group: Option<(usize, bool)> = None;
        match directive {
            Some(d) if d.starts_with("ifdef") || d.starts_with("ifndef") => {
                let neg = d.starts_with("ifndef");
                let m = word(d, if neg { "ifndef" } else { "ifdef" }).unwrap_or_default();
                group = Some((settled.len(), on(&stack)));
                let value = known(&m).map(|d| d != neg);
                stack.push(Cond::new(on(&stack), value));
                group_of.push(settled.len());
                settled.push(value.is_some());
                keep = true;
            }
            Some(d) if d.starts_with("if") => {
                group = Some((settled.len(), on(&stack)));
                let c = Cond::new(on(&stack), cond(d, "if"));
                group_of.push(settled.len());
                settled.push(c.known);
                stack.push(c);
                keep = true;
            }
            Some(d) if d.starts_with("elif") => {
                if let (Some(top), Some(&g)) = (stack.last_mut(), group_of.last()) {
                    group = Some((g, top.outer_on));
                    if !top.known {
                        top.on = true;
                    } else if top.taken {
                        top.on = false;
                    } else {
                        *top = Cond::new(top.outer_on, cond(d, "elif"));
                        settled[g] &= top.known;
                    }
                }
                keep = true;
            }
            Some(d) if d.starts_with("else") => {
                if let (Some(top), Some(&g)) = (stack.last_mut(), group_of.last()) {
                    group = Some((g, top.outer_on));
                    if top.known {
                        top.on = !top.taken;
                        top.taken = true;
                    }
                }
                keep = true;
            }
            Some(d) if d.starts_with("endif") => {
                if let (Some(top), Some(&g)) = (stack.last(), group_of.last()) {
                    group = Some((g, top.outer_on));
                }
                stack.pop();
                group_of.pop();
                keep = true;
            }
            _ => {}
        }
        lines.push((line, keep, group));
    }
    let mut out = String::with_capacity(text.len());
    for (line, keep, group) in lines {
        let blank_directive =
            drop_settled && group.is_some_and(|(g, outer_on)| settled[g] || !outer_on);
        if keep && !blank_directive {
            out.push_str(line);
        } else if line.ends_with('\n') {
            out.push('\n');
        }
    }
    out
}

/// A line of [`resolve`]: the text, whether its branch is kept, and for a directive its
/// group's number and whether the text around the group was on.
type Line<'t> = (&'t str, bool, Option<(usize, bool)>);

/// A name a condition tests with `defined` (`defined(X)`, `defined X`).
static DEFINED_NAME: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"\bdefined\s*\(?\s*([A-Za-z_][A-Za-z0-9_]*)").expect("static regex")
});

/// One open `#if` group in [`active_text`].
struct Cond {
    /// The text around the group is on.
    outer_on: bool,
    /// The current branch is on (an unknown condition keeps it on).
    on: bool,
    /// Every condition of the group so far was known.
    known: bool,
    /// A branch so far was known to be taken: the later ones are off.
    taken: bool,
}

impl Cond {
    fn new(outer_on: bool, value: Option<bool>) -> Self {
        Cond {
            outer_on,
            on: value.unwrap_or(true),
            known: value.is_some(),
            taken: value == Some(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Host code as the compiler reads it: a settled `#ifdef` inside an expression leaves
    /// one expression (its directives blanked, lines kept); an unknown `#if` keeps its
    /// directives and both branches; directives inside an off branch go with it.
    #[test]
    fn settled_groups_lose_their_directives_and_unknown_ones_keep_them() {
        let t = "unsigned l = in_size\n#ifdef CUDA_8_0\n    + sizeof(int)\n#endif\n    ;\n\
                 #if WIDTH > 2\nint w = 4;\n#else\nint w = 2;\n#endif\n\
                 #ifdef GONE\n#if X\nint x;\n#endif\n#endif\n";
        let r = resolved_text(t, &|_| Some(false));
        assert_eq!(r.lines().count(), t.lines().count());
        assert_eq!(
            r,
            "unsigned l = in_size\n\n\n\n    ;\n\
             #if WIDTH > 2\nint w = 4;\n#else\nint w = 2;\n#endif\n\n\n\n\n\n"
        );
        let on = resolved_text(t, &|m| Some(m == "CUDA_8_0"));
        assert!(
            on.starts_with("unsigned l = in_size\n\n    + sizeof(int)\n\n    ;\n"),
            "{on}"
        );
        let known = resolved_text(
            "#define WIDTH 4\n#if WIDTH > 2\na\n#elif WIDTH > 1\nb\n#else\nc\n#endif\n",
            &|_| Some(false),
        );
        assert_eq!(known, "#define WIDTH 4\n\na\n\n\n\n\n\n");
        // A name of unknown state (the program defines it somewhere: an include guard,
        // a default under `#if !defined(NI)`) keeps its group as it is.
        let h = "#ifndef GEMM_H\n#define GEMM_H\n#if !defined(NI) && !defined(GONE)\n#define NI 512\n#endif\n#endif\n";
        let state = |m: &str| (!["GEMM_H", "NI"].contains(&m)).then_some(false);
        assert_eq!(resolved_text(h, &state), h);
        // active_text keeps every directive.
        assert!(active_text(t, &|_| false).contains("#ifdef CUDA_8_0\n\n#endif"));
    }

    #[test]
    fn branches_of_undefined_macros_are_off() {
        let t = "a = 1;\n#ifdef WIDE\na = 2;\n#else\na = 3;\n#endif\n#ifndef WIDE\nb = 1;\n#endif\n#if X > 2\nc = 1;\n#endif\n";
        let off = active_text(t, &|m| m == "NARROW");
        assert_eq!(off.lines().count(), t.lines().count());
        assert!(!off.contains("a = 2") && off.contains("a = 3") && off.contains("b = 1"));
        assert!(off.contains("c = 1"), "an #if expression keeps its branch");
        let on = active_text(t, &|m| m == "WIDE");
        assert!(on.contains("a = 2") && !on.contains("a = 3") && !on.contains("b = 1"));
    }

    #[test]
    fn if_conditions_over_stated_integer_macros_pick_their_branch() {
        // Written for this test, in the shape of a radix switch: one flag on, three off.
        let t = "#define R2 1\n#define R4 0\n#define R8 0\n#if R2\n#define R 2\n#endif\n#if (R4) // radix 4\n#define R 4\n#endif\n#if R8\n#define R 8\n#elif R4\n#define R 44\n#else\n#define R 88\n#endif\n#if defined(R2) && !R4\nint a = 1;\n#else\nint a = 2;\n#endif\n";
        let defined = |m: &str| ["R2", "R4", "R8", "R"].contains(&m);
        let a = active_text(t, &defined);
        assert_eq!(a.lines().count(), t.lines().count());
        for (want, has) in [
            ("#define R 2", true),
            ("#define R 4", false),
            ("#define R 8\n", false),
            ("#define R 44", false),
            ("#define R 88", true),
            ("int a = 1", true),
            ("int a = 2", false),
        ] {
            assert_eq!(a.contains(want), has, "{want}: {a}");
        }
        // A flag the text does not state (a -D flag) keeps both branches, as before.
        let u = "#if WIDE\nint w = 2;\n#else\nint w = 1;\n#endif\n";
        let a = active_text(u, &|_| false);
        assert!(a.contains("w = 2") && a.contains("w = 1"));
        // A flag defined twice has no one value: both branches stay.
        let twice = "#define F 0\n#ifdef X\n#define F 1\n#endif\n#if F\nint f = 1;\n#endif\n";
        assert!(active_text(twice, &|m| m == "F").contains("int f = 1"));
    }

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
            // The whole of C's grammar for #if: ternaries, shifts, bit operators, hex,
            // and && / || that stop at a known answer.
            assert_eq!(
                eval("R16 ? WIDE : N >> 7 == 0x2 && (N & 1) == 0", m),
                Some(true)
            );
            assert_eq!(eval("R16 && WIDE", m), Some(false));
            assert_eq!(eval("!R16 || WIDE", m), Some(true));
        });
    }

    #[test]
    fn unknown_names_and_syntax_leave_the_condition_unknown() {
        let defs = [("F", None), ("R2", Some(1))];
        with(&defs, |m| {
            assert_eq!(eval("WIDE", m), None, "a -D flag the code does not state");
            assert_eq!(eval("F", m), None, "defined, but not as an integer");
            assert_eq!(eval("R2 && WIDE", m), None);
            assert_eq!(eval("R2 > 0.5", m), None, "no floats in #if");
            assert_eq!(eval("f(R2)", m), None);
            assert_eq!(eval("(R2", m), None);
            assert_eq!(eval("R2 / 0", m), None);
            assert_eq!(eval("", m), None);
        });
    }

    #[test]
    fn one_reader_gives_every_define_object_like_or_function_like() {
        let text = "#define A 16 // tile\n  #  define SQ(x, y) ((x)*(y))\n#define EMPTY\n#define AB(q) q\nint define_me = 1;\n";
        let all: Vec<Define> = defines(text).collect();
        assert_eq!(
            all.iter().map(|d| d.name).collect::<Vec<_>>(),
            vec!["A", "SQ", "EMPTY", "AB"]
        );
        assert_eq!(all[1].params, Some("x, y"));
        assert_eq!(all[1].param_names(), vec!["x", "y"]);
        assert_eq!(all[1].body, "((x)*(y))");
        assert_eq!(define_bodies(text, "A"), vec!["16 // tile"]);
        assert_eq!(define_bodies(text, "EMPTY"), vec![""]);
        assert!(
            define_bodies(text, "SQ").is_empty(),
            "function-like is not object-like"
        );
        assert!(define_bodies(text, "AB").is_empty() && define_bodies(text, "B").is_empty());
        assert_eq!(
            function_macro(text, "SQ"),
            Some((vec!["x".into(), "y".into()], "((x)*(y))".into()))
        );
        assert!(function_macro(text, "A").is_none());
        assert!(
            is_defined(text, "SQ") && is_defined(text, "EMPTY") && !is_defined(text, "define_me")
        );
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
