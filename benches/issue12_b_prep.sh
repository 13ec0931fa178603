#!/bin/bash
# Prepare carry/h12b/ for benches/issue12_b_device.sh, on the development machine:
#   cargo build --release
#   cargo test --release --test harness_selfcheck --test rodinia_e2e --no-run
#   bash benches/issue12_b_prep.sh
set -eu
T=${CARGO_TARGET_DIR:-target}
C=carry/h12b
rm -rf $C && mkdir -p $C
cp $T/release/kernelpair $C/kernelpair
for t in harness_selfcheck rodinia_e2e; do
  cp "$(ls -t $T/release/deps/$t-* | grep -v '\.d$' | head -1)" $C/$t-test
done
# Release builds carry debug info (Cargo.toml); the carried tree must stay under 64 MiB.
strip $C/kernelpair $C/*-test
cp -r fixtures $C/fixtures
du -sh $C
