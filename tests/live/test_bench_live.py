"""bench/measure/evaluate.py and bench/fit/fit_calibration.py against the session's real server,
on small slices of the development data; and bench/lib/decision_metrics.py (plus the fit's maths)
on hand-computed numbers, without the server."""
import json
import math
import subprocess
import sys

import pytest
from PIL import Image

from tests.support.live_stack import config_doc, ROOT
from tests.support.prerequisites import missing

sys.path[:0] = [str(ROOT / "bench" / d) for d in ("data", "lib", "fit")]
import decision_metrics as metrics  # noqa: E402
import devdata  # noqa: E402
import fit_calibration  # noqa: E402

SYS1 = devdata.DEFAULT_DATA / "sys1bench" / "support_tickets-200-seed42.jsonl"
BIGBENCH = devdata.DEFAULT_DATA / "bigbench" / "sports_understanding"  # short inputs: cheap


@pytest.fixture
def dev_data():
    """The development data in ../shared beside the checkout (where .ci/run's clean checkout
    has it; test.sh fetches none): missing, a failure under CI=true, a skip elsewhere."""
    if not (SYS1.exists() and BIGBENCH.exists()):
        missing(f"development data not found under {devdata.DEFAULT_DATA} (../shared beside "
                "the checkout)", data=True)


needs_data = pytest.mark.usefixtures("dev_data")  # first, so a skip starts no stack


def run_tool(script: str, *args) -> str:
    """bench/SCRIPT (e.g. measure/evaluate.py) run with ARGS: its output."""
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / script), *map(str, args)],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def in_unit(value) -> bool:
    return value is not None and 0.0 <= value <= 1.0


@needs_data
def test_evaluate_slice(stack, tmp_path):
    """Two eval items of a sys1bench family (3 questions each) and of a BIG-bench task, with the
    order check: every task has its metrics, in range, over exactly the questions sent."""
    out = tmp_path / "eval.json"
    stdout = run_tool("measure/evaluate.py", "--url", stack.url, "--data", SYS1, BIGBENCH,
                      "--split", "eval", "--limit", 2, "--order-check", "--json", out)
    doc = json.loads(out.read_text())
    want = {"support_tickets": 6, "bigbench/sports_understanding": 2}
    assert {task: m["n"] for task, m in doc["tasks"].items()} == want
    assert doc["overall"]["n"] == len(doc["records"]) == 8
    for task, m in (*doc["tasks"].items(), ("overall", doc["overall"])):
        assert task in stdout
        assert m["non_200"] == 0 and m["decisions"] == (4 if task == "overall" else 2)
        assert in_unit(m["accuracy"]) and in_unit(m["ece"]) and in_unit(m["order_sensitivity"])
        assert 0.0 <= m["brier"] <= 2.0 and 0.0 <= m["log_loss"] <= -math.log(metrics.EPS)
        assert m["input_tokens_per_decision"] > 50 and m["latency_ms_per_decision"] > 0
    assert doc["errors"] == {}
    assert {r["kind"] for r in doc["records"]} == {"noul", "choice", "score"}
    assert all(r.get("reversed_top_key") for r in doc["records"] if r["kind"] == "choice")


@needs_data
def test_fit_calibration_writes_a_copy(stack, tmp_path):
    """The fit on a tiny slice writes positive temperatures and their provenance into a copy of
    serve_config.json (nothing else changes), and a reliability PNG that PIL opens."""
    original = config_doc()
    config, png = tmp_path / "serve_config.json", tmp_path / "reliability.png"
    config.write_text(json.dumps(original, indent=2, ensure_ascii=False) + "\n")
    profile = original["default_profile"]
    run_tool("fit/fit_calibration.py", "--url", stack.url, "--data", SYS1, "--limit", 2,
             "--profile", profile, "--config", config, "--write", "--png", png)
    written = json.loads(config.read_text())
    calibration = written["profiles"][profile]["calibration"]
    temps = calibration["temperature"]
    assert set(temps) == {"noul", "choice", "score"}
    assert all(isinstance(t, float) and 0 < t < math.inf for t in temps.values())
    fitted = calibration["fitted"]["temperature"]
    assert fitted["tool"] == "bench/fit/fit_calibration.py" and "6 questions" in fitted["on"]
    before = original["profiles"][profile].get("calibration") or {}
    assert {k: v for k, v in calibration.items() if k not in ("temperature", "fitted")} == \
        {k: v for k, v in before.items() if k not in ("temperature", "fitted")}
    written["profiles"][profile].pop("calibration")
    original["profiles"][profile].pop("calibration", None)
    assert written == original
    assert config.read_text().endswith("}\n")
    with Image.open(png) as image:
        image.verify()


