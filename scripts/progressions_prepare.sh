#!/bin/bash
# Prepare the progression run for the device (benches/progressions.sh), on a machine with
# the trees and no GPU. Writes, under CARRY (default carry/, git-ignored; suite code is
# never committed):
#   CARRY/progressions/cuda-samples.jsonl, llm-c.jsonl  `kernelpair extract` of each tree
#   CARRY/validate/transpose/   slow.cu = fast.cu = cuda-samples' untouched transpose.cu,
#                               transposeNaive vs transposeCoalesced
#   CARRY/validate/reduction/   the same with reduction_kernel.cu, reduce0<int> vs reduce2<int>
# Both validate harnesses are extractors/cuda-samples' (launches by kernel name, no c_type).
# usage: scripts/progressions_prepare.sh [TREES=/work/trees] [CARRY=carry] [KERNELPAIR=target/release/kernelpair]
set -eu
TREES=${1:-/work/trees}
CARRY=${2:-carry}
K=${3:-target/release/kernelpair}
CS=$TREES/cuda-samples
mkdir -p "$CARRY/progressions" "$CARRY/validate"
for t in cuda-samples:cuda-samples llm.c:llm-c; do
  tree=${t%%:*}; name=${t#*:}
  # Exit 3 means some files were skipped (each is named); the pairs are all there.
  "$K" extract "$TREES/$tree" --suite auto --no-compile -o "$CARRY/progressions/$name.jsonl" >/dev/null 2>"$CARRY/progressions/$name.log" || [ $? -eq 3 ]
  echo "$name: $(python3 scripts/progression_counts.py "$CARRY/progressions/$name.jsonl" | grep "progression pairs:")"
done
folder() { # name sample-path slow_kernel fast_kernel harness
  local d=$CARRY/validate/$1 f
  f=$(basename "$2")
  rm -rf "$d"; mkdir -p "$d"
  cp "$CS/$2" "$d/$f"
  cp "$5" "$d/harness.toml"
  cat > "$d/pair.toml" <<TOML
# Both sides are the untouched sample file; the manifest names each side's kernel.
benchmark = "validate_$1"
slow = "$f"
fast = "$f"
slow_kernel = "$3"
fast_kernel = "$4"
expect = "verified"
TOML
}
folder transpose Samples/6_Performance/transpose/transpose.cu transposeNaive transposeCoalesced extractors/cuda-samples/transpose.toml
folder reduction Samples/2_Concepts_and_Techniques/reduction/reduction_kernel.cu "reduce0<int>" "reduce2<int>" extractors/cuda-samples/reduction.toml
"$K" validate --no-run --report /dev/null "$CARRY"/validate/*/ && echo "validate folders load: $CARRY/validate/{transpose,reduction}"
