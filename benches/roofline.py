#!/usr/bin/env python3
"""Per pair of a verify output: status, flags, and each size set's kernel times as
multiples of the time their buffers' bytes need at the worker's measured copy bandwidth
(evidence.roofline: slow_x, fast_x), to choose verdict::SUSPECT_SLOW_K.

usage: roofline.py VERIFIED.jsonl [more.jsonl ...]

K must sit above the largest slow_x among honest pairs whose fast kernel is near the bound
(fast_x <= FAST_NEAR_BOUND = 2): the last lines print that figure."""
import json
import sys

NEAR = 2.0
rows, near = [], []
for path in sys.argv[1:]:
    for line in open(path, encoding="utf-8"):
        r = json.loads(line)
        if r.get("type") != "pair":
            continue
        p = r["data"]
        v = p.get("verification") or {}
        flags = ",".join(f["flag"] for f in v.get("flags", [])) or "-"
        roof = (v.get("evidence") or {}).get("roofline")
        if not roof:
            rows.append((p["benchmark"], p["kernel"], v.get("status", "-"), flags, "-", "-", "-"))
            continue
        for s in roof["size_sets"]:
            rows.append((p["benchmark"], p["kernel"], v["status"], flags, s["size_set"],
                         f"{s['slow_x']:.1f}", f"{s['fast_x']:.1f}"))
            if v["status"] == "verified" and s["fast_x"] <= NEAR:
                near.append((s["slow_x"], p["benchmark"], s["size_set"]))
        bw = roof["bandwidth_gbs"]
print(f"| benchmark | kernel | status | flags | size set | slow_x | fast_x |")
print("| --- | --- | --- | --- | --- | ---: | ---: |")
for r in rows:
    print("| " + " | ".join(r) + " |")
if near:
    near.sort()
    print(f"\nverified size sets with fast_x <= {NEAR}: {len(near)}; slow_x max {near[-1][0]:.1f} "
          f"({near[-1][1]} {near[-1][2]}), median {near[len(near) // 2][0]:.1f}")
else:
    print(f"\nno verified size set has fast_x <= {NEAR}")
