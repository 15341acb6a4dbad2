"""What answers say, recomputed by hand from what vLLM gave (the replay tapes, through a real
shim: tests/support/replay_shim.py): the readout from the recorded label log-probs and the
profile's calibration (temperature, label prior; a kwargs.calibration override as
docs/configuration.md says it merges), option sets binding labels by option (any order of
the options, the same probability for each), fitting (a long state's cut reported and within
the context, BM25 keeping the sentences that match), and boxes (a generated box is the
coordinates the generation wrote, in the profile's convention; an edges box the expected band
of each edge). Nothing here is taken from the shim's own readout code.
Run: python3 -S -m unittest tests.unit.answers.test_what_answers_say
"""
import json
import math
import unittest

from tests.support.paths import FAST_PROFILE, ROOT
from tests.support.replay_engine import data_url
from tests.support.replay_shim import parity_corpus, replayed

PROFILES = json.loads((ROOT / "serve_config.json").read_text(encoding="utf-8"))["profiles"]
VISION = "idefics3-tiny"
EXACT = 12  # decimal places: the same arithmetic, up to float rounding


def by_hand(logprobs, temperature: float, prior=()) -> list[float]:
    """softmax((logprob - the position's prior) / temperature) over the labels."""
    xs = [(lp - (prior[i] if prior else 0.0)) / temperature for i, lp in enumerate(logprobs)]
    weights = [math.exp(x - max(xs)) for x in xs]
    return [w / math.fsum(weights) for w in weights]


def label_logprobs(doc: dict, ids) -> list[float]:
    """The label log-probs of a recorded read, in the order of `ids` (text or chat route)."""
    logprobs = doc["choices"][0]["logprobs"]
    top = ({e["token"]: e["logprob"] for e in logprobs["content"][0]["top_logprobs"]}
           if "content" in logprobs else logprobs["top_logprobs"][0])
    by_id = {int(k.split(":", 1)[1]): v for k, v in top.items()}
    return [by_id[i] for i in ids]


def reads(got, name: str, ids) -> list[tuple[dict, dict]]:
    """A case's recorded reads (body, reply) that asked for these label ids."""
    return [(body, doc) for _, _, body, _, doc in got.calls[name]
            if body.get("logprob_token_ids") == list(ids)]


def the_read(test, got, name: str, ids) -> tuple[dict, dict]:
    found = reads(got, name, ids)
    test.assertEqual(len(found), 1, f"{name}: one read of labels {ids}")
    return found[0]


def calibration(profile: str, request: dict) -> dict:
    """The profile's calibration with the request's kwargs.calibration on top: temperatures per
    type merged, a label_prior replacing the whole prior, noul_floor replaced."""
    cal = PROFILES[profile]["calibration"]
    asked = request.get("kwargs", {}).get("calibration", {})
    return {"temperature": {**cal["temperature"], **asked.get("temperature", {})},
            "label_prior": asked.get("label_prior", cal.get("label_prior", {})),
            "noul_floor": asked.get("noul_floor", cal.get("noul_floor", 0.0))}


def long_text() -> str:
    parity_corpus()  # bench/parity on sys.path
    from bodies import long_text as text
    return text()


def case_body(name: str) -> dict:
    return json.loads(next(c.body for c in parity_corpus().corpus(True) if c.name == name))


