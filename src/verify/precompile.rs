//! NVRTC off the GPU's path: while the workers run pairs, the parent compiles the batch's
//! kernels into the on-disk compile cache on the CPU cores the workers leave idle, in the
//! order the workers take the pairs. A worker that reaches a pair then loads its modules
//! from the cache (`cache: disk` in the evidence) instead of holding its GPU for the
//! compile. A compile still in flight when the worker gets there is only done twice; a
//! failed compile is not cached, so the worker compiles it again and reports it.

use super::engine::{kernel_exprs, Job};
use crate::gpu::cache::CompileCache;
use crate::harness::Variant;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

/// One module to compile: what the worker's [`CompileCache::compile`] will ask for.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    pub name: String,
    pub source: String,
    pub exprs: Vec<String>,
    pub flags: Vec<String>,
}

/// Both variants' modules of every job, in job order, each module once (the file name is
/// only shown in logs and is not in the cache key: the same module under two names is
/// one compile).
pub fn requests(jobs: &[&Job]) -> Vec<Request> {
    let mut out: Vec<Request> = Vec::new();
    for job in jobs {
        for (which, src) in [(Variant::Slow, &job.slow), (Variant::Fast, &job.fast)] {
            let r = Request {
                name: src.name.clone(),
                source: src.source.clone(),
                exprs: kernel_exprs(&job.sets, which),
                flags: src.flags.clone(),
            };
            let same =
                |o: &Request| (&o.source, &o.exprs, &o.flags) == (&r.source, &r.exprs, &r.flags);
            if !out.iter().any(same) {
                out.push(r);
            }
        }
    }
    out
}

/// What a finished background compile did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Done {
    /// Compiled now (and written to the cache when it compiled).
    pub compiled: usize,
    /// Already in the cache (an earlier run, or a worker got there first).
    pub cached: usize,
    /// Left when the batch ended first.
    pub skipped: usize,
}

/// The background compile of a batch; [`Background::finish`] stops it after the compiles
/// in flight and says what it did.
pub struct Background {
    stop: Arc<AtomicBool>,
    threads: Vec<std::thread::JoinHandle<Done>>,
}

impl Background {
    /// Start `threads` compile threads over `requests` for `arch`, into `dir`.
    pub fn start(requests: Vec<Request>, arch: &str, dir: &Path, threads: usize) -> Background {
        let stop = Arc::new(AtomicBool::new(false));
        let next = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(requests);
        let threads = (0..threads.max(1))
            .map(|_| {
                let (stop, next, requests) = (stop.clone(), next.clone(), requests.clone());
                let (arch, dir): (String, PathBuf) = (arch.to_string(), dir.to_path_buf());
                std::thread::spawn(move || {
                    let mut cache = CompileCache::new(Some(dir));
                    let mut done = Done::default();
                    loop {
                        let i = next.fetch_add(1, Ordering::SeqCst);
                        let Some(r) = requests.get(i) else { break };
                        if stop.load(Ordering::SeqCst) {
                            done.skipped += 1;
                            continue;
                        }
                        match cache.compile(&r.name, &r.source, &arch, &r.exprs, &r.flags) {
                            Ok((_, crate::gpu::cache::CacheHit::Miss)) | Err(_) => {
                                done.compiled += 1
                            }
                            Ok(_) => done.cached += 1,
                        }
                    }
                    done
                })
            })
            .collect();
        Background { stop, threads }
    }

    /// Stop after the compiles in flight (the batch is over).
    pub fn finish(self) -> Done {
        self.stop.store(true, Ordering::SeqCst);
        self.join()
    }

    /// Wait until every request is compiled.
    pub fn wait(self) -> Done {
        self.join()
    }

    fn join(self) -> Done {
        let mut all = Done::default();
        for t in self.threads {
            if let Ok(d) = t.join() {
                all.compiled += d.compiled;
                all.cached += d.cached;
                all.skipped += d.skipped;
            }
        }
        all
    }
}

