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
W=$(mktemp -d)
python3 -m pip download --quiet --no-deps -d $W "nvidia-cuda-cupti==13.0.85"
unzip -q -j -o $W/nvidia_cuda_cupti-*.whl 'nvidia/cu13/lib/libcupti.so.13' -d $S/cupti
# llm.c: dev/cuda is the capture target (its programs include only dev/cuda/common.h).
mkdir -p $S/trees/llm.c/dev && cp -r "$TREES/llm.c/dev/cuda" $S/trees/llm.c/dev/
mkdir -p $S/trees/llm.c/llmc && cp "$TREES"/llm.c/llmc/*.cuh $S/trees/llm.c/llmc/ 2>/dev/null || true
for t in ${EXTRA_TREES:-}; do cp -r "$TREES/$t" $S/trees/; done
rm -f carry/cap.tar.xz
tar -C carry -cJf carry/cap.tar.xz cap
du -sh $S carry/cap.tar.xz
