//! Tests of the harness model, validation, resolution and lookup.

use super::locate::{resolve_alias, type_matches};
use super::*;

/// A unit with just what `check_against` reads.
pub(crate) fn unit(kernel: &str, params: &[(&str, &str)]) -> KernelUnit {
    KernelUnit::for_test(kernel, params, "")
}

pub(crate) const SAXPY: &str = r#"
description = "y = a*x + y"
[sizes]
n = 4096
[[size_sets]]
name = "small"
n = 1000
[[size_sets]]
name = "large"
[derived]
threads = "256"
[[args]]
name = "n"
type = "i32"
value = "n"
[[args]]
name = "a"
type = "f32"
value = 2.5
[[args]]
name = "x"
type = "f32"
len = "n"
init = { kind = "uniform", lo = -1.0, hi = 1.0 }
role = "in"
[[args]]
name = "y"
type = "f32"
len = "n"
init = { kind = "normal", mean = 0.0, std = 1.0 }
role = "inout"
rtol = 1e-5
[[launch]]
kernel = "saxpy"
grid = "ceil_div(n, threads)"
block = "threads"
"#;

fn saxpy_unit() -> KernelUnit {
    unit(
        "saxpy",
        &[
            ("int", "n"),
            ("float", "a"),
            ("const float *__restrict__", "x"),
            ("float *", "y"),
        ],
    )
}

pub(crate) fn err_of(text: &str) -> String {
    parse(text, "h.toml").unwrap_err().to_string()
}

/// Size set `set` of harness `text`, resolved for an H100.
pub(crate) fn resolved(text: &str, set: usize) -> Resolved {
    let h = parse(text, "t.toml").unwrap();
    h.resolve(&h.size_sets()[set], &DeviceProps::h100())
        .unwrap()
}

