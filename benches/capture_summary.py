#!/usr/bin/env python3
"""Summaries the capture benchmarks print (benches/capture_device.sh, capture_compare.sh).

  capture_summary.py capture NAME CAPDIR REPORT   programs per status (each program that was
      not captured with its reason), then units with a captured launch and how many pass the
      replay self-check, with the failures by reason (REPORT may not exist)
  capture_summary.py infer REPORT                  `harness selfcheck` of inferred harnesses:
      harnesses, fast kernels, and fast kernels with a passing self-check
"""
import collections
import json
import sys


def lines(path):
    try:
        with open(path) as f:
            for line in f:
                try:
                    yield json.loads(line)
                except ValueError:
                    continue
    except FileNotFoundError:
        return


def capture(name, cap, rep):
    progs = {r["program"]: r for r in lines(cap + "/programs.jsonl")}
    st = collections.Counter(r["status"] for r in progs.values())
    print(f"{name}: programs {len(progs)}: " + ", ".join(f"{v} {k}" for k, v in sorted(st.items())))
    for p, r in sorted(progs.items()):
        if r["status"] != "captured":
            print(f"  {p}: {r['status']}: {r['reason'][:160]}")
    reps = {r["unit"]: r for r in lines(rep)}
    ok = sum(1 for r in reps.values() if r["pass"])
    print(f"{name}: units with a captured launch {len(reps)}, self-check pass {ok}")
    fails = collections.Counter((r["status"], r["reason"][:100]) for r in reps.values() if not r["pass"])
    for (s, why), n in fails.most_common(15):
        print(f"  {n} x {s}: {why}")


def infer(rep):
    rs = list(lines(rep))
    fast = {}
    for r in rs:
        k = (r.get("benchmark"), r.get("kernel"))
        fast[k] = fast.get(k, False) or bool(r.get("pass"))
    print(f"inferred: {len(rs)} harness(es), {len(fast)} fast kernel(s), {sum(fast.values())} with a passing self-check")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "capture":
        capture(*sys.argv[2:5])
    elif len(sys.argv) == 3 and sys.argv[1] == "infer":
        infer(sys.argv[2])
    else:
        sys.exit(__doc__)
