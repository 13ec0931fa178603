//! What changed and why, for every pair, without an LLM: the techniques found in the
//! fast kernel and not in the slow one ([`crate::synth::techniques::detect_pair`], for
//! natural and synthesized pairs alike), the launch change the harness records, and the
//! measured figures, with any size condition. The sentence goes into `metadata.description`
//! and, with `--with-description`, into the answer.

use super::launch::{grouped, Rendered};
use crate::harness::launches::Launches;
use crate::record::{Flag, Pair, Status, Verification};
use crate::verify::techniques::coarsening;
pub use crate::verify::techniques::techniques;

/// What a technique does, as a verb phrase about the fast kernel.
fn phrase(t: &str) -> String {
    match t {
        "shared_memory" => "stages data in shared memory".into(),
        "coalescing" => {
            "makes neighbouring threads access neighbouring addresses (coalesced memory access)"
                .into()
        }
        "loop_unrolling" => "unrolls loops".into(),
        "register_blocking" => {
            "keeps several values per thread in registers (register blocking)".into()
        }
        "vector_types" => "uses vector types for wider loads and stores".into(),
        "warp_shuffle" => "exchanges values between threads with warp shuffles".into(),
        "warp_vote" => "uses warp vote functions".into(),
        "read_only_cache" => "reads inputs through the read-only data cache".into(),
        "constant_memory" => "keeps data in constant memory".into(),
        "texture_memory" => "reads through the texture path".into(),
        "atomics" => "uses atomic operations".into(),
        "software_pipelining" => "loads the next iteration's operands into registers before computing with the current ones (software pipelining)".into(),
        "data_layout" => "keeps the kernel's code and changes the data layout its address macros compute".into(),
        "thread_coarsening" => "gives each thread more of the work and launches fewer threads (thread coarsening)".into(),
        other => format!("uses {}", other.replace(['_', '-'], " ")),
    }
}

fn join(words: &[String]) -> String {
    match words.len() {
        0 => String::new(),
        1 => words[0].clone(),
        n => format!("{} and {}", words[..n - 1].join(", "), words[n - 1]),
    }
}

/// The description of a pair, from facts only. `techniques` as [`techniques`] gives them;
/// `rendered`, the pair's launches as CUDA ([`super::launch::render`]).
pub fn describe(pair: &Pair, techniques: &[String], rendered: Option<&Rendered>) -> String {
    let v = pair.verification.as_ref();
    let launches = v.and_then(Launches::of);
    let mut parts = Vec::new();
    if let Some(v) = v.filter(|v| v.status == Status::Reversed) {
        // The reversed view (`export::reversed`): the slow kernel is the original, the
        // fast one its plain version, and `techniques` what the plain version removed.
        let device = v
            .device
            .as_ref()
            .map_or("the verification device", |d| d.name.as_str());
        let removed = match techniques.is_empty() {
            true => "its optimizations".to_string(),
            false => join(
                &techniques
                    .iter()
                    .map(|t| t.replace(['_', '-'], " "))
                    .collect::<Vec<_>>(),
            ),
        };
        parts.push(format!(
            "A reversed pair: the slow kernel is the original and the fast kernel its plain version with {removed} removed, which is faster on {device}."
        ));
        if !techniques.is_empty() {
            let words: Vec<String> = techniques.iter().map(|t| phrase(t)).collect();
            parts.push(format!(
                "The original {}; on this device that costs more than it saves.",
                join(&words)
            ));
        }
    } else if techniques.is_empty() {
        parts.push(
            "The fast kernel restructures the computation; none of the techniques kernelpair \
             detects (shared memory, coalescing, unrolling, register blocking, vector types, \
             warp primitives, read-only cache, constant or texture memory, atomics) is new in it."
                .to_string(),
        );
    } else {
        let words: Vec<String> = techniques.iter().map(|t| phrase(t)).collect();
        parts.push(format!("The fast kernel {}.", join(&words)));
    }
    let rendered = rendered.filter(|r| !r.slow.is_empty() && !r.fast.is_empty());
    if let (Some(_), Some(r)) = (launches.as_ref().filter(|l| l.differ()), rendered) {
        let fewer = coarsening(pair)
            .map(|f| format!(" ({f:.0}× fewer threads)"))
            .unwrap_or_default();
        parts.push(format!(
            "It is launched differently: the slow kernel as `{}`, the fast one as `{}`{fewer}.",
            Rendered::inline(&r.slow),
            Rendered::inline(&r.fast)
        ));
    }
    match v {
        Some(v) => parts.push(measured(v, launches.as_ref())),
        None => parts.push("Not yet verified on a GPU.".into()),
    }
    parts.retain(|p| !p.is_empty());
    parts.join(" ")
}