#[test]
fn parses_and_resolves_every_size_set() {
    let h = parse(SAXPY, "saxpy.toml").unwrap();
    let names: Vec<_> = h.size_sets().iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["small", "large"]);
    assert_eq!(h.size_sets()[0].values["n"], 1000);
    assert_eq!(h.size_sets()[1].values["n"], 4096);
    let r = h.resolve(&h.size_sets()[0], &DeviceProps::h100()).unwrap();
    assert_eq!(r.fast.len(), 1);
    assert_eq!(r.slow, r.fast, "a shared [[launch]] serves both variants");
    let l = &r.fast[0];
    assert_eq!(
        (l.grid, l.block, l.shared_mem, l.repeat),
        ([4, 1, 1], [256, 1, 1], 0, 1)
    );
    assert_eq!(l.args, vec![0, 1, 2, 3]);
    assert_eq!(r.values["threads"], 256);
    assert!(matches!(
        &r.args[0],
        ResolvedArg::Scalar {
            value: ScalarValue::I32(1000),
            ..
        }
    ));
    assert!(
        matches!(&r.args[1], ResolvedArg::Scalar { value: ScalarValue::F32(v), .. } if *v == 2.5)
    );
    match &r.args[3] {
        ResolvedArg::Buffer { len, role, tol, .. } => {
            assert_eq!((*len, *role), (1000, Role::Inout));
            assert_eq!(tol.rtol, 1e-5, "override");
            assert_eq!(
                tol.atol,
                Tolerance::default_for(ElemType::F32).atol,
                "default kept"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.outputs(), vec![3]);
    h.check_against(Some(&saxpy_unit()), &saxpy_unit()).unwrap();
}

#[test]
fn variants_launch_differently_and_templates_interpolate() {
    let text = SAXPY.replace(
        "[[launch]]\nkernel = \"saxpy\"\ngrid = \"ceil_div(n, threads)\"\nblock = \"threads\"\n",
        r#"
[[variants.slow.launch]]
kernel = "saxpy"
grid = ["n", 1]
block = 1
[[variants.fast.launch]]
kernel = "saxpy_t<{threads * 2}>"
grid = ["ceil_div(n, 512)"]
block = ["512"]
shared_mem = "512 * 4"
repeat = 2
"#,
    );
    let h = parse(&text, "t.toml").unwrap();
    let r = h.resolve(&h.size_sets()[1], &DeviceProps::h100()).unwrap();
    assert_eq!(r.slow[0].grid, [4096, 1, 1]);
    assert_eq!(r.fast[0].kernel, "saxpy_t<512>");
    assert_eq!(
        (r.fast[0].grid[0], r.fast[0].shared_mem, r.fast[0].repeat),
        (8, 2048, 2)
    );
    let mut fast = saxpy_unit();
    fast.kernel = "saxpy_t".into();
    fast.symbol = "saxpy_t<512>".into();
    h.check_against(Some(&saxpy_unit()), &fast).unwrap();
}

/// A small array-of-structs grid (4 records of 3 fields, one record of margin each side), laid out
/// as a struct of arrays for the fast kernel, with a compare window.
pub(crate) const AOS: &str = r#"
[sizes]
cells = 4
[derived]
fields = 3
margin = 3
len = "cells * fields + 2 * margin"
[[args]]
name = "src"
type = "f32"
len = "len"
init = { kind = "fields", fields = [
  { count = 2, init = { kind = "uniform", lo = 1.0, hi = 2.0 } },
  { count = 1, type = "u32", init = { kind = "choice", values = [0, 1, 2], weights = [2, 1, 1] } },
] }
role = "in"
layout.fast = { kind = "transpose", rows = "cells + 1", cols = "fields", offset = "margin - 2" }
[[args]]
name = "dst"
type = "f32"
len = "len"
init = { kind = "copy_of", arg = "src" }
role = "inout"
layout.fast = { kind = "transpose", rows = "cells", cols = "fields", offset = "margin" }
compare = { offset = "margin", len = "cells * fields" }
[[launch]]
kernel = "k"
grid = 1
block = "cells"
args = ["src + margin", "dst + margin"]
"#;

#[test]
fn layouts_and_compare_windows_resolve() {
    let r = resolved(AOS, 0);
    match &r.args[1] {
        ResolvedArg::Buffer {
            len,
            layout,
            compare,
            ..
        } => {
            assert_eq!(*len, 18);
            assert_eq!(layout.slow, None, "slow is canonical");
            assert_eq!(
                layout.fast,
                Some(Layout::Transpose {
                    rows: 4,
                    cols: 3,
                    offset: 3
                })
            );
            assert_eq!(*compare, Some(Window { offset: 3, len: 12 }));
        }
        other => panic!("{other:?}"),
    }
    match &r.args[0] {
        ResolvedArg::Buffer {
            init: Init::Fields { fields },
            compare: None,
            ..
        } => {
            assert_eq!(fields.len(), 2);
            assert_eq!((fields[0].count, fields[0].bits), (2, None));
            assert_eq!(fields[1].bits, Some(ElemType::U32));
            assert_eq!(
                fields[1].init,
                Init::Choice {
                    values: vec![0.0, 1.0, 2.0],
                    weights: vec![2.0, 1.0, 1.0]
                }
            );
        }
        other => panic!("{other:?}"),
    }
    // Resolved harnesses travel to workers as JSON: layouts and windows survive it.
    let back: Resolved = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    // Buffers without them serialize as before (no new keys).
    let json = serde_json::to_string(&resolved(SAXPY, 0)).unwrap();
    assert!(
        !json.contains("layout") && !json.contains("compare"),
        "{json}"
    );
}

#[test]
fn layout_compare_and_field_errors_name_the_field() {
    for (from, to, want) in [
        (
            "layout.fast = { kind = \"transpose\", rows = \"cells\"",
            "layout.medium = { kind = \"transpose\", rows = \"cells\"",
            "args[1].layout.medium: layouts are per variant",
        ),
        (
            "kind = \"transpose\", rows = \"cells\", cols",
            "kind = \"shuffle\", rows = \"cells\", cols",
            "not a valid harness",
        ),
        (
            "rows = \"cells\", cols = \"fields\", offset = \"margin\" }",
            "rows = \"cells\", cols = \"fields\", offset = \"margin + 4\" }",
            "args[1].layout.fast: `margin + 4 + (cells) * (fields)` (size set default): the transposed region ends at element 19, past the buffer's 18",
        ),
        (
            "offset = \"margin\" }",
            "offset = \"0 - 1\" }",
            "args[1].layout.fast.offset: `0 - 1`",
        ),
        (
            "rows = \"cells\", cols",
            "rows = \"0\", cols",
            "args[1].layout.fast.rows: `0` (size set default): must be > 0",
        ),
        (
            "compare = { offset = \"margin\", len = \"cells * fields\" }",
            "compare = { offset = \"margin\", len = \"cells * fields + 4\" }",
            "args[1].compare: `margin + cells * fields + 4` (size set default): the window ends at element 19, past the buffer's 18",
        ),
        (
            "role = \"in\"\nlayout",
            "role = \"in\"\ncompare = { len = 2 }\nlayout",
            "args[0].compare: \"src\" is an input",
        ),
        (
            "{ count = 1, type = \"u32\"",
            "{ count = 1, type = \"u64\"",
            "args[0].init.fields[1].type: u64 is 8 bytes, the buffer's f32 is 4",
        ),
        (
            "{ count = 2, init = { kind = \"uniform\", lo = 1.0, hi = 2.0 } }",
            "{ count = 2, init = { kind = \"permutation\" } }",
            "args[0].init.fields[0].init: a field takes an elementwise init",
        ),
        (
            "{ count = 2, init = { kind = \"uniform\", lo = 1.0, hi = 2.0 } }",
            "{ count = 2, init = { kind = \"int_range\", lo = 1, hi = 2 } }",
            "int_range in a float field",
        ),
        (
            "weights = [2, 1, 1]",
            "weights = [2, 1]",
            "args[0].init.fields[1].init: choice has 3 values but 2 weights",
        ),
        (
            "weights = [2, 1, 1]",
            "weights = [0, 0, 0]",
            "not all zero",
        ),
        (
            "{ count = 2, init",
            "{ count = 4, init",
            "src: records of 5 fields do not tile its 18 elements",
        ),
        (
            "{ count = 2, init",
            "{ count = \"fields - 3\", init",
            "args[0].init.fields[0].count: `fields - 3` (size set default): must be > 0, is 0",
        ),
        (
            "values = [0, 1, 2]",
            "values = [0, 1.5, 2]",
            "src: fields[1]: choice value 1.5 is not a u32 integer",
        ),
    ] {
        assert!(AOS.contains(from), "{from}");
        let e = err_of(&AOS.replace(from, to));
        assert!(e.contains(want), "{to}: {e}");
        assert!(e.starts_with("h.toml"), "{e}");
    }
    // A scalar takes no layout.
    let e = err_of(&SAXPY.replace(
        "value = \"n\"",
        "value = \"n\"\nlayout.fast = { kind = \"transpose\", rows = 1, cols = 1 }",
    ));
    assert!(e.contains("takes no layout"), "{e}");
    // The same layout on both sides is the canonical one: say neither.
    let both = AOS.replace(
        "layout.fast = { kind = \"transpose\", rows = \"cells\", cols = \"fields\", offset = \"margin\" }",
        "layout.fast = { kind = \"transpose\", rows = \"cells\", cols = \"fields\", offset = \"margin\" }\nlayout.slow = { kind = \"transpose\", rows = \"cells\", cols = \"fields\", offset = \"margin\" }",
    );
    assert!(err_of(&both).contains("same layout"), "{}", err_of(&both));
}

#[test]
fn errors_name_the_file_and_field() {
    let e = err_of(&SAXPY.replace("type = \"f32\"\nlen", "type = \"float\"\nlen"));
    assert!(
        e.contains("h.toml: args[2].type") && e.contains("unknown element type"),
        "{e}"
    );
    let e = err_of(&SAXPY.replace("role = \"in\"\n", ""));
    assert!(
        e.contains("args[2].role") && e.contains("needs a role"),
        "{e}"
    );
    let e = err_of(&SAXPY.replace("role = \"in\"", "role = \"input\""));
    assert!(e.contains("args[2].role"), "{e}");
    let e = err_of(&SAXPY.replace("name = \"small\"\nn = 1000", "name = \"small\"\nm = 1000"));
    assert!(
        e.contains("size_sets[0].m") && e.contains("does not declare"),
        "{e}"
    );
    // An expression that fails for one size set only names that set.
    let e = err_of(&SAXPY.replace(
        "len = \"n\"\ninit = { kind = \"uniform\"",
        "len = \"n - 1000\"\ninit = { kind = \"uniform\"",
    ));
    assert!(
        e.contains("args[2].len") && e.contains("size set small") && e.contains("must be > 0"),
        "{e}"
    );
    let e = err_of(&SAXPY.replace("block = \"threads\"", "block = \"threads * 8\""));
    assert!(
        e.contains("launch[0].block") && e.contains("exceeds"),
        "{e}"
    );
    let e = err_of(&SAXPY.replace("block = \"threads\"", "block = \"TODO\""));
    assert!(
        e.contains("launch[0].block[0]") && e.contains("TODO"),
        "{e}"
    );
    let e = err_of(&SAXPY.replace("value = \"n\"", "value = \"n\"\nrole = \"in\""));
    assert!(
        e.contains("args[0]") && e.contains("takes no init or role"),
        "{e}"
    );
    let e = err_of(&format!("require = [\"n % 64 == 0\"]\n{SAXPY}"));
    assert!(
        e.contains("require[0]") && e.contains("size set small"),
        "{e}"
    );
    let e = err_of(&format!("{SAXPY}\nbogus = 1\n"));
    assert!(e.contains("unknown field"), "{e}");
    let e = err_of(
        &SAXPY.replace("role = \"inout\"", "role = \"out\"").replace(
            "kind = \"normal\", mean = 0.0, std = 1.0",
            "kind = \"zeros\"",
        ),
    );
    assert!(e.contains("make its role inout"), "{e}");
    let e = err_of(&SAXPY.replace("role = \"inout\"", "role = \"in\""));
    assert!(e.contains("args: no buffer has role out or inout"), "{e}");
    let e = err_of(&SAXPY.replace("[[launch]]", "[[xlaunch]]"));
    assert!(e.contains("unknown field"), "{e}");
    let e = err_of(&SAXPY.replace(
        "kernel = \"saxpy\"",
        "kernel = \"saxpy\"\nargs = [\"n\", \"zz\"]",
    ));
    assert!(e.contains("launch[0].args") && e.contains("\"zz\""), "{e}");
}

#[test]
fn check_against_catches_signature_mismatches() {
    let h = parse(SAXPY, "s.toml").unwrap();
    let short = unit("saxpy", &[("int", "n"), ("float", "a"), ("float *", "x")]);
    let e = h.check_against(None, &short).unwrap_err().to_string();
    assert!(e.contains("passes 4 args, the kernel takes 3"), "{e}");
    // SAXPY's unit with one parameter's type changed.
    let retyped = |i: usize, ty: &str| {
        let mut u = saxpy_unit();
        u.params[i].ty = ty.into();
        u
    };
    for (i, ty, wants) in [
        (2, "const double *", &["parameter 2", "f64", "f32"][..]),
        (0, "int *", &["is a pointer, but arg \"n\" is a scalar"]),
        (
            3,
            "const float *",
            &["points to const, but arg \"y\" is an output"],
        ),
    ] {
        let e = h
            .check_against(None, &retyped(i, ty))
            .unwrap_err()
            .to_string();
        assert!(wants.iter().all(|w| e.contains(w)), "{ty}: {e}");
    }
    h.check_against(None, &retyped(3, "float *const")).unwrap();
    // Constants must exist in a unit's source.
    let with_const = format!("{SAXPY}\n[[constants]]\nname = \"table\"\ntype = \"f32\"\nlen = 4\ninit = {{ kind = \"zeros\" }}\n");
    let h2 = parse(&with_const, "c.toml").unwrap();
    let mut u = saxpy_unit();
    u.source = "__constant__ float other[4];\n__global__ void saxpy() {}".into();
    let e = h2.check_against(None, &u).unwrap_err().to_string();
    assert!(
        e.contains("constant \"table\" is not a __constant__ symbol"),
        "{e}"
    );
    u.source = "__constant__ float table[4];\n".into();
    h2.check_against(None, &u).unwrap();
    let other = unit(
        "daxpy",
        &saxpy_unit()
            .params
            .iter()
            .map(|p| (p.ty.as_str(), p.name.as_str()))
            .collect::<Vec<_>>(),
    );
    let e = h
        .check_against(Some(&other), &saxpy_unit())
        .unwrap_err()
        .to_string();
    assert!(e.contains("(slow)") && e.contains("daxpy"), "{e}");
}

#[test]
fn c_types_map_to_elements() {
    assert_eq!(
        ElemType::from_c_type("const float *__restrict__"),
        Some(ElemType::F32)
    );
    assert_eq!(ElemType::from_c_type("unsigned int*"), Some(ElemType::U32));
    assert_eq!(ElemType::from_c_type("uchar4 *"), Some(ElemType::U8));
    assert_eq!(ElemType::from_c_type("const int"), Some(ElemType::I32));
    assert_eq!(ElemType::from_c_type("struct kValues *"), None);
    assert!(c_is_pointer("float*") && !c_is_pointer("float"));
    assert_eq!(c_base_type("const struct kValues *"), "kValues");
    // A struct pointer is accepted when the arg declares it.
    assert!(type_matches("struct kValues *", ElemType::F32, Some("kValues"), "").is_ok());
    assert!(type_matches("struct kValues *", ElemType::F32, None, "").is_err());
    // Macros and typedefs in the unit's source give names their types.
    let src = "#define REAL float\ntypedef unsigned long hist_t;\n#define SCALAR REAL // alias\n";
    assert!(type_matches("REAL *", ElemType::F32, None, src).is_ok());
    assert!(type_matches("const SCALAR *", ElemType::F32, None, src).is_ok());
    assert!(type_matches("hist_t *", ElemType::U64, None, src).is_ok());
    assert!(type_matches("hist_t *", ElemType::U32, None, src).is_err());
    assert!(type_matches("hist_t *", ElemType::U64, Some("unsigned long"), src).is_ok());
}

#[test]
fn scalar_values_must_fit() {
    assert_eq!(
        ScalarValue::from_num(ElemType::U8, Num::Int(255)),
        Ok(ScalarValue::U8(255))
    );
    assert!(ScalarValue::from_num(ElemType::U8, Num::Int(256)).is_err());
    assert!(ScalarValue::from_num(ElemType::I32, Num::Float(1.5)).is_err());
    assert_eq!(
        ScalarValue::I32(-2).to_le_bytes(),
        vec![0xFE, 0xFF, 0xFF, 0xFF]
    );
    assert_eq!(
        ScalarValue::from_num(ElemType::F16, Num::Float(1.0))
            .unwrap()
            .to_le_bytes(),
        vec![0x00, 0x3C]
    );
}

#[test]
fn locate_prefers_specific_names_then_walks_the_suite_tree() {
    let dir = tempfile::tempdir().unwrap();
    let ext = dir.path().join("extractors/parboil");
    let suite = dir.path().join("suite");
    std::fs::create_dir_all(&ext).unwrap();
    std::fs::create_dir_all(suite.join("benchmarks/stencil/src/cuda_fermi")).unwrap();
    let mut fast = unit("block2D_reg_tiling", &[]);
    fast.variant = "cuda_fermi".into();
    fast.path = "benchmarks/stencil/src/cuda_fermi/kernels.cu".into();
    let pair = Pair {
        suite: "parboil".into(),
        benchmark: "stencil".into(),
        ..Pair::new(
            crate::record::Slow::PENDING,
            fast,
            crate::record::PairRule::Name,
        )
    };
    assert_eq!(locate(&pair, Some(&ext), Some(&suite)), None);
    std::fs::write(suite.join("benchmarks/stencil/harness.toml"), "").unwrap();
    assert_eq!(
        locate(&pair, Some(&ext), Some(&suite)),
        Some(suite.join("benchmarks/stencil/harness.toml"))
    );
    std::fs::write(ext.join("stencil.toml"), "").unwrap();
    assert_eq!(
        locate(&pair, Some(&ext), Some(&suite)),
        Some(ext.join("stencil.toml"))
    );
    std::fs::write(ext.join("stencil.cuda_fermi.toml"), "").unwrap();
    assert_eq!(
        locate(&pair, Some(&ext), None),
        Some(ext.join("stencil.cuda_fermi.toml"))
    );
}

/// SAXPY whose `x` is also read through a 2D texture `tx` (8 × 125 with a pitch of 125).
fn saxpy_tex(entry: &str) -> String {
    format!("{SAXPY}\n[[textures]]\n{entry}\n")
}

#[test]
fn textures_resolve_to_the_shim_struct() {
    let r = resolved(
        &saxpy_tex("name = \"tx\"\nbuffer = \"x\"\nwidth = 100\nheight = \"n / 125\"\npitch = 125"),
        0,
    );
    let t = &r.textures[0];
    assert_eq!((t.name.as_str(), t.buffer), ("tx", 2));
    assert_eq!((t.width, t.height, t.pitch), (100, 8, 125));
    let b = t.struct_bytes(0x1122_3344_5566_7788);
    assert_eq!(b.len(), 24);
    assert_eq!(&b[..8], &0x1122_3344_5566_7788u64.to_le_bytes());
    assert_eq!(&b[8..12], &100i32.to_le_bytes());
    assert_eq!(&b[12..16], &8i32.to_le_bytes());
    assert_eq!(&b[16..20], &125i32.to_le_bytes());
    // A 1D texture defaults to the whole buffer.
    let r = resolved(&saxpy_tex("name = \"tx\"\nbuffer = \"x\""), 1);
    assert_eq!(
        (
            r.textures[0].width,
            r.textures[0].height,
            r.textures[0].pitch
        ),
        (4096, 0, 0)
    );
}

#[test]
fn bad_textures_are_refused_with_the_field() {
    let e = err_of(&saxpy_tex("name = \"tx\"\nbuffer = \"a\""));
    assert!(
        e.contains("textures[0].buffer") && e.contains("not a buffer"),
        "{e}"
    );
    let e = err_of(&saxpy_tex("name = \"tx\"\nbuffer = \"x\"\npitch = 4"));
    assert!(e.contains("needs a height"), "{e}");
    // 9 rows of 125 do not fit the 1000 elements of x in size set `small`.
    let e = err_of(&saxpy_tex(
        "name = \"tx\"\nbuffer = \"x\"\nwidth = 125\nheight = 9",
    ));
    assert!(
        e.contains("does not fit buffer") && e.contains("small"),
        "{e}"
    );
    let e = err_of(&saxpy_tex("name = \"tx\"\nbuffer = \"x\"\ncolour = 1"));
    assert!(e.contains("colour"), "{e}");
}

#[test]
fn check_requires_every_shimmed_texture_filled_and_no_stray_entries() {
    let mut u = saxpy_unit();
    u.source = format!(
        "{}\n__device__ kernelpair_legacy_texture<float, 1> tx;\n__global__ void saxpy(int n, float a, const float *__restrict__ x, float *y) {{}}\n",
        crate::cuda::texture::SHIM
    );
    let bare = parse(SAXPY, "s.toml").unwrap();
    let e = bare.check_against(None, &u).unwrap_err().to_string();
    assert!(e.contains("\"tx\"") && e.contains("[[textures]]"), "{e}");
    let filled = parse(&saxpy_tex("name = \"tx\"\nbuffer = \"x\""), "t.toml").unwrap();
    filled.check_against(None, &u).unwrap();
    let stray = parse(
        &saxpy_tex("name = \"tx\"\nbuffer = \"x\"\n[[textures]]\nname = \"ty\"\nbuffer = \"y\""),
        "t.toml",
    )
    .unwrap();
    let e = stray.check_against(None, &u).unwrap_err().to_string();
    assert!(
        e.contains("\"ty\"") && e.contains("not a legacy texture"),
        "{e}"
    );
    let two_d = parse(
        &saxpy_tex("name = \"tx\"\nbuffer = \"x\"\nwidth = 100\nheight = 2"),
        "t.toml",
    )
    .unwrap();
    let e = two_d.check_against(None, &u).unwrap_err().to_string();
    assert!(e.contains("1D"), "{e}");
}

#[test]
fn ignore_resolves_per_size_set_and_rejects_empty_ranges() {
    let with = |g: &str| SAXPY.replace("rtol = 1e-5\n", &format!("rtol = 1e-5\nignore = {g}\n"));
    let r = resolved(&with("{ period = \"n / 10\", from = 98, to = 100 }"), 0);
    assert_eq!(
        r.ignores,
        vec![Ignore {
            arg: 3,
            period: 100,
            from: 98,
            to: 100
        }]
    );
    assert!(r.ignores[0].contains(198) && !r.ignores[0].contains(197));
    let e = err_of(&with("{ period = 100, from = 5, to = 5 }"));
    assert!(
        e.contains("args[3].ignore") && e.contains("from < to"),
        "{e}"
    );
    let e = err_of(&with("{ period = 100, from = 5 }"));
    assert!(e.contains("to"), "{e}");
    // A range from the start of each period, here the whole buffer (scratch).
    let r = resolved(&with("{ period = 1, from = 0, to = 1 }"), 0);
    assert!((0..5).all(|i| r.ignores[0].contains(i)));
    let e = err_of(&with("{ period = 4, from = -1, to = 2 }"));
    assert!(e.contains("ignore.from") && e.contains(">= 0"), "{e}");
}

/// A gather kernel that takes two buffers' addresses in one struct, by value.
const SOA: &str = r#"
[sizes]
n = 64
[[args]]
name = "pair"
struct = ["xs", "ys"]
c_type = "xy_t"
[[args]]
name = "xs"
type = "f32"
len = "n"
init = { kind = "iota", every = 4, period = 3 }
role = "in"
[[args]]
name = "ys"
type = "f32"
len = "2 * n"
init = { kind = "uniform", lo = 0.0, hi = 1.0 }
role = "in"
[[args]]
name = "out"
type = "f32"
len = "n"
role = "out"
[[launch]]
kernel = "gather"
grid = 1
block = "n"
args = ["pair", "out"]
"#;

#[test]
fn struct_args_resolve_to_their_buffers_and_check_the_c_type() {
    let h = parse(SOA, "soa.toml").unwrap();
    let r = h.resolve(&h.size_sets()[0], &DeviceProps::h100()).unwrap();
    assert_eq!(
        r.args[0],
        ResolvedArg::Struct {
            name: "pair".into(),
            fields: vec![1, 2],
        },
        "fields in the order written, as indices of the buffer args"
    );
    assert_eq!(r.fast[0].args, vec![0, 3]);
    assert_eq!(r.outputs(), vec![3], "a struct is no output");
    // It travels to workers inside the resolved set (JSON), as does iota's every/period.
    let back: Resolved = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    let u = unit("gather", &[("xy_t", "p"), ("float *", "out")]);
    h.check_against(None, &u).unwrap();
    let u = unit("gather", &[("struct xy_t", "p"), ("float *", "out")]);
    h.check_against(None, &u).unwrap();
    let u = unit("gather", &[("other_t", "p"), ("float *", "out")]);
    let e = h.check_against(None, &u).unwrap_err().to_string();
    assert!(
        e.contains("declared c_type \"xy_t\" but the parameter is \"other_t\""),
        "{e}"
    );
    let u = unit("gather", &[("xy_t *", "p"), ("float *", "out")]);
    let e = h.check_against(None, &u).unwrap_err().to_string();
    assert!(
        e.contains("is a pointer, but arg \"pair\" is a struct"),
        "{e}"
    );
    // Its fields' addresses, 8 bytes each, little-endian, in order.
    let b = struct_arg_bytes(&[0x1122_3344_5566_7788, 0x0102]);
    assert_eq!(b.len(), 16);
    assert_eq!(&b[..8], &0x1122_3344_5566_7788u64.to_le_bytes());
    assert_eq!(&b[8..], &[2, 1, 0, 0, 0, 0, 0, 0]);
    // A struct cannot be passed at an offset.
    let off = SOA.replace("[\"pair\", \"out\"]", "[\"pair + 1\", \"out\"]");
    let e = err_of(&off);
    assert!(e.contains("only a buffer can take an offset"), "{e}");
}

#[test]
fn bad_struct_args_are_refused_with_the_field() {
    let e = err_of(&SOA.replace("[\"xs\", \"ys\"]", "[\"xs\", \"zs\"]"));
    assert!(
        e.contains("args[0].struct[1]") && e.contains("no arg is named \"zs\""),
        "{e}"
    );
    let scalar = format!("{SOA}[[args]]\nname = \"m\"\ntype = \"i32\"\nvalue = 3\n");
    let e = err_of(&scalar.replace("[\"xs\", \"ys\"]", "[\"m\", \"ys\"]"));
    assert!(
        e.contains("args[0].struct[0]") && e.contains("\"m\" is not a buffer arg"),
        "{e}"
    );
    let e = err_of(&SOA.replace("[\"xs\", \"ys\"]", "[\"xs\", \"ys\", \"out\"]"));
    assert!(
        e.contains("args[0].struct")
            && e.contains("1 to 2 buffer addresses")
            && e.contains("not 3"),
        "{e}"
    );
    let e = err_of(&SOA.replace("[\"xs\", \"ys\"]", "[]"));
    assert!(e.contains("not 0"), "{e}");
    let e = err_of(&SOA.replace("c_type = \"xy_t\"\n", ""));
    assert!(
        e.contains("args[0].c_type") && e.contains("needs c_type"),
        "{e}"
    );
    for (extra, what) in [
        ("len = \"n\"", "len"),
        ("type = \"u64\"", "type"),
        ("value = 1", "value"),
        ("role = \"in\"", "role"),
        ("rtol = 0.1", "a tolerance"),
    ] {
        let e = err_of(&SOA.replace(
            "c_type = \"xy_t\"\n",
            &format!("c_type = \"xy_t\"\n{extra}\n"),
        ));
        assert!(
            e.contains("args[0]")
                && e.contains(&format!("takes only name, struct and c_type, not {what}")),
            "{extra}: {e}"
        );
    }
    // A struct is no buffer: nothing may copy or interleave it.
    let e = err_of(&SOA.replace(
        "init = { kind = \"uniform\", lo = 0.0, hi = 1.0 }",
        "init = { kind = \"copy_of\", arg = \"pair\" }",
    ));
    assert!(e.contains("copy_of names no buffer arg \"pair\""), "{e}");
}

#[test]
fn iota_repeats_with_every_and_wraps_with_period() {
    let r = resolved(SOA, 0);
    let xs = &gen::generate_inputs(&r, 1).unwrap()[1];
    let got: Vec<f64> = (0..16).map(|i| xs.get_f64(i)).collect();
    let want: Vec<f64> = (0..16).map(|i| ((i / 4) % 3) as f64).collect();
    assert_eq!(got, want);
    for (bad, field) in [("every = 0", "every"), ("period = -2", "period")] {
        // Parse resolves every size set, so the error comes from parse.
        let e = err_of(&SOA.replace("every = 4, period = 3", bad));
        assert!(
            e.contains(&format!("init.{field}")) && e.contains("must be > 0"),
            "{e}"
        );
    }
}

#[test]
fn a_cooperative_launch_is_read_resolved_and_written_only_when_set() {
    let r = resolved(SAXPY, 0);
    assert!(!r.fast[0].cooperative, "a plain launch unless asked");
    let text = SAXPY.replace(
        "block = \"threads\"",
        "block = \"threads\"\ncooperative = true",
    );
    let r = resolved(&text, 0);
    assert!(r.fast[0].cooperative && r.slow[0].cooperative);
    assert!(
        err_of(&SAXPY.replace(
            "block = \"threads\"",
            "block = \"threads\"\ncooperative = \"yes\""
        ))
        .contains("cooperative"),
        "a non-boolean is refused with the field"
    );
    // Written back only when set, so harnesses without it keep their bytes.
    let raw: spec::RawLaunch = toml::from_str("kernel = \"k\"\ngrid = 1\nblock = 32\n").unwrap();
    assert!(!toml::to_string(&raw).unwrap().contains("cooperative"));
    let raw: spec::RawLaunch =
        toml::from_str("kernel = \"k\"\ngrid = 1\nblock = 32\ncooperative = true\n").unwrap();
    assert!(toml::to_string(&raw)
        .unwrap()
        .contains("cooperative = true"));
}

/// A kernel that syncs its whole grid needs `cooperative = true`: the check says so before
/// any GPU time, and passes once the launch asks for it.
#[test]
fn a_grid_syncing_kernel_needs_a_cooperative_launch() {
    let mut u = saxpy_unit();
    u.source = "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n\
                __global__ void saxpy(int n, float a, const float *x, float *y) {\n\
                  cg::grid_group grid = cg::this_grid();\n\
                  for (int i = grid.thread_rank(); i < n; i += grid.size()) y[i] += a * x[i];\n\
                  grid.sync();\n}\n"
        .into();
    let plain = parse(SAXPY, "saxpy.toml").unwrap();
    let e = plain.check_against(None, &u).unwrap_err().to_string();
    assert!(
        e.contains("syncs the whole grid") && e.contains("cooperative = true"),
        "{e}"
    );
    let text = SAXPY.replace(
        "block = \"threads\"",
        "block = \"threads\"\ncooperative = true",
    );
    parse(&text, "saxpy.toml")
        .unwrap()
        .check_against(None, &u)
        .unwrap();
    // The same kernel without the grid sync takes a plain launch.
    plain.check_against(None, &saxpy_unit()).unwrap();
}

/// An alias is resolved as NVRTC compiles the unit: the typedef of the active `#if` branch,
/// not the first one in the text (llm.c's `floatX` is float unless ENABLE_BF16/FP16).
#[test]
fn an_alias_takes_the_typedef_of_the_active_branch() {
    let src = "#if defined(ENABLE_BF16)\ntypedef __nv_bfloat16 floatX;\n#elif defined(ENABLE_FP16)\ntypedef half floatX;\n#else\ntypedef float floatX;\n#endif\n#define REAL floatX\n__global__ void k(floatX *x) { x[0] = 1; }\n";
    assert_eq!(resolve_alias("floatX", src), "float");
    assert_eq!(resolve_alias("REAL", src), "float");
    let bf16 = format!("#define ENABLE_BF16\n{src}");
    assert_eq!(resolve_alias("floatX", &bf16), "__nv_bfloat16");
}
