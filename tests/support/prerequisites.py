"""A test's missing tool, venv or data: a failure where the run promises it, a skip elsewhere.
test.sh installs the tools its tests call (promtool, openssl, ...) and sets up the venv, then
exports ONEPASS_REQUIRE_TOOLS=1 for its runs; under that, and under CI=true (a CI machine has
../shared beside the checkout too), a missing one fails the test. A developer's own partial run
skips it, saying what is missing (docs/testing.md, "Skips").
"""
import os
import unittest


def promised(data: bool = False) -> bool:
    """Whether this run promises the tools (ONEPASS_REQUIRE_TOOLS=1 or CI=true), or with
    `data`, the development data (CI=true only: test.sh does not fetch it)."""
    ci = os.environ.get("CI") == "true"
    return ci if data else ci or os.environ.get("ONEPASS_REQUIRE_TOOLS") == "1"


def missing(message: str, data: bool = False):
    """Fail (AssertionError) where the run promises what is missing, else skip: works in a test,
    a setUpClass, and under pytest (which reports unittest.SkipTest as a skip)."""
    if promised(data):
        raise AssertionError(f"{message} (this run promises it: "
                             f"{'CI=true' if data else 'ONEPASS_REQUIRE_TOOLS=1 or CI=true'})")
    raise unittest.SkipTest(message)
