#!/bin/bash
# Progression pairs on the device (issue 13): verify every progression pair of cuda-samples
# and llm.c (pairs without a harness end `no_harness`, with the reason), then `validate` the
# two folders whose both sides are the untouched sample file. Run from the repository root
# after scripts/progressions_prepare.sh wrote CARRY (default carry/) and the release binary
# was copied to CARRY/kernelpair:
#   OUT=$OUT bash benches/progressions.sh
set -u
OUT=${OUT:-/tmp/kp-out}
C=${CARRY:-carry}
K=$C/kernelpair
mkdir -p "$OUT"
step() { echo; echo "=== $* ($(date +%T))"; }
{
step machine
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv
for s in cuda-samples llm-c; do
  step "$s progression pairs"
  /usr/bin/time -f "wall %e s" $K verify --in $C/progressions/$s.jsonl --out "$OUT/$s.verified.jsonl" \
    --harness-dir extractors/$s --timeout-s 30
  python3 - "$OUT/$s.verified.jsonl" <<'PY'
import collections, json, sys
rows, by = [], collections.Counter()
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["type"] != "pair" or "slow" not in r["data"]:
        continue
    p = r["data"]; v = p.get("verification") or {}
    st = v.get("status", "unverified"); by[(p["rule"], st)] += 1
    if st == "no_harness":
        continue
    sp = v.get("speedup") or {}
    per = [(t.get("size_set"), t.get("speedup")) for t in (v.get("evidence") or {}).get("timings", [])]
    rows.append((p["fast"]["path"].split("/")[-1], p["slow"]["unit"]["kernel"], p["fast"]["kernel"], p["rule"], st,
                 sp.get("median"), sp.get("ci_low"), sp.get("ci_high"), v.get("reason", "")[:120], per))
print("| file | slow | fast | rule | status | speedup | 95% CI | reason |")
print("|---|---|---|---|---|---|---|---|")
for f, s, fa, rule, st, m, lo, hi, why, per in rows:
    ci = f"{lo:.2f}-{hi:.2f}" if lo is not None else ""
    print(f"| {f} | {s} | {fa} | {rule} | {st} | {m:.2f} | {ci} | {why} |" if m else f"| {f} | {s} | {fa} | {rule} | {st} | | | {why} |")
    for ss, x in per:
        print(f"|   | | | | size set {ss} | {x} | | |")
print()
for (rule, st), n in sorted(by.items()):
    print(f"{rule:<24} {st:<16} {n}")
print("verified:", sum(n for (r, st), n in by.items() if st == "verified"))
PY
done
step "validate: untouched sample files, two kernel names"
$K validate $C/validate/transpose $C/validate/reduction --report "$OUT/validate.json"
echo "validate exit $?"
} 2>&1 | tee "$OUT/progressions.log"