fn measured(v: &Verification, launches: Option<&Launches>) -> String {
    let timed = matches!(v.status, Status::Verified | Status::Reversed);
    let Some(s) = v.speedup.as_ref().filter(|_| timed) else {
        return match v.status {
            Status::Verified => "Verified on a GPU (agreement only, not timed).".into(),
            st => format!("Not verified on a GPU ({}).", st.as_str()),
        };
    };
    let sizes = launches
        .and_then(|l| l.size_sets.get(&s.size_set))
        .map(|vals| {
            let kv: Vec<String> = vals
                .iter()
                .map(|(k, v)| format!("{k} = {}", grouped(*v)))
                .collect();
            format!(" ({})", kv.join(", "))
        })
        .unwrap_or_default();
    let device = v
        .device
        .as_ref()
        .map(|d| format!(" on {}", d.name))
        .unwrap_or_default();
    let mut out = format!(
        "{:.2}× faster (95% CI {:.2}–{:.2}){device} at size set {}{sizes}.",
        s.median, s.ci_low, s.ci_high, s.size_set
    );
    for f in &v.flags {
        if let Flag::SizeDependent { losing } = f {
            let names: Vec<String> = losing
                .iter()
                .map(|l| format!("{} ({:.2}×)", l.size_set, l.median))
                .collect();
            out.push_str(&format!(
                " Size-dependent: slower than the slow kernel at {}.",
                join(&names)
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{DeviceInfo, PairRule, Slow, Speedup};
    use crate::verify::techniques::rotations;

    fn unit(src: &str, kernel: &str) -> crate::record::KernelUnit {
        crate::synth::checks::tests::fast_unit(src, kernel)
    }

    const SLOW: &str = "__global__ void k(const float* a, float* b, int n) {\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i < n) b[i] = a[i] * 2.0f;\n}\n";
    const FAST: &str = "__global__ void k(const float* a, float* b, int n) {\n  __shared__ float s[256];\n  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  #pragma unroll 4\n  for (int j = 0; j < 4; ++j) { if (i < n) s[threadIdx.x] = a[i]; }\n  __syncthreads();\n  if (i < n) b[i] = s[threadIdx.x] * 2.0f;\n}\n";

    fn pair() -> Pair {
        Pair::new(
            Slow::natural(unit(SLOW, "k")),
            unit(FAST, "k"),
            PairRule::Name,
        )
    }

    #[test]
    fn natural_pairs_get_techniques_and_a_description_from_facts() {
        let mut p = pair();
        let t = techniques(&p);
        assert!(t.contains(&"shared_memory".to_string()), "{t:?}");
        assert!(t.contains(&"loop_unrolling".to_string()), "{t:?}");
        assert_eq!(describe(&p, &t, None), "The fast kernel stages data in shared memory and unrolls loops. Not yet verified on a GPU.");
        let slow_launch = crate::harness::launches::LaunchConfig {
            kernel: "k".into(),
            grid: vec!["ceil_div(n, 256)".into()],
            block: vec!["256".into()],
            shared_mem: "0".into(),
            repeat: "1".into(),
        };
        let mut fast_launch = slow_launch.clone();
        fast_launch.grid = vec!["ceil_div(n, 1024)".into()];
        let launch = Launches {
            task: None,
            slow: vec![slow_launch],
            fast: vec![fast_launch],
            size_sets: [("big".to_string(), [("n".to_string(), 4096)].into())].into(),
            threads: [("big".to_string(), [4096, 1024])].into(),
            // A record written before verify recorded evaluated launches: export
            // evaluates the expressions itself.
            evaluated: Default::default(),
            main: None,
        };
        let losing = Speedup {
            size_set: "small".into(),
            median: 0.19,
            ci_low: 0.18,
            ci_high: 0.2,
        };
        p.verification = Some(Verification {
            status: Status::Verified,
            reason: String::new(),
            device: Some(DeviceInfo {
                name: "NVIDIA H100".into(),
                sm_count: 132,
                compute_capability: "9.0".into(),
                driver_version: "580".into(),
                cuda_version: "13.0".into(),
                sm_clock_mhz: None,
                mem_clock_mhz: None,
            }),
            evidence: crate::evidence::Evidence::of_launch(launch.clone()),
            speedup: Some(Speedup {
                size_set: "big".into(),
                median: 3.08,
                ci_low: 3.0,
                ci_high: 3.1,
            }),
            tool_version: String::new(),
            flags: vec![Flag::SizeDependent {
                losing: vec![losing],
            }],
        });
        let t = techniques(&p);
        assert!(t.contains(&"thread_coarsening".to_string()), "{t:?}");
        let slow = p.slow.unit().unwrap().clone();
        let r = super::super::launch::render(&p, &slow, &launch).unwrap();
        let d = describe(&p, &t, Some(&r));
        // CUDA a reader can compile, with the numbers of the size set (n = 4,096).
        assert!(d.contains("launched differently: the slow kernel as `k<<<dim3(16), dim3(256)>>>(a, b, n);`, the fast one as `k<<<dim3(4), dim3(256)>>>(a, b, n);` (4× fewer threads)"), "{d}");
        assert!(
            d.contains("launches fewer threads (thread coarsening)"),
            "{d}"
        );
        assert!(
            d.contains(
                "3.08× faster (95% CI 3.00–3.10) on NVIDIA H100 at size set big (n = 4,096)."
            ),
            "{d}"
        );
        assert!(
            d.contains("Size-dependent: slower than the slow kernel at small (0.19×)."),
            "{d}"
        );
        // Recorded techniques (synth's) win over detection.
        p.techniques = vec!["warp_shuffle".into()];
        assert_eq!(techniques(&p), ["warp_shuffle"]);
    }

    #[test]
    fn pipelined_loads_and_layout_macros_are_named() {
        let naive = "__global__ void k(const float* d, const int* x, float* o, int n) {\n  float s = 0.0f;\n  for (int j = 0; j < n; j++) { s += d[j] * x[j]; }\n  o[0] = s;\n}\n";
        let piped = "__global__ void k(const float* d, const int* x, float* o, int n) {\n  float s = 0.0f;\n  float a = d[0]; float b = x[0];\n  for (int j = 1; j < n; j++) { float an = d[j]; float bn = x[j]; s += a * b; a = an; b = bn; }\n  s += a * b;\n  o[0] = s;\n}\n";
        assert_eq!(rotations(naive), 0);
        assert_eq!(rotations(piped), 2);
        let mut p = pair();
        p.slow = Slow::natural(unit(naive, "k"));
        p.fast = unit(piped, "k");
        assert_eq!(techniques(&p), ["software_pipelining"]);
        // Same kernel text, the address macro changed: a data layout change.
        let body = "__global__ void k(float* f, int n) {\n  int i = threadIdx.x;\n  f[IDX(i, 1)] = f[IDX(i, 0)];\n}\n";
        let aos = format!("#define IDX(x, e) ((e) + 20 * (x))\n{body}");
        let soa = format!("#define IDX(x, e) ((e) * 4096 + (x))\n{body}");
        p.slow = Slow::natural(unit(&aos, "k"));
        p.fast = unit(&soa, "k");
        assert_eq!(techniques(&p), ["data_layout"]);
        let d = describe(&p, &techniques(&p), None);
        assert!(d.starts_with("The fast kernel keeps the kernel's code and changes the data layout its address macros compute."), "{d}");
        // Nothing changed in a macro: no layout claim.
        p.fast = unit(&aos, "k");
        assert!(techniques(&p).is_empty());
    }
}
