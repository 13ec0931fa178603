#!/bin/bash
# Issue 24 on the device, from the public pack (scripts/public_prep.sh with
# EXTRA_TREES="PolyBench-ACC"; carry carry/pub.tar.xz):
#   bash benches/capture_compare.sh polybench   an unseen tree with its own Makefiles:
#       capture + replay self-check, against `harness infer --assume-size 4096` + self-check
#   bash benches/capture_compare.sh generic NAME   the same for any tree packed as pub/trees/NAME
#       (EXTRA_TREES=NAME in scripts/public_prep.sh), e.g. a seeded sample of HeCBench
#   bash benches/capture_compare.sh rodinia     Rodinia's programs without data (each run
#       names what it lacks), then with --data (scripts/rodinia_data.py's inputs, packed as
#       pub/rodinia-data), replay self-check, and the synthesized pairs packed as
#       pub/rodinia-synth.jsonl verified under the captures
#   bash benches/capture_compare.sh parboil     Parboil's variants without datasets (each run
#       names the DESCRIPTION it lacks), then with --data (scripts/parboil_data.py's inputs,
#       made here), replay self-check, against `harness infer --assume-size 4096`, and the
#       natural pairs verified under capture alone and under the hand-written harnesses
#   bash benches/capture_compare.sh samples     cuda-samples: the public build's captures
#       replayed, and the share of kernels of programs that ran with no arguments that pass
#   bash benches/capture_compare.sh samples-objects  the cuda-samples programs whose kernels take
#       texture or surface objects: captured and replayed (objects rebuilt)
#   bash benches/capture_compare.sh llmc-nohand  llm.c's pairs verified under capture alone
#       (the public build's captures; no --harness-dirs: the hand-written harnesses set aside)
# Writes under $OUT: journals, replay reports, verify outputs, and a summary per step.
set -u
OUT=${OUT:-/tmp/kp-out}
mkdir -p "$OUT" /tmp/t
[ -x /tmp/t/pub/kernelpair ] || tar -C /tmp/t -xJf carry/pub.tar.xz
P=/tmp/t/pub
K=$P/kernelpair
export KERNELPAIR_CUPTI=$P/cupti PATH=/usr/local/cuda/bin:$PATH
W=${W:-/tmp/kpcmp}
mkdir -p $W
step() { echo; echo "=== $* ($(date +%T))"; }
# Per status, from a capture journal; per result, from a replay report (one line per unit).
summary() { python3 benches/capture_summary.py capture "$@"; }  # name capdir report
# Fast kernels with a passing inferred self-check, from a selfcheck report.
infer_summary() { python3 benches/capture_summary.py infer "$1"; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
case "${1:-}" in
polybench|generic)
  N=PolyBench-ACC; [ "$1" = generic ] && N=${2:?generic needs a tree name}
  T=$P/trees/$N
  step "$N: capture (the tree's Makefiles, each executable the build makes)"
  /usr/bin/time -f "$N capture wall %e s" timeout ${LIMIT:-300} $K capture $T -o $W/pb --suite generic --timeout-s ${RUN_S:-60} --jobs 16 2>&1 | tail -8
  cp $W/pb/programs.jsonl $OUT/pb-programs.jsonl
  step "$N: replay"
  $K extract $T -o $W/pb-units.jsonl --suite generic --no-compile > /dev/null 2>&1
  /usr/bin/time -f "$N replay wall %e s" timeout 240 $K replay $W/pb --units $W/pb-units.jsonl -o $W/pb-replay.jsonl 2>&1 | tail -3
  cp $W/pb-replay.jsonl $OUT/pb-replay.jsonl
  summary $N $W/pb $W/pb-replay.jsonl
  step "$N: harness infer --assume-size 4096, then self-check"
  /usr/bin/time -f "$N infer wall %e s" $K harness infer $W/pb-units.jsonl -o $W/pb-inf --root $T --assume-size 4096 2>&1 | tail -2
  timeout ${SELFCHECK_S:-240} $K harness selfcheck $W/pb-units.jsonl --inferred-dir $W/pb-inf --out $W/pb-infer-selfcheck.jsonl --timeout-s 20 > $W/pb-infer-selfcheck.log 2>&1
  tail -3 $W/pb-infer-selfcheck.log
  cp $W/pb-infer-selfcheck.jsonl $OUT/ 2>/dev/null
  infer_summary $W/pb-infer-selfcheck.jsonl
  ;;
