"""The box kind: where a named object is in an image, as a box with a calibrated confidence.

Owns: the box question on /v1/systemone (its adapter: instructions, `box.mode`,
`kwargs.box.mode` into its params, Asked; its rendering and schemas), its plan (`present`, a
read of the registry's yes/no kind; in edges and hybrid modes four edge reads of its levels
kind; in generate and hybrid modes a generation under a JSON schema), combining those into
its answer (present tempering, the generated or edge box, hybrid's pick and the confidence
map, both box_confidence.py's; the answer's payload is a box_geometry.Box), its limits and
settings, a vision profile's `vision.box` settings (check_profile), the structured-outputs
probe (a generation under its schema), and reading the generated box and its coordinate-token
log-probs.
Never: calls vLLM (backend/ does) or converts coordinates itself (box_geometry.to_fractions).
/v1/decisions has no box type: the kind has no Decisions adapter.
Design and status: docs/box.md.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, replace

from ..decision_model import Answer, Option, Question
from . import box_geometry, registry
from .adapters import SystemOne
from .box_confidence import (MAPPED, check_maps, confidence, hybrid, map_input, mode_map,
                             tempered)
from .base import (LEVELS, MAX_LEVELS, YES_NO, Generation, Kind, Limit, Listing, Plan, Probe,
                   finite, generation_refusal)
from .box_geometry import Box, edges_box
from .schema_parts import PROBABILITY, TEXT, const, obj

MODES = ("generate", "edges", "hybrid")
GENERATES, READS_EDGES = ("generate", "hybrid"), ("edges", "hybrid")
DEFAULT_MODE = "generate"
SETTINGS_KEYS = {"convention", "confidence", "present_temperature"}
OPTIONAL_KEYS = {"fitted", "present_bias"}  # the fit's record; present's shift (default 0)
EDGES = ("left", "top", "right", "bottom")
PROBE_PROMPT = "Where is the object? Answer with JSON.\n"
PROBE_MOST = 1000  # the probe's grid: any box convention's schema has this shape
NAME = "box"


@dataclass(frozen=True)
class Asked:
    """A box question's params (Question.params): its mode and, once planned, the profile's
    convention its generation is laid out in."""
    mode: str
    convention: box_geometry.Convention | None = None


class OnSystemOne(SystemOne):
    type = "box"
    keys = frozenset({"type", "instructions", "box"})

    def options(self, criteria, loc, check, max_options, instructions=None):
        if instructions is None:
            check.add(loc[:-1] + ("instructions",), "a box question needs instructions naming "
                      "what to find", "missing")
        return []

    def params(self, q, loc, check, kwargs):
        """The mode: the question's `box.mode`, else `kwargs.box.mode`, else generate."""
        mode = _mode(kwargs.get("box") if isinstance(kwargs, dict) else None,
                     ("kwargs", "box"), check) or DEFAULT_MODE
        return Asked(_mode(q.get("box"), loc + ("box",), check) or mode)

    def check_images(self, count, loc, check):
        if count != 1:  # a box is drawn on the request's one image
            check.add(loc, f"a box question is answered on the request's one image; this "
                      f"request has {count}", "missing" if not count else "too_long")

    def answer(self, q, a, legend):
        b = a.payload
        return {"type": self.type, "box": {"left": b.left, "top": b.top, "right": b.right,
                                     "bottom": b.bottom},
                "confidence": b.confidence, "present": b.present, "found": b.found,
                "x_box_mode": b.mode, "x_box_logprob": b.logprob,
                "x_box_raw": list(b.raw) if b.raw is not None else None}

    def warmup_body(self, state, image_url=""):
        """A box in each mode beside a yes/no question, on one picture: the constrained
        generation (its grammar compiled once), the present and edge reads."""
        yes_no = registry.shaped(YES_NO).systemone.type
        return {"state": {"photo": image_url}, "questions": {
            mode: {"type": "box", "instructions": "the blue area in `photo`", "box": {"mode": mode}}
            for mode in MODES} | {"blue": {"type": yes_no, "instructions": "Is [image 1] blue?"}}}

    def question_schema(self):
        return obj({"type": const("box"), "instructions": TEXT,
                    "box": obj({"mode": {"enum": list(MODES)}})},
                   ["type", "instructions"],
                   description="where a named object is in the request's one image (vision "
                               "profiles only; elsewhere 422)")

    def answer_schema(self):
        edge = {"type": "number", "minimum": 0, "maximum": 1}
        return obj({"type": const("box"),
                    "box": obj({k: edge for k in EDGES}, EDGES),
                    "confidence": PROBABILITY, "present": PROBABILITY,
                    "found": {"type": "boolean"}, "x_box_mode": {"enum": list(MODES)},
                    "x_box_logprob": {"type": ["number", "null"]},
                    "x_box_raw": {"type": ["array", "null"], "items": {"type": "number"}}},
                   ["type", "box", "confidence", "present", "found"], extra="x_")


