#!/bin/bash
# Pack what benches/capture_device.sh runs into carry/cap.tar.xz (git-ignored): the release
# binary, the injection library, CUPTI (PyPI nvidia-cuda-cupti 13.0, matching the device's
# CUDA 13.0 driver) and the public trees from $TREES (they travel only in the pack, never
# in git). From the repository root: TREES=/work/trees bash scripts/capture_prep.sh
set -eu
TREES=${TREES:-/work/trees}
T=${CARGO_TARGET_DIR:-target}
cargo build --release --locked
S=carry/cap
rm -rf $S && mkdir -p $S/cupti $S/trees
cp $T/release/kernelpair $T/release/libkernelpair.so $S/
strip $S/kernelpair $S/libkernelpair.so
bash scripts/cupti.sh $S/cupti
W=$(mktemp -d)
# llm.c: dev/cuda is the capture target (its programs include only dev/cuda/common.h).
mkdir -p $S/trees/llm.c/dev && cp -r "$TREES/llm.c/dev/cuda" $S/trees/llm.c/dev/
mkdir -p $S/trees/llm.c/llmc && cp "$TREES"/llm.c/llmc/*.cuh $S/trees/llm.c/llmc/ 2>/dev/null || true
# cuda-samples: Common/ and four categories of Samples/, files over 1 MB left out.
if [ -d "$TREES/cuda-samples" ]; then
  (cd "$TREES/cuda-samples" && find Common Samples/0_Introduction Samples/2_Concepts_and_Techniques \
     Samples/3_CUDA_Features Samples/6_Performance -type f -size -1024k) > $W/cs.list
  mkdir -p $S/trees/cuda-samples && tar -C "$TREES/cuda-samples" -cf - -T $W/cs.list | tar -C $S/trees/cuda-samples -xf -
fi
# An unseen tree with its own build (CMake behind a Makefile): siboehm/SGEMM_CUDA.
if [ -d "$TREES/SGEMM_CUDA" ]; then
  mkdir -p $S/trees/SGEMM_CUDA && (cd "$TREES/SGEMM_CUDA" && tar -cf - CMakeLists.txt Makefile *.cu src) | tar -C $S/trees/SGEMM_CUDA -xf -
fi
for t in ${EXTRA_TREES:-}; do cp -r "$TREES/$t" $S/trees/; done
# Test binaries with #[ignore] GPU tests for capture.
cargo test --release --locked --test capture --no-run 2>/dev/null
b=$(ls -t $T/release/deps/capture-* | grep -v '\.d$' | head -1); cp "$b" $S/capture-test && strip $S/capture-test
# Inferred harnesses (--assume-size 4096) for the same trees: capture's comparison.
mkdir -p $S/infer
for t in llm.c:llm-c cuda-samples:cuda-samples SGEMM_CUDA:generic; do
  n=${t%%:*}; suite=${t##*:}
  [ -d $S/trees/$n ] || continue
  $S/kernelpair extract $S/trees/$n -o $S/infer/$n-units.jsonl --suite $suite --no-compile > /dev/null 2>&1 || true
  /usr/bin/time -f "$n infer wall %e s" $S/kernelpair harness infer $S/infer/$n-units.jsonl -o $S/infer/$n --root $S/trees/$n --assume-size 4096 2>&1 | tail -1 || true
done
rm -f carry/cap.tar.xz
tar -C carry -cJf carry/cap.tar.xz cap
du -sh $S carry/cap.tar.xz
