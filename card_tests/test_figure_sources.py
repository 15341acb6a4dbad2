"""Every figure a user reads names its measurement: a number with a unit (ms, s, min, GB, GiB,
MB, MiB, %, x, a rate per second), a p50/p95/p99 or an accuracy, Brier or ECE value in the prose
of README.md, docs/production.md, configuration.md, clients.md and docs/runbooks/ links a
docs/measured.md section, and its passage (paragraph, list item, or table row with its header
and caption) names that section's CPU kind, cache state and profile. Not measurements: code;
a setting's value (a `--flag`, `ENV_VARIABLE`, `CONSTANT`, lock or deploy file, or key of
serve_config.json, deploy/k8s.yaml or deploy/haproxy.cfg named beside it on its line, or in a
settings table's first cell); a default ("30 s by default"); a bound ("at most 10 s"); a figure
marked "unmeasured" or "estimate". Each measured.md section opens with its measurement line,
    <!-- measured: profile=NAME [default=yes] [model=BUILD] dtype=D cpu=KIND[,KIND]
         caches=warm|cold|n/a|unrecorded date=D command="script ..." -->
(cpu: avx2, avx512, amx, unrecorded, or none), which fails once a section that says it is the
shipped default is not serve_config.json's default_profile (or its embedded build), or once its
script is gone. No server; `python3 -S -m unittest card_tests.test_figure_sources` runs it.
"""
import json
import re
import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # claims, for a plain unittest run
import claims  # noqa: E402
from claims import ROOT  # noqa: E402

MEASURED = ROOT / "docs" / "measured.md"
# wire-contract.md quotes the harnesses' own contracts (no figure is ours)
EXEMPT_DOCS = {"docs/runbooks/wire-contract.md"}
NUM = r"\d[\d,]*(?:\.\d+)?"
FIGURE = re.compile(
    rf"(?<![\w.,\-/]){NUM}(?:(?: to |-|–){NUM})?"
    r"(?:\s(?:ms|s|min|minutes?|seconds?|hours?|GB|GiB|MB|MiB|KB|KiB)\b|\s?x(?!\w)"
    r"|\s?%(?! (?:paired |bootstrap |confidence )*interval)"
    r"|\s(?:decisions|requests|tokens|req)/s)"
    rf"|\bp(?:50|95|99)\b(?! at)|\b(?:accuracy|Brier(?: skill)?|ECE)(?: of| is)? [−-]?{NUM}")
SETTING = re.compile(r"--[a-z][\w-]*(?:[= ]\S*)?|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+(?:=\S*)?"
                     r"|(?:deps|deploy)/[\w./-]+|serve_config\.json")
DEFAULT_BEFORE = re.compile(r"\bdefaults?(?: is| are| of)?[:,]? \**$|\(default $")
DEFAULT_AFTER = re.compile(r"\**,? (?:by default|unless set)")
BOUND = re.compile(r"(?:\bat (?:most|least)|\bup to|\bunder|\bover|\babove|\bbelow|\bwithin"
                   r"|[≤<>≥])(?: about| an?)? \**$")
MARKED = re.compile(r"\bunmeasured\b|\bestimate", re.I)
WINDOW = 80  # characters from a figure within which its setting or marker is named
COMMENT = re.compile(r"<!-- measured: (.*?) -->")
LINK = re.compile(r"\]\([^)\s]*measured\.md#([\w-]+)\)")
CPU_WORDS = {"avx2": "AVX2", "avx512": "AVX-512", "amx": "AMX",
             "unrecorded": "CPU kind not recorded", "none": ""}
CACHES = {"warm", "cold", "n/a", "unrecorded"}
CONFIG = json.loads((ROOT / "serve_config.json").read_text())
# setting names: serve_config.json's keys with an underscore (`max_model_len`), deploy/k8s.yaml's
# keys, deploy/haproxy.cfg's directive words (`timeout`, `inter`, `maxconn`)
KEYS = {*re.findall(r'"(\w+_\w*)":', (ROOT / "serve_config.json").read_text()),
        *re.findall(r"(?:^[\s-]*|[{,] *)([A-Za-z][\w.-]*):",
                    (ROOT / "deploy" / "k8s.yaml").read_text(), re.M),
        *(w for line in (ROOT / "deploy" / "haproxy.cfg").read_text().splitlines()
          for w in line.split("#")[0].split()[:None if "default-server" in line else 1]
          if w[0].isalpha())}