class BoxKind(Kind):
    name, systemone = NAME, OnSystemOne()
    reads, rereads, thinks = False, False, None  # its reads are parts of its answer
    settings = {
        "max_box_questions": (int, 4, "ONEPASS_MAX_BOX_QUESTIONS",
                              "box questions in one request (each costs a generation; more: 422)"),
        "box_max_tokens": (int, 48, "ONEPASS_BOX_MAX_TOKENS", "generation tokens per box question"),
    }

    def plan(self, q, job):
        """`present` in the question's place; four edge reads over as many equal bands as
        the levels kind has labels (at most MAX_LEVELS); the generation in the profile's
        convention, its schema bounded by the image's size."""
        reads = (present_question(q),)
        if q.params.mode in READS_EDGES:
            bands = getattr(job.labels, registry.shaped(LEVELS).name)
            reads += edge_questions(q, min(MAX_LEVELS, len(bands)))
        generation = None
        if q.params.mode in GENERATES:
            conv = box_geometry.convention(job.profile.vision.box["convention"])
            generation = Generation(replace(q, params=replace(q.params, convention=conv)),
                                    {"json": schema(conv.most(_size(job.images)))},
                                    job.settings.box_max_tokens)
        return Plan(reads, generation)

    def combine(self, q, answers, generated, job):
        """The box: present from its read (tempered); the generated box and the edges' box
        as the mode asks (hybrid: the one hybrid() picks); the confidence of the box used."""
        settings = job.profile.vision.box
        present = tempered(answers[0].probabilities[0], settings["present_temperature"],
                           settings.get("present_bias", 0.0))
        gen = feature = raw = None
        if generated is not None:
            raw, feature = ((None, None) if generated.cut
                            else read_generation(generated.text, generated.tokens))
            conv, size = box_geometry.convention(settings["convention"]), _size(job.images)
            gen = box_geometry.to_fractions(raw, conv, size, box_geometry.resized(conv, size))
        edges = edge_feature = None
        if len(answers) > 1:
            edges, edge_feature = edges_box([a.probabilities for a in answers[1:5]])
        maps = {mode: mode_map(settings["confidence"], mode) for mode in MAPPED}
        sure = {mode: confidence(map_input(maps[mode], f, box), maps[mode]) if box else None
                for mode, box, f in (("generate", gen, feature), ("edges", edges, edge_feature))}
        mode = q.params.mode
        used = mode if mode != "hybrid" else hybrid(sure["generate"], sure["edges"])
        fractions, feature, raw = ((gen, feature, raw) if used == "generate"
                                   else (edges, edge_feature, None))
        return answer(fractions, sure[used] or 0.0, present, used, feature, raw)

    def limit(self, settings, facts):
        profile = settings.model
        if profile.vision is None or profile.vision.box is None:
            return Limit(settings.max_box_questions, (
                f"box questions need a vision-language model profile with a box convention; "
                f"this server's profile ({profile.model_name}) has none"))
        return Limit(settings.max_box_questions, generation_refusal(self.name, facts.structured))

    def limits_text(self, settings):
        return f"{settings.max_box_questions} box questions"

    def listings(self, q, labels, opts):
        """The generation's prompt: no labels to read, the JSON schema constrains the reply."""
        return [Listing(prompt_lines(q, q.params.convention))]

    def check_profile(self, profile):
        """A vision profile's `vision.box` settings (check_settings)."""
        if profile.vision is not None and profile.vision.box is not None:
            check_settings(profile.vision.box)

    def probe(self, settings):
        """A text generation under the box schema, on a 0-PROBE_MOST grid."""
        return Probe(PROBE_PROMPT, {"json": schema(PROBE_MOST)}, settings.box_max_tokens,
                     in_schema, "the box schema")


def _size(images) -> tuple[int, int]:
    """The image a box is drawn on (the parser admits box questions with exactly one)."""
    return images[0].width, images[0].height


def _mode(holder, loc, check) -> str | None:
    """`mode` from a `box` object as sent (None: not given); every problem into `check`."""
    if holder is None:
        return None
    if not isinstance(holder, dict):
        check.add(loc, "box must be an object, e.g. {\"mode\": \"generate\"}", "dict_type")
        return None
    for extra in sorted(set(holder) - {"mode"}):
        check.add(loc + (extra,), "box takes only the key \"mode\"", "extra_forbidden")
    mode = holder.get("mode")
    if mode is not None and mode not in MODES:
        check.add(loc + ("mode",), f"box.mode must be one of {', '.join(MODES)}; got {mode!r}",
                  "enum")
        return None
    return mode


