#!/usr/bin/env bash
# bench/gpu/gpu_check.sh: the GPU side of the engine plugin's checks, as one prepared script for a
# device session (one H200; budget: under 10 minutes). Needs a Python with the CUDA build of
# vllm==0.32.0 and transformers (ONEPASS_GPU_PYTHON, default python3): the device machine has
# no network, so nothing is installed here. The plugin is put on the path without installing
# it (a dist-info with its entry point in a scratch folder). Results: stdout and $OUT (or
# ./gpu_check_out): gpu_checks.json, vLLM logs. Exit 0 = every check passed.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PY=${ONEPASS_GPU_PYTHON:-python3}
OUT=${OUT:-$ROOT/gpu_check_out}
mkdir -p "$OUT"
"$PY" -c 'import vllm, torch, sys; assert vllm.__version__ == "0.32.0", vllm.__version__; assert torch.cuda.is_available(); print("vLLM", vllm.__version__, torch.cuda.get_device_name(0))' \
  || { echo "gpu_check: needs vllm==0.32.0 (CUDA) importable by $PY" >&2; exit 2; }
SCRATCH=$(mktemp -d)
mkdir -p "$SCRATCH/onepass_engine-0.1.0.dist-info"
printf 'Metadata-Version: 2.1\nName: onepass-engine\nVersion: 0.1.0\n' \
  > "$SCRATCH/onepass_engine-0.1.0.dist-info/METADATA"
printf '[vllm.general_plugins]\nonepass_two_way = onepass_engine:register\n' \
  > "$SCRATCH/onepass_engine-0.1.0.dist-info/entry_points.txt"
export PYTHONPATH="$ROOT/engine:$SCRATCH${PYTHONPATH:+:$PYTHONPATH}"
# A tiny random-weight Llama (the hub is unreachable from the device machine).
"$PY" - "$SCRATCH/model" <<'PYEOF'
import sys, torch
from transformers import LlamaConfig, LlamaForCausalLM
torch.manual_seed(0)
cfg = LlamaConfig(vocab_size=4096, hidden_size=256, intermediate_size=512, num_hidden_layers=4,
                  num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=2048)
LlamaForCausalLM(cfg).to(torch.bfloat16).save_pretrained(sys.argv[1])
PYEOF
# vLLM needs a tokenizer even for token-id prompts: a byte-level one with the model's vocab.
"$PY" - "$SCRATCH/model" <<'PYEOF'
import sys
from tokenizers import Tokenizer, models, pre_tokenizers, decoders
from transformers import PreTrainedTokenizerFast
vocab = {f"t{i}": i for i in range(4096)}
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="t0"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.decoder = decoders.WordPiece()
PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="t0", eos_token="t1",
                        bos_token="t2").save_pretrained(sys.argv[1])
PYEOF
"$PY" "$ROOT/bench/gpu/gpu_checks.py" "$SCRATCH/model" "$OUT"
