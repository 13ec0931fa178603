//! Template and struct rules for `harness infer`:
//! - a launch inside a host function template (`template <int W> void launch(…) {
//!   k<W><<<g, W>>>(…); }`) takes the template's values from the first explicit call
//!   (`launch<192>(…)`) or explicit instantiation (`template void launch<float>(…);`) in the
//!   host texts, in file order, and substitutes them in the function's text and the launch;
//! - a template kernel launched without template arguments (`k<<<g, b>>>(d_x)`) gets its
//!   type parameters deduced from the declared types of the arguments passed
//!   (`float *d_x` for a `T *` parameter), and the launch names the instance (`k<float>`);
//! - a struct whose fields are all one scalar type (`struct P { float x; float y; }`) is a
//!   buffer of that scalar, `fields` elements per struct.
//!
//! Each rule is one function; [`instantiate`] applies the first two to a pair before
//! inference proper.

use super::infer_host::Host;
use super::template;
use super::{c_base_type, ElemType};
use crate::cuda::structs::{self, Member, StructDef};
use crate::record::{KernelUnit, Pair, Param};
use std::fmt::Write as _;

/// A top-level function around a line of host text: its template parameter declarations
/// (empty for a plain function), name, parameters, and byte span (from its head, including
/// `template <…>`, to its closing `}`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostFn {
    pub template_params: Vec<String>,
    pub name: String,
    pub params: Vec<Param>,
    pub span: (usize, usize),
}

/// The top-level function whose body holds 1-based `line` of `text` (comments removed), from
/// the host index ([`crate::cuda::host`]): namespaces, `extern "C"` blocks and classes are
/// seen through; a K&R head has no typed parameters and gives none.
pub fn enclosing_fn(text: &str, line: u32) -> Option<HostFn> {
    let fns = crate::cuda::host::functions_cached(text);
    let f = crate::cuda::host::function_at(&fns, line)?;
    Some(HostFn {
        template_params: f.template_params.clone(),
        name: f.name.clone(),
        params: template::split_params(f.params_text.as_deref()?),
        span: f.span,
    })
}

/// One explicit instance of a function template found in host text: `f<192, 8>(…)` or
/// `template void f<float>(…);`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance {
    /// The template arguments as written.
    pub args: Vec<String>,
    /// Index of the host text (0: the launch file) and 1-based line.
    pub text: usize,
    pub line: u32,
}

/// Every explicit instance of function template `name` in `texts` (calls `name<…>(…)`,
/// instantiations, specializations; [`crate::cuda::host::template_instances`]), in file
/// order (texts in the order given).
pub fn explicit_instances<'t>(
    texts: impl IntoIterator<Item = &'t str>,
    name: &str,
) -> Vec<Instance> {
    let texts = texts.into_iter().enumerate();
    texts
        .flat_map(|(ti, t)| {
            let found = crate::cuda::host::template_instances(t, name).into_iter();
            found.map(move |i| Instance {
                args: i.args,
                text: ti,
                line: i.line,
            })
        })
        .collect()
}

/// Whether a template parameter declaration is a type (`typename T`, `class T`).
fn is_type_param(decl: &str) -> bool {
    let d = decl.trim_start();
    d.starts_with("typename") || d.starts_with("class")
}

/// The name a template parameter declares (`int WIN_SX` → `WIN_SX`), and its default.
fn param_name(decl: &str) -> (String, Option<String>) {
    let (head, default) = match decl.split_once('=') {
        Some((h, d)) => (h, Some(d.trim().to_string())),
        None => (decl, None),
    };
    let name = head
        .trim()
        .rsplit(|c: char| !(c.is_alphanumeric() || c == '_'))
        .next()
        .unwrap_or("")
        .to_string();
    (name, default)
}