class TestReadout(unittest.TestCase):
    """s1_readme (the profile's calibration), s1_calibration (untempered, prior off) and
    s1_calibration_partial (one temperature, a floor, a prior of its own): a noul, a three-option
    choice read as an option set, a three-level score; the same reads in all three."""
    CASES = ("s1_readme", "s1_calibration", "s1_calibration_partial")

    @classmethod
    def setUpClass(cls):
        cls.got = replayed(FAST_PROFILE)
        labels = cls.got.facts.labels  # the label token ids the start-up guard proved
        cls.noul = [i for _, i in labels.noul]
        cls.choice3 = [i for _, i in labels.choice[:3]]
        cls.score3 = [i for _, i in labels.score[:3]]

    def expected(self, name: str, kind: str, ids) -> list[float]:
        cal = calibration(FAST_PROFILE, case_body(name))
        prior = cal["label_prior"].get(kind, {}).get(str(len(ids)), ())
        _, doc = the_read(self, self.got, name, ids)
        return by_hand(label_logprobs(doc, ids), cal["temperature"][kind], prior)

    def test_a_noul_is_p_yes_with_the_floor(self):
        for name in self.CASES:
            p_yes = self.expected(name, "noul", self.noul)[0]
            floor = calibration(FAST_PROFILE, case_body(name))["noul_floor"]
            if floor:  # the chosen side at no less than the floor
                p_yes = max(p_yes, floor) if p_yes >= 0.5 else min(p_yes, 1 - floor)
            self.assertAlmostEqual(self.got.body(name)["answers"]["refund"]["noul"], p_yes,
                                   EXACT, name)

    def test_a_set_choice_binds_its_labels_to_the_options_sorted_by_key(self):
        for name in self.CASES:
            want = self.expected(name, "choice", self.choice3)
            answer = self.got.body(name)["answers"]["team"]
            keys = sorted(case_body(name)["questions"]["team"]["criteria"])
            self.assertEqual(sorted(answer["probabilities"]), keys)
            for key, p in zip(keys, want):
                self.assertAlmostEqual(answer["probabilities"][key], p, EXACT, (name, key))
            self.assertAlmostEqual(math.fsum(answer["probabilities"].values()), 1.0, 9)
            self.assertEqual(answer["choice"], keys[want.index(max(want))])

    def test_a_score_is_its_levels_distribution_and_mean(self):
        for name in self.CASES:
            want = self.expected(name, "score", self.score3)
            answer = self.got.body(name)["answers"]["anger"]
            self.assertEqual(list(answer["probabilities"]), ["0", "1", "2"])
            for level, p in enumerate(want):
                self.assertAlmostEqual(answer["probabilities"][str(level)], p, EXACT, name)
            self.assertAlmostEqual(math.fsum(answer["probabilities"].values()), 1.0, 9)
            self.assertAlmostEqual(answer["score"], math.fsum(k * p for k, p in enumerate(want)),
                                   EXACT, name)

    def test_calibration_changes_no_read_and_moves_only_its_answers(self):
        bodies = {name: sorted(json.dumps(b, sort_keys=True)
                               for ids in (self.noul, self.choice3, self.score3)
                               for b, _ in reads(self.got, name, ids)) for name in self.CASES}
        self.assertEqual(len(bodies["s1_readme"]), 3)

        def of_kind(name, kind):
            cal = calibration(FAST_PROFILE, case_body(name))
            return (cal["temperature"][kind], cal["label_prior"].get(kind),
                    cal["noul_floor"] if kind == "noul" else None)
        for name in self.CASES[1:]:
            self.assertEqual(bodies[name], bodies["s1_readme"], name)  # the same requests
            for q, kind in (("refund", "noul"), ("team", "choice"), ("anger", "score")):
                moved = of_kind(name, kind) != of_kind("s1_readme", kind)
                check = self.assertNotEqual if moved else self.assertEqual
                check(self.got.body(name)["answers"][q],
                      self.got.body("s1_readme")["answers"][q], (name, q))


class TestOptionSets(unittest.TestCase):
    """The profile reads choices as option sets: the same options in another order get the
    same probability each (bench/parity/cases.py binding_cases)."""

    @classmethod
    def setUpClass(cls):
        cls.got = replayed(FAST_PROFILE)

    def test_systemone_choices_in_another_order(self):
        again = self.got.body("s1_options_reordered")["answers"]
        for name, q in (("s1_readme", "team"), ("s1_choice_unicode", "q.2")):
            self.assertNotEqual(list(case_body(name)["questions"][q]["criteria"]),
                                list(case_body("s1_options_reordered")["questions"][q]
                                     ["criteria"]))
            first = self.got.body(name)["answers"][q]
            self.assertEqual(again[q]["probabilities"], first["probabilities"], q)
            self.assertEqual(again[q]["choice"], first["choice"], q)

    def test_decisions_choice_in_another_order(self):
        def team(name):
            answer = next(a for a in self.got.body(name)["answers"] if a["name"] == "team")
            return {p["value"]: p["probability"] for p in answer["probabilities"]}, answer
        (first, a), (again, b) = team("dec_readme"), team("dec_options_reordered")
        self.assertEqual(list(first), [p["value"] for p in case_body("dec_readme")
                                       ["questions"][1]["choices"]])
        self.assertEqual(list(again), list(first)[::-1])  # listed in the request's order
        self.assertEqual(again, first)
        self.assertEqual(a["choice"], b["choice"])


class TestFitting(unittest.TestCase):
    """A ~46k-token text state over a 4,096-token context, fitted per question by BM25 and by
    head and tail: each cut is reported, each read fits, and the kept text is what the method
    keeps."""

    @classmethod
    def setUpClass(cls):
        cls.got = replayed(FAST_PROFILE)
        cls.context = PROFILES[FAST_PROFILE]["max_model_len"]
        cls.noul = [i for _, i in cls.got.facts.labels.noul]

    def check_cuts(self, name: str, method: str) -> None:
        doc = self.got.body(name)
        cuts = {c["question"]: c for c in doc["x_effort_used"]["state_selection"]}
        self.assertEqual(set(cuts), set(doc["answers"]))
        read_tokens = sorted(d["usage"]["prompt_tokens"] for _, _, b, _, d in self.got.calls[name]
                             if "logprob_token_ids" in b)
        self.assertEqual(sorted(c["kept_tokens"] for c in cuts.values()), read_tokens)
        for _, _, body, _, reply in self.got.calls[name]:  # every read within the context
            self.assertLessEqual(reply["usage"]["prompt_tokens"] + body["max_tokens"],
                                 self.context)
        for c in cuts.values():
            self.assertEqual(c["method"], method)
            self.assertLess(c["kept_tokens"], c["total_tokens"])
            self.assertGreater(c["total_tokens"], 10 * self.context)
        self.assertEqual(doc["usage"]["input_tokens"],
                         sum(c["total_tokens"] for c in cuts.values()))

    def broken_prompt(self, name: str) -> str:
        body, _ = the_read(self, self.got, name, self.noul)  # "Did the customer receive a
        return body["prompt"]  # broken mug?", a plain read: its prompt is text

    def test_bm25_keeps_the_sentences_that_match(self):
        self.check_cuts("s1_long_text_bm25", "bm25")
        prompt = self.broken_prompt("s1_long_text_bm25")
        # the text's four sentences about a broken mug (bodies.long_text), each in a passage
        self.assertEqual(prompt.count("the mug arrived broken"), 4)
        self.assertEqual(long_text().count("the mug arrived broken"), 4)

    def test_head_and_tail_keep_the_ends(self):
        self.check_cuts("s1_long_text_head_tail", "head_tail")
        prompt = self.broken_prompt("s1_long_text_head_tail")
        self.assertIn("Note 0: the invoice for case 1000", prompt)
        self.assertIn("Note 2199: ", prompt)
        self.assertNotIn("Note 1100: ", prompt)


