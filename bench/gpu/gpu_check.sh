#!/usr/bin/env bash
# bench/gpu/gpu_check.sh: the first thing to run on a machine with an NVIDIA GPU (budget: under
# 15 minutes on one GPU with the network up). Each step is a row of the PASS/FAIL table printed
# at the end; a failed step does not stop the later ones that do not need it.
#   1 install      ONEPASS_DEVICE=gpu serve.sh --setup-only: deps/gpu.txt with its hashes, the
#                  plugin verified, the embedded model built, the test packages (skipped when
#                  ONEPASS_GPU_PYTHON names a Python that already has vLLM 0.32.0 CUDA: no network)
#   2 dry run      serve.sh --dry-run for the GPU: the vLLM and shim commands the stack runs
#   3 plugin       gpu_checks.py on a tiny random-weight Llama: V1 and V2 runners, CUDA graphs,
#                  two-way reads against HF, the prefix cache, the refusals
#   4 kernels      tests/kernels: vLLM's Triton attention kernels through the plugin's flags and
#                  set reads, under Triton's interpreter (as CI runs them)
#   5 stack        serve.sh on the GPU (ONEPASS_PROFILE / ONEPASS_MODEL; default the embedded
#                  SmolLM2): its start-up probes (two-way, set reads, labels) and warm-up
#   6 stack checks stack_checks.py: set reads order-exact and not a listing, a two-way read,
#                  the same request answered the same beside others
#   7 determinism  bench/measure/determinism.py --requests 20
#   8 speed        bench/measure/latency.py --n 20, throughput.py --clients 1,4,16
#   9 hostile      bench/measure/hostile_clients.py --recipes stray,expensive: the recipes where
#                  requests share the engine (2 CPU cores miss them: an engine step takes
#                  seconds there, docs/measured.md); FAIL while one is NOT MET
#  10 listing stack serve.sh on the GPU with a profile that reads listings (ONEPASS_LISTING_PROFILE,
#                  default the embedded gemma-3-270m): vLLM on CUDA's default V2 runner, where the
#                  plugin refuses set reads; it must get ready, its log saying option sets are off
# `bash bench/gpu/gpu_check.sh --plan` prints the steps' commands and runs nothing.
# Results in $OUT (default ./gpu_check_out): a log per step, gpu_checks.json,
# stack_checks.json, summary.tsv. Exit 0 when every step passed.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
OUT=${OUT:-$ROOT/gpu_check_out}
VENV=${ONEPASS_VENV:-$ROOT/.venv}
PY=${ONEPASS_GPU_PYTHON:-$VENV/bin/python}
PORT=${ONEPASS_PORT:-8751} VLLM_PORT=${ONEPASS_VLLM_PORT:-8752}
URL="http://127.0.0.1:$PORT" PLAN=0 STACK_PID="" ROWS=()
# vLLM's key, given to serve.sh and to the benches that call vLLM itself (latency, throughput)
export ONEPASS_VLLM_KEY=${ONEPASS_VLLM_KEY:-$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}
[ "${1:-}" = "--plan" ] && PLAN=1
mkdir -p "$OUT"

step() {  # step NAME CMD...: run CMD (its output to $OUT/NAME.log), record PASS/FAIL and seconds
  local name=$1 started=$SECONDS rc
  shift
  if [ "$PLAN" = 1 ]; then echo "$name: $*"; return 0; fi
  echo "gpu_check: $name: $*"
  "$@" > "$OUT/$name.log" 2>&1
  rc=$?
  ROWS+=("$name	$([ $rc = 0 ] && echo PASS || echo FAIL)	$((SECONDS - started)) s	$(tail -n 1 "$OUT/$name.log" | cut -c 1-100)")
  echo "gpu_check: $name: $([ $rc = 0 ] && echo PASS || echo "FAIL (exit $rc, $OUT/$name.log)")"
  return $rc
}

skip() { ROWS+=("$1	SKIP	-	$2"); echo "gpu_check: $1: skipped ($2)"; }

install() {
  if [ -n "${ONEPASS_GPU_PYTHON:-}" ]; then
    "$PY" -c 'import vllm; assert vllm.__version__ == "0.32.0", vllm.__version__'
  else
    ONEPASS_DEVICE=gpu ONEPASS_TEST_DEPS=1 bash "$ROOT/serve.sh" --setup-only
  fi &&
    "$PY" -c 'import torch; assert torch.cuda.is_available(), "no CUDA device"; print(torch.cuda.get_device_name(0))'
}

tiny_model() {  # tiny_model DIR: a random-weight Llama and a word-level tokenizer (no hub)
  "$PY" - "$1" <<'PYEOF'
import sys, torch
from tokenizers import Tokenizer, models, pre_tokenizers, decoders
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=4096, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048)
LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(sys.argv[1])
tok = Tokenizer(models.WordLevel(vocab={f"t{i}": i for i in range(4096)}, unk_token="t0"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.decoder = decoders.WordPiece()
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", eos_token="t1",
                        bos_token="t2").save_pretrained(sys.argv[1])
PYEOF
}

