#!/usr/bin/env python3
"""Generate input data for the Rodinia CUDA programs (our own synthetic data).

Usage: rodinia_data.py OUTDIR [--seed N] [--only app,app,...] [--check] [--check-only]

Rodinia's `cuda/<app>/run` scripts read their inputs from `../../data/<app>/<file>`, and
the public tree ships no data. This script writes small but realistic inputs of our own
(randomly generated from --seed, default 1; never downloaded or copied) as
`OUTDIR/<app>/<file>`, with exactly the names the run scripts use, so that pointing
`<rodinia>/data` at OUTDIR (symlink or copy) makes `sh run` find its inputs. Python 3
stdlib only; same seed -> byte-identical files. `--check` re-parses every written file
the way the program's host code does (counts, layout, value ranges) and fails loudly.

Covered (sizes for the default seed; each format was taken from the host code):
  hotspot     temp_512, power_512          262144 lines each, one float per line (512x512,
                                           the run's size argument); temps 321-340 K,
                                           power 0-3e-3 W/cell from a random floorplan.
                                           1.8 MB + 2.5 MB
  hotspot3D   power_512x8, temp_512x8      2097152 lines each (512x512x8, cell (i,j) holds
                                           its 8 layers on consecutive lines). Power is
                                           dissipated in the active layer (k=0) only, the
                                           bulk layers carry 0. 6.1 MB + 12.6 MB (the
                                           run's 512x512x8 forces 2M values per file)
  bfs         graph65536.txt               65536 nodes, 131072 undirected edges (262144
                                           directed entries), connected (BFS depth 11
                                           from source 0), weights 1-10. 2.6 MB
  kmeans      kdd_cup                      20000 points x 34 features ("id f1 .. f34"),
                                           KDD-like mix of flags, counts, rates, bytes. 2.7 MB
  nn          cane4_0.db .. cane4_3.db     10240 fixed-width 48-char storm-track records
                                           each (the names in cuda/nn/filelist_4). 0.5 MB each
  gaussian    matrix4.txt                  4x4 diagonally dominant system + RHS
  lud         256.dat                      256x256 diagonally dominant matrix (only the
                                           commented-out `-i` line of lud's run uses it). 0.6 MB
  b+tree      mil.txt, command.txt         250000 distinct keys (a permutation of
                                           0..249999; the program reads the count from the
                                           file); commands "j 6000 3000" and "k 10000",
                                           NUL-terminated (see gen_bptree). 1.6 MB
  srad        image.pgm                    (srad_v1, read from ../../../data/srad/) ASCII
                                           PGM P2 458x502 (the size main.cu hard-codes),
                                           ultrasound-like speckle image. 0.6 MB
  cfd         fvcorr.domn.097K,            tetrahedral finite-volume meshes (Kuhn split of
              fvcorr.domn.193K,            a jittered cube grid) around a thin wing-like
              missile.domn.0.2M            slab (097K/193K) or a slender nose-coned body
                                           (missile); 10098 / 19890 / 23256 elements
                                           (euler3d reads the count). 2.1 / 4.2 / 4.9 MB
  huffman     test1024_H2.206587175259.in  1 MiB of bytes (1024 blocks x 256 threads x 4 B),
                                           byte entropy 2.206587 bits (as the name says),
                                           32 symbols, Huffman codes <= 13 bits (kernel
                                           limit 16)
  dwt2d       192.bmp, rgb.bmp             24-bit BMPs 192x192 and 1024x1024 (names from
                                           cuda/dwt2d/run.sh; main.cu prepends
                                           ../../data/dwt2d/). 0.1 MB + 3.1 MB
  mummergpu   NC_003997.fna,               1,000,000 bp single-record reference, 10000
              NC_003997_q100bp.fna         100 bp reads sampled from it (both strands, ~1%
                                           substitutions). 1.0 MB + 1.1 MB

Not covered:
  heartwall, leukocyte  need AVI video (avilib) of real ultrasound / microscopy
                        sequences; heartwall even hard-codes the heart-wall sample points
                        of its original 609x590 video (main.cu:198-), so synthetic frames
                        would not exercise the trackers as intended.
  myocyte               y.txt / params.txt are the initial state (EQUATIONS=91) and
                        PARAMETERS=18 of a published cardiac-cell ODE model; random values
                        would make the stiff solver diverge.
  backprop, hybridsort, lavaMD, nw, particlefilter, pathfinder, streamcluster, srad_v2,
  gaussian -s, lud -s   take no input files (they generate data internally).
"""
import argparse
import heapq
import math
import os
import random
import struct
import sys

# ----------------------------------------------------------------------------- helpers


