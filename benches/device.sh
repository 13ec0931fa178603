#!/bin/bash
# Everything measured on the device machine, in one command (see benches/RESULTS.md).
# Run from the repository root with the binaries built here and copied into carry/:
#   carry/kernelpair, carry/*-test (every test binary holding #[ignore] GPU tests, e.g.
#   carry/verify-test from tests/verify.rs; scripts/carry_prep.sh copies them), carry/gpu-bench (benches/gpu.rs),
#   carry/fixtures (a copy of fixtures/), and optionally carry/real/{fixtures,real}.jsonl
#   (`kernelpair extract fixtures/parboil` and `kernelpair extract <parboil checkout>`) with
#   carry/real/harness/ (a copy of extractors/parboil/). Suite code stays out of git.
set -u
OUT=${OUT:-/tmp/kp-out}
rm -f "$OUT/failed" 2>/dev/null
C=${CARRY:-carry}
mkdir -p "$OUT"
export KERNELPAIR_FIXTURES=$PWD/$C/fixtures
export KERNELPAIR_SCHEMAS=$PWD/$C/schemas   # copy schemas/ into carry/ too
export CARGO_BIN_EXE_kernelpair=$PWD/$C/kernelpair
K=$C/kernelpair
HERE=$(cd "$(dirname "$0")" && pwd)
step() { echo; echo "=== $* ($(date +%T))"; }
{
step "machine"
pwd; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv
command -v compute-sanitizer
step "GPU tests (cargo test --release -- --ignored): a failure fails this script"
for t in $C/*-test; do
  [ -x "$t" ] || continue
  echo "--- $t"
  "$t" --ignored --test-threads 1 --nocapture || { echo "FAILED: $t"; echo 1 >> "$OUT/failed"; }
done
step "bench: bandwidth, memory-bound fixture, repeatability"
$C/gpu-bench --planted $C/fixtures/planted --json "$OUT/bench.json"
step "planted pairs, then memcheck and racecheck on every pair that ran (the hang costs its 30 s timeout)"
$K validate --no-run --report /dev/null --write-pairs "$OUT/planted.jsonl" $C/fixtures/planted/*/
/usr/bin/time -f "wall %e s" $K verify --in "$OUT/planted.jsonl" --out "$OUT/planted.out.jsonl" --timeout-s 30 --sanitizer memcheck,racecheck
python3 "$HERE/summarize.py" "$OUT/planted.out.jsonl" "planted pairs"
# Pair files made here by `kernelpair extract` (they hold suite code: carried, never committed).
for set in fixtures:"--suite-root $C/fixtures/parboil" real:"--harness-dir $C/real/harness"; do
  name=${set%%:*}; args=${set#*:}
  [ -f $C/real/$name.jsonl ] || continue
  rm -rf /tmp/kp-cache-$name
  step "$name pairs: cold compile cache"
  /usr/bin/time -f "wall %e s" $K verify --in $C/real/$name.jsonl --out "$OUT/$name.cold.jsonl" $args --cache-dir /tmp/kp-cache-$name --timeout-s 30
  step "$name pairs: warm compile cache"
  /usr/bin/time -f "wall %e s" $K verify --in $C/real/$name.jsonl --out "$OUT/$name.warm.jsonl" $args --cache-dir /tmp/kp-cache-$name --timeout-s 30
  python3 "$HERE/summarize.py" "$OUT/$name.cold.jsonl" "$name pairs, cold cache"
  python3 "$HERE/summarize.py" "$OUT/$name.warm.jsonl" "$name pairs, warm cache"
  step "$name pairs: memcheck pass"
  /usr/bin/time -f "wall %e s" $K verify --in $C/real/$name.jsonl --out "$OUT/$name.memcheck.jsonl" $args --cache-dir /tmp/kp-cache-$name --timeout-s 30 --sanitizer memcheck
  python3 "$HERE/summarize.py" "$OUT/$name.memcheck.jsonl" "$name pairs, memcheck" | sed -n '/| tool |/,/^- /p'
done
step "done"
} 2>&1 | tee "$OUT/log.txt"
if [ -s "$OUT/failed" ]; then
  echo "device.sh: $(wc -l < "$OUT/failed") GPU test binary(ies) failed"
  exit 1
fi
