//! `harness infer` on fixtures/infer_asof (host code we wrote, laid out like Rodinia): a grid
//! counter computed once, rounded up under a condition and reused afterwards, and a block
//! size chosen by an if/else, give a complete harness whose launch covers the buffer at
//! every size set; a grid that a data-dependent loop decides stays a TODO with its reason.
//! A table only a legacy texture reads becomes an input of its own, and an output the host
//! fills before a kernel that stores only where a mask is set is `inout`.
//! On the GPU (`#[ignore]`) the complete harnesses pass the self-check.

use kernelpair::harness::expr::Scope;
use std::path::{Path, PathBuf};

fn fixture() -> PathBuf {
    common::fixture("infer_asof")
}

mod common;
use common::{harness_check, selfcheck_inferred};

/// Extract and infer into `dir`; returns (units file, (kernel, inferred TOML) per pair).
fn infer(dir: &Path) -> (PathBuf, Vec<(String, String)>) {
    let (units, ids) = common::extract_units(&fixture(), dir);
    let out = dir.join("inferred");
    common::infer_into(&units, &fixture(), &out);
    let pairs = ids
        .into_iter()
        .map(|(kernel, id)| {
            let text = std::fs::read_to_string(out.join(format!("{id}.toml"))).unwrap();
            (kernel, text)
        })
        .collect();
    (units, pairs)
}

/// The first component of a launch field (`grid = ["a", "b"]` → a; `block = "c"` → c).
fn field(toml: &str, key: &str) -> String {
    let l = toml
        .lines()
        .find(|l| l.starts_with(&format!("{key} = ")))
        .unwrap_or_else(|| panic!("no {key} in\n{toml}"));
    let v = l.split_once('=').unwrap().1.trim();
    serde_json::from_str::<Vec<String>>(v)
        .map(|c| c[0].clone())
        .or_else(|_| serde_json::from_str::<String>(v))
        .unwrap_or_else(|e| panic!("{key}: {v}: {e}"))
}

#[test]
fn a_reused_counter_and_branches_give_a_launch_that_covers_every_size_set() {
    let t = tempfile::tempdir().unwrap();
    let (_, pairs) = infer(t.path());
    let scale = &pairs
        .iter()
        .find(|(k, _)| k == "scale_add")
        .expect("scale_add")
        .1;
    assert!(
        !scale.contains("\"TODO\"") && !scale.contains("# Unknowns"),
        "{scale}"
    );
    let (grid, block) = (field(scale, "grid"), field(scale, "block"));
    // Both size sets the harness has (the run script's n, and the irregular one), and a
    // small n for the other branch of the block size.
    let sizes: Vec<i64> = scale
        .lines()
        .filter_map(|l| l.strip_prefix("n = "))
        .map(|v| v.split_whitespace().next().unwrap().parse().unwrap())
        .chain([1000, 1024, 4096])
        .collect();
    assert!(sizes.contains(&100000), "{scale}");
    for n in sizes {
        let mut s = Scope::default();
        s.set_int("n", n);
        let (g, b) = (s.eval_int(&grid).unwrap(), s.eval_int(&block).unwrap());
        let want_b = if n < 1024 { 128 } else { 256 };
        assert_eq!(b, want_b, "block at n = {n}: {block}");
        // Exactly the host's grid: ceil(n / block), not one block more or less.
        assert_eq!(g, (n + b - 1) / b, "grid at n = {n}: {grid}");
    }
}

#[test]
fn a_grid_a_data_dependent_loop_decides_stays_unknown() {
    let t = tempfile::tempdir().unwrap();
    let (_, pairs) = infer(t.path());
    let halve = &pairs.iter().find(|(k, _)| k == "halve").expect("halve").1;
    assert!(
        halve.contains("grid = \"TODO\"  # `parts` is changed in a loop (line 58)"),
        "{halve}"
    );
}

