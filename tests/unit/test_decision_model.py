"""Stdlib-only tests of the internal decision model (onepass/decision.py): the one compact JSON
rendering, text-valued fields, the attention-mode names, and the frozen records' defaults.
Run: python3 -S -m unittest tests.unit.test_decision_model
"""
import dataclasses
import unittest

from onepass import decision_model as decision
from onepass.decision_model import (CAUSAL, TWO_WAY, Answer, Decision, Option, Outcome, Question,
                                    Read, ReadResult)


class TestText(unittest.TestCase):
    def test_compact_json_keeps_unicode_and_drops_spaces(self):
        """compact_json: no spaces after separators, non-ASCII as itself, key order kept."""
        self.assertEqual(decision.compact_json({"z": "Ü 🎯", "a": [1, 2.5, None, True]}),
                         '{"z":"Ü 🎯","a":[1,2.5,null,true]}')

    def test_as_text_keeps_strings_and_renders_the_rest(self):
        """as_text: a string as sent (even JSON-looking); any other value as compact JSON."""
        self.assertEqual(decision.as_text(' {"a": 1} '), ' {"a": 1} ')
        self.assertEqual(decision.as_text(["a", {"b": 1}]), '["a",{"b":1}]')
        self.assertEqual(decision.as_text(3), "3")
        self.assertEqual(decision.as_text(None), "null")

    def test_mode_names(self):
        """MODE_NAMES: the clients' names map to the two internal modes, and only those."""
        self.assertEqual(decision.MODE_NAMES, {"causal": CAUSAL, "one-way": CAUSAL,
                                               "bidirectional": TWO_WAY, "two-way": TWO_WAY})


class TestRecords(unittest.TestCase):
    def test_a_decision_defaults_to_causal_with_nothing_resolved(self):
        """Decision: causal, no layout, calibration, images or reasoning unless given."""
        d = Decision("m", "s", ())
        self.assertEqual((d.attention_mode, d.layout, d.calibration, d.images, d.reasoning),
                         (CAUSAL, None, None, (), None))

    def test_records_are_frozen(self):
        """Every record of the model is immutable: assigning a field raises."""
        records = (Option("k", None), Question("noul", None, ()), Decision("m", "s", ()),
                   Read("p", (1,), (0,)), ReadResult((0.0,), 1),
                   Answer("noul", (1.0,), 1.0, 0, 1.0), Outcome((), 0, CAUSAL))
        for record in records:
            field = dataclasses.fields(record)[0].name
            with self.assertRaises(dataclasses.FrozenInstanceError, msg=type(record).__name__):
                setattr(record, field, None)

    def test_questions_and_answers_hold_no_kinds_fields(self):
        """Question and Answer carry what every kind has, and one field each for the kind's
        own data (params, payload: a box's mode, a number's text live in kinds/), None unless
        the kind sets it; the model names no kind's record (a box is kinds/box_geometry.py's)."""
        self.assertEqual([f.name for f in dataclasses.fields(Question)],
                         ["kind", "instructions", "options", "params", "assistant"])
        self.assertEqual([f.name for f in dataclasses.fields(Answer)],
                         ["kind", "probabilities", "confidence", "best", "payload"])
        self.assertIsNone(Question("noul", None, ()).params)
        self.assertIsNone(Answer("choice", (1.0,), 1.0, 0).payload)
        self.assertFalse(hasattr(decision, "Box"))

    def test_read_and_outcome_defaults(self):
        """Read: question 0, causal, nothing cut or shared; Outcome: no re-read, no output."""
        r = Read("p", (1, 2), (0, 1))
        self.assertEqual((r.order_of_label, r.question, r.attention_mode, r.whole_tokens,
                          r.chat, r.images, r.head_chars, r.assistant),
                         ((), 0, CAUSAL, 0, (), (), 0, ""))
        o = Outcome((), 5, TWO_WAY)
        self.assertEqual((o.num_cached_tokens, o.images, o.output_tokens, o.reasoning_tokens),
                         (0, 0, 0, 0))
        e = o.effort
        self.assertEqual((e.rereads, e.reread_below, e.selections, e.listed, e.reasoning),
                         (0, 0.0, (), (), None))


if __name__ == "__main__":
    unittest.main()
