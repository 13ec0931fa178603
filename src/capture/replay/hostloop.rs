//! A kernel launched several times in a row by a host loop (Parboil fft's passes, a Jacobi
//! sweep swapping two grids), replayed as it ran. When the capture holds consecutive
//! launches of the fast kernel in one process (`capture --first K`, K ≥ 2), they are one
//! harness: each allocation they reach is one buffer (named by its device address, so the
//! buffers a loop swaps keep their identity), filled with what the first launch to reach
//! it found there and expected to end as the last launch left it, and every launch runs in
//! order with its own parameters. The slow side runs its own captured loop on those buffers
//! when it was captured through the same parameters, else the fast side's launches with its
//! own kernel.
//!
//! Refused by name: a skipped launch, texture or surface objects, an allocation of another
//! size under the same address, memory the host changed between two launches (the loop
//! then is not the whole computation), a slow loop of another length or shape.

use super::{
    captured_launch, elem_of, param_bytes, sequence_replay, slow_symbol, symbol_for, usable,
    Replay, ReplayError, SlowLaunch,
};
use crate::capture::index::{CaptureIndex, Entry};
use crate::gpu::capture::{BlobStore, Manifest};
use crate::harness::{
    BytesPointer, ElemType, Expected, Init, Launch, ResolvedArg, Role, Tolerance,
};
use crate::record::KernelUnit;
use std::collections::BTreeMap;
use std::path::Path;

/// The run of consecutive launches of `m`'s kernel in `m`'s process that holds `m`, in
/// order, when it has more than one launch.
pub(super) fn loop_run<'a>(
    idx: &'a CaptureIndex,
    unit: &KernelUnit,
    e: &Entry,
    m: &Manifest,
) -> Option<Vec<&'a (Entry, Manifest)>> {
    let dir = e.path.parent().unwrap_or(Path::new(""));
    let mut mine: Vec<&(Entry, Manifest)> = idx
        .of_unit(unit)
        .filter(|(f, n)| {
            n.pid == m.pid
                && f.program == e.program
                && f.path.parent().unwrap_or(Path::new("")) == dir
        })
        .collect();
    mine.sort_by_key(|(_, n)| n.seq);
    let at = mine.iter().position(|(_, n)| n.seq == m.seq)?;
    let same = |a: &Manifest, b: &Manifest| a.kernel == b.kernel && a.symbol == b.symbol;
    let mut start = at;
    while start > 0 && same(&mine[start - 1].1, m) && mine[start - 1].1.seq + 1 == mine[start].1.seq
    {
        start -= 1;
    }
    let mut end = at;
    while end + 1 < mine.len()
        && same(&mine[end + 1].1, m)
        && mine[end].1.seq + 1 == mine[end + 1].1.seq
    {
        end += 1;
    }
    (end > start).then(|| mine[start..=end].to_vec())
}

/// One pointer word of a launch: (launch, parameter, word) → the buffer it addresses.
type Slot = (usize, usize, usize);

/// One allocation a loop's launches reach.
struct Buf {
    bytes: u64,
    /// Its first and last use: (launch, allocation of that launch).
    first: (usize, usize),
    last: (usize, usize),
    /// The parameter that first passed it alone and whole, if one did.
    whole: Option<usize>,
}

/// The allocations a loop's launches reach, as buffers keyed by device address.
struct Buffers {
    bufs: Vec<Buf>,
    slot: BTreeMap<Slot, usize>,
}

fn refuse(unit: &KernelUnit, why: String) -> ReplayError {
    ReplayError::Unsupported {
        kernel: unit.kernel.clone(),
        why,
    }
}

/// The 8-byte little-endian word at `at` of parameter `i`'s bytes `b`.
fn word(unit: &KernelUnit, b: &[u8], i: usize, at: usize) -> Result<u64, ReplayError> {
    let w = b
        .get(at..at + 8)
        .ok_or_else(|| refuse(unit, format!("parameter {i} has no address at byte {at}")))?;
    Ok(u64::from_le_bytes(w.try_into().expect("8 bytes")))
}