/// Template parameter name → value, for one instance: a type parameter takes an element
/// type (`float`), a value parameter an integer the host code evaluates (`192`, a
/// `#define`); parameters the instance leaves out take their defaults. Err: why this
/// instance does not give concrete values.
pub fn bind_instance(
    params: &[String],
    args: &[String],
    host: &Host,
) -> Result<Vec<(String, String)>, String> {
    let mut binds = Vec::new();
    for (k, decl) in params.iter().enumerate() {
        let (name, default) = param_name(decl);
        let Some(a) = args.get(k).cloned().or(default) else {
            return Err(format!("no argument for template parameter `{name}`"));
        };
        let v = if is_type_param(decl) {
            if ElemType::from_c_type(&a).is_none() {
                return Err(format!("`{a}` for `{name}` is not an element type"));
            }
            a
        } else if matches!(a.trim(), "true" | "false") {
            a.trim().to_string()
        } else {
            host.int_value(&a)
                .map_err(|why| format!("`{a}` for `{name}`: {why}"))?
                .to_string()
        };
        binds.push((name, v));
    }
    if args.len() > params.len() {
        return Err("more template arguments than parameters".into());
    }
    Ok(binds)
}

/// The declared type of `var` in the function `f` of `text`: a parameter of the function,
/// else the last declaration `T *var` / `T var` in its body whose base type is an element
/// type (other declarations say nothing this rule can use), from the host index.
pub fn declared_type(f: &HostFn, text: &str, var: &str) -> Option<String> {
    if let Some(p) = f.params.iter().find(|p| p.name == var) {
        return Some(p.ty.clone());
    }
    crate::cuda::host_flow::Flow::of(text)
        .declarations(var, f.span)
        .into_iter()
        .flatten()
        .rfind(|ty| ElemType::from_c_type(&c_base_type(ty)).is_some())
}

/// Deduce a template kernel's type parameters from the launch's arguments: a parameter
/// `T *p` (or `T p`) passed a plain name declared `float *x` in the launching function
/// gives `T = float`. All of the kernel's template parameters must be deduced, consistently,
/// or the result is None.
pub fn deduce_kernel_args(
    kernel_template: &[String],
    kernel_params: &[Param],
    launch_args: &[String],
    f: &HostFn,
    text: &str,
) -> Option<Vec<String>> {
    let mut out = Vec::new();
    for decl in kernel_template {
        if !is_type_param(decl) {
            return None;
        }
        let (name, _) = param_name(decl);
        let mut value: Option<String> = None;
        for (p, a) in kernel_params.iter().zip(launch_args) {
            if c_base_type(&p.ty) != name {
                continue;
            }
            let a = a.trim();
            if !super::is_ident(a) {
                continue;
            }
            let Some(ty) = declared_type(f, text, a) else {
                continue;
            };
            // The pointer depth must agree (`T *` takes `float *`, not `float **`).
            if ty.matches('*').count() != p.ty.matches('*').count() {
                return None;
            }
            let base = c_base_type(&ty);
            ElemType::from_c_type(&base)?;
            match &value {
                Some(v) if *v != base => return None,
                _ => value = Some(base),
            }
        }
        out.push(value?);
    }
    Some(out)
}

/// A pair instantiated for inference: its units' launches (and the launch file's function
/// text) with template values substituted, and what was taken, as comment lines.
#[derive(Debug, Clone)]
pub struct Instantiation {
    pub pair: Pair,
    pub host: Host,
    pub note: String,
}