def write_text(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", newline="\n") as f:
        f.write(text)


def write_bytes(path, data):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def box_blur(grid, r, passes=3):
    """Separable box blur of a list-of-lists (rows x cols), clamped at the edges."""
    def blur_rows(g):
        out = []
        for row in g:
            m = len(row)
            pre = [0.0]
            s = 0.0
            for v in row:
                s += v
                pre.append(s)
            out.append([(pre[min(j + r + 1, m)] - pre[max(j - r, 0)]) /
                        (min(j + r + 1, m) - max(j - r, 0)) for j in range(m)])
        return out
    g = grid
    for _ in range(passes):
        g = blur_rows(g)
        g = [list(c) for c in zip(*g)]
        g = blur_rows(g)
        g = [list(c) for c in zip(*g)]
    return g


def floorplan(rng, n, units=(14, 22)):
    """Random guillotine floorplan of an n x n chip -> per-cell power in W.

    Hot units (cores, ALUs, register files) reach ~0.9 * MAX_PD (3e6 W/m^2 in hotspot.cu,
    i.e. ~2.9e-3 W per cell of a 16 mm / 512 grid); caches and I/O are 2-10 % of it."""
    max_cell = 3.0e6 * (0.016 / n) ** 2
    rects = [(0, 0, n, n)]
    target = rng.randint(*units)
    while len(rects) < target:
        rects.sort(key=lambda t: (t[2] - t[0]) * (t[3] - t[1]))
        r0, c0, r1, c1 = rects.pop()
        if (r1 - r0) >= (c1 - c0):
            cut = rng.randint(r0 + (r1 - r0) // 4, r1 - (r1 - r0) // 4)
            rects += [(r0, c0, cut, c1), (cut, c0, r1, c1)]
        else:
            cut = rng.randint(c0 + (c1 - c0) // 4, c1 - (c1 - c0) // 4)
            rects += [(r0, c0, r1, cut), (r0, cut, r1, c1)]
    p = [[0.0] * n for _ in range(n)]
    for (r0, c0, r1, c1) in rects:
        kind = rng.random()
        if kind < 0.35:
            dens = rng.uniform(0.45, 0.9)      # core / execution units
        elif kind < 0.75:
            dens = rng.uniform(0.02, 0.10)     # caches
        else:
            dens = rng.uniform(0.10, 0.30)     # uncore, memory controllers
        for i in range(r0, r1):
            row = p[i]
            for j in range(c0, c1):
                row[j] = max_cell * dens * (1.0 + rng.uniform(-0.05, 0.05))
    return p


def temperature_from_power(rng, p, t_lo=321.0, t_hi=340.0):
    n = len(p)
    sm = box_blur(p, max(2, n // 24), passes=3)
    lo = min(min(r) for r in sm)
    hi = max(max(r) for r in sm)
    span = (hi - lo) or 1.0
    return [[t_lo + (t_hi - t_lo) * (v - lo) / span + rng.uniform(-0.05, 0.05) for v in r]
            for r in sm]


# ----------------------------------------------------------------------------- hotspot
# hotspot.cu readinput(): for each of grid_rows*grid_cols cells fgets(256) one line and
# sscanf("%f"); feof() right after fgets is fatal, so the last line needs its '\n'.

def gen_hotspot(out, rng):
    n = 512
    p = floorplan(rng, n)
    t = temperature_from_power(rng, p)
    write_text(os.path.join(out, "hotspot", "temp_512"),
               "".join("%.2f\n" % v for r in t for v in r))
    write_text(os.path.join(out, "hotspot", "power_512"),
               "".join("%.4g\n" % v for r in p for v in r))


def read_float_lines(path, count):
    vals = []
    with open(path) as f:
        for k in range(count):
            line = f.readline()
            assert line.endswith("\n"), "%s: line %d missing or unterminated" % (path, k + 1)
            assert len(line) < 256, "%s: line %d longer than STR_SIZE" % (path, k + 1)
            vals.append(float(line.split()[0]))
    return vals


def check_hotspot(out):
    t = read_float_lines(os.path.join(out, "hotspot", "temp_512"), 512 * 512)
    p = read_float_lines(os.path.join(out, "hotspot", "power_512"), 512 * 512)
    assert 300 < min(t) and max(t) < 360, (min(t), max(t))
    assert min(p) >= 0 and max(p) < 3.0e6 * (0.016 / 512) ** 2, (min(p), max(p))
    return "temp %.2f..%.2f K, power %.2e..%.2e W" % (min(t), max(t), min(p), max(p))


# ----------------------------------------------------------------------------- hotspot3D
# 3D.cu readinput(): loops i<rows, j<cols, k<layers, reading one "%f" line per value into
# vect[i*cols + j + k*rows*cols]: the file lists, per cell (i,j), its `layers` values.

def gen_hotspot3d(out, rng):
    n, layers = 512, 8
    p = floorplan(rng, n)
    t = temperature_from_power(rng, p, 322.0, 339.0)
    pw, tw = [], []
    for i in range(n):
        prow, trow = p[i], t[i]
        for j in range(n):
            pw.append("%.4g\n" % prow[j])
            pw.append("0\n" * (layers - 1))
            base = trow[j]
            # the active layer is hottest; the bulk cools by ~0.15 K per layer
            tw.append("".join("%.1f\n" % (base - 0.15 * k) for k in range(layers)))
    write_text(os.path.join(out, "hotspot3D", "power_512x8"), "".join(pw))
    write_text(os.path.join(out, "hotspot3D", "temp_512x8"), "".join(tw))


def check_hotspot3d(out):
    cnt = 512 * 512 * 8
    p = read_float_lines(os.path.join(out, "hotspot3D", "power_512x8"), cnt)
    t = read_float_lines(os.path.join(out, "hotspot3D", "temp_512x8"), cnt)
    assert 300 < min(t) and max(t) < 360 and min(p) >= 0 and max(p) < 3e-3
    return "%d values each; temp %.1f..%.1f K, power max %.2e W" % (cnt, min(t), max(t), max(p))


# ----------------------------------------------------------------------------- bfs
# bfs.cu: fscanf %d no_of_nodes; per node "%d %d" (start, edge count); %d source (then
# forced to 0); %d edge_list_size; per edge "%d" id, "%d" cost. Any whitespace works.

def gen_bfs(out, rng):
    n = 65536
    adj = [[] for _ in range(n)]
    seen = set()

    def add(u, v):
        if u == v:
            return False
        key = (u, v) if u < v else (v, u)
        if key in seen:
            return False
        seen.add(key)
        w = rng.randint(1, 10)
        adj[u].append((v, w))
        adj[v].append((u, w))
        return True
    # random recursive tree (connected, small depth) + uniformly random extra edges
    for i in range(1, n):
        add(i, rng.randrange(i))
    extra = n + 1  # 65535 tree edges + 65537 extra = 131072 undirected edges
    while extra:
        if add(rng.randrange(n), rng.randrange(n)):
            extra -= 1
    # relabel nodes randomly (but keep 0 as the source) so ids carry no tree structure
    perm = list(range(1, n))
    rng.shuffle(perm)
    perm = [0] + perm
    inv = [0] * n
    for old, new in enumerate(perm):
        inv[new] = old
    lines = ["%d\n" % n]
    start = 0
    for new in range(n):
        d = len(adj[inv[new]])
        lines.append("%d %d\n" % (start, d))
        start += d
    lines.append("\n0\n\n%d\n" % start)
    for new in range(n):
        nb = adj[inv[new]]
        rng.shuffle(nb)
        lines.append("".join("%d %d\n" % (perm[v], w) for v, w in nb))
    write_text(os.path.join(out, "bfs", "graph65536.txt"), "".join(lines))


def check_bfs(out):
    tok = open(os.path.join(out, "bfs", "graph65536.txt")).read().split()
    it = iter(tok)
    n = int(next(it))
    nodes = [(int(next(it)), int(next(it))) for _ in range(n)]
    int(next(it))  # source (bfs.cu overwrites it with 0)
    e = int(next(it))
    edges = [(int(next(it)), int(next(it))) for _ in range(e)]
    assert next(it, None) is None, "trailing tokens"
    s = 0
    for st, d in nodes:
        assert st == s and d >= 1
        s += d
    assert s == e
    assert all(0 <= v < n and w > 0 for v, w in edges)
    cost = [-1] * n
    cost[0] = 0
    front, levels = [0], 0
    while front:
        nxt = []
        for u in front:
            st, d = nodes[u]
            for v, _ in edges[st:st + d]:
                if cost[v] < 0:
                    cost[v] = cost[u] + 1
                    nxt.append(v)
        front = nxt
        levels += 1 if nxt else 0
    assert min(cost) >= 0, "graph not connected"
    return "%d nodes, %d edge entries, BFS depth %d from node 0" % (n, e, levels)


# ----------------------------------------------------------------------------- kmeans
# kmeans.c (text input): a line counts as a point if strtok(" \t\n") finds a token (the
# id); the number of features is the number of further tokens on the first point line;
# lines are read with fgets(line, 1024) so each must stay under 1023 chars. The kernel's
# constant cluster buffer is c_clusters[ASSUMED_NR_CLUSTERS*34], so 34 features.

KMEANS_FEATURES = (
    # kind, parameters: bytes -> lognormal mu; count -> max; rate; flag -> prob scale
    ["dur"] + ["bytes"] * 2 + ["flag"] * 4 + ["count"] * 3 + ["flag"] * 3 +
    ["count"] * 2 + ["rate"] * 7 + ["count"] * 2 + ["rate"] * 10
)
assert len(KMEANS_FEATURES) == 34


def gen_kmeans(out, rng):
    npoints = 20000
    k = 7
    profiles = []
    for c in range(k):
        prof = []
        for kind in KMEANS_FEATURES:
            if kind == "dur":
                prof.append((rng.uniform(0.0, 0.3), rng.uniform(50, 3000)))
            elif kind == "bytes":
                prof.append((rng.uniform(3.0, 9.5), rng.uniform(0.3, 1.2)))
            elif kind == "flag":
                prof.append(rng.choice((0.0, 0.01, 0.05, 0.5, 0.95)))
            elif kind == "count":
                prof.append((rng.uniform(0, 500), rng.uniform(2, 60)))
            else:
                prof.append((rng.uniform(0, 1), rng.uniform(0.01, 0.15)))
        profiles.append(prof)
    weights = [rng.uniform(0.3, 3.0) for _ in range(k)]
    lines = []
    for pid in range(npoints):
        prof = profiles[rng.choices(range(k), weights)[0]]
        vals = []
        for kind, par in zip(KMEANS_FEATURES, prof):
            if kind == "dur":
                v = int(rng.expovariate(1.0 / par[1])) if rng.random() < par[0] else 0
                vals.append("%d" % v)
            elif kind == "bytes":
                vals.append("%d" % int(rng.lognormvariate(par[0], par[1])))
            elif kind == "flag":
                vals.append("1" if rng.random() < par else "0")
            elif kind == "count":
                vals.append("%d" % min(511, max(0, int(rng.gauss(*par)))))
            else:
                r = min(1.0, max(0.0, rng.gauss(*par)))
                vals.append(("%.2f" % r).rstrip("0").rstrip("."))
        lines.append("%d %s\n" % (pid + 1, " ".join(vals)))
    write_text(os.path.join(out, "kmeans", "kdd_cup"), "".join(lines))


def check_kmeans(out):
    path = os.path.join(out, "kmeans", "kdd_cup")
    npoints, nfeat = 0, None
    for line in open(path):
        assert len(line) < 1023, "line too long for fgets(line, 1024)"
        tok = line.replace(",", " ").split()
        if not tok:
            continue
        npoints += 1
        if nfeat is None:
            nfeat = len(tok) - 1
        assert len(tok) - 1 == nfeat
        for x in tok[1:]:
            assert math.isfinite(float(x))
    assert nfeat == 34 and npoints >= 5
    return "%d points x %d features" % (npoints, nfeat)


# ----------------------------------------------------------------------------- nn
# nn_cuda.cu loadData(): per record fgets(recString, 49) (48 chars) then fgetc ('\n');
# latitude = atof(chars 28..32), longitude = atof(chars 33..37). Our layout
# "%4d %2d %2d %2d %2d %-9s %5.1f %5.1f %4d %4d" puts lat at 27..31 (char 27 is a space
# while lat < 100) and lon at 33..37, exactly 48 chars.

STORM_NAMES = ("AMARA", "BASTIEN", "CORALIE", "DORIAN", "ELOWEN", "FARIDA", "GUSTAV",
               "HALVARD", "IMOGEN", "JORIS", "KALINDA", "LEANDRO", "MARISOL", "NIKOLAI",
               "ODALYS", "PERRIN", "QUILLON", "ROSALIND", "SEVERIN", "TAMSIN", "ULRIKE",
               "VASCO", "WINIFRED", "XANTHE", "YANNICK", "ZELIE")


def nn_records(rng, count):
    recs = []
    while len(recs) < count:
        year = rng.randint(1950, 2004)
        month = rng.choice((6, 7, 8, 8, 9, 9, 9, 10, 10, 11))
        date = rng.randint(1, 28)
        hour = rng.choice((0, 6, 12, 18))
        num = rng.randint(1, 28)
        name = rng.choice(STORM_NAMES)
        basin = rng.random()
        if basin < 0.5:      # North Atlantic (east-positive longitudes)
            lat, lon = rng.uniform(9, 22), rng.uniform(290, 340)
        elif basin < 0.8:    # West Pacific
            lat, lon = rng.uniform(8, 20), rng.uniform(125, 165)
        elif basin < 0.9:    # East Pacific
            lat, lon = rng.uniform(8, 18), rng.uniform(235, 265)
        else:                # North Indian Ocean
            lat, lon = rng.uniform(8, 18), rng.uniform(60, 95)
        dlat, dlon = rng.uniform(0.1, 0.5), rng.uniform(-1.2, -0.2)
        speed, press = rng.uniform(20, 40), rng.uniform(1000, 1010)
        for _ in range(rng.randint(8, 60)):
            recs.append("%4d %2d %2d %2d %2d %-9s %5.1f %5.1f %4d %4d\n" % (
                year, month, date, hour, num, name, lat, lon,
                int(min(164, max(10, speed))), int(min(1012, max(880, press)))))
            hour += 6
            if hour == 24:
                hour, date = 0, date + 1
                if date > 28:
                    date, month = 1, month % 12 + 1
            lat = min(69.9, max(7.0, lat + dlat + rng.gauss(0, 0.1)))
            if lat > 25:     # recurvature: turn poleward-east
                dlon = min(dlon + 0.15, 1.2)
                dlat = min(dlat + 0.05, 0.9)
            lon = (lon + dlon + rng.gauss(0, 0.1)) % 358.0
            dspeed = rng.gauss(2.0 if lat < 25 else -4.0, 4.0)
            speed += dspeed
            press -= 0.9 * dspeed
            if len(recs) == count:
                break
    return recs


def gen_nn(out, rng):
    for f in range(4):
        write_text(os.path.join(out, "nn", "cane4_%d.db" % f), "".join(nn_records(rng, 10240)))


def c_atof(s):
    """atof(): longest numeric prefix after leading whitespace, else 0."""
    s = s.lstrip()
    for end in range(len(s), 0, -1):
        try:
            return float(s[:end])
        except ValueError:
            continue
    return 0.0


def check_nn(out):
    total = 0
    for f in range(4):
        data = open(os.path.join(out, "nn", "cane4_%d.db" % f), "rb").read()
        assert len(data) % 49 == 0
        for k in range(len(data) // 49):
            rec = data[49 * k:49 * k + 49].decode()
            assert rec[48] == "\n" and "\n" not in rec[:48], "record %d of file %d" % (k, f)
            lat, lon = c_atof(rec[28:33]), c_atof(rec[33:38])
            assert abs(lat - float(rec[27:32])) < 1e-6 and abs(lon - float(rec[33:38])) < 1e-6
            assert 0 <= lat < 90 and 0 <= lon < 360
        total += len(data) // 49
    return "%d records in 4 files" % total


# ----------------------------------------------------------------------------- gaussian
# gaussian.cu InitProblemOnce(): fscanf %d Size, then Size*Size "%f" (row major) for a,
# then Size "%f" for b. No pivoting (Fan1 divides by a[t][t]): keep it diagonally dominant.

def dominant_matrix(rng, n, fmt):
    rows = []
    for i in range(n):
        row = [rng.uniform(-1.0, 1.0) for _ in range(n)]
        off = sum(abs(v) for j, v in enumerate(row) if j != i)
        row[i] = rng.choice((-1, 1)) * (off + rng.uniform(0.5, 2.0))
        rows.append([float(fmt % v) for v in row])
    return rows


def gen_gaussian(out, rng):
    n = 4
    a = dominant_matrix(rng, n, "%.2f")
    x = [round(rng.uniform(-1, 1), 2) for _ in range(n)]
    b = [sum(a[i][j] * x[j] for j in range(n)) for i in range(n)]
    text = "%d\n\n" % n
    text += "".join("\t".join("%.2f" % v for v in row) + "\n" for row in a)
    text += "\n" + "\t".join("%.4f" % v for v in b) + "\n"
    write_text(os.path.join(out, "gaussian", "matrix4.txt"), text)


def lu_nopivot_min_pivot(a):
    n = len(a)
    a = [r[:] for r in a]
    piv = float("inf")
    for t in range(n):
        piv = min(piv, abs(a[t][t]))
        for i in range(t + 1, n):
            m = a[i][t] / a[t][t]
            ai, at = a[i], a[t]
            for j in range(t, n):
                ai[j] -= m * at[j]
    return piv


def check_gaussian(out):
    tok = open(os.path.join(out, "gaussian", "matrix4.txt")).read().split()
    n = int(tok[0])
    vals = [float(v) for v in tok[1:1 + n * n + n]]
    assert len(vals) == n * n + n and n == 4
    a = [vals[i * n:(i + 1) * n] for i in range(n)]
    piv = lu_nopivot_min_pivot(a)
    assert piv > 0.1
    return "Size %d, min pivot %.3f" % (n, piv)


# ----------------------------------------------------------------------------- lud
# common.c create_matrix_from_file(): fscanf "%d\n" size, then size*size "%f ".

def gen_lud(out, rng):
    n = 256
    a = dominant_matrix(rng, n, "%.6f")
    text = "%d\n" % n + "".join(" ".join("%.6f" % v for v in row) + "\n" for row in a)
    write_text(os.path.join(out, "lud", "256.dat"), text)


def check_lud(out):
    tok = open(os.path.join(out, "lud", "256.dat")).read().split()
    n = int(tok[0])
    assert n == 256 and len(tok) == 1 + n * n
    a = [[float(v) for v in tok[1 + i * n:1 + (i + 1) * n]] for i in range(n)]
    for i in range(n):
        assert abs(a[i][i]) > sum(abs(v) for j, v in enumerate(a[i]) if j != i)
    return "%dx%d, strictly diagonally dominant (LU without pivoting is safe)" % (n, n)


# ----------------------------------------------------------------------------- b+tree
# main.c: fscanf "%d\n" size, then "%d\n" keys until EOF (duplicates are ignored by
# insert). Query keys are rand()/RAND_MAX*size, so keys 0..size-1 make queries hit.
# The command file is fread into a malloc(lSize) buffer that is never NUL-terminated
# (main.c:1937-1941) and then scanned with sscanf until EOF (main.c:2030): we end the
# file with a NUL byte so the scan stops at the end of the file instead of reading past
# the buffer. Each 'k N' / 'j N M' needs a space after the letter; note main.c:2276-2283
# reads `count` twice from the same position (the skip loop stops at once on the space),
# so for 'j' rSize == count in practice: count must be <= size and <= 65535 (CUDA blocks).

def gen_bptree(out, rng):
    n = 250000
    keys = list(range(n))
    rng.shuffle(keys)
    write_text(os.path.join(out, "b+tree", "mil.txt"),
               "%d\n" % n + "".join("%d\n" % k for k in keys))
    write_bytes(os.path.join(out, "b+tree", "command.txt"), b"j 6000 3000\nk 10000\n\0")


def check_bptree(out):
    tok = open(os.path.join(out, "b+tree", "mil.txt")).read().split()
    size = int(tok[0])
    keys = [int(v) for v in tok[1:]]
    assert len(keys) == size and len(set(keys)) == size
    order = 256
    max_nodes = int(order ** (math.log(size) / math.log(order / 2.0) - 1) + 1)
    leaves_worst = math.ceil(size / (order // 2 - 1))       # every leaf half full
    assert leaves_worst * 1.05 + 64 < max_nodes, (leaves_worst, max_nodes)
    buf = open(os.path.join(out, "b+tree", "command.txt"), "rb").read()
    assert buf.endswith(b"\0") and b"\0" not in buf[:-1]
    text = buf[:-1].decode()
    p, cmds = 0, []
    while p < len(text):            # the main.c loop, including its parse quirk
        c = text[p]
        p += 1
        if c in "kj":
            first = int(text[p:].split()[0])
            cmds.append((c, first, first if c == "j" else None))
        assert c in "kj0123456789 \n", "unexpected command char %r" % c
    for c, count, rsize in cmds:
        assert 0 < count <= 65535 and (rsize is None or 0 <= rsize <= size)
    return "%d keys (max_nodes %d); commands %s" % (size, max_nodes, cmds)


# ----------------------------------------------------------------------------- srad_v1
# main.cu reads ../../../data/srad/image.pgm with image_ori_rows = 502, image_ori_cols =
# 458 hard-coded; graphics.c read_graphics() skips exactly 3 '\n' (P2 / "cols rows" /
# maxval, so no comment lines) and then fscanf("%d") rows*cols values, row by row.

def gen_srad(out, rng):
    rows, cols = 502, 458
    apex_r, apex_c = -40.0, cols / 2.0
    rmax = rows + 20.0
    half = math.radians(38)
    cy, cx, ay, ax = rows * 0.52, cols * 0.5, rows * 0.30, cols * 0.26
    # correlated speckle: blurred complex Gaussian field -> Rayleigh amplitude
    re = [[rng.gauss(0, 1) for _ in range(cols)] for _ in range(rows)]
    im = [[rng.gauss(0, 1) for _ in range(cols)] for _ in range(rows)]
    re, im = box_blur(re, 1, 1), box_blur(im, 1, 1)
    mean_amp = sum(math.hypot(re[i][j], im[i][j]) for i in range(0, rows, 7)
                   for j in range(0, cols, 7)) / (len(range(0, rows, 7)) * len(range(0, cols, 7)))
    lines = ["P2\n%d %d\n255\n" % (cols, rows)]
    for i in range(rows):
        vals = []
        for j in range(cols):
            dr, dc = i - apex_r, j - apex_c
            ang = math.atan2(dc, dr)
            rad = math.hypot(dr, dc)
            if abs(ang) > half or rad > rmax:
                vals.append(0)
                continue
            e = math.hypot((i - cy) / ay, (j - cx) / ax)   # elliptic "ventricle"
            if e < 0.8:
                base = 25.0                                   # blood pool
            elif e < 1.25:
                base = 150.0 + 40.0 * math.cos(3.0 * math.atan2(i - cy, j - cx))  # wall
            else:
                base = 70.0                                   # surrounding tissue
            base *= 1.0 - 0.45 * rad / rmax                   # depth attenuation
            v = base * math.hypot(re[i][j], im[i][j]) / mean_amp
            vals.append(min(255, max(0, int(v))))
        for k in range(0, cols, 17):
            lines.append(" ".join("%d" % v for v in vals[k:k + 17]) + "\n")
    write_text(os.path.join(out, "srad", "image.pgm"), "".join(lines))


def check_srad(out):
    data = open(os.path.join(out, "srad", "image.pgm")).read()
    head = data.split("\n", 3)
    assert head[0] == "P2" and head[1].split() == ["458", "502"] and head[2] == "255"
    vals = [int(v) for v in head[3].split()]
    assert len(vals) == 502 * 458 and 0 <= min(vals) and max(vals) <= 255
    return "P2 458x502, values %d..%d, mean %.1f" % (min(vals), max(vals), sum(vals) / len(vals))


# ----------------------------------------------------------------------------- cfd
# euler3d.cu main(): `file >> nel`, then per element: area, and for each of NNB=4 faces
# a neighbour (Fortran 1-based; the code subtracts 1 and maps any negative to -1 first,
# so file 0 -> -1 = wing/solid wall, file <0 -> -2 = far field) and the 3 components of
# the face normal, which the code negates. The kernels use the negated normal as the
# inward, area-scaled face normal (flux += normal*pressure at walls), so the file holds
# OUTWARD normals scaled by the face area. `areas` enters the time step as
# 0.5/(sqrt(area)*(|v|+c)); we store the element volume.

KUHN = ((0, 1, 2), (0, 2, 1), (1, 0, 2), (1, 2, 0), (2, 0, 1), (2, 1, 0))


def cfd_mesh(rng, nx, ny, nz, solid, length=1.0):
    """Tetrahedral mesh of the box [0,nx]x[0,ny]x[0,nz]*h minus the cubes where
    solid(i,j,k) is true. Returns text of the file."""
    h = length / max(nx, ny, nz)
    vid = lambda i, j, k: (i * (ny + 1) + j) * (nz + 1) + k
    pos = {}
    for i in range(nx + 1):
        for j in range(ny + 1):
            for k in range(nz + 1):
                inner = 0 < i < nx and 0 < j < ny and 0 < k < nz
                jit = (lambda: rng.uniform(-0.06, 0.06) * h) if inner else (lambda: 0.0)
                pos[vid(i, j, k)] = (i * h + jit(), j * h + jit(), k * h + jit())
    tets = []
    for i in range(nx):
        for j in range(ny):
            for k in range(nz):
                if solid(i, j, k):
                    continue
                for perm in KUHN:
                    c = [i, j, k]
                    vs = [vid(*c)]
                    for ax in perm:
                        c[ax] += 1
                        vs.append(vid(*c))
                    tets.append(vs)
    sub = lambda a, b: (a[0] - b[0], a[1] - b[1], a[2] - b[2])
    cross = lambda a, b: (a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2],
                          a[0] * b[1] - a[1] * b[0])
    dot = lambda a, b: a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
    faces = {}
    elems = []
    for e, vs in enumerate(tets):
        P = [pos[v] for v in vs]
        vol = abs(dot(sub(P[1], P[0]), cross(sub(P[2], P[0]), sub(P[3], P[0])))) / 6.0
        assert vol > 0.5 * h ** 3 / 6.0, "degenerate tetrahedron"
        fl = []
        for skip in range(4):
            tri = [vs[m] for m in range(4) if m != skip]
            a, b, c = (pos[v] for v in tri)
            n = cross(sub(b, a), sub(c, a))
            n = (0.5 * n[0] + 0.0, 0.5 * n[1] + 0.0, 0.5 * n[2] + 0.0)
            if dot(n, sub(pos[vs[skip]], a)) > 0:      # point away from the 4th vertex
                n = (0.0 - n[0], 0.0 - n[1], 0.0 - n[2])
            key = tuple(sorted(tri))
            faces.setdefault(key, []).append(e)
            fl.append((key, n))
        elems.append((vol, fl))
    lines = ["%d\n" % len(elems)]
    for e, (vol, fl) in enumerate(elems):
        parts = ["%.7e" % vol]
        for key, n in fl:
            owners = faces[key]
            if len(owners) == 2:
                nb = (owners[0] if owners[1] == e else owners[1]) + 1
            else:
                cen = [sum(pos[v][d] for v in key) / 3.0 for d in range(3)]
                on_box = any(abs(cen[d]) < 1e-9 or abs(cen[d] - lim * h) < 1e-9
                             for d, lim in enumerate((nx, ny, nz)))
                nb = -1 if on_box else 0
            parts.append("\n%d %.7e %.7e %.7e" % (nb, n[0], n[1], n[2]))
        lines.append(" ".join(parts[:1]) + "".join(parts[1:]) + "\n")
    return "".join(lines)


def gen_cfd(out, rng):
    def slab(nx, ny, nz):    # wing-like thin slab in the middle of the box
        return lambda i, j, k: (nx * 0.3 <= i < nx * 0.7 and j == ny // 2 and
                                nz * 0.15 <= k < nz * 0.85)

    def missile(nx, ny, nz):    # slender body along x (the flow direction), conical nose
        x0, x1 = nx * 0.15, nx * 0.8

        def inside(i, j, k):
            if not x0 <= i < x1:
                return False
            r = ny * 0.1 * min(1.0, (i + 0.5 - x0) / (0.3 * (x1 - x0)))
            return (j + 0.5 - ny / 2) ** 2 + (k + 0.5 - nz / 2) ** 2 <= r * r
        return inside
    # euler3d runs Mach 1.2 at 0 degrees along +x for 2000 local-time-step RK3 iterations;
    # its step is 0.5/(sqrt(area)(|v|+c)), so the effective CFL grows like sqrt(cell
    # size): a 0.1-long domain keeps it ~0.25. Bluff obstacles (or a 1.0-long domain)
    # drive the pressure negative at the staircase corners and the run ends in NaN.
    for name, (nx, ny, nz), shape in (("fvcorr.domn.097K", (12, 12, 12), slab),
                                      ("fvcorr.domn.193K", (15, 15, 15), slab),
                                      ("missile.domn.0.2M", (20, 14, 14), missile)):
        write_text(os.path.join(out, "cfd", name),
                   cfd_mesh(rng, nx, ny, nz, shape(nx, ny, nz), length=0.1))


def check_cfd(out):
    res = []
    for name in ("fvcorr.domn.097K", "fvcorr.domn.193K", "missile.domn.0.2M"):
        tok = open(os.path.join(out, "cfd", name)).read().split()
        nel = int(tok[0])
        assert len(tok) == 1 + nel * 17, "expected 17 numbers per element"
        nbs, norms, kinds = [], [], {"interior": 0, "wing": 0, "farfield": 0}
        for e in range(nel):
            rec = tok[1 + 17 * e:1 + 17 * (e + 1)]
            assert float(rec[0]) > 0
            nb = []
            nm = []
            for f in range(4):
                v = int(rec[1 + 4 * f])
                v = (-1 if v < 0 else v) - 1     # as euler3d.cu
                nb.append(v)
                nm.append(tuple(float(x) for x in rec[2 + 4 * f:5 + 4 * f]))
                kinds["interior" if v >= 0 else ("wing" if v == -1 else "farfield")] += 1
            s = [sum(n[d] for n in nm) for d in range(3)]
            assert max(abs(x) for x in s) < 1e-9, "element %d not closed" % e
            nbs.append(nb)
            norms.append(nm)
        for e in range(nel):
            for f, v in enumerate(nbs[e]):
                if v >= 0:
                    assert v < nel
                    back = [g for g, w in enumerate(nbs[v]) if w == e]
                    assert len(back) == 1, "asymmetric neighbours %d/%d" % (e, v)
                    a, b = norms[e][f], norms[v][back[0]]
                    assert max(abs(a[d] + b[d]) for d in range(3)) < 1e-9
        res.append("%s: %d elems, faces %s" % (name, nel, kinds))
    return "; ".join(res)


# ----------------------------------------------------------------------------- huffman
# load_data.h: the file is raw bytes; mem_size = file size, num_elements = mem_size/4,
# num_blocks = num_elements/256 (the name's 1024 -> 1 MiB). The sm64huff kernel packs 4
# codewords into 64 bits, so every Huffman code must be <= 16 bits; pack2 launches
# num_blocks/16 blocks, so num_blocks must be a multiple of 16.

HUFF_TARGET_H = 2.206587175259


def entropy(counts, total):
    return -sum(c / total * math.log2(c / total) for c in counts if c)


def huffman_lengths(counts):
    heap = [(c, i, (s,)) for i, (s, c) in enumerate(counts.items()) if c]
    heapq.heapify(heap)
    depth = {s: 0 for s, c in counts.items() if c}
    uid = len(heap)
    while len(heap) > 1:
        c1, _, s1 = heapq.heappop(heap)
        c2, _, s2 = heapq.heappop(heap)
        for s in s1 + s2:
            depth[s] += 1
        heapq.heappush(heap, (c1 + c2, uid, s1 + s2))
        uid += 1
    return depth


def gen_huffman(out, rng):
    total = 1024 * 256 * 4
    nsym, floor = 32, 300
    syms = rng.sample(range(256), nsym)

    def counts_for(r):
        w = [r ** k for k in range(nsym)]
        sw = sum(w)
        c = [max(floor, int(total * x / sw)) for x in w]
        c[0] += total - sum(c)
        return c
    lo, hi = 0.05, 0.95          # entropy grows with r
    for _ in range(60):
        mid = (lo + hi) / 2
        if entropy(counts_for(mid), total) < HUFF_TARGET_H:
            lo = mid
        else:
            hi = mid
    c = counts_for(lo)
    # fine-tune: move single counts between symbols until H matches to ~1e-7
    for _ in range(20000):
        h = entropy(c, total)
        if abs(h - HUFF_TARGET_H) < 1e-7:
            break
        best = None
        for a in range(nsym):
            for b in range(nsym):
                if a != b and c[a] > floor:
                    # moving 1 from a to b changes H by about log2(c[a]/c[b])/total
                    d = math.log2(c[a] / c[b]) / total
                    err = abs(h + d - HUFF_TARGET_H)
                    if best is None or err < best[0]:
                        best = (err, a, b)
        if best[0] >= abs(h - HUFF_TARGET_H):
            break
        c[best[1]] -= 1
        c[best[2]] += 1
    data = bytearray()
    for s, k in zip(syms, c):
        data += bytes([s]) * k
    idx = list(range(total))
    rng.shuffle(idx)
    data = bytes(data[i] for i in idx)
    write_bytes(os.path.join(out, "huffman", "test1024_H2.206587175259.in"), data)


def check_huffman(out):
    data = open(os.path.join(out, "huffman", "test1024_H2.206587175259.in"), "rb").read()
    total = len(data)
    assert total == 1024 * 256 * 4
    num_blocks = (total // 4) // 256
    assert num_blocks % 16 == 0
    counts = {}
    for b in data:
        counts[b] = counts.get(b, 0) + 1
    h = entropy(list(counts.values()), total)
    lens = huffman_lengths(counts)
    # <= 16 is the kernel's limit; keep a margin for other tie-breaking orders
    assert max(lens.values()) <= 14 and min(lens.values()) >= 1
    assert abs(h - HUFF_TARGET_H) < 1e-5
    return "%d bytes, %d symbols, entropy %.6f, code lengths %d..%d" % (
        total, len(counts), h, min(lens.values()), max(lens.values()))


# ----------------------------------------------------------------------------- dwt2d
# main.cu getImg(): read(2)s pixWidth*pixHeight*components bytes from
# ../../data/dwt2d/<name> (header included; the file is not decoded), names and sizes
# from cuda/dwt2d/run.sh: 192.bmp -d 192x192, rgb.bmp -d 1024x1024, 3 components.

def bmp24(rng, w, h):
    shapes = []
    for _ in range(12):
        shapes.append((rng.uniform(0, w), rng.uniform(0, h), rng.uniform(0.05, 0.3) * w,
                       [rng.randint(0, 255) for _ in range(3)], rng.random() < 0.5))
    g0 = [rng.uniform(40, 200) for _ in range(3)]
    g1 = [rng.uniform(-80, 80) for _ in range(3)]
    g2 = [rng.uniform(-80, 80) for _ in range(3)]
    row_bytes = (w * 3 + 3) & ~3
    pix = bytearray()
    for y in range(h - 1, -1, -1):        # BMP rows are bottom-up, BGR
        row = bytearray()
        for x in range(w):
            col = [g0[ch] + g1[ch] * x / w + g2[ch] * y / h for ch in range(3)]
            for (sx, sy, r, sc, disk) in shapes:
                if disk:
                    inside = (x - sx) ** 2 + (y - sy) ** 2 <= r * r
                else:
                    inside = abs(x - sx) <= r and abs(y - sy) <= 0.6 * r
                if inside:
                    col = [0.35 * col[ch] + 0.65 * sc[ch] for ch in range(3)]
            n = rng.gauss(0, 4)
            row += bytes(min(255, max(0, int(col[ch] + n))) for ch in (2, 1, 0))
        row += b"\0" * (row_bytes - 3 * w)
        pix += row
    hdr = struct.pack("<2sIHHI", b"BM", 54 + len(pix), 0, 0, 54)
    info = struct.pack("<IiiHHIIiiII", 40, w, h, 1, 24, 0, len(pix), 2835, 2835, 0, 0)
    return hdr + info + bytes(pix)


def gen_dwt2d(out, rng):
    write_bytes(os.path.join(out, "dwt2d", "192.bmp"), bmp24(rng, 192, 192))
    write_bytes(os.path.join(out, "dwt2d", "rgb.bmp"), bmp24(rng, 1024, 1024))


def check_dwt2d(out):
    res = []
    for name, w in (("192.bmp", 192), ("rgb.bmp", 1024)):
        d = open(os.path.join(out, "dwt2d", name), "rb").read()
        magic, size, _, _, off = struct.unpack("<2sIHHI", d[:14])
        hsz, bw, bh, planes, bpp = struct.unpack("<IiiHH", d[14:30])
        assert magic == b"BM" and size == len(d) and off == 54 and (bw, bh, bpp) == (w, w, 24)
        assert len(d) >= w * w * 3
        res.append("%s %dx%d 24-bit, %d bytes" % (name, bw, bh, len(d)))
    return "; ".join(res)


# ----------------------------------------------------------------------------- mummergpu
# suffix-tree.cpp getReferenceString(): first line must start with '>', then one
# sequence only (a second '>' is fatal), non-ACGT become 'A'. Queries: FASTA records
# read with read(2), one '>' header line then sequence lines.

def gen_mummergpu(out, rng):
    n, reads, rlen = 1000000, 10000, 100
    gc = 0.35
    alphabet = "ACGT"
    w = [(1 - gc) / 2, gc / 2, gc / 2, (1 - gc) / 2]
    ref = rng.choices(alphabet, w, k=n)
    # a few dispersed repeats (transposon-like copies) for realistic suffix-tree shape
    for _ in range(40):
        L = rng.randint(300, 3000)
        src, dst = rng.randrange(n - L), rng.randrange(n - L)
        ref[dst:dst + L] = ref[src:src + L]
    ref = "".join(ref)
    text = ">synthetic_chromosome random genome, %d bp, GC %.0f%%\n" % (n, gc * 100)
    text += "".join(ref[i:i + 80] + "\n" for i in range(0, n, 80))
    write_text(os.path.join(out, "mummergpu", "NC_003997.fna"), text)
    comp = str.maketrans("ACGT", "TGCA")
    q = []
    for r in range(reads):
        p = rng.randrange(n - rlen)
        s = ref[p:p + rlen]
        if rng.random() < 0.5:
            s = s.translate(comp)[::-1]
        s = list(s)
        for i in range(rlen):
            if rng.random() < 0.01:
                s[i] = rng.choice([b for b in alphabet if b != s[i]])
        q.append(">read_%06d\n%s\n" % (r + 1, "".join(s)))
    write_text(os.path.join(out, "mummergpu", "NC_003997_q100bp.fna"), "".join(q))


def check_mummergpu(out):
    lines = open(os.path.join(out, "mummergpu", "NC_003997.fna")).read().split("\n")
    assert lines[0].startswith(">") and not any(l.startswith(">") for l in lines[1:])
    seq = "".join(lines[1:])
    assert set(seq) <= set("ACGT")
    q = open(os.path.join(out, "mummergpu", "NC_003997_q100bp.fna")).read().split("\n")
    heads = q[0::2]
    seqs = q[1::2]
    assert q[-1] == "" and all(h.startswith(">") for h in heads[:-1])
    assert all(len(s) == 100 and set(s) <= set("ACGT") for s in seqs)
    return "reference %d bp, %d reads of 100 bp" % (len(seq), len(seqs))


# ----------------------------------------------------------------------------- main

APPS = [
    ("hotspot", gen_hotspot, check_hotspot),
    ("hotspot3D", gen_hotspot3d, check_hotspot3d),
    ("bfs", gen_bfs, check_bfs),
    ("kmeans", gen_kmeans, check_kmeans),
    ("nn", gen_nn, check_nn),
    ("gaussian", gen_gaussian, check_gaussian),
    ("lud", gen_lud, check_lud),
    ("b+tree", gen_bptree, check_bptree),
    ("srad", gen_srad, check_srad),
    ("cfd", gen_cfd, check_cfd),
    ("huffman", gen_huffman, check_huffman),
    ("dwt2d", gen_dwt2d, check_dwt2d),
    ("mummergpu", gen_mummergpu, check_mummergpu),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--only", default="", help="comma-separated app names")
    ap.add_argument("--check", action="store_true", help="re-parse the files after writing")
    ap.add_argument("--check-only", action="store_true", help="only re-parse existing files")
    args = ap.parse_args()
    only = set(filter(None, args.only.split(",")))
    unknown = only - {a for a, _, _ in APPS}
    if unknown:
        sys.exit("unknown app(s): %s" % ", ".join(sorted(unknown)))
    for app, gen, chk in APPS:
        if only and app not in only:
            continue
        if not args.check_only:
            # one independent stream per app: --only gives the same bytes as a full run
            gen(args.outdir, random.Random("%d:%s" % (args.seed, app)))
            print("wrote %s" % app, flush=True)
        if args.check or args.check_only:
            print("  check %s: %s" % (app, chk(args.outdir)), flush=True)


if __name__ == "__main__":
    main()
