"""The grounding model's answer loss (tools/models/grounding_loss.py): a soft edge target is the
weighted cross-entropy of its two bands, a plain one the usual cross-entropy. Needs torch (the
coverage run under the venv); the stdlib run skips it.
Run: .venv/bin/python -m unittest tests.unit.bench.test_grounding_loss
"""
import sys
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tools" / "models"))
from tests.support.venv_only import NO_TORCH, installed  # noqa: E402

try:
    import torch
except ImportError:
    if installed("torch"):
        raise
    torch = None  # the stdlib run (python3 -S)


@unittest.skipIf(torch is None, NO_TORCH)
class TokenLossTest(unittest.TestCase):
    def test_soft_and_plain_targets(self):
        import grounding_loss
        torch.manual_seed(0)
        logits = torch.randn(3, 50)
        logp = torch.log_softmax(logits, -1)
        targets = torch.tensor([[7, 7], [3, 4], [9, 10]])
        weights = torch.tensor([[1.0, 0.0], [0.25, 0.75], [0.5, 0.5]])
        got = grounding_loss.token_loss(logits, targets, weights)
        plain = torch.nn.functional.cross_entropy(logits[:1], torch.tensor([7]))
        self.assertAlmostEqual(float(got[0]), float(plain), places=5)
        self.assertAlmostEqual(float(got[1]), float(-(0.25 * logp[1, 3] + 0.75 * logp[1, 4])),
                               places=5)
        # the soft loss is least where the model's two bands hold the target's weights
        best = torch.full((1, 50), -30.0)
        best[0, 9] = best[0, 10] = 0.0
        worse = best.clone()
        worse[0, 10] = -1.0
        pair, half = targets[2:], weights[2:]
        self.assertLess(float(grounding_loss.token_loss(best, pair, half)),
                        float(grounding_loss.token_loss(worse, pair, half)))


if __name__ == "__main__":
    unittest.main()