def answer(fractions, confidence: float, present: float, mode: str,
           logprob: float | None = None, raw=None) -> Answer:
    """The Answer for a box: `fractions` from to_fractions, None when nothing was found (then
    the whole image with confidence 0, whatever the generation's log-probs said)."""
    found = fractions is not None
    left, top, right, bottom = fractions if found else box_geometry.WHOLE
    box = Box(left, top, right, bottom, confidence if found else 0.0, present, found, mode,
              logprob if found else None, tuple(raw) if raw is not None else None)
    return Answer(NAME, (present, 1.0 - present), box.confidence, 0 if present >= 0.5 else 1, box)


def present_question(q: Question) -> Question:
    """The yes/no question whose P(yes) is `present`: read like any question of the registry's
    yes/no kind (its labels, the image temperature; vision.box.present_temperature and
    present_bias on top), never from the box generation."""
    return Question(registry.shaped(YES_NO).name,
                    f"Is this visible in the image(s): {q.instructions}?",
                    (Option("true", "it is visible"), Option("false", "it is not visible")))


def edge_questions(q: Question, levels: int) -> tuple[Question, ...]:
    """Edges mode: one question of the registry's levels kind per edge (left, top, right,
    bottom), its levels the `levels` equal bands across the image (0 at the left or top
    border); each read gives a distribution over the bands, never a generated number."""
    across = {"left": "width, from the left", "right": "width, from the left",
              "top": "height, from the top", "bottom": "height, from the top"}
    scale = registry.shaped(LEVELS).name
    return tuple(Question(scale, f"Where is the {edge} edge of {q.instructions}? Split the "
                          f"image's {across[edge]}, into {levels} equal bands: which band "
                          f"holds that edge?",
                          tuple(Option(str(k), f"band {k} of {levels}") for k in range(levels)))
                 for edge in EDGES)


def prompt_lines(q: Question, conv: box_geometry.Convention) -> list[str]:
    """The box generation's question lines, in the model's own convention, last line the reply
    line (as the layout expects). The schema enforces the shape; the words say what it means."""
    edges = ("left, top, right, bottom" if conv.order == "xyxy"
             else "top, left, bottom, right")
    units = (f"on a 0-{conv.scale} grid over the image" if conv.units == "grid"
             else "in pixels of the image as you see it" if conv.units == "resized_pixels"
             else "in pixels of the original image")
    return [f"Find: {q.instructions}",
            f'Give its bounding box as {{"box": [{edges}]}} {units}, from the top-left corner, '
            'or {"box": null} if it is not in the image.',
            "Reply with the JSON only."]


def check_settings(raw) -> None:
    """A vision profile's `vision.box`: convention, confidence map ({a, b}, or one per MAPPED
    mode), present temperature and bias (ValueError says what is wrong)."""
    if not isinstance(raw, dict) or not SETTINGS_KEYS <= set(raw) <= SETTINGS_KEYS | OPTIONAL_KEYS:
        raise ValueError(f"vision.box needs exactly {', '.join(sorted(SETTINGS_KEYS))} (and "
                         "optionally present_bias and the fit's record, fitted)")
    box_geometry.convention(raw["convention"])
    check_maps(raw["confidence"])
    temp = raw["present_temperature"]
    if not (finite(temp) and 1e-3 <= temp <= 1e3):
        raise ValueError("vision.box.present_temperature must be in [0.001, 1000]")
    bias = raw.get("present_bias", 0.0)
    if not (finite(bias) and abs(bias) <= 100):
        raise ValueError("vision.box.present_bias must be a number in [-100, 100]")


def schema(most: int) -> dict:
    """The generation's JSON schema: four integers in 0..most, or null for "not there"."""
    coords = {"type": "array", "items": {"type": "integer", "minimum": 0, "maximum": most},
              "minItems": 4, "maxItems": 4}
    return {"type": "object", "properties": {"box": {"anyOf": [coords, {"type": "null"}]}},
            "required": ["box"], "additionalProperties": False}


def in_schema(text: str) -> bool:
    """Whether a generation obeys schema(PROBE_MOST): {"box": four integers in range, or null}."""
    try:
        value = json.loads(text)
    except ValueError:
        return False
    raw = value.get("box", ()) if isinstance(value, dict) else ()
    return isinstance(value, dict) and set(value) == {"box"} and (raw is None or (
        isinstance(raw, list) and len(raw) == 4
        and all(type(v) is int and 0 <= v <= PROBE_MOST for v in raw)))


def read_generation(text: str, tokens) -> tuple:
    """(four numbers or None, mean log-prob of the coordinate tokens or None) from the
    generated text and its (token text, log-prob) pairs. Coordinate tokens are the ones with
    digits: under the schema every other token is punctuation or `null`, forced or nearly so,
    and would only dilute what the model chose."""
    try:
        raw = json.loads(text).get("box")
    except (ValueError, AttributeError):  # a generation cut by the token cap
        return None, None
    digits = [lp for tok, lp in tokens if any(ch.isdigit() for ch in tok)]
    mean = sum(digits) / len(digits) if digits else None
    return (raw if isinstance(raw, list) and len(raw) == 4 else None), mean


KIND = BoxKind()
