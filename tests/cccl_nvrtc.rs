//! Issue 26: CCCL and `std::` under NVRTC. The kernels of fixtures/cccl (written for these
//! tests) include CUB's umbrella header, Thrust host headers and host `std::` headers, as
//! a program built by nvcc may; extract must make each a unit NVRTC compiles, by the same
//! compile check (name expressions included) extract runs.

use kernelpair::record::KernelUnit;
use kernelpair::suite::{compile::CheckCache, extract, ExtractConfig};
use std::path::Path;

fn units(compile: bool) -> Vec<KernelUnit> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cccl");
    let mut cfg = ExtractConfig::new(&root, "generic", None).unwrap();
    cfg.compile = compile;
    cfg.cache = CheckCache::none();
    let mut u = extract(&cfg).unwrap().units;
    u.sort_by(|a, b| a.kernel.cmp(&b.kernel));
    u
}

fn unit<'a>(units: &'a [KernelUnit], kernel: &str) -> &'a KernelUnit {
    units.iter().find(|u| u.kernel == kernel).unwrap()
}

fn diag<'a>(u: &'a KernelUnit, code: &str) -> Vec<&'a str> {
    u.diagnostics
        .iter()
        .filter(|d| d.code == code)
        .map(|d| d.message.as_str())
        .collect()
}

/// What isolation writes, NVRTC or not.
#[test]
fn cccl_headers_are_rewritten_for_nvrtc() {
    let us = units(false);
    let names: Vec<&str> = us.iter().map(|u| u.kernel.as_str()).collect();
    assert_eq!(names, ["block_sum", "pack", "scale", "warp_sum"]);

    // The umbrella gives way to the headers of the names the unit uses.
    let b = unit(&us, "block_sum");
    assert!(!b.source.contains("cub/cub.cuh"), "{}", b.source);
    assert!(b.source.contains("#include <cub/block/block_reduce.cuh>"));
    assert!(!b.source.contains("warp_reduce"), "{}", b.source);
    // CCCL's namespaces are not names the scope must declare.
    let unresolved = diag(b, "unresolved_identifier");
    assert!(
        !unresolved.iter().any(|d| d.contains("`cub`")),
        "{unresolved:?}"
    );
    let note = diag(b, "cub_umbrella_replaced");
    assert_eq!(note.len(), 1, "{:?}", b.diagnostics);
    assert!(note[0].contains("cub::BlockReduce"), "{}", note[0]);
    let w = unit(&us, "warp_sum");
    assert!(w.source.contains("#include <cub/warp/warp_reduce.cuh>"));
    assert!(!w.source.contains("block_reduce"), "{}", w.source);

    // Thrust host headers are dropped and said so; the device-usable one stays.
    let s = unit(&us, "scale");
    assert!(s.source.contains("#include <thrust/functional.h>"));
    assert!(!s.source.contains("device_vector") && !s.source.contains("thrust/sort.h"));
    let dropped = diag(s, "host_header_dropped");
    assert_eq!(dropped.len(), 2, "{dropped:?}");
    assert!(dropped
        .iter()
        .all(|d| d.contains("Thrust header with host code")));
    assert!(
        dropped[0].contains("<thrust/device_vector.h>"),
        "{dropped:?}"
    );

    // std:: names NVRTC lacks come from libcu++.
    let p = unit(&us, "pack");
    for h in ["cstdint", "type_traits", "limits", "algorithm"] {
        assert!(
            p.source.contains(&format!("#include <cuda/std/{h}>")),
            "{h}: {}",
            p.source
        );
    }
    assert!(
        p.source.contains("using cuda::std::uint32_t;"),
        "{}",
        p.source
    );
    assert!(p.source.contains("using cuda::std::conditional;"));
    assert!(p.source.contains("using cuda::std::bool_constant;"));
    assert!(!p.source.contains("#include <cstdint>"));
}

/// Where NVRTC is installed, every unit compiles (the unit's symbol resolved).
#[test]
fn cccl_units_compile_with_nvrtc() {
    if kernelpair::gpu::nvrtc::load().is_err() {
        assert!(
            std::env::var_os("KERNELPAIR_REQUIRE_NVRTC").is_none(),
            "NVRTC required but not found"
        );
        eprintln!("skipped: NVRTC not installed");
        return;
    }
    let us = units(true);
    assert_eq!(us.len(), 4);
    for u in &us {
        let c = u.compile.as_ref().unwrap();
        assert!(
            c.ok,
            "{} does not compile:\n{}\n{}",
            u.kernel, u.source, c.log
        );
    }
}