/// Apply the template rules to a pair (see the module comment). None when no rule applies.
pub fn instantiate(pair: &Pair, host: &Host) -> Option<Instantiation> {
    let site = super::draft::site_for(&pair.fast)?.clone();
    let mut note = String::new();
    let mut host = host.clone();
    let mut host_binds: Vec<(String, String)> = Vec::new();
    let f = enclosing_fn(&host.file, host.launch_line);
    if let Some(f) = f.as_ref().filter(|f| !f.template_params.is_empty()) {
        let instances = explicit_instances(host.texts(), &f.name);
        let mut taken = None;
        let mut skipped = Vec::new();
        for inst in &instances {
            match bind_instance(&f.template_params, &inst.args, &host) {
                Ok(b) if taken.is_none() => taken = Some((inst.clone(), b)),
                Ok(_) => skipped.push(format!("<{}>", inst.args.join(", "))),
                Err(_) => {}
            }
        }
        match taken {
            Some((inst, b)) => {
                let file = if inst.text == 0 {
                    site.path.clone()
                } else {
                    format!("another file of {}'s folder", site.path)
                };
                writeln!(
                    note,
                    "# template values: the launch is in function template {}, taken as {}<{}> from {} line {} (the first instance in file order; a `sizeof` of these parameters elsewhere in the host code is read with the same values){}",
                    f.name,
                    f.name,
                    inst.args.join(", "),
                    file,
                    inst.line,
                    if skipped.is_empty() {
                        String::new()
                    } else {
                        format!("; other instances exist: {}", skipped.join(", "))
                    }
                )
                .expect("string");
                host_binds = b;
                host.type_binds = host_binds.clone();
            }
            None => {
                writeln!(
                    note,
                    "# template values: the launch is in function template {}, and no explicit instance with concrete values was found",
                    f.name
                )
                .expect("string");
            }
        }
    }
    let mut file = host.file.clone();
    if let (Some(f), false) = (&f, host_binds.is_empty()) {
        let (a, z) = f.span;
        file = format!(
            "{}{}{}",
            &file[..a],
            template::substitute(&file[a..z], &host_binds),
            &file[z..]
        );
    }
    // The launching function as instantiated (for declared argument types).
    let fi = enclosing_fn(&file, host.launch_line);
    let mut out = pair.clone();
    let mut changed = !host_binds.is_empty();
    let mut units: Vec<&mut KernelUnit> = vec![&mut out.fast];
    if let Some(s) = out.slow.unit_mut() {
        units.push(s);
    }
    let fi_span = fi.as_ref().map(|f| f.span);
    for u in units {
        // The pair's launch, else the unit's own launch in the same function (a slow kernel
        // launched beside the fast one: HeCBench convolution3D's `conv3d_s1` … `s3`).
        let Some(idx) = u
            .launch_sites
            .iter()
            .position(|s| s.kernel == site.kernel && s.line == site.line && s.path == site.path)
            .or_else(|| {
                u.launch_sites.iter().position(|s| {
                    s.kernel == u.kernel
                        && s.path == site.path
                        && fi_span.is_some()
                        && enclosing_fn(&file, s.line).map(|g| g.span) == fi_span
                })
            })
        else {
            continue;
        };
        let s = &mut u.launch_sites[idx];
        let before = s.template_args.clone();
        if !host_binds.is_empty() {
            let sub = |t: &str| template::substitute(t, &host_binds);
            s.template_args = s.template_args.as_deref().map(sub);
            s.grid = sub(&s.grid);
            s.block = sub(&s.block);
            s.shared_mem = s.shared_mem.as_deref().map(sub);
            s.args = s.args.iter().map(|a| sub(a)).collect();
            for d in s.definitions.values_mut() {
                *d = sub(d);
            }
        }
        if u.template_params.is_empty() {
            continue;
        }
        if s.template_args.is_none() {
            let deduced = fi.as_ref().and_then(|fi| {
                deduce_kernel_args(&u.template_params, &u.params, &s.args, fi, &file)
            });
            if let Some(args) = deduced {
                writeln!(
                    note,
                    "# template values: {}<{}>, deduced from the declared types of the arguments the launch passes",
                    u.kernel,
                    args.join(", ")
                )
                .expect("string");
                s.template_args = Some(format!("<{}>", args.join(", ")));
            }
        }
        // The kernel's parameters as the instance declares them (`T *` → `float *`).
        if let Some(ta) = s.template_args.clone() {
            let binds = template::bindings(&u.template_params, &format!("k{ta}"));
            let params: Vec<Param> = u
                .params
                .iter()
                .map(|p| template::bind_param(p, &binds))
                .collect();
            if params != u.params {
                u.params = params;
                changed = true;
            }
            changed |= s.template_args != before;
        }
    }
    host.set_file(file);
    changed.then_some(Instantiation {
        pair: out,
        host,
        note,
    })
}

/// A struct whose fields are all one scalar type, as a buffer element: the scalar type and
/// the number of scalars per struct. `typedef struct tag { float a; float b; } Name;`,
/// `struct Name { float a, b; float c[2]; };` (arrays of literal length), read from the
/// first text that defines it ([`crate::cuda::structs`]). Err: why not (pointers, mixed
/// or non-scalar types, an alignment attribute, a base class, no definition found).
pub fn struct_of_scalars<'t>(
    name: &str,
    texts: impl IntoIterator<Item = &'t str>,
) -> Result<(ElemType, usize), String> {
    for t in texts {
        if let Some(def) = structs::definition_of(t, name) {
            return scalar_fields(&def).map_err(|why| format!("struct `{name}`: {why}"));
        }
    }
    Err(format!("no definition of struct `{name}` found"))
}

