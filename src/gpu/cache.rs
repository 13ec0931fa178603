//! Compile cache: NVRTC results keyed by sha256(source, arch, options, name
//! expressions, NVRTC version), in memory per worker and optionally on disk
//! (`<dir>/<key>.cubin` + `<key>.json`), so a rerun skips every compile.

use super::nvrtc::{self, CompileRequest, NvrtcError};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// What a cached compile keeps: enough to load the module and explain a failure.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CachedCompile {
    pub ok: bool,
    pub log: String,
    /// Milliseconds the original compile took.
    pub compile_ms: f64,
    pub arch: String,
    pub nvrtc_version: String,
    /// Name expression → lowered name.
    pub lowered: Vec<(String, String)>,
    #[serde(skip)]
    pub image: Vec<u8>,
}

pub use crate::evidence::CacheHit;

#[derive(Default)]
pub struct CompileCache {
    memory: HashMap<String, Arc<CachedCompile>>,
    dir: Option<PathBuf>,
}

/// Options every compile gets beyond the arch (kept in the key).
pub const OPTIONS: &[&str] = &["-lineinfo"];

impl CompileCache {
    pub fn new(dir: Option<PathBuf>) -> Self {
        CompileCache {
            memory: HashMap::new(),
            dir,
        }
    }

    pub fn key(
        source: &str,
        arch: &str,
        exprs: &[String],
        flags: &[String],
        nvrtc_version: &str,
    ) -> String {
        let mut h = Sha256::new();
        for part in [source, arch, nvrtc_version]
            .into_iter()
            .chain(OPTIONS.iter().copied())
            .chain(exprs.iter().map(String::as_str))
            // A separator no expression is, so flags never read as expressions.
            .chain(std::iter::once("\u{1}flags"))
            .chain(flags.iter().map(String::as_str))
        {
            h.update(part.as_bytes());
            h.update([0u8]);
        }
        hex::encode(h.finalize())
    }

    /// Compile (or fetch) `source` for `arch`, resolving `exprs` to lowered names.
    pub fn compile(
        &mut self,
        name: &str,
        source: &str,
        arch: &str,
        exprs: &[String],
        flags: &[String],
    ) -> Result<(Arc<CachedCompile>, CacheHit), NvrtcError> {
        // The include path is part of what was compiled: a header installed later must
        // not be hidden behind a cached failure.
        let version = format!(
            "{} {}",
            nvrtc::load()?.version_string(),
            nvrtc::include_options().join(" ")
        );
        let key = Self::key(source, arch, exprs, flags, &version);
        if let Some(c) = self.memory.get(&key) {
            return Ok((c.clone(), CacheHit::Memory));
        }
        if let Some(c) = self.read_disk(&key) {
            let c = Arc::new(c);
            self.memory.insert(key, c.clone());
            return Ok((c, CacheHit::Disk));
        }
        // The program's own build flags (a unit's `build_flags`) after the fixed options.
        let extra: Vec<String> = OPTIONS
            .iter()
            .map(|s| s.to_string())
            .chain(flags.iter().cloned())
            .collect();
        let out = nvrtc::compile(&CompileRequest {
            source,
            name,
            arch,
            name_expressions: exprs,
            cubin: arch.starts_with("sm_"),
            extra_options: &extra,
        })?;
        let image = match (&out.cubin, &out.ptx) {
            (Some(c), _) => c.clone(),
            (None, Some(p)) => p.as_bytes().to_vec(),
            _ => Vec::new(),
        };
        let c = CachedCompile {
            ok: out.ok,
            log: out.log,
            compile_ms: out.millis,
            arch: arch.to_string(),
            nvrtc_version: version,
            lowered: out.lowered,
            image,
        };
        if c.ok {
            self.write_disk(&key, &c);
        }
        let c = Arc::new(c);
        self.memory.insert(key, c.clone());
        Ok((c, CacheHit::Miss))
    }

    fn read_disk(&self, key: &str) -> Option<CachedCompile> {
        let dir = self.dir.as_ref()?;
        let meta = std::fs::read_to_string(dir.join(format!("{key}.json"))).ok()?;
        let mut c: CachedCompile = serde_json::from_str(&meta).ok()?;
        c.image = std::fs::read(dir.join(format!("{key}.bin"))).ok()?;
        (!c.image.is_empty()).then_some(c)
    }

    /// Best effort: a cache that cannot be written only costs a recompile later.
    fn write_disk(&self, key: &str, c: &CachedCompile) {
        let Some(dir) = &self.dir else { return };
        if std::fs::create_dir_all(dir).is_err() {
            return;
        }
        let bin = dir.join(format!("{key}.bin"));
        let _ = crate::jsonl::write_atomic(&bin, |w| std::io::Write::write_all(w, &c.image));
        let meta = dir.join(format!("{key}.json"));
        let _ = crate::jsonl::write_atomic(&meta, |w| {
            serde_json::to_writer(w, c).map_err(std::io::Error::other)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_changes_with_every_input() {
        let base = CompileCache::key("src", "sm_90", &["k".into()], &[], "13.0");
        assert_ne!(
            base,
            CompileCache::key("src2", "sm_90", &["k".into()], &[], "13.0")
        );
        assert_ne!(
            base,
            CompileCache::key("src", "sm_80", &["k".into()], &[], "13.0")
        );
        assert_ne!(
            base,
            CompileCache::key("src", "sm_90", &["j".into()], &[], "13.0")
        );
        assert_ne!(
            base,
            CompileCache::key("src", "sm_90", &["k".into()], &[], "13.1")
        );
        assert_ne!(
            base,
            CompileCache::key("src", "sm_90", &["k".into()], &["-DX=1".into()], "13.0")
        );
        // A flag is not an expression.
        assert_ne!(
            CompileCache::key("src", "sm_90", &["k".into(), "-DX".into()], &[], "13.0"),
            CompileCache::key("src", "sm_90", &["k".into()], &["-DX".into()], "13.0")
        );
        assert_eq!(
            base,
            CompileCache::key("src", "sm_90", &["k".into()], &[], "13.0")
        );
    }

    /// Where NVRTC is installed: a second compile hits memory, a new cache on the same
    /// folder hits disk, and the lowered names survive the round trip.
    #[test]
    fn memory_and_disk_hits() {
        if nvrtc::load().is_err() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let src = "template<typename T> __global__ void k(T* x){ x[threadIdx.x] *= 2; }";
        let exprs = vec!["k<float>".to_string()];
        let mut c = CompileCache::new(Some(dir.path().to_path_buf()));
        let (a, hit) = c.compile("t.cu", src, "sm_90", &exprs, &[]).unwrap();
        assert_eq!(hit, CacheHit::Miss);
        assert!(a.ok, "{}", a.log);
        assert!(a.image.starts_with(b"\x7fELF"), "CUBIN expected");
        let (_, hit) = c.compile("t.cu", src, "sm_90", &exprs, &[]).unwrap();
        assert_eq!(hit, CacheHit::Memory);
        let mut c2 = CompileCache::new(Some(dir.path().to_path_buf()));
        let (b, hit) = c2.compile("t.cu", src, "sm_90", &exprs, &[]).unwrap();
        assert_eq!(hit, CacheHit::Disk);
        assert_eq!(a.lowered, b.lowered);
        assert_eq!(a.image, b.image);
    }
}
