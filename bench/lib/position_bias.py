"""Position bias of choice answers: accuracy and the gold option's mean probability by the
position the gold option was listed at, from bench/measure/evaluate.py --order-check results.

Usage: python bench/lib/position_bias.py ROW.json [ROW.json ...]
Each ROW.json is `evaluate.py --order-check --json` output. Every choice record gives two
observations: the options as sent (the gold at its listed position) and reversed (the gold at
the mirrored position), so each position is filled from both ends of the listings.
Prints, per row, one line per position (1 = listed first; the last group pools every position
from 6 on) with its observations, accuracy and the gold's mean probability, then the spread:
the largest minus the smallest of each over the positions. A read without position bias has
equal columns up to sampling noise (with an exact set read, the two observations of a question
are the same answer, so any spread left is in the data, not the read).
Owns: the by-position table. Never talks to a server.
"""
import json
import sys
from collections import defaultdict

LAST = 6  # positions from here on are pooled (few questions list 7 or more options)


def observations(records: list):
    """(position, correct, gold probability) for each choice record and its reversed send."""
    for r in records:
        if r.get("kind") != "choice" or "listed" not in r:
            continue
        listed, gold = r["listed"], r["gold_key"]
        at = listed.index(gold)
        yield at, r["top_key"] == gold, r["probabilities"][gold]
        back = r.get("reversed_probabilities")
        if back is not None:
            top = max(back, key=back.get)
            yield len(listed) - 1 - at, top == gold, back[gold]


def paired(records: list) -> dict:
    """Each question's two sends: the gold nearer the top against nearer the bottom."""
    top, bottom = [], []
    for r in records:
        if r.get("kind") != "choice" or r.get("reversed_probabilities") is None:
            continue
        sends = list(observations([r]))
        n = len(r["listed"])
        if 2 * sends[0][0] + 1 == n:  # the middle option: the same position both ways
            continue
        early, late = sorted(sends, key=lambda o: o[0])
        top.append(early[1:])
        bottom.append(late[1:])

    def mean(cells, i):
        return sum(c[i] for c in cells) / len(cells) if cells else float("nan")
    return {"n": len(top), "accuracy": (mean(top, 0), mean(bottom, 0)),
            "gold_probability": (mean(top, 1), mean(bottom, 1))}


def table(records: list) -> dict:
    """Position (1-based, LAST pooled) -> {n, accuracy, gold_probability}."""
    cells = defaultdict(list)
    for at, correct, p in observations(records):
        cells[min(at + 1, LAST)].append((correct, p))
    return {pos: {"n": len(v), "accuracy": sum(c for c, _ in v) / len(v),
                  "gold_probability": sum(p for _, p in v) / len(v)}
            for pos, v in sorted(cells.items())}


def main(paths: list) -> int:
    if not paths or {"-h", "--help"} & set(paths):
        print(__doc__)
        return 0 if paths else 2
    for path in paths:
        rows = table(json.load(open(path))["records"])
        print(f"{path}\n  position  n    accuracy  gold p")
        for pos, cell in rows.items():
            name = f"{pos}+" if pos == LAST else str(pos)
            print(f"  {name:<8}  {cell['n']:<4} {cell['accuracy']:.3f}     "
                  f"{cell['gold_probability']:.3f}")
        pair = paired(json.load(open(path))["records"])
        print(f"  paired, {pair['n']} questions, gold nearer the top / nearer the bottom:")
        for what in ("accuracy", "gold_probability"):
            top, bottom = pair[what]
            print(f"    {what}: {top:.3f} / {bottom:.3f}, difference {top - bottom:+.4f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