/// The scalar type and count of a struct's fields, all of one element type.
fn scalar_fields(def: &StructDef) -> Result<(ElemType, usize), String> {
    if !def.attributes.is_empty() {
        return Err("it has an alignment attribute, so its size may include padding".into());
    }
    if let Some(b) = &def.bases {
        return Err(format!("it has base classes (`{b}`)"));
    }
    let mut elem: Option<ElemType> = None;
    let mut count = 0usize;
    for m in &def.members {
        let (ty, declarators) = match m {
            Member::Field { ty, declarators } => (ty, declarators),
            Member::Other(decl) => return Err(format!("field `{decl}` is not a scalar")),
        };
        let e = ElemType::from_c_type(ty)
            .ok_or_else(|| format!("field of type `{ty}`: not a scalar type"))?;
        match elem {
            Some(x) if x != e => {
                return Err(format!(
                    "fields of different types ({} and {})",
                    x.name(),
                    e.name()
                ))
            }
            _ => elem = Some(e),
        }
        for (name, extents) in declarators {
            let mut n = 1usize;
            for ext in extents {
                n *= ext
                    .trim()
                    .parse::<usize>()
                    .map_err(|_| format!("field `{name}` has an extent that is not a literal"))?;
            }
            count += n;
        }
    }
    match elem {
        Some(e) => Ok((e, count)),
        None => Err("it has no fields".into()),
    }
}

/// A struct buffer's length in scalars, as host text, from its byte size: a
/// `sizeof(<the struct>)` factor becomes `fields` (`n * sizeof(P)` → `(n) * 2`), a
/// `sizeof(<the scalar>)` factor is dropped, other byte counts are divided by the scalar
/// size.
pub fn struct_len_text(bytes: &str, names: &[&str], scalar: ElemType, fields: usize) -> String {
    let compact: String = bytes.split_whitespace().collect();
    let of_struct = names.iter().any(|n| {
        compact.contains(&format!("sizeof({n})")) || compact.contains(&format!("sizeof(struct{n})"))
    });
    match super::infer_host::strip_sizeof(bytes) {
        Some(n) if of_struct => format!("({n}) * {fields}"),
        Some(n) if compact.contains(&format!("sizeof({})", scalar_c_name(scalar))) => n,
        _ => format!("({}) / {}", bytes.trim(), scalar.size_of()),
    }
}

