"""What the clients' own calls get, on an in-process shim before a fake engine (stdlib): the model
list in both shapes (typesafe-sdk reads `models`, openai's client `data`; the live suite lists
models with both real clients), an unknown model naming the served ones in each route's error
shape, and a streaming request refused on /v1/decisions."""
import datetime
import unittest

from tests.support.inprocess_shim import AgainstFakeEngine, call
from tests.support.systemone_bodies import NOUL_Q, req
from tests.support.unit_profile import EMBEDDED

SERVED = ("onepass-smollm2-135m-instruct", "jev-latest")
# OpenAI's `created`: the profile's release day at 00:00 UTC, in Unix seconds
RELEASED = int(datetime.datetime.fromisoformat(EMBEDDED.release_date + "T00:00:00+00:00")
               .timestamp())
QUESTION = {"type": "predicate", "instructions": "Refund?"}


def decisions(**extra):
    return {"model": "jev-latest", "input": "I was charged twice.", "questions": [QUESTION],
            **extra}


class TestClientCalls(AgainstFakeEngine):
    def test_models_in_both_shapes(self):
        status, _, doc = call(self.server, "GET", "/v1/models")
        self.assertEqual(status, 200)
        # System One's (the contract, section 5): name, description, release_date, all strings
        self.assertEqual([m["name"] for m in doc["models"]], list(SERVED))
        for m in doc["models"]:
            self.assertEqual(set(m), {"name", "description", "release_date"})
            self.assertTrue(all(isinstance(v, str) and v for v in m.values()))
        # OpenAI's list object: what openai's client.models.list() pages through
        self.assertEqual(doc["object"], "list")
        self.assertEqual([m["id"] for m in doc["data"]], list(SERVED))
        for m in doc["data"]:
            self.assertEqual((set(m), m["object"], m["owned_by"]),
                             ({"id", "object", "created", "owned_by"}, "model", "onepass"))
            self.assertEqual(m["created"], RELEASED)

    def test_unknown_model_names_the_served_ones(self):
        status, _, doc = call(self.server, body=req({"a": NOUL_Q}, model="smollm2"))
        message = doc["detail"]["message"]
        self.assertEqual((status, doc["detail"]["error_type"]), (404, "not_found"))
        self.assertTrue(message.startswith("Unknown model: smollm2;"), message)
        for name in (*SERVED, "/v1/models"):
            self.assertIn(name, message)
        status, _, doc = call(self.server, path="/v1/decisions", body=decisions(model="smollm2"))
        err = doc["error"]
        self.assertEqual((status, err["type"], err["param"], err["code"]),
                         (404, "invalid_request_error", "model", "model_not_found"))
        self.assertTrue(err["message"].startswith("Unknown model: smollm2;"), err["message"])
        for name in (*SERVED, "/v1/models"):
            self.assertIn(name, err["message"])

    def test_unknown_model_name_is_cut(self):
        status, _, doc = call(self.server, body=req({"a": NOUL_Q}, model="m" * 5000))
        self.assertEqual(status, 404)
        self.assertLess(len(doc["detail"]["message"]), 300)

    def test_stream_refused_on_decisions(self):
        """No answer is streamed: `stream: true` is a 400 naming the parameter (openai raises
        BadRequestError with .param "stream"); false or null is the ordinary request."""
        status, _, doc = call(self.server, path="/v1/decisions", body=decisions(stream=True))
        err = doc["error"]
        self.assertEqual((status, err["type"], err["param"], err["code"]),
                         (400, "invalid_request_error", "stream", None))
        self.assertIn("streaming is not supported", err["message"])
        status, _, doc = call(self.server, path="/v1/decisions", body=decisions(stream="yes"))
        self.assertEqual((status, doc["error"]["param"]), (400, "stream"))
        for value in (False, None):
            status, _, doc = call(self.server, path="/v1/decisions", body=decisions(stream=value))
            self.assertEqual(status, 200, doc)


if __name__ == "__main__":
    unittest.main()
