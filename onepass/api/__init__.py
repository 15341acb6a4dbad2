"""The two APIs, each an adapter that only translates: /v1/systemone (systemone.py) and
/v1/decisions (decisions.py, with openai_input.py for its `input` items).

Each adapter module satisfies Adapter: parse(body, files, limits) -> Request checks the body
against the API and the limits both apply (checks.py) and does no I/O (image links are fetched
later, by the pipeline); render(outcome, decision, meta) -> the response document, and
render_error(err) -> (status, document). The documents become bytes in one place, the
connection loop, with one serializer for answers and errors alike.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Limits:
    """This server's limits on a body: data given to parse, never a call back."""
    max_options: int  # options in one question: the contracts' cap (the Decisions
    # contract's "choices"), or fewer where a kind's labels cap them (kinds.option_cap)
    max_questions: int
    kinds: dict = field(default_factory=dict)  # kind name -> kinds.base.Limit: its cap per
    # request and why it is refused (a kind not listed: no cap of its own, served)
    max_images: int | None = None  # images per request, counted while parsing (0: text only;
    # None: not counted here, the images step does)
    model: str = ""  # the model named when images are refused


@dataclass(frozen=True)
class Request:
    """A body checked against its API, nothing resolved yet."""
    model: str  # the model name as sent
    state: object  # text, or a JSON object/array, with `[image N]` labels in place
    questions: tuple  # decision.Question, in answer order
    mode: str | None  # the attention mode asked for (None: the profile's default)
    overrides: dict  # kwargs.layout / kwargs.calibration as sent (the pipeline checks them)
    images: tuple  # images.inputs.Source in label order, not fetched or decoded
    meta: object  # what the adapter's render needs beyond the answers
    reasoning: object = None  # reasoning.Ask from kwargs.reasoning (None: not asked)


class Adapter(Protocol):
    def parse(self, body, files: dict, limits: Limits) -> Request: ...

    def render(self, outcome, decision, meta) -> dict: ...

    def render_error(self, err) -> tuple[int, dict]: ...
