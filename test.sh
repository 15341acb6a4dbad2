#!/usr/bin/env bash
# test.sh: the whole test suite on a fresh machine. Sets up with serve.sh --setup-only, then runs
# the stdlib tests (the machine's python3 without site-packages, then under coverage) and the
# live suite, which starts real vLLM CPU servers through serve.sh for the session (and HAProxy
# in front of two more for the balancer test; installed here as root when missing, as is
# promtool for the alert rules' test).
# The suites, each named once: STDLIB is every test_*.py at the root (test_shim, test_security)
# and under tests/unit/ (found by discovery: a package per folder); LIVE is tests/kernels/
# (vLLM's Triton attention kernels under Triton's interpreter, no server), tests/live/ and
# card_tests/ (the docs held to the code and the live server), one pytest session sharing the
# fixtures in conftest.py (needs the venv; its order is conftest's, not the file names').
# ONEPASS_TEST_CPU=avx2 runs the suite as a CPU without AVX-512 would (docs/testing.md): PyTorch's
# AVX2 dispatch (ATEN_CPU_CAPABILITY=avx2) and fp32, the dtype serve.sh ships on such a CPU.
set -euo pipefail
case "${ONEPASS_TEST_CPU:-}" in
  "") ;;
  avx2) export ATEN_CPU_CAPABILITY=avx2 ONEPASS_DTYPE=float32 ;;
  *) echo "test.sh: error: ONEPASS_TEST_CPU must be avx2 or unset, not ${ONEPASS_TEST_CPU}" >&2
     exit 2 ;;
esac
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$ROOT"
PY="${ONEPASS_VENV:-$ROOT/.venv}/bin/python"
# -v: every test's line in the logs, its skip reason with it (checked below)
STDLIB=(-m unittest discover --start-directory . --top-level-directory . --pattern "test_*.py" -v)
LIVE=(tests/kernels tests/live card_tests)
echo "test.sh: setup${ONEPASS_TEST_CPU:+ (as a CPU with ${ONEPASS_TEST_CPU} only:}" \
  "${ONEPASS_TEST_CPU:+ATEN_CPU_CAPABILITY=$ATEN_CPU_CAPABILITY ONEPASS_DTYPE=$ONEPASS_DTYPE)}"
# The shipped default's model (the README's answers) and the fast SmolLM2 profile's (the live
# suite's plumbing, tests/support/live_stack.py's FAST_PROFILE): the second run only builds.
ONEPASS_DEVICE=cpu ONEPASS_TEST_DEPS=1 bash serve.sh --setup-only
ONEPASS_DEVICE=cpu ONEPASS_TEST_DEPS=1 ONEPASS_PROFILE=smollm2-135m-fast bash serve.sh --setup-only
# need CMD PACKAGE USER: Debian's PACKAGE installed when CMD is missing, if we are root with
# apt-get; otherwise the setup stops here saying so.
need() {
  { command -v "$1" || [ -x "/usr/sbin/$1" ]; } >/dev/null && return 0
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q "$2" || { apt-get update -q && apt-get install -y -q "$2"; } ||
      { echo "test.sh: error: apt-get install $2 failed" >&2; exit 10; }
  else
    echo "test.sh: error: $1 is not installed ($3 needs it): run apt-get install -y $2 as" \
      "root, or put $1 on PATH" >&2
    exit 10
  fi
}
# HAProxy for tests/live/test_balancer_live.py (deploy/): run here as haproxy 2.6.12-1+deb12u3
# (bookworm).
need haproxy haproxy "the balancer test"
echo "test.sh: $(PATH=$PATH:/usr/sbin haproxy -v | head -n 1)"
# promtool for tests/unit/test_prometheus_rules.py (deploy/prometheus/: `promtool check rules`,
# `promtool test rules`), from the prometheus package, run here as 2.42.0+ds-5+deb12u1
# (bookworm); under CI=true that test fails without it.
need promtool prometheus "the alert rules' test"
echo "test.sh: $(promtool --version 2>&1 | head -n 1)"
# Chromium for tests/live/test_try_page_live.py (the try-it page in a real browser, driven by
# playwright with this system browser: playwright downloads nothing), run here as
# 150.0.7871.100-1~deb12u1 (bookworm).
need chromium chromium "the try-it page's browser test"
echo "test.sh: $(chromium --version 2>/dev/null | head -n 1)"
# openssl for tests/unit/images/test_fetch.py's TLS tests (a certificate made per run).
need openssl openssl "the image links' TLS tests"
echo "test.sh: $(openssl version)"
# Every tool above is here now, and the venv is set up: a test that needs one fails without it
# rather than skipping (tests/support/prerequisites.py, docs/testing.md's "Skips").
export ONEPASS_REQUIRE_TOOLS=1
echo "test.sh: stdlib tests with the machine's python3 (no site-packages), and under coverage"
# The two runs of the stdlib tests share nothing, so they run side by side (one core each).
# The -S run's summary when it passes; every failure's traceback when it does not.
STDLIB_LOG=$(mktemp)
python3 -S "${STDLIB[@]}" > "$STDLIB_LOG" 2>&1 &
STDLIB_PID=$!
COVERAGE_LOG=$(mktemp)
COVERED=0
"$PY" -m coverage run --source=onepass "${STDLIB[@]}" > "$COVERAGE_LOG" 2>&1 || COVERED=$?
if ! wait "$STDLIB_PID"; then
  grep -E -A 40 '^(FAIL|ERROR):' "$STDLIB_LOG" | head -n 400
  tail -n 3 "$STDLIB_LOG"
  exit 1
