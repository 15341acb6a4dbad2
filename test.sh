#!/usr/bin/env bash
# test.sh: the whole test suite on a fresh machine. Sets up with serve.sh --setup-only, then runs
# the stdlib shim tests (plain python3 and under coverage) and the live suite, which starts one
# real vLLM CPU server through serve.sh for the session.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$ROOT"
PY="${ONEPASS_VENV:-$ROOT/.venv}/bin/python"
echo "test.sh: setup"
ONEPASS_DEVICE=cpu bash serve.sh --setup-only
echo "test.sh: stdlib tests with the machine's python3 (no site-packages)"
python3 -S -m unittest test_shim test_security test_decisions test_fitting test_bm25 test_fetch test_images test_image_inputs test_tools 2>&1 | tail -n 3
echo "test.sh: stdlib tests with coverage of onepass/"
"$PY" -m coverage run --source=onepass -m unittest test_shim test_security test_decisions test_fitting test_bm25 test_fetch test_images test_image_inputs test_tools
"$PY" -m coverage report --skip-covered --sort=cover | tail -n 15
echo "test.sh: live tests against a real vLLM"
"$PY" -m pytest tests -v -p no:cacheprovider "$@"
