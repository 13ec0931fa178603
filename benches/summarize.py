#!/usr/bin/env python3
"""Table of a `kernelpair verify` output: status, speedup with its 95% CI, per-variant
medians, compile and total time per pair. Usage: summarize.py OUT.jsonl [LABEL]"""
import json, sys, statistics

rows = []
phases = []
runs = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") != "pair":
        continue
    p = r["data"]; v = p.get("verification") or {}
    ev = v.get("evidence") or {}
    sp = v.get("speedup") or {}
    ph = ev.get("phases_ms") or {}
    t = next((t for t in ev.get("timings", []) if t["size_set"] == sp.get("size_set")), None)
    # The compile phase as the worker saw it: NVRTC (or a cache lookup) plus module load.
    comp = ph.get("compile", 0.0)
    hits = ",".join(str(x.get("cache")) for x in (ev.get("variants") or {}).values())
    rows.append((p["benchmark"], p["kernel"], v.get("status"), sp, t, comp, hits, ph.get("total"), v.get("reason", "")))
    if ph.get("total") is not None:
        phases.append(ph)
        runs.extend(t2["slow"]["runs"] for t2 in ev.get("timings", []))
label = sys.argv[2] if len(sys.argv) > 2 else sys.argv[1]
print(f"## {label}")
print("| benchmark | kernel | status | size set | slow ms | fast ms | speedup | 95% CI | compile ms (cache) | pair total ms |")
print("|---|---|---|---|---|---|---|---|---|---|")
totals = []
comps = []
for b, k, s, sp, t, comp, hits, tot, reason in rows:
    if tot is not None:
        totals.append(tot)
        comps.append(comp)
    if sp:
        print(f"| {b} | {k} | {s} | {sp['size_set']} | {t['slow']['median_ms']:.4f} | {t['fast']['median_ms']:.4f} | {sp['median']:.2f} | {sp['ci_low']:.2f}–{sp['ci_high']:.2f} | {comp:.0f} ({hits}) | {tot:.0f} |")
    else:
        print(f"| {b} | {k} | {s} | | | | | | {comp:.0f} ({hits}) | {'' if tot is None else f'{tot:.0f}'} | <!-- {reason[:150]} -->")
if totals:
    print(f"\npairs run in a worker: {len(totals)}, median total {statistics.median(totals):.0f} ms, max {max(totals):.0f} ms; compile phase summed {sum(comps):.0f} ms, median {statistics.median(comps):.1f} ms")
if phases:
    tot = lambda k: sum(ph.get(k, 0.0) for ph in phases)
    print(f"phases summed over pairs: compile {tot('compile'):.0f} ms, check {tot('check'):.0f} ms, time {tot('time'):.0f} ms, total {tot('total'):.0f} ms")
    subs = sorted({k for ph in phases for k in ph if k.startswith("check.")})
    if subs:
        print("check sub-phases summed: " + ", ".join(f"{k[6:]} {tot(k):.0f} ms" for k in subs))
if runs:
    print(f"timed runs per variant and size set: median {statistics.median(runs):.0f}, min {min(runs)}, max {max(runs)}")
san = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") != "pair":
        continue
    ev = ((r["data"].get("verification") or {}).get("evidence") or {})
    for tool, run in ((ev.get("sanitizer") or {}).get("tools") or ev.get("sanitizer") or {}).items():
        if isinstance(run, dict) and "errors" in run:
            msg = (run.get("messages") or [{}])[0]
            san.append(f"| {r['data']['benchmark']} | {r['data']['kernel']} | {tool} | {run.get('ran')} | {run['errors']} | {run.get('warnings', 0)} | {run.get('wall_ms', 0):.0f} | {(msg.get('kernel') or '')} {(msg.get('text') or run.get('problem') or '')[:80]} |")
if san:
    print("\n| benchmark | kernel | tool | ran | errors | warnings | wall ms | first message |")
    print("|---|---|---|---|---|---|---|---|")
    print("\n".join(san))
for b, k, s, sp, t, comp, hits, tot, reason in rows:
    print(f"- {b}/{k}: {s}: {reason}")