/// The CPU threads a batch's background compile gets: the machine's cores less one per
/// GPU worker (each feeds its GPU and generates inputs), one at least.
pub fn threads_for(workers: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .saturating_sub(workers)
        .max(1)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::harness::{Launch, Resolved};
    use crate::verify::engine::{RunOptions, Source};

    /// A job of one size set launching `k` once on each side.
    pub(crate) fn job(id: &str, slow: &str, fast: &str) -> Job {
        let launch = Launch {
            kernel: "k".into(),
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shared_mem: 0,
            repeat: 1,
            args: vec![],
            offsets: vec![],
            cooperative: false,
        };
        let set = Resolved {
            origin: String::new(),
            size_set: "s".into(),
            values: Default::default(),
            args: vec![],
            constants: vec![],
            textures: vec![],
            objects: vec![],
            ignores: vec![],
            sparse: vec![],
            slow: vec![launch.clone()],
            fast: vec![launch],
            expected: vec![],
        };
        let src = |s: &str| Source {
            name: format!("{id}.cu"),
            source: s.into(),
            symbol: "k".into(),
            flags: vec![],
        };
        Job {
            pair_id: id.into(),
            slow: src(slow),
            fast: src(fast),
            harness: String::new(),
            sets: vec![set],
            options: RunOptions::default(),
        }
    }

    #[test]
    fn a_module_two_pairs_share_is_asked_for_once_in_job_order() {
        let a = job("a", "naive", "fast1");
        let b = job("b", "naive", "fast2");
        let r = requests(&[&a, &b]);
        let sources: Vec<&str> = r.iter().map(|r| r.source.as_str()).collect();
        // The slow module is "a.cu" in one job and "b.cu" in the other: one compile.
        assert_eq!(sources, ["naive", "fast1", "fast2"]);
        assert_eq!(r[0].exprs, ["k"]);
        let same = requests(&[&a, &a]);
        assert_eq!(same.len(), 2, "the same job twice asks each module once");
    }

    /// The background compile fills the cache the workers read: afterwards a worker's
    /// compile of the same module is a disk hit (real NVRTC; no GPU needed).
    #[test]
    fn the_background_compile_leaves_the_worker_a_disk_hit() {
        if crate::gpu::nvrtc::load().is_err() {
            assert!(
                std::env::var_os("KERNELPAIR_REQUIRE_NVRTC").is_none(),
                "KERNELPAIR_REQUIRE_NVRTC is set but NVRTC is missing"
            );
            eprintln!("skipped: no NVRTC here (pip install nvidia-cuda-nvrtc)");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let good = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] *= 2.0f; }";
        let bad = "extern \"C\" __global__ void k(float* x) { x[threadIdx.x] = undefined_name; }";
        let a = job("a", good, bad);
        let done = Background::start(requests(&[&a]), "sm_90", dir.path(), 2).wait();
        assert_eq!(
            done,
            Done {
                compiled: 2,
                cached: 0,
                skipped: 0
            }
        );
        let mut worker = CompileCache::new(Some(dir.path().to_path_buf()));
        let (c, hit) = worker
            .compile("a.cu", good, "sm_90", &["k".into()], &[])
            .unwrap();
        assert!(c.ok, "{}", c.log);
        assert_eq!(hit, crate::gpu::cache::CacheHit::Disk);
        // A failed compile is not cached: the worker compiles it and reports it.
        let (c, hit) = worker
            .compile("a.cu", bad, "sm_90", &["k".into()], &[])
            .unwrap();
        assert!(!c.ok && hit == crate::gpu::cache::CacheHit::Miss);
        // A second batch over the same modules finds the good one cached.
        let again = Background::start(requests(&[&a]), "sm_90", dir.path(), 1).wait();
        assert_eq!(
            again,
            Done {
                compiled: 1,
                cached: 1,
                skipped: 0
            }
        );
        // A batch that ends at once skips what no thread had started.
        let b = job(
            "b",
            "extern \"C\" __global__ void k(int* x) { x[0] = 1; }",
            good,
        );
        let many: Vec<Job> = (0..40)
            .map(|i| job(&format!("m{i}"), &format!("// {i}\n{good}"), good))
            .collect();
        let refs: Vec<&Job> = std::iter::once(&b).chain(many.iter()).collect();
        let cut = Background::start(requests(&refs), "sm_90", dir.path(), 1).finish();
        assert!(
            cut.skipped > 0 && cut.compiled + cut.cached + cut.skipped == requests(&refs).len(),
            "{cut:?}"
        );
    }
}