def passages(doc: str) -> list[tuple[str, str]]:
    """(the text whose figures count, its context) for each paragraph, list item and table row
    of a document's prose; a row's context adds the table's header and caption (the paragraph
    above it). Headings are not passages and end a caption."""
    out, para, caption, header = [], [], "", ""
    for line in claims.prose(doc).splitlines() + [""]:
        if line.startswith("|"):
            if not header:
                caption, header, para = "\n".join(para) or caption, line, []
            elif not re.match(r"^\|[\s:|-]+\|$", line):
                out.append((f"{header}\n{line}", f"{caption}\n{header}\n{line}"))
            continue
        header = ""
        if not line.strip() or line.startswith("#") or re.match(r"^\s{0,2}(?:[-*]|\d+\.) ", line):
            if para:
                out.append(("\n".join(para),) * 2)
            caption = "" if line.startswith("#") else "\n".join(para) or caption
            para = [line] if line.strip() and not line.startswith("#") else []
            continue
        para.append(line)
    return out


def blank(text: str, pattern: str) -> str:  # each match masked, positions kept
    return re.sub(pattern, lambda m: " " * len(m.group(0)), text, flags=re.S)


def is_setting(span: str) -> bool:
    words = span.split()
    return bool(words) and bool(SETTING.fullmatch(span.strip()) or words[0].rstrip(":") in KEYS)


def figures(text: str) -> list[str]:
    """The measured figures of a passage: those not code, settings, defaults, bounds or marked."""
    first = re.match(r"\|\s*`([^`]+)`\s*\|", text.splitlines()[-1])
    if first and is_setting(first.group(1)):
        return []  # a settings table's row
    code = blank(text, r"\]\([^)]*\)")
    plain = blank(code, r"`[^`]*`")
    names = [m.start() for m in re.finditer(r"`([^`]*)`", code) if is_setting(m.group(1))]
    marks = [m.start() for m in MARKED.finditer(plain)]
    found = []
    for m in FIGURE.finditer(plain):
        at, before, after = m.start(), plain[max(0, m.start() - 30):m.start()], plain[m.end():]
        line = (plain.rfind("\n", 0, at), plain.find("\n", at) % (len(plain) + 1))
        if not (any(abs(n - at) <= WINDOW and line[0] < n < line[1] for n in names)
                or any(abs(n - at) <= WINDOW for n in marks) or BOUND.search(before)
                or DEFAULT_BEFORE.search(before) or DEFAULT_AFTER.match(after)):
            found.append(m.group(0))
    return found


def sections(body: str) -> dict[str, str]:
    """Anchor (GitHub's, repeats numbered) -> the text from its heading to the next heading."""
    out, seen = {}, {}
    parts = re.split(r"^(#{1,6} .+)$", claims.prose(body), flags=re.M)
    for heading, text in zip(parts[1::2], parts[2::2]):
        base = re.sub(r"[^\w\- ]", "", heading.lstrip("#").strip().lower()).replace(" ", "-")
        out[base if base not in seen else f"{base}-{seen[base]}"] = text
        seen[base] = seen.get(base, 0) + 1
    return out


def measurement(text: str) -> dict[str, str]:
    pairs = re.findall(r'(\w+)=("[^"]*"|\S+)', (COMMENT.findall(text) or [""])[0])
    return {key: value.strip('"') for key, value in pairs}


def stale(fields: dict[str, str], config: dict) -> list[str]:
    """What one section's measurement line gets wrong about the repository today."""
    profile, profiles = fields.get("profile"), config["profiles"]
    wrong = [f"no {k}" for k in "profile dtype cpu caches date command".split() if k not in fields]
    if profile not in [*profiles, "none"]:
        wrong.append(f"profile {profile} is not shipped")
    if fields.get("default") == "yes" and profile != config["default_profile"]:
        wrong.append(f"says default, but the default is {config['default_profile']}")
    if "model" in fields and fields["model"] != profiles.get(profile, {}).get("embedded"):
        wrong.append(f"model {fields['model']} is not {profile}'s embedded model")
    if not (set(fields.get("cpu", "?").split(",")) <= set(CPU_WORDS)
            and set(fields.get("caches", "?").split(",")) <= CACHES):
        wrong.append("cpu or caches not one of the kinds")
    scripts = re.findall(r"[\w./-]+\.(?:py|sh)\b|\.ci/run", fields.get("command", ""))
    wrong += [f"no script {s}" for s in scripts if not (ROOT / s).exists()]
    return wrong + ([] if scripts else ["no script"])


def unnamed(passage: str, fields: dict[str, str], config: dict) -> bool:
    """Whether a passage fails to name its section's CPU kind, caches or profile."""
    text = " ".join(passage.split())  # words wrapped across lines
    lower, caches = text.lower(), set(fields["caches"].split(",")) & {"warm", "cold"}
    model = config["profiles"].get(fields["profile"], {}).get("served_model_name", "")
    names = [fields["profile"], model.removesuffix("-instruct")]
    return (not any(CPU_WORDS[c] in text for c in fields["cpu"].split(","))
            or caches and not any(c in lower for c in caches)
            or fields["profile"] != "none" and not any(n and n.lower() in lower for n in names)
            and not (fields.get("default") == "yes" and "default" in lower))


