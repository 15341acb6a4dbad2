"""Stdlib-only tests of onepass.prompt.bm25 (no vLLM, no rank-bm25): scores worked out by hand, the
tokeniser, and the corners that must not raise. tests/live/test_bm25_reference.py checks the same
module against rank-bm25 itself. Run: python3 -S -m unittest tests.unit.prompt.test_bm25
"""
import math
import unittest

from onepass.prompt.bm25 import BM25, terms


def part(idf, tf, length, avgdl, k1=1.5, b=0.75):
    """One query term's share of a document's score, written out from the BM25 formula."""
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / avgdl))


class ByHand(unittest.TestCase):
    def test_two_documents(self):
        # N = 2: a term in one document has idf ln(1.5) - ln(1.5) = 0; "apple" is in both, so its
        # idf ln(0.5) - ln(2.5) is negative and becomes epsilon * the mean of all three raw idfs.
        bm = BM25([["apple", "pie"], ["apple", "tart", "tart"]])
        floor = 0.25 * (math.log(0.5) - math.log(2.5) + 0 + 0) / 3
        self.assertAlmostEqual(bm.idf["apple"], floor, places=12)
        self.assertEqual(bm.idf["pie"], 0.0)
        got = bm.scores(["apple"])
        self.assertAlmostEqual(got[0], part(floor, 1, 2, 2.5), places=12)
        self.assertAlmostEqual(got[1], part(floor, 1, 3, 2.5), places=12)
        self.assertEqual(bm.scores(["tart"]), [0.0, 0.0])

    def test_three_documents(self):
        bm = BM25([["cat", "dog"], ["dog", "dog", "fish"], ["bird"]])
        rare = math.log(2.5) - math.log(1.5)  # cat, fish, bird: one document of three
        floor = 0.25 * (3 * rare + math.log(1.5) - math.log(2.5)) / 4  # dog: in two of three
        # doc 0 has the average length, so "cat" scores exactly its idf
        self.assertAlmostEqual(bm.scores(["cat"])[0], rare, places=12)
        self.assertAlmostEqual(bm.scores(["dog"])[1], part(floor, 2, 3, 2.0), places=12)
        self.assertAlmostEqual(bm.scores(["cat", "fish"])[1], part(rare, 1, 3, 2.0), places=12)

    def test_repeated_query_term_counts_each_time(self):
        bm = BM25([["cat", "dog"], ["dog", "dog", "fish"], ["bird"]])
        once, twice = bm.scores(["fish"]), bm.scores(["fish", "fish"])
        self.assertAlmostEqual(twice[1], 2 * once[1], places=12)

    def test_parameters_are_used(self):
        bm = BM25([["cat", "dog"], ["dog", "dog", "fish"], ["bird"]], k1=1.2, b=0.5)
        rare = math.log(2.5) - math.log(1.5)
        self.assertAlmostEqual(bm.scores(["fish"])[1], part(rare, 1, 3, 2.0, k1=1.2, b=0.5),
                               places=12)


class NoMatch(unittest.TestCase):
    def test_document_sharing_no_query_term_scores_zero(self):
        bm = BM25([["cat", "dog"], ["dog", "dog", "fish"], ["bird"]])
        self.assertEqual(bm.scores(["cat", "fish"])[2], 0.0)
        self.assertEqual(bm.scores(["zebra"]), [0.0, 0.0, 0.0])  # not in the corpus at all
        self.assertEqual(bm.scores([]), [0.0, 0.0, 0.0])

    def test_empty_corpus_and_empty_documents_do_not_raise(self):
        self.assertEqual(BM25([]).scores(["cat"]), [])
        self.assertEqual(BM25([[], []]).scores(["cat"]), [0.0, 0.0])
        # b = 1 makes an empty document's length norm 0: rank-bm25 gives NaN there, this gives 0
        got = BM25([["cat"], []], b=1.0).scores(["cat", "dog"])
        self.assertEqual(got[1], 0.0)
        self.assertTrue(all(math.isfinite(s) for s in got))


class Terms(unittest.TestCase):
    def test_lowercases_and_splits_on_non_words(self):
        self.assertEqual(terms("Password RESET, reset-link: ok!"),
                         ["password", "reset", "reset", "link", "ok"])
        self.assertEqual(terms("Straße STRASSE"), ["strasse", "strasse"])  # casefold, not lower

    def test_unicode_words_and_digits(self):
        self.assertEqual(terms("서버 오류 500 발생!"), ["서버", "오류", "500", "발생"])
        self.assertEqual(terms("東京、ログイン。2024年"),
                         ["東京", "ログイン", "2024年"])
        self.assertEqual(terms(" ... !!! "), [])


if __name__ == "__main__":
    unittest.main()
