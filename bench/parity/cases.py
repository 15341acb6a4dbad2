"""The parity corpus for a text profile (the embedded SmolLM2 that serve.sh serves), in the
fixed order it is sent. Each Case says in `covers` what it exercises; errors are named err_*.
The vision section is vision_cases.py (asked for with --vision).
"""
from __future__ import annotations

import json

from bodies import (DEC, ORDER, RED, S1, TICKET, b64, case, data_url, dec, deflate_bytes,
                    gzip_bytes, long_json, long_text, multipart, s1, zstd_raw_frame)

# The README's three questions, and a fourth kind: the default request for trace.py.
README_Q = {
    "refund": {"type": "noul", "instructions": "Is the customer asking for money back?"},
    "team": {"type": "choice", "instructions": "Which team should handle this?",
             "criteria": {"billing": "Payments and refunds", "tech": "Bugs and outages",
                          "sales": None}},
    "anger": {"type": "score", "instructions": "How angry is the customer?",
              "criteria": ["Calm", "Annoyed", "Furious"]}}
MIXED_Q = {**README_Q, "amount": {"type": "number",
                                  "instructions": "How many charges does the customer mention?"}}
CHOICE8 = {"type": "choice", "instructions": "What is the main topic?",
           "criteria": {"billing": "money", "shipping": "parcels", "returns": None,
                        "login": "accounts", "outage": None, "warranty": "repairs",
                        "sales": None, "other": "anything else"}}
DEC_Q = [{"type": "predicate", "name": "refund",
          "instructions": "The customer asks for money back."},
         {"type": "choice", "name": "team", "instructions": "Which team?",
          "choices": [{"value": "billing", "description": "Payments"}, {"value": "tech"},
                      {"value": "sales", "description": "New plans"}]},
         {"type": "score", "name": "anger", "instructions": "How angry?",
          "levels": [{"label": "calm"}, {"label": "annoyed", "description": "irritated"},
                     {"label": "furious"}]}]
DEFAULT_TRACE = "s1_mixed_kinds"


def layout_cases():
    q = {"topic": CHOICE8, "anger": README_Q["anger"], "refund": README_Q["refund"]}
    variants = [
        ("orders2", {"orders": 2}), ("orders2_reads", {"orders": 2, "orders_as_reads": True}),
        ("orders4", {"orders": 4}), ("orders4_reads", {"orders": 4, "orders_as_reads": True}),
        ("orders8_both_reads", {"orders": 8, "orders_as_reads": True, "both_directions": True}),
        ("both_directions", {"both_directions": True}),
        ("orders2_shrink", {"orders": 2, "shrink": 1.0}),
        ("repeat2", {"repeat": 2}), ("question_first", {"question_first": True}),
        ("question_first_off", {"question_first": False, "repeat": 2}),
        ("guard_line_off", {"guard_line": False}),
        ("indented_json", {"compact_json": False})]
    state = {"ticket": TICKET, "order": 4471}  # JSON, so compact_json matters
    return [case(f"s1_layout_{n}", S1, s1(state, q, kwargs={"layout": lay}),
                 f"kwargs.layout {json.dumps(lay)}") for n, lay in variants]


def long_cases():
    text, big = long_text(), long_json()
    q = {"broken": {"type": "noul", "instructions": "Did the customer receive a broken mug?"},
         "topic": CHOICE8, "anger": README_Q["anger"]}
    out = []
    for sel in ("bm25", "head_tail"):
        out += [case(f"s1_long_text_{sel}", S1, s1(text, q, kwargs={"layout": {
                    "state_selection": sel}}), f"~20k-token text state fitted by {sel}"),
                case(f"s1_long_json_{sel}", S1, s1(big, q, kwargs={"layout": {
                    "state_selection": sel}}), f"large JSON state fitted by {sel}")]
    longq = {"type": "noul", "instructions": " ".join(["Is this about a refund?"] * 900)}
    out.append(case("s1_long_question", S1, s1(TICKET, {"q": longq}),
                    "instructions alone over the context: question shortened"))
    out.append(case("s1_long_two_way", S1, s1(text, {"broken": q["broken"]},
                                              attention_mode="two-way"),
                    "two-way read of a fitted long state (the plugin's one-step budget)"))
    out.append(case("dec_long_input", DEC, dec(text, DEC_Q), "decisions: long input fitted"))
    return out


