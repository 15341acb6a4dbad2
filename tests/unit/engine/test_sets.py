"""Set reads' recomputed rows (engine/onepass_engine/sets.py), without vLLM, on a CPU cache in
vLLM's `vec` layout: rows attended in blocks, each block's bias built from the plan's vectors,
give the bits of the whole-bias code they replace (a [rows, keys] bias built once, repeated
per query head); every listing of the same spans gives each token the same bits, blocks cut
small; a bias kept for the step or built per layer gives the same bits; the rows read as the
method says. Needs torch (the coverage run under the venv); the
stdlib run skips it. tests/kernels/ checks the Triton layouts under Triton's interpreter.
Run: .venv/bin/python -m unittest tests.unit.engine.test_sets
"""
import sys
import unittest
from types import SimpleNamespace
from unittest import mock

from tests.support.paths import ROOT
from tests.support.venv_only import NO_TORCH, installed
from tests.support.set_reads import geometry, method_sees, whole_attend, whole_bias

sys.path.insert(0, str(ROOT / "engine"))
try:
    import torch

    from onepass_engine import set_plan, sets
except ImportError:
    if installed("torch"):
        raise
    torch = None  # the stdlib run (python3 -S)

HEADS, KV_HEADS, HEAD, BLOCK, PLAIN = 6, 2, 16, 4, 3  # PLAIN rows of another request first


IMPLS = {"plain": SimpleNamespace(scale=HEAD ** -0.5),
         "softcap": SimpleNamespace(scale=HEAD ** -0.5, logits_soft_cap=5.0),
         "sinks": SimpleNamespace(scale=HEAD ** -0.5, sinks=torch.linspace(-1, 1, HEADS)
                                  if torch else None)}


