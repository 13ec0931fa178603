#!/bin/bash
# On the H100 (CUDA 13, compute-sanitizer in /usr/local/cuda/bin), after
# benches/issue12_b_prep.sh, carrying carry/h12b:
#   bash benches/issue12_b_device.sh
# 1. `harness selfcheck --sanitizer memcheck` on a harness whose buffer is too short:
#    the memcheck check fails with compute-sanitizer's "Invalid __global__ read" line.
# 2. The Rodinia path in one `build` (extract -> infer -> synth with a scripted loopback
#    endpoint -> self-check -> verify -> export): the correct naive transpose is
#    `verified` and exported, the wrong one (a copy) `mismatch`.
set -u
C=carry/h12b
export KERNELPAIR_FIXTURES=$PWD/$C/fixtures CARGO_BIN_EXE_kernelpair=$PWD/$C/kernelpair
step() { echo; echo "=== $* ($(date +%T))"; }
step "machine"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
ls -l /usr/local/cuda/bin/compute-sanitizer
step "selfcheck --sanitizer memcheck (GPU test)"
$C/harness_selfcheck-test --ignored --test-threads 1 --nocapture 2>&1 | tail -8
step "the same by hand: the report line"
T=$(mktemp -d)
$C/kernelpair extract $C/fixtures/infer -o $T/u.jsonl --no-compile > /dev/null 2>&1
$C/kernelpair harness infer $T/u.jsonl -o $T/inf --root $C/fixtures/infer > /dev/null
f=$(grep -l 'kernel gather_scale' $T/inf/*.toml)
sed -i '0,/len = "m"/s//len = "m \/ 2"/' "$f"
$C/kernelpair harness selfcheck $T/u.jsonl --inferred-dir $T/inf --sanitizer memcheck --out $T/report.jsonl
python3 -c "import json,sys; [print(r['kernel'], r['pass'], [(c['name'], c['result'], c['detail'][:200]) for c in r['checks'] if c['result'] != 'pass']) for r in map(json.loads, open(sys.argv[1]))]" $T/report.jsonl
step "Rodinia end to end (GPU test)"
$C/rodinia_e2e-test --ignored --test-threads 1 --nocapture 2>&1 | tail -12
