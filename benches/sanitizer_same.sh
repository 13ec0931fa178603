#!/bin/bash
# Issue 11 (typed evidence.sanitizer, helper B): the same planted pairs verified with
# `--sanitizer memcheck,racecheck,initcheck` by the binary before the change
# (carry/kernelpair-base) and after it (carry/kernelpair) give the same statuses, reasons
# and the same `evidence.sanitizer` JSON text (wall-clock figures aside), and the typed
# binary reads the old binary's output back unchanged. Exit 1 on any difference.
# Carry: carry/kernelpair, carry/kernelpair-base (both `cargo build --release`),
# carry/fixtures (a copy of fixtures/). Run from the repository root.
set -u
C=${CARRY:-carry}
OUT=${OUT:-/tmp/kp-san}
rm -rf "$OUT"; mkdir -p "$OUT"
$C/kernelpair validate --no-run --report /dev/null --write-pairs "$OUT/planted.jsonl" $C/fixtures/planted/*/ || exit 1
for b in base new; do
  bin=$C/kernelpair; [ $b = base ] && bin=$C/kernelpair-base
  /usr/bin/time -f "$b: wall %e s" $bin verify --in "$OUT/planted.jsonl" --out "$OUT/$b.jsonl" \
    --timeout-s 30 --sanitizer memcheck,racecheck,initcheck --cache-dir "$OUT/cache-$b"
done
# The new binary reads the old output and writes it back: `merge` of one file rewrites it.
$C/kernelpair merge -o "$OUT/base.reread.jsonl" "$OUT/base.jsonl" || echo "merge failed (reading old sanitizer evidence)"
python3 - "$OUT" <<'PY'
import json, re, sys
out = sys.argv[1]
def load(name):
    recs = {}
    for l in open(f"{out}/{name}.jsonl"):
        r = json.loads(l)
        if r["type"] == "pair" and r["data"].get("verification"):
            recs[r["data"]["id"]] = r["data"]["verification"]
    return recs
def san_text(v):
    s = (v.get("evidence") or {}).get("sanitizer")
    t = json.dumps(s, separators=(",", ":"))   # key order as written
    t = re.sub(r'"wall_ms":[0-9.e+-]+', '"wall_ms":_', re.sub(r'"deadline_s":[0-9.e+-]+', '"deadline_s":_', t))
    return masked(t)
def masked(t):
    # What changes from run to run, not with the format: timings in reasons, device addresses,
    # process ids and thread/block coordinates in sanitizer messages.
    t = re.sub(r'0x[0-9a-fA-F]+', '0x_', t)
    t = re.sub(r'\d+\.\d+', '_._', t)
    return re.sub(r'(process id|pid|thread|block)( [(]?[0-9, ]+[)]?)', r'\1 _', t)
def first_diff(a, b):
    i = next((k for k in range(min(len(a), len(b))) if a[k] != b[k]), min(len(a), len(b)))
    return f"at {i}: before …{a[max(0, i-80):i+120]}… after …{b[max(0, i-80):i+120]}…"
base, new = load("base"), load("new")
bad = 0
print(f"{len(base)} pairs before, {len(new)} after")
for pid in sorted(set(base) | set(new)):
    b, n = base.get(pid), new.get(pid)
    if b is None or n is None:
        print("MISSING", pid); bad += 1; continue
    same = (b["status"], masked(b["reason"])) == (n["status"], masked(n["reason"])) and san_text(b) == san_text(n)
    print(f"{'same' if same else 'DIFF'} {pid[:12]} {b['status']:>16} -> {n['status']:<16} sanitizer: {'present' if (b.get('evidence') or {}).get('sanitizer') else 'none'}")
    if not same:
        bad += 1
        print("  reason:", first_diff(masked(b["reason"]), masked(n["reason"])))
        print("  sanitizer:", first_diff(san_text(b), san_text(n)))
try:
    again = load("base.reread")
    for pid, v in base.items():
        if san_text(again.get(pid, {})) != san_text(v):
            print("REREAD DIFF", pid); bad += 1
    print(f"re-read by the typed binary: {len(again)} pairs")
except FileNotFoundError:
    print("REREAD missing"); bad += 1
print("RESULT:", "identical" if bad == 0 else f"{bad} difference(s)")
sys.exit(1 if bad else 0)
PY
