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
  capture_summary.py pairs CAPTURED HAND           one set of pairs verified twice (verify's
      outputs): statuses under capture alone and under the hand-written harnesses, and each
      pair's status and speedup side by side
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


def verdicts(path):
    out = {}
    for r in lines(path):
        if r.get("type") != "pair":
            continue
        d = r["data"]
        v = d.get("verification") or {}
        slow = ((d.get("slow") or {}).get("unit") or {}).get("kernel", "-")
        name = f"{d.get('benchmark', '?')}: {slow} -> {d['fast']['kernel']}"
        sp = (v.get("speedup") or {}).get("median")
        op = (v.get("evidence") or {}).get("second_opinion") or {}
        origin = (d.get("harness_origin") or {}).get("origin", "-")
        flags = ",".join(f.get("flag", "") for f in v.get("flags", []))
        extra = f" [{origin}" + (f"; 2nd {op.get('origin')} {op.get('status')}" if op else "") + (f"; {flags}" if flags else "") + "]"
        out[d["id"]] = (name, v.get("status", "pending"), sp, extra)
    return out


def pairs(captured, hand):
    a, b = verdicts(captured), verdicts(hand)
    for label, vs in (("captured", a), ("hand", b)):
        c = collections.Counter(v[1] for v in vs.values())
        print(f"{label}: {len(vs)} pairs: " + ", ".join(f"{v} {k}" for k, v in sorted(c.items())))
    judged = ("verified", "not_faster", "mismatch")
    same = sum(1 for k in a if k in b and a[k][1] == b[k][1] and a[k][1] in judged)
    print(f"both judged the same: {same}")
    fmt = lambda s, sp: s + (f" {sp:.2f}x" if sp else "")
    for k in sorted(set(a) | set(b), key=lambda k: (a.get(k) or b.get(k))[0]):
        name = (a.get(k) or b.get(k))[0]
        ca, hb = a.get(k, ("", "-", None, "")), b.get(k, ("", "-", None, ""))
        if ca[1] in ("missing_slow", "-") and hb[1] in ("missing_slow", "-"):
            continue
        print(f"  {name}: captured {fmt(ca[1], ca[2])}{ca[3]} | hand {fmt(hb[1], hb[2])}")


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
    elif len(sys.argv) == 4 and sys.argv[1] == "pairs":
        pairs(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "infer":
        infer(sys.argv[2])
    else:
        sys.exit(__doc__)
