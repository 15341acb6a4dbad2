"""The one way the unit tests build a onepass Decision: `decision` from Questions, and
`from_body` from a request body through an API adapter's parse (then what the pipeline's resolve
and images steps do), which ends in `decision` too. A test about the Decision constructor itself
calls it directly."""
from dataclasses import replace

from onepass.api import Limits
from onepass.decision_model import Decision
from onepass.errors import ModelNotFound
from onepass.images import inputs as image_inputs


def resolved(d: Decision, profile) -> Decision:
    """What pipeline.resolve fixes for every later step: the layout and calibration that apply
    (the Decision's own, else the profile's)."""
    return replace(d, layout=d.layout or profile.layout,
                   calibration=d.calibration or profile.calibration)


def decision(questions, state="s", model="m", **fields) -> Decision:
    """A Decision of `questions` over `state` for `model`; `fields` are the Decision's own
    (attention_mode, layout, calibration, images, reasoning)."""
    return Decision(model, state, tuple(questions), **fields)


def from_body(api, body, files=None, policy=None, max_options=255,
              resolve_mode=lambda mode: mode or "causal"):
    """(Decision, meta): the adapter's parse, then what the pipeline's resolve and images steps
    do (a stub model name, the given mode rule, no overrides; images under `policy`)."""
    request = api.parse(body, files, Limits(max_options=max_options, max_questions=400))
    if request.model not in ("jev-latest", "concrete"):
        raise ModelNotFound(f"Unknown model: {request.model}")
    mode = resolve_mode(request.mode)
    return decision(request.questions, request.state, "concrete", attention_mode=mode,
                    images=image_inputs.resolve(request.images, policy)), request.meta
