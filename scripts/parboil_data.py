#!/usr/bin/env python3
"""Generate small datasets for the Parboil CUDA programs (our own synthetic data).

Usage: parboil_data.py OUTDIR [--seed N] [--scale N] [--only app,app,...] [--check]
                              [--check-only]

Parboil's driver runs a program as `BIN -i in1,in2 -o out -- params`, with the inputs and
parameters named by datasets/<app>/<dataset>/input/DESCRIPTION (`Inputs:` and
`Parameters:` lines; driver/benchmark.py), and the public tree ships no datasets. This
script writes OUTDIR/<app>/small/input/ in that layout, from random numbers drawn with
--seed (default 1; never downloaded or copied), so that OUTDIR can stand for the tree's
`datasets/` (`kernelpair capture --data OUTDIR --suite parboil`). Every app gets a
DESCRIPTION with both lines (empty where the program takes nothing), the `Inputs:` in the
order the program reads inpFiles[]. Python 3 stdlib only; the same seed gives
byte-identical files, and each app draws from its own stream (`--only` writes the same
bytes as a full run). `--check` re-reads every file as the program's host code does
(header fields, counts, exact file length, value ranges, the limits its kernels assume)
and fails loudly; `--check-only` only re-reads an existing OUTDIR.

Covered (formats from the host code of every CUDA variant of the app; one DESCRIPTION
serves all variants; sizes at --scale 1):
  bfs       graph.txt   main.cu (cuda, cuda_base): "%d" nodes, per node "%d %d" (first
            edge, degree), "%d" source, "%d" edge count, per edge "%d %d" (node, cost).
            65,536 nodes, undirected (both directions listed), connected, degrees 2-6
            (the kernels' shared queues hold W_QUEUE_SIZE=400 per 64 threads: 6 new
            nodes per thread at most), cost 1 (base/ counts hops), source 0. 2.7 MB
  cp        (none: main.cu draws its own atoms and refuses -i). Empty DESCRIPTION.
  cutcp     watbox.pqr   readatom.c: lines starting "ATOM  ", read as
            "%*s %*d %*s %*s %*d %f %f %f %f" (x y z charge); 4,000 atoms of a water-like
            box at water's 0.1 atoms/A^3 (34 A on a side), charges -0.834 (O) / +0.417 (H)
            (at 0.29 atoms/A^3 cutcp overflowed its bins). 0.3 MB
  fft       signal.bin, Parameters 256 1024   cuda_base/file.cc inputData: N*B complex
            float32 (re, im), no header; then `N B` after `--` (N a power of 2, N/2
            threads a block). cuda/ reads neither (it hard-codes N=256, B=1024 and rand()),
            so the same sizes. 1,024 signals of a few tones plus noise. 2 MiB
  histo     img.bin, Parameters 4   main.cu: uint32 img_width, img_height, histo_width,
            histo_height, then img_width*img_height uint32 bin indices; `iterations`.
            512x768 values on a 256x1536 histogram (one value per bin on average), a 2D
            Gaussian around the centre plus 0.5 % spread evenly. The limits the kernels
            assume are checked: height a multiple of UNROLL=16, histo_width <= img_width
            (global_histo is img_width*histo_height), at least 64*8*512 values (else the
            prescan divides by 0), and the prescan's mean +- 10 sigma, emulated, inside the
            histogram for KB=24 (cuda) and KB=8 (cuda_base). 1.5 MiB
  imghisto  image.bin, Parameters 0 1024 1024 256 4   file.c readImage: DATA_W*DATA_H
            big-endian uint16 12-bit pixels (clamped to 4095); `DEVICE DATA_W DATA_H BINS
            REPETITIONS`. A 1024x1024 image of smooth regions (shaded ellipses on a
            background, low noise), 256 bins. 2 MiB
  lbm       obstacles.of, Parameters 4   lbm.cu LBM_loadObstacleFile: 120x120x150
            characters ('.' fluid, '#' obstacle: six random spheres), a newline per row and
            per plane (the size main.cc checks); 4 time steps. 2.2 MB
  mri-fhd   data.bin   file.cc inputData: int32 numK, int32 numX, float32 kx ky kz (numK),
            x y z (numX), phiR phiI dR dI (numK). 32^3 = 32,768 pixels in [-0.5, 0.5)^3,
            2,048 k-space samples in [-16, 16)^3 (numX a multiple of 256: the kernels index
            x[] without a bound check). 0.5 MB
  mri-q     data.bin   the same without dR, dI. 0.4 MB
  mri-gridding  small.uks (+ small.uks.data), Parameters 32   main.cu setParameters:
            the text lines "aquisition.numsamples=%d" ... "kernel.useLUT=%d"; readSampleData
            reads inpFiles[0] + ".data" (so only the .uks is an input): numsamples records
            of float32 real, imag, kX, kY, kZ, sdc. `binsize` 32. 65,536 samples on 256
            radial spokes through k-space (|k| < kmax = 16), density compensation ~|k|^2,
            the spectrum of a few Gaussian blobs; 32^3 matrix, 64^3 grid (the GPU tiles are
            8x4x8), kernel width 4, no LUT. The crowded centre overflows binsize, so the CPU
            bin is used too. The .uks path must stay under 245 characters (strcpy into
            uksdata[250]). 1.6 MB
  pns       (no input), Parameters 256 8192 512   main.cu: `N s t` (a 2N x 2N place /
            transition grid, N even; steps; trajectories = thread blocks of 256).
  rpes      molecule.txt basis.txt   main.cu: inpFiles[0] "%*s %d" atom count, per atom
            "%s %f %f %f" (one-letter element, x y z); inpFiles[1] "%*s %*s %d" twice (atom
            types, shells), per type "%*s %s", "%*s %d" shells, per shell "%*s %*d %*s %d"
            primitives, per primitive "%*s %*s %*s %f %f" (exponent, coefficient). A
            14-atom molecule (6 C/N/O, 8 H, bond lengths ~2.7 and ~2.0 bohr), s-shells of 4,
            2, 1 primitives (heavy) and 2, 1 (H): 34 shells, 66,045 shell quartets (main.cu
            prints the first 20,000 sums, so at least 20,000), at most 4 blocks a quartet
            (DoReduction's shared array holds 64, and its tree needs a power of 2); atoms,
            primitive offsets < 256 and primitives < 16 (the kernel packs them in bytes /
            nibbles). 1.5 kB
  sad       reference.bin frame.bin   image.c load_image: uint16 width, height, then
            width*height int16 pixels; both the same size, multiples of 16. CIF 352x288,
            8-bit values: a textured, shaded scene and the next frame with the background
            panned and six objects moved (< 16 px, the search range). 0.2 MB each
  sgemm     matrix1.txt matrix2.txt matrix2t.txt   io.cc readColMajorMatrixFile: "rows
            cols" then the values, whitespace-separated, column-major, ending in whitespace
            (the reader drops its last read). A is 256x128, B 128x256, B^T 256x128 (main.cu
            requires three inputs but reads only A and B^T; regtileSgemm tiles m by 128, n by
            16, k by 8). No parameters. 0.9 MB
  simple_mm (none: matrixMul.cu reads no arguments and draws its own matrices). Empty
            DESCRIPTION.
  spmv      matrix.mtx vector.bin   convert_dataset.c coo_to_jds (mmio.c): Matrix Market
            "coordinate real" lines "%d %d %f", 1-based, mirrored (every variant passes
            mirrored=1: each off-diagonal entry stands for both triangles, so the file is
            `symmetric`, lower triangle); file.cc input_vec: dim float32, no header. A
            32^3 periodic 7-point Laplacian-like SPD matrix (32,768 rows, 7 nonzeros in
            every row: no JDS padding, whose column index -1 the kernels would load from
            x[-1]; jds_ptr / nz_count fit the 5,000-entry constant arrays). 2.8 MB + 128 kB
  stencil   128x128x32.bin, Parameters 128 128 32 4   main.cu read_data: nx*ny*nz float32,
            x fastest; then `nx ny nz iterations` after `--` (cuda_base launches nx-1
            threads a block: nx <= 1025). 2 MiB
  tpacf     Datapnts.1 Randompnts.1..8, Parameters -n 8 -p 4096   model_io.cc: "ra dec"
            lines in degrees, uniform on the sphere; the first input is the data, then `-n`
            files of random points, `-p` points each. 0.8 MB
`--scale N` (default 1) multiplies the sizes of sgemm, stencil (x, y), cutcp, mri-fhd,
mri-q and tpacf, whose optimized kernels launch too few blocks at the default sizes to beat
the naive ones; the other apps ignore it (their sizes are tied to limits named above).
All 18 datasets take 20.5 MB at --scale 1 and a few seconds to write.

Skipped: none; all 18 apps with a CUDA variant have a dataset. Whether a variant builds is
another matter: with CUDA 13, texture references (removed from the runtime) stop bfs
(both), rpes/cuda, sad (both) and spmv (all four), and host-only float2 operators used in
device code stop fft (both); their datasets are here for when they are ported. Files are
little-endian (the readers fread host structs) except imghisto's big-endian pixels.
"""
import argparse
import math
import os
import random
import re
import struct
import sys


