#!/bin/bash
# On the H100: infer -> self-check over all Rodinia kernels (strict inference, and with
# --assume-size 4096 for sizes the host code leaves to input files), the same self-check
# for the hand-written Parboil harnesses, and the Parboil status comparison (verify with
# the hand-written harnesses vs with the inferred ones). Run from the repository root after
# benches/harness_prep.sh, carrying carry/harness:
#   bash benches/harness_device.sh        (writes under $OUT)
set -u
OUT=${OUT:-/tmp/kp-out}
C=carry/harness
K=$C/kernelpair
mkdir -p "$OUT"
step() { echo; echo "=== $* ($(date +%T))"; }
step "machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
step "GPU test: selfcheck passes good inferred harnesses, catches a short grid"
KERNELPAIR_FIXTURES=$PWD/$C/fixtures CARGO_BIN_EXE_kernelpair=$PWD/$K \
  $C/harness-infer-test --ignored --test-threads 1 2>&1 | tail -5
for v in inferred assumed; do
  step "Rodinia self-check, $v harnesses"
  /usr/bin/time -f "wall %e s" $K harness selfcheck $C/rodinia.jsonl --inferred-dir $C/rodinia-$v \
    --out "$OUT/rodinia-$v.selfcheck.jsonl" --timeout-s 20 > "$OUT/rodinia-$v.selfcheck.txt"
  python3 - "$OUT/rodinia-$v.selfcheck.jsonl" <<'PY'
import json, sys, statistics, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
ok = [r for r in rows if r["pass"]]
print(f"{len(ok)} of {len(rows)} pass ({100 * len(ok) / max(1, len(rows)):.0f}%)")
ms = [r["ms"] for r in rows if r.get("ms") is not None]
if ms:
    print(f"self-check per kernel on the GPU: median {statistics.median(ms):.0f} ms, max {max(ms):.0f} ms ({len(ms)} ran)")
cats = collections.Counter(r.get("category") for r in rows if not r["pass"])
print("| failure category | kernels |")
print("|---|---|")
for c, n in cats.most_common():
    print(f"| {c} | {n} |")
print()
print("| pair | benchmark/kernel | result | failed check | detail |")
print("|---|---|---|---|---|")
for r in rows:
    f = next((c for c in r["checks"] if c["result"] == "fail"), None)
    d = (f["detail"].splitlines()[0] if f and f["detail"] else "")[:140].replace("|", "\\|")
    print(f"| {r['pair_id'][:8]} | {r['benchmark']}/{r['kernel']} | {'pass' if r['pass'] else 'FAIL'} | {f['name'] if f else ''} | {d} |")
PY
done
step "Parboil: hand-written harnesses under the same self-check"
$K harness selfcheck $C/parboil.jsonl --harness-dir $C/parboil-hand --out "$OUT/parboil-hand.selfcheck.jsonl" --timeout-s 20 | tee "$OUT/parboil-hand.selfcheck.txt" | sed 's/^/  /'
# The identity control runs the fast kernel with the fast side's launches: no harness may
# be refused because its slow launches name the slow kernel (this was 9 before the fix).
echo "refused for slow-side launches: $(grep -c "(slow): launch\|(slow): parameter" "$OUT/parboil-hand.selfcheck.txt")"
step "Parboil statuses: hand-written vs inferred harnesses"
$K verify --in $C/parboil.jsonl --out "$OUT/parboil-hand.verify.jsonl" --harness-dir $C/parboil-hand --timeout-s 30 > /dev/null
$K verify --in $C/parboil.jsonl --out "$OUT/parboil-inferred.verify.jsonl" --inferred-dir $C/parboil-inferred --timeout-s 30 > /dev/null
# Assumed sizes make larger inputs: stencil's 1024^3 grids take 25-28 s per pair (10 s of
# input generation, 7 s of comparison), and one timed out at 30 s in run 29b.
$K verify --in $C/parboil.jsonl --out "$OUT/parboil-assumed.verify.jsonl" --inferred-dir $C/parboil-assumed --timeout-s 60 > /dev/null
python3 - "$OUT/parboil-hand.verify.jsonl" "$OUT/parboil-inferred.verify.jsonl" "$OUT/parboil-assumed.verify.jsonl" <<'PY'
import json, sys
def load(p):
    return {r["data"]["id"]: r["data"] for r in map(json.loads, open(p)) if r["type"] == "pair"}
h, i, a = (load(p) for p in sys.argv[1:4])
st = lambda d, k: (d.get(k, {}).get("verification") or {}).get("status")
same = same_a = 0
print("| pair | benchmark/kernel | hand | inferred (strict) | inferred (--assume-size 4096) |")
print("|---|---|---|---|---|")
for k, p in h.items():
    x, y, z = st(h, k), st(i, k), st(a, k)
    same += x == y
    same_a += x == z
    print(f"| {k[:8]} | {p['benchmark']}/{p['kernel']} | {x} | {y} | {z} |")
print(f"same status: strict {same} of {len(h)}, assumed {same_a} of {len(h)}")
PY
