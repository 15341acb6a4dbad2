"""Error cases of the parity corpus (both APIs): refusals must stay byte-identical too, status,
message and all. Every one goes through the decision entry (parse, resolve, fit or decode);
nothing here is judged from the request head alone."""
from __future__ import annotations

from bodies import DEC, S1, TICKET, case, dec, gzip_bytes, s1
from cases import CHOICE8, DEC_Q, README_Q

NOUL = README_Q["refund"]


def error_cases():
    many = {f"opt{i}": None for i in range(256)}
    big_state = "refund " * (1_300_000)  # 9.1 MB: over the 8 MiB a state may be (413)
    # 70 MiB of zeros, gzip'd to ~70 KB: over the 64 MiB decoded limit (413 while decoding)
    bomb = gzip_bytes(b"0" * (70 * 1024 * 1024))
    reads = {f"q{i}": CHOICE8 for i in range(400)}  # 400 x 16 reads > max_reads 800
    problems = {f"q{i}": {"type": "choice", "criteria": {}} for i in range(120)}
    return [
        case("err_s1_malformed_json", S1, b'{"model": "jev-latest", "state": ',
             "malformed JSON (422)"),
        case("err_s1_not_object", S1, [1, 2], "a JSON array body (422)"),
        case("err_s1_missing_fields", S1, {}, "model, state, questions missing (422)"),
        case("err_s1_wrong_types", S1, {"model": 7, "state": 3.5, "questions": [NOUL]},
             "wrong JSON types at top level (422)"),
        case("err_s1_empty_questions", S1, s1(TICKET, {}), "questions: {} (422)"),
        case("err_s1_unknown_type", S1, s1(TICKET, {"b": {"type": "boolean"}}),
             "unknown question type (422)"),
        case("err_s1_missing_type", S1, s1(TICKET, {"b": {"instructions": "x"}}),
             "question without a type (422)"),
        case("err_s1_unknown_field", S1, s1(TICKET, {"t": {
            "type": "choice", "critera": {"a": None, "b": None}}}),
             "misspelled field inside a question (422)"),
        case("err_s1_question_types", S1, s1(TICKET, {
            "a": "noul", "b": {"type": "noul", "instructions": 5},
            "c": {"type": "choice", "criteria": ["x", "y"]},
            "d": {"type": "score", "criteria": {"0": "low", "1": "high"}},
            "e": {"type": "score", "criteria": ["only"]},
            "f": {"type": "score", "criteria": [str(i) for i in range(11)]},
            "g": {"type": "score", "criteria": ["a", None]},
            "h": {"type": "choice", "criteria": {"one": None}}, "": NOUL}),
             "wrong question shapes: map levels, 1/11 levels, null level, 1 option, empty id"),
        case("err_s1_too_many_options", S1, s1(TICKET, {"t": {"type": "choice",
                                                             "criteria": many}}),
             "256 options (422, capacity phrase)"),
        case("err_s1_too_many_questions", S1, s1(TICKET, {f"q{i}": NOUL for i in range(401)}),
             "401 questions (422)"),
        case("err_s1_too_many_numbers", S1, s1(TICKET, {f"n{i}": {
            "type": "number", "instructions": "How many?"} for i in range(9)}),
             "9 number questions, over the 8 allowed (422)"),
        case("err_s1_too_many_problems", S1, s1(TICKET, problems),
             "120 problems: 100 listed, then a count (422)"),
        case("err_s1_too_many_reads", S1, s1(TICKET, reads, kwargs={"layout": {
            "orders": 8, "orders_as_reads": True, "both_directions": True}}),
             "more vLLM calls than --max-reads (422 before the first)"),
        case("err_s1_unknown_model", S1, {**s1(TICKET, {"r": NOUL}), "model": "smollm2"},
             "unknown model (404)"),
        case("err_s1_bad_mode", S1, s1(TICKET, {"r": NOUL}, attention_mode="sideways"),
             "unknown attention_mode (422)"),
        case("err_s1_mode_conflict", S1, s1(TICKET, {"r": NOUL}, attention_mode="two-way",
                                            kwargs={"attention_mode": "causal"}),
             "attention_mode and kwargs.attention_mode disagree (400)"),
        case("err_s1_bad_layout", S1, s1(TICKET, {"r": NOUL}, kwargs={"layout": {
            "orders": 9}}), "kwargs.layout orders 9 (422)"),
        case("err_s1_layout_unknown_key", S1, s1(TICKET, {"r": NOUL}, kwargs={"layout": {
            "ordering": 2}}), "kwargs.layout unknown key (422)"),
        case("err_s1_layout_selection", S1, s1(TICKET, {"r": NOUL}, kwargs={"layout": {
            "state_selection": "tail"}}), "kwargs.layout unknown state_selection (422)"),
        case("err_s1_bad_calibration", S1, s1(TICKET, {"r": NOUL}, kwargs={"calibration": {
            "temperature": {"noul": 0}, "noul_floor": 0.3}}), "calibration out of range (422)"),
        case("err_s1_calibration_fitted", S1, s1(TICKET, {"r": NOUL}, kwargs={
            "calibration": {"fitted": {}}}), "calibration.fitted set by a request (422)"),
        case("err_s1_kwargs_types", S1, s1(TICKET, {"r": NOUL}, kwargs={"layout": 3,
                                                                        "calibration": []}),
             "kwargs.layout / calibration not objects (422)"),
        case("err_s1_bad_reasoning", S1, s1(TICKET, {"r": NOUL}, kwargs={"reasoning": {
            "mode": "always", "budget_ms": 0, "depth": 3}}),
             "kwargs.reasoning bad mode, budget, unknown key (422)"),
        case("err_s1_reasoning_type", S1, s1(TICKET, {"r": NOUL}, kwargs={"reasoning": "on"}),
             "kwargs.reasoning not an object (422)"),
        case("err_s1_state_too_large", S1, s1(big_state, {"r": NOUL}),
             "a 9 MB state, over what can be cut (413)"),
        case("err_s1_gzip_bomb", S1, bomb, "gzip body decoding past 64 MiB (413)",
             {"Content-Type": "application/json", "Content-Encoding": "gzip"}),
        case("err_s1_bad_gzip", S1, b"\x1f\x8b\x08\x00garbage", "a corrupt gzip body",
             {"Content-Type": "application/json", "Content-Encoding": "gzip"}),
        case("err_s1_content_type", S1, b'{"model": "jev-latest"}', "text/plain body (415)",
             {"Content-Type": "text/plain"}),
        case("err_s1_not_utf8", S1, b'{"model": "\xff"}', "a body that is not UTF-8"),
        case("err_s1_nan", S1, b'{"model": "jev-latest", "state": NaN, "questions": {}}',
             "NaN in the body"),
        case("err_s1_multipart_no_request", S1,
             b"--b\r\nContent-Disposition: form-data; name=\"x\"\r\n\r\n1\r\n--b--\r\n",
             "multipart without a request part (422)",
             {"Content-Type": "multipart/form-data; boundary=b"}),
        case("err_s1_asset_unused", S1, {**s1(TICKET, {"r": NOUL}), "assets": {}},
             "assets: {} (422)"),
        case("err_dec_malformed_json", DEC, b'{"model": ', "decisions: malformed JSON (400)"),
        case("err_dec_missing", DEC, {"model": "jev-latest"},
             "decisions: input and questions missing (400)"),
        case("err_dec_unknown_field", DEC, dec(TICKET, [{**DEC_Q[0], "weight": 2}]),
             "decisions: unknown key in a question (400)"),
        case("err_dec_wrong_types", DEC, {"model": "jev-latest", "input": 5,
                                          "questions": {"a": 1}},
             "decisions: wrong types (400)"),
        case("err_dec_empty_questions", DEC, dec(TICKET, []), "decisions: 0 questions (400)"),
        case("err_dec_number", DEC, dec(TICKET, [{"type": "number", "instructions": "n?"}]),
             "decisions: number is System One only (400)"),
        case("err_dec_box", DEC, dec(TICKET, [{"type": "box", "instructions": "where?"}]),
             "decisions: box (400)"),
        case("err_dec_unknown_type", DEC, dec(TICKET, [{"type": "noul", "instructions": "x"}]),
             "decisions: a System One type name (400)"),
        case("err_dec_choices", DEC, dec(TICKET, [
            {"type": "choice", "instructions": "x", "choices": [{"value": f"v{i}"}
                                                               for i in range(256)]},
            {"type": "choice", "instructions": "y", "choices": [{"value": "a"}, {"value": "a"}]},
            {"type": "score", "instructions": "z", "levels": [{"label": "one"}]}]),
             "decisions: 256 choices, duplicates, one level (400)"),
        case("err_dec_unknown_model", DEC, {**dec(TICKET, DEC_Q[:1]), "model": "gpt-6-luna"},
             "decisions: unknown model (404 model_not_found)"),
        case("err_dec_stream", DEC, dec(TICKET, DEC_Q[:1], stream=True),
             "decisions: stream true (400)"),
        case("err_dec_call_id", DEC, dec([{"type": "function_call_output", "call_id": "zz",
                                           "output": "x"}, {"role": "robot", "content": "hi"}],
                                         DEC_Q[:1]),
             "decisions: tool output without its call, unknown role (400)"),
        case("err_dec_mode_conflict", DEC, dec(TICKET, DEC_Q[:1], attention_mode="causal",
                                               kwargs={"attention_mode": "two-way"}),
             "decisions: mode conflict (400)"),
        case("err_dec_bad_layout", DEC, dec(TICKET, DEC_Q[:1], kwargs={"layout": {
            "repeat": 5}}), "decisions: kwargs.layout repeat 5 (400)"),
    ]
