#!/bin/bash
# Capture on the device: the fixture programs (fixtures/capture, ours), then real trees.
# On the development machine: TREES=/work/trees bash scripts/capture_prep.sh (packs the
# release binary, libkernelpair.so, libcupti.so.13 and the trees into carry/cap.tar.xz).
# On the device: bash benches/capture_device.sh [fixtures|llmc|samples|rodinia|all]
# Writes under $OUT: each step's capture journal and replay report, and a summary.
set -u
OUT=${OUT:-/tmp/kp-out}
mkdir -p "$OUT"
[ -x carry/cap/kernelpair ] || tar -C carry -xJf carry/cap.tar.xz
C=$PWD/carry/cap
K=$C/kernelpair
export PATH=/usr/local/cuda/bin:$PATH KERNELPAIR_INJECT=$C/libkernelpair.so KERNELPAIR_CUPTI=$C/cupti
export KERNELPAIR_FIXTURES=$PWD/fixtures
W=${W:-/tmp/kpcap}
mkdir -p $W
step() { echo; echo "=== $* ($(date +%T))"; }
summary() { python3 benches/capture_summary.py capture "$@"; }  # name capdir report
what=${1:-all}
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
if [ "$what" = fixtures ] || [ "$what" = all ]; then
  step "fixtures: capture"
  /usr/bin/time -f "fixtures capture wall %e s" $K capture fixtures/capture -o $W/fx --suite generic --max-bytes 33554432 --timeout-s 60 2>&1 | tail -20
  cp $W/fx/programs.jsonl $OUT/fx-programs.jsonl
  ls $W/fx/launches/*/run-0/ 2>/dev/null | head -40
  cat $W/fx/launches/manylaunch/run-0/*launch-counts.toml 2>/dev/null
  for m in structptr constant; do f=$(ls $W/fx/launches/$m/run-0/*.toml | grep -v counts | head -1); echo "--- $f"; head -60 $f; done
  step "fixtures: replay"
  $K extract fixtures/capture -o $W/fx-units.jsonl --suite generic --no-compile > /dev/null 2>&1
  $K replay $W/fx --units $W/fx-units.jsonl -o $W/fx-replay.jsonl 2>&1 | tail -5
  cp $W/fx-replay.jsonl $OUT/fx-replay.jsonl
  summary fixtures $W/fx $W/fx-replay.jsonl
fi
if [ "$what" = llmc ] || [ "$what" = all ]; then
  step "llm.c dev/cuda: capture"
  /usr/bin/time -f "llm.c capture wall %e s" timeout ${LLMC_LIMIT:-400} $K capture $C/trees/llm.c -o $W/llmc --suite llm-c --jobs 16 --max-bytes ${LLMC_MAX_BYTES:-1073741824} 2>&1 | tail -30
  cp $W/llmc/programs.jsonl $OUT/llmc-programs.jsonl
  step "llm.c: replay"
  $K extract $C/trees/llm.c -o $W/llmc-units.jsonl --suite llm-c --no-compile > /dev/null 2>&1
  /usr/bin/time -f "llm.c replay wall %e s" $K replay $W/llmc --units $W/llmc-units.jsonl -o $W/llmc-replay.jsonl 2>&1 | tail -5
  cp $W/llmc-replay.jsonl $OUT/llmc-replay.jsonl
  summary llm.c $W/llmc $W/llmc-replay.jsonl
fi
if [ "$what" = samples ] || [ "$what" = all ]; then
  step "cuda-samples (4 categories): capture"
  /usr/bin/time -f "cuda-samples capture wall %e s" timeout ${SAMPLES_LIMIT:-400} $K capture $C/trees/cuda-samples -o $W/cs --suite cuda-samples --jobs 16 --timeout-s 60 2>&1 | tail -12
  cp $W/cs/programs.jsonl $OUT/cs-programs.jsonl
  step "cuda-samples: replay"
  $K extract $C/trees/cuda-samples -o $W/cs-units.jsonl --suite cuda-samples --no-compile > /dev/null 2>&1
  timeout ${REPLAY_LIMIT:-300} $K replay $W/cs --units $W/cs-units.jsonl -o $W/cs-replay.jsonl 2>&1 | tail -3
  cp $W/cs-replay.jsonl $OUT/cs-replay.jsonl
  summary cuda-samples $W/cs $W/cs-replay.jsonl
fi
if [ "$what" = sgemm ] || [ "$what" = all ]; then
  step "SGEMM_CUDA (unseen tree, CMake behind make): capture"
  /usr/bin/time -f "SGEMM_CUDA capture wall %e s" timeout ${SGEMM_LIMIT:-400} $K capture $C/trees/SGEMM_CUDA -o $W/sg --suite generic --build make --run "./build/sgemm {arg}" --each 1,2,3,4,5,6,7,8,9,10,11,12 --timeout-s ${SGEMM_RUN_S:-120} 2>&1 | tail -12
  cp $W/sg/programs.jsonl $OUT/sg-programs.jsonl
  step "SGEMM_CUDA: replay and verify under capture"
  $K extract $C/trees/SGEMM_CUDA -o $W/sg-units.jsonl --suite generic --no-compile > /dev/null 2>&1
  timeout ${REPLAY_LIMIT:-300} $K replay $W/sg --units $W/sg-units.jsonl -o $W/sg-replay.jsonl 2>&1 | tail -3
  cp $W/sg-replay.jsonl $OUT/sg-replay.jsonl
  summary SGEMM_CUDA $W/sg $W/sg-replay.jsonl
  timeout ${REPLAY_LIMIT:-300} $K verify --in $W/sg-units.jsonl --out $W/sg-verified.jsonl --captures $W/sg 2>&1 | tail -8
  cp $W/sg-verified.jsonl $OUT/sg-verified.jsonl
fi
if [ "$what" = infer ] || [ "$what" = all ]; then
  for n in ${INFER_TREES:-llm.c cuda-samples SGEMM_CUDA}; do
    [ -d $C/infer/$n ] || continue
    step "$n: self-check of inferred harnesses (--assume-size 4096), the comparison"
    timeout ${INFER_LIMIT:-240} $K harness selfcheck $C/infer/$n-units.jsonl --inferred-dir $C/infer/$n --out $W/$n-infer-selfcheck.jsonl --timeout-s 20 > $W/$n-infer-selfcheck.log 2>&1
    tail -3 $W/$n-infer-selfcheck.log
    cp $W/$n-infer-selfcheck.jsonl $OUT/$n-infer-selfcheck.jsonl 2>/dev/null
    python3 benches/capture_summary.py infer $W/$n-infer-selfcheck.jsonl
  done
fi
