"""A set read's plan (engine/onepass_engine/set_plan.py), without vLLM: the keys each row sees,
written out from the method; blocks of rows of any size whose biases make the whole one; only
vectors as long as the prompt kept per plan; the same plan in every listing; and a block size
that shrinks as the keys grow, so a block's scores stay within CHUNK_BYTES. Needs torch (the
coverage run under the venv); the stdlib run skips it.
Run: .venv/bin/python -m unittest tests.unit.engine.test_set_plan
"""
import sys
import unittest

from tests.support.paths import ROOT
from tests.support.venv_only import NO_TORCH, installed
from tests.support.set_reads import PREFIX, geometry, method_sees

sys.path.insert(0, str(ROOT / "engine"))
try:
    import torch

    from onepass_engine import set_plan
except ImportError:
    if installed("torch"):
        raise
    torch = None  # the stdlib run (python3 -S)

@unittest.skipIf(torch is None, NO_TORCH)
class TestPlan(unittest.TestCase):
    def test_each_row_sees_what_the_method_says(self):
        for two_way in (False, True):
            geo, who, part = geometry((0, 1, 2), two_way)
            p = set_plan.plan(geo)
            sees = method_sees(part, two_way)
            rows, keys = p.keys[p.first:], p.keys
            self.assertEqual(p.at.tolist(), rows.tolist())  # start 0, nothing computed
            want = torch.where(sees[rows][:, keys], 0.0, float("-inf"))
            self.assertTrue(torch.equal(p.bias(0, len(p.at)), want), two_way)
            self.assertEqual(p.first, 0 if two_way else len(PREFIX))

    def test_blocks_of_rows_make_the_whole_bias(self):
        """Blocks of every size, cut inside and across the parts."""
        for two_way in (False, True):
            geo, _, part = geometry((2, 0, 1), two_way, computed=0 if two_way else 3, start=7)
            p = set_plan.plan(geo)
            whole = p.bias(0, len(p.at))
            self.assertEqual(tuple(whole.shape), (len(p.at), geo.length))
            sees = method_sees(part, two_way)[p.keys[p.first:]][:, p.keys]
            self.assertTrue(torch.equal(whole, torch.where(sees, 0.0, float("-inf"))))
            for n in range(1, len(p.at) + 2):
                blocks = [p.bias(r, r + n) for r in range(0, len(p.at), n)]
                self.assertTrue(torch.equal(torch.cat(blocks), whole), (two_way, n))

    def test_a_plan_keeps_only_vectors_as_long_as_the_prompt(self):
        geo, _, _ = geometry((0, 1, 2), two_way=True)
        p = set_plan.plan(geo)
        tensors = [v for v in vars(p).values() if isinstance(v, torch.Tensor)]
        self.assertEqual(len(tensors), 2)  # the rows' places and the keys
        for t in tensors:
            self.assertEqual(t.dim(), 1)
            self.assertLessEqual(t.numel(), geo.length)
        self.assertEqual(p.spans, ((5, 9), (9, 11), (11, 14)))  # OPTIONS 1, 2, 0 as key ranges

    def test_every_listing_has_the_same_plan_up_to_at(self):
        for two_way in (False, True):
            plans = []
            for order in ((0, 1, 2), (2, 1, 0), (1, 2, 0)):
                geo, who, _ = geometry(order, two_way)
                p = set_plan.plan(geo)
                plans.append(([who[t] for t in p.keys.tolist()], p.spans, p.first,
                              p.bias(0, len(p.at)).tolist()))
            self.assertEqual(plans[0], plans[1])
            self.assertEqual(plans[0], plans[2])
            self.assertEqual(plans[0][0][len(PREFIX)], ("o", 1, 0))  # ids 20.. come first


@unittest.skipIf(torch is None, NO_TORCH)
class TestChunkRows(unittest.TestCase):
    def test_rows_shrink_as_keys_grow_and_scores_stay_within_the_budget(self):
        """Qwen2.5-1.5B's 12 query heads: 4k keys get hundreds of rows a block, 32k some
        tens, keys past the budget one row (the floor)."""
        last = None
        for keys in (512, 4096, 16384, 32768, 131072, set_plan.CHUNK_BYTES):
            rows = set_plan.chunk_rows(12, keys)
            self.assertGreaterEqual(rows, 1)
            if rows > 1:
                self.assertLessEqual(12 * rows * keys * 4, set_plan.CHUNK_BYTES)
            if last is not None:
                self.assertLessEqual(rows, last)
            last = rows
        self.assertEqual(set_plan.chunk_rows(12, 4096), 341)
        self.assertEqual(set_plan.chunk_rows(12, 32768), 42)
        self.assertEqual(set_plan.chunk_rows(12, set_plan.CHUNK_BYTES), 1)
        self.assertLess(set_plan.chunk_rows(32, 4096), set_plan.chunk_rows(12, 4096))


if __name__ == "__main__":
    unittest.main()
