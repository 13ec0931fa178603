#!/bin/bash
# On the device, after scripts/carry_prep.sh (carry/pack.tar.xz travels in `carry`):
#   bash benches/run_all_device.sh gpu-tests   every carried #[ignore] GPU test binary
#   bash benches/run_all_device.sh honest      benches/honest.sh (planted, real Parboil, export)
#   bash benches/run_all_device.sh harness     benches/harness_device.sh + selfcheck --sanitizer
#   bash benches/run_all_device.sh sanitizer-same   benches/sanitizer_same.sh (needs BASE_BIN
#                                                  given to carry_prep.sh: the binary to compare with)
# Writes under $OUT; exits non-zero when a GPU test binary fails.
set -u
OUT=${OUT:-/tmp/kp-out}
mkdir -p "$OUT"
if [ ! -x carry/kernelpair ]; then
  tar -C carry -xJf carry/pack.tar.xz
fi
# The fixtures and schemas are in the working tree; the scripts look for them in carry/.
ln -sfn ../fixtures carry/fixtures
ln -sfn ../schemas carry/schemas
ln -sfn ../kernelpair carry/harness/kernelpair
ln -sfn ../harness_infer-test carry/harness/harness-infer-test
ln -sfn ../../fixtures carry/harness/fixtures
export KERNELPAIR_FIXTURES=$PWD/fixtures KERNELPAIR_SCHEMAS=$PWD/schemas
export CARGO_BIN_EXE_kernelpair=$PWD/carry/kernelpair
# Capture: the injection library and CUPTI travel in the pack; nvcc is the device's.
export KERNELPAIR_INJECT=$PWD/carry/libkernelpair.so KERNELPAIR_CUPTI=$PWD/carry/cupti
export PATH=/usr/local/cuda/bin:$PATH
step() { echo; echo "=== $* ($(date +%T))"; }
fail=0
case "${1:-}" in
gpu-tests)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv,noheader
  for t in carry/*-test; do
    step "$t --ignored"
    /usr/bin/time -f "wall %e s" "$t" --ignored --test-threads 1 --nocapture > "$OUT/$(basename $t).log" 2>&1 || { fail=1; echo "FAILED: $t"; }
    grep -E "^test |test result|^(good|wrong):|verified|mismatch|wall" "$OUT/$(basename $t).log" | tail -25
  done
  # Not #[ignore]d (it runs in CI up to `no_gpu`), but only a GPU gives its verdict: issue
  # 26's contributed transpose folder whose harness launches one kernel must verify.
  if [ -x carry/verify-test ]; then
    step "carry/verify-test validate_shares_one_kernels_launches (on the GPU)"
    carry/verify-test validate_shares_one_kernels_launches --nocapture > "$OUT/verify-shared-launch.log" 2>&1 || { fail=1; echo "FAILED: shared launch"; }
    grep -E "^test |test result|shared-launch transpose" "$OUT/verify-shared-launch.log" | tail -5
  fi
  ;;
honest)
  OUT=$OUT bash benches/honest.sh
  ;;
harness)
  OUT=$OUT bash benches/harness_device.sh
  step "selfcheck --sanitizer memcheck on a harness whose buffer is too short"
  T=$(mktemp -d)
  K=carry/kernelpair
  $K extract fixtures/infer -o $T/u.jsonl --no-compile > /dev/null 2>&1
  $K harness infer $T/u.jsonl -o $T/inf --root fixtures/infer > /dev/null
  f=$(grep -l 'kernel gather_scale' $T/inf/*.toml)
  sed -i '0,/len = "m"/s//len = "m \/ 2"/' "$f"
  $K harness selfcheck $T/u.jsonl --inferred-dir $T/inf --sanitizer memcheck --out $T/report.jsonl
  python3 -c "import json,sys; [print(r['kernel'], r['pass'], [(c['name'], c['result'], (c.get('detail') or '')[:200]) for c in r['checks'] if c['result'] != 'pass']) for r in map(json.loads, open(sys.argv[1]))]" $T/report.jsonl
  ;;
sanitizer-same)
  [ -x carry/kernelpair-base ] || { echo "no carry/kernelpair-base: run carry_prep.sh with BASE_BIN"; exit 2; }
  OUT=$OUT/sanitizer-same bash benches/sanitizer_same.sh || fail=1
  ;;
*)
  echo "usage: $0 gpu-tests|honest|harness|sanitizer-same"; exit 2
  ;;
esac
exit $fail