class DataError(Exception):
    pass


def need(cond, msg):
    """A check that holds under `python -O` too."""
    if not cond:
        raise DataError(msg)


def desc(d, inputs, params):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "DESCRIPTION"), "w") as f:
        f.write("Synthetic dataset (scripts/parboil_data.py).\n")
        f.write("Inputs: " + " ".join(inputs) + "\n")
        f.write("Parameters: " + " ".join(str(p) for p in params) + "\n")


def check_desc(d, inputs, params):
    """Read DESCRIPTION as driver/benchmark.py's unpack_dataset_description does (the last
    `Keyword:` line of each kind wins; values split on whitespace) and compare."""
    got = {}
    for line in open(os.path.join(d, "DESCRIPTION")).read().split("\n"):
        m = re.match(r"^\s*([a-zA-Z]+)\s*:(.*)$", line)
        if m:
            got[m.group(1)] = m.group(2).split()
    need("Inputs" in got and "Parameters" in got, "%s: DESCRIPTION lacks a line" % d)
    need(got["Inputs"] == list(inputs), "%s: Inputs %s" % (d, got["Inputs"]))
    need(got["Parameters"] == [str(p) for p in params],
         "%s: Parameters %s" % (d, got["Parameters"]))
    for name in inputs:
        need(os.path.isfile(os.path.join(d, name)), "%s: input %s missing" % (d, name))


