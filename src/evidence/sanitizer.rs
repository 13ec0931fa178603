//! The compute-sanitizer pass's evidence (`evidence.sanitizer`): what `verify --sanitizer`
//! and `harness selfcheck --sanitizer` ran and what each tool reported. `verify::sanitizer`
//! writes it; the record stores it and schemas/verification.schema.json (`$defs/sanitizer`)
//! describes it.

use super::Status;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// A compute-sanitizer tool.
#[derive(
    Debug,
    Clone,
    Copy,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    clap::ValueEnum,
)]
#[serde(rename_all = "lowercase")]
pub enum Tool {
    /// Out-of-bounds and misaligned accesses to global, local and shared memory.
    Memcheck,
    /// Shared-memory data races.
    Racecheck,
    /// Reads of uninitialized global memory.
    Initcheck,
    /// Invalid uses of synchronization primitives (divergent barriers).
    Synccheck,
}

impl Tool {
    pub fn as_str(self) -> &'static str {
        match self {
            Tool::Memcheck => "memcheck",
            Tool::Racecheck => "racecheck",
            Tool::Initcheck => "initcheck",
            Tool::Synccheck => "synccheck",
        }
    }
}

/// The pass over one pair: skipped (with why), or the check-only run under each tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum SanitizerEvidence {
    /// compute-sanitizer could not run (not installed, not found).
    Skipped {
        skipped: String,
    },
    Ran(SanitizerRun),
}

/// What the pass ran for one pair. Fields are in alphabetical order, the order the
/// untyped object this replaced was written in, so the JSON text is unchanged.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SanitizerRun {
    /// The compute-sanitizer binary.
    pub binary: String,
    /// The watchdog deadline of a sanitized job (the pair's deadline × the slowdown).
    pub deadline_s: f64,
    pub seeds: u32,
    /// The size set the check-only job ran (the smallest).
    pub size_set: Option<String>,
    /// Written in the order of the tools' names, as the untyped object was.
    #[serde(serialize_with = "by_name")]
    pub tools: BTreeMap<Tool, ToolRun>,
}

fn by_name<S: serde::Serializer>(tools: &BTreeMap<Tool, ToolRun>, s: S) -> Result<S::Ok, S::Error> {
    let named: BTreeMap<&str, &ToolRun> = tools.iter().map(|(t, r)| (t.as_str(), r)).collect();
    named.serialize(s)
}

impl SanitizerEvidence {
    /// The tools' runs (none when the pass was skipped).
    pub fn tools(&self) -> Option<&BTreeMap<Tool, ToolRun>> {
        match self {
            SanitizerEvidence::Ran(r) => Some(&r.tools),
            SanitizerEvidence::Skipped { .. } => None,
        }
    }
}

/// Errors or warnings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Error,
    Warning,
}

/// One report of the tool (a headline and its indented lines). Fields in alphabetical
/// order (see [`SanitizerRun`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// The first indented lines (thread, block, address, allocation), host frames left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub detail: Vec<String>,
    /// The kernel the report names (`at k+0x90`, `at k(float *, int)+0x70 in f.cu:6`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kernel: Option<String>,
    pub severity: Severity,
    /// The headline without the `=========` prefix and `Error:`/`Warning:` (`Invalid
    /// __global__ write of size 4 bytes`, `Race reported between Write access at k+0x90`).
    pub text: String,
}

/// One tool's run over one pair. Fields in alphabetical order (see [`SanitizerRun`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ToolRun {
    pub errors: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub messages: Vec<Message>,
    /// Why the run gave no usable report (did not start, timed out, no GPU).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub problem: Option<String>,
    /// The tool ran the pair to its summary.
    pub ran: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    pub wall_ms: f64,
    pub warnings: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_reason: Option<String>,
    /// The check-only worker's own verdict under the tool (a memcheck error ends
    /// the kernel, so `crashed` is usual when errors were found).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_status: Option<Status>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both shapes verify has written read back as themselves, and an unknown shape is
    /// refused rather than read as something else.
    #[test]
    fn sanitizer_evidence_reads_both_shapes_verify_writes() {
        let skipped =
            r#"{"skipped":"compute-sanitizer not found (looked in PATH); --sanitizer skipped"}"#;
        let s: SanitizerEvidence = serde_json::from_str(skipped).unwrap();
        assert!(
            matches!(&s, SanitizerEvidence::Skipped { skipped } if skipped.starts_with("compute-sanitizer not found"))
        );
        assert_eq!(serde_json::to_string(&s).unwrap(), skipped);
        let ran = r#"{"binary":"/usr/local/cuda/bin/compute-sanitizer","deadline_s":40.0,"seeds":1,"size_set":"small","tools":{"memcheck":{"errors":1,"exit_code":86,"messages":[{"detail":["Access to 0x7f is out of bounds"],"kernel":"k","severity":"error","text":"Invalid __global__ read of size 4 bytes"}],"ran":true,"summary":"ERROR SUMMARY: 1 error","wall_ms":812.5,"warnings":0,"worker_reason":"an illegal memory access","worker_status":"crashed"},"racecheck":{"errors":0,"exit_code":0,"ran":true,"summary":"RACECHECK SUMMARY: 0 hazards displayed","wall_ms":900.0,"warnings":0}}}"#;
        let r: SanitizerEvidence = serde_json::from_str(ran).unwrap();
        let tools = r.tools().unwrap();
        assert_eq!(tools[&Tool::Memcheck].worker_status, Some(Status::Crashed));
        assert_eq!(tools[&Tool::Memcheck].messages[0].severity, Severity::Error);
        assert_eq!(tools[&Tool::Racecheck].errors, 0);
        assert_eq!(serde_json::to_string(&r).unwrap(), ran);
        // Tools are written by name (initcheck before memcheck), whatever the enum's order.
        let SanitizerEvidence::Ran(mut run) = r else {
            unreachable!()
        };
        let init = run.tools[&Tool::Racecheck].clone();
        run.tools.insert(Tool::Initcheck, init);
        let text = serde_json::to_string(&run).unwrap();
        let at = |t: &str| text.find(&format!("\"{t}\":{{")).unwrap();
        assert!(at("initcheck") < at("memcheck") && at("memcheck") < at("racecheck"));
        assert!(serde_json::from_str::<SanitizerEvidence>(r#"{"tools":{}}"#).is_err());
    }
}
