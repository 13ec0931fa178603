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
summary() { # name capdir report
  python3 - "$@" <<'EOF'
import json, sys, collections
name, cap, rep = sys.argv[1:4]
progs = {}
for l in open(cap + "/programs.jsonl"):
    try:
        r = json.loads(l)
    except Exception:
        continue
    progs[r["program"]] = r
st = collections.Counter(r["status"] for r in progs.values())
reps = {}
try:
    for l in open(rep):
        r = json.loads(l); reps[r["unit"]] = r
except FileNotFoundError:
    pass
ok = sum(1 for r in reps.values() if r["pass"])
fails = collections.Counter((r["status"], r["reason"][:90]) for r in reps.values() if not r["pass"])
print(f"{name}: programs {len(progs)}: " + ", ".join(f"{v} {k}" for k, v in sorted(st.items())))
print(f"{name}: units with a captured launch {len(reps)}, self-check pass {ok}")
for (s, why), n in fails.most_common(12):
    print(f"  {n} x {s}: {why}")
EOF
}
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
  /usr/bin/time -f "llm.c capture wall %e s" timeout ${LLMC_LIMIT:-400} $K capture $C/trees/llm.c -o $W/llmc --suite llm-c --jobs 16 --runs-per-gpu 4 2>&1 | tail -30
  cp $W/llmc/programs.jsonl $OUT/llmc-programs.jsonl
  step "llm.c: replay"
  $K extract $C/trees/llm.c -o $W/llmc-units.jsonl --suite llm-c --no-compile > /dev/null 2>&1
  /usr/bin/time -f "llm.c replay wall %e s" $K replay $W/llmc --units $W/llmc-units.jsonl -o $W/llmc-replay.jsonl 2>&1 | tail -5
  cp $W/llmc-replay.jsonl $OUT/llmc-replay.jsonl
  summary llm.c $W/llmc $W/llmc-replay.jsonl
fi
