#!/bin/bash
# Build everything the device scripts run and pack it into carry/pack.tar.xz (git-ignored;
# the device has no Rust and no network; the packed tree stays far under the 64 MiB carry
# limit). Suite trees are read from $TREES and travel only inside the pack, never in git.
# On the development machine, from the repository root:
#   TREES=/work/trees bash scripts/carry_prep.sh
# On the device: `bash benches/run_all_device.sh gpu-tests|honest|harness` (it unpacks).
set -eu
TREES=${TREES:-/work/trees}
T=${CARGO_TARGET_DIR:-target}
[ -n "${NO_BUILD:-}" ] || cargo build --release --locked
[ -n "${NO_BUILD:-}" ] || cargo test --release --locked --no-run >/dev/null 2>&1
rm -rf carry/stage && mkdir -p carry/stage/real carry/stage/harness
S=carry/stage
cp $T/release/kernelpair $S/kernelpair
# An older binary to compare with (benches/sanitizer_same.sh), when BASE_BIN names one.
[ -n "${BASE_BIN:-}" ] && cp "$BASE_BIN" $S/kernelpair-base
# Every test binary with #[ignore] GPU tests, named <test>-test.
for t in verify harness_infer harness_infer_asof harness_infer_template harness_infer_parboil harness_selfcheck rodinia_e2e capture; do
  b=$(ls -t $T/release/deps/$t-* 2>/dev/null | grep -v '\.d$' | head -1 || true)
  [ -n "$b" ] && cp "$b" $S/$t-test
done
strip $S/kernelpair $S/*-test
# Capture's GPU test needs the injection library and CUPTI (PyPI nvidia-cuda-cupti 13.0).
cp $T/release/libkernelpair.so $S/ && strip $S/libkernelpair.so
bash scripts/cupti.sh $S/cupti
[ -f $S/kernelpair-base ] && strip $S/kernelpair-base || true
K=$S/kernelpair
# Real Parboil pairs with the hand-written harnesses (benches/honest.sh, benches/device.sh).
cp -r extractors/parboil $S/real/harness
$K extract "$TREES/Parboil" -o $S/real/real.jsonl --no-compile >/dev/null
$K extract fixtures/parboil -o $S/real/fixtures.jsonl --no-compile >/dev/null
# Inferred harnesses (benches/harness_device.sh).
H=$S/harness
$K extract "$TREES/gpu-rodinia" -o $H/rodinia.jsonl --no-compile >/dev/null
cp $S/real/real.jsonl $H/parboil.jsonl
echo "== inference, all of Rodinia (release binary, 3 runs)"
for i in 1 2 3; do
  /usr/bin/time -f "rodinia infer wall %e s user %U s" $K harness infer $H/rodinia.jsonl -o $H/rodinia-inferred --root "$TREES/gpu-rodinia" >/dev/null
done
$K harness infer $H/rodinia.jsonl -o $H/rodinia-assumed --root "$TREES/gpu-rodinia" --assume-size 4096 >/dev/null
$K harness infer $H/parboil.jsonl -o $H/parboil-inferred --root "$TREES/Parboil" >/dev/null
$K harness infer $H/parboil.jsonl -o $H/parboil-assumed --root "$TREES/Parboil" --assume-size 4096 >/dev/null
cp -r extractors/parboil $H/parboil-hand
python3 benches/infer_compare.py $H/parboil.jsonl $H/parboil-inferred $H/parboil-hand > $H/parboil-compare.md
tail -1 $H/parboil-compare.md
echo "complete inferred Rodinia harnesses: strict $(grep -L -e '"TODO"' -e '# TODO:' $H/rodinia-inferred/*.toml | wc -l), assumed $(grep -L -e '"TODO"' -e '# TODO:' $H/rodinia-assumed/*.toml | wc -l) of $(ls $H/rodinia-inferred | wc -l)"
rm -f carry/pack.tar.xz
tar -C carry/stage -cJf carry/pack.tar.xz .
du -sh carry/stage carry/pack.tar.xz
