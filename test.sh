#!/usr/bin/env bash
# test.sh: the whole test suite on a fresh machine. Sets up with serve.sh --setup-only, then runs
# the stdlib tests (the machine's python3 without site-packages, then under coverage) and the
# live suite, which starts one real vLLM CPU server through serve.sh for the session (and HAProxy
# in front of two more for the balancer test; installed here as root when missing, as is
# promtool for the alert rules' test).
# The suites, each named once: STDLIB is every test_*.py at the root (test_shim, test_security)
# and under tests/unit/ (found by discovery: a package per folder); LIVE is tests/live/ and
# card_tests/ (the docs held to the code and the live server), one pytest session sharing the
# fixtures in conftest.py (needs the venv; its order is conftest's, not the file names').
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$ROOT"
PY="${ONEPASS_VENV:-$ROOT/.venv}/bin/python"
STDLIB=(-m unittest discover --start-directory . --top-level-directory . --pattern "test_*.py")
LIVE=(tests/live card_tests)
echo "test.sh: setup"
ONEPASS_DEVICE=cpu bash serve.sh --setup-only
# HAProxy for tests/live/test_balancer_live.py (deploy/): Debian's package, run here as
# haproxy 2.6.12-1+deb12u3 (bookworm). Installed when missing if we are root with apt-get;
# otherwise the setup stops here saying so.
if ! command -v haproxy >/dev/null && [ ! -x /usr/sbin/haproxy ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q haproxy || { apt-get update -q && apt-get install -y -q haproxy; } ||
      { echo "test.sh: error: apt-get install haproxy failed" >&2; exit 10; }
  else
    echo "test.sh: error: haproxy is not installed (the balancer test needs it): run" \
      "apt-get install -y haproxy as root, or put haproxy on PATH" >&2
    exit 10
  fi
fi
echo "test.sh: $(PATH=$PATH:/usr/sbin haproxy -v | head -n 1)"
# promtool for tests/unit/test_prometheus_rules.py (deploy/prometheus/: `promtool check rules`,
# `promtool test rules`): Debian's prometheus package, run here as 2.42.0+ds-5+deb12u1
# (bookworm). Installed the same way; under CI=true that test fails without it.
if ! command -v promtool >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q prometheus || { apt-get update -q && apt-get install -y -q prometheus; } ||
      { echo "test.sh: error: apt-get install prometheus failed" >&2; exit 10; }
  else
    echo "test.sh: error: promtool is not installed (the alert rules' test needs it): run" \
      "apt-get install -y prometheus as root, or put promtool on PATH" >&2
    exit 10
  fi
fi
echo "test.sh: $(promtool --version 2>&1 | head -n 1)"
echo "test.sh: stdlib tests with the machine's python3 (no site-packages)"
python3 -S "${STDLIB[@]}" 2>&1 | tail -n 3
echo "test.sh: stdlib tests with coverage of onepass/"
"$PY" -m coverage run --source=onepass "${STDLIB[@]}"
"$PY" -m coverage report --skip-covered --sort=cover | tail -n 15
echo "test.sh: live tests against a real vLLM"
"$PY" -m pytest "${LIVE[@]}" -v -p no:cacheprovider "$@"
