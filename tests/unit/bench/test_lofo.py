"""Stdlib-only tests of the transfer judge (bench/lib/lofo.py, bench/measure/transfer.py) on
reads made here, in bench/measure/transfer_reads.py's format: the 16 families, a held-out
family's fit never sees it, shrinking stays between 1 and the fitted temperature, the ECE
floor of a calibrated read, flips under random permutations (a read that only averages an order
with its reverse does not pass), every cyclic shift averaged is order-free, the family
bootstrap.
Run: python3 -S -m unittest tests.unit.bench.test_lofo
"""
import contextlib
import gzip
import io
import json
import math
import random
import sys
import tempfile
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path[:0] = [str(ROOT / "bench" / d) for d in ("lib", "measure", "data")]
import lofo  # noqa: E402
import transfer  # noqa: E402
import transfer_reads  # noqa: E402

KEYS = ("a", "b", "c", "d")


def softmax(x):
    return lofo.softmax(x)


def choice_item(fam: str, i: int, score, position_bias, rng, perms=3, reversals=False):
    """A 4-option choice whose read is softmax(score[key] + position_bias[position]), listed
    and content-free (the content-free read sees only the position bias); with reversals,
    every order read is also read reversed."""
    gold = max(KEYS, key=lambda k: score[k])
    drawn, orders = transfer_reads.orders_for(KEYS, perms, f"{fam}{i}")
    if reversals:
        orders += [o[::-1] for o in orders if o[::-1] not in orders]
    reads = {"listing": {}, "listing_cf": {}, "sets": {}, "sets_cf": {}}

    def listed(order, with_content):
        return softmax([(score[k] if with_content else 0.0) + position_bias[j]
                        for j, k in enumerate(order)])
    reads["listing"]["q"] = listed(KEYS, True)
    reads["listing_cf"]["q"] = listed(KEYS, False)
    for j, order in enumerate(orders):
        reads["listing"][f"q~{j}"] = listed(order, True)
        reads["listing_cf"][f"q~{j}"] = listed(order, False)
    for name in ("sets", "sets_cf"):  # a set read: in key order whatever the listing
        p = softmax([score[k] if name == "sets" else 0.0 for k in KEYS])
        reads[name]["q"] = p
        for j in range(perms):
            reads[name][f"q~p{j}"] = p
    return {"family": fam, "task": fam, "id": f"{fam}:{i}", "gold": {"q": gold},
            "questions": {"q": {"kind": "choice", "keys": list(KEYS),
                                "perms": [list(p) for p in drawn],
                                "orders": [list(o) for o in orders]}},
            "reads": reads, "cost": {}}


def noul_item(fam, i, p_yes, gold):
    p = [p_yes, 1 - p_yes]
    return {"family": fam, "task": fam, "id": f"{fam}:n{i}", "gold": {"y": gold},
            "questions": {"y": {"kind": "noul", "keys": None, "n": 2}},
            "reads": {"listing": {"y": p}, "listing_cf": {"y": [0.5, 0.5]}}, "cost": {}}


def doc(items):
    return {"items": items, "perms": 3, "model": "test"}


def biased_items(bias=(2.0, 0.0, 0.0, 0.0), families=4, per=12, seed=1, reversals=False):
    rng = random.Random(seed)
    items = []
    for f in range(families):
        for i in range(per):
            score = {k: rng.gauss(0, 1.0) for k in KEYS}
            items.append(choice_item(f"fam{f}", i, score, bias, rng, reversals=reversals))
    return items


class Families(unittest.TestCase):
    def test_cause_and_effect_is_one_family_and_pick_takes_its_variants_in_turn(self):
        self.assertEqual(lofo.family("bigbench/cause_and_effect/one_sentence"),
                         "bigbench/cause_and_effect")
        self.assertEqual(lofo.family("support_tickets"), "support_tickets")
        items = [{"task": f"bigbench/cause_and_effect/{v}", "n": i}
                 for v in ("x", "y") for i in range(3)] + [{"task": "t", "n": i}
                                                          for i in range(5)]
        picked = lofo.pick(items, 3)
        self.assertEqual([(i["task"][-1], i["n"]) for i in picked[:3]],
                         [("x", 0), ("y", 0), ("x", 1)])
        self.assertEqual(len(picked), 6)

    def test_the_dev_data_has_sixteen_families(self):
        import devdata
        try:
            items = devdata.load()
        except FileNotFoundError:
            self.skipTest("../shared/data/dev is not beside this checkout")
        self.assertEqual(len({lofo.family(i["task"]) for i in items}), 16)


class Orders(unittest.TestCase):
    def test_every_order_read_is_the_cyclic_shifts_of_the_listing_and_the_permutations(self):
        drawn, every = transfer_reads.orders_for(KEYS, 3, "s")
        self.assertEqual(every[:4], lofo.shifts(KEYS))
        for p in drawn:
            self.assertEqual(sorted(p), list(KEYS))
            for s in lofo.shifts(p):
                self.assertIn(s, every)
        self.assertEqual(len(every), len(set(every)))


