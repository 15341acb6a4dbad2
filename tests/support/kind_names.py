"""The built-in question kinds' names, for tests that build questions and answers of them
(onepass outside kinds/ never names a kind: each name is its kind module's own)."""
from onepass.kinds import box, choice, noul, number, score

NOUL, CHOICE, SCORE, BOX, NUMBER = (unit.KIND.name for unit in (noul, choice, score, box, number))