def main_cases():
    noul_forms = {
        "one_true": {"type": "noul", "criteria": {"true": "The customer wants a refund"}},
        "one_false": {"type": "noul", "instructions": "Refund?",
                      "criteria": {"false": "No money is asked for"}},
        "both": {"type": "noul", "instructions": {"task": "refund?", "include": ["charges"]},
                 "criteria": {"true": "asks for money", "false": None}},
        "null_criteria": {"type": "noul", "instructions": "Is it polite?", "criteria": None}}
    unicode_choice = {"type": "choice", "instructions": "Language?", "criteria": {
        "English": None, "한국어": "Korean", "🎯 target": {"note": "emoji"}, "with space": None}}
    score10 = {"type": "score", "instructions": "Urgency from 0 to 9?", "criteria": [
        f"level {i}" for i in range(9)] + [{"label": "top", "why": "outage"}]}
    return [
        case("s1_readme", S1, s1(TICKET, README_Q), "README example: noul, choice, score"),
        case("s1_mixed_kinds", S1, s1(ORDER, MIXED_Q), "noul, choice, score, number at once"),
        case("s1_concrete_model", S1, {**s1(TICKET, README_Q),
                                       "model": "onepass-smollm2-135m-instruct"},
             "the concrete model name echoed"),
        case("s1_noul_forms", S1, s1(TICKET, noul_forms),
             "noul: one-sided, structured and null criteria, no instructions"),
        case("s1_choice_unicode", S1, s1(TICKET, {"언어 🎯": unicode_choice, "q.2": CHOICE8}),
             "choice: unicode/emoji option names and ids, null and object descriptions"),
        case("s1_choice_30", S1, s1(ORDER, {"pick": {"type": "choice", "criteria": {
            f"opt{i:02d}": f"option number {i}" for i in range(30)}}}),
             "choice with 30 options (two-letter labels)"),
        case("s1_score_10", S1, s1(TICKET, {"urgency": score10}), "score with 10 levels"),
        case("s1_score_2", S1, s1(TICKET, {"s": {"type": "score", "criteria": ["no", "yes"]}}),
             "score with 2 levels, no instructions"),
        case("s1_number", S1, s1(ORDER, {"n": {"type": "number",
                                                "instructions": "What is the order number?"},
                                          "m": {"type": "number",
                                                "instructions": "How many items were returned?"}}),
             "two number questions (constrained generations)"),
        case("s1_json_state", S1, s1({"subject": "Double charge", "body": TICKET,
                                      "meta": {"n": [1, 2.5, None, True]}}, README_Q),
             "object state"),
        case("s1_list_state", S1, s1([TICKET, "Second message: still waiting."], README_Q),
             "array state"),
        case("s1_unknown_top_fields", S1, s1(TICKET, README_Q, x_trace_id="abc", seed=3,
                                             reasoning={"effort": "low"}),
             "unknown top-level fields (and a bare `reasoning`) ignored"),
        case("s1_alias_route", "/systemone", s1(TICKET, README_Q), "the /systemone alias"),
        case("s1_calibration", S1, s1(TICKET, README_Q, kwargs={"calibration": {
            "temperature": {"noul": 1, "choice": 1, "score": 1}, "label_prior": {}}}),
             "kwargs.calibration: untempered, prior off"),
        case("s1_calibration_partial", S1, s1(TICKET, README_Q, kwargs={"calibration": {
            "temperature": {"choice": 2.0}, "noul_floor": 0.8,
            "label_prior": {"choice": {"3": [-1.0, -0.5, -0.25]}}}}),
             "kwargs.calibration: one temperature, noul_floor, a custom prior"),
        case("s1_reread", S1, s1(TICKET, README_Q, kwargs={"calibration": {
            "reread_below": 0.99}}), "re-read of low-confidence questions (reread_below 0.99)"),
        case("s1_reread_orders", S1, s1(TICKET, {"topic": CHOICE8}, kwargs={
            "calibration": {"reread_below": 0.99, "temperature": {"choice": 1}},
            "layout": {"orders": 2, "orders_as_reads": True}}), "re-read with orders as reads"),
        *layout_cases(),
        case("s1_two_way", S1, s1(TICKET, README_Q, attention_mode="two-way"),
             "attention_mode two-way"),
        case("s1_bidirectional_kwargs", S1, s1(TICKET, README_Q,
                                               kwargs={"attention_mode": "bidirectional"}),
             "kwargs.attention_mode bidirectional"),
        case("s1_causal", S1, s1(TICKET, README_Q, attention_mode="causal"),
             "attention_mode causal, explicit"),
        case("s1_one_way_same", S1, s1(TICKET, README_Q, attention_mode="one-way",
                                       kwargs={"attention_mode": "causal"}),
             "one-way and causal named twice (the same mode)"),
        case("s1_two_way_layout", S1, s1(TICKET, {"topic": CHOICE8}, attention_mode="two-way",
                                         kwargs={"layout": {"orders": 2}}),
             "two-way with orders 2"),
        case("s1_reason_on", S1, s1(ORDER, MIXED_Q, kwargs={"reasoning": {"mode": "on",
                                                                          "trace": True}}),
             "reasoning on, traced thoughts, number after a thought"),
        case("s1_reason_auto", S1, s1(TICKET, README_Q, kwargs={"reasoning": {}}),
             "reasoning auto (default mode when kwargs.reasoning is given)"),
        case("s1_reason_off", S1, s1(TICKET, README_Q, kwargs={"reasoning": {"mode": "off"}}),
             "reasoning off, explicit"),
        case("s1_reason_two_way", S1, s1(TICKET, {"refund": README_Q["refund"]},
                                         attention_mode="two-way",
                                         kwargs={"reasoning": {"mode": "on"}}),
             "reasoning on with a two-way read"),
        *long_cases(),
        *encoding_cases(),
        case("dec_readme", DEC, dec("I was charged twice. Please refund one.", DEC_Q),
             "decisions: predicate, choice, score"),
        case("dec_typed_choices", DEC, dec(TICKET, [
            {"type": "choice", "instructions": "Refund approved?",
             "choices": [{"value": True}, {"value": False}, {"value": "true"}]},
            {"type": "predicate", "instructions": "Polite?"}]),
             "decisions: boolean and string values kept apart, unnamed questions"),
        case("dec_messages", DEC, dec([
            {"role": "system", "content": "Support desk."},
            {"role": "developer", "content": [{"type": "input_text", "text": "Be brief."}]},
            {"role": "user", "content": [{"type": "input_text", "text": TICKET},
                                         {"type": "input_json", "data": {"order": 4471}}]},
            {"type": "message", "role": "assistant", "content": [
                {"type": "output_text", "text": "Looking."}, {"type": "refusal",
                                                              "refusal": "no"}]},
            {"type": "function_call", "call_id": "c1", "name": "lookup",
             "arguments": "{\"order\": 4471}"},
            {"type": "function_call_output", "call_id": "c1", "output": "two charges"}],
            [{**DEC_Q[0], "instructions": [{"type": "input_text", "text": "Refund asked?"}]},
             DEC_Q[1]]), "decisions: every input item kind, instruction parts"),
        case("dec_layout_calibration", DEC, dec(TICKET, DEC_Q, kwargs={
            "layout": {"orders": 3, "orders_as_reads": True, "both_directions": True},
            "calibration": {"temperature": {"choice": 1}, "reread_below": 0.9}}),
             "decisions: kwargs.layout and calibration, re-read"),
        case("dec_two_way", DEC, dec(TICKET, DEC_Q, attention_mode="two-way"),
             "decisions: two-way"),
        case("dec_reason_on", DEC, dec(TICKET, DEC_Q[:2], kwargs={"reasoning": {
            "mode": "on", "trace": True}}), "decisions: reasoning on, traced"),
        case("dec_ignored_fields", "/decisions", dec(TICKET, DEC_Q, prompt_cache_key="k",
                                                     safety_identifier="u1", stream=False),
             "decisions: /decisions alias, ignored fields, stream false"),
        *image_refusals(),
        *binding_cases(),
    ]