fn buffers(unit: &KernelUnit, run: &[&(Entry, Manifest)]) -> Result<Buffers, ReplayError> {
    let mut out = Buffers {
        bufs: Vec::new(),
        slot: BTreeMap::new(),
    };
    let mut at: BTreeMap<u64, usize> = BTreeMap::new();
    for (j, (_, m)) in run.iter().enumerate() {
        if let Some(why) = &m.skipped {
            return Err(ReplayError::Skipped {
                kernel: unit.kernel.clone(),
                why: format!("launch {} of its host loop: {why}", j + 1),
            });
        }
        if !m.objects.is_empty() {
            return Err(refuse(
                unit,
                "a host loop over texture or surface objects is not replayed".into(),
            ));
        }
        usable(unit, m)?;
        for (i, p) in m.params.iter().enumerate() {
            let bytes = param_bytes(unit, m, i)?;
            for (k, q) in p.pointers.iter().enumerate() {
                let base = word(unit, &bytes, i, q.at)?.wrapping_sub(q.offset);
                let a = m.allocs.get(q.alloc).ok_or_else(|| {
                    refuse(
                        unit,
                        format!("parameter {i} points to a missing allocation"),
                    )
                })?;
                let whole = (q.at == 0 && q.offset == 0 && p.size == 8).then_some(i);
                let b = match at.get(&base) {
                    Some(&b) => {
                        let Buf { bytes, last, .. } = out.bufs[b];
                        if bytes != a.bytes {
                            return Err(refuse(
                                unit,
                                format!(
                                    "the allocation at {base:#x} held {bytes} bytes, then {} at launch {}",
                                    a.bytes,
                                    j + 1
                                ),
                            ));
                        }
                        if last.0 != j && run[last.0].1.allocs[last.1].after != a.before {
                            return Err(refuse(
                                unit,
                                format!(
                                    "the allocation at {base:#x} changed between launches {} and {} of its host loop (the host wrote it)",
                                    last.0 + 1,
                                    j + 1
                                ),
                            ));
                        }
                        out.bufs[b].last = (j, q.alloc);
                        out.bufs[b].whole = out.bufs[b].whole.or(whole);
                        b
                    }
                    None => {
                        at.insert(base, out.bufs.len());
                        out.bufs.push(Buf {
                            bytes: a.bytes,
                            first: (j, q.alloc),
                            last: (j, q.alloc),
                            whole,
                        });
                        out.bufs.len() - 1
                    }
                };
                out.slot.insert((j, i, k), b);
            }
        }
    }
    Ok(out)
}

/// Each launch of `run` with `unit`'s parameters, the addresses in them pointing to the
/// buffers `slot` gives for the same (launch, parameter, word); the bytes args go to `args`.
fn launches(
    unit: &KernelUnit,
    run: &[&(Entry, Manifest)],
    slot: &BTreeMap<Slot, usize>,
    kernel: impl Fn(&Manifest) -> String,
    args: &mut Vec<ResolvedArg>,
) -> Result<Vec<Launch>, ReplayError> {
    let mut out = Vec::new();
    for (j, (_, m)) in run.iter().enumerate() {
        let mut launch_args = Vec::new();
        for (i, p) in m.params.iter().enumerate() {
            let mut pointers = Vec::new();
            for (k, q) in p.pointers.iter().enumerate() {
                let arg = *slot.get(&(j, i, k)).ok_or_else(|| {
                    refuse(
                        unit,
                        format!(
                            "launch {} passes an address in parameter {i} that its fast side's loop does not",
                            j + 1
                        ),
                    )
                })?;
                pointers.push(BytesPointer {
                    at: q.at,
                    arg,
                    offset: q.offset,
                });
            }
            launch_args.push(args.len());
            args.push(ResolvedArg::Bytes {
                name: format!("{}.{}.{}", unit.params[i].name, j + 1, i),
                bytes: param_bytes(unit, m, i)?,
                pointers,
            });
        }
        out.push(captured_launch(m, kernel(m), launch_args));
    }
    Ok(out)
}