class TestBoxes(unittest.TestCase):
    """The vision profile's box answers: generate mode from the generation's text (its grid,
    its order), edges mode from the four edge reads' bands."""

    @classmethod
    def setUpClass(cls):
        cls.got = replayed(VISION)
        cls.convention = PROFILES[VISION]["vision"]["box"]["convention"]
        cls.image_temperature = PROFILES[VISION]["calibration"]["temperature"]["image"]

    def boxes(self, mode: str):
        for case in self.got.cases:
            answers = self.got.body(case.name).get("answers")
            for q, a in (answers.items() if isinstance(answers, dict) else ()):
                if a.get("type") == "box" and a["x_box_mode"] == mode:
                    yield case.name, q, a

    def by_convention(self, raw):
        """(left, top, right, bottom) fractions, or None when no box is left."""
        if raw is None:
            return None
        conv = self.convention
        self.assertEqual(conv["units"], "grid")  # the profile's; other units need the size
        x0, y0, x1, y1 = raw if conv["order"] == "xyxy" else (raw[1], raw[0], raw[3], raw[2])
        clip = lambda v: min(max(v / conv["scale"], 0.0), 1.0)  # noqa: E731
        (left, right), (top, bottom) = sorted((clip(x0), clip(x1))), sorted((clip(y0), clip(y1)))
        return (left, top, right, bottom) if left < right and top < bottom else None

    def test_a_generated_box_is_what_the_generation_wrote(self):
        seen = 0
        for name, q, answer in self.boxes("generate"):
            texts = {d["choices"][0]["message"]["content"] for _, _, b, _, d in
                     self.got.calls[name] if "structured_outputs" in b}
            self.assertEqual(len(texts), 1, (name, texts))  # one box generation (a case's
            text = texts.pop()  # generate and hybrid questions ask alike)
            try:
                raw = json.loads(text)["box"]
            except ValueError:  # cut by the token cap: no box written
                raw = None
            self.assertEqual(answer["x_box_raw"], raw, (name, q, text))
            fractions = self.by_convention(raw)
            self.assertEqual(answer["found"], fractions is not None, (name, q))
            box = answer["box"]
            got = (box["left"], box["top"], box["right"], box["bottom"])
            for a, b in zip(got, fractions or (0.0, 0.0, 1.0, 1.0)):
                self.assertAlmostEqual(a, b, EXACT, (name, q))
            if fractions is None:
                self.assertEqual(answer["confidence"], 0.0)
            seen += 1
        self.assertGreaterEqual(seen, 4)

    def test_an_edges_box_is_each_edge_at_its_expected_band(self):
        levels = [i for _, i in self.got.facts.labels.score[:10]]
        seen = 0
        for name, q, answer in self.boxes("edges"):
            if len([a for a in self.got.body(name)["answers"].values()
                    if a.get("type") == "box"]) > 1:
                continue  # several boxes over one image: their edge reads are alike
            coords = {}
            for body, doc in reads(self.got, name, levels):
                text = json.dumps(body["messages"], default=data_url)
                edge = next(e for e in ("left", "top", "right", "bottom")
                            if f"Where is the {e} edge of" in text)
                p = by_hand(label_logprobs(doc, levels), self.image_temperature)
                coords[edge] = math.fsum((k + 0.5) * pk for k, pk in enumerate(p)) / len(p)
            self.assertEqual(len(coords), 4, name)
            left, right = sorted((coords["left"], coords["right"]))
            top, bottom = sorted((coords["top"], coords["bottom"]))
            box = answer["box"]
            for a, b in zip((box["left"], box["top"], box["right"], box["bottom"]),
                            (left, top, right, bottom)):
                self.assertAlmostEqual(a, b, EXACT, name)
            self.assertTrue(answer["found"])
            seen += 1
        self.assertGreaterEqual(seen, 1)


if __name__ == "__main__":
    unittest.main()
