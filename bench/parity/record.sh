#!/usr/bin/env bash
# Record the replay tapes and answers tests/unit/answers/ checks (tests/fixtures/replay/):
#   bash bench/parity/record.sh              # every taped profile, each on a vLLM started here
#   bash bench/parity/record.sh --profile smollm2-135m-fast --vllm http://127.0.0.1:8792 \
#     --dtype bfloat16                       # one profile, on a running vLLM serving it in that
#                                            # dtype (its key in ONEPASS_VLLM_KEY)
# Profiles: smollm2-135m-fast and qwen2.5-coder-1.5b, the shipped default (the text corpus), and
# idefics3-tiny (the text corpus and the vision section). A vLLM started here is serve.sh's (ONEPASS_PROFILE, ONEPASS_DEVICE=cpu, ports
# RECORD_PORT and RECORD_VLLM_PORT, default 8781 and 8782, a fresh key), stopped by its PID when
# the profile is recorded. Each profile: bench/parity/record.py (the recording shim in-process,
# then the tape replayed and checked against the answers before anything is written).
# smollm2-135m-fast's vLLM gets the live suite's flags (tests/support/live_stack.py's
# VLLM_TEST_ARGS): tests/live/test_tape_live.py records that corpus afresh on the live suite's
# stack in the dtype serve.sh ships and compares it with the tape, bit for bit.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PROFILES=() VLLM="" DTYPE=""
while [ $# -gt 0 ]; do
  case "$1" in
    --profile) PROFILES+=("$2"); shift 2 ;;
    --vllm) VLLM=$2; shift 2 ;;
    --dtype) DTYPE=$2; shift 2 ;;
    -h|--help) sed -n '2,14p' "$0" | cut -c3-; exit 0 ;;
    *) echo "record.sh: unknown argument $1 (--help)" >&2; exit 2 ;;
  esac
done
[ ${#PROFILES[@]} -gt 0 ] || PROFILES=(smollm2-135m-fast idefics3-tiny qwen2.5-coder-1.5b)
if [ -n "$VLLM" ] && { [ ${#PROFILES[@]} -ne 1 ] || [ -z "$DTYPE" ]; }; then
  echo "record.sh: --vllm serves one profile in one dtype: name them with --profile and --dtype" >&2
  exit 2
fi
TEST_ARGS=$(python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
from tests.support.live_stack import VLLM_TEST_ARGS; print(" ".join(VLLM_TEST_ARGS))' "$ROOT")
PORT=${RECORD_PORT:-8781} VLLM_PORT=${RECORD_VLLM_PORT:-8782}
LOGS=$(mktemp -d /tmp/onepass-record.XXXXXX)
SERVE_PID=""

stop_serve() {  # serve.sh stops its shim and vLLM on SIGTERM
  [ -n "$SERVE_PID" ] || return 0
  kill -TERM "$SERVE_PID" 2>/dev/null || true
  wait "$SERVE_PID" 2>/dev/null || true
  SERVE_PID=""
}
trap stop_serve EXIT

start_serve() {  # start_serve PROFILE: serve.sh on this script's ports, until its ready line
  local log="$LOGS/serve-$1.log"
  ONEPASS_VLLM_KEY=$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')
  export ONEPASS_VLLM_KEY
  echo "record.sh: starting serve.sh for $1 (vLLM on port $VLLM_PORT, log $log)" >&2
  local args=""
  if [ "$1" = smollm2-135m-fast ]; then args=$TEST_ARGS; fi
  ONEPASS_PROFILE=$1 ONEPASS_DEVICE=cpu ONEPASS_PORT=$PORT ONEPASS_VLLM_PORT=$VLLM_PORT \
    ONEPASS_VLLM_ARGS=$args \
    VLLM_CPU_OMP_THREADS_BIND=${VLLM_CPU_OMP_THREADS_BIND:-nobind} \
    bash "$ROOT/serve.sh" > "$log" 2>&1 &
  SERVE_PID=$!
  until grep -q '^onepass ready:' "$log"; do
    if ! kill -0 "$SERVE_PID" 2>/dev/null; then
      tail -n 20 "$log" >&2; echo "record.sh: serve.sh exited before it was ready" >&2; exit 1
    fi
    sleep 2
  done
}

has_vision() {  # has_vision PROFILE: the profile reads images (the corpus's vision section)
  python3 -c 'import json, sys; p = json.load(open(sys.argv[1]))["profiles"][sys.argv[2]]
sys.exit(0 if p.get("vision") else 1)' "$ROOT/serve_config.json" "$1"
}

for profile in "${PROFILES[@]}"; do
  started=$SECONDS
  url=$VLLM
  dtype=$DTYPE
  if [ -z "$url" ]; then
    start_serve "$profile"; url=http://127.0.0.1:$VLLM_PORT
    dtype=$(grep -o 'start vLLM: dtype [a-z0-9]*' "$LOGS/serve-$profile.log" | cut -d' ' -f4)
  fi
  flags=()
  if has_vision "$profile"; then flags=(--vision); fi
  python3 "$ROOT/bench/parity/record.py" --profile "$profile" --vllm "$url" --dtype "$dtype" \
    "${flags[@]}"
  stop_serve
  echo "record.sh: $profile recorded in $((SECONDS - started)) s" >&2
done
ls -l "$ROOT/tests/fixtures/replay/" >&2
