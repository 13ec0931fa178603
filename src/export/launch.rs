//! Launches written as CUDA a reader can compile. The harness describes a launch in its
//! own language (`reduceSum<{block}>`, `ceil_div(n, 512)`, `min(…)` over size names);
//! a sample shows the concrete numbers of the main size set instead, as statements
//! (`reduceSum<256><<<dim3(1024), dim3(256), 32>>>(in, out, n);`), and names that set's
//! sizes once (`n = 4,194,304`). The numbers are the harness's own: `verify` records each
//! size set's launches as the harness resolved them (`evidence.launch.evaluated`); for a
//! record written before that, the same expressions are evaluated here over the recorded
//! sizes, and a launch that cannot be is an error the export reports for that pair.

use crate::harness::expr::Scope;
use crate::harness::launches::{LaunchConfig, LaunchValues, Launches, SizeSetLaunches};
use crate::harness::DeviceProps;
use crate::record::{KernelUnit, Pair};

/// A pair's launches at its main size set, as CUDA statements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rendered {
    /// The size set the numbers are for.
    pub size_set: String,
    /// Its sizes, `n = 4,194,304, m = 512`.
    pub sizes: String,
    /// One statement per launch (`k<<<…>>>(…);`, a repeated launch in a `for` loop).
    pub slow: Vec<String>,
    pub fast: Vec<String>,
}

impl Rendered {
    /// The statements of one variant on one line (description, inline code).
    pub fn inline(statements: &[String]) -> String {
        statements.join(" ")
    }

    /// The statements of one variant, one per line (code blocks, metadata).
    pub fn block(statements: &[String]) -> String {
        statements.join("\n")
    }
}

/// `4194304` → `4,194,304`: a size a reader takes in at a glance.
pub fn grouped(v: i64) -> String {
    let digits = v.unsigned_abs().to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if v < 0 {
        format!("-{out}")
    } else {
        out
    }
}

/// The main size set: the verdict's (the speedup's set), else the one the harness names
/// main, else (records without it) the set whose slow launch has the most threads.
pub fn main_size_set(pair: &Pair, l: &Launches) -> Option<String> {
    let known = |s: &str| l.evaluated.contains_key(s) || l.size_sets.contains_key(s);
    let verdict = pair
        .verification
        .as_ref()
        .and_then(|v| v.speedup.as_ref())
        .map(|s| s.size_set.clone());
    verdict
        .filter(|s| known(s))
        .or_else(|| l.main.clone().filter(|s| known(s)))
        .or_else(|| {
            l.threads
                .iter()
                .max_by_key(|(_, t)| t[0])
                .map(|(s, _)| s.clone())
        })
        .or_else(|| l.evaluated.keys().next().cloned())
        .or_else(|| l.size_sets.keys().next().cloned())
}

/// Render a pair's launches; `Err` says why they cannot be written as CUDA.
pub fn render(pair: &Pair, slow: &KernelUnit, l: &Launches) -> Result<Rendered, String> {
    let set = main_size_set(pair, l).ok_or("the harness records no size set")?;
    let values = l.size_sets.get(&set).cloned().unwrap_or_default();
    let sizes = values
        .iter()
        .map(|(k, v)| format!("{k} = {}", grouped(*v)))
        .collect::<Vec<_>>()
        .join(", ");
    let evaluated = match l.evaluated.get(&set) {
        Some(e) => e.clone(),
        None => {
            evaluate(l, &values, [slow, &pair.fast]).map_err(|m| format!("size set {set}: {m}"))?
        }
    };
    Ok(Rendered {
        size_set: set,
        sizes,
        slow: evaluated.slow.iter().map(statement).collect(),
        fast: evaluated.fast.iter().map(statement).collect(),
    })
}

/// One launch as a CUDA statement.
pub fn statement(l: &LaunchValues) -> String {
    let dims = |d: &[u32]| {
        let v: Vec<String> = d.iter().map(u32::to_string).collect();
        format!("dim3({})", v.join(", "))
    };
    let smem = match l.shared_mem {
        0 => String::new(),
        s => format!(", {s}"),
    };
    let call = format!(
        "{}<<<{}, {}{smem}>>>({});",
        l.kernel,
        dims(&l.grid),
        dims(&l.block),
        l.args.join(", ")
    );
    if l.repeat <= 1 {
        return call;
    }
    // A loop counter no argument is named after.
    let mut var = "step".to_string();
    while l
        .args
        .iter()
        .any(|a| a.split(' ').next() == Some(var.as_str()))
    {
        var.push('_');
    }
    format!("for (int {var} = 0; {var} < {}; ++{var}) {call}", l.repeat)
}

