//! Whole record files as every stage sees them: the stable `--shard i/n` partition and
//! the merge of shard outputs. Below the stages and the pipeline, which all use it.

pub mod files;
pub mod merge;
pub mod shard;

pub use files::StageFiles;
pub use shard::{shard_filter, Shard};
