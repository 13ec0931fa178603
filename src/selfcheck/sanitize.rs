//! `harness selfcheck --sanitizer memcheck[,racecheck,…]`: after the self-check's own runs,
//! every harness whose kernel ran is run once more per tool under NVIDIA's
//! compute-sanitizer, through verify's sanitizer pass (`verify::sanitizer`: one seed, the
//! smallest size set, no canary zones, the deadline × 20). Without canary zones a read
//! past a too-short buffer lands outside its allocation, which memcheck reports; the plain
//! self-check cannot see such reads (they return whatever lies there, the same every run).
//! Each tool becomes one more check of the report, named after the tool: a tool that
//! reports errors fails it with the sanitizer's line (kernel, access, address).

use super::{Check, CheckResult, Report};
use crate::verify::engine::Job;
use crate::verify::pool::Launcher;
use crate::verify::sanitizer::{self, Tool, ToolRun};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

/// The named failure category of a tool's errors.
pub fn category(tool: Tool) -> &'static str {
    match tool {
        Tool::Memcheck => {
            "out-of-bounds access (memcheck: a buffer shorter than the kernel reads or writes)"
        }
        Tool::Racecheck => "shared-memory race (racecheck)",
        Tool::Initcheck => "read of uninitialized memory (initcheck)",
        Tool::Synccheck => "invalid synchronization (synccheck)",
    }
}

/// The check one tool's run gives.
pub fn tool_check(tool: Tool, run: &ToolRun) -> Check {
    let (result, detail) = if run.errors > 0 {
        (CheckResult::Fail, sanitizer::error_line(tool, run))
    } else if run.ran {
        (
            CheckResult::Pass,
            run.summary.clone().unwrap_or_default().trim().to_string(),
        )
    } else {
        (
            CheckResult::NotRun,
            format!(
                "compute-sanitizer {} gave no report: {}",
                tool.as_str(),
                run.problem.as_deref().unwrap_or("unknown reason")
            ),
        )
    };
    Check {
        name: tool.as_str().into(),
        result,
        detail,
    }
}

/// Add `check` to a report; a failing one fails the report (keeping an earlier category).
pub fn add_check(r: &mut Report, check: Check, tool: Tool) {
    if check.result == CheckResult::Fail {
        r.pass = false;
        r.category.get_or_insert_with(|| category(tool).to_string());
    }
    r.checks.push(check);
}

/// How the sanitizer pass of a self-check runs.
pub struct Options<'a> {
    pub tools: &'a [Tool],
    /// `--compute-sanitizer PATH`, else looked up as verify does.
    pub binary: Option<&'a Path>,
    pub devices: usize,
    pub launch: Launcher,
    /// The self-check's deadline per pair (scaled by [`sanitizer::SLOWDOWN`] here).
    pub timeout: Duration,
    pub hello_timeout: Duration,
}

/// Run the tools over `targets` (report index, the self-check's job) and add their checks
/// to the reports. compute-sanitizer missing: one line on stderr, and each target gets a
/// `not_run` check saying so.
pub fn sanitize(o: &Options, targets: Vec<(usize, Job)>, reports: &mut [Option<Report>]) {
    if o.tools.is_empty() || targets.is_empty() {
        return;
    }
    let binary = match sanitizer::locate(o.binary) {
        Ok(b) => b,
        Err(why) => {
            eprintln!("{why}; --sanitizer skipped");
            for (i, _) in targets {
                if let Some(r) = reports[i].as_mut() {
                    for &tool in o.tools {
                        r.checks.push(Check {
                            name: tool.as_str().into(),
                            result: CheckResult::NotRun,
                            detail: format!("skipped: {why}"),
                        });
                    }
                }
            }
            return;
        }
    };
    let pass = sanitizer::Pass {
        binary,
        tools: o.tools.to_vec(),
        devices: o.devices,
        worker: o.launch.clone(),
        timeout: o.timeout.mul_f64(sanitizer::SLOWDOWN),
        hello_timeout: o.hello_timeout * 2,
    };
    sanitizer::run_pass(&pass, targets, |i, _job, runs: BTreeMap<Tool, ToolRun>| {
        if let Some(r) = reports[i].as_mut() {
            for (tool, run) in &runs {
                add_check(r, tool_check(*tool, run), *tool);
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::verify::sanitizer::parse;

    const OOB_READ: &str = "\
========= COMPUTE-SANITIZER
========= Invalid __global__ read of size 4 bytes
=========     at gather_scale+0x90
=========     by thread (7,0,0) in block (12,0,0)
=========     Access to 0x7f0000061a80 is out of bounds
=========     and is 8 bytes after the nearest allocation at 0x7f0000000000 of size 100,000 bytes
=========
========= ERROR SUMMARY: 1 error
";

    fn passing_report() -> Report {
        Report {
            pair_id: "p".into(),
            benchmark: "b".into(),
            kernel: "k".into(),
            harness: None,
            origin: None,
            pass: true,
            category: None,
            checks: super::super::checks_from(None),
            ms: None,
            inputs: String::new(),
        }
    }

    #[test]
    fn a_memcheck_error_fails_the_report_with_the_sanitizers_line() {
        let run = ToolRun::from_report(parse(OOB_READ), Some(sanitizer::ERROR_EXIT), None);
        let c = tool_check(Tool::Memcheck, &run);
        assert_eq!(c.name, "memcheck");
        assert_eq!(c.result, CheckResult::Fail);
        assert!(
            c.detail
                .contains("kernel gather_scale: Invalid __global__ read of size 4 bytes"),
            "{}",
            c.detail
        );
        assert!(c.detail.contains("is out of bounds"), "{}", c.detail);
        let mut r = passing_report();
        add_check(&mut r, c, Tool::Memcheck);
        assert!(!r.pass);
        assert!(r
            .category
            .as_deref()
            .unwrap()
            .starts_with("out-of-bounds access (memcheck"));
        assert_eq!(r.checks.len(), 7);
    }

    #[test]
    fn a_clean_run_passes_and_an_unfinished_one_is_not_run() {
        let clean = "========= COMPUTE-SANITIZER\n========= ERROR SUMMARY: 0 errors\n";
        let run = ToolRun::from_report(parse(clean), Some(0), None);
        let c = tool_check(Tool::Memcheck, &run);
        assert_eq!(
            (c.result, c.detail.as_str()),
            (CheckResult::Pass, "ERROR SUMMARY: 0 errors")
        );
        let mut r = passing_report();
        add_check(&mut r, c, Tool::Memcheck);
        assert!(r.pass && r.category.is_none());
        let killed = ToolRun::from_report(
            parse(""),
            None,
            Some("did not finish within 600 s; killed".into()),
        );
        let c = tool_check(Tool::Racecheck, &killed);
        assert_eq!(c.result, CheckResult::NotRun);
        assert!(c.detail.contains("did not finish"), "{}", c.detail);
    }
}