def unsourced(doc: str, measured: str, config: dict) -> list[tuple[str, str]]:
    """(figure, what is missing) for the first measured figure of every passage that lacks it."""
    marked, out = sections(measured), []
    for text, passage in passages(doc):
        for figure in figures(text)[:1]:
            anchors = LINK.findall(passage)
            if not anchors:
                out.append((figure, "no measured.md link: " + passage[:80]))
            for anchor in anchors:
                fields = measurement(marked.get(anchor, ""))
                if not fields or unnamed(passage, fields, config):
                    out.append((figure, f"#{anchor}: " + (f"the passage does not name {fields}"
                                if fields else "no such section, or no measurement line")))
    return out


def user_docs() -> dict[str, str]:
    names = ["README.md", "docs/production.md", "docs/configuration.md", "docs/clients.md",
             *sorted(f"docs/runbooks/{p.name}" for p in (ROOT / "docs" / "runbooks").glob("*.md"))]
    return {name: claims.text(ROOT / name) for name in names if name not in EXEMPT_DOCS}


PLANTED_DOC = """\
The README example takes 704 ms on the default, AVX-512.

The table:\n\n| request | p50 |\n|---|---|\n| the README example | 704 ms |

Limits: 180 s (`--request-timeout-s`) for a decision; 12 MiB (the default 12 MiB) a body; the
SDK's default is 10 s; p50 at most 10 s; the pod's 2 GiB unless set; a GPU, unmeasured: 3 s.

On `qwen2.5-coder-1.5b` (AMX): 626 ms ([measured](measured.md#speed)).
"""
PLANTED_MEASURED = """\
## Speed
<!-- measured: profile=qwen2.5-coder-1.5b default=yes dtype=bf16 cpu=amx caches=n/a \
date=2026-12-06 command="bench/measure/latency.py" -->
## Old
<!-- measured: profile=smollm2-135m-fast default=yes dtype=bf16 cpu=amx caches=n/a \
date=2026-12-02 command="bench/measure/gone.py" -->
"""


class FigureSources(unittest.TestCase):
    def test_every_measured_figure_links_its_measurement(self):
        measured, checked, wrong = claims.text(MEASURED), 0, []
        for doc, body in user_docs().items():
            checked += sum(bool(figures(text)) for text, _ in passages(body))
            wrong += [(doc, *hit) for hit in unsourced(body, measured, CONFIG)]
        self.assertGreater(checked, 20)
        self.assertFalse(wrong, "\n".join(map(str, wrong)))

    def test_every_measurement_line_holds_today(self):
        lines = {a: measurement(t) for a, t in sections(claims.text(MEASURED)).items()
                 if measurement(t)}
        self.assertGreater(len(lines), 20)
        self.assertTrue(any(fields.get("default") == "yes" for fields in lines.values()))
        wrong = {anchor: stale(fields, CONFIG) for anchor, fields in lines.items()}
        self.assertFalse({anchor: why for anchor, why in wrong.items() if why})

    def test_links_into_measured_md_resolve(self):
        """From every document, serve_config.json's provenance and the bench and tools notes."""
        anchors = set(sections(claims.text(MEASURED)))
        sources = [*claims.documents(), ROOT / "serve_config.json", *ROOT.glob("bench/**/*.md"),
                   *ROOT.glob("tools/**/*.md")]
        broken = [(p.name, anchor) for p in sources
                  for anchor in set(re.findall(r"measured\.md#([\w-]+)", p.read_text())) - anchors]
        self.assertFalse(broken)

    def test_the_checks_catch_what_they_are_for(self):
        """Planted: an unlinked figure, in prose and in a table; a linked one whose passage names
        another CPU kind; a section that says it is the default when the default is another
        profile, or names another build; a script that is gone. Settings, defaults, bounds and
        marked figures pass, and so does a figure that names its section."""
        self.assertEqual(figures(PLANTED_DOC.split("\n\n")[3]), [])
        self.assertEqual([(f, why.split(":")[0]) for f, why in
                          unsourced(PLANTED_DOC, PLANTED_MEASURED, CONFIG)],
                         [("704 ms", "no measured.md link"), ("p50", "no measured.md link")])
        hit = unsourced("704 ms on AVX2 ([m](measured.md#speed)).", PLANTED_MEASURED, CONFIG)
        self.assertIn("the passage does not name", hit[0][1])
        speed, old = (measurement(text) for text in sections(PLANTED_MEASURED).values())
        self.assertEqual(stale(speed, CONFIG), [])
        self.assertEqual(stale(old, CONFIG), ["says default, but the default is qwen2.5-coder-1.5b",
                                              "no script bench/measure/gone.py"])
        moved = dict(CONFIG, default_profile="gemma-3-270m")
        self.assertEqual(stale(speed, moved), ["says default, but the default is gemma-3-270m"])
        self.assertIn("model x is not", stale(dict(speed, model="x"), CONFIG)[0])

