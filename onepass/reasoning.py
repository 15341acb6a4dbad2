"""Reasoning before answering: the request's ask, the profile's settings and cost model, who
thinks, how long a thought may be, and how the answers after a thought are blended in.

Owns: `kwargs.reasoning` checked into an Ask (mode auto | on | off, budget_ms, trace), the
profile's `reasoning` settings (how its model writes a thought, tau, the default mode, the
token bounds and target time) and its cost model file, the gate (which questions think), the
deterministic token cap, and the blend. Pure functions: think.py runs the step.
Never: calls vLLM, builds prompts, or logs a thought.
A top-level `reasoning` key is not this: the wire contract says clients may send one through
`extra_body`, and it is ignored like any unknown field.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

MODES = ("auto", "on", "off")
UNSURE, ON = "unsure", "on"  # a kind's `thinks` (kinds/base.py): unsure in auto and on; on only
ASK_KEYS = {"mode", "budget_ms", "trace"}
MAX_BUDGET_MS = 600_000
FIRST_WEIGHT = 0.5  # final = 0.5 x first read + 0.5 x read after the thought
SETTING_KEYS = {"assistant", "open", "close", "stop", "tau", "default_mode", "target_ms", "min_tokens",
                "max_tokens", "cost_model"}
COST_KEYS = {"overhead_ms", "prefill_ms_per_token", "image_ms", "decode_ms_per_token",
             "decode_ms_per_extra_sequence"}


@dataclass(frozen=True)
class Ask:
    mode: str  # auto | on | off
    budget_ms: int | None = None  # a wall-clock deadline for thoughts (None: deterministic)
    trace: bool = False  # return each thought's text (x_thoughts)


@dataclass(frozen=True)
class Settings:
    """A profile's `reasoning`: how its model thinks and how long it may."""
    assistant: str  # the answer turn's header when thinking, in place of the chat template's
    # (whose header may hold an empty thinking block); "": the template's own
    open: str  # the answer turn starts with this before a thought (`<think>\n`, a plain line)
    close: str  # and this after it, ending where the label slot is (a newline)
    stop: tuple  # strings that end a thought early (`</think>`), besides the end of turn
    tau: float  # auto: a question thinks when its first read's top probability is below this
    default_mode: str  # the mode when a request does not say
    target_ms: int  # the time a request's thoughts are sized for, by the cost model
    min_tokens: int  # bounds on a thought's token cap
    max_tokens: int
    cost: dict  # the cost model (COST_KEYS), fitted by bench/fit_cost_model.py
    cost_model: str = ""  # its file, relative to the config file (else to the repository)


