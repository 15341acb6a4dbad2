"""tests/support/tape_compare.py: a tape recorded afresh is compared with the stored one request
for request and bit for bit; each kind of difference is named (planted here), and what vLLM
makes differ between identical calls (cached-token counts, the order of identical requests'
replies) is not one.
Run: python3 -m unittest tests.unit.test_tape_compare
"""
import copy
import tempfile
import unittest
from pathlib import Path

from tests.support.replay_engine import Tape
from tests.support.tape_compare import differences, machine

READ = {"choices": [{"logprobs": {"content": [{"top_logprobs": [
    {"token": "token_id:10539", "logprob": -0.10536051565782628},
    {"token": "token_id:5230", "logprob": -2.3025850929940455}]}]}}],
    "usage": {"prompt_tokens": 40, "prompt_tokens_details": {"cached_tokens": 0}}}


def tape() -> Tape:
    t = Tape({"profile": "p"})
    t.add("a" * 64, "POST", "/v1/completions", 200, READ)
    t.add("b" * 64, "POST", "/tokenize", 200, {"tokens": [1, 2, 3]})
    t.add("c" * 64, "POST", "/v1/completions", 200, READ)
    cached = copy.deepcopy(READ)
    cached["usage"]["prompt_tokens_details"]["cached_tokens"] = 32
    t.add("c" * 64, "POST", "/v1/completions", 200, cached)
    return t


class TestTapeCompare(unittest.TestCase):
    def test_the_same_recording_has_no_difference(self):
        fresh = tape()
        fresh.entries["c" * 64]["replies"].reverse()  # identical calls answered in another order
        fresh.entries["a" * 64]["replies"][0][1]["usage"]["prompt_tokens_details"] = {
            "cached_tokens": 16}
        stored = tape()  # a generation whose forbidden token vLLM listed in one run only
        stored.add("e" * 64, "POST", "/v1/completions", 200, {"choices": [{"logprobs": {
            "tokens": ["1"], "top_logprobs": [{"1": -1.09, "<|endoftext|>": -9999.0}]}}]})
        fresh.add("e" * 64, "POST", "/v1/completions", 200, {"choices": [{"logprobs": {
            "tokens": ["1"], "top_logprobs": [{"1": -1.09}]}}]})
        self.assertEqual(differences(stored, fresh), [])

    def test_each_difference_is_named(self):
        cases = {
            "a number one ulp off": lambda t: t.entries["a" * 64]["replies"][0][1]["choices"][0][
                "logprobs"]["content"][0]["top_logprobs"][0].update(
                    logprob=-0.10536051565782627),
            "another token": lambda t: t.entries["b" * 64]["replies"][0][1].update(
                tokens=[1, 2, 4]),
            "another status": lambda t: t.entries["b" * 64]["replies"][0].__setitem__(0, 400),
            "a call more": lambda t: t.entries["b" * 64]["replies"].append(
                [200, {"tokens": [1, 2, 3]}]),
            "a request dropped": lambda t: t.entries.pop("a" * 64),
            "a request added": lambda t: t.add("d" * 64, "POST", "/tokenize", 200, {}),
            "a top log-prob gone": lambda t: t.entries["a" * 64]["replies"][0][1]["choices"][0][
                "logprobs"]["content"][0]["top_logprobs"].pop(),
        }
        for name, plant in cases.items():
            fresh = tape()
            plant(fresh)
            found = differences(tape(), fresh)
            self.assertEqual(len(found), 1, (name, found))

    def test_the_machine_names_dtype_and_kernel_flags(self):
        with tempfile.TemporaryDirectory() as tmp:
            info = Path(tmp) / "cpuinfo"
            info.write_text("processor\t: 0\nflags\t\t: fpu sse avx2 avx512f avx512_bf16 amx_x\n")
            self.assertEqual(machine("bfloat16", str(info)),
                             {"dtype": "bfloat16", "isa": ["avx2", "avx512f", "avx512_bf16"]})


if __name__ == "__main__":
    unittest.main()
