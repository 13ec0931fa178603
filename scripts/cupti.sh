#!/bin/bash
# Put libcupti.so.13 (PyPI nvidia-cuda-cupti 13.0.85, matching the device's CUDA 13.0 driver)
# in DEST: copied from an earlier pack when one has it, else downloaded from PyPI.
# Used by carry_prep.sh, public_prep.sh and capture_prep.sh: bash scripts/cupti.sh DEST
set -eu
DEST=${1:?usage: cupti.sh DEST}
mkdir -p "$DEST"
for f in carry/cap/cupti carry/pub/cupti carry/stage/cupti; do
  if [ -f $f/libcupti.so.13 ] && [ "$f" != "$DEST" ]; then cp $f/libcupti.so.13 "$DEST"/; exit 0; fi
done
W=$(mktemp -d)
python3 -m pip download --quiet --no-deps -d $W "nvidia-cuda-cupti==13.0.85"
unzip -q -j -o $W/nvidia_cuda_cupti-*.whl 'nvidia/cu13/lib/libcupti.so.13' -d "$DEST"
