//! The record files a record-to-record stage (`synth`, `verify`) reads and writes, as its
//! command line names them.

use super::Shard;
use crate::jsonl::{read_records, JsonlError};
use crate::record::Record;
use std::path::PathBuf;

#[derive(Debug, Clone, clap::Args)]
pub struct StageFiles {
    /// Records to read (JSONL); records the stage has no work for pass through unchanged.
    #[arg(long = "in")]
    pub input: PathBuf,
    /// Where to write every record, worked on or passed through (atomically, at the end).
    #[arg(long = "out")]
    pub output: PathBuf,
    /// Work on shard i of n only (0-based, a stable partition by record id); join the
    /// shards' outputs with `kernelpair merge`.
    #[arg(long, value_name = "I/N")]
    pub shard: Option<Shard>,
}

impl StageFiles {
    /// The input's records, only this shard's when one is named.
    pub fn read(&self) -> Result<Vec<Record>, JsonlError> {
        let mut records = read_records(&self.input)?;
        if let Some(sh) = self.shard {
            records.retain(|r| sh.contains(r));
        }
        Ok(records)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        files: StageFiles,
    }

    #[test]
    fn a_named_shard_reads_only_its_records() {
        let dir = tempfile::tempdir().unwrap();
        let input = dir.path().join("in.jsonl");
        let recs: Vec<Record> = (0..40)
            .map(|i| {
                Record::Skipped(crate::record::Skipped {
                    path: format!("f{i}.cu"),
                    reason: crate::record::SkipReason::Binary,
                    message: String::new(),
                })
            })
            .collect();
        crate::jsonl::write_records(&input, &recs).unwrap();
        let parse = |extra: &[&str]| {
            let mut args = vec!["x", "--in", input.to_str().unwrap(), "--out", "o"];
            args.extend_from_slice(extra);
            Cmd::parse_from(args).files
        };
        assert_eq!(parse(&[]).read().unwrap(), recs);
        let parts: Vec<Vec<Record>> = ["0/2", "1/2"]
            .iter()
            .map(|s| parse(&["--shard", s]).read().unwrap())
            .collect();
        assert_eq!(parts[0].len() + parts[1].len(), recs.len());
        assert!(!parts[0].is_empty() && !parts[1].is_empty());
        assert!(parts[0].iter().all(|r| !parts[1].contains(r)));
    }
}
