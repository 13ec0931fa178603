#!/usr/bin/env python3
"""Generate small datasets for the Parboil CUDA programs (our own synthetic data).

Usage: parboil_data.py OUTDIR [--seed N] [--scale N] [--only app,app,...] [--check]

Parboil's driver runs a program as `BIN -i in1,in2 -o out -- params`, with the inputs and
parameters named by datasets/<app>/<dataset>/input/DESCRIPTION (`Inputs:` and
`Parameters:` lines; driver/benchmark.py), and the public tree ships no datasets. This
script writes OUTDIR/<app>/small/input/ in that layout, from random numbers drawn with
--seed (default 1; never downloaded or copied), so that OUTDIR can stand for the tree's
`datasets/` (`kernelpair capture --data OUTDIR --suite parboil`). Python 3 stdlib only;
the same seed gives byte-identical files. `--check` re-reads every file as the program's
host code does.

Covered (formats from the host code of every CUDA variant of the app):
  sgemm    matrix1.txt matrix2.txt matrix2t.txt   io.cc readColMajorMatrixFile: "rows cols"
           then the values, whitespace-separated, column-major. A is 256x128, B 128x256,
           B^T 256x128 (regtileSgemm tiles m by 128 and n by 16); `--scale 4`: 1024x512 and
           512x1024. No parameters.
  stencil  128x128x32.bin, Parameters 128 128 32 4   main.cu read_data: nx*ny*nz float32,
           x fastest; then `nx ny nz iterations` after `--`. 2 MiB (`--scale 4`:
           512x512x32, 32 MiB).
  cp       (no input: main.cu draws its own atoms when -i is absent). Empty DESCRIPTION.
  cutcp    watbox.pqr   readatom.c: lines starting "ATOM  ", read as
           "%*s %*d %*s %*s %*d %f %f %f %f" (x y z charge); 4,000 atoms of a water-like
           box at water's 0.1 atoms/A^3 (34 A on a side), charges -0.834 (O) / +0.417 (H)
           (`--scale 4`: 16,000 atoms, 54 A; at 0.29 atoms/A^3 cutcp overflowed its bins).
`--scale N` (default 1) multiplies the sizes: at the default sizes the optimized kernels of
sgemm, stencil and cutcp are slower than the naive ones (too few blocks for the GPU).
  mri-fhd  data.bin   file.cc inputData: int32 numK, int32 numX, float32 kx ky kz (numK),
           x y z (numX), phiR phiI dR dI (numK). 32^3 = 32,768 pixels in [-0.5, 0.5)^3,
           2,048 k-space samples in [-16, 16)^3 (the kernels take 512-sample chunks). 0.5 MB
  mri-q    data.bin   the same without dR, dI (mri-q has no naive variant: its kernels
           are the fast side of pairs waiting for synthesis).
  lbm      obstacles.of, Parameters 4   lbm.cu's obstacle file: 120x120x150 characters
           ('.' fluid, '#' obstacle: six random spheres), a newline per row and per plane
           (the size main.cc checks), and 4 time steps. 2.2 MB
  tpacf    Datapnts.1 Randompnts.1..8, Parameters -n 8 -p 4096   model_io.cc: "ra dec"
           lines in degrees, uniform on the sphere; 4,096 points per file.
Not covered (their formats need more than this script knows, or they do not build with
CUDA 13): bfs, fft, rpes, sad, spmv (texture references or host-only float2 operators: no
build), histo, imghisto, mri-gridding, pns, simple_mm.
"""
import argparse
import math
import os
import random
import struct
import sys


def desc(d, inputs, params):
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "DESCRIPTION"), "w") as f:
        f.write("Synthetic dataset (scripts/parboil_data.py).\n")
        f.write("Inputs: " + " ".join(inputs) + "\n")
        f.write("Parameters: " + " ".join(str(p) for p in params) + "\n")


def colmajor(path, rows, cols, rng):
    with open(path, "w") as f:
        f.write(f"{rows} {cols}\n")
        vals = [f"{rng.uniform(-1.0, 1.0):.6f}" for _ in range(rows * cols)]
        for i in range(0, len(vals), 16):
            f.write(" ".join(vals[i:i + 16]) + "\n")


SCALE = 1


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
    for name, (r, c) in (("matrix1.txt", (m, k)), ("matrix2.txt", (k, n)), ("matrix2t.txt", (n, k))):
        words = open(os.path.join(d, name)).read().split()
        assert (int(words[0]), int(words[1])) == (r, c), name
        assert len(words) - 2 == r * c, (name, len(words))
        [float(w) for w in words[2:]]


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
    nx, ny, nz, _ = stencil_dims()
    assert os.path.getsize(os.path.join(d, f"{nx}x{ny}x{nz}.bin")) == 4 * nx * ny * nz


def gen_cp(d, rng):
    desc(d, [], [])


def check_cp(d):
    assert os.path.isfile(os.path.join(d, "DESCRIPTION"))


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
            f.write(f"ATOM  {i + 1:5d} {name:<4} TIP3 {mol:5d} {x:8.3f} {y:8.3f} {z:8.3f} {q:7.3f} 1.5\n")
    desc(d, ["watbox.pqr"], [])


def check_cutcp(d):
    n = 0
    for line in open(os.path.join(d, "watbox.pqr")):
        if not line.startswith("ATOM  "):
            continue
        w = line.split()
        int(w[1]); int(w[4])
        [float(v) for v in w[5:9]]
        n += 1
    assert n == cutcp_atoms(), n


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
    path = os.path.join(d, "data.bin")
    with open(path, "rb") as f:
        k, x = struct.unpack("<ii", f.read(8))
    assert (k, x) == (num_k, num_x), (k, x)
    arrays_k = 3 + (4 if fhd else 2)
    assert os.path.getsize(path) == 8 + 4 * (arrays_k * num_k + 3 * num_x)


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
    size = os.path.getsize(os.path.join(d, "obstacles.of"))
    assert size == sx * sy * sz + (sy + 1) * sz, size


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
    for name in ["Datapnts.1"] + [f"Randompnts.{i + 1}" for i in range(sets)]:
        rows = [l.split() for l in open(os.path.join(d, name))]
        assert len(rows) == n, (name, len(rows))
        assert all(len(r) == 2 and -90.0 <= float(r[1]) <= 90.0 for r in rows), name


APPS = {"sgemm": (gen_sgemm, check_sgemm), "stencil": (gen_stencil, check_stencil),
        "cp": (gen_cp, check_cp), "cutcp": (gen_cutcp, check_cutcp),
        "mri-fhd": (lambda d, r: gen_mri(d, r, True), lambda d: check_mri(d, True)),
        "mri-q": (lambda d, r: gen_mri(d, r, False), lambda d: check_mri(d, False)),
        "lbm": (gen_lbm, check_lbm), "tpacf": (gen_tpacf, check_tpacf)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--scale", type=int, default=1)
    a = ap.parse_args()
    global SCALE
    SCALE = max(1, a.scale)
    apps = [x for x in a.only.split(",") if x] or list(APPS)
    for app in apps:
        if app not in APPS:
            sys.exit(f"unknown app {app}; known: {', '.join(APPS)}")
        gen, check = APPS[app]
        d = os.path.join(a.out, app, "small", "input")
        os.makedirs(d, exist_ok=True)
        gen(d, random.Random(f"{a.seed}:{app}"))
        if a.check:
            check(d)
        print(f"{app}: {d}")


if __name__ == "__main__":
    main()