/// A pair whose fast kernel's capture is a host loop of its launches (`run`, in order).
pub(super) fn for_loop(
    idx: &CaptureIndex,
    slow: &KernelUnit,
    fast: &KernelUnit,
    run: &[&(Entry, Manifest)],
) -> Result<Replay, ReplayError> {
    let fb = buffers(fast, run)?;
    for w in run.windows(2) {
        let (before, after) = (&w[1].1, &w[0].1);
        for g in &before.globals {
            let prev = after.globals.iter().find(|p| p.name == g.name);
            if prev.is_some_and(|p| p.after != g.before) {
                return Err(refuse(
                    fast,
                    format!(
                        "`{}` changed between two launches of its host loop (the host wrote it)",
                        g.name
                    ),
                ));
            }
        }
    }
    let root = &run[0].0.root;
    let blobs = BlobStore::new(root.join("blobs"));
    let captured = |id: &str| Init::Captured {
        blobs: blobs.root().to_path_buf(),
        id: id.to_string(),
    };
    let mut args = Vec::new();
    let mut expected = Vec::new();
    let mut names: BTreeMap<String, usize> = BTreeMap::new();
    for (
        n,
        &Buf {
            bytes,
            first,
            last,
            whole,
        },
    ) in fb.bufs.iter().enumerate()
    {
        let before = &run[first.0].1.allocs[first.1].before;
        let after = &run[last.0].1.allocs[last.1].after;
        let elem = whole
            .and_then(|i| elem_of(fast, i, &run[0].1.name_expression))
            .filter(|e| bytes % e.size_of() as u64 == 0)
            .unwrap_or(ElemType::U8);
        // A loop swapping two grids passes each through both parameters: the buffer is
        // named by the parameter that first passed it, and by its place when taken.
        let mut name = whole.map_or_else(|| format!("alloc{n}"), |i| fast.params[i].name.clone());
        let seen = names.entry(name.clone()).or_insert(0);
        *seen += 1;
        if *seen > 1 {
            name = format!("{name}.{n}");
        }
        let changed = before != after;
        if changed {
            expected.push(Expected {
                arg: args.len(),
                init: captured(after),
            });
        }
        args.push(ResolvedArg::Buffer {
            name,
            elem,
            len: (bytes / elem.size_of() as u64) as usize,
            init: captured(before),
            role: if changed { Role::Inout } else { Role::In },
            tol: Tolerance::default_for(elem),
            allow_degenerate: true,
            layout: Default::default(),
            compare: None,
        });
    }
    let fast_launches = launches(fast, run, &fb.slot, |m| symbol_for(fast, m), &mut args)?;
    // The slow kernel's own loop, when it was captured through the same parameters: the
    // same number of launches, each address word where the fast loop has one, into
    // allocations of the same sizes.
    let own = idx
        .find(slow)
        .filter(|_| slow.id != fast.id)
        .and_then(|(e, m)| loop_run(idx, slow, e, m));
    let (slow_launches, how) = match own {
        Some(srun) => {
            let sb = buffers(slow, &srun)?;
            let same_shape = srun.len() == run.len()
                && sb.slot.keys().eq(fb.slot.keys())
                && sb
                    .slot
                    .iter()
                    .all(|(s, &b)| sb.bufs[b].bytes == fb.bufs[fb.slot[s]].bytes);
            if !same_shape {
                return Err(refuse(
                    slow,
                    format!(
                        "its host loop ({} launches) does not pass the buffers {}'s ({} launches) does",
                        srun.len(),
                        fast.kernel,
                        run.len()
                    ),
                ));
            }
            let l = launches(slow, &srun, &fb.slot, |m| symbol_for(slow, m), &mut args)?;
            (l, SlowLaunch::Own)
        }
        None => {
            if slow.params.len() != fast.params.len() {
                return Err(ReplayError::Params {
                    kernel: slow.kernel.clone(),
                    unit: slow.params.len(),
                    captured: run[0].1.params.len(),
                });
            }
            let single = idx
                .find(slow)
                .filter(|_| slow.id != fast.id)
                .map(|(_, m)| m);
            super::fits_fast_launch(slow, single, &run[0].1)?;
            let name = |m: &Manifest| slow_symbol(slow, fast, &symbol_for(fast, m));
            let l = launches(fast, run, &fb.slot, name, &mut args)?;
            (l, SlowLaunch::Fast)
        }
    };
    Ok(sequence_replay(
        run,
        &[&fast.source, &slow.source],
        (args, expected),
        (slow_launches, fast_launches),
        how,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu::capture::manifest::{CapturedAlloc, CapturedParam};

    const A: u64 = 0x7f00_a000_0000;
    const B: u64 = 0x7f00_b000_0000;

    fn unit(kernel: &str) -> KernelUnit {
        let mut u = KernelUnit::for_test(
            kernel,
            &[("const float *", "src"), ("float *", "dst"), ("int", "w")],
            "",
        );
        u.id = format!("u-{kernel}");
        u.path = "loop/main.cu".into();
        u
    }

    /// One sweep `src → dst` of process `pid`, launch `seq`: (address, before, after) each.
    fn sweep(
        kernel: &str,
        pid: u32,
        seq: u64,
        src: (u64, &str, &str),
        dst: (u64, &str, &str),
    ) -> Manifest {
        Manifest {
            seq,
            pid,
            nth: seq,
            ..Manifest::for_test(
                kernel,
                vec![
                    CapturedParam::address(0, src.0, 0),
                    CapturedParam::address(8, dst.0, 1),
                    CapturedParam::scalar(16, "00040000"),
                ],
                vec![
                    CapturedAlloc::device(src.1, src.2),
                    CapturedAlloc::device(dst.1, dst.2),
                ],
            )
        }
    }

    /// Three sweeps swapping two grids: a → b, b → a, a → b.
    fn swaps(kernel: &str, pid: u32, b_before_second: &str) -> Vec<Manifest> {
        vec![
            sweep(kernel, pid, 0, (A, "a0", "a0"), (B, "b0", "b1")),
            sweep(kernel, pid, 1, (B, b_before_second, "b1"), (A, "a0", "a2")),
            sweep(kernel, pid, 2, (A, "a2", "a2"), (B, "b1", "b3")),
        ]
    }

    fn index_of(ms: Vec<Manifest>) -> CaptureIndex {
        crate::capture::replay::tests::index_in("loop", ms)
    }

    fn buffer_inits(set: &crate::harness::Resolved) -> Vec<(String, String)> {
        set.args
            .iter()
            .filter_map(|a| match a {
                ResolvedArg::Buffer {
                    name,
                    init: Init::Captured { id, .. },
                    ..
                } => Some((name.clone(), id.clone())),
                _ => None,
            })
            .collect()
    }

    /// A host loop swapping two grids replays as it ran: two buffers known by address, each
    /// filled as the loop found it and expected as it left it, three launches in order, the
    /// second reading the grid the first wrote; a slow loop captured the same way runs its
    /// own launches, one never captured runs the fast loop with its own kernel.
    #[test]
    fn a_host_loop_of_one_kernel_replays_as_it_ran() {
        let fast = unit("jacobi_fast");
        let slow = unit("jacobi_slow");
        let mut ms = swaps("jacobi_fast", 1, "b1");
        ms.extend(swaps("jacobi_slow", 2, "b1"));
        let idx = index_of(ms);
        let r = super::super::for_pair(&idx, &slow, &fast).unwrap();
        let set = &r.sets[0];
        assert_eq!(
            buffer_inits(set),
            vec![
                ("src".to_string(), "a0".to_string()),
                ("dst".to_string(), "b0".to_string())
            ]
        );
        let want: Vec<(usize, String)> = set
            .expected
            .iter()
            .map(|e| match &e.init {
                Init::Captured { id, .. } => (e.arg, id.clone()),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(want, vec![(0, "a2".to_string()), (1, "b3".to_string())]);
        assert_eq!((set.fast.len(), set.slow.len()), (3, 3));
        assert_eq!(r.slow_launch, SlowLaunch::Own);
        assert_eq!(set.slow[0].kernel, "jacobi_slow");
        // The second launch reads b (buffer 1) and writes a (buffer 0).
        let targets = |l: &Launch| -> Vec<usize> {
            l.args
                .iter()
                .filter_map(|&a| match &set.args[a] {
                    ResolvedArg::Bytes { pointers, .. } => pointers.first().map(|p| p.arg),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(targets(&set.fast[1]), vec![1, 0]);
        assert_eq!(targets(&set.slow[1]), vec![1, 0]);
        // A slow kernel never captured runs the fast loop's launches under its own name.
        let other = unit("jacobi_plain");
        let r = super::super::for_pair(&idx, &other, &fast).unwrap();
        assert_eq!(r.slow_launch, SlowLaunch::Fast);
        assert_eq!(r.sets[0].slow.len(), 3);
        assert_eq!(r.sets[0].slow[2].kernel, "jacobi_plain");
    }

    /// A grid the host rewrote between two launches is refused by name; a kernel with one
    /// captured launch is no loop.
    #[test]
    fn a_loop_whose_memory_the_host_changed_is_refused_and_one_launch_is_no_loop() {
        let fast = unit("jacobi_fast");
        let idx = index_of(swaps("jacobi_fast", 1, "host wrote this"));
        let e = super::super::for_pair(&idx, &fast, &fast).unwrap_err();
        assert!(
            e.to_string().contains("changed between launches 1 and 2"),
            "{e}"
        );
        let one = index_of(vec![sweep(
            "jacobi_fast",
            1,
            0,
            (A, "a0", "a0"),
            (B, "b0", "b1"),
        )]);
        let (en, m) = &one.manifests[0];
        assert!(loop_run(&one, &fast, en, m).is_none());
        let r = super::super::for_pair(&one, &fast, &fast).unwrap();
        assert_eq!(r.sets[0].fast.len(), 1);
    }
}
