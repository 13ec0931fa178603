//! Template arguments from a launch's name expression: `reduce<int, 256>` binds the
//! kernel's `class T, unsigned int blockSize` to `T = int`, `blockSize = 256`, so a
//! parameter `T *g_idata` is checked as `int *` and the harness needs no `c_type`.

use crate::cuda::lex;
use crate::record::Param;

/// The name a template parameter declares: `class T` → `T`, `unsigned int blockSize = 4`
/// → `blockSize`, `typename... Ts` → `Ts`.
fn declared_name(param: &str) -> Option<&str> {
    let head = param.split('=').next().unwrap_or("").trim();
    let name = head
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()?;
    (!name.is_empty() && !name.starts_with(|c: char| c.is_ascii_digit())).then_some(name)
}

/// Split a parameter list at commas outside `<>`, `()`, `[]`.
fn top_level_commas(s: &str) -> Vec<String> {
    let mut out: Vec<String> = lex::split_top_level_commas(s, b"<([", b">)]")
        .into_iter()
        .map(|p| p.trim().to_string())
        .collect();
    // An empty last piece (`a, b,`) is no argument.
    if out.last().is_some_and(String::is_empty) {
        out.pop();
    }
    out
}

/// The template arguments written in a name expression (`k<float, 16>` → `float`, `16`),
/// read by the front end ([`crate::cuda::host::template_arguments`]); empty when it has
/// none.
pub fn launch_args(name_expr: &str) -> Vec<String> {
    let (Some(a), Some(z)) = (name_expr.find('<'), name_expr.rfind('>')) else {
        return Vec::new();
    };
    if z <= a {
        return Vec::new();
    }
    crate::cuda::host::template_arguments(&name_expr[a..=z]).unwrap_or_default()
}

/// Template parameter name → argument text, by position (parameters left to their
/// defaults stay unbound).
pub fn bindings(template_params: &[String], name_expr: &str) -> Vec<(String, String)> {
    template_params
        .iter()
        .zip(launch_args(name_expr))
        .filter_map(|(p, a)| Some((declared_name(p)?.to_string(), a)))
        .collect()
}

/// A C type with bound template parameters replaced by their arguments, whole words
/// only (`const T *` with `T = int` → `const int *`; `Tx` stays).
pub fn substitute(ty: &str, binds: &[(String, String)]) -> String {
    if binds.is_empty() {
        return ty.to_string();
    }
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        match binds.iter().find(|(n, _)| n == word) {
            Some((_, v)) => out.push_str(v),
            None => out.push_str(word),
        }
        word.clear();
    };
    for c in ty.chars() {
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

/// `float* out, const float* inp, int N` → parameters (the last identifier of each is
/// its name; a lone type keeps an empty name).
pub fn split_params(list: &str) -> Vec<Param> {
    top_level_commas(list)
        .into_iter()
        .filter(|p| !p.is_empty() && p != "void")
        .map(|p| {
            let p = p.split('=').next().unwrap_or("").trim().to_string();
            let cut = p
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            let (ty, name) = p.split_at(cut);
            if ty.trim().is_empty() {
                Param {
                    name: String::new(),
                    ty: name.to_string(),
                }
            } else {
                Param {
                    name: name.to_string(),
                    ty: ty.split_whitespace().collect::<Vec<_>>().join(" "),
                }
            }
        })
        .collect()
}

/// A kernel parameter as the launch instantiates it.
pub fn bind_param(p: &Param, binds: &[(String, String)]) -> Param {
    Param {
        name: p.name.clone(),
        ty: substitute(&p.ty, binds),
    }
}

/// When `ty` still names one of the kernel's template parameters after binding, a hint
/// saying how to bind it.
pub fn unbound_hint(ty: &str, template_params: &[String], launch: &str) -> Option<String> {
    let base = super::c_base_type(ty);
    let name = template_params
        .iter()
        .filter_map(|p| declared_name(p))
        .find(|n| base.split_whitespace().any(|w| w == *n))?;
    Some(format!(
        "`{name}` is a template parameter of the kernel: name the instantiation in the launch (`{}<…>`) or set c_type on the arg",
        super::validate::launch_base(launch)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tp(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn launch_names_bind_type_and_value_parameters() {
        let params = tp(&["class T", "unsigned int blockSize", "bool nIsPow2"]);
        assert_eq!(
            bindings(&params, "reduce6<int, 256, true>"),
            [
                ("T".to_string(), "int".to_string()),
                ("blockSize".to_string(), "256".to_string()),
                ("nIsPow2".to_string(), "true".to_string())
            ]
        );
        // Fewer arguments than parameters (defaults): only the written ones bind.
        let b = bindings(&tp(&["typename T", "int N = 4"]), "k<float2>");
        assert_eq!(b, [("T".to_string(), "float2".to_string())]);
        // Nested template arguments stay whole.
        assert_eq!(
            launch_args("k<pair<int, float>, 3>"),
            ["pair<int, float>", "3"]
        );
        assert!(bindings(&params, "reduce6").is_empty());
        // A comparison in parentheses is one argument.
        assert_eq!(launch_args("k<(a > b), 2>"), ["(a > b)", "2"]);
    }

    #[test]
    fn substitution_replaces_whole_words_only() {
        let b = vec![("T".to_string(), "int".to_string())];
        assert_eq!(
            substitute("const T *__restrict__", &b),
            "const int *__restrict__"
        );
        assert_eq!(substitute("Tx *", &b), "Tx *");
        assert_eq!(substitute("T*", &b), "int*");
        let p = bind_param(
            &Param {
                name: "g_idata".into(),
                ty: "T *".into(),
            },
            &b,
        );
        assert_eq!(p.ty, "int *");
    }

    #[test]
    fn unbound_template_parameter_gets_a_hint() {
        let params = tp(&["class T"]);
        let h = unbound_hint("T *", &params, "reduce0").unwrap();
        assert!(h.contains("reduce0<…>"), "{h}");
        assert_eq!(unbound_hint("float *", &params, "reduce0"), None);
    }
}
