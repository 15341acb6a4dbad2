"""The parity corpus's vision section (corpus.py record --vision): for a vision profile, in the
live tests the tiny random-weight Idefics3 (its answers are noise, but deterministic noise is
enough for parity). Box questions in every mode, every image form, nouls about an image, and
the image refusals a vision profile gives. The stack, as conftest.py's vision_stack starts it
(serve.sh builds the model under ~/.cache/onepass/models/idefics3-tiny on first use):

    ONEPASS_PROFILE=idefics3-tiny ONEPASS_PORT=8795 \
        ONEPASS_VLLM_PORT=8796 VLLM_CPU_OMP_THREADS_BIND=nobind bash serve.sh
    python3 bench/parity/corpus.py record --vision --shim http://127.0.0.1:8795 --out v.jsonl

A second shim on that vLLM needs `--profile idefics3-tiny` (serve.sh passes it), and so does
trace.py. On this profile the text corpus's err_s1_image_* and err_dec_input_image cases are
answered (200): their names say what the text profile does with them."""
from __future__ import annotations

from bodies import (BLUE_SQUARE, DEC, GREEN, RED, S1, TICKET, b64, case, data_url, dec,
                    multipart, s1)


def vision_cases():
    blue, red = data_url(BLUE_SQUARE), data_url(RED)
    box = lambda mode: {"type": "box", "instructions": "the blue square",  # noqa: E731
                        "box": {"mode": mode}}
    noul = {"type": "noul", "instructions": "Is [image 1] mostly red?"}
    both = {"generate": box("generate"), "edges": box("edges"), "hybrid": box("hybrid"),
            "blue": {"type": "noul", "instructions": "Is there a blue square in [image 1]?"}}
    body, headers = multipart({**s1({"photo": "<<p>>"}, {"where": box("generate")}),
                               "assets": {"<<p>>": {"type": "image", "part": "asset-0"}}},
                              {"asset-0": (BLUE_SQUARE, "image/png")})
    return [
        case("v_box_modes", S1, s1({"photo": blue}, both),
             "vision: box in generate, edges, hybrid beside a noul"),
        case("v_box_kwargs_mode", S1, s1({"photo": blue}, {
            "a": {"type": "box", "instructions": "the blue square"}},
            kwargs={"box": {"mode": "edges"}}), "vision: kwargs.box.mode for every box"),
        case("v_box_default_mode", S1, s1(blue, {"a": {"type": "box",
                                                       "instructions": "the square"}}),
             "vision: box without a mode (generate), image as the whole state"),
        case("v_box_multipart", S1, body, "vision: box on a multipart asset", headers),
        case("v_noul_image", S1, s1({"photo": red, "note": TICKET}, {"red": noul}),
             "vision: noul about an image in the state"),
        case("v_images_list", S1, {**s1("Two photos.", {
            "same": {"type": "noul", "instructions": "Are [image 1] and [image 2] alike?"},
            "which": {"type": "choice", "instructions": "Which is green?",
                      "criteria": {"[image 1]": None, "[image 2]": None}}}),
            "images": [red, b64(GREEN)]}, "vision: top-level images list (data URL, base64)"),
        case("v_asset_base64", S1, {**s1("see <<p>>", {"red": noul}), "assets": {"<<p>>": {
            "type": "image", "format": "png", "data_base64": b64(RED)}}},
             "vision: data_base64 asset"),
        case("v_image_in_question", S1, s1(TICKET, {"q": {
            "type": "noul", "instructions": f"Is this red? {red}"}}),
             "vision: data URL inside the instructions"),
        case("v_calibration_image", S1, s1({"photo": red}, {"red": noul}, kwargs={
            "calibration": {"temperature": {"image": 2.0}}}),
             "vision: the image temperature"),
        case("v_reason_on_image", S1, s1({"photo": red}, {"red": noul, "b": box("generate")},
                                         kwargs={"reasoning": {"mode": "on", "trace": True}}),
             "vision: reasoning on beside a box (boxes never think)"),
        case("v_dec_input_image", DEC, dec([{"role": "user", "content": [
            {"type": "input_image", "image_url": red},
            {"type": "input_text", "text": "A product photo."}]}], [
            {"type": "choice", "instructions": "Its colour?",
             "choices": [{"value": "red"}, {"value": "blue"}]},
            {"type": "predicate", "instructions": [
                {"type": "input_text", "text": "Also this one is blue:"},
                {"type": "input_image", "image_url": blue}]}]),
             "vision: decisions input_image in input and in instructions"),
        case("err_v_box_two_images", S1, {**s1({"a": red, "b": blue}, {"w": box("generate")})},
             "vision: box with two images (422)"),
        case("err_v_box_no_image", S1, s1(TICKET, {"w": box("hybrid")}),
             "vision: box without an image (422)"),
        case("err_v_box_bad_mode", S1, s1({"p": blue}, {"w": box("corners")}),
             "vision: unknown box mode (422)"),
        case("err_v_too_many_images", S1, {**s1("x", {"r": noul}),
                                           "images": [red] * 5}, "vision: 5 images (422)"),
        case("err_v_not_an_image", S1, s1({"p": "data:image/png;base64," + b64(b"notapng")},
                                          {"r": noul}), "vision: bytes that are no image"),
        case("err_v_link", S1, {**s1("x", {"r": noul}), "images": ["http://10.0.0.1/a.png"]},
             "vision: a plain-http image link refused"),
        case("err_v_dec_box", DEC, dec([{"role": "user", "content": [
            {"type": "input_image", "image_url": blue}]}], [{"type": "box",
                                                             "instructions": "x"}]),
             "vision: decisions box (400)"),
    ]
