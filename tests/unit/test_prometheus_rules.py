"""deploy/prometheus/: the alert and recording rules pass `promtool check rules` and their own
`promtool test rules` cases, the example scrape config passes `promtool check config`, and every
series and label value the rules name is one the shim exports. promtool is Debian's prometheus
package (test.sh installs it); without it these fail where the run promises the tools (test.sh's
ONEPASS_REQUIRE_TOOLS=1, or CI=true) and skip elsewhere (tests/support/prerequisites.py)."""
import os
import re
import shutil
import subprocess
import unittest
from pathlib import Path

from onepass import telemetry
from tests.support.prerequisites import missing

ROOT = Path(__file__).resolve().parents[2]
HERE = ROOT / "deploy" / "prometheus"
RULES, RULE_TESTS, CONFIG = (HERE / "onepass-rules.yml", HERE / "onepass-rules.test.yml",
                             HERE / "prometheus.yml")


def promtool(test: unittest.TestCase, *args: str) -> str:
    """promtool's output; a failure names the command and what it said."""
    tool = shutil.which("promtool") or next(
        (p for p in ("/usr/bin/promtool", "/usr/local/bin/promtool") if os.access(p, os.X_OK)),
        None)
    if tool is None:
        missing("promtool is not installed (apt-get install -y prometheus; test.sh does)")
    out = subprocess.run([tool, *args], cwd=HERE, capture_output=True, text=True, timeout=120)
    test.assertEqual(out.returncode, 0, f"promtool {' '.join(args)}:\n{out.stdout}{out.stderr}")
    return out.stdout + out.stderr


class TestPromtool(unittest.TestCase):
    def test_rules_check(self):
        self.assertIn("SUCCESS", promtool(self, "check", "rules", "--lint=all", RULES.name))

    def test_rules_tests(self):
        self.assertIn("SUCCESS", promtool(self, "test", "rules", RULE_TESTS.name))

    def test_scrape_config(self):
        """Syntax only: the key file it names exists only where Prometheus runs."""
        promtool(self, "check", "config", "--syntax-only", CONFIG.name)
        files = re.findall(r"^rule_files:\n((?:  - .+\n)+)", CONFIG.read_text(), re.M)
        self.assertEqual([f.strip("- \n") for f in files[0].splitlines()], [RULES.name])


class TestRulesNameTheShimsSeries(unittest.TestCase):
    """A renamed metric or label value would leave an alert silently matching nothing."""

    text = RULES.read_text()

    def test_metric_names(self):
        used = set(re.findall(r"(?<![:\w])onepass_[a-z_]+", self.text))
        exported = set(telemetry.REGISTRY.metrics)
        base = {re.sub(r"_(bucket|count|sum)$", "", n) for n in used}
        self.assertTrue(base, "no onepass_ series named")
        self.assertEqual(base - exported, set())

    def test_label_values(self):
        def values(label):
            return {v for group in re.findall(label + r'[!=]~?"([^"]+)"', self.text)
                    for v in group.split("|")}
        self.assertEqual(values("route"), {"/v1/systemone", "/systemone", "/v1/decisions",
                                           "/decisions"})
        self.assertLessEqual(values("route"), set(telemetry.ROUTES))
        self.assertLessEqual(values("phase"), set(telemetry.PHASES))
        self.assertLessEqual(values("kind"), set(telemetry.ENGINE_ERRORS))
        self.assertLessEqual(values("status_class"), set(telemetry.STATUS_CLASSES))


if __name__ == "__main__":
    unittest.main()