fi
tail -n 3 "$STDLIB_LOG"
if [ "$COVERED" != 0 ]; then
  grep -E -A 40 '^(FAIL|ERROR):' "$COVERAGE_LOG" | head -n 400
  tail -n 3 "$COVERAGE_LOG"
  exit 1
fi
# Every skip's reason, counted; one not on docs/testing.md's list fails the run here (the live
# suite's own are checked by card_tests/test_skips.py, which reads these logs too).
python3 -S -m tests.support.skips "$STDLIB_LOG" "$COVERAGE_LOG"
export ONEPASS_UNITTEST_LOGS="$STDLIB_LOG:$COVERAGE_LOG"
echo "test.sh: coverage of onepass/ by the stdlib tests"
"$PY" -m coverage report --skip-covered --sort=cover | tail -n 15
echo "test.sh: live tests against a real vLLM"
# --durations: the slowest tests and fixtures (vLLM starts) named in the log, to keep test.sh
# under its 30 minutes on a slower CPU.
"$PY" -m pytest "${LIVE[@]}" -v -p no:cacheprovider --durations=30 "$@"
# The parts that differ by CPU, again as a CPU with AVX2 only runs them (ONEPASS_TEST_CPU=avx2's
# settings, docs/testing.md): the cache layouts, the abandon and deadline tests (their bounds
# from the step time they measure) and the shipped default's module, in fp32 as serve.sh ships
# it there; the skip check last. Not when the whole suite already ran that way.
AVX2_PART=("tests/live/test_sets_live.py::test_the_cache_indices_find_what_vllm_wrote"
  "tests/live/test_sets_live.py::test_the_triton_indices_follow_its_layout"
  tests/live/test_abandon_live.py tests/live/test_default_model_live.py
  "card_tests/test_skips.py::test_every_skip_of_the_run_is_allowed")
if [ -z "${ONEPASS_TEST_CPU:-}" ] && [ $# = 0 ]; then
  echo "test.sh: the CPU-dependent live tests again as a CPU with AVX2 only" \
    "(ATEN_CPU_CAPABILITY=avx2 ONEPASS_DTYPE=float32)"
  ATEN_CPU_CAPABILITY=avx2 ONEPASS_DTYPE=float32 "$PY" -m pytest "${AVX2_PART[@]}" -v \
    -p no:cacheprovider --durations=10
fi
