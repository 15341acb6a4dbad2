"""The parity corpus replayed from its tapes (tests/fixtures/replay/, recorded on a live vLLM by
bench/parity/record.sh): a real shim in this process, its engine answering from the tape, gives
every recorded answer byte for byte (corpus.py compare's normalisation) and sends no request the
tape lacks. A change to what the shim sends to vLLM misses the tape: re-record then.
Run: python3 -S -m unittest tests.unit.answers.test_replay
"""
import unittest

from tests.support.replay_engine import RECORD_COMMAND
from tests.support.replay_shim import parity_corpus, replayed


class Replay:
    profile = ""

    def test_the_corpus_is_the_one_recorded(self):
        got = replayed(self.profile)
        self.assertEqual(parity_corpus().corpus_sha(got.cases), got.tape.meta["corpus_sha256"],
                         f"bench/parity's corpus changed since {self.profile}'s tape was "
                         f"recorded; re-record: {RECORD_COMMAND}")

    def test_every_answer_is_the_recorded_one(self):
        got = replayed(self.profile)
        self.assertEqual(got.engine.misses, [], "the shim sent requests the tape lacks "
                         f"(method, path, key); re-record: {RECORD_COMMAND}")
        verdicts = parity_corpus().judge(got.recorded, got.answers, "the recording",
                                         "the replay")
        self.assertEqual([f"{name}: {found}" for name, found in verdicts if found], [],
                         f"answers differ from {self.profile}'s recording")
        self.assertEqual(len(verdicts), got.tape.meta["cases"])


class TestTextProfile(Replay, unittest.TestCase):
    profile = "smollm2-135m-fast"


class TestVisionProfile(Replay, unittest.TestCase):
    profile = "idefics3-tiny"


class TestShippedDefault(Replay, unittest.TestCase):
    profile = "qwen2.5-coder-1.5b"


if __name__ == "__main__":
    unittest.main()