def write_bytes(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def write_text(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="\n") as f:
        f.write(text)


def f32(x):
    """Round to float32, as the C code's float arithmetic does."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def read_exact(path, size):
    data = open(path, "rb").read()
    need(len(data) == size, "%s: %d bytes, expected %d" % (path, len(data), size))
    return data


def bilinear_field(rng, w, h, cells, lo=-1.0, hi=1.0):
    """A smooth random field (rows of floats): uniform values on a (cells+1)^2 lattice,
    bilinearly interpolated to w x h."""
    lat = [[rng.uniform(lo, hi) for _ in range(cells + 1)] for _ in range(cells + 1)]
    xs = []
    for x in range(w):
        fx = x * cells / w
        i = min(int(fx), cells - 1)
        xs.append((i, fx - i))
    out = []
    for y in range(h):
        fy = y * cells / h
        j = min(int(fy), cells - 1)
        ty = fy - j
        row = [(1 - ty) * a + ty * b for a, b in zip(lat[j], lat[j + 1])]
        out.append([row[i] * (1 - tx) + row[i + 1] * tx for i, tx in xs])
    return out


SCALE = 1


# ----------------------------------------------------------------------------- sgemm
# io.cc readColMajorMatrixFile: `f >> rows >> cols`, then `while (f.good()) { f >> v;
# push_back(v); }` and pop_back(): the last value is only kept if whitespace follows it.

def colmajor(path, rows, cols, rng):
    with open(path, "w") as f:
        f.write(f"{rows} {cols}\n")
        vals = [f"{rng.uniform(-1.0, 1.0):.6f}" for _ in range(rows * cols)]
        for i in range(0, len(vals), 16):
            f.write(" ".join(vals[i:i + 16]) + "\n")


def sgemm_dims():
    return 256 * SCALE, 128 * SCALE, 256 * SCALE


def gen_sgemm(d, rng):
    m, k, n = sgemm_dims()
    colmajor(os.path.join(d, "matrix1.txt"), m, k, rng)
    colmajor(os.path.join(d, "matrix2.txt"), k, n, rng)
    colmajor(os.path.join(d, "matrix2t.txt"), n, k, rng)
    desc(d, ["matrix1.txt", "matrix2.txt", "matrix2t.txt"], [])


def check_sgemm(d):
    m, k, n = sgemm_dims()
    check_desc(d, ["matrix1.txt", "matrix2.txt", "matrix2t.txt"], [])
    # main.cu reads matrix1 (A, m x k) and matrix2t (B^T, n x k); regtileSgemm needs
    # m % 128, n % 16 and k % 8 (its k loop steps by 8 without a bound check).
    need(m % 128 == 0 and n % 16 == 0 and k % 8 == 0, "sgemm sizes %d %d %d" % (m, n, k))
    for name, (r, c) in (("matrix1.txt", (m, k)), ("matrix2.txt", (k, n)),
                         ("matrix2t.txt", (n, k))):
        text = open(os.path.join(d, name)).read()
        need(text[-1:].isspace(), "%s: no whitespace after the last value" % name)
        words = text.split()
        need((int(words[0]), int(words[1])) == (r, c),
             "%s: header %s %s" % (name, words[0], words[1]))
        need(len(words) - 2 == r * c, "%s: %d values" % (name, len(words) - 2))
        need(all(math.isfinite(float(w)) for w in words[2:]), "%s: non-finite value" % name)
    return "A %dx%d, B %dx%d, B^T %dx%d" % (m, k, k, n, n, k)


# ----------------------------------------------------------------------------- stencil
# main.cu read_data: nx*ny*nz fread()s of one float, x fastest; `nx ny nz iterations`.

def stencil_dims():
    return 128 * SCALE, 128 * SCALE, 32, 4


def gen_stencil(d, rng):
    nx, ny, nz, it = stencil_dims()
    name = f"{nx}x{ny}x{nz}.bin"
    vals = [rng.uniform(0.0, 1.0) for _ in range(nx * ny * nz)]
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(struct.pack(f"<{len(vals)}f", *vals))
    desc(d, [name], [nx, ny, nz, it])


def check_stencil(d):
    nx, ny, nz, it = stencil_dims()
    name = f"{nx}x{ny}x{nz}.bin"
    check_desc(d, [name], [nx, ny, nz, it])
    need(nx <= 1025, "cuda_base launches nx-1 threads a block")
    data = read_exact(os.path.join(d, name), 4 * nx * ny * nz)
    vals = struct.unpack("<%df" % (nx * ny * nz), data)
    need(all(0.0 <= v <= 1.0 for v in vals), "stencil values out of [0, 1]")
    return "%dx%dx%d float32, %d iterations" % (nx, ny, nz, it)


# ----------------------------------------------------------------------------- cp
# main.cu: "No input files expected" if -i names one; no parameters.

def gen_cp(d, rng):
    desc(d, [], [])


def check_cp(d):
    check_desc(d, [], [])
    return "no input, no parameters"


# ----------------------------------------------------------------------------- cutcp
# readatom.c: fgets(line, 96) lines; "ATOM  " / "HETATM" records sscanf'd as
# "%*s %*d %*s %*s %*d %f %f %f %f"; everything else skipped.

def cutcp_atoms():
    return 4000 * SCALE


def gen_cutcp(d, rng):
    os.makedirs(d, exist_ok=True)
    # Liquid water's density, 0.1 atoms per cubic Angstrom: cutcp bins atoms by space,
    # and a denser box overflows its bins ("exceeded space for storing extra atoms").
    side = (cutcp_atoms() / 0.1) ** (1 / 3)
    with open(os.path.join(d, "watbox.pqr"), "w") as f:
        f.write("REMARK synthetic water-like box (scripts/parboil_data.py)\n")
        for i in range(cutcp_atoms()):
            mol = i // 3 + 1
            q = -0.834 if i % 3 == 0 else 0.417
            name = "OH2" if i % 3 == 0 else ("H1" if i % 3 == 1 else "H2")
            x, y, z = (rng.uniform(0.0, side) for _ in range(3))
            f.write(f"ATOM  {i + 1:5d} {name:<4} TIP3 {mol:5d} "
                    f"{x:8.3f} {y:8.3f} {z:8.3f} {q:7.3f} 1.5\n")
    desc(d, ["watbox.pqr"], [])


def check_cutcp(d):
    check_desc(d, ["watbox.pqr"], [])
    n = 0
    lo, hi = [1e30] * 3, [-1e30] * 3
    for line in open(os.path.join(d, "watbox.pqr")):
        need(len(line) < 95, "pqr line longer than fgets' 96 bytes")
        if not (line.startswith("ATOM  ") or line.startswith("HETATM")):
            continue
        w = line.split()
        int(w[1])
        int(w[4])
        x = [float(v) for v in w[5:9]]
        for i in range(3):
            lo[i], hi[i] = min(lo[i], x[i]), max(hi[i], x[i])
        n += 1
    need(n == cutcp_atoms(), "%d atoms" % n)
    return "%d atoms in a %.1f x %.1f x %.1f A box" % (
        n, hi[0] - lo[0], hi[1] - lo[1], hi[2] - lo[2])


# ----------------------------------------------------------------------------- mri-fhd, mri-q
# file.cc inputData: int32 numK, int32 numX, then float32 arrays kx, ky, kz (numK),
# x, y, z (numX), phiR, phiI (numK), and for mri-fhd dR, dI (numK).

def mri_dims():
    # A 32^3 image (32^3 x 4 with --scale 4: 64x64x32); k-space samples a multiple of the
    # kernels' 512-sample chunks.
    return 32 * 32 * 32 * SCALE, 2048 * SCALE


def gen_mri(d, rng, fhd):
    """file.cc inputData: int32 numK, int32 numX, then float32 arrays kx, ky, kz (numK),
    x, y, z (numX), phiR, phiI (numK), and for mri-fhd dR, dI (numK)."""
    num_x, num_k = mri_dims()
    side = round(num_x ** (1 / 3))
    ks = [[rng.uniform(-side / 2, side / 2) for _ in range(num_k)] for _ in range(3)]
    xs = [[rng.uniform(-0.5, 0.5) for _ in range(num_x)] for _ in range(3)]
    rest = [[rng.uniform(-1.0, 1.0) for _ in range(num_k)] for _ in range(4 if fhd else 2)]
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "data.bin"), "wb") as f:
        f.write(struct.pack("<ii", num_k, num_x))
        for arr in ks + xs + rest:
            f.write(struct.pack(f"<{len(arr)}f", *arr))
    desc(d, ["data.bin"], [])


def check_mri(d, fhd):
    num_x, num_k = mri_dims()
    check_desc(d, ["data.bin"], [])
    path = os.path.join(d, "data.bin")
    with open(path, "rb") as f:
        k, x = struct.unpack("<ii", f.read(8))
    need((k, x) == (num_k, num_x), "numK, numX = %d, %d" % (k, x))
    # the Q / FH kernels index x[blockIdx.x*256 + threadIdx.x] without a bound check;
    # k-space goes to constant memory in 1024 (Q) / 512 (FH) sample chunks.
    need(num_x % 256 == 0 and num_k % 1024 == 0, "numX %d, numK %d" % (num_x, num_k))
    arrays_k = 3 + (4 if fhd else 2)
    data = read_exact(path, 8 + 4 * (arrays_k * num_k + 3 * num_x))
    vals = struct.unpack_from("<%df" % (arrays_k * num_k + 3 * num_x), data, 8)
    need(all(math.isfinite(v) for v in vals), "non-finite value")
    return "numK %d, numX %d" % (k, x)


# ----------------------------------------------------------------------------- lbm
# main.cc MAIN_parseCommandLine: `time steps`; the obstacle file must have exactly
# SIZE_X*SIZE_Y*SIZE_Z + (SIZE_Y+1)*SIZE_Z bytes.

LBM = (120, 120, 150)  # SIZE_X, SIZE_Y, SIZE_Z of both variants' layout_config.h


def gen_lbm(d, rng):
    """lbm.cu LBM_loadObstacleFile: per z, per y, SIZE_X characters ('.' is fluid, anything
    else an obstacle) and a newline; a newline after each z plane. A few random spheres in
    the channel."""
    sx, sy, sz = LBM
    spheres = [(rng.uniform(20, sx - 20), rng.uniform(20, sy - 20), rng.uniform(20, sz - 20),
                rng.uniform(5, 12)) for _ in range(6)]
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "obstacles.of"), "w", newline="\n") as f:
        for z in range(sz):
            for y in range(sy):
                row = []
                for x in range(sx):
                    hit = any((x - cx) ** 2 + (y - cy) ** 2 + (z - cz) ** 2 < r * r
                              for cx, cy, cz, r in spheres)
                    row.append("#" if hit else ".")
                f.write("".join(row) + "\n")
            f.write("\n")
    desc(d, ["obstacles.of"], [4])


def check_lbm(d):
    sx, sy, sz = LBM
    check_desc(d, ["obstacles.of"], [4])
    data = read_exact(os.path.join(d, "obstacles.of"), sx * sy * sz + (sy + 1) * sz)
    pos, solid = 0, 0
    for z in range(sz):
        for y in range(sy):
            row = data[pos:pos + sx]
            need(b"\n" not in row and data[pos + sx:pos + sx + 1] == b"\n", "row %d,%d" % (y, z))
            solid += sx - row.count(b".")
            pos += sx + 1
        need(data[pos:pos + 1] == b"\n", "plane %d" % z)
        pos += 1
    return "%dx%dx%d cells, %d obstacle cells, 4 time steps" % (sx, sy, sz, solid)


# ----------------------------------------------------------------------------- tpacf
# _args.cc getopt "d:n:r:p:o:" on the arguments after `--`; model_io.cc readdatafile:
# up to `-p` "%f %f" (ra, dec in degrees) pairs per file.

def tpacf_sizes():
    return 4096 * SCALE, 8  # points per file, random sets


def gen_tpacf(d, rng):
    """model_io.cc readdatafile: `npoints` lines of "ra dec" in degrees; the first input is
    the data, then `-n` files of random points; `-p` points each."""
    n, sets = tpacf_sizes()
    names = ["Datapnts.1"] + [f"Randompnts.{i + 1}" for i in range(sets)]
    os.makedirs(d, exist_ok=True)
    for name in names:
        with open(os.path.join(d, name), "w") as f:
            for _ in range(n):
                ra = rng.uniform(0.0, 360.0)
                dec = math.degrees(math.asin(rng.uniform(-1.0, 1.0)))
                f.write(f"{ra:.6f} {dec:.6f}\n")
    desc(d, names, ["-n", sets, "-p", n])


def check_tpacf(d):
    n, sets = tpacf_sizes()
    names = ["Datapnts.1"] + [f"Randompnts.{i + 1}" for i in range(sets)]
    check_desc(d, names, ["-n", sets, "-p", n])
    for name in names:
        rows = [l.split() for l in open(os.path.join(d, name))]
        need(len(rows) == n, "%s: %d lines" % (name, len(rows)))
        need(all(len(r) == 2 and 0.0 <= float(r[0]) <= 360.0 and -90.0 <= float(r[1]) <= 90.0
                 for r in rows), "%s: bad ra/dec" % name)
    return "%d files of %d points" % (len(names), n)


# ----------------------------------------------------------------------------- bfs
# main.cu (cuda, cuda_base): fscanf "%d" num_of_nodes; per node "%d %d" (start, edgeno);
# "%d" source; "%d" num_of_edges; per edge "%d" id, "%d" cost. Any whitespace works.
# A frontier thread appends up to degree(node) ids to its block's queues: cuda's
# LocalQueues hold W_QUEUE_SIZE=400 per bin of 64 threads (overflow aborts the run),
# cuda_base's local_q NUM_BIN*W_QUEUE_SIZE=3200 for 512 threads (no check), so a degree
# of 6 at most keeps both inside (64*6=384, 512*6=3072).

BFS_NODES = 65536
BFS_MAX_DEGREE = 6


def gen_bfs(d, rng):
    n = BFS_NODES
    adj = [[] for _ in range(n)]
    seen = set()

    def link(a, b):
        key = (a, b) if a < b else (b, a)
        if a == b or key in seen:
            return
        seen.add(key)
        adj[a].append(b)
        adj[b].append(a)
    # a Hamiltonian path in random order keeps the graph connected; random stubs then
    # bring each node towards its target degree (2-6, mean ~4: a near-regular graph)
    order = list(range(n))
    rng.shuffle(order)
    for i in range(n - 1):
        link(order[i], order[i + 1])
    target = rng.choices((2, 3, 4, 5, 6), (10, 20, 35, 20, 15), k=n)
    stubs = []
    for v in range(n):
        stubs += [v] * max(0, target[v] - len(adj[v]))
    rng.shuffle(stubs)
    for i in range(0, len(stubs) - 1, 2):
        link(stubs[i], stubs[i + 1])
    lines = ["%d\n" % n]
    start = 0
    for v in range(n):
        adj[v].sort()
        lines.append("%d %d\n" % (start, len(adj[v])))
        start += len(adj[v])
    lines.append("\n0\n\n%d\n" % start)
    for v in range(n):
        lines.append("".join("%d 1\n" % u for u in adj[v]))
    write_text(os.path.join(d, "graph.txt"), "".join(lines))
    desc(d, ["graph.txt"], [])


def check_bfs(d):
    check_desc(d, ["graph.txt"], [])
    tok = open(os.path.join(d, "graph.txt")).read().split()
    vals = [int(t) for t in tok]
    n = vals[0]
    nodes = [(vals[1 + 2 * i], vals[2 + 2 * i]) for i in range(n)]
    p = 1 + 2 * n
    source, e = vals[p], vals[p + 1]
    p += 2
    need(len(vals) == p + 2 * e, "%d tokens, expected %d" % (len(vals), p + 2 * e))
    ids, costs = vals[p::2], vals[p + 1::2]
    need(0 <= source < n, "source %d" % source)
    s = 0
    for st, deg in nodes:
        need(st == s and 1 <= deg <= BFS_MAX_DEGREE, "node record (%d, %d)" % (st, deg))
        s += deg
    need(s == e, "degrees add up to %d, not %d" % (s, e))
    need(all(0 <= v < n for v in ids) and all(c == 1 for c in costs), "edge ids / costs")
    edges = set()
    for u, (st, deg) in enumerate(nodes):
        for v in ids[st:st + deg]:
            need(v != u, "self loop at %d" % u)
            edges.add((u, v))
    need(all((v, u) in edges for u, v in edges), "edge list not symmetric")
    cost = [-1] * n
    cost[source] = 0
    front, depth, widest = [source], 0, 1
    while front:
        nxt = []
        for u in front:
            st, deg = nodes[u]
            for v in ids[st:st + deg]:
                if cost[v] < 0:
                    cost[v] = cost[u] + 1
                    nxt.append(v)
        if nxt:
            depth += 1
            widest = max(widest, len(nxt))
        front = nxt
    need(min(cost) >= 0, "graph not connected")
    return "%d nodes, %d edge entries, BFS depth %d, widest level %d" % (n, e, depth, widest)


# ----------------------------------------------------------------------------- fft
# cuda_base/fft.cu: one input (file.cc inputData freads N*B*2 floats, no header), then
# exactly two integers `N B` (strtol of argv[1], argv[2]); N/R (R=2) threads a block.
# cuda/fft.cu calls neither pb_ReadParameters nor inputData: N=256, B=1024 fixed.

FFT_N, FFT_B = 256, 1024


def gen_fft(d, rng):
    n, b = FFT_N, FFT_B
    tw = [(math.cos(2 * math.pi * i / n), math.sin(2 * math.pi * i / n)) for i in range(n)]
    vals = []
    for _ in range(b):
        tones = [(rng.randrange(n), rng.uniform(0.2, 1.0), rng.uniform(0.0, 2 * math.pi))
                 for _ in range(rng.randint(1, 4))]
        re_ = [rng.gauss(0.0, 0.05) for _ in range(n)]
        im_ = [rng.gauss(0.0, 0.05) for _ in range(n)]
        for f, a, ph in tones:
            c, s = a * math.cos(ph), a * math.sin(ph)
            for i in range(n):
                cw, sw = tw[(f * i) % n]
                re_[i] += c * cw - s * sw
                im_[i] += c * sw + s * cw
        for i in range(n):
            vals.append(re_[i])
            vals.append(im_[i])
    write_bytes(os.path.join(d, "signal.bin"), struct.pack("<%df" % len(vals), *vals))
    desc(d, ["signal.bin"], [n, b])


def check_fft(d):
    n, b = FFT_N, FFT_B
    check_desc(d, ["signal.bin"], [n, b])
    need(n & (n - 1) == 0 and 2 <= n <= 2048, "N must be a power of 2 (N/2 threads a block)")
    data = read_exact(os.path.join(d, "signal.bin"), 8 * n * b)
    vals = struct.unpack("<%df" % (2 * n * b), data)
    need(all(math.isfinite(v) for v in vals), "non-finite value")
    return "%d signals of %d complex float32, |x| <= %.2f" % (b, n, max(map(abs, vals)))


# ----------------------------------------------------------------------------- histo
# main.cu (cuda, cuda_base): fread uint32 img_width, img_height, histo_width,
# histo_height (all 4 or "Error reading input"), then img_width*img_height uint32 values
# (short read: "Error reading input array"); argv[1] = iterations (required).

HISTO = (512, 768, 256, 1536)  # img_width, img_height, histo_width, histo_height


def gen_histo(d, rng):
    iw, ih, hw, hh = HISTO
    nb = hw * hh
    cx, cy, sx, sy = hw / 2, hh / 2, hw / 8, hh / 25
    vals = []
    for _ in range(iw * ih):
        if rng.random() < 0.005:
            vals.append(rng.randrange(nb))
            continue
        x = min(hw - 1, max(0, int(round(rng.gauss(cx, sx)))))
        y = min(hh - 1, max(0, int(round(rng.gauss(cy, sy)))))
        vals.append(y * hw + x)
    write_bytes(os.path.join(d, "img.bin"), struct.pack("<4I", iw, ih, hw, hh) +
                struct.pack("<%dI" % len(vals), *vals))
    desc(d, ["img.bin"], [4])


def histo_prescan(vals, kb):
    """histo_prescan_kernel, 64 blocks of 512 threads: each thread averages (and takes the
    standard deviation of) its samples in the first eighth of its block's stride; the
    block mean of those +- 10 sigma, divided by KB*1024, bounds the range of
    histogram blocks that the main kernel handles in shared memory."""
    size = len(vals)
    stride = size // 64
    lo, hi = None, None
    for b in range(64):
        end = b * stride + stride // 8
        sa = ss = 0.0
        for t in range(512):
            xs = vals[b * stride + t:end:512]
            need(xs, "a prescan thread has no sample (0/0)")
            avg = sum(xs) / len(xs)
            sa += avg
            ss += math.sqrt(sum((x - avg) ** 2 for x in xs) / len(xs))
        avg, sd = sa / 512, ss / 512
        need(avg - 10 * sd >= 0, "prescan lower bound negative")
        a, z = int(avg - 10 * sd) // (kb * 1024), int(avg + 10 * sd) // (kb * 1024)
        lo = a if lo is None else min(lo, a)
        hi = z if hi is None else max(hi, z)
    return lo, hi


def check_histo(d):
    check_desc(d, ["img.bin"], [4])
    path = os.path.join(d, "img.bin")
    iw, ih, hw, hh = struct.unpack("<4I", open(path, "rb").read(16))
    need((iw, ih, hw, hh) == HISTO, "header %s" % ((iw, ih, hw, hh),))
    vals = struct.unpack_from("<%dI" % (iw * ih), read_exact(path, 16 + 4 * iw * ih), 16)
    nb = hw * hh
    need(max(vals) < nb, "value beyond the histogram")
    need(ih % 16 == 0, "histo_intermediates_kernel writes UNROLL=16 rows a block")
    need((iw + 1) // 2 <= 1024, "(img_width+1)/2 threads a block")
    need(hw <= iw and nb % 4 == 0, "global_histo holds img_width*histo_height shorts")
    need(iw * ih >= 64 * 8 * 512, "prescan threads without samples")
    ranges = []
    for kb in (24, 8):                      # cuda/util.h, cuda_base/util.h
        bpb = kb * 1024
        need((nb - 1) // bpb < 256, "block index must fit the uchar4 mapping")
        lo, hi = histo_prescan(vals, kb)
        need((hi + 1) * bpb <= nb,
             "KB=%d: prescan range %d..%d beyond the histogram" % (kb, lo, hi))
        ranges.append("KB=%d blocks %d..%d of %d" % (kb, lo, hi, nb // bpb))
    return "%dx%d values, %dx%d bins; %s" % (iw, ih, hw, hh, ", ".join(ranges))


# ----------------------------------------------------------------------------- imghisto
# main.cu (cuda, cuda_base): after `--` exactly DEVICE DATA_W DATA_H BINS REPETITIONS
# (argc must be 6); file.c readImage: DATA_W*DATA_H fread()s of one uint16, byte-swapped
# (big-endian), values >= 4096 clamped to 4095; the kernels bin d*BINS >> 12.

IMGHISTO = (1024, 1024, 256, 4)  # DATA_W, DATA_H, BINS, REPETITIONS


def gen_imghisto(d, rng):
    w, h, bins, rep = IMGHISTO
    shade = bilinear_field(rng, w, h, 8)
    img = [[int(900 + 250 * v) for v in row] for row in shade]
    # organ-like regions: axis-aligned ellipses of one level each, painted in turn
    for _ in range(12):
        cx, cy = rng.uniform(0, w), rng.uniform(0, h)
        a, b = rng.uniform(40, 300), rng.uniform(40, 300)
        level = rng.uniform(400, 3700)
        for y in range(max(0, int(cy - b)), min(h, int(cy + b) + 1)):
            t = 1 - ((y - cy) / b) ** 2
            if t <= 0:
                continue
            half = a * math.sqrt(t)
            x0, x1 = max(0, int(cx - half)), min(w, int(cx + half) + 1)
            row, srow = img[y], shade[y]
            for x in range(x0, x1):
                row[x] = int(level + 120 * srow[x])
    pix = []
    for row in img:
        for v in row:
            v += int(rng.gauss(0.0, 3.0))
            pix.append(0 if v < 0 else (4095 if v > 4095 else v))
    write_bytes(os.path.join(d, "image.bin"), struct.pack(">%dH" % len(pix), *pix))
    desc(d, ["image.bin"], [0, w, h, bins, rep])


def check_imghisto(d):
    w, h, bins, rep = IMGHISTO
    check_desc(d, ["image.bin"], [0, w, h, bins, rep])
    need(1 <= bins <= 4096 and (w * h) % 1024 == 0, "bins / size (1024 threads, 32 warps)")
    pix = struct.unpack(">%dH" % (w * h), read_exact(os.path.join(d, "image.bin"), 2 * w * h))
    need(max(pix) < 4096, "pixel beyond 12 bits")
    used = len({p * bins >> 12 for p in pix})
    same = sum(1 for i in range(1, len(pix)) if (pix[i] * bins >> 12) == (pix[i - 1] * bins >> 12))
    return "%dx%d 12-bit pixels, %d of %d bins used, %.0f%% of neighbours share a bin" % (
        w, h, used, bins, 100.0 * same / (len(pix) - 1))


# ----------------------------------------------------------------------------- mri-gridding
# main.cu (cuda, cuda-base): setParameters fscanf()s eight "name=value" lines from
# inpFiles[0]; readSampleData freads numsamples ReconstructionSample records (float32
# real, imag, kX, kY, kZ, sdc) from inpFiles[0] + ".data" and maps k to grid cells with
# floor(k * kScale*(size-1)/2 + (size-1)/2), kScale = acq/(recon*kmax); argv[1] =
# binsize (default 128). gridding_GPU tiles the grid 8 (x) by 4 (y) by 8 (z).

MRIG = dict(spokes=256, per_spoke=256, kmax=16.0, matrix=32, grid=64, oversample=2.0,
            width=4.0, binsize=32)


def mrig_uks_text():
    m = MRIG
    n = m["spokes"] * m["per_spoke"]
    return ("aquisition.numsamples=%d\n" % n +
            "aquisition.kmax=%f %f %f\n" % ((m["kmax"],) * 3) +
            "aquisition.matrixSize=%d %d %d\n" % ((m["matrix"],) * 3) +
            "reconstruction.matrixSize=%d %d %d\n" % ((m["matrix"],) * 3) +
            "gridding.matrixSize=%d %d %d\n" % ((m["grid"],) * 3) +
            "gridding.oversampling=%f\n" % m["oversample"] +
            "kernel.width=%f\n" % m["width"] +
            "kernel.useLUT=0\n")


def gen_mri_gridding(d, rng):
    m = MRIG
    kmax, ns = m["kmax"], m["per_spoke"]
    # the object: a few Gaussian blobs (pixel units); its spectrum at u = k/(2 kmax)
    # cycles/pixel is a*exp(-2 pi^2 s^2 |u|^2) * exp(-2 pi i u.c)
    blobs = [(rng.uniform(0.3, 1.0), rng.uniform(1.5, 5.0),
              [rng.uniform(-8.0, 8.0) for _ in range(3)]) for _ in range(5)]
    recs = []
    for _ in range(m["spokes"]):
        cz = rng.uniform(-1.0, 1.0)
        ph = rng.uniform(0.0, 2 * math.pi)
        sz = math.sqrt(1 - cz * cz)
        dx, dy, dz = sz * math.cos(ph), sz * math.sin(ph), cz
        for j in range(ns):
            r = 0.999 * kmax * (2 * (j + 0.5) / ns - 1)
            k = (r * dx, r * dy, r * dz)
            u = [c / (2 * kmax) for c in k]
            u2 = u[0] ** 2 + u[1] ** 2 + u[2] ** 2
            re_ = im_ = 0.0
            for a, s, c in blobs:
                mag = a * math.exp(-2 * math.pi ** 2 * s * s * u2)
                arg = -2 * math.pi * (u[0] * c[0] + u[1] * c[1] + u[2] * c[2])
                re_ += mag * math.cos(arg)
                im_ += mag * math.sin(arg)
            re_ += rng.gauss(0.0, 1e-3)
            im_ += rng.gauss(0.0, 1e-3)
            sdc = (r / kmax) ** 2 + 1.0 / (ns * ns)
            recs.append((re_, im_, k[0], k[1], k[2], sdc))
    flat = [v for rec in recs for v in rec]
    write_text(os.path.join(d, "small.uks"), mrig_uks_text())
    write_bytes(os.path.join(d, "small.uks.data"), struct.pack("<%df" % len(flat), *flat))
    desc(d, ["small.uks"], [m["binsize"]])


def check_mri_gridding(d):
    m = MRIG
    check_desc(d, ["small.uks"], [m["binsize"]])
    text = open(os.path.join(d, "small.uks")).read()
    pat = (r"aquisition\.numsamples=(\d+)\naquisition\.kmax=(\S+) (\S+) (\S+)\n"
           r"aquisition\.matrixSize=(\d+) (\d+) (\d+)\n"
           r"reconstruction\.matrixSize=(\d+) (\d+) (\d+)\n"
           r"gridding\.matrixSize=(\d+) (\d+) (\d+)\ngridding\.oversampling=(\S+)\n"
           r"kernel\.width=(\S+)\nkernel\.useLUT=(\d+)\n$")
    g = re.match(pat, text)
    need(g is not None, "small.uks does not match setParameters' fscanf formats")
    n = int(g.group(1))
    kmax = [float(g.group(i)) for i in (2, 3, 4)]
    acq = [int(g.group(i)) for i in (5, 6, 7)]
    rec = [int(g.group(i)) for i in (8, 9, 10)]
    size = [int(g.group(i)) for i in (11, 12, 13)]
    os_, width = float(g.group(14)), float(g.group(15))
    need(size[0] % 8 == 0 and size[1] % 4 == 0 and size[2] % 8 == 0, "grid tiles 8x4x8")
    need(n <= 10000000 and n % 1024 == 0, "numsamples")
    need(4 * width * width / (os_ * os_) * (os_ - 0.5) ** 2 - 0.8 > 0, "beta would be NaN")
    data = read_exact(os.path.join(d, "small.uks.data"), 24 * n)
    vals = struct.unpack("<%df" % (6 * n), data)
    cells = [0] * (size[0] * size[1] * size[2])
    for i in range(n):
        re_, im_, kx, ky, kz, sdc = vals[6 * i:6 * i + 6]
        need((re_ != 0.0 or im_ != 0.0) and sdc > 0.0, "sample %d contributes nothing" % i)
        idx = []
        for k, km, a, r, s in zip((kx, ky, kz), kmax, acq, rec, size):
            ks = f32(f32(float(a)) / f32(float(r) * km))
            ax = f32(f32(ks * (s - 1)) / 2.0)
            bx = f32(float(s - 1) / 2.0)
            c = math.floor(f32(f32(k * ax) + bx))
            need(0 <= c < s, "sample %d maps outside the grid" % i)
            idx.append(c)
        cells[(idx[2] * size[1] + idx[1]) * size[0] + idx[0]] += 1
    cpu = sum(max(0, c - m["binsize"]) for c in cells)
    return "%d samples on a %dx%dx%d grid, %d beyond binsize %d (CPU bin)" % (
        n, size[0], size[1], size[2], cpu, m["binsize"])


# ----------------------------------------------------------------------------- pns
# main.cu: no input file; `N s t` after `--` (N >= 1, even: the kernel packs 4 places
# per int; s >= 1 steps; t >= 1 trajectories, one 256-thread block each).

PNS = (256, 8192, 512)


def gen_pns(d, rng):
    desc(d, [], list(PNS))


def check_pns(d):
    n, s, t = PNS
    check_desc(d, [], [n, s, t])
    need(n >= 2 and n % 2 == 0 and s >= 1 and t >= 1, "N s t")
    return "N %d (a %dx%d grid), %d steps, %d trajectories" % (n, 2 * n, 2 * n, s, t)


# ----------------------------------------------------------------------------- rpes
# main.cu (cuda, cuda_base) ReadBasisAtoms reads inpFiles[1], TotalNumOfShells and
# PopulateShells inpFiles[0]; formats in the docstring. Atom.Type is char[1] and
# Shell.Type char[2] (strcpy spills into padding): one-letter elements, <= 9 shells.
# DistributeBlockWork packs atom ids and primitive offsets in bytes and primitive
# counts in nibbles; each shell quartet takes ceil(a1*a2*a3*a4/64) blocks, and
# DoReduction runs MaxBlocks threads into a 64-float shared array with a halving tree.

RPES_SHELLS = {"H": (2, 1), "C": (4, 2, 1), "N": (4, 2, 1), "O": (4, 2, 1)}
RPES_Z = {"H": 1, "C": 6, "N": 7, "O": 8}


def gen_rpes(d, rng):
    basis = ["Known atoms: %d\n" % len(RPES_SHELLS),
             "Known shells: %d\n" % sum(len(v) for v in RPES_SHELLS.values())]
    for el, shells in RPES_SHELLS.items():
        basis.append("Atom %s\nShells %d\n" % (el, len(shells)))
        for si, nprim in enumerate(shells):
            basis.append("Shell %d primitives %d\n" % (si + 1, nprim))
            # s-type contractions: geometric exponents, tighter for heavier atoms and
            # inner shells; positive coefficients
            top = {4: rng.uniform(80, 160), 2: rng.uniform(2.5, 6.0),
                   1: rng.uniform(0.15, 0.5)}[nprim]
            top *= RPES_Z[el] / 6.0 if el != "H" else 1.0
            ratio = rng.uniform(3.0, 5.0)
            for p in range(nprim):
                basis.append("  prim %d : %.6f %.6f\n"
                             % (p + 1, top / ratio ** p, rng.uniform(0.1, 0.7)))
    # a chain of 6 heavy atoms (bonds ~2.7 bohr) with 8 hydrogens (~2.0 bohr)
    atoms = []

    def clash(p, lim):
        return any(math.dist(p, q) < lim for _, q in atoms)

    def unit():
        z = rng.uniform(-1, 1)
        t = rng.uniform(0, 2 * math.pi)
        s = math.sqrt(1 - z * z)
        return (s * math.cos(t), s * math.sin(t), z)
    heavy = rng.choices(("C", "N", "O"), (6, 2, 2), k=6)
    pos = (0.0, 0.0, 0.0)
    atoms.append((heavy[0], pos))
    for el in heavy[1:]:
        while True:
            u = unit()
            q = tuple(a + rng.uniform(2.6, 2.9) * b for a, b in zip(atoms[-1][1], u))
            if not clash(q, 2.4):
                break
        atoms.append((el, q))
    for i in range(8):
        host = atoms[i % 6][1]
        while True:
            u = unit()
            q = tuple(a + rng.uniform(1.95, 2.1) * b for a, b in zip(host, u))
            if not clash(q, 1.9):
                break
        atoms.append(("H", q))
    mol = ["Atoms %d\n" % len(atoms)]
    mol += ["%s %.6f %.6f %.6f\n" % (el, x, y, z) for el, (x, y, z) in atoms]
    write_text(os.path.join(d, "molecule.txt"), "".join(mol))
    write_text(os.path.join(d, "basis.txt"), "".join(basis))
    desc(d, ["molecule.txt", "basis.txt"], [])


def check_rpes(d):
    check_desc(d, ["molecule.txt", "basis.txt"], [])
    bt = open(os.path.join(d, "basis.txt")).read().split()
    p = 0

    def take(n):
        nonlocal p
        p += n
        need(p <= len(bt), "basis.txt ends early")
        return bt[p - n:p]
    natoms = int(take(3)[2])
    int(take(3)[2])
    basis, offsets, nprim_total = {}, {}, 0
    for _ in range(natoms):
        el = take(2)[1]
        need(len(el) == 1, "element %s: Atom.Type is char[1]" % el)
        nsh = int(take(2)[1])
        need(1 <= nsh <= 9, "%s: %d shells (AtomShell[10], one-digit shell names)" % (el, nsh))
        shells = []
        for _ in range(nsh):
            w = take(4)
            int(w[1])
            npr = int(w[3])
            need(1 <= npr <= 15, "%s: %d primitives (a nibble)" % (el, npr))
            prims = []
            for _ in range(npr):
                w = take(5)
                a, c = float(w[3]), float(w[4])
                need(a > 0 and math.isfinite(c), "%s: primitive %s %s" % (el, w[3], w[4]))
                prims.append((a, c))
            shells.append(npr)
        basis[el] = shells
        offsets[el] = nprim_total
        nprim_total += sum(shells)
    need(nprim_total < 256, "primitive offsets must fit a byte")
    mt = open(os.path.join(d, "molecule.txt")).read().split()
    n = int(mt[1])
    need(len(mt) == 2 + 4 * n and 1 <= n < 256, "molecule.txt: %d atoms" % n)
    shells = []
    for i in range(n):
        el = mt[2 + 4 * i]
        need(el in basis, "element %s not in the basis set" % el)
        [float(v) for v in mt[3 + 4 * i:6 + 4 * i]]
        shells += basis[el]
    s = len(shells)
    quartets = s * (s + 1) * (s + 2) * (s + 3) // 24
    need(quartets >= 20000, "main.cu writes ReductionSum[0..19999]: %d quartets" % quartets)
    blocks = maxb = 0
    for a in range(s):
        for b in range(a, s):
            for c in range(b, s):
                for e in range(c, s):
                    k = -(-shells[a] * shells[b] * shells[c] * shells[e] // 64)
                    blocks += k
                    maxb = max(maxb, k)
    need(maxb <= 64 and maxb & (maxb - 1) == 0, "DoReduction block of %d threads" % maxb)
    return "%d atoms, %d shells, %d quartets, %d blocks (at most %d a quartet)" % (
        n, s, quartets, blocks, maxb)


# ----------------------------------------------------------------------------- sad
# image.c load_image (cuda, cuda_base): read16u width, read16u height (little-endian),
# then fread width*height shorts; main.cu: two inputs of the same size, multiples of 16.

SAD_W, SAD_H = 352, 288


def gen_sad(d, rng):
    w, h, m = SAD_W, SAD_H, 32
    tw, th = w + 2 * m, h + 2 * m
    tex = [[rng.gauss(0.0, 1.0) for _ in range(tw)] for _ in range(th)]
    for _ in range(2):                       # 3x3 box blur, twice: fine grain
        tex = [[sum(tex[min(th - 1, max(0, y + j))][min(tw - 1, max(0, x + i))]
                    for j in (-1, 0, 1) for i in (-1, 0, 1)) / 9.0
                for x in range(tw)] for y in range(th)]
    sd = math.sqrt(sum(v * v for row in tex for v in row) / (tw * th))
    tex = [[v / sd for v in row] for row in tex]
    shade = bilinear_field(rng, tw, th, 6)
    gx, gy = rng.randint(-4, 4), rng.randint(-3, 3)
    objs = []
    for _ in range(6):
        objs.append(dict(cx=rng.uniform(20, w - 20), cy=rng.uniform(20, h - 20),
                         a=rng.uniform(12, 48), b=rng.uniform(12, 40), ell=rng.random() < 0.5,
                         level=rng.uniform(30, 225), vx=rng.randint(-12, 12),
                         vy=rng.randint(-8, 8),
                         ox=rng.randrange(th - 100), stripes=rng.uniform(0.1, 0.5)))
    frames = []
    for t in (0, 1):
        px = []
        for y in range(h):
            for x in range(w):
                bx, by = x + m + gx * t, y + m + gy * t
                v = 128 + 60 * shade[by][bx] + 18 * tex[by][bx]
                for o in objs:
                    u, q = x - (o["cx"] + o["vx"] * t), y - (o["cy"] + o["vy"] * t)
                    inside = ((u / o["a"]) ** 2 + (q / o["b"]) ** 2 <= 1) if o["ell"] else (
                        abs(u) <= o["a"] and abs(q) <= o["b"])
                    if inside:
                        ty, tx = int(q + o["b"]) + o["ox"], int(u + o["a"]) % tw
                        v = o["level"] + 18 * tex[ty][tx] + 15 * math.sin(o["stripes"] * (u + q))
                v += rng.gauss(0.0, 1.5)
                px.append(min(255, max(0, int(round(v)))))
        frames.append(struct.pack("<HH", w, h) + struct.pack("<%dh" % len(px), *px))
    write_bytes(os.path.join(d, "reference.bin"), frames[0])
    write_bytes(os.path.join(d, "frame.bin"), frames[1])
    desc(d, ["reference.bin", "frame.bin"], [])


def check_sad(d):
    check_desc(d, ["reference.bin", "frame.bin"], [])
    imgs = []
    for name in ("reference.bin", "frame.bin"):
        path = os.path.join(d, name)
        w, h = struct.unpack("<HH", open(path, "rb").read(4))
        need(w % 16 == 0 and h % 16 == 0 and h >= 32, "%s: %dx%d" % (name, w, h))
        px = struct.unpack_from("<%dh" % (w * h), read_exact(path, 4 + 2 * w * h), 4)
        need(min(px) >= 0 and max(px) <= 255, "%s: pixel out of 0..255" % name)
        imgs.append((w, h, px))
    need(imgs[0][:2] == imgs[1][:2], "images differ in size")
    mad = sum(abs(a - b) for a, b in zip(imgs[0][2], imgs[1][2])) / len(imgs[0][2])
    return "%dx%d (%d macroblocks), mean |frame - reference| %.1f" % (
        imgs[0][0], imgs[0][1], imgs[0][0] * imgs[0][1] // 256, mad)


# ----------------------------------------------------------------------------- simple_mm
# matrixMul.cu: main(argc, argv) never looks at its arguments; WA, HA, WB come from
# matrixMul.h and the matrices from rand().

def gen_simple_mm(d, rng):
    desc(d, [], [])


def check_simple_mm(d):
    check_desc(d, [], [])
    return "no input, no parameters"


# ----------------------------------------------------------------------------- spmv
# main.cu (cuda, cuda_base, cuda_tex, cuda_base_tex): coo_to_jds(inpFiles[0], pad_rows=1,
# warp 32, pack 1, mirrored=1, binary=0): mm_read_banner, mm_read_mtx_crd_size (skips
# '%' lines), then nz fscanf("%d %d %f\n") 1-based entries, each off-diagonal one also
# stored transposed; rows = last row + 1. input_vec(inpFiles[1]) freads dim floats.

SPMV_GRID = 32


def gen_spmv(d, rng):
    g = SPMV_GRID
    n = g ** 3
    ent = []
    for i in range(n):
        x, y, z = i % g, (i // g) % g, i // (g * g)
        ent.append((i, i, 6.0 + rng.uniform(0.05, 1.0)))
        for j in (z * g * g + y * g + (x + 1) % g, z * g * g + ((y + 1) % g) * g + x,
                  ((z + 1) % g) * g * g + y * g + x):
            ent.append((max(i, j), min(i, j), -rng.uniform(0.3, 1.0)))
    ent.sort(key=lambda e: (e[1], e[0]))
    lines = ["%%MatrixMarket matrix coordinate real symmetric\n",
             "% synthetic 32^3 periodic 7-point operator (scripts/parboil_data.py)\n",
             "%d %d %d\n" % (n, n, len(ent))]
    lines += ["%d %d %.7g\n" % (r + 1, c + 1, v) for r, c, v in ent]
    write_text(os.path.join(d, "matrix.mtx"), "".join(lines))
    vec = [rng.uniform(-1.0, 1.0) for _ in range(n)]
    write_bytes(os.path.join(d, "vector.bin"), struct.pack("<%df" % n, *vec))
    desc(d, ["matrix.mtx", "vector.bin"], [])


def check_spmv(d):
    check_desc(d, ["matrix.mtx", "vector.bin"], [])
    lines = open(os.path.join(d, "matrix.mtx")).read().split("\n")
    ban = lines[0].split()
    need(len(ban) == 5 and ban[0] == "%%MatrixMarket" and ban[1].lower() == "matrix" and
         ban[2].lower() == "coordinate" and ban[3].lower() == "real", "banner %r" % lines[0])
    k = 1
    while lines[k].startswith("%"):
        k += 1
    rows, cols, nz = (int(v) for v in lines[k].split())
    tok = " ".join(lines[k + 1:]).split()
    need(len(tok) == 3 * nz, "%d entries, header says %d" % (len(tok) // 3, nz))
    count = [0] * rows
    stored = set()
    for e in range(nz):
        r, c, v = int(tok[3 * e]) - 1, int(tok[3 * e + 1]) - 1, float(tok[3 * e + 2])
        need(0 <= c <= r < rows and math.isfinite(v),
             "entry %d: %s %s" % (e, tok[3 * e], tok[3 * e + 1]))
        need((r, c) not in stored, "duplicate entry %d %d" % (r + 1, c + 1))
        stored.add((r, c))
        count[r] += 1
        if r != c:
            count[c] += 1                    # the mirrored copy
    need(rows == cols and rows % 32 == 0 and min(count) >= 1, "rows %d, empty rows" % rows)
    # JDS: rows sorted by length, each group of 32 padded to its longest row with
    # column index -1; the kernels read x[index] for padding too, so no group may pad.
    srt = sorted(count, reverse=True)
    need(all(srt[i] == srt[i - i % 32] for i in range(rows)), "a JDS group would be padded")
    need(srt[0] + 1 <= 5000 and rows // 32 <= 5000, "jds_ptr_int / sh_zcnt_int hold 5000")
    vec = struct.unpack("<%df" % rows, read_exact(os.path.join(d, "vector.bin"), 4 * rows))
    need(all(math.isfinite(v) for v in vec), "vector")
    return "%d x %d, %d stored entries (%d after mirroring), %d..%d per row" % (
        rows, cols, nz, sum(count), min(count), max(count))


# ----------------------------------------------------------------------------- main

APPS = {
    "bfs": (gen_bfs, check_bfs),
    "cp": (gen_cp, check_cp),
    "cutcp": (gen_cutcp, check_cutcp),
    "fft": (gen_fft, check_fft),
    "histo": (gen_histo, check_histo),
    "imghisto": (gen_imghisto, check_imghisto),
    "lbm": (gen_lbm, check_lbm),
    "mri-fhd": (lambda d, r: gen_mri(d, r, True), lambda d: check_mri(d, True)),
    "mri-gridding": (gen_mri_gridding, check_mri_gridding),
    "mri-q": (lambda d, r: gen_mri(d, r, False), lambda d: check_mri(d, False)),
    "pns": (gen_pns, check_pns),
    "rpes": (gen_rpes, check_rpes),
    "sad": (gen_sad, check_sad),
    "sgemm": (gen_sgemm, check_sgemm),
    "simple_mm": (gen_simple_mm, check_simple_mm),
    "spmv": (gen_spmv, check_spmv),
    "stencil": (gen_stencil, check_stencil),
    "tpacf": (gen_tpacf, check_tpacf),
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated app names")
    ap.add_argument("--check", action="store_true", help="re-read the files after writing")
    ap.add_argument("--check-only", action="store_true", help="only re-read existing files")
    ap.add_argument("--scale", type=int, default=1,
                    help="size factor for sgemm, stencil, cutcp, mri-fhd, mri-q, tpacf")
    a = ap.parse_args()
    global SCALE
    SCALE = max(1, a.scale)
    apps = [x for x in a.only.split(",") if x] or list(APPS)
    unknown = [x for x in apps if x not in APPS]
    if unknown:
        sys.exit("unknown app(s) %s; known: %s" % (", ".join(unknown), ", ".join(APPS)))
    failed = []
    for app in apps:
        gen, check = APPS[app]
        d = os.path.join(a.out, app, "small", "input")
        if not a.check_only:
            os.makedirs(d, exist_ok=True)
            # one independent stream per app: --only gives the same bytes as a full run
            gen(d, random.Random(f"{a.seed}:{app}"))
            print(f"{app}: {d}", flush=True)
        if a.check or a.check_only:
            try:
                print(f"  check {app}: {check(d)}", flush=True)
            except (DataError, OSError, ValueError, IndexError, struct.error) as e:
                print(f"  CHECK FAILED {app}: {e}", file=sys.stderr, flush=True)
                failed.append(app)
    if failed:
        sys.exit("check failed: " + ", ".join(failed))


if __name__ == "__main__":
    main()
