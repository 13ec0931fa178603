#!/usr/bin/env python3
"""Issue 27's check over verify outputs: no `mismatch` whose fast side wrote NaN/Inf, and no
`mismatch` that says "rel L2 0" (the harness's fault is `degenerate`, decided before any
comparison; positions where both sides are NaN are agreement).

Usage: python3 scripts/check_nan_verdicts.py FILE... (verified.jsonl files, or the
`public.tar.xz` archives benches/public_build.sh writes, read in place). Prints each
offending record and a total per file; exits 1 when any is found, 2 when no pair was read.
"""
import json
import re
import sys
import tarfile

# "worst at index 970: slow 3472061, fast 3471902" — the fast side's value at the worst index.
FAST_NONFINITE = re.compile(r"\bfast (?:-?nan|-?inf)\b", re.IGNORECASE)
ZERO_L2 = re.compile(r"rel L2 0(?:\.0+)?e[+-]?0\b")


def pairs(path):
    """(name, record) for each pair record of a jsonl file or of each verified.jsonl in an archive."""
    if path.endswith((".tar.xz", ".tar.gz", ".tar")):
        with tarfile.open(path) as t:
            for m in t.getmembers():
                if m.isfile() and m.name.endswith("verified.jsonl"):
                    for line in t.extractfile(m):
                        r = json.loads(line)
                        if r.get("type") == "pair":
                            yield f"{path}:{m.name}", r
    else:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                if r.get("type") == "pair":
                    yield path, r


def offence(v):
    """Why a verification breaks the rule, or None."""
    if v.get("status") != "mismatch":
        return None
    reason = v.get("reason", "")
    if FAST_NONFINITE.search(reason):
        return "mismatch with a non-finite fast output (must be degenerate)"
    if ZERO_L2.search(reason):
        return "mismatch that says rel L2 0"
    # Each failed comparison: when every mismatching element is a position where both
    # sides are NaN, the comparison should have passed.
    failed = [c for c in (v.get("evidence") or {}).get("checks") or [] if not c.get("pass", True)]
    if failed and all(0 < c.get("mismatches", 0) <= c.get("both_nan", 0) for c in failed):
        return "mismatch made only of positions where both sides are NaN"
    return None


def main(argv):
    if not argv:
        print(__doc__)
        return 2
    total = bad = 0
    for path in argv:
        n = k = m = 0
        for name, r in pairs(path):
            v = (r.get("data") or {}).get("verification") or {}
            n += 1
            m += v.get("status") == "mismatch"
            why = offence(v)
            if why:
                k += 1
                print(f"{name}: {r['data'].get('kernel')}: {why}: {v.get('reason', '')[:200]}")
        print(f"{path}: {n} pairs, {m} mismatch, {k} breaking the rule")
        total += n
        bad += k
    if total == 0:
        return 2
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
