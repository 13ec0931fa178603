//! Host-side cost of checking a pair, without a GPU: input generation per seed and the three
//! scans of each output (comparison, degenerate checks of both sides), for every size set of
//! the harness files given.
//!
//! `cargo bench --bench host -- extractors/parboil/*.toml fixtures/parboil/benchmarks/*/*.toml`
//! prints one line per size set (medians of 5 runs, milliseconds).

use kernelpair::harness::{self, DeviceProps};
use kernelpair::verify::compare;
use std::time::Instant;

fn median_ms(mut f: impl FnMut()) -> f64 {
    let mut t: Vec<f64> = (0..5)
        .map(|_| {
            let s = Instant::now();
            f();
            s.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    t.sort_by(f64::total_cmp);
    t[2]
}

fn main() {
    let files: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a.ends_with(".toml"))
        .collect();
    if files.is_empty() {
        eprintln!("usage: cargo bench --bench host -- HARNESS.toml…");
        return;
    }
    println!("threads: {}", rayon::current_num_threads());
    println!("| harness | size set | input MB | generate one seed ms | scan outputs ms |");
    println!("|---|---|---|---|---|");
    for f in files {
        let h = match harness::load(std::path::Path::new(&f)) {
            Ok(h) if h.needs_host_loop.is_none() => h,
            Ok(_) => continue,
            Err(e) => {
                eprintln!("{e}");
                continue;
            }
        };
        for set in h.size_sets() {
            let Ok(r) = h.resolve(set, &DeviceProps::h100()) else {
                continue;
            };
            let Ok(inputs) = harness::generate_inputs(&r, 1) else {
                continue;
            };
            let mb: usize = inputs.iter().map(|b| b.bytes.len()).sum::<usize>() >> 20;
            let gen = median_ms(|| {
                harness::generate_inputs(&r, 1).unwrap();
            });
            // Outputs as a kernel would leave them: written values (not the poison image).
            let outs: Vec<harness::HostBuffer> = r
                .outputs()
                .iter()
                .map(|&i| {
                    let e = inputs[i].elem;
                    let v: Vec<f64> = (0..inputs[i].len())
                        .map(|k| (k % 1000) as f64 * 0.5 + 1.0)
                        .collect();
                    harness::HostBuffer::from_f64s(e, &v)
                })
                .collect();
            let scan = median_ms(|| {
                for o in &outs {
                    let (a, b) = (o, o);
                    let tol = harness::Tolerance::default_for(a.elem);
                    let ((x, y), c) = rayon::join(
                        || {
                            rayon::join(
                                || compare::check_degenerate(a, None, Some(b), true),
                                || compare::check_degenerate(b, None, Some(a), true),
                            )
                        },
                        || compare::compare(a, b, &tol),
                    );
                    std::hint::black_box((x, y, c));
                }
            });
            println!("| {f} | {} | {mb} | {gen:.1} | {scan:.1} |", set.name);
        }
    }
}
