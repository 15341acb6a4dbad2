"""A replay tape stands for what it was recorded against, and says so when it does not: its
fingerprint (tests/support/tape_fingerprint.py) is this checkout's, one changed byte of engine/
changes it and a replay of a tape with another fingerprint is refused naming what changed; a
request the tape lacks and a call past its recorded replies are misses that name themselves,
over HTTP too (a 502 whose message is the miss).
Run: python3 -S -m unittest tests.unit.answers.test_tape_checks
"""
import copy
import shutil
import tempfile
import unittest
from pathlib import Path

from tests.support import tape_fingerprint
from tests.support.inprocess_shim import stop_shim
from tests.support.paths import FAST_PROFILE, ROOT
from tests.support.replay_engine import FIXTURES, RECORD_COMMAND, Tape, key, tape_path
from tests.support.replay_shim import StaleTape, parity_corpus, replay, replayed, url


def edited(drop_key: str | None = None, shorten_key: str | None = None) -> Tape:
    """The fast profile's tape with one request's entry dropped, or one reply of a request
    called several times dropped."""
    tape = Tape.load(tape_path(FIXTURES, FAST_PROFILE))
    entries = copy.deepcopy(tape.entries)
    entries.pop(drop_key, None)
    if shorten_key is not None:
        entries[shorten_key]["replies"].pop()
    return Tape(tape.meta, entries, "(edited)")


def served_keys(case_name: str) -> list[str]:
    """The tape keys of a corpus case's reads and generations, as the full replay sent them."""
    return [key(m, p, b) for m, p, b, _, _ in replayed(FAST_PROFILE).calls[case_name]]


def post_case(tape: Tape, names: set) -> tuple[list, list]:
    """The named corpus cases, in corpus order, through a shim replaying `tape`: ([(name,
    status, body)], the engine's misses)."""
    corpus = parity_corpus()
    server = replay(tape)
    try:
        got = [(c.name, *corpus.post(url(server), c, 60)[::2])
               for c in corpus.corpus(False) if c.name in names]
        return got, server.service.engine.misses
    finally:
        stop_shim(server)


class TestFingerprint(unittest.TestCase):
    def test_each_tape_stands_for_this_checkout(self):
        for profile in (FAST_PROFILE, "idefics3-tiny", "qwen2.5-coder-1.5b"):
            meta = Tape.load(tape_path(FIXTURES, profile)).meta
            self.assertEqual(tape_fingerprint.changes(meta.get("fingerprint"), profile), [],
                             f"{profile}'s tape was recorded for another checkout; re-record: "
                             f"{RECORD_COMMAND} --profile {profile}")

    def test_one_byte_of_the_engine_changes_its_digest(self):
        with tempfile.TemporaryDirectory() as tmp:
            shutil.copytree(ROOT / "engine", Path(tmp) / "engine")
            before = tape_fingerprint.tree("engine", Path(tmp))
            rules = Path(tmp) / "engine" / "onepass_engine" / "rules.py"
            data = bytearray(rules.read_bytes())
            data[-1] ^= 1
            rules.write_bytes(bytes(data))
            self.assertNotEqual(tape_fingerprint.tree("engine", Path(tmp)), before)
        self.assertEqual(before, tape_fingerprint.tree("engine"))

    def test_a_tape_for_another_engine_is_refused_naming_it(self):
        tape = edited()
        tape.meta = dict(tape.meta, fingerprint=dict(tape.meta.get("fingerprint") or {},
                                                     engine="0" * 64))
        with self.assertRaises(StaleTape) as caught:
            replay(tape)
        self.assertIn("engine: the tape's " + "0" * 64, str(caught.exception))
        self.assertIn(RECORD_COMMAND, str(caught.exception))


class TestMisses(unittest.TestCase):
    def test_a_dropped_reply_is_a_miss_named_over_http(self):
        case = next(c.name for c in parity_corpus().corpus(False)
                    if replayed(FAST_PROFILE).calls.get(c.name))
        dropped = served_keys(case)[-1]
        got, misses = post_case(edited(drop_key=dropped), {case})
        (name, status, body), = got
        self.assertEqual(status, 502, body)
        self.assertIn(f"key {dropped}", body.decode())
        self.assertIn("did not send when the tape was recorded", body.decode())
        self.assertEqual([k for _, _, k in misses], [dropped])

    def test_a_call_past_its_recorded_replies_fails_on_the_repeat(self):
        full = replayed(FAST_PROFILE)
        twice = {k for k, n in full.tape.served.items()
                 if n >= 2 and len(full.tape.entries[k]["replies"]) == n}
        cases = {name for name, calls in full.calls.items()
                 if any(key(m, p, b) in twice for m, p, b, _, _ in calls)}
        self.assertTrue(cases, "the corpus calls no read twice: nothing to shorten")
        shortened = next(k for name in sorted(cases) for k in served_keys(name) if k in twice)
        _, misses = post_case(edited(shorten_key=shortened), set(full.calls))
        self.assertIn(shortened, [k for _, _, k in misses])


if __name__ == "__main__":
    unittest.main()
