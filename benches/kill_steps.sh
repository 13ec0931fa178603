#!/bin/bash
# Issue 25 on the device: `kill -9` the build once in each step, resume it, and compare the
# end with an uninterrupted build of the same config. Run after benches/public_build.sh
# finished a build into the config's output folder ($REF, the uninterrupted reference).
# Usage: bash benches/kill_steps.sh            (GPUS=0 by default; OUT: where the log goes)
# The chain builds into a fresh folder (the config copied with another `output`):
#   extract  killed 8 s after the build starts
#   synth    killed 1 s after the journal records extract
#   capture  killed 25 s after the journal records synth
#   harness  killed at its first `infer` progress line (lines every 100 ms here)
#   verify   killed 40 s after the journal records harness
#   export   killed 50 ms after the journal records verify
# After each kill it prints the steps the journal holds (where the kill landed), then a
# last uninterrupted rerun prints the build's table (worked/reused per step), and the
# pairs' statuses and the dataset are compared with the reference.
set -u
CONFIG=${CONFIG:-benches/public-build.toml}
REF=$(sed -n 's/^output = "\(.*\)"/\1/p' "$CONFIG")
OUT=${OUT:-/tmp/kp-out}
K=${BIN:-/tmp/t/pub/kernelpair}
[ -n "${GPUS=0}" ] && export CUDA_VISIBLE_DEVICES=$GPUS
export KERNELPAIR_CUPTI=/tmp/t/pub/cupti KERNELPAIR_PROGRESS_EVERY_MS=100
KO=/tmp/kp-kill
C=benches/kill-build.generated.toml
sed "s#^output = .*#output = \"$KO\"#" "$CONFIG" > $C
rm -rf $KO
mkdir -p "$OUT"
LOG=$OUT/kill-steps.log
: > $LOG
python3 scripts/recorded_llm.py --answers benches/recorded-answers/rodinia --port 18080 > /tmp/recorded-llm-kill.log 2>&1 &
LLM_PID=$!
steps() { python3 -c "import json,sys; print(' '.join(json.load(open(sys.argv[1]))['steps']))" $KO/journal.json 2>/dev/null || echo "(no journal)"; }
has() { steps | tr ' ' '\n' | grep -qx "$1"; }
run_until() { # $1 step name, $2 condition command, $3 delay (s)
  local log=/tmp/kill-$1.log t0=$(date +%s.%N)
  setsid $K build $C > $log 2>&1 &
  local pid=$!
  until eval "$2" || ! kill -0 $pid 2>/dev/null; do sleep 0.02; done
  sleep $3
  if kill -0 $pid 2>/dev/null; then
    kill -9 -- -$pid 2>/dev/null; wait $pid 2>/dev/null
    pkill -9 -f "$K build $C" 2>/dev/null; pkill -9 kp_sample 2>/dev/null; sleep 1
    echo "kill -9 in $1 after $(python3 -c "import time;print(round(time.time()-$t0,1))") s; journal then: $(steps)" | tee -a $LOG
  else
    echo "$1: the build ended before the kill; journal: $(steps)" | tee -a $LOG
  fi
  grep -E "^build (verify|self-check)|^capture|^infer" $log | tail -2 | sed 's/^/    /' | tee -a $LOG
}
run_until extract true 8
run_until synth "has extract" 1
run_until capture "has synth" 25
run_until harness "grep -q '^infer' /tmp/kill-harness.log" 0
run_until verify "has harness" 40
run_until export "has verify" 0.05
echo "=== uninterrupted rerun to the end ($(date +%T))" | tee -a $LOG
/usr/bin/time -f "rerun wall %e s" $K build $C > /tmp/kill-final.log 2>&1
echo "exit $?" | tee -a $LOG
grep -v "not UTF-8\|WARN\|^  *warning" /tmp/kill-final.log | tail -22 | tee -a $LOG
# The reference may come from another machine's build (REF=DIR, its verified.jsonl and
# dataset/): without one here, the comparison is left to scripts/compare_builds.py.
[ -f "$REF/verified.jsonl" ] || { echo "no reference build at $REF: compare later with scripts/compare_builds.py" | tee -a $LOG; kill $LLM_PID; exit 0; }
python3 scripts/compare_builds.py "$REF" "$KO" | tee -a $LOG
kill $LLM_PID 2>/dev/null
