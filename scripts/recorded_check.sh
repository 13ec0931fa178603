#!/usr/bin/env bash
# Check recorded answers (benches/recorded-answers/) the way `synth` would take them.
#
#   bash scripts/recorded_check.sh RODINIA_TREE [BENCH ...]
#
# Extracts RODINIA_TREE (`--suite rodinia`), keeps the records of the named benchmarks (all
# when none is named), serves benches/recorded-answers/rodinia with scripts/recorded_llm.py
# on a free port, runs `synth --candidates per-technique --max-repairs 0` with a fresh cache,
# and prints one line per candidate: benchmark, kernel, file stem, what it undoes, and
# `accepted` or the rejection's reason and message. The prompts sent are left in
# $WORK/dump (WORK defaults to a new temporary folder, printed first).
# Needs a release build (target/release/kernelpair, or K=path) and NVRTC (see the README).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tree=${1:?usage: recorded_check.sh RODINIA_TREE [BENCH ...]}
shift
K=${K:-$root/target/release/kernelpair}
WORK=${WORK:-$(mktemp -d /tmp/recorded-check.XXXXXX)}
echo "work folder: $WORK" >&2
mkdir -p "$WORK"
"$K" extract "$tree" -o "$WORK/all.jsonl" --suite rodinia >/dev/null 2>"$WORK/extract.log"
python3 - "$WORK/all.jsonl" "$WORK/in.jsonl" "$@" <<'EOF'
import json, sys
src, dst, benches = sys.argv[1], sys.argv[2], set(sys.argv[3:])
with open(src) as f, open(dst, "w") as out:
    for line in f:
        r = json.loads(line)
        d = r.get("data", {})
        bench = d.get("benchmark", "")
        if not benches or bench in benches or bench.split("/")[0] in benches:
            out.write(line)
EOF
rm -f "$WORK/port"
python3 "$root/scripts/recorded_llm.py" --answers "$root/benches/recorded-answers/rodinia" \
    --port-file "$WORK/port" --dump "$WORK/dump" >/dev/null 2>"$WORK/server.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -s "$WORK/port" ] && break; sleep 0.1; done
printf 'base_url = "%s"\nmodel = "recorded"\nconcurrency = 2\n' "$(cat "$WORK/port")" >"$WORK/llm.toml"
rm -rf "$WORK/cache" "$WORK/out.jsonl" "$WORK/out.jsonl.journal"
"$K" synth --in "$WORK/in.jsonl" --out "$WORK/out.jsonl" --llm "$WORK/llm.toml" \
    --cache "$WORK/cache" --max-repairs 0 --candidates per-technique >"$WORK/synth.log" 2>&1 || true
# synth exits non-zero when it rejects an answer; only a missing output is a failure here.
[ -s "$WORK/out.jsonl" ] || { cat "$WORK/synth.log" >&2; exit 1; }
cat "$WORK/synth.log" >&2
python3 - "$WORK/out.jsonl" <<'EOF'
import json, os, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["type"] != "pair":
        continue
    d = r["data"]
    s = d["slow"]
    out = s.get("outcome") or s.get("rejected") or {}
    cand = out.get("candidate") or {}
    undo = (cand.get("undo") or {})
    what = undo.get("technique", undo.get("kind", "all"))
    stem = os.path.splitext(os.path.basename((d.get("fast") or {}).get("path", "")))[0]
    if s["kind"] == "pending":
        verdict = f'{out.get("reason")}: {out.get("message", "")[:400]}'
    else:
        verdict = "accepted"
    print(f'{d["benchmark"]}\t{d["kernel"]}\t{stem}\t{what}\t{verdict}')
EOF
