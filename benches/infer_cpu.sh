#!/bin/bash
# Inference quality on the development machine (no GPU): for a suite tree, how many inferred
# harnesses are complete, strict and with --assume-size 4096, and why the others are not,
# by the self-check's failure categories (without a GPU a complete harness reports
# "not run: no GPU"; an incomplete one its category). The GPU verdict comes from
# benches/harness_device.sh.
#   TREE=/work/trees/gpu-rodinia bash benches/infer_cpu.sh   (after `cargo build --release`)
set -eu
T=${CARGO_TARGET_DIR:-target}
K=$T/release/kernelpair
TREE=${TREE:-/work/trees/gpu-rodinia}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
$K extract "$TREE" -o "$W/units.jsonl" --no-compile > /dev/null 2>&1
for mode in strict assumed; do
  extra=""
  [ $mode = assumed ] && extra="--assume-size 4096"
  /usr/bin/time -f "  infer wall %e s" $K harness infer "$W/units.jsonl" -o "$W/$mode" --root "$TREE" $extra > /dev/null
  $K harness selfcheck "$W/units.jsonl" --inferred-dir "$W/$mode" --out "$W/$mode.jsonl" > /dev/null 2>&1 || true
  python3 - "$W/$mode.jsonl" "$mode" <<'PY'
import json, sys, collections
rows = [json.loads(l) for l in open(sys.argv[1])]
cats = collections.Counter(r.get("category") for r in rows if not r["pass"])
complete = cats.pop("not run: no GPU", 0)
print(f"{sys.argv[2]}: {complete} of {len(rows)} complete")
for c, n in cats.most_common():
    print(f"  {n:3}  {c}")
PY
done
