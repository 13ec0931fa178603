//! An I/O error with the path it happened at: the one `Io` variant the stages' error types
//! wrap (`#[error(transparent)] Io(#[from] PathIo)`), so each message reads `PATH: error`.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}", path = .path.display())]
pub struct PathIo {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

impl PathIo {
    pub fn new(path: impl Into<PathBuf>, source: std::io::Error) -> PathIo {
        PathIo {
            path: path.into(),
            source,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_path_then_the_error() {
        let e = PathIo::new(
            "a/b.jsonl",
            std::io::Error::from(std::io::ErrorKind::NotFound),
        );
        assert_eq!(e.to_string(), "a/b.jsonl: entity not found");
        assert!(std::error::Error::source(&e).is_some());
    }
}
