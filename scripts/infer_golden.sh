#!/bin/bash
# Every inferred harness of Rodinia, Parboil and the fixtures, strict and --assume-size 4096,
# written under OUTDIR/<tree>-{strict,assumed}/: issue 28's byte-identical check. Run it before
# and after a change to inference and compare with `diff -r BEFORE AFTER`.
# From the repository root: bash scripts/infer_golden.sh OUTDIR [KERNELPAIR_BINARY]
# Public trees come from $TREES (default /work/trees); a missing tree is skipped with a line.
set -eu
OUT=${1:?usage: infer_golden.sh OUTDIR [BINARY]}
K=${2:-target/release/kernelpair}
TREES=${TREES:-/work/trees}
mkdir -p "$OUT"
run() { # name root
  local name=$1 root=$2
  if [ ! -d "$root" ]; then echo "skip $name: no $root"; return; fi
  "$K" extract "$root" -o "$OUT/$name.jsonl" --no-compile > /dev/null 2>&1
  "$K" harness infer "$OUT/$name.jsonl" -o "$OUT/$name-strict" --root "$root" > /dev/null 2>&1
  "$K" harness infer "$OUT/$name.jsonl" -o "$OUT/$name-assumed" --root "$root" --assume-size 4096 > /dev/null 2>&1
  echo "$name: $(ls "$OUT/$name-strict" | wc -l) strict, $(ls "$OUT/$name-assumed" | wc -l) assumed"
}
run rodinia "$TREES/gpu-rodinia"
run parboil "$TREES/Parboil"
for f in fixtures/*/; do
  f=${f%/}; n=$(basename "$f")
  case $n in capture|planted) continue ;; esac
  run "fx-$n" "$f"
done