/// Launches of a record written before verify recorded evaluated ones: the harness's
/// expressions evaluated over the recorded sizes (and an H100's properties, as the
/// harness resolves them without a device), the arguments named after the kernel's
/// parameters.
fn evaluate(
    l: &Launches,
    sizes: &std::collections::BTreeMap<String, i64>,
    units: [&KernelUnit; 2],
) -> Result<SizeSetLaunches, String> {
    let dev = DeviceProps::h100();
    let mut scope = Scope::default();
    scope.set_int("sm_count", dev.sm_count);
    scope.set_int("max_threads_per_block", dev.max_threads_per_block);
    scope.set_int("warp_size", dev.warp_size);
    scope.set_int("l2_bytes", dev.l2_bytes);
    for (k, v) in sizes {
        scope.set_int(k, *v);
    }
    let one = |c: &LaunchConfig| -> Result<LaunchValues, String> {
        let num = |what: &str, e: &str| -> Result<u32, String> {
            let v = scope
                .eval_int(e)
                .map_err(|m| format!("{} {what} `{e}`: {m}", c.kernel))?;
            u32::try_from(v).map_err(|_| format!("{} {what} `{e}` = {v} is out of range", c.kernel))
        };
        let dims = |what: &str, d: &[String]| -> Result<Vec<u32>, String> {
            d.iter().map(|e| num(what, e)).collect()
        };
        let kernel = crate::harness::expr::interpolate(&c.kernel, &scope)
            .map_err(|m| format!("kernel `{}`: {m}", c.kernel))?;
        let base = kernel.split('<').next().unwrap_or(&kernel).trim();
        let unit = units
            .iter()
            .find(|u| u.kernel == base)
            .ok_or_else(|| format!("the parameters of kernel `{base}` are not in the pair"))?;
        Ok(LaunchValues {
            grid: dims("grid", &c.grid)?,
            block: dims("block", &c.block)?,
            shared_mem: match c.shared_mem.trim() {
                "" => 0,
                e => num("shared_mem", e)?,
            },
            repeat: match c.repeat.trim() {
                "" => 1,
                e => num("repeat", e)?,
            },
            args: unit.params.iter().map(|p| p.name.clone()).collect(),
            kernel,
        })
    };
    Ok(SizeSetLaunches {
        slow: l.slow.iter().map(one).collect::<Result<_, _>>()?,
        fast: l.fast.iter().map(one).collect::<Result<_, _>>()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{PairRule, Slow};

    fn unit(src: &str, kernel: &str) -> KernelUnit {
        crate::synth::checks::tests::fast_unit(src, kernel)
    }

    fn harness(text: &str) -> Launches {
        Launches::of_harness(&crate::harness::parse(text, "t.toml").unwrap())
    }

    const REDUCE: &str = r#"
[sizes]
n = 4194304
[derived]
block = 256
[[size_sets]]
name = "default"
[[size_sets]]
name = "irregular"
n = 1000003
[[args]]
name = "in"
type = "f32"
len = "n"
init = { kind = "uniform", lo = 0.0, hi = 1.0 }
role = "in"
[[args]]
name = "out"
type = "f32"
len = 1
init = { kind = "zeros" }
role = "inout"
[[args]]
name = "n"
type = "i32"
value = "n"
[[variants.slow.launch]]
kernel = "reduceSum"
grid = ["ceil_div(n, 512)"]
block = [512]
[[variants.fast.launch]]
kernel = "reduceSum<{block}>"
grid = ["min(ceil_div(n, block), 1024)"]
block = ["block"]
shared_mem = "(block / 32) * 4"
"#;

    fn reduce_pair() -> (Pair, KernelUnit) {
        let slow = unit(
            "__global__ void reduceSum(const float* in, float* out, int n) { atomicAdd(out, in[0]); }\n",
            "reduceSum",
        );
        let fast = unit(
            "template <int BLOCK>\n__global__ void reduceSum(const float* in, float* out, int n) { atomicAdd(out, in[0]); }\n",
            "reduceSum",
        );
        (
            Pair::new(Slow::natural(slow.clone()), fast, PairRule::Name),
            slow,
        )
    }

    /// The fixture's reduce pair: a template placeholder, `ceil_div` and `min` over size
    /// names in the harness; numbers of the main size set in the sample.
    #[test]
    fn harness_language_renders_as_the_main_size_sets_numbers() {
        let l = harness(REDUCE);
        // The main set is the one with the most bytes: default (4M floats).
        assert_eq!(l.main.as_deref(), Some("default"));
        let (p, slow) = reduce_pair();
        let r = render(&p, &slow, &l).unwrap();
        assert_eq!(r.size_set, "default");
        assert_eq!(r.sizes, "n = 4,194,304");
        assert_eq!(
            r.slow,
            ["reduceSum<<<dim3(8192), dim3(512)>>>(in, out, n);"]
        );
        assert_eq!(
            r.fast,
            ["reduceSum<256><<<dim3(1024), dim3(256), 32>>>(in, out, n);"]
        );
    }

    /// A record written before `evaluated` existed: the expressions are evaluated over
    /// the recorded sizes; one that names a derived value cannot be, and says so.
    #[test]
    fn older_records_evaluate_their_expressions_or_say_why_not() {
        let mut l = harness(REDUCE);
        l.evaluated.clear();
        l.main = None;
        let (p, slow) = reduce_pair();
        let e = render(&p, &slow, &l).unwrap_err();
        assert!(e.contains("block"), "{e}");
        l.fast = l.slow.clone();
        l.fast[0].repeat = "3".into();
        let r = render(&p, &slow, &l).unwrap();
        assert_eq!(
            r.fast,
            ["for (int step = 0; step < 3; ++step) reduceSum<<<dim3(8192), dim3(512)>>>(in, out, n);"]
        );
    }

    #[test]
    fn sizes_are_grouped_by_thousands() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(999), "999");
        assert_eq!(grouped(1000), "1,000");
        assert_eq!(grouped(16_777_216), "16,777,216");
        assert_eq!(grouped(-1_000_003), "-1,000,003");
    }
}
