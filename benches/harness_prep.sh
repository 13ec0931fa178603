#!/bin/bash
# Prepare carry/harness/ for benches/harness_device.sh, on the development machine.
# Needs: `cargo build --release` and `cargo test --release --test harness_infer --no-run`
# done; the suite trees at $RODINIA and $PARBOIL (never committed: they travel in the
# ignored carry/ folder only). Also prints the inference time for all of Rodinia.
#   RODINIA=/work/trees/gpu-rodinia PARBOIL=/work/trees/Parboil benches/harness_prep.sh
set -eu
T=${CARGO_TARGET_DIR:-target}
RODINIA=${RODINIA:-/work/trees/gpu-rodinia}
PARBOIL=${PARBOIL:-/work/trees/Parboil}
C=carry/harness
rm -rf $C && mkdir -p $C
cp $T/release/kernelpair $C/kernelpair
# The harness_infer test binary (its GPU test); `cargo test --release --no-run` names it.
cp "$(ls -t $T/release/deps/harness_infer-* | grep -v '\.d$' | head -1)" $C/harness-infer-test
cp -r fixtures $C/fixtures
K=$C/kernelpair
$K extract "$RODINIA" -o $C/rodinia.jsonl --no-compile >/dev/null
$K extract "$PARBOIL" -o $C/parboil.jsonl --no-compile >/dev/null
echo "== inference, all of Rodinia (release binary, 3 runs)"
for i in 1 2 3; do
  /usr/bin/time -f "rodinia infer wall %e s user %U s" $K harness infer $C/rodinia.jsonl -o $C/rodinia-inferred --root "$RODINIA" >/dev/null
done
$K harness infer $C/rodinia.jsonl -o $C/rodinia-assumed --root "$RODINIA" --assume-size 4096 >/dev/null
/usr/bin/time -f "parboil infer wall %e s" $K harness infer $C/parboil.jsonl -o $C/parboil-inferred --root "$PARBOIL" >/dev/null
$K harness infer $C/parboil.jsonl -o $C/parboil-assumed --root "$PARBOIL" --assume-size 4096 >/dev/null
cp -r extractors/parboil $C/parboil-hand
python3 benches/infer_compare.py $C/parboil.jsonl $C/parboil-inferred $C/parboil-hand > $C/parboil-compare.md
tail -1 $C/parboil-compare.md
du -sh $C
