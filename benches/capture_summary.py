#!/usr/bin/env python3
"""Summaries the capture benchmarks print (benches/capture_device.sh, capture_compare.sh).

  capture_summary.py capture NAME CAPDIR REPORT   programs per status (each program that was
      not captured with its reason), then units with a captured launch and how many pass the
      replay self-check, with the failures by reason (REPORT may not exist)
  capture_summary.py infer REPORT                  `harness selfcheck` of inferred harnesses:
      harnesses, fast kernels, and fast kernels with a passing self-check
  capture_summary.py programs NAME CAPDIR UNITS REPORT   issue 24's per-program figure: of the
      programs that built and ran with no arguments (a first, plain run that exited 0 or
      launched something), their kernels (units under the program's folder), how many have a captured
      launch, and how many pass the replay self-check
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


def programs(name, cap, units, rep):
    progs = {r["program"]: r for r in lines(cap + "/programs.jsonl")}
    # The program's first run is its plain one; runs a recipe adds (`[[capture.also]]`, with
    # the arguments a program documents) do not make a program one that runs without them.
    ran = sorted(
        p for p, r in progs.items()
        if any(x.get("exit") == 0 or x.get("launches", 0) > 0 for x in r.get("runs", [])[:1])
    )
    us = [r["data"] for r in lines(units) if r.get("type") == "unit"]
    reps = {r["unit"]: r for r in lines(rep)}
    total = captured = passed = 0
    for p in ran:
        mine = [u for u in us if u["path"].startswith(p.rstrip("/") + "/")]
        total += len(mine)
        captured += sum(1 for u in mine if u["id"] in reps)
        passed += sum(1 for u in mine if reps.get(u["id"], {}).get("pass"))
    pct = 100.0 * passed / total if total else 0.0
    print(f"{name}: {len(ran)} of {len(progs)} programs ran with no arguments; their kernels {total}: "
          f"captured {captured}, self-check pass {passed} ({pct:.1f}%)")


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "capture":
        capture(*sys.argv[2:5])
    elif len(sys.argv) == 6 and sys.argv[1] == "programs":
        programs(*sys.argv[2:6])
    elif len(sys.argv) == 3 and sys.argv[1] == "infer":
        infer(sys.argv[2])
    else:
        sys.exit(__doc__)
