#!/bin/bash
# Pack what benches/public_build.sh runs into carry/pub.tar.xz (git-ignored): the stripped
# release binary and the four public trees from $TREES (files under 1 MB; they travel only
# in the pack, never in git). From the repository root: TREES=/work/trees bash scripts/public_prep.sh
set -eu
TREES=${TREES:-/work/trees}
T=${CARGO_TARGET_DIR:-target}
[ -n "${NO_BUILD:-}" ] || cargo build --release --locked
S=carry/pub
rm -rf $S && mkdir -p $S/trees
cp $T/release/kernelpair $T/release/libkernelpair.so $S/ && strip $S/kernelpair $S/libkernelpair.so
# CUPTI for capture (PyPI nvidia-cuda-cupti 13.0, matching the device's CUDA 13.0 driver).
bash scripts/cupti.sh $S/cupti
for t in Parboil gpu-rodinia cuda-samples llm.c ${EXTRA_TREES:-}; do
  (cd "$TREES/$t" && find . -type f -size -1024k -not -path './.git/*') > /tmp/pub.list
  mkdir -p $S/trees/$t && tar -C "$TREES/$t" -cf - -T /tmp/pub.list | tar -C $S/trees/$t -xf -
done
rm -f carry/pub.tar.xz
tar -C carry -cJf carry/pub.tar.xz pub
du -sh $S carry/pub.tar.xz
