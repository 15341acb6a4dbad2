"""The one internal decision model that every stage exchanges.

Owns: Decision, Question, Option, Page, Read, ReadResult, Generated and Answer (frozen
records).
Never: parses JSON, knows an API's field names or a question kind (Question.kind is a name
the registry in kinds/ knows), or talks to vLLM.
In: built by the pipeline from an adapter's Request. Out: read by prompt/, backend/, readout and
the adapter.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import NamedTuple

# Attention modes: one-way (causal, every model) and two-way (bidirectional prefill through the
# onepass engine plugin). Clients may also say "one-way" / "two-way".
CAUSAL, TWO_WAY = "causal", "bidirectional"
MODE_NAMES = {"causal": CAUSAL, "one-way": CAUSAL, "bidirectional": TWO_WAY, "two-way": TWO_WAY}
REREAD_FIRST_WEIGHT = 2 / 3  # a re-read answer: 2/3 the first reading, 1/3 the second
MAX_STATE_BYTES = 8 << 20  # a state longer than this (UTF-8, as shown) is refused (413), never cut


def compact_json(value) -> str:
    """The one compact rendering of JSON the model reads (states, text-valued fields)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def as_text(value) -> str:
    """Text stays as sent; any other JSON value is read as compact JSON."""
    return value if isinstance(value, str) else compact_json(value)


@dataclass(frozen=True)
class Option:
    """One answer the model can pick; `key` is echoed to the client byte for byte."""
    key: str
    text: str | None  # description rendered as prompt text; None = "interpret by name"


@dataclass(frozen=True)
class Question:
    """A typed question. Its id stays in the adapter: it must never reach the model."""
    kind: str
    instructions: str | None
    options: tuple[Option, ...]  # in the kind's order (a yes/no: yes first; levels: lowest first)
    params: object = None  # the kind's own question data, read only by that kind (its adapter
    # sets it from the question as sent; its plan may add to it): a box's mode, for one
    assistant: str = ""  # the answer turn's start before the slot read or generated (a thought)


@dataclass(frozen=True)
class Decision:
    model: str  # the concrete model name that will answer
    state: object  # text, or a JSON object/array (layout renders it)
    questions: tuple[Question, ...]
    attention_mode: str = CAUSAL  # resolved: the request's choice, else the profile's default
    layout: object = None  # a config.Layout overriding the profile's (kwargs, a re-read), or None
    calibration: object = None  # a config.Calibration overriding the profile's (kwargs), or None
    images: tuple = ()  # images.Image, in label order: `[image N]` in the text is images[N-1]
    reasoning: object = None  # reasoning.Ask: whether and how questions think first (None: off)


@dataclass(frozen=True)
class Page:
    """What a request's prompts show, and nothing else of it: the state and its images, the
    questions asked of them, the attention mode and the prompt techniques (prompt/ lays it out,
    steps/engine_calls.py fits and reads it). The model, the calibration and the reasoning stay
    out."""
    state: object
    questions: tuple[Question, ...]
    attention_mode: str = CAUSAL
    layout: object = None  # a config.Layout (the resolved techniques), or None: the profile's
    images: tuple = ()


@dataclass(frozen=True)
class Read:
    """One forward pass: a prompt and the label token ids whose next-token log-probs we need."""
    prompt: str
    label_token_ids: tuple[int, ...]
    option_of_label: tuple[int, ...]  # label i belongs to option option_of_label[i]
    order_of_label: tuple[int, ...] = ()  # label i sits in option listing order_of_label[i]
    question: int = 0  # index of the question this read answers
    attention_mode: str = CAUSAL
    whole_tokens: int = 0  # the uncut prompt's tokens when fitting cut the state (else 0)
    chat: tuple = ()  # with images: (system, user) turns, the user's image slots in order ...
    images: tuple = ()  # ... filled with these images (formats.Image: vLLM's chat route gets
    # each as a data URL from its one encoded copy, backend/wire.py; never a link)
    head_chars: int = 0  # prompt[:head_chars] is the system turn and record, shared by every
    # read over the same state (0: the layout puts the question first, nothing to share)
    assistant: str = ""  # chat route: the answer turn's start (the prompt already ends with it)
    spans: tuple = ()  # (start, end) character ranges of prompt read as a set (option_sets):
    # consecutive, each its own piece of text at the same positions (the engine plugin)


@dataclass(frozen=True)
class ReadResult:
    label_logprobs: tuple[float, ...]  # natural log, full-vocabulary log-softmax
    num_prompt_tokens: int
    num_cached_tokens: int = 0  # of those, served from vLLM's prefix cache


class Generated(NamedTuple):
    """One short generation: what the model wrote after a read's prompt."""
    text: str
    tokens: list  # (token text, log-prob) per generated token
    cut: bool  # stopped by the token cap or the wall-clock deadline
    prompt_tokens: int  # the prompt's tokens, image tokens included


@dataclass(frozen=True)
class Answer:
    kind: str
    probabilities: tuple[float, ...]  # one per option, in request order, summing to 1
    confidence: float  # contract formula for the kind (unused by some, such as a yes/no)
    best: int  # index of the most likely option
    payload: object = None  # the kind's own answer data, read only by that kind's renderers
    # (a yes/no's P(true), a score's expected level, a box, a number's value and text)


@dataclass(frozen=True)
class Thought:
    question: int  # request index
    text: str
    tokens: int
    cut: bool  # stopped by the token cap or the wall-clock budget


@dataclass(frozen=True)
class Spent:
    """What the thinking step did, for the response's x_effort_used and usage."""
    mode: str
    cap: int = 0  # the thoughts' token cap (0: nobody thought)
    thoughts: tuple = ()  # Thought per question that thought, request order
    trace: bool = False


@dataclass(frozen=True)
class Effort:
    """What was done beyond one plain read per question: the response's x_effort_used and
    x_thoughts (api/effort.py) say it."""
    rereads: int = 0  # questions read a second time (calibration.reread_below)
    reread_below: float = 0.0  # the threshold that applied (0: re-reading off)
    selections: tuple = ()  # fitting.Selection per question whose state was cut to fit
    listed: tuple = ()  # questions asked as option sets but read as listings (over budget)
    reasoning: Spent | None = None  # who thought, the cap, the thoughts (None: off)


@dataclass(frozen=True)
class Outcome:
    """A request's answers, in its order, what they cost (usage) and the effort beyond one
    read per question."""
    answers: tuple[Answer, ...]
    num_input_tokens: int
    attention_mode: str  # how the reads were made; every response says it
    num_cached_tokens: int = 0  # input tokens vLLM served from its prefix cache
    images: int = 0  # images read (each once per request, however many reads show it)
    output_tokens: int = 0  # tokens generated (box and number answers, thoughts); reads none
    reasoning_tokens: int = 0  # of those, the thoughts'
    effort: Effort = Effort()
