"""A toy question kind that no file of onepass knows: a traffic light (red, amber or green) read
from three labels of its own. tests/unit/kinds/test_toy_kind.py registers it, serves it and
unregisters it: a kind is one module (this one) and one registry line (the test's).

On /v1/systemone its type is `light`, on /v1/decisions `traffic_light`; at most MOST of them in
a request; its profile keys are `light_labels` and a `light` temperature (profile_doc adds them
to a copy of serve_config.json).
"""
import json

from onepass.decision_model import Answer, Option
from onepass.kinds.adapters import Decisions, SystemOne
from onepass.kinds.base import Kind, Limit, Listing, OwnLabels, best, listed_lines
from onepass.kinds.schema_parts import NAME, PROBABILITY, TEXT_OR_NULL, const, obj
from tests.support.paths import ROOT

LIGHTS = ("red", "amber", "green")
MOST = 2  # light questions in one request
LABELS = (("X", 300), ("Y", 301), ("Z", 302))  # the labels and (made-up) token ids start-up gave
CHOSEN = {"enum": list(LIGHTS)}


class OnSystemOne(SystemOne):
    """`criteria`, optional: a light -> what it means here (the adapters' default keys)."""
    type = "light"

    def options(self, criteria, loc, check, max_options, instructions=None):
        said = criteria if isinstance(criteria, dict) else {}
        return [Option(light, check.text(said.get(light), loc + (light,))) for light in LIGHTS]

    def answer(self, q, a, legend):
        return {"type": self.type, "light": LIGHTS[a.best],
                "probabilities": dict(zip(LIGHTS, a.probabilities))}

    def warmup_body(self, state, image_url=""):
        return {"state": state, "questions": {"light": {"type": self.type}}}

    def question_schema(self):
        meanings = obj({light: TEXT_OR_NULL for light in LIGHTS})
        return obj({"type": const(self.type), "instructions": TEXT_OR_NULL,
                    "criteria": meanings}, ["type"])

    def answer_schema(self):
        return obj({"type": const(self.type), "light": CHOSEN,
                    "probabilities": obj({light: PROBABILITY for light in LIGHTS}, LIGHTS)},
                   ["type", "light", "probabilities"], extra="x_")


class OnDecisions(Decisions):
    type = "traffic_light"
    warmup = {"type": "traffic_light", "instructions": "Which light is on?"}

    def options(self, raw, loc, check, max_choices):
        return LIGHTS, [Option(light, None) for light in LIGHTS]

    def answer(self, name, values, a):
        return {"type": self.type, "name": name, "light": values[a.best],
                "probabilities": [{"value": v, "probability": p}
                                  for v, p in zip(values, a.probabilities)]}

    def answer_schema(self):
        return obj({"type": const(self.type), "name": NAME, "light": CHOSEN,
                    "probabilities": {"type": "array"}},
                   ["type", "name", "light", "probabilities"], extra="x_")


class Light(Kind):
    name = "light"
    systemone, decisions = OnSystemOne(), OnDecisions()
    own_labels = OwnLabels(3, 3)

    def listings(self, q, labels, opts):
        """The lights in their order, each after its label; one read."""
        order = tuple(range(len(LIGHTS)))
        lines = listed_lines(q, [(labels.light, order)], "Lights:",
                             "the label of the light that is on",
                             lambda o: o.key if o.text is None else f"{o.key} ({o.text})")
        return [Listing(lines, labels.light, order, (0,) * len(order))]

    def answer(self, probs, question):
        return Answer(self.name, tuple(probs), max(probs), best(probs))

    def limit(self, settings, facts):
        return Limit(most=MOST)

    def limits_text(self, settings):
        return f"{MOST} light questions"


KIND = Light()


def profile_doc() -> dict:
    """serve_config.json with the toy's profile keys in its default profile: its labels and
    its temperature."""
    doc = json.loads((ROOT / "serve_config.json").read_text())
    profile = doc["profiles"][doc["default_profile"]]
    profile["light_labels"] = [label for label, _ in LABELS]
    profile["calibration"]["temperature"]["light"] = 1.0
    return doc
