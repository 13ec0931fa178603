//! Content-addressed, compressed blobs (`CAPDIR/blobs/ab/abcdef….zst`): the bytes of a
//! captured allocation, named by their SHA-256, so an allocation that many launches read
//! unchanged is kept once. Written to a temporary name and renamed, so a crash leaves no
//! half-written blob under its final name.

use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// zstd level: capture runs inside the program, so speed comes before ratio.
const LEVEL: i32 = 1;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("blob {id}: {source}")]
    Io {
        id: String,
        #[source]
        source: std::io::Error,
    },
    #[error("blob {id}: holds {got} bytes, its manifest says {want}")]
    Size { id: String, got: u64, want: u64 },
    #[error("blob {id}: its bytes hash to {got}")]
    Hash { id: String, got: String },
}

/// The blob folder of a capture directory.
#[derive(Debug, Clone)]
pub struct BlobStore {
    root: PathBuf,
}

impl BlobStore {
    pub fn new(root: impl Into<PathBuf>) -> BlobStore {
        BlobStore { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where blob `id` lives.
    pub fn path(&self, id: &str) -> PathBuf {
        let shard = id.get(..2).unwrap_or("00");
        self.root.join(shard).join(format!("{id}.zst"))
    }

    /// The id bytes are stored under.
    pub fn id_of(bytes: &[u8]) -> String {
        hex::encode(Sha256::digest(bytes))
    }

    /// Store `bytes` (once: an existing blob of the same id is kept) and return its id.
    pub fn put(&self, bytes: &[u8]) -> Result<String, StoreError> {
        let id = Self::id_of(bytes);
        let path = self.path(&id);
        if path.is_file() {
            return Ok(id);
        }
        let io = |source| StoreError::Io {
            id: id.clone(),
            source,
        };
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let packed = zstd::bulk::compress(bytes, LEVEL).map_err(io)?;
        let tmp = path.with_extension(format!("tmp{}", std::process::id()));
        std::fs::write(&tmp, packed).map_err(io)?;
        std::fs::rename(&tmp, &path).map_err(io)?;
        Ok(id)
    }

    /// The bytes of blob `id`, which must hold `len` bytes and hash to `id`.
    pub fn get(&self, id: &str, len: u64) -> Result<Vec<u8>, StoreError> {
        let io = |source| StoreError::Io {
            id: id.to_string(),
            source,
        };
        let packed = std::fs::read(self.path(id)).map_err(io)?;
        let bytes = zstd::bulk::decompress(&packed, len as usize).map_err(io)?;
        if bytes.len() as u64 != len {
            return Err(StoreError::Size {
                id: id.into(),
                got: bytes.len() as u64,
                want: len,
            });
        }
        let got = Self::id_of(&bytes);
        if got != id {
            return Err(StoreError::Hash { id: id.into(), got });
        }
        Ok(bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_stored_once_and_checked_when_read() {
        let dir = tempfile::tempdir().unwrap();
        let s = BlobStore::new(dir.path());
        let data: Vec<u8> = (0..100_000u32)
            .flat_map(|i| (i % 251).to_le_bytes())
            .collect();
        let id = s.put(&data).unwrap();
        assert_eq!(id.len(), 64);
        assert_eq!(s.put(&data).unwrap(), id, "same bytes, same blob");
        assert!(std::fs::metadata(s.path(&id)).unwrap().len() < data.len() as u64);
        assert_eq!(s.get(&id, data.len() as u64).unwrap(), data);
        assert!(matches!(
            s.get(&id, data.len() as u64 - 1),
            Err(StoreError::Io { .. } | StoreError::Size { .. })
        ));
        // A blob whose bytes were replaced is refused, not replayed.
        let other = s.put(b"other bytes").unwrap();
        std::fs::copy(s.path(&other), s.path(&id)).unwrap();
        assert!(s.get(&id, 11).is_err());
    }
}
