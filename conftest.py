"""The live suites' shared fixtures and hooks (tests/live/ and card_tests/ run in one pytest
session): one real stack per session: serve.sh starts vLLM (CPU) with the fast SmolLM2 profile and
the shim, and the tests share it; the vision model and stock vLLM each get a stack of their own
when a test asks for it (the shipped default gets one in test_default_model_live.py, for that
module only). Nothing here stands in for the engine. The helpers the fixtures
are built on (and the tests import) live in tests/support/."""
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # onepass/, tests/support/ and the scripts from the checkout
from tests.support import skips  # noqa: E402
from tests.support.grounding_eval import eval_items, send  # noqa: E402
from tests.support.live_stack import (CPU_ARGS, SMOLLM2, VISION_PROFILE,  # noqa: E402
                                      VLLM_TEST_ARGS, serve_stack, shipped_dtype, start_vllm,
                                      stop_stack)


def pytest_configure(config):
    config.addinivalue_line("markers", "last: runs after every other test (it stops the "
                            "session's vLLM or serve.sh); such tests keep their file's order")


def pytest_collection_modifyitems(session, config, items):
    """The live suite's order does not depend on file names: tests marked `last` move to the
    end, everything else keeps pytest's order."""
    items[:] = ([i for i in items if i.get_closest_marker("last") is None]
                + [i for i in items if i.get_closest_marker("last") is not None])


def skipped(report) -> None:
    """A skip's (test id, reason) into skips.SEEN, for card_tests/test_skips.py (run last)."""
    if report.skipped and isinstance(report.longrepr, tuple):
        skips.SEEN.append((report.nodeid, report.longrepr[2].removeprefix("Skipped: ")))


pytest_runtest_logreport = pytest_collectreport = skipped


def pytest_terminal_summary(terminalreporter):
    terminalreporter.write_line(f"skips in this session, by reason:\n{skips.table(skips.SEEN)}")


@pytest.fixture(scope="session")
def stack(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("logs")
    s = serve_stack(log_dir)
    s.log_dir = log_dir
    yield s
    stop_stack(s)


@pytest.fixture(scope="session")
def shipped(stack, tmp_path_factory):
    """(stack, dtype): serve.sh in the dtype it ships on this CPU, as it starts by default
    (ONEPASS_BATCH_INVARIANT=1). The session's stack when that dtype is fp32 (the session pins
    fp32), else a stack of its own, which the SIGTERM-under-load test stops at the end (it runs
    last): one serve.sh start serves both."""
    dtype = shipped_dtype()
    if dtype == "float32":
        yield stack, dtype
        return
    own = serve_stack(tmp_path_factory.mktemp("shipped"), {"ONEPASS_DTYPE": dtype})
    yield own, dtype
    stop_stack(own)


@pytest.fixture(scope="session")
def vision_stack(tmp_path_factory):
    """serve.sh with the vision profile (VISION_PROFILE: the small Idefics3 trained on the box
    scenes): the image path end to end, and box answers that can be scored."""
    log_dir = tmp_path_factory.mktemp("vision-logs")
    s = serve_stack(log_dir, {"ONEPASS_PROFILE": VISION_PROFILE})
    s.log_dir = log_dir
    yield s
    stop_stack(s)


@pytest.fixture(scope="session")
def solo_scenes():
    """The first eval items of the --solo set the vision model's eval was recorded on
    (tests/support/grounding_eval.py), rendered once a session."""
    return eval_items(VISION_PROFILE)


@pytest.fixture(scope="session")
def solo_answers(vision_stack, solo_scenes):
    """The vision stack's records for solo_scenes in a mode, each mode sent once a session (the
    grounding and the conventions tests read the same generate answers)."""
    sent = {}

    def of(mode: str) -> list:
        if mode not in sent:
            sent[mode] = send(vision_stack.url, solo_scenes, mode)
        return sent[mode]
    return of


@pytest.fixture(scope="session")
def stock(tmp_path_factory):
    """Stock vLLM with the same model, flags and attention schedule as the session's vLLM: only
    the plugin's batch-invariant entry point (serve.sh loads it too), none of the two-way hooks."""
    server = start_vllm(SMOLLM2, "smollm2-135m-instruct", (*CPU_ARGS, *VLLM_TEST_ARGS),
                        "onepass_batch_invariant", tmp_path_factory.mktemp("stock") / "vllm.log")
    yield server
    server.stop()
