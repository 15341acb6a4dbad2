"""Every skip of the run has a reason on docs/testing.md's list ("Skips"): the pytest session's
(collected by conftest.py; this module is marked `last`, so every other test has reported), and
the stdlib runs' from the `unittest -v` logs test.sh names in ONEPASS_UNITTEST_LOGS (test.sh
also checks those itself, before the live suite). A skip for a reason not on the list fails.
"""
import os

import pytest

from tests.support import skips

PLANTED = """\
test_a (tests.unit.x.T.test_a) ... ok
test_b (tests.unit.x.T.test_b) ... skipped 'needs vLLM (the venv)'
test_c (tests.unit.x.T.test_c)
The first line of c's docstring ... skipped "promtool isn't installed"
test_d (tests.unit.x.T.test_d) ... some output
skipped 'development data not found under /x/shared/data/dev'
test_fill_bytes_are_skipped (tests.unit.x.T.test_fill_bytes_are_skipped) ... ok
"""


def test_the_check_reads_unittest_logs_and_catches_an_unlisted_reason():
    found = skips.from_unittest(PLANTED)
    assert [why for _, why in found] == [
        "needs vLLM (the venv)", "promtool isn't installed",
        "development data not found under /x/shared/data/dev"]
    listed = skips.allowed()
    assert [why for _, why in skips.unlisted(found, listed)] == [
        "needs vLLM (the venv)", "promtool isn't installed"]
    assert skips.unlisted([("t", "needs vLLM (the venv)")], ["needs vLLM*"]) == []


@pytest.mark.last
def test_every_skip_of_the_run_is_allowed():
    runs = {"pytest session": skips.SEEN}
    for log in filter(None, os.environ.get("ONEPASS_UNITTEST_LOGS", "").split(os.pathsep)):
        with open(log, encoding="utf-8", errors="replace") as f:
            runs[log] = skips.from_unittest(f.read())
    listed = skips.allowed()
    listing = "\n".join(f"{run}:\n{skips.table(found)}" for run, found in runs.items())
    bad = [(test, why) for found in runs.values() for test, why in skips.unlisted(found, listed)]
    assert not bad, f"skips not on docs/testing.md's list: {bad}\nall skips:\n{listing}"