rodinia)
  T=$P/trees/gpu-rodinia
  step "Rodinia: capture without data"
  /usr/bin/time -f "rodinia capture (no data) wall %e s" timeout ${LIMIT:-240} $K capture $T -o $W/rod --suite rodinia --jobs 16 2>&1 | tail -4
  cp $W/rod/programs.jsonl $OUT/rod-nodata-programs.jsonl
  summary "Rodinia (no data)" $W/rod /nonexistent
  if [ -d $P/rodinia-data ]; then
    step "Rodinia: capture again with --data (only the programs that lacked an input run)"
    /usr/bin/time -f "rodinia capture (data) wall %e s" timeout ${LIMIT:-240} $K capture $T -o $W/rod --suite rodinia --jobs 16 --data $P/rodinia-data 2>&1 | tail -4
    cp $W/rod/programs.jsonl $OUT/rod-programs.jsonl
  fi
  step "Rodinia: replay"
  $K extract $T -o $W/rod-units.jsonl --suite rodinia --no-compile > /dev/null 2>&1
  timeout 240 $K replay $W/rod --units $W/rod-units.jsonl -o $W/rod-replay.jsonl 2>&1 | tail -3
  cp $W/rod-replay.jsonl $OUT/rod-replay.jsonl
  summary Rodinia $W/rod $W/rod-replay.jsonl
  if [ -f $P/rodinia-synth.jsonl ]; then
    step "Rodinia: synthesized pairs (recorded answers) verified under capture"
    /usr/bin/time -f "rodinia verify wall %e s" timeout ${VERIFY_S:-300} $K verify --in $P/rodinia-synth.jsonl --out $W/rod-verified.jsonl --captures $W/rod 2>&1 | tail -12
    cp $W/rod-verified.jsonl $OUT/ 2>/dev/null
  fi
  step "Rodinia: harness infer --assume-size 4096, then self-check"
  $K harness infer $W/rod-units.jsonl -o $W/rod-inf --root $T --assume-size 4096 2>&1 | tail -1
  timeout 200 $K harness selfcheck $W/rod-units.jsonl --inferred-dir $W/rod-inf --out $W/rod-infer-selfcheck.jsonl --timeout-s 20 > $W/rod-infer-selfcheck.log 2>&1
  tail -2 $W/rod-infer-selfcheck.log
  infer_summary $W/rod-infer-selfcheck.jsonl
  ;;
parboil)
  T=$P/trees/Parboil
  step "Parboil: capture without datasets"
  /usr/bin/time -f "parboil capture (no data) wall %e s" timeout ${LIMIT:-240} $K capture $T -o $W/pbl --suite parboil --jobs 16 2>&1 | tail -4
  cp $W/pbl/programs.jsonl $OUT/pbl-nodata-programs.jsonl
  summary "Parboil (no data)" $W/pbl /nonexistent
  [ -d $P/parboil-data ] || python3 scripts/parboil_data.py $P/parboil-data --seed 1 > /dev/null
  du -sh $P/parboil-data
  step "Parboil: capture again with --data (only the programs that lacked an input run)"
  /usr/bin/time -f "parboil capture (data) wall %e s" timeout ${LIMIT:-240} $K capture $T -o $W/pbl --suite parboil --jobs 16 --data $P/parboil-data 2>&1 | tail -4
  cp $W/pbl/programs.jsonl $OUT/pbl-programs.jsonl
  step "Parboil: replay"
  $K extract $T -o $W/pbl-units.jsonl --suite parboil --no-compile > /dev/null 2>&1
  /usr/bin/time -f "parboil replay wall %e s" timeout 240 $K replay $W/pbl --units $W/pbl-units.jsonl -o $W/pbl-replay.jsonl 2>&1 | tail -3
  cp $W/pbl-replay.jsonl $OUT/
  summary Parboil $W/pbl $W/pbl-replay.jsonl
  step "Parboil: harness infer --assume-size 4096, then self-check"
  $K harness infer $W/pbl-units.jsonl -o $W/pbl-inf --root $T --assume-size 4096 2>&1 | tail -1
  timeout ${SELFCHECK_S:-120} $K harness selfcheck $W/pbl-units.jsonl --inferred-dir $W/pbl-inf --out $W/pbl-infer-selfcheck.jsonl --timeout-s 20 > $W/pbl-infer-selfcheck.log 2>&1
  tail -2 $W/pbl-infer-selfcheck.log
  infer_summary $W/pbl-infer-selfcheck.jsonl
  step "Parboil: natural pairs under capture (inferred harnesses as second opinions), then under the hand-written harnesses"
  $K extract $T -o $W/pbl-pairs.jsonl --suite parboil > /dev/null 2>&1
  /usr/bin/time -f "parboil verify (captured) wall %e s" timeout ${VERIFY_S:-240} $K verify --in $W/pbl-pairs.jsonl --out $W/pbl-captured.jsonl --captures $W/pbl --inferred-dir $W/pbl-inf 2>&1 | tail -6
  /usr/bin/time -f "parboil verify (hand) wall %e s" timeout ${VERIFY_S:-240} $K verify --in $W/pbl-pairs.jsonl --out $W/pbl-hand.jsonl --harness-dir extractors/parboil 2>&1 | tail -6
  cp $W/pbl-captured.jsonl $W/pbl-hand.jsonl $OUT/ 2>/dev/null
  python3 benches/capture_summary.py pairs $W/pbl-captured.jsonl $W/pbl-hand.jsonl
  ;;
