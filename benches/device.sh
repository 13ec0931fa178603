#!/bin/bash
# Everything measured on the device machine, in one command (see benches/RESULTS.md).
# Run from the repository root with the binaries built here and copied into carry/:
#   carry/kernelpair, carry/verify-test (tests/verify.rs), carry/gpu-bench (benches/gpu.rs),
#   carry/fixtures (a copy of fixtures/), optional carry/real/pairs.jsonl + carry/real/harness/.
set -u
OUT=${OUT:-/tmp/kp-out}
C=${CARRY:-carry}
mkdir -p "$OUT"
export KERNELPAIR_FIXTURES=$PWD/$C/fixtures
export CARGO_BIN_EXE_kernelpair=$PWD/$C/kernelpair
K=$C/kernelpair
HERE=$(cd "$(dirname "$0")" && pwd)
step() { echo; echo "=== $* ($(date +%T))"; }
{
step "machine"
pwd; nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,clocks.max.sm,temperature.gpu,power.draw --format=csv
command -v compute-sanitizer
step "GPU tests (cargo test --release -- --ignored)"
$C/verify-test --ignored --test-threads 1 --nocapture
step "bench: bandwidth, memory-bound fixture, repeatability"
$C/gpu-bench --planted $C/fixtures/planted --json "$OUT/bench.json"
step "planted + fixture pairs: cold compile cache"
$K validate --no-run --report /dev/null --write-pairs "$OUT/planted.jsonl" $C/fixtures/planted/*/
rm -rf /tmp/kp-cache
/usr/bin/time -f "wall %e s" $K verify --in "$OUT/planted.jsonl" --out "$OUT/planted.cold.jsonl" --cache-dir /tmp/kp-cache --timeout-s 15
step "same pairs: warm compile cache"
/usr/bin/time -f "wall %e s" $K verify --in "$OUT/planted.jsonl" --out "$OUT/planted.warm.jsonl" --cache-dir /tmp/kp-cache --timeout-s 15
python3 "$HERE/summarize.py" "$OUT/planted.cold.jsonl" "planted, cold cache"
python3 "$HERE/summarize.py" "$OUT/planted.warm.jsonl" "planted, warm cache"
if [ -f $C/real/pairs.jsonl ]; then
  step "real pairs: cold"
  rm -rf /tmp/kp-cache2
  /usr/bin/time -f "wall %e s" $K verify --in $C/real/pairs.jsonl --out "$OUT/real.cold.jsonl" --harness-dir $C/real/harness --cache-dir /tmp/kp-cache2 --timeout-s 30
  step "real pairs: warm"
  /usr/bin/time -f "wall %e s" $K verify --in $C/real/pairs.jsonl --out "$OUT/real.warm.jsonl" --harness-dir $C/real/harness --cache-dir /tmp/kp-cache2 --timeout-s 30
  python3 "$HERE/summarize.py" "$OUT/real.cold.jsonl" "real pairs, cold cache"
  python3 "$HERE/summarize.py" "$OUT/real.warm.jsonl" "real pairs, warm cache"
fi
step "done"
} 2>&1 | tee "$OUT/log.txt"