class Judge(unittest.TestCase):
    def setUp(self):
        self.qs = lofo.questions(doc(biased_items()))

    def test_a_position_biased_listing_flips_and_every_cyclic_shift_does_not(self):
        listing = lofo.judge(lofo.single("listing"), self.qs, "raw")
        cyclic = lofo.judge(lofo.cyclic(), self.qs, "raw")
        self.assertGreater(lofo.flip(listing), 0.2)
        self.assertEqual(lofo.flip(cyclic), 0.0)  # the bias adds the same to every option
        self.assertGreater(lofo.measures(cyclic)["accuracy"],
                           lofo.measures(listing)["accuracy"])

    def test_a_read_of_an_order_and_its_reverse_does_not_pass_by_construction(self):
        def both_ways(q, order, t, fit):
            rows = [q.read("listing", order), q.read("listing", tuple(reversed(order)))]
            return lofo.softmax([math.fsum(c) / len(rows) for c in zip(*rows)], t)
        bias = (2.0, 1.0, 0.0, 0.0)  # not symmetric: the reverse does not undo it
        qs = lofo.questions(doc(biased_items(bias, reversals=True)))
        self.assertEqual(lofo.flip(lofo.judge(both_ways, qs, "raw")[:0]), None)
        both = lofo.judge(both_ways, qs, "raw")
        self.assertGreater(lofo.flip(both), 0.1)
        self.assertEqual([r["flips"][0] for r in both if r["probabilities"]][:0], [])

    def test_content_free_reads_remove_the_position_bias(self):
        cf = lofo.judge(lofo.single("listing", cf=True), self.qs, "raw")
        self.assertEqual(lofo.flip(cf), 0.0)
        self.assertEqual(lofo.measures(cf)["accuracy"], 1.0)

    def test_a_held_out_family_is_answered_by_a_fit_that_never_saw_it(self):
        rng = random.Random(3)
        items = []
        for f in range(4):  # families 0-2 are under-confident; family 3 is sharp already
            for i in range(30):
                gold = rng.random() < 0.5
                strength = 0.6 if f < 3 else 0.99
                p = strength if gold else 1 - strength
                items.append(noul_item(f"fam{f}", i, p, gold))
        qs = lofo.questions(doc(items))
        records = lofo.judge(lofo.single("listing"), qs, "fitted")
        t_held = {r["task"]: r["t"] for r in records}
        only_others = lofo.fit(lofo.single("listing"), [q for q in qs if q.family != "fam3"],
                               "fitted", False)["t"]["noul"]
        self.assertAlmostEqual(t_held["fam3"], only_others, places=6)
        self.assertLess(t_held["fam3"], 0.5)  # sharpened by the families it saw
        shrunk = lofo.fit(lofo.single("listing"), [q for q in qs if q.family != "fam3"],
                          "shrunk", False)["t"]["noul"]
        self.assertTrue(only_others < shrunk < 1.0, (only_others, shrunk))


class Measures(unittest.TestCase):
    def test_a_calibrated_read_shows_about_its_floor(self):
        rng = random.Random(5)
        recs = []
        for i in range(400):
            c = rng.uniform(0.5, 1.0)
            right = rng.random() < c
            probs = {"a": c, "b": 1 - c}
            recs.append({"task": f"f{i % 8}", "id": str(i), "qid": "q", "kind": "noul",
                         "probabilities": probs, "top_key": "a",
                         "gold_key": "a" if right else "b", "flips": []})
        floor = lofo.ece_floor(recs)
        self.assertGreater(floor, 0.0)
        self.assertLess(abs(lofo.metrics.ece(recs) - floor), 3 * floor)
        self.assertLess(lofo.ece_floor(recs * 4), floor)  # more questions, a lower floor
        lo, hi = lofo.intervals(recs, 50)["accuracy"]
        self.assertLessEqual(lo, lofo.measures(recs)["accuracy"])
        self.assertGreaterEqual(hi, lofo.measures(recs)["accuracy"])


class Table(unittest.TestCase):
    def test_the_table_has_a_row_per_candidate_and_the_paired_lines(self):
        items = biased_items(families=3, per=10)
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "reads.json.gz"
            with gzip.open(path, "wt") as f:
                json.dump(doc(items), f)
            config = {"default_profile": "p", "profiles": {"p": {"calibration": {
                "temperature": {"noul": 1.0, "choice": 1.0, "score": 1.0},
                "label_prior": {"choice": {"4": [0.0, -1.0, -1.0, -1.0]}}}}}}
            (Path(tmp) / "c.json").write_text(json.dumps(config))
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                transfer.main([str(path), "--config", str(Path(tmp) / "c.json"),
                               "--resamples", "20", "--only", "cyclic (log mean), raw",
                               "listing, raw", "--against", "listing, raw"])
        text = out.getvalue()
        self.assertIn("| today: listing | prior + T |", text)
        self.assertIn("| cyclic (log mean) | raw |", text)
        self.assertIn("cyclic (log mean), raw minus today: accuracy", text)
        self.assertIn("cyclic (log mean), raw minus listing, raw: accuracy", text)
        # every cyclic shift read: the biased listing's flips are gone
        row = next(line for line in text.splitlines() if line.startswith("| cyclic"))
        self.assertIn("| 0.000 [0.000, 0.000] |", row)


if __name__ == "__main__":
    unittest.main()
