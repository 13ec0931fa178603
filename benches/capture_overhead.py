#!/usr/bin/env python3
"""Capture overhead (issue 24): each program's run under capture against the same run plain.

For each program of TREE (or those named), one at a time so no run competes with another:
`kernelpair capture TREE --only PROGRAM --jobs 1 --runs-per-gpu 1 --fresh` (its record gives
each run's seconds under the injection library, snapshots included), then the same commands
again in the capture's scratch copy without the library, best of --repeat. Prints a table of
captured runs: seconds plain, seconds captured, the ratio, launches and snapshot bytes.
Programs whose capture failed are listed with their status.

Usage (on the device): python3 benches/capture_overhead.py [--data DIR] [--repeat N]
                       KERNELPAIR TREE SUITE OUTDIR [PROGRAM ...]
"""
import argparse, json, os, statistics, subprocess, sys, time


def latest(records_path):
    recs = {}
    if os.path.exists(records_path):
        for line in open(records_path):
            try:
                r = json.loads(line)
            except ValueError:
                continue
            recs[r["program"]] = r
    return recs


def blob_bytes(capdir):
    """Bytes of the capture's snapshot blobs (compressed, on disk): each program is captured
    into its own folder, so all of them are its."""
    total = 0
    for d, _, files in os.walk(os.path.join(capdir, "blobs")):
        total += sum(os.path.getsize(os.path.join(d, f)) for f in files)
    return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kernelpair")
    ap.add_argument("tree")
    ap.add_argument("suite")
    ap.add_argument("out")
    ap.add_argument("--data")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("programs", nargs="*")
    # Options may come before, between or after the positionals.
    a = ap.parse_intermixed_args()
    os.makedirs(a.out, exist_ok=True)
    programs = a.programs
    if not programs:
        # Discover once: a capture with no program to run lists them in its journal.
        subprocess.run([a.kernelpair, "capture", a.tree, "-o", os.path.join(a.out, "all"),
                        "--suite", a.suite, "--jobs", "16", "--runs-per-gpu", "8"]
                       + (["--data", a.data] if a.data else []),
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        programs = sorted(p for p, r in latest(os.path.join(a.out, "all", "programs.jsonl")).items()
                          if r["status"] == "captured")
    rows, failed = [], []
    for prog in programs:
        cap = os.path.join(a.out, "one", prog.replace("/", "_"))
        cmd = [a.kernelpair, "capture", a.tree, "-o", cap, "--suite", a.suite, "--only", prog,
               "--jobs", "1", "--runs-per-gpu", "1", "--fresh"] + (["--data", a.data] if a.data else [])
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r = latest(os.path.join(cap, "programs.jsonl")).get(prog)
        if not r or r["status"] != "captured":
            failed.append((prog, r["status"] if r else "no record"))
            continue
        scratch = os.path.join(cap, "work", "tree", prog)
        cwd = scratch if os.path.isdir(scratch) else os.path.dirname(scratch)
        for run in r["runs"]:
            if run.get("exit") != 0 or run.get("launches", 0) == 0:
                continue
            plain = []
            for _ in range(a.repeat):
                t = time.time()
                p = subprocess.run(["sh", "-c", run["command"]], cwd=cwd, stdout=subprocess.DEVNULL,
                                   stderr=subprocess.DEVNULL, timeout=600)
                plain.append(time.time() - t)
            rows.append((prog, run["command"], statistics.median(plain), run["seconds"],
                         run["launches"], blob_bytes(cap), run.get("stopped_early", False)))
    print(f"{'program':<40} {'command':<28} {'plain s':>8} {'capture s':>9} {'ratio':>6} {'launches':>8} {'blob MB':>8}")
    for prog, c, p, s, n, b, early in rows:
        note = " (ended early: quiet launches)" if early else ""
        print(f"{prog:<40} {c[:28]:<28} {p:8.2f} {s:9.2f} {s / max(p, 1e-3):6.2f} {n:8d} {b / 1e6:8.1f}{note}")
    if rows:
        ratios = [s / max(p, 1e-3) for _, _, p, s, _, _, _ in rows]
        print(f"runs: {len(rows)}; ratio median {statistics.median(ratios):.2f}, max {max(ratios):.2f}; "
              f"over 3x: {sum(x > 3 for x in ratios)}")
    for prog, st in failed:
        print(f"{prog}: {st}")


if __name__ == "__main__":
    sys.exit(main())