class Read:
    """One set request after the kernel ran: its K and V in a paged cache, its query rows after
    PLAIN rows of another request; each token's vectors from its identity (the same in every
    listing, as with shared positions)."""
    def __init__(self, order, two_way=False, computed=0):
        self.geo, self.who, self.part = geometry(order, two_way, computed, start=PLAIN)
        n = self.geo.length
        gen = torch.Generator().manual_seed(7)
        table = {w: (torch.randn(HEADS, HEAD, generator=gen),
                     torch.randn(KV_HEADS, HEAD, generator=gen),
                     torch.randn(KV_HEADS, HEAD, generator=gen)) for w in sorted(self.who)}
        self.q, self.k, self.v = (torch.stack([table[w][i] for w in self.who]) for i in range(3))
        blocks = torch.tensor([5, 1, 7, 3, 0, 6][:-(-n // BLOCK)])
        self.cache = torch.zeros(8, KV_HEADS, BLOCK, 2 * HEAD)
        self.layer = SimpleNamespace(isa="vec")
        k_at, v_at = sets.index_cpu(self.layer, self.cache, blocks, torch.arange(n))
        sets.flat(self.cache)[k_at] = self.k.transpose(0, 1)
        sets.flat(self.cache)[v_at] = self.v.transpose(0, 1)
        self.geo = sets.Geometry(PLAIN, n - computed, computed, self.geo.spans, blocks,
                                 self.geo.token_ids, two_way)
        self.query = torch.cat([torch.zeros(PLAIN, HEADS, HEAD), self.q[computed:]])

    def recompute(self, impl, layers=1):
        """sets.recompute's rows in each of LAYERS layers of one step (the last's returned), and
        how many blocks of bias the step kept."""
        sets.STEP.begin((self.geo,))
        try:
            for _ in range(layers):
                output = torch.full_like(self.query, float("nan"))
                sets.recompute(impl, self.layer, self.query, self.cache, output, sets.index_cpu)
                self.kept = len(sets.STEP._bias)
        finally:
            sets.STEP.begin(())
        return output

    def by_who(self, output):
        start = 0 if self.geo.two_way else self.geo.spans[0][0]
        return {self.who[t]: output[PLAIN + t - self.geo.computed]
                for t in range(start, self.geo.length)}


@unittest.skipIf(torch is None, NO_TORCH)
class TestRecompute(unittest.TestCase):
    def test_blocks_give_the_whole_bias_bits(self):
        """Blocks of 4 rows (a budget of 4 rows of scores), then one block of every row: the
        bits of the replaced code run in the same blocks."""
        for name, impl in IMPLS.items():
            for two_way, computed in ((False, 0), (False, 3), (True, 0)):
                read = Read((2, 0, 1), two_way, computed)
                keys = read.geo.length
                for budget in (4 * HEADS * keys * 4, 1 << 26):
                    with mock.patch.object(set_plan, "CHUNK_BYTES", budget):
                        got = read.recompute(impl)
                        n = set_plan.chunk_rows(HEADS, keys)
                    p = set_plan.plan(read.geo)
                    bias = whole_bias(read.geo)
                    want = torch.full_like(read.query, float("nan"))
                    k_at, v_at = sets.index_cpu(read.layer, read.cache, read.geo.blocks, p.keys)
                    k, v = sets.flat(read.cache)[k_at], sets.flat(read.cache)[v_at]
                    for r in range(0, len(p.at), n):
                        at = p.at[r:r + n]
                        o = whole_attend(impl, read.query[at].transpose(0, 1), k, v,
                                         bias[r:r + n])
                        want[at] = o.transpose(0, 1)
                    case = (name, two_way, computed, n)
                    if budget < 1 << 26:
                        self.assertEqual(n, 4)
                        self.assertLess(n, len(p.at))  # several blocks
                    else:
                        self.assertGreaterEqual(n, len(p.at))  # one block
                    self.assertTrue(torch.equal(got[PLAIN:].isnan(), want[PLAIN:].isnan()))
                    self.assertTrue(torch.equal(got.nan_to_num(), want.nan_to_num()), case)

    def test_every_listing_gives_the_same_bits(self):
        """Blocks of 3 rows, their size asked with the same heads and keys in every listing
        (on this CPU a row's bits may not show where its block was cut)."""
        for name, impl in IMPLS.items():
            for two_way, computed in ((False, 0), (False, 3), (True, 0)):
                got, asked = [], []
                for order in ((0, 1, 2), (2, 0, 1), (1, 2, 0)):
                    read = Read(order, two_way, computed)
                    budget = 3 * HEADS * read.geo.length * 4
                    spy = mock.Mock(wraps=set_plan.chunk_rows)
                    with mock.patch.object(set_plan, "CHUNK_BYTES", budget), \
                            mock.patch.object(sets, "chunk_rows", spy):
                        got.append(read.by_who(read.recompute(impl)))
                    asked += spy.call_args_list
                self.assertEqual(asked, [mock.call(HEADS, read.geo.length)] * 3)
                first = got[0]
                for other in got[1:]:
                    moved = [w for w in first if not torch.equal(first[w], other[w])]
                    self.assertEqual(moved, [], (name, two_way, computed))

    def test_a_short_read_keeps_its_bias_for_the_step_a_long_one_builds_it_per_layer(self):
        """The same bits either way; kept only while the whole bias fits CHUNK_BYTES."""
        read = Read((2, 0, 1))
        budget = 4 * HEADS * read.geo.length * 4  # blocks of 4 rows
        with mock.patch.object(set_plan, "CHUNK_BYTES", budget):
            kept = read.recompute(IMPLS["plain"], layers=2)
            self.assertEqual(read.kept, 3)  # 12 rows, whole bias 12 x 17 x 4 bytes
            with mock.patch.object(sets, "CHUNK_BYTES", 12 * read.geo.length * 4 - 1):
                built = read.recompute(IMPLS["plain"], layers=2)
                self.assertEqual(read.kept, 0)
        self.assertTrue(torch.equal(kept.nan_to_num(), built.nan_to_num()))

    def test_rows_read_as_the_method_says(self):
        """Against a float64 softmax over the keys the method lets each row see."""
        for two_way in (False, True):
            read = Read((1, 0, 2), two_way)
            got = read.recompute(IMPLS["plain"])
            sees = method_sees(read.part, two_way)
            g = HEADS // KV_HEADS
            k = read.k.double().repeat_interleave(g, 1).transpose(0, 1)  # [h, n, d]
            v = read.v.double().repeat_interleave(g, 1).transpose(0, 1)
            scores = read.q.double().transpose(0, 1) @ k.transpose(1, 2) * HEAD ** -0.5
            want = torch.softmax(scores.masked_fill(~sees, float("-inf")), -1) @ v
            start = 0 if two_way else read.geo.spans[0][0]
            for t in range(start, read.geo.length):
                torch.testing.assert_close(got[PLAIN + t].double(), want[:, t], rtol=1e-5,
                                           atol=1e-5)


if __name__ == "__main__":
    unittest.main()
