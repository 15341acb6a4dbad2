"""The items bench/measure/runbook_smoke.py sends: a few of our own, in each harness's request
shape.

Usage: imported by bench/measure/runbook_smoke.py (and its tests);
`python3 bench/data/runbook_items.py` prints how many requests each harness's smoke sends.
Owns: the JevBench-shaped case (4 nouls, 2 choices, 1 score, nouls without criteria, string
texts only, as `jevbench check` sends) and the variants its relations send (options reordered,
question ids renamed, a question alone); the Decision Index kit's warm-up requests (as the wire
contract records them), a few choice/noul rows and one over capacity (256 options); the Box
track's items: PNGs drawn here with a rectangle at a known place, one box question each.
Never copies a harness's own data: every text here was written for onepass.
"""
import base64
import struct
import zlib

STATE = ("Customer writes: our invoices have shown a double charge since the plan change on "
         "the 3rd. Two of our five seats cannot log in since this morning's update. We need "
         "both fixed before the audit on Friday; otherwise we will move to another vendor.")
CASE = {
    "double_charge": {"type": "noul", "instructions": "Does the customer report being charged "
                                                      "twice?"},
    "login_broken": {"type": "noul", "instructions": "Are some users unable to log in?"},
    "deadline": {"type": "noul", "instructions": "Does the customer state a deadline?"},
    "praises": {"type": "noul", "instructions": "Does the customer praise the product?"},
    "owner": {"type": "choice", "instructions": "Which team should own the first reply?",
              "criteria": {"billing": "Invoices, charges and refunds",
                           "engineering": "Broken features and outages",
                           "sales": "Plans, upgrades and new purchases"}},
    "risk": {"type": "choice", "instructions": "How likely is the customer to leave?",
             "criteria": {"low": "No sign of leaving", "medium": "Some dissatisfaction",
                          "high": "Says they may leave"}},
    "tone": {"type": "score", "instructions": "How upset does the customer sound?",
             "criteria": ["Calm", "Mildly annoyed", "Clearly frustrated", "Angry"]},
}


def jevbench_requests() -> list:
    """(name, state, questions): the case, then variants of the kinds JevBench's relations
    send (the state never changes)."""
    reordered = dict(CASE, owner=dict(CASE["owner"], criteria=dict(
        reversed(list(CASE["owner"]["criteria"].items())))))
    renamed = {f"q{i}.{k[:3]}": v for i, (k, v) in enumerate(CASE.items())}
    return [("case", STATE, CASE), ("options-reordered", STATE, reordered),
            ("ids-renamed", STATE, renamed), ("alone", STATE, {"tone": CASE["tone"]})]


WARMUP = {"warmup": {"type": "choice", "instructions": "Which color is named?",
                     "criteria": {"red": "red", "blue": "blue"}}}


def di_warmup() -> list:
    """The kit's two warm-up requests (wire contract 3.2)."""
    return [(f"warm-up {i}", "The color is red.", WARMUP) for i in (1, 2)]


def di_rows() -> list:
    """A few rows in the kit's shape (choice and noul only), then one over capacity."""
    many = {f"option {i:03d}": None for i in range(256)}
    return [
        ("row nli", {"premise": "The bridge was closed for repairs all of May.",
                     "hypothesis": "The bridge was open on May 12."},
         {"label": {"type": "choice", "instructions": "Does the premise entail the hypothesis?",
                    "criteria": {"entailment": "It follows", "neutral": "Undecided",
                                 "contradiction": "It cannot be true"}}}),
        ("row fact", "Record: the meeting moved from Tuesday to Thursday at 10:00.",
         {"moved": {"type": "noul", "instructions": "Did the meeting change day?"},
          "day": {"type": "choice", "instructions": "On which day is the meeting now?",
                  "criteria": {"Tuesday": None, "Wednesday": None, "Thursday": None}}}),
        ("row unicode", "Kunde: Die Lieferung kam beschädigt an. 🙁",
         {"Kategorie": {"type": "choice", "instructions": "Worum geht es?",
                        "criteria": {"Schaden": "beschädigte Ware", "Rechnung": "Zahlung",
                                     "Lob": None}}}),
        ("capacity 256 options", "Pick one.",
         {"wide": {"type": "choice", "instructions": "Which option?", "criteria": many}}),
    ]


def png_with_box(width: int, height: int, box: tuple, fg=(200, 30, 30),
                 bg=(240, 240, 235)) -> bytes:
    """An RGB PNG of `bg` with a `fg` rectangle over pixels [left, right) x [top, bottom)."""
    left, top, right, bottom = box
    rows = b"".join(b"\0" + b"".join(bytes(fg if left <= x < right and top <= y < bottom
                                           else bg) for x in range(width))
                    for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    return (b"\x89PNG\r\n\x1a\n"
            + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))


def box_items() -> list:
    """(name, base64 PNG, instructions, drawn box as fractions): one box question each."""
    out = []
    for name, (w, h), px, what in (("left square", (96, 64), (8, 16, 40, 48), "the red square"),
                                   ("wide bar", (128, 72), (20, 50, 110, 64), "the red bar"),
                                   ("absent", (80, 80), (0, 0, 0, 0), "the blue circle")):
        frac = (round(px[0] / w, 3), round(px[1] / h, 3), round(px[2] / w, 3),
                round(px[3] / h, 3))
        out.append((name, base64.b64encode(png_with_box(w, h, px)).decode(), what, frac))
    return out


if __name__ == "__main__":
    print({"jevbench": len(jevbench_requests()), "decision-index": len(di_warmup() + di_rows()),
           "imagejevbench-box": len(box_items())})
