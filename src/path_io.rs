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

/// Text from bytes: UTF-8 when valid, else Windows-1252 (a superset of Latin-1 for the
/// printable range; every byte decodes, so nothing is lost or refused). The encoding used is
/// returned when it was not UTF-8.
pub fn decode(bytes: Vec<u8>) -> (String, Option<&'static str>) {
    match String::from_utf8(bytes) {
        Ok(t) => (t, None),
        Err(e) => {
            let bytes = e.into_bytes();
            let (text, enc, _) = encoding_rs::WINDOWS_1252.decode(&bytes);
            (text.into_owned(), Some(enc.name()))
        }
    }
}

/// A text file's contents through [`decode`]: a legacy byte in a comment costs nothing.
pub fn read_text(path: &std::path::Path) -> std::io::Result<String> {
    std::fs::read(path).map(|b| decode(b).0)
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
