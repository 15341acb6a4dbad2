#!/usr/bin/env bash
# bench/measure/engine_options.sh: the CPU engine choices serve.sh makes (dtype, eager or
# torch.compile, cache block size), each measured with bench/measure/latency.py on a stack of its
# own, one after another.
#
# Usage: bash bench/measure/engine_options.sh [N] [CONFIG ...]   (N: timed iterations, default 20)
# CONFIG is one of: bf16-eager (serve.sh's default on a CPU with native bf16), bf16-compiled,
# fp32-eager, fp32-compiled, bf16-eager-block128 (vLLM's own block size); default: all five.
# With ONEPASS_EVALUATE=1 each stack also answers the held-back half (bench/measure/evaluate.py
# --limit 16 --order-check), which shows whether the profile's temperatures hold in that dtype.
# Ports 8781/8782 (ONEPASS_BENCH_PORT/+1); logs and JSON lines in ${OUT:-/tmp/onepass-engine-options}.
# Run it on a quiet machine: every row is a wall-clock figure.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
N=${1:-20}; shift || true
CONFIGS=("$@"); [ ${#CONFIGS[@]} = 0 ] && CONFIGS=(bf16-eager bf16-compiled fp32-eager fp32-compiled bf16-eager-block128)
PORT=${ONEPASS_BENCH_PORT:-8781}; OUT=${OUT:-/tmp/onepass-engine-options}
PY="${ONEPASS_VENV:-$ROOT/.venv}/bin/python"
mkdir -p "$OUT"
# vLLM's key, given to each serve.sh and to latency.py, which calls vLLM itself
export ONEPASS_VLLM_KEY=${ONEPASS_VLLM_KEY:-$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}

settings() {  # settings CONFIG: the environment serve.sh gets for it
  case "$1" in
    bf16-eager) echo "ONEPASS_DTYPE=bfloat16 ONEPASS_EAGER=1" ;;
    bf16-compiled) echo "ONEPASS_DTYPE=bfloat16 ONEPASS_EAGER=0" ;;
    fp32-eager) echo "ONEPASS_DTYPE=float32 ONEPASS_EAGER=1" ;;
    fp32-compiled) echo "ONEPASS_DTYPE=float32 ONEPASS_EAGER=0" ;;
    # a later --block-size wins over serve.sh's 32 in vLLM's argument parser
    bf16-eager-block128) echo "ONEPASS_DTYPE=bfloat16 ONEPASS_EAGER=1 ONEPASS_VLLM_ARGS=--block-size=128" ;;
    *) echo "unknown config $1" >&2; return 1 ;;
  esac
}

for cfg in "${CONFIGS[@]}"; do
  env_line=$(settings "$cfg") || exit 2
  log="$OUT/$cfg"; mkdir -p "$log"
  echo "== $cfg ($env_line)"
  start=$(date +%s)
  env $env_line ONEPASS_DEVICE=cpu ONEPASS_PORT=$PORT ONEPASS_VLLM_PORT=$((PORT + 1)) \
    ONEPASS_LOG_DIR="$log" bash "$ROOT/serve.sh" > "$log/serve.out" 2>&1 &
  pid=$!
  until grep -q "onepass ready" "$log/serve.out" 2>/dev/null; do
    if ! kill -0 $pid 2>/dev/null; then echo "$cfg: serve.sh exited; see $log"; tail -5 "$log/serve.out"; continue 2; fi
    sleep 2
  done
  echo "ready in $(( $(date +%s) - start )) s"
  "$PY" "$ROOT/bench/measure/latency.py" --shim http://127.0.0.1:$PORT \
    --vllm http://127.0.0.1:$((PORT + 1)) --n "$N" --layout plain | tee "$log/latency.txt" \
    | grep -v '^{'
  sed -n 's/^{/{"config": "'"$cfg"'", /p' "$log/latency.txt" >> "$OUT/latency.jsonl"
  if [ "${ONEPASS_EVALUATE:-0}" = 1 ]; then
    "$PY" "$ROOT/bench/measure/evaluate.py" --url http://127.0.0.1:$PORT --data \
      "$ROOT/../shared/data/dev/sys1bench" "$ROOT/../shared/data/dev/bigbench" --limit 16 \
      --order-check --json "$log/evaluate.json" | tail -n 4
  fi
  kill -TERM $pid; wait $pid 2>/dev/null
done
echo "JSON lines: $OUT/latency.jsonl"
