#!/bin/bash
# Issue 14 on the device: slowdown checks, per-size verdicts, records that teach.
# Same carry layout as benches/device.sh: carry/kernelpair, carry/fixtures (a copy of
# fixtures/), carry/real/real.jsonl (`kernelpair extract <parboil checkout>`) with
# carry/real/harness/ (a copy of extractors/parboil/). Writes under $OUT; bring back
# $OUT/real-dataset/ and check it here with scripts/check_export.py.
set -u
OUT=${OUT:-/tmp/kp-out}
C=${CARRY:-carry}
K=$C/kernelpair
HERE=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$OUT"
step() { echo; echo "=== $* ($(date +%T))"; }
{
step "1. a clock64() spin is refused before any GPU time; its honest twin verifies"
$K validate $C/fixtures/planted/slowdown_spin $C/fixtures/planted/slowdown_twin --report "$OUT/slowdown.verdict.json"
echo "validate exit $? (4: the spin is rejected)"
step "2. planted pairs: statuses, flags, roofline multiples"
$K validate --no-run --report /dev/null --write-pairs "$OUT/planted.jsonl" $C/fixtures/planted/*/
$K verify --in "$OUT/planted.jsonl" --out "$OUT/planted.out.jsonl" --timeout-s 30
python3 "$HERE/roofline.py" "$OUT/planted.out.jsonl"
if [ -f $C/real/real.jsonl ]; then
  step "3. real Parboil: verdicts with every size set, size_dependent, launches"
  $K verify --in $C/real/real.jsonl --out "$OUT/real.verified.jsonl" --harness-dir $C/real/harness --timeout-s 30
  python3 "$HERE/roofline.py" "$OUT/real.verified.jsonl"
  python3 - "$OUT/real.verified.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("type") != "pair": continue
    p = r["data"]; v = p.get("verification") or {}
    print(f"{p['benchmark']:<10} {p['kernel']:<24} {v.get('status')}: {v.get('reason')}")
PY
  step "4. real Parboil export (bring $OUT/real-dataset back; check it with scripts/check_export.py)"
  rm -rf "$OUT/real-dataset"
  $K export --in "$OUT/real.verified.jsonl" --out "$OUT/real-dataset"
  python3 - "$OUT/real-dataset/chat" <<'PY'
import json, os, sys
for split in ("train", "test"):
    p = os.path.join(sys.argv[1], f"{split}.jsonl")
    if not os.path.exists(p): continue
    for line in open(p):
        m = json.loads(line)["metadata"]
        print(f"--- {m['benchmark']} / {m['kernel']} [{', '.join(m['techniques']) or 'no technique'}] flags={m['flags']}")
        print(f"    slow: {m['slow_launch']}\n    fast: {m['fast_launch']}\n    {m['description']}")
PY
  grep -n "size_dependent" "$OUT/real-dataset/README.md"
  grep -c 'extern "C"' "$OUT"/real-dataset/chat/*.jsonl
fi
step "done"
} 2>&1 | tee "$OUT/honest.log"
