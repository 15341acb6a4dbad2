"""Prompt layout: each question becomes one Read (a chat prompt plus its label token ids).

Owns: the prompt wording, the chat turn wrapping from the profile, the label map.
Never: checks labels against the tokenizer (probes.py does, once) or touches HTTP.
In: a Decision, the profile and the verified LabelSet. Out: one Read per question, in order.
The question id is never part of a prompt; each prompt depends only on its own question.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .config import Profile
from .decision import CHOICE, NOUL, Decision, Question, Read
from .errors import InvalidRequest, Problem


@dataclass(frozen=True)
class LabelSet:
    """Labels proven to be single tokens at the answer slot, with their token ids."""
    noul: tuple[tuple[str, int], ...]  # (true label, id), (false label, id)
    choice: tuple[tuple[str, int], ...]  # usable choice labels, in profile order
    score: tuple[tuple[str, int], ...]  # level i -> label i


def wrap_chat(profile: Profile, system: str, user: str) -> str:
    """The chat prompt as the model's template renders it, ending at the answer slot."""
    t = profile.chat_template
    return (t["system"].replace("{content}", system) + t["user"].replace("{content}", user)
            + t["assistant"])


def layout(decision: Decision, profile: Profile, labels: LabelSet) -> list[Read]:
    return [replace(_read(decision.state, q, profile, labels),
                    attention_mode=decision.attention_mode) for q in decision.questions]


def _read(state: str, q: Question, profile: Profile, labels: LabelSet) -> Read:
    if q.kind == NOUL:
        pairs = labels.noul
        body = _noul_lines(q, pairs)
    elif q.kind == CHOICE:
        if len(q.options) > len(labels.choice):  # the adapter checks this too; keep layout safe
            raise InvalidRequest([Problem(("questions",), "this server accepts at most "
                                          f"{len(labels.choice)} options per choice", "too_long")])
        pairs = labels.choice[:len(q.options)]
        body = _listed_lines(q, pairs, "Options:", "the label of the best option")
    else:
        pairs = labels.score[:len(q.options)]
        body = _listed_lines(q, pairs, "Levels, lowest first:", "the label of the right level")
    user = f"Record:\n{state}\n\n" + "\n".join(body)
    return Read(prompt=wrap_chat(profile, profile.system_prompt, user),
                label_token_ids=tuple(tid for _, tid in pairs),
                option_of_label=tuple(range(len(pairs))))


def _noul_lines(q: Question, pairs) -> list[str]:
    (yes, _), (no, _) = pairs
    true_side, false_side = q.options
    lines = [f"Question: {q.instructions or 'Does the record meet the criteria below?'}"]
    if true_side.text is not None:
        lines.append(f"{yes} means: {true_side.text}")
    if false_side.text is not None:
        lines.append(f"{no} means: {false_side.text}")
    lines.append(f"Reply with {yes} or {no} only.")
    return lines


def _listed_lines(q: Question, pairs, heading: str, what: str) -> list[str]:
    lines = [f"Question: {q.instructions}"] if q.instructions is not None else []
    lines.append(heading)
    for (label, _), option in zip(pairs, q.options):
        if q.kind == CHOICE:
            text = option.key if option.text is None else f"{option.key}: {option.text}"
        else:
            text = option.text
        lines.append(f"{label}. {text}")
    lines.append(f"Reply with {what} only.")
    return lines
