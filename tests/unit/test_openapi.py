"""Stdlib-only tests of GET /openapi.json's document (onepass/openapi/): the limits it states
are this server's settings, each decision route lists the statuses it answers in its own error
shape, HEAD mirrors every GET without a body, and operation ids are unique. That every route is
documented is tested in tests/unit/test_server.py (test_openapi_document).
Run: python3 -S -m unittest tests.unit.test_openapi
"""
import unittest

from onepass import config, openapi
from onepass.openapi import schemas

SETTINGS = config.load(["--port", "0", "--max-questions", "7", "--max-reads", "9",
                        "--max-body-bytes", "1234"], environ={})
DOC = openapi.document(SETTINGS)
PATHS = DOC["paths"]


def request_schema(path):
    return PATHS[path]["post"]["requestBody"]["content"]["application/json"]["schema"]


class TestDocument(unittest.TestCase):
    def test_the_limits_are_this_servers(self):
        """document: 7 questions on both routes, 9 calls and 1234 bytes in the description."""
        self.assertEqual(request_schema("/v1/systemone")["properties"]["questions"]
                         ["maxProperties"], 7)
        self.assertEqual(request_schema("/v1/decisions")["properties"]["questions"]["maxItems"],
                         7)
        description = DOC["info"]["description"]
        for said in ("7 questions per request", "9 calls of the model", "1234 bytes per body"):
            self.assertIn(said, description)

    def test_each_decision_route_lists_its_statuses_in_its_shape(self):
        """System One: 422 (validation shape); Decisions: none, errors in OpenAI's. Both: 401
        for a missing or wrong key with its WWW-Authenticate challenge, 403 for a caller that is
        not local with auth off."""
        one = PATHS["/v1/systemone"]["post"]["responses"]
        dec = PATHS["/v1/decisions"]["post"]["responses"]
        self.assertEqual(set(one) - set(dec), {"422"})
        for route in (one, dec, PATHS["/v1/models"]["get"]["responses"]):
            self.assertIn("WWW-Authenticate", route["401"]["headers"])
            self.assertIn("not local", route["403"]["description"])
        self.assertEqual(set(dec) - set(one), set())
        json = "application/json"
        self.assertIs(one["422"]["content"][json]["schema"], schemas.VALIDATION)
        self.assertIs(one["404"]["content"][json]["schema"], schemas.DETAIL)
        self.assertIs(dec["400"]["content"][json]["schema"], schemas.OPENAI_ERROR)

    def test_retry_after_only_where_a_retry_helps(self):
        """responses: retry-after-ms on 503 and 529, on no other decision status."""
        for path in ("/v1/systemone", "/v1/decisions"):
            for status, answer in PATHS[path]["post"]["responses"].items():
                self.assertEqual("retry-after-ms" in answer["headers"],
                                 status in ("503", "529"), (path, status))

    def test_head_mirrors_every_get_without_a_body(self):
        """paths: each GET has a HEAD with the same statuses, no content, the same security."""
        gets = [p for p, item in PATHS.items() if "get" in item]
        self.assertEqual(len(gets), 13)  # 4 + the try-it page's 9 (docs/try-page.md)
        for path in gets:
            get, head = PATHS[path]["get"], PATHS[path]["head"]
            self.assertEqual(set(head["responses"]), set(get["responses"]), path)
            self.assertFalse(any("content" in r for r in head["responses"].values()), path)
            self.assertEqual(head.get("security"), get.get("security"), path)
        self.assertEqual(PATHS["/health"]["get"]["security"], [])  # no key for health

    def test_operation_ids_are_unique(self):
        """paths: every operation has its own operationId, the aliases included."""
        ids = [op["operationId"] for item in PATHS.values() for op in item.values()]
        self.assertEqual(len(ids), len(set(ids)))
        self.assertEqual(PATHS["/systemone"]["post"]["operationId"], "systemone_alias")


if __name__ == "__main__":
    unittest.main()
