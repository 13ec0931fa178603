//! Compile check: every unit compiled alone with NVRTC (no GPU needed), in parallel.

use crate::gpu::nvrtc::{self, CompileRequest, NvrtcError};
use crate::record::{CompileCheck, Diagnostic, KernelUnit, Level};
use rayon::prelude::*;

/// Compile every unit for `arch`, recording the result on the unit. `Err` only when
/// NVRTC itself is unavailable (then no unit is touched).
pub fn compile_units(
    units: &mut [KernelUnit],
    arch: &str,
    tick: &(dyn Fn() + Sync),
) -> Result<(), NvrtcError> {
    let info = nvrtc::load()?;
    let version = info.version_string();
    units.par_iter_mut().for_each(|u| {
        let check = compile_one(u, arch, &version);
        if !check.ok {
            let first = first_error(&check.log);
            u.diagnostics.push(Diagnostic::new(
                Level::Error,
                "compile_failed",
                format!("NVRTC ({arch}) rejected the unit: {first}"),
            ));
        }
        u.compile = Some(check);
        tick();
    });
    Ok(())
}

fn compile_one(u: &KernelUnit, arch: &str, version: &str) -> CompileCheck {
    let name = format!("{}.cu", u.kernel);
    // Asking for the kernel's lowered name instantiates templates and proves the
    // symbol the GPU stage will look up exists.
    let exprs = [u.symbol.clone()];
    let req = CompileRequest {
        source: &u.source,
        name: &name,
        arch,
        name_expressions: if u.symbol.is_empty() { &[] } else { &exprs },
        cubin: false,
        extra_options: &[],
    };
    match nvrtc::compile(&req) {
        Ok(c) => CompileCheck {
            ok: c.ok,
            arch: arch.to_string(),
            log: c.log,
            millis: (c.millis * 1000.0).round() / 1000.0,
            nvrtc_version: version.to_string(),
        },
        Err(e) => CompileCheck {
            ok: false,
            arch: arch.to_string(),
            log: match e {
                NvrtcError::Call {
                    call: "nvrtcGetLoweredName",
                    ..
                } => format!("compiled, but symbol `{}` was not found: {e}", u.symbol),
                e => e.to_string(),
            },
            millis: 0.0,
            nvrtc_version: version.to_string(),
        },
    }
}

/// The first `error` line of an NVRTC log (or its first line).
pub fn first_error(log: &str) -> String {
    log.lines()
        .find(|l| l.contains("error"))
        .or_else(|| log.lines().find(|l| !l.trim().is_empty()))
        .unwrap_or("(empty log)")
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Features, Provenance, Pulled};

    fn unit(source: &str, symbol: &str) -> KernelUnit {
        KernelUnit {
            id: "x".into(),
            suite: "s".into(),
            benchmark: "b".into(),
            variant: "v".into(),
            path: "p.cu".into(),
            line: 1,
            kernel: "k".into(),
            params: vec![],
            template_params: vec![],
            source: source.into(),
            symbol: symbol.into(),
            pulled: Pulled::default(),
            features: Features::default(),
            launch_sites: vec![],
            provenance: Provenance::default(),
            compile: None,
            diagnostics: vec![],
        }
    }

    #[test]
    fn first_error_line() {
        let log = "k.cu(3): warning: x\nk.cu(4): error: identifier \"q\" is undefined\n";
        assert_eq!(
            first_error(log),
            "k.cu(4): error: identifier \"q\" is undefined"
        );
        assert_eq!(first_error(""), "(empty log)");
    }

    /// Runs where NVRTC is installed; otherwise checks the missing library is an error,
    /// not a panic.
    #[test]
    fn compiles_units_or_reports_missing_nvrtc() {
        let mut units = vec![
            unit(
                "extern \"C\" __global__ void k(float *x) { x[0] = 1; }",
                "k",
            ),
            unit("__global__ void k(float *x) { nope(x); }", "k"),
            unit(
                "template <int B> __global__ void k(float *x) { x[B] = 1; }",
                "k<4>",
            ),
            unit("__global__ void k(float *x) { x[0] = 1; }", "other"),
        ];
        match compile_units(&mut units, "sm_90", &|| {}) {
            Err(NvrtcError::Missing) => assert!(units.iter().all(|u| u.compile.is_none())),
            Err(e) => panic!("{e}"),
            Ok(()) => {
                let ok: Vec<bool> = units
                    .iter()
                    .map(|u| u.compile.as_ref().unwrap().ok)
                    .collect();
                assert_eq!(ok, [true, false, true, false]);
                assert!(units[1].diagnostics[0].message.contains("nope"));
                assert!(units[3].compile.as_ref().unwrap().log.contains("other"));
                assert_eq!(units[0].compile.as_ref().unwrap().arch, "sm_90");
            }
        }
    }
}