def ask(raw, where: tuple, check) -> Ask | None:
    """`kwargs.reasoning` as sent, checked (every problem into `check`); None if absent."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        check.add(where, "kwargs.reasoning must be an object", "dict_type")
        return None
    for extra in sorted(set(raw) - ASK_KEYS):
        check.add(where + (extra,), "kwargs.reasoning takes mode, budget_ms and trace",
                         "extra_forbidden")
    mode, budget, trace = raw.get("mode", "auto"), raw.get("budget_ms"), raw.get("trace", False)
    if mode not in MODES:
        check.add(where + ("mode",), f"mode must be one of {', '.join(MODES)}", "enum")
    if budget is not None and not (type(budget) is int and 1 <= budget <= MAX_BUDGET_MS):
        check.add(where + ("budget_ms",), f"budget_ms must be an integer from 1 to "
                         f"{MAX_BUDGET_MS}", "int_type")
    if not isinstance(trace, bool):
        check.add(where + ("trace",), "trace must be true or false", "bool_type")
    return Ask(mode, budget, trace) if mode in MODES else None


def settings(raw: dict, config_path: str) -> Settings:
    """A profile's `reasoning` object and its cost model file (ValueError says what is wrong)."""
    if not isinstance(raw, dict) or set(raw) != SETTING_KEYS:
        raise ValueError(f"reasoning needs exactly {', '.join(sorted(SETTING_KEYS))}")
    path = Path(config_path).parent / raw["cost_model"]
    if not path.exists():  # a config written elsewhere names the repository's shipped models
        path = Path(__file__).resolve().parent.parent / raw["cost_model"]
    try:
        cost = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise ValueError(f"reasoning.cost_model {raw['cost_model']}: {e}") from None
    if not (isinstance(cost, dict) and COST_KEYS <= set(cost)
            and all(_number(cost[k]) and cost[k] >= 0 for k in COST_KEYS)
            and cost["decode_ms_per_token"] > 0):
        raise ValueError(f"{path}: a cost model needs non-negative {', '.join(sorted(COST_KEYS))}"
                         f" (decode_ms_per_token > 0)")
    s = Settings(raw["assistant"], raw["open"], raw["close"], tuple(raw["stop"]), raw["tau"], raw["default_mode"],
                 raw["target_ms"], raw["min_tokens"], raw["max_tokens"],
                 {k: float(cost[k]) for k in COST_KEYS}, raw["cost_model"])
    if not (isinstance(s.assistant, str) and isinstance(s.open, str) and s.open and isinstance(s.close, str)
            and s.close.endswith("\n") and all(isinstance(x, str) and x for x in s.stop)
            and _number(s.tau) and 0 < s.tau <= 1 and s.default_mode in MODES
            and type(s.target_ms) is int and s.target_ms > 0
            and type(s.min_tokens) is int and type(s.max_tokens) is int
            and 1 <= s.min_tokens <= s.max_tokens <= 4096):
        raise ValueError("reasoning: assistant (text, may be empty), open (text), close (text ending in a newline, where the "
                         "label slot follows), stop (texts), tau in (0, 1], default_mode one of "
                         f"{', '.join(MODES)}, target_ms > 0, 1 <= min_tokens <= max_tokens <= 4096")
    return s


def thinkers(mode: str, thinks_and_tops, tau: float) -> list[int]:
    """Which questions think, from (its kind's `thinks`, top probability of the first read or
    None) per question: `on` every question whose kind thinks (unsure or on); `auto` those
    that think when unsure, when their first read's top probability is below tau; `off` none.
    A kind that never thinks (None: box) never does."""
    if mode == "off":
        return []
    out = []
    for i, (thinks, top) in enumerate(thinks_and_tops):
        if mode == "on" and thinks in (UNSURE, ON):
            out.append(i)
        elif mode == "auto" and thinks == UNSURE and top is not None and top < tau:
            out.append(i)
    return out


def token_cap(s: Settings, prompt_tokens: int, images: int, questions: int,
              thinking: int) -> int:
    """A thought's token cap, from the request alone (so the same request always gets the same
    thought, whatever the load): the target time less what the cost model says the request's
    reads cost (its prompt tokens, images, and reading the thinking questions again), divided
    by the time per thought token when `thinking` thoughts decode side by side; within the
    profile's bounds."""
    c = s.cost
    again = prompt_tokens * thinking / max(questions, 1)  # the re-reads after the thoughts
    spent = (c["overhead_ms"] + c["prefill_ms_per_token"] * (prompt_tokens + again)
             + c["image_ms"] * images)
    per_token = c["decode_ms_per_token"] + c["decode_ms_per_extra_sequence"] * max(thinking - 1, 0)
    cap = math.floor((s.target_ms - spent) / per_token)
    return min(s.max_tokens, max(s.min_tokens, cap))


def blend(first: list[float], after: list[float]) -> list[float]:
    return [FIRST_WEIGHT * a + (1 - FIRST_WEIGHT) * b for a, b in zip(first, after)]


def block(s: Settings, thought: str) -> str:
    """The answer turn's start once the question has thought: the label slot follows it."""
    return s.open + thought + s.close


def _number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