plugin_checks() {  # serve.sh's install registers the plugin; a given Python gets it on the path
  local scratch
  scratch=$(mktemp -d)
  if ! "$PY" -c 'import sys, importlib.metadata as m
sys.exit("onepass_two_way" not in {e.name for e in m.entry_points(group="vllm.general_plugins")})'
  then  # a scratch dist-info with the entry point: nothing installed into that Python
    mkdir -p "$scratch/onepass_engine-0.1.0.dist-info"
    printf 'Metadata-Version: 2.1\nName: onepass-engine\nVersion: 0.1.0\n' \
      > "$scratch/onepass_engine-0.1.0.dist-info/METADATA"
    printf '[vllm.general_plugins]\nonepass_two_way = onepass_engine:register\n' \
      > "$scratch/onepass_engine-0.1.0.dist-info/entry_points.txt"
  fi
  tiny_model "$scratch/model" &&
    PYTHONPATH="$ROOT/engine:$scratch${PYTHONPATH:+:$PYTHONPATH}" \
      "$PY" "$ROOT/bench/gpu/gpu_checks.py" "$scratch/model" "$OUT"
}

start_stack() {  # start_stack [PROFILE]: serve.sh on the GPU until its ready line (10 minutes
  # at most), with PROFILE (default ONEPASS_PROFILE's, else the default profile)
  [ -n "${1:-}" ] && export ONEPASS_PROFILE=$1
  ONEPASS_DEVICE=gpu ONEPASS_PORT=$PORT ONEPASS_VLLM_PORT=$VLLM_PORT \
    ONEPASS_LOG_DIR="$OUT/stack-logs${1:+-$1}" setsid bash "$ROOT/serve.sh" \
    > "$OUT/serve.out" 2>&1 &
  STACK_PID=$!
  local waited=0
  until grep -q '^onepass ready:' "$OUT/serve.out"; do
    kill -0 "$STACK_PID" 2>/dev/null || { tail -n 20 "$OUT/serve.out"; return 1; }
    [ $waited -ge 600 ] && { echo "not ready after 600 s"; return 1; }
    sleep 2
    waited=$((waited + 2))
  done
  grep '^onepass ready:' "$OUT/serve.out"
}

stop_stack() {
  [ -n "$STACK_PID" ] && kill -TERM -- "-$STACK_PID" 2>/dev/null && wait "$STACK_PID" 2>/dev/null
  STACK_PID=""
}
trap stop_stack EXIT

listing_stack() {  # listing_stack PROFILE: ready on V2, option sets off and said so
  stop_stack
  start_stack "$1" &&
    grep -rh "option sets (layout option_sets) off on this server" "$OUT/stack-logs-$1"
}

speed() {
  "$PY" "$ROOT/bench/measure/latency.py" --shim "$URL" --vllm "http://127.0.0.1:$VLLM_PORT" \
    --n 20 && "$PY" "$ROOT/bench/measure/throughput.py" --shim "$URL" \
    --vllm "http://127.0.0.1:$VLLM_PORT" --clients 1,4,16 --requests 32 --json "$OUT/speed.json"
}

hostile() {  # the engine-shared recipes against this stack's vLLM; fails when one is NOT MET
  local out
  out=$("$PY" "$ROOT/bench/measure/hostile_clients.py" --vllm "http://127.0.0.1:$VLLM_PORT" \
    --profile "${ONEPASS_PROFILE:-}" --recipes stray,expensive --json "$OUT/hostile.json") || return 1
  echo "$out"
  ! grep -q "NOT MET" <<< "$out"
}

if step install install; then
  step dry-run env ONEPASS_DEVICE=gpu bash "$ROOT/serve.sh" --dry-run
  step plugin plugin_checks
  step kernels "$PY" -m pytest -q -p no:cacheprovider "$ROOT/tests/kernels"
  if step stack start_stack; then
    step stack-checks "$PY" "$ROOT/bench/gpu/stack_checks.py" "$URL" --json "$OUT/stack_checks.json"
    step determinism "$PY" "$ROOT/bench/measure/determinism.py" --url "$URL" --requests 20
    step speed speed
    step hostile hostile
  else
    for s in stack-checks determinism speed hostile; do skip "$s" "the stack did not start"; done
  fi
  step listing-stack listing_stack "${ONEPASS_LISTING_PROFILE:-gemma-3-270m}"
  stop_stack
else
  for s in dry-run plugin kernels stack stack-checks determinism speed hostile listing-stack; do
    skip "$s" "install failed"
  done
fi
[ "$PLAN" = 1 ] && exit 0
{ printf 'step\tresult\ttime\tlast line of its log\n'; printf '%s\n' "${ROWS[@]}"; } \
  | tee "$OUT/summary.tsv" | awk -F '\t' '{printf "%-13s %-6s %-7s %s\n", $1, $2, $3, $4}'
! printf '%s\n' "${ROWS[@]}" | cut -f 2 | grep -qv PASS
