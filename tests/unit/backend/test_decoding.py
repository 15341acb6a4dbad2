"""Stdlib-only tests of the constrained generation client (no vLLM: a stubbed `call`): the body a
box generation sends, reading its text and token log-probs, and the structured-outputs probe's
verdicts (schema kept, refused, ignored, cut, engine down), the probe the registry's kinds give.
Run: python3 -S -m unittest tests.unit.backend.test_decoding
"""
import types
import unittest

from onepass import kinds
from onepass.backend import decoding
from onepass.backend.engine import Engine
from onepass.errors import EngineFailed, EngineUnavailable
from onepass.decision_model import Read
from onepass.kinds import box
from onepass.kinds.base import Probe

SETTINGS = types.SimpleNamespace(box_max_tokens=48, number_max_tokens=24)


def engine_answering(status, doc, seen=None):
    engine = Engine("http://127.0.0.1:9", "served", timeout_s=1, num_connections=1,
                    image_slot="<image>")

    def call(method, path, body=None):
        if seen is not None:
            seen.append((path, body))
        return status, doc
    engine.call = call
    return engine


def completion(text, finish="stop"):
    return {"choices": [{"text": text, "finish_reason": finish,
                         "logprobs": {"tokens": [text], "token_logprobs": [-0.5]}}]}


class TestBoxGeneration(unittest.TestCase):
    def test_the_body_and_its_reading(self):
        """decoding.generate: greedy, log-probs on, the schema under structured_outputs.json
        on the chat route; the answer's text, (token, log-prob) pairs and prompt count come
        back; an answer without its choice or its usage is vLLM's failure (502)."""
        seen, schema = [], box.schema(1000)
        content = [{"token": '{"box":[', "logprob": 0.0}, {"token": "12", "logprob": -0.25},
                   {"token": "]}", "logprob": -0.01}]
        doc = {"choices": [{"message": {"content": '{"box":[12]}'}, "finish_reason": "stop",
                            "logprobs": {"content": content}}], "usage": {"prompt_tokens": 90}}
        engine = engine_answering(200, doc, seen)
        read = Read("PROMPT", (), (), chat=("sys", "look: <image>"), images=("data:x",))
        text, tokens, cut, prompt_tokens = decoding.generate(engine, read, {"json": schema}, 40)
        (path, sent), = seen
        self.assertEqual(path, "/v1/chat/completions")
        self.assertEqual((sent["model"], sent["temperature"], sent["max_tokens"], sent["logprobs"]),
                         ("served", 0.0, 40, True))
        self.assertEqual(sent["structured_outputs"], {"json": schema})
        self.assertEqual((text, tokens, cut), ('{"box":[12]}', [('{"box":[', 0.0), ("12", -0.25),
                                                                ("]}", -0.01)], False))
        self.assertEqual(prompt_tokens, 90)
        with self.assertRaises(EngineFailed):
            decoding.generate(engine_answering(200, {"choices": []}), read, {"json": schema}, 40)
        with self.assertRaises(EngineFailed):
            decoding.generate(engine_answering(200, {**doc, "usage": {}}), read,
                                {"json": schema}, 40)
        engine.close()

    def test_the_text_route_and_a_continued_answer_turn(self):
        """decoding.body: a read without images continues its prompt on /v1/completions
        (no special tokens added, the sampled tokens' log-probs); with images and an answer
        turn already started (a thought), the chat route continues that assistant message;
        stop strings and no constraint for a thought."""
        engine = engine_answering(200, {})
        route, sent = decoding.body(engine, Read("PROMPT<think>", (), (), assistant="<think>"),
                                      None, 30, ("</think>",))
        self.assertEqual(route, "/v1/completions")
        self.assertEqual((sent["prompt"], sent["logprobs"], sent["add_special_tokens"],
                          sent["stop"]), ("PROMPT<think>", 1, False, ["</think>"]))
        self.assertNotIn("structured_outputs", sent)
        read = Read("P", (), (), chat=("sys", "see <image>"), images=("data:x",),
                    assistant="Let me think.\n")
        route, sent = decoding.body(engine, read, {"regex": "[0-9]+"}, 8)
        self.assertEqual(route, "/v1/chat/completions")
        self.assertEqual(sent["messages"][-1], {"role": "assistant", "content": "Let me think.\n"})
        self.assertEqual((sent["continue_final_message"], sent["add_generation_prompt"],
                          sent["structured_outputs"]), (True, False, {"regex": "[0-9]+"}))
        engine.close()


class TestProbe(unittest.TestCase):
    def test_verdicts(self):
        """decoding.structured_outputs_live with the registry's probe (box's schema): a box
        or null in the schema is live; a refusal, free text, numbers out of range or a cut
        generation are not; vLLM down raises."""
        probe = kinds.probe(SETTINGS)
        for status, doc, live in (
                (200, completion('{"box":[1,2,300,400]}'), True),
                (200, completion('{"box":null}'), True),
                (400, {"error": {"message": "structured outputs are not supported"}}, False),
                (200, completion("The object is on the left."), False),
                (200, completion('{"box":[1,2,3,4000]}'), False),
                (200, completion('{"box":[1,2,3,4.5]}'), False),
                (200, completion('{"box":[1,2,3,4],"confidence":1}'), False),
                (200, completion('{"box":[1,2,3,4]}', finish="length"), False)):
            seen = []
            got, why = decoding.structured_outputs_live(engine_answering(status, doc, seen),
                                                          probe)
            self.assertEqual(got, live, doc)
            self.assertEqual(bool(why), not live)
            self.assertEqual(seen[0][1]["structured_outputs"]["json"], box.schema(1000))
            self.assertEqual(seen[0][1]["max_tokens"], 48)
        with self.assertRaises(EngineUnavailable):
            decoding.structured_outputs_live(engine_answering(503, {"error": {"message": "x"}}),
                                               probe)

    def test_any_kinds_probe_and_none(self):
        """structured_outputs_live sends a probe's prompt and constraint and names it when the
        text disobeys; structured_engine asks the registry, and passes without a kind that
        generates."""
        probe = Probe("Count: ", {"regex": "[0-9]+"}, 5, str.isdigit, "the digits pattern")
        seen = []
        got, why = decoding.structured_outputs_live(
            engine_answering(200, completion("twelve"), seen), probe)
        self.assertFalse(got)
        self.assertIn("under the digits pattern gave 'twelve'", why)
        self.assertEqual((seen[0][1]["prompt"], seen[0][1]["structured_outputs"]),
                         ("Count: ", {"regex": "[0-9]+"}))
        self.assertEqual(decoding.structured_engine(
            engine_answering(200, completion('{"box":[1,2,3,4]}')), SETTINGS), "")
        saved = dict(kinds.KINDS)
        self.addCleanup(kinds.KINDS.update, saved)
        for name in ("box", "number"):  # no kind left that generates: nothing to check
            del kinds.KINDS[name]
        self.assertEqual(decoding.structured_engine(
            engine_answering(200, completion("free text")), SETTINGS), "")


if __name__ == "__main__":
    unittest.main()