def binding_cases():
    """Choices asked again with their options in another order: read as option sets, each
    option gets the probability it got in s1_readme, s1_choice_unicode and dec_readme
    (tests/unit/answers/ checks it)."""
    team = README_Q["team"]
    back = dict(reversed(team["criteria"].items()))
    topic = dict(list(CHOICE8["criteria"].items())[3:] + list(CHOICE8["criteria"].items())[:3])
    dec_q = [DEC_Q[0], {**DEC_Q[1], "choices": DEC_Q[1]["choices"][::-1]}, DEC_Q[2]]
    return [case("s1_options_reordered", S1, s1(TICKET, {
                "team": {**team, "criteria": back}, "q.2": {**CHOICE8, "criteria": topic}}),
                 "choices of s1_readme and s1_choice_unicode, options in another order"),
            case("dec_options_reordered", DEC, dec("I was charged twice. Please refund one.",
                                                   dec_q),
                 "dec_readme with the choice's options reversed")]


def encoding_cases():
    raw = json.dumps(s1(TICKET, README_Q)).encode()
    body, headers = multipart(s1(TICKET, README_Q), {})
    return [case("s1_gzip", S1, gzip_bytes(raw), "gzip request body",
                 {"Content-Type": "application/json", "Content-Encoding": "gzip"}),
            case("s1_deflate", S1, deflate_bytes(raw), "deflate request body",
                 {"Content-Type": "application/json", "Content-Encoding": "deflate"}),
            case("s1_zstd", S1, zstd_raw_frame(raw), "zstd request body (raw-block frame)",
                 {"Content-Type": "application/json", "Content-Encoding": "zstd"}),
            case("s1_multipart_plain", S1, body, "multipart body, no assets", headers)]


def image_refusals():
    """Images sent to a text profile: its refusal is part of the contract too."""
    q = {"red": {"type": "noul", "instructions": "Is [image 1] red?"}}
    body, headers = multipart({**s1("see <<photo>>", q), "assets": {
        "<<photo>>": {"type": "image", "part": "asset-0"}}}, {"asset-0": (RED, "image/png")})
    return [
        case("err_s1_image_in_state", S1, s1({"photo": data_url(RED)}, q),
             "text profile: data URL in the state refused (422)"),
        case("err_s1_image_asset", S1, {**s1("see <<p>>", q), "assets": {"<<p>>": {
            "type": "image", "format": "png", "data_base64": b64(RED)}}},
             "text profile: data_base64 asset refused"),
        case("err_s1_image_multipart", S1, body, "text profile: multipart asset refused",
             headers),
        case("err_s1_box_text_profile", S1, s1(TICKET, {
            "where": {"type": "box", "instructions": "the red area"}}),
             "text profile: box question refused (422 at its type)"),
        case("err_dec_input_image", DEC, dec([{"role": "user", "content": [
            {"type": "input_image", "image_url": data_url(RED)}]}], DEC_Q[:1]),
             "text profile: decisions input_image refused (400)")]