def records():
    """Four answers whose metrics are worked out by hand below."""
    return [metrics.record("t", "choice", {"probabilities": {"a": 0.7, "b": 0.2, "c": 0.1}}, "a",
                           reversed_top_key="a"),
            metrics.record("t", "choice", {"probabilities": {"a": 0.6, "b": 0.4}}, "b",
                           reversed_top_key="b"),
            metrics.record("t", "noul", {"noul": 0.9}, False),
            metrics.record("u", "score", {"probabilities": {"0": 0.25, "1": 0.75}}, 1)]


def test_metrics_by_hand():
    rs = records()
    assert [r["top_key"] for r in rs] == ["a", "a", "true", "1"]
    assert [r["gold_key"] for r in rs] == ["a", "b", "false", "1"]
    assert metrics.accuracy(rs) == 0.5
    # bins: 0.7 and 0.75 -> [0.7, 0.8) acc 1; 0.6 -> [0.6, 0.7) acc 0; 0.9 -> [0.9, 1] acc 0
    assert metrics.ece(rs) == pytest.approx(2 / 4 * 0.275 + 1 / 4 * 0.6 + 1 / 4 * 0.9)
    assert metrics.brier(rs) == pytest.approx((0.14 + 0.72 + 1.62 + 0.125) / 4)
    assert metrics.log_loss(rs) == pytest.approx(
        -(math.log(0.7) + math.log(0.4) + math.log(0.1) + math.log(0.75)) / 4)
    assert metrics.order_sensitivity(rs) == 0.5  # the second choice flipped, the first did not
    assert metrics.order_sensitivity(rs[2:]) is None
    sure_and_wrong = metrics.record("t", "noul", {"noul": 1.0}, False)
    assert metrics.log_loss([sure_and_wrong]) == pytest.approx(-math.log(1e-12))
    assert metrics.summary([])["accuracy"] is None
    by_task = metrics.group(rs, "task")
    assert [len(v) for v in by_task.values()] == [3, 1]


def test_fit_exponent_by_hand():
    """p = 0.9 on the top option, right 7 times in 10: the best a solves 9^a = 7/3."""
    rs = [metrics.record("t", "noul", {"noul": 0.9}, i < 7) for i in range(10)]
    a = fit_calibration.fit_exponent(rs)
    assert a == pytest.approx(math.log(7 / 3) / math.log(9), rel=1e-3)
    assert fit_calibration.rescale(rs[0], a)["probabilities"]["true"] == pytest.approx(0.7, 1e-3)
    profile = {"temperature": 2.0, "calibration": {"temperature": {"choice": 0.5}}}
    assert fit_calibration.current_temperatures({"profiles": {"p": profile}}, "p") == \
        {"noul": 2.0, "choice": 0.5, "score": 2.0}


def test_split_alternates_within_each_task():
    items = [{"task": t, "id": f"{t}{i}"} for t in "xy" for i in range(5)]

    def ids(part, limit=None):
        return [i["id"] for i in devdata.split(items, part, limit)]
    assert ids("fit") == ["x0", "x2", "x4", "y0", "y2", "y4"]
    assert ids("eval") == ["x1", "x3", "y1", "y3"]
    assert ids("fit", 2) == ["x0", "x2", "y0", "y2"] and len(ids("all")) == 10
