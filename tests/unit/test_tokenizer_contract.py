"""The tokenizer contract's floor (onepass/tokenizer_contract.py): the fewest tokens a text can be,
from its bytes after the tokenizer's normal form; the shipped contracts' figures; a contract
written before the floor's fields has none; a malformed floor is refused naming the fields.
Whether a floor holds for the served tokenizer is checked live (tests/live/
test_tokenizer_info_live.py, test_default_model_live.py).
Run: python3 -S -m unittest tests.unit.test_tokenizer_contract
"""
import json
import tempfile
import unittest
from pathlib import Path

from onepass.tokenizer_contract import Floor, read

ROOT = Path(__file__).resolve().parents[2]


class TestFloor(unittest.TestCase):
    def test_bytes_after_the_normal_form(self):
        """NFC composes e + U+0301 (3 bytes) into é (2): the floor counts the composed bytes,
        the bytes the tokenizer sees."""
        self.assertEqual(Floor(4, 4, "NFC").tokens("e\u0301" * 4), 2)
        self.assertEqual(Floor(4, 4, None).tokens("e\u0301" * 4), 3)
        self.assertEqual(Floor(128, 42, None).tokens(" " * 129), 2)
        self.assertEqual(Floor(128, 42, None).tokens(""), 0)

    def test_letters_and_digits_pay_at_the_shorter_length(self):
        """84 letters need two tokens of at most 42 bytes each, which then cover no more than
        those 84 bytes: 44 spaces beside them need one more token of at most 128."""
        floor = Floor(128, 42, None)
        self.assertEqual(floor.tokens("a" * 84), 2)
        self.assertEqual(floor.tokens("a" * 84 + " " * 44), 3)
        self.assertEqual(floor.tokens("a" * 40 + " " * 44), 2)  # one of 42, one of the rest
        # 6 letters and digits of every 9 bytes: 143 tokens cover them (6,006 bytes at most),
        # the other 2,994 bytes need 24 more
        self.assertEqual(floor.tokens("Item 1 2." * 1000), 143 + 24)

    def test_the_shipped_contracts(self):
        """The contracts written from a tokenizer at hand carry a floor; the ones written
        before the fields (their models not on this machine) carry none."""
        got = {p.name: read(f"tokenizer/{p.name}", ROOT)[1]
               for p in sorted((ROOT / "tokenizer").glob("*.json"))}
        self.assertEqual(got["qwen2.5-coder-1.5b-instruct.json"], Floor(128, 42, "NFC"))
        self.assertEqual(got["smollm2-135m-instruct.json"], Floor(81, 25, None))
        self.assertEqual(got["idefics3.json"], Floor(81, 25, None))
        self.assertIsNone(got["gemma-3-270m.json"])
        self.assertEqual(read(None, ROOT), ((), None))

    def test_a_malformed_floor_is_refused(self):
        base = json.loads((ROOT / "tokenizer" / "smollm2-135m-instruct.json").read_text())
        with tempfile.TemporaryDirectory() as d:
            for bad in ({"max_token_bytes": 0, "max_alnum_token_bytes": 0},
                        {"max_token_bytes": "81", "max_alnum_token_bytes": 25},
                        {"max_token_bytes": 81, "max_alnum_token_bytes": None},
                        {"max_token_bytes": 20, "max_alnum_token_bytes": 25},
                        {"max_token_bytes": 81, "max_alnum_token_bytes": 25,
                         "normalizer": "Lowercase"}):
                (Path(d) / "c.json").write_text(json.dumps({**base, **bad}))
                with self.assertRaisesRegex(ValueError, "max_alnum_token_bytes must be"):
                    read("c.json", Path(d))


if __name__ == "__main__":
    unittest.main()
