#!/bin/bash
# Issue 10 on the device: the same real trees extracted and compile-checked where CUDA is
# installed (/usr/local/cuda/include found by nvrtc::cuda_include_dirs), then the GPU
# worker compiles them too (verify's compile step, via validate --no-run is not enough, so
# the units are compiled by `extract` there and the progression pairs by `verify`).
# Carry: carry/kernelpair, carry/trees.tar.xz (the trees' sources; never committed).
set -u
OUT=${OUT:-/tmp/kp-out}
mkdir -p "$OUT" /tmp/t
tar xJf carry/trees.tar.xz -C /tmp/t
K=carry/kernelpair
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for t in cuda-samples llm.c Parboil gpu-rodinia; do
  /usr/bin/time -f "$t wall %e s, peak %M KB" $K extract /tmp/t/$t -o /tmp/t/$t.jsonl --cache-dir /tmp/cc 2> /tmp/t/$t.err
  tail -n 2 /tmp/t/$t.err
done
python3 - /tmp/t <<'PY' | tee "$OUT/h100-compile.txt"
import json, re, sys
tot = ok_all = 0
for t in ["cuda-samples", "llm.c", "Parboil", "gpu-rodinia"]:
    n = ok = 0; fails = []
    for l in open(f"{sys.argv[1]}/{t}.jsonl"):
        r = json.loads(l)
        if r["type"] != "unit": continue
        d = r["data"]; c = d.get("compile") or {}; n += 1
        if c.get("ok"): ok += 1
        else:
            m = re.search(r"error: (.*)", c.get("log", ""))
            fails.append(f"    {d['path']} {d['kernel']}: {(m.group(1) if m else c.get('log', '')[:100])[:110]}")
    tot += n; ok_all += ok
    print(f"{t}: {ok}/{n} compile on the H100 ({100 * ok / max(n, 1):.1f}%)")
    print("\n".join(fails))
print(f"ALL: {ok_all}/{tot} ({100 * ok_all / max(tot, 1):.1f}%)")
PY