samples)
  C=/tmp/kp-public/captures/cuda-samples
  T=$P/trees/cuda-samples
  step "cuda-samples: replay the public build's captures"
  $K extract $T -o $W/cs-units.jsonl --suite cuda-samples --no-compile > /dev/null 2>&1
  /usr/bin/time -f "cuda-samples replay wall %e s" timeout ${VERIFY_S:-300} $K replay $C --units $W/cs-units.jsonl -o $W/cs-replay.jsonl 2>&1 | tail -3
  cp $W/cs-replay.jsonl $C/programs.jsonl $OUT/ 2>/dev/null
  summary cuda-samples $C $W/cs-replay.jsonl
  python3 benches/capture_summary.py programs cuda-samples $C $W/cs-units.jsonl $W/cs-replay.jsonl
  ;;
samples-objects)
  # The cuda-samples programs whose kernels take a texture or surface object: captured,
  # then replayed (the replay rebuilds each object over its captured memory).
  T=$P/trees/cuda-samples
  only=$(cd $T && grep -rl "cudaTextureObject_t\|cudaSurfaceObject_t" --include=*.cu --include=*.cuh Samples | xargs -n1 dirname | sort -u | grep -v "Tegra\|GL\|vulkan\|NvSci" | sed 's#^#--only #' | tr '\n' ' ')
  step "cuda-samples with texture/surface objects: capture ($only)"
  /usr/bin/time -f "capture wall %e s" timeout ${LIMIT:-200} $K capture $T -o $W/cso --suite cuda-samples $only --timeout-s 60 --jobs 16 2>&1 | tail -4
  $K extract $T -o $W/cs-units.jsonl --suite cuda-samples --no-compile > /dev/null 2>&1
  /usr/bin/time -f "replay wall %e s" timeout ${VERIFY_S:-200} $K replay $W/cso --units $W/cs-units.jsonl -o $W/cso-replay.jsonl 2>&1 | tail -3
  cp $W/cso-replay.jsonl $OUT/ 2>/dev/null; cp $W/cso/programs.jsonl $OUT/cso-programs.jsonl 2>/dev/null
  summary "cuda-samples (texture/surface programs)" $W/cso $W/cso-replay.jsonl
  python3 - $W/cs-units.jsonl $W/cso-replay.jsonl <<'PY'
import json, sys
obj = {json.loads(l)["data"]["kernel"] for l in open(sys.argv[1]) if '"type": "unit"' in l or '"type":"unit"' in l
       if any(t in json.dumps(json.loads(l)["data"].get("params", [])) for t in ("cudaTextureObject_t", "cudaSurfaceObject_t"))}
rows = [json.loads(l) for l in open(sys.argv[2])]
mine = [r for r in rows if r.get("kernel") in obj]
print(f"kernels taking an object, replayed: {len(mine)}; pass {sum(1 for r in mine if r.get('pass'))}")
for r in mine:
    print(" ", r.get("kernel"), "pass" if r.get("pass") else "FAIL", (r.get("reason") or "")[:160])
PY
  ;;
llmc-nohand)
  C=/tmp/kp-public/captures/llm.c
  [ -d $C ] || C=$(ls -d /tmp/kp-public/captures/* | grep -i llm | head -1)
  step "llm.c: extract, then verify its natural pairs under capture alone (--no-hand)"
  $K extract $P/trees/llm.c -o $W/llmc-pairs.jsonl --suite llm-c > /dev/null 2>&1
  /usr/bin/time -f "llm.c verify --no-hand wall %e s" timeout ${VERIFY_S:-420} $K verify --in $W/llmc-pairs.jsonl --out $W/llmc-nohand.jsonl --captures $C --resume 2>&1 | tail -15
  cp $W/llmc-nohand.jsonl $OUT/ 2>/dev/null
  ;;
*)
  echo "usage: capture_compare.sh polybench|generic NAME|rodinia|parboil|samples|samples-objects|llmc-nohand"; exit 2
  ;;
esac
ls -la $OUT