fn scalar_c_name(e: ElemType) -> &'static str {
    match e {
        ElemType::F32 => "float",
        ElemType::F64 => "double",
        ElemType::I32 => "int",
        _ => "\u{0}",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{LaunchSite, PairRule, Slow};

    const HOST: &str = r#"#include <cstdio>
#define TILE 32
namespace img {
  template <int BX, int BY>
  void launchBlur(float *src, float *dst, int w, int h) {
    dim3 g((w + BX - 1) / BX, (h + BY - 1) / BY);
    blur<BX, BY><<<g, BX>>>(src, dst, w, h);
  }

  void blurAll(float *src, float *dst, int w, int h) {
    if (w > 1000) {
      launchBlur<TILE, 4>(src, dst, w, h);
    } else {
      launchBlur<16, 4>(src, dst, w, h);
    }
  }
}
"#;

    fn host(text: &str, line: u32) -> Host {
        Host {
            file: text.to_string(),
            launch_line: line,
            ..Host::default()
        }
    }

    #[test]
    fn the_enclosing_function_template_is_found_through_namespaces() {
        let f = enclosing_fn(HOST, 7).expect("found");
        assert_eq!(f.name, "launchBlur");
        assert_eq!(f.template_params, vec!["int BX", "int BY"]);
        assert_eq!(f.params[0].name, "src");
        assert_eq!(f.params[0].ty, "float *");
        assert!(HOST[f.span.0..f.span.1].starts_with("template <int BX"));
        assert!(HOST[f.span.0..f.span.1].ends_with('}'));
        let g = enclosing_fn(HOST, 12).expect("found");
        assert_eq!(g.name, "blurAll");
        assert!(g.template_params.is_empty());
        assert_eq!(enclosing_fn(HOST, 2), None);
    }

    #[test]
    fn explicit_calls_and_instantiations_are_found_in_file_order() {
        let inst = explicit_instances([HOST], "launchBlur");
        let args: Vec<_> = inst.iter().map(|i| i.args.join(",")).collect();
        assert_eq!(args, vec!["TILE,4", "16,4"]);
        assert_eq!(inst[0].line, 12);
        let other = "template void fill<float>(float *p, int n);\ntemplate void fill<int>(int *p, int n);\nvoid fill2(int x) { fill (x); }";
        let inst = explicit_instances(["", other], "fill");
        assert_eq!(inst.len(), 2);
        assert_eq!(
            (inst[0].text, inst[0].line, inst[0].args.clone()),
            (1, 1, vec!["float".to_string()])
        );
        // `fill2` and a call without template arguments are not instances.
        assert_eq!(explicit_instances([other], "fill2"), vec![]);
    }

    #[test]
    fn instances_bind_values_types_and_defaults() {
        let h = host(HOST, 7);
        let params = vec!["int BX".to_string(), "int BY = 2".to_string()];
        assert_eq!(
            bind_instance(&params, &["TILE".into(), "4".into()], &h),
            Ok(vec![("BX".into(), "32".into()), ("BY".into(), "4".into())])
        );
        assert_eq!(
            bind_instance(&params, &["8".into()], &h),
            Ok(vec![("BX".into(), "8".into()), ("BY".into(), "2".into())])
        );
        // A host variable is not a template value this rule can take.
        assert!(bind_instance(&params, &["width".into()], &h).is_err());
        let tp = vec!["typename T".to_string()];
        assert_eq!(
            bind_instance(&tp, &["double".into()], &h),
            Ok(vec![("T".into(), "double".into())])
        );
        assert!(bind_instance(&tp, &["Pixel".into()], &h).is_err());
        let bp = vec!["bool CHECKED".to_string()];
        assert_eq!(
            bind_instance(&bp, &["false".into()], &h),
            Ok(vec![("CHECKED".into(), "false".into())])
        );
    }

    fn site(
        kernel: &str,
        line: u32,
        targs: Option<&str>,
        grid: &str,
        block: &str,
        args: &[&str],
        defs: &[(&str, &str)],
    ) -> LaunchSite {
        LaunchSite {
            path: "b/main.cu".into(),
            line,
            kernel: kernel.into(),
            template_args: targs.map(String::from),
            grid: grid.into(),
            block: block.into(),
            shared_mem: None,
            stream: None,
            args: args.iter().map(|a| a.to_string()).collect(),
            definitions: defs
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
        }
    }

    /// A pending pair whose fast unit is `kernel(params)` (type, name), a template over
    /// `tparams`, launched at `site`.
    fn pair(kernel: &str, tparams: &[&str], params: &[(&str, &str)], site: LaunchSite) -> Pair {
        let mut u = KernelUnit::for_test(kernel, params, "");
        u.path = "b/main.cu".into();
        u.template_params = tparams.iter().map(|s| s.to_string()).collect();
        u.launch_sites = vec![site];
        Pair::new(Slow::PENDING, u, PairRule::Name)
    }

    #[test]
    fn a_slow_kernel_launched_beside_the_fast_one_is_instantiated_too() {
        // cuda-samples reduction: `reduce<T>` launches each variant by a switch; the first
        // instance `reduce<int>` gives both launches `T = int`.
        let text = "template <class T>\nvoid reduce(int n, T *d_i, T *d_o) {\n  switch (k) {\n  case 0: reduce0<T><<<n / 256, 256>>>(d_i, d_o, n); break;\n  case 1: reduce1<T><<<n / 256, 256>>>(d_i, d_o, n); break;\n  }\n}\ntemplate void reduce<int>(int n, int *d_i, int *d_o);\n";
        let params: &[(&str, &str)] = &[
            ("T *", "g_idata"),
            ("T *", "g_odata"),
            ("unsigned int", "n"),
        ];
        let args = ["d_i", "d_o", "n"];
        let fast = site("reduce1", 5, Some("<T>"), "n / 256", "256", &args, &[]);
        let mut p = pair("reduce1", &["class T"], params, fast);
        let mut slow = KernelUnit::for_test("reduce0", params, "");
        slow.path = "b/main.cu".into();
        slow.template_params = vec!["class T".into()];
        slow.launch_sites = vec![site(
            "reduce0",
            4,
            Some("<T>"),
            "n / 256",
            "256",
            &args,
            &[],
        )];
        p.slow = Slow::Natural {
            unit: Box::new(slow),
        };
        let inst = instantiate(&p, &host(text, 5)).expect("a rule applies");
        let s = inst.pair.slow.unit().expect("slow");
        assert_eq!(s.launch_sites[0].template_args.as_deref(), Some("<int>"));
        assert_eq!(s.params[0].ty, "int *");
        assert_eq!(inst.pair.fast.params[0].ty, "int *");
        // A slow launch in another function is left as it is.
        let other = "template <class T>\nvoid reduce(int n, T *d_i, T *d_o) {\n  reduce1<T><<<n / 256, 256>>>(d_i, d_o, n);\n}\ntemplate <class T>\nvoid g(int n, T *d_i, T *d_o) {\n  reduce0<T><<<n / 256, 256>>>(d_i, d_o, n);\n}\ntemplate void reduce<int>(int n, int *d_i, int *d_o);\n";
        let mut q = p.clone();
        if let Some(u) = q.slow.unit_mut() {
            u.launch_sites[0].line = 7;
        }
        q.fast.launch_sites[0].line = 3;
        let inst = instantiate(&q, &host(other, 3)).expect("a rule applies");
        assert_eq!(inst.pair.fast.params[0].ty, "int *");
        let slow_args = inst
            .pair
            .slow
            .unit()
            .and_then(|u| u.launch_sites[0].template_args.clone());
        assert_eq!(slow_args.as_deref(), Some("<T>"));
    }

    #[test]
    fn launches_in_function_templates_take_the_first_instance() {
        let st = site(
            "blur",
            7,
            Some("<BX, BY>"),
            "g",
            "BX",
            &["src", "dst", "w", "h"],
            &[("g", "dim3 g((w + BX - 1) / BX, (h + BY - 1) / BY)")],
        );
        let p = pair(
            "blur",
            &["int BX", "int BY"],
            &[
                ("const float *", "src"),
                ("float *", "dst"),
                ("int", "w"),
                ("int", "h"),
            ],
            st,
        );
        let inst = instantiate(&p, &host(HOST, 7)).expect("a rule applies");
        let s = &inst.pair.fast.launch_sites[0];
        assert_eq!(s.template_args.as_deref(), Some("<32, 4>"));
        assert_eq!(s.block, "32");
        assert_eq!(
            s.definitions["g"],
            "dim3 g((w + 32 - 1) / 32, (h + 4 - 1) / 4)"
        );
        assert!(
            inst.host.file.contains("dim3 g((w + 32 - 1) / 32"),
            "{}",
            inst.host.file
        );
        // Text outside the function template is unchanged (same line count).
        assert_eq!(inst.host.file.lines().count(), HOST.lines().count());
        assert!(inst.note.contains("launchBlur<TILE, 4>"), "{}", inst.note);
        assert!(
            inst.note.contains("other instances exist: <16, 4>"),
            "{}",
            inst.note
        );
        // Without any explicit instance nothing is substituted, and the note says why.
        let bare = HOST
            .replace("launchBlur<TILE, 4>", "launchBlur")
            .replace("launchBlur<16, 4>", "launchBlur");
        assert!(instantiate(&p, &host(&bare, 7)).is_none());
    }

    const SPLIT: &[(&str, &str)] = &[("T *", "r"), ("unsigned char *", "src"), ("int", "n")];

    #[test]
    fn template_kernels_take_types_from_the_arguments_declared_types() {
        let text = "template <typename T>\n__global__ void split(T *r, unsigned char *src, int n);\n\ntemplate <typename T>\nvoid toPlanes(T *r, unsigned char *img, int n) {\n  unsigned char *d_src;\n  split<<<n / 256, 256>>>(r, d_src, n);\n}\ntemplate void toPlanes<float>(float *r, unsigned char *img, int n);\ntemplate void toPlanes<int>(int *r, unsigned char *img, int n);\n";
        let st = site(
            "split",
            7,
            None,
            "n / 256",
            "256",
            &["r", "d_src", "n"],
            &[],
        );
        let p = pair("split", &["typename T"], SPLIT, st);
        let inst = instantiate(&p, &host(text, 7)).expect("a rule applies");
        let f = &inst.pair.fast;
        assert_eq!(f.launch_sites[0].template_args.as_deref(), Some("<float>"));
        assert_eq!(f.params[0].ty, "float *");
        assert!(inst.note.contains("split<float>, deduced"), "{}", inst.note);
        assert!(
            inst.note.contains("other instances exist: <int>"),
            "{}",
            inst.note
        );
        // A plain launching function with a local of a known type deduces too.
        let plain = "void go(int n) {\n  double *d_x = 0;\n  split<<<1, 1>>>(d_x, 0, n);\n}\n";
        let st = site("split", 3, None, "1", "1", &["d_x", "0", "n"], &[]);
        let inst = instantiate(&pair("split", &["typename T"], SPLIT, st), &host(plain, 3))
            .expect("deduced");
        assert_eq!(inst.pair.fast.params[0].ty, "double *");
        // One declaration of several pointers (HeCBench convolution3D's `T *dX, *dW, *dY;`,
        // as instantiated) types each of them.
        let several =
            "void go(int n) {\n  int *d_a, *d_x, d_n = 0;\n  split<<<1, 1>>>(d_x, 0, n);\n}\n";
        let st = site("split", 3, None, "1", "1", &["d_x", "0", "n"], &[]);
        let inst = instantiate(
            &pair("split", &["typename T"], SPLIT, st),
            &host(several, 3),
        )
        .expect("deduced");
        assert_eq!(inst.pair.fast.params[0].ty, "int *");
        // An argument whose type is not visible leaves the kernel as it is.
        let opaque =
            "void go(Img *im, int n) {\n  auto p = im->data;\n  split<<<1, 1>>>(p, 0, n);\n}\n";
        let st = site("split", 3, None, "1", "1", &["p", "0", "n"], &[]);
        assert!(
            instantiate(&pair("split", &["typename T"], SPLIT, st), &host(opaque, 3)).is_none()
        );
    }

    #[test]
    fn structs_of_one_scalar_type_are_buffers_of_that_scalar() {
        let src = "typedef struct pt_s {\n  float x;\n  float y, z;\n} Point;\nstruct Cell { double v[2][2]; double w; };\nstruct Mixed { float a; int b; };\nstruct Ptr { float *a; float b; };\nstruct __align__(16) Wide { float a, b, c; };\n";
        assert_eq!(struct_of_scalars("Point", [src]), Ok((ElemType::F32, 3)));
        assert_eq!(struct_of_scalars("Cell", [src]), Ok((ElemType::F64, 5)));
        assert!(struct_of_scalars("Mixed", [src])
            .unwrap_err()
            .contains("different types"));
        assert!(struct_of_scalars("Ptr", [src])
            .unwrap_err()
            .contains("not a scalar"));
        assert!(struct_of_scalars("Wide", [src])
            .unwrap_err()
            .contains("alignment"));
        assert!(struct_of_scalars("Nowhere", [src])
            .unwrap_err()
            .contains("no definition"));
    }

    #[test]
    fn struct_lengths_count_scalars() {
        let names = ["Point", "pt_s"];
        assert_eq!(
            struct_len_text("sizeof(Point) * n", &names, ElemType::F32, 3),
            "(n) * 3"
        );
        assert_eq!(
            struct_len_text("n * sizeof(struct pt_s)", &names, ElemType::F32, 3),
            "(n) * 3"
        );
        assert_eq!(
            struct_len_text("n * sizeof(float)", &names, ElemType::F32, 3),
            "n"
        );
        assert_eq!(
            struct_len_text("bytes", &names, ElemType::F32, 3),
            "(bytes) / 4"
        );
    }
}
