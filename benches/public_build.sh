#!/bin/bash
# Issue 25 on the device: `kernelpair build benches/public-build.toml` over the four public
# trees, cold the first time, resumed (journal) by a rerun. Carry carry/pub.tar.xz
# (scripts/public_prep.sh). Usage: bash benches/public_build.sh [LIMIT_S]
# Writes $OUT/public.tar.xz: the build log, the stage files and the dataset.
set -u
OUT=${OUT:-/tmp/kp-out}
LIMIT=${1:-540}
mkdir -p "$OUT" /tmp/t
[ -x /tmp/t/pub/kernelpair ] || tar -C /tmp/t -xJf carry/pub.tar.xz
for t in /tmp/t/pub/trees/*; do [ -e /tmp/t/$(basename $t) ] || ln -s $t /tmp/t/$(basename $t); done
K=/tmp/t/pub/kernelpair
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
n=$(ls /tmp/kp-public-log.* 2>/dev/null | wc -l)
LOG=/tmp/kp-public-log.$n
echo "=== build run $n, limit $LIMIT s ($(date +%T))"
/usr/bin/time -f "build wall %e s, peak %M KB" timeout -s KILL $LIMIT $K build benches/public-build.toml > $LOG 2>&1
echo "exit $?"
grep -v "^  *warning\|WARN" $LOG | tail -60
python3 - <<'PY'
import json, collections, os
p = "/tmp/kp-public/verified.jsonl"
if os.path.exists(p):
    by = collections.defaultdict(collections.Counter)
    for l in open(p):
        r = json.loads(l)
        if r.get("type") != "pair": continue
        d = r["data"]; v = d.get("verification") or {}
        by[d.get("suite", "?")][v.get("status", "pending")] += 1
    for s, c in sorted(by.items()):
        print(s, dict(c))
PY
cd /tmp && tar -cJf "$OUT/public.tar.xz" kp-public-log.* kp-public/*.jsonl kp-public/*.json kp-public/dataset kp-public/harnesses 2>/dev/null
ls -la "$OUT"
