"""Stdlib-only tests of the error catalogue (onepass/errors.py): each failure's HTTP status and
machine type, the family it belongs to, and what InvalidRequest and OverBudget carry. How the
adapters render them is tested in tests/unit/api/ (test_systemone.py, test_decisions.py).
Run: python3 -S -m unittest tests.unit.test_errors
"""
import unittest

from onepass import errors
from onepass.errors import InvalidRequest, OnepassError, OverBudget, Problem

STATUSES = {"InvalidRequest": (422, "invalid_request_error"),
            "BadRequest": (400, "invalid_request_error"),
            "AuthMissing": (401, "authentication_error"),
            "AuthInvalid": (401, "authentication_error"),
            "Forbidden": (403, "permission_error"), "NotFound": (404, "not_found"),
            "ModelNotFound": (404, "not_found"),
            "MethodNotAllowed": (405, "method_not_allowed"),
            "MalformedHttp": (400, "bad_request"),
            "HeaderTooLarge": (431, "request_header_fields_too_large"),
            "TargetTooLong": (414, "uri_too_long"), "RequestTimeout": (408, "request_timeout"),
            "PayloadTooLarge": (413, "request_too_large"),
            "UnsupportedMediaType": (415, "unsupported_media_type"),
            "Overloaded": (529, "overloaded_error"),
            "SourceOverCap": (503, "service_unavailable"),
            "ShuttingDown": (503, "service_unavailable"),
            "NotReady": (503, "service_unavailable"),
            "EngineUnavailable": (503, "engine_unavailable"),
            "EngineFailed": (502, "engine_error"), "EngineRefused": (502, "engine_error"),
            "OverBudget": (422, "invalid_request_error"),
            "ClientClosed": (499, "client_closed_request"),
            "DeadlineExceeded": (504, "deadline_exceeded")}


class TestCatalogue(unittest.TestCase):
    def test_every_error_has_its_status_and_type(self):
        """Each class in the catalogue answers with its status and machine type."""
        found = {name: (cls.status, cls.error_type) for name, cls in vars(errors).items()
                 if isinstance(cls, type) and issubclass(cls, OnepassError)
                 and cls is not OnepassError}
        self.assertEqual(found, STATUSES)

    def test_families(self):
        """Framing errors close the connection (MalformedHttp); a refused model is a NotFound."""
        for cls in (errors.HeaderTooLarge, errors.TargetTooLong):
            self.assertTrue(issubclass(cls, errors.MalformedHttp), cls)
        self.assertTrue(issubclass(errors.ModelNotFound, errors.NotFound))
        self.assertEqual((errors.ModelNotFound.code, errors.NotFound.code),
                         ("model_not_found", None))


class TestCarried(unittest.TestCase):
    def test_invalid_request_names_each_problem(self):
        """InvalidRequest: the message joins each problem's dotted loc and msg, in order."""
        err = InvalidRequest([Problem(("questions", "q", 0), "bad", "value_error"),
                              Problem((), "whole body", "json_invalid")])
        self.assertEqual(err.message, "questions.q.0: bad; : whole body")
        self.assertEqual(err.problems[1].type, "json_invalid")
        self.assertIsNone(err.retry_after_ms)

    def test_over_budget_is_an_invalid_request_with_its_budget(self):
        """OverBudget: a 422 like any InvalidRequest, carrying the plugin's budget in tokens."""
        err = OverBudget([Problem(("state",), "too long", "too_long")], 2048)
        self.assertIsInstance(err, InvalidRequest)
        self.assertEqual((err.budget_tokens, err.message), (2048, "state: too long"))

    def test_retry_after_and_allow_are_kept(self):
        """retry_after_ms rides on any error; MethodNotAllowed keeps the route's methods."""
        self.assertEqual(errors.Overloaded("busy", retry_after_ms=250).retry_after_ms, 250)
        self.assertEqual(errors.MethodNotAllowed("no", ("GET", "POST")).allow, ("GET", "POST"))


if __name__ == "__main__":
    unittest.main()