#[test]
fn a_texture_only_buffer_becomes_an_arg_and_a_copied_in_masked_output_is_inout() {
    let t = tempfile::tempdir().unwrap();
    let (_, pairs) = infer(t.path());
    let get = |k: &str| -> toml::Value {
        let text = &pairs.iter().find(|(n, _)| n == k).expect(k).1;
        assert!(!text.contains("\"TODO\""), "{text}");
        toml::from_str(text).unwrap()
    };
    let weigh = get("weigh");
    let args = weigh["args"].as_array().unwrap();
    // The table the host binds to `t_weights` is an input of its own, sized by its
    // allocation, and the texture reads it; the launch names the kernel's three args.
    let w = args
        .iter()
        .find(|a| a["name"].as_str() == Some("d_w"))
        .unwrap();
    assert_eq!(w["len"].as_str(), Some("96"));
    assert_eq!(w["role"].as_str(), Some("in"));
    assert_eq!(weigh["textures"][0]["buffer"].as_str(), Some("d_w"));
    let launch_args: Vec<&str> = weigh["launch"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(launch_args, ["x", "y", "n"]);
    // The kernel stores to `v` only where the mask is set; the host filled it first.
    let masked = get("masked_set");
    let v = masked["args"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"].as_str() == Some("v"))
        .unwrap();
    assert_eq!(v["role"].as_str(), Some("inout"));
}

/// Extract and infer with `--assume-size 4096` into `dir/assumed`: (units file, that folder,
/// `kernel`'s pair id).
fn infer_assumed(dir: &Path, kernel: &str) -> (PathBuf, PathBuf, String) {
    let (units, ids) = common::extract_units(&fixture(), dir);
    let out = dir.join("assumed");
    common::infer_assumed_into(&units, &fixture(), &out, 4096);
    let id = ids
        .into_iter()
        .find(|(k, _)| k == kernel)
        .unwrap_or_else(|| panic!("{kernel}"))
        .1;
    (units, out, id)
}

#[test]
fn an_assumed_size_is_halved_until_the_launch_fits_the_device() {
    let t = tempfile::tempdir().unwrap();
    let (units, out, id) = infer_assumed(t.path(), "row_diff");
    let text = std::fs::read_to_string(out.join(format!("{id}.toml"))).unwrap();
    // `int width, height;` then fscanf: no value in the code, so both are assumed; a block
    // of `width - 12` threads does not fit 1024 at 4096 or 2048, and does at 1024.
    assert!(!text.contains("\"TODO\""), "{text}");
    assert!(
        text.contains("#   assume-size: 1024, not 4096: with 4096,")
            && text.contains("4084 threads per block exceeds the device's 1024"),
        "{text}"
    );
    let h: toml::Value = toml::from_str(&text).unwrap();
    assert_eq!(h["sizes"]["width"].as_integer(), Some(1024));
    assert_eq!(h["sizes"]["height"].as_integer(), Some(1024));
    harness_check(out.join(format!("{id}.toml")), &units, &id).success();
}

#[test]
fn a_chunked_launch_runs_its_first_chunk_over_the_callers_count() {
    // chunked: `block_sums<<<grid, BLOCK>>>(num, data_d + c * CHUNK * BLOCK, sums_d + (c *
    // CHUNK))` in `for (c = 0; …)`, inside a function two callers give buffers of different
    // sizes, each with its count beside it; the scratch size is settled by a search loop.
    let t = tempfile::tempdir().unwrap();
    let (_, pairs) = infer(t.path());
    let text = &pairs
        .iter()
        .find(|(k, _)| k == "block_sums")
        .expect("block_sums")
        .1;
    let h: toml::Value = toml::from_str(text).unwrap();
    // The first pass: c = 0, so the pointers are the buffers themselves.
    assert!(
        text.contains(
            "c = 0  # host `c`: the counter of the loop around the launch, on its first pass"
        ),
        "{text}"
    );
    let arg = |n: &str| {
        h["args"]
            .as_array()
            .unwrap()
            .iter()
            .find(|a| a["name"].as_str() == Some(n))
            .unwrap_or_else(|| panic!("{n} in {text}"))
            .clone()
    };
    // Each caller's buffer holds the count it passes: the length is that parameter.
    assert_eq!(arg("data")["len"].as_str(), Some("(count)"), "{text}");
    // The scratch size is not the loop's first value: it stays a named unknown, with why.
    assert_eq!(arg("sums")["len"].as_str(), Some("scratch"), "{text}");
    assert!(
        text.contains(
            "scratch = \"TODO\"  # `scratch` is changed in a loop (line 35) before it is used"
        ),
        "{text}"
    );
    // With assumed sizes the harness is complete and passes the check.
    let (units, out, id) = infer_assumed(t.path(), "block_sums");
    let file = out.join(format!("{id}.toml"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("\"TODO\""), "{text}");
    assert!(text.contains("scratch = 4096  # ASSUMED"), "{text}");
    harness_check(&file, &units, &id).success();
}

#[test]
fn a_product_of_assumed_arguments_moves_with_them_in_the_irregular_set() {
    // argvprod: `count = width * height` from two command-line arguments no run script
    // gives; `bins` is bounds-checked, so the irregular set moves the assumed 4096 and the
    // width and height with it. The count must be their product there too, or the kernel
    // reads past the moved pixel buffer.
    let t = tempfile::tempdir().unwrap();
    let (units, out, id) = infer_assumed(t.path(), "histogram");
    let file = out.join(format!("{id}.toml"));
    let text = std::fs::read_to_string(&file).unwrap();
    let h: toml::Value = toml::from_str(&text).unwrap();
    assert_eq!(
        h["sizes"]["count"].as_integer(),
        Some(4096 * 4096),
        "{text}"
    );
    let sets = h["size_sets"].as_array().unwrap();
    let irr = sets
        .iter()
        .find(|s| s["name"].as_str() == Some("irregular"))
        .unwrap_or_else(|| panic!("no irregular set in {text}"));
    let (w, hh) = (
        irr["width"].as_integer().unwrap(),
        irr["height"].as_integer().unwrap(),
    );
    assert_ne!(w, 4096, "{text}");
    assert_eq!(irr["count"].as_integer(), Some(w * hh), "{text}");
    harness_check(&file, &units, &id).success();
}

#[test]
fn a_texture_bound_to_a_cuda_array_and_shifted_struct_sizes_give_a_complete_assumed_harness() {
    // texarray: `cudaBindTextureToArray(get_img(), img_ary)` after `cudaMallocArray(&img_ary,
    // …, im->width, im->height)`; tile counts `im->width >> 4`; a block size a search loop
    // picks. Strictly, the block stays unknown; with assumed sizes all is complete.
    let t = tempfile::tempdir().unwrap();
    let (_, pairs) = infer(t.path());
    let strict = &pairs
        .iter()
        .find(|(k, _)| k == "tile_sums")
        .expect("tile_sums")
        .1;
    assert!(strict.contains("block = \"TODO\""), "{strict}");
    let (units, out, id) = infer_assumed(t.path(), "tile_sums");
    let file = out.join(format!("{id}.toml"));
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("\"TODO\""), "{text}");
    let h: toml::Value = toml::from_str(&text).unwrap();
    // The array is an input of its own, read through the texture with the array's extent.
    let texture = |n: &str| {
        h["textures"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"].as_str() == Some(n))
            .unwrap_or_else(|| panic!("no texture {n} in {text}"))
            .clone()
    };
    let tex = texture("img_tex");
    assert_eq!(tex["name"].as_str(), Some("img_tex"), "{text}");
    assert_eq!(tex["buffer"].as_str(), Some("img_ary"), "{text}");
    assert_eq!(tex["width"].as_str(), Some("im_width"), "{text}");
    assert_eq!(tex["height"].as_str(), Some("im_height"), "{text}");
    // A 1-D texture over a 16 × 1 array: a width, no height.
    let w = texture("weight_tex");
    assert_eq!(w["buffer"].as_str(), Some("weight_ary"), "{text}");
    assert_eq!(w["width"].as_str(), Some("16"), "{text}");
    assert!(w.get("height").is_none(), "{text}");
    // The loop-picked block is an assumed size, with the loop as its reason.
    assert!(
        text.contains("#   sizes.threads: `threads` is changed in a loop"),
        "{text}"
    );
    // Tile counts follow the assumed width in every size set (the shift is evaluated).
    let sizes = &h["sizes"];
    let w = sizes["im_width"].as_integer().unwrap();
    assert_eq!(sizes["tiles_w"].as_integer(), Some(w >> 4), "{text}");
    let irr = h["size_sets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str() == Some("irregular"))
        .unwrap_or_else(|| panic!("no irregular set in {text}"));
    let iw = irr["im_width"].as_integer().unwrap();
    assert_eq!(irr["tiles_w"].as_integer(), Some(iw >> 4), "{text}");
    harness_check(&file, &units, &id).success();
}

/// On the GPU: the complete harness passes every self-check (runs clean, writes every
/// output at both size sets, deterministic, non-degenerate, seed-dependent).
#[test]
#[ignore = "needs a GPU; run on the device with -- --ignored"]
fn gpu_selfcheck_passes_the_as_of_launch_harness() {
    let t = tempfile::tempdir().unwrap();
    let (units, pairs) = infer(t.path());
    assert!(pairs.iter().any(|(k, _)| k == "scale_add"));
    let report = t.path().join("report.jsonl");
    // `halve` is incomplete, so the run as a whole is partial; scale_add must pass.
    let rows = selfcheck_inferred(
        &units,
        &t.path().join("inferred"),
        None,
        &report,
        kernelpair::exit::PARTIAL as i32,
    );
    let scale = rows
        .iter()
        .find(|r| r["kernel"] == "scale_add")
        .expect("scale_add row");
    assert_eq!(scale["pass"], true, "{scale}");
    // The texture-only table and the masked output (inout) pass too.
    for k in ["weigh", "masked_set"] {
        let r = rows.iter().find(|r| r["kernel"] == k).expect(k);
        assert_eq!(r["pass"], true, "{r}");
    }
    let halve = rows
        .iter()
        .find(|r| r["kernel"] == "halve")
        .expect("halve row");
    assert_eq!(halve["pass"], false, "{halve}");
}

/// On the GPU: the harness whose assumed size was halved to fit the block limit passes
/// every self-check.
#[test]
#[ignore = "needs a GPU; run on the device with -- --ignored"]
fn gpu_selfcheck_passes_the_halved_assumption() {
    selfcheck_assumed_passes("row_diff");
}

/// On the GPU: the chunked launch's assumed harness (first chunk, the caller's count, an
/// assumed scratch size) passes every self-check.
#[test]
#[ignore = "needs a GPU; run on the device with -- --ignored"]
fn gpu_selfcheck_passes_the_first_chunk_harness() {
    selfcheck_assumed_passes("block_sums");
}

/// On the GPU: the moved product keeps the kernel inside the pixel buffer at the irregular
/// set; the harness passes every self-check.
#[test]
#[ignore = "needs a GPU; run on the device with -- --ignored"]
fn gpu_selfcheck_passes_the_moved_product_harness() {
    selfcheck_assumed_passes("histogram");
}

/// On the GPU: the texture-array harness (the array uploaded as a 2-D texture, assumed
/// sizes, an assumed block) passes every self-check.
#[test]
#[ignore = "needs a GPU; run on the device with -- --ignored"]
fn gpu_selfcheck_passes_the_texture_array_harness() {
    selfcheck_assumed_passes("tile_sums");
}

#[test]
fn a_run_table_is_bounded_by_the_block_width_a_shared_array_allows() {
    // ranges: `run_sums<<<nruns, widest>>>` where `widest` is the longest run read from a
    // file, the kernel keeps one element per thread in `__shared__ float part[MAX_RUN]`,
    // and `runs` holds (first, count) pairs read as `values[first + tid]`.
    let t = tempfile::tempdir().unwrap();
    let (_, out, id) = infer_assumed(t.path(), "run_sums");
    let text = std::fs::read_to_string(out.join(format!("{id}.toml"))).unwrap();
    assert!(!text.contains("\"TODO\""), "{text}");
    let h: toml::Value = toml::from_str(&text).unwrap();
    // The block's width is assumed at the shared array's 64 entries, not 4096 halved to
    // what the device allows; the other sizes keep the assumed 4096.
    assert_eq!(h["sizes"]["width"].as_integer(), Some(64), "{text}");
    assert!(
        text.contains("a block's width, at most 64: run_sums stores to `__shared__ part[MAX_RUN]` at `[threadIdx.x]`"),
        "{text}"
    );
    assert_eq!(h["sizes"]["nruns"].as_integer(), Some(4096), "{text}");
    assert_eq!(h["sizes"]["nvalues"].as_integer(), Some(4096), "{text}");
    assert_eq!(field(&text, "block"), "width");
    // The (first, count) table starts runs a block wide inside `values`.
    let runs = h["args"]
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["name"].as_str() == Some("runs"))
        .expect("runs");
    assert_eq!(
        runs["init"]["hi"].as_str(),
        Some("min((nruns) * 2, nvalues) - (width)"),
        "{text}"
    );
}

#[test]
fn a_size_split_into_equal_parts_stays_a_multiple_in_the_irregular_set() {
    // warpsplit: `(size / warps) * warpid` with `warps = blockDim.x / WARP`: each of a
    // block's 8 warps reads one equal part and the remainder is dropped. The assumed
    // 4096 x 4096 image moves with the bin count to an irregular value; 3585² is odd, so
    // the moved values step down to 3584 (no power of two), whose square is a multiple of 8.
    let t = tempfile::tempdir().unwrap();
    let (_, out, id) = infer_assumed(t.path(), "warp_hist");
    let text = std::fs::read_to_string(out.join(format!("{id}.toml"))).unwrap();
    assert!(!text.contains("\"TODO\""), "{text}");
    assert!(
        text.contains("# `size` stays a multiple of `((256)/(32))`: the kernel splits it"),
        "{text}"
    );
    let h: toml::Value = toml::from_str(&text).unwrap();
    let sets = h["size_sets"].as_array().unwrap();
    let irregular = sets
        .iter()
        .find(|s| s["name"].as_str() == Some("irregular"))
        .expect("an irregular set");
    assert_eq!(irregular["bins"].as_integer(), Some(3584), "{text}");
    assert_eq!(irregular["size"].as_integer(), Some(3584 * 3584), "{text}");
    // The loaded value `d = data[i]` indexes `hist`: in range of the bins.
    assert!(
        text.contains(
            "init = { kind = \"int_range\", lo = 0, hi = \"(bins) - 1\" }  # indexes hist"
        ),
        "{text}"
    );
}

/// On the GPU: the warp-split histogram's harness (irregular set kept a multiple of the
/// warp count) passes every self-check.
#[test]
#[ignore = "needs a GPU; run on the device with -- --ignored"]
fn gpu_selfcheck_passes_the_warp_split_harness() {
    selfcheck_assumed_passes("warp_hist");
}

/// On the GPU: the run-table harness (block width from the shared array, run starts a
/// block's width below the end of `values`) passes every self-check.
#[test]
#[ignore = "needs a GPU; run on the device with -- --ignored"]
fn gpu_selfcheck_passes_the_run_table_harness() {
    selfcheck_assumed_passes("run_sums");
}

/// Infer `kernel`'s harness with `--assume-size 4096` and self-check it alone on the GPU:
/// one report row, passing every check.
fn selfcheck_assumed_passes(kernel: &str) {
    let t = tempfile::tempdir().unwrap();
    let (units, out, id) = infer_assumed(t.path(), kernel);
    let report = t.path().join("report.jsonl");
    let rows = selfcheck_inferred(&units, &out, Some(&id), &report, 0);
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(rows[0]["pass"], true, "{}", rows[0]);
}
