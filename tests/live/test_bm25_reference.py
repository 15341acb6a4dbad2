"""onepass.prompt.bm25 against its reference, rank-bm25 0.2.2's BM25Okapi: every score within 1e-9.
No server: this file never asks for the `stack` fixture."""
import math
import sys
from pathlib import Path

import pytest
from rank_bm25 import BM25Okapi

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # as conftest does; standalone too
from onepass.prompt.bm25 import BM25, terms  # noqa: E402

# "and" is in exactly 3 of these 6: its idf is 0, which rank-bm25 keeps (only idf < 0 is floored).
TICKETS = [
    "Ticket 4411: customer cannot log in after the password reset. Password reset email arrived "
    "late; the reset link expired before the customer clicked it.",
    "Ticket 4412: invoice shows the wrong currency. Customer was billed in USD instead of EUR; "
    "billing team asked to reissue the invoice.",
    "Ticket 4413: login page times out on mobile. The customer retried the login three times "
    "and the page timed out each time.",
    "Ticket 4414: password reset link sent twice. Customer reports two reset emails, the second "
    "reset email works, the first does not.",
    "Ticket 4415: refund requested for duplicate invoice. Billing confirmed the duplicate charge "
    "and issued a refund to the customer.",
    "Ticket 4416: export to CSV drops the last row. Customer exported the report twice and the "
    "last row was missing in both exports.",
]
# "error", "server" and "the" are in over half of these: idf negative -> the epsilon floor.
COMMON = [
    "the server returned an error",
    "the server restarted after the error",
    "error in the server log again",
    "the disk is full on the server",
    "error error error the server",
    "quiet night nothing happened",
    "the backup finished",
]
KOREAN = [
    "서버 오류 500 발생 로그인 실패",
    "로그인 성공 2024 년 3 월",
    "결제 오류 404 서버 응답 없음",
    "비밀번호 재설정 메일 2024 발송",
    "서버 재시작 후 오류 해결 500",
]
WITH_EMPTY = [
    "first document about caching",
    "",
    "caching layer for the second document",
    "!!! ??? ...",  # punctuation only: tokenises to an empty document too
    "unrelated words entirely",
]

CASES = [
    (TICKETS, ["password reset", "customer customer invoice", "refund duplicate billing and",
               "login timeout mobile", "Kubernetes outage", "4414 reset reset reset", "the"]),
    (COMMON, ["server error", "error", "the the the", "disk full", "backup night",
              "nope missing", "server quiet"]),
    (KOREAN, ["서버 오류", "로그인", "2024", "500 500 오류", "결제", "없는단어", "서버 Server"]),
    (WITH_EMPTY, ["caching", "caching document", "document document", "absent", "words"]),
]


def check(texts, queries, **params):
    corpus = [terms(t) for t in texts]
    ours, ref = BM25(corpus, **params), BM25Okapi(corpus, **params)
    for text in queries:
        query = terms(text)
        got, want = ours.scores(query), list(ref.get_scores(query))
        assert len(got) == len(want) == len(corpus)
        for i, (g, w) in enumerate(zip(got, want)):
            assert math.isfinite(w), (text, i)
            assert g == pytest.approx(w, rel=0, abs=1e-9), (text, i, g, w)
    return ours, ref


@pytest.mark.parametrize("texts,queries", CASES, ids=["tickets", "common", "korean", "empty-doc"])
def test_default_parameters_match(texts, queries):
    check(texts, queries)


PARAMS = [dict(k1=1.2, b=0.5, epsilon=0.1), dict(k1=2.0, b=0.9, epsilon=0.5),
          dict(k1=0.7, b=0.0, epsilon=1.0), dict(k1=1.5, b=0.75, epsilon=0.0)]


@pytest.mark.parametrize("params", PARAMS)
@pytest.mark.parametrize("texts,queries", CASES, ids=["tickets", "common", "korean", "empty-doc"])
def test_other_parameters_match(texts, queries, params):
    check(texts, queries, **params)


def test_negative_idf_is_floored_like_the_reference():
    ours, ref = check(COMMON, ["error server the"])
    floored = {t for t, v in ref.idf.items() if v == ref.epsilon * ref.average_idf}
    assert {"error", "server", "the"} <= floored  # the case really is exercised
    assert ours.average_idf == pytest.approx(ref.average_idf, rel=0, abs=1e-12)
    for t, v in ref.idf.items():
        assert ours.idf[t] == pytest.approx(v, rel=0, abs=1e-12), t


def test_tokens_are_what_the_reference_is_given():
    assert terms(KOREAN[0]) == ["서버", "오류", "500", "발생", "로그인", "실패"]
    assert terms(WITH_EMPTY[1]) == terms(WITH_EMPTY[3]) == []
