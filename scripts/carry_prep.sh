#!/bin/bash
# Build everything the device scripts run and pack it into carry/ (git-ignored; the
# device has no Rust and no network). Suite trees are read from $TREES and travel only
# inside carry/, never in git. Usage, from the repository root on the development machine:
#   TREES=/work/trees bash scripts/carry_prep.sh
# then on the device: `tar -xJf carry/pack.tar.xz` and the bench scripts (benches/*.sh).
set -eu
TREES=${TREES:-/work/trees}
T=${CARGO_TARGET_DIR:-target}
cargo build --release --locked
cargo test --release --locked --no-run 2>/dev/null
rm -rf carry/stage && mkdir -p carry/stage/real
S=carry/stage
cp $T/release/kernelpair $S/kernelpair
# Every test binary with #[ignore] GPU tests, named <test>-test.
for t in verify harness_infer harness_selfcheck; do
  b=$(ls -t $T/release/deps/$t-* 2>/dev/null | grep -v '\.d$' | head -1 || true)
  [ -n "$b" ] && cp "$b" $S/$t-test
done
strip $S/kernelpair $S/*-test
cp -r fixtures $S/fixtures
cp -r schemas $S/schemas
cp -r extractors/parboil $S/real/harness
$S/kernelpair extract "$TREES/Parboil" -o $S/real/real.jsonl --no-compile >/dev/null
$S/kernelpair extract fixtures/parboil -o $S/real/fixtures.jsonl --no-compile >/dev/null
tar -C carry/stage -cJf carry/pack.tar.xz .
du -sh carry/pack.tar.xz
