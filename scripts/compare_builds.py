#!/usr/bin/env python3
"""Compare two build outputs (issue 25's kill -9 check): each pair's verify status, and the
dataset rows by file and sample id. Usage: compare_builds.py REF_DIR OTHER_DIR
Each DIR holds verified.jsonl and dataset/*.jsonl (a build's output folder, or one unpacked
from benches/public_build.sh's public.tar.xz). Exit 1 when a status or a row differs."""
import glob
import json
import os
import sys


def statuses(d):
    out = {}
    for line in open(os.path.join(d, "verified.jsonl")):
        if not line.strip():
            continue
        r = json.loads(line)
        if r.get("type") != "pair":
            continue
        p = r["data"]
        out[p["id"]] = (p.get("verification") or {}).get("status", "pending")
    return out


def samples(d):
    ids = set()
    root = os.path.join(d, "dataset")
    for f in sorted(glob.glob(os.path.join(root, "**", "*.jsonl"), recursive=True)):
        for line in open(f):
            if not line.strip():
                continue
            r = json.loads(line)
            sid = (r.get("metadata") or {}).get("id") or json.dumps(r, sort_keys=True)
            ids.add((os.path.relpath(f, root), sid))
    return ids


def main():
    ref, other = sys.argv[1], sys.argv[2]
    a, b = statuses(ref), statuses(other)
    same = sum(1 for k in a if b.get(k) == a[k])
    print(f"pairs: reference {len(a)}, other {len(b)}; same status {same}")
    bad = 0
    for k in sorted(set(a) | set(b)):
        if a.get(k) != b.get(k):
            bad += 1
            print(f"  differs: {k}: {a.get(k)} vs {b.get(k)}")
    sa, sb = samples(ref), samples(other)
    print(f"dataset rows: reference {len(sa)}, other {len(sb)}; in both {len(sa & sb)}")
    for f, sid in sorted(sa ^ sb):
        bad += 1
        print(f"  row in one only: {f} {sid} ({'reference' if (f, sid) in sa else 'other'})")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
