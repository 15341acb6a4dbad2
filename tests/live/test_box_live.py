"""Box questions end to end on the real stack: serve.sh with the vision profile (VISION_PROFILE:
a small Idefics3 trained here on the box scenes) on vLLM CPU, the generation constrained by
vLLM's structured outputs (xgrammar), the present and edge reads through the vision path.

These tests check plumbing and invariants: every image form gives the same answer, every mode
answers in range, what the model wrote is converted by the profile's convention, refusals are
4xx in the contract's shape, nothing of an image or a box reaches a log. How good the boxes are
is test_box_grounding_live.py's.
"""
import base64
import json
import sys
import threading
from http.server import ThreadingHTTPServer

from tests.support.image_requests import RED, Images, multipart, url
from tests.support.json_http import request
from tests.support.live_stack import ROOT, VISION_PROFILE, free_port, start_shim, wait_health

from onepass.backend.warmup import png
from onepass.kinds import box_geometry
from onepass.profile import load_profile

sys.path[:0] = [str(ROOT / "bench" / d) for d in ("data", "measure")]
import box_scenes  # noqa: E402
import determinism  # noqa: E402

CONVENTION = box_geometry.convention(load_profile(
    str(ROOT / "serve_config.json"), VISION_PROFILE)[1].vision.box["convention"])
KEYS = {"type", "box", "confidence", "present", "found", "x_box_mode", "x_box_logprob",
        "x_box_raw"}
FIND = {"type": "box", "instructions": "the red square in `photo`"}
# Eval items of the box scenes' --solo set (one object each: the target, or for an absent item
# a near miss), the kind of image the model was trained to box.
SCENES = [box_scenes.lone(0, i, 200) for i in range(1, 13, 2)]


def ask(stack, state, questions, path="/v1/systemone", **extra):
    return stack.request("POST", path, {"model": "jev-latest", "state": state,
                                        "questions": questions, **extra})


def answered(stack, state, questions, **extra):
    status, _, doc = ask(stack, state, questions, **extra)
    assert status == 200, doc
    return doc


def check_shape(a: dict, mode: str) -> None:
    """The contract's box answer and onepass's invariants, whatever the model wrote."""
    assert set(a) == KEYS and a["type"] == "box", a
    b = a["box"]
    assert 0 <= b["left"] < b["right"] <= 1 and 0 <= b["top"] < b["bottom"] <= 1, b
    assert 0 <= a["confidence"] <= 1 and 0 <= a["present"] <= 1 and isinstance(a["found"], bool)
    assert a["x_box_mode"] == mode or (mode == "hybrid" and a["x_box_mode"] in ("generate",
                                                                                "edges"))
    if not a["found"]:
        assert (b["left"], b["top"], b["right"], b["bottom"]) == box_geometry.WHOLE
        assert a["confidence"] == 0 and a["x_box_logprob"] is None
    else:
        assert a["x_box_logprob"] <= 0


def test_every_mode_answers_in_range(vision_stack):
    """generate, edges, hybrid (as the question's box.mode and as kwargs.box.mode) beside a
    noul: answers in range; generations count output tokens, reads do not; the box's reads and
    generation add to the input tokens."""
    photo = {"photo": url(RED)}
    plain = answered(vision_stack, photo, {"n": {"type": "noul", "instructions": "Red?"}})
    assert plain["usage"]["output_tokens"] == 0
    for mode in ("generate", "edges", "hybrid"):
        for doc in (answered(vision_stack, photo, {"b": {**FIND, "box": {"mode": mode}},
                                                   "n": {"type": "noul", "instructions": "Red?"}}),
                    answered(vision_stack, photo, {"b": FIND, "n": {"type": "noul",
                                                                    "instructions": "Red?"}},
                             kwargs={"box": {"mode": mode}})):
            check_shape(doc["answers"]["b"], mode)
            generated = doc["usage"]["output_tokens"]
            assert (generated > 0) == (mode != "edges"), (mode, doc["usage"])
            assert doc["usage"]["input_tokens"] > plain["usage"]["input_tokens"]
            assert doc["answers"]["n"] == plain["answers"]["n"]  # the box leaves others alone
        if mode == "edges":
            assert doc["answers"]["b"]["found"] and doc["answers"]["b"]["x_box_raw"] is None


def test_the_profiles_convention_converts_what_the_model_wrote(vision_stack):
    """What the model wrote (x_box_raw) obeys the schema (four integers within the grid: the
    constraint holds on this vLLM) and the answer is box_geometry's conversion of it: found
    exactly when a box is left, and then that box."""
    written = 0
    for item in SCENES:
        image = box_scenes.data_url(box_scenes.render(item))
        doc = answered(vision_stack, {"photo": image},
                       {"b": {"type": "box", "instructions": item["instructions"]}})
        a = doc["answers"]["b"]
        check_shape(a, "generate")
        raw = a["x_box_raw"]
        if raw is None:
            assert not a["found"]
            continue
        written += 1
        assert len(raw) == 4 and all(type(v) is int and 0 <= v <= CONVENTION.scale for v in raw)
        size = (item["width"], item["height"])
        expect = box_geometry.to_fractions(raw, CONVENTION, size, size)
        assert a["found"] == (expect is not None), a
        if expect is not None:
            assert tuple(a["box"].values()) == expect
    assert written >= 1, "the model wrote no box for any scene: the conversion went unchecked"


def test_every_image_form_gives_the_same_box(vision_stack):
    """The same bytes as a state data URL, a chat part, an OpenAI part, an inline asset, a
    multipart asset, the images list and (through a shim allowed to fetch) a link: the same
    answer, byte for byte (greedy, and the image reaches vLLM the same way)."""
    q = {"b": {**FIND, "box": {"mode": "hybrid"}}}
    inline = answered(vision_stack, {"photo": url(RED)}, q)["answers"]
    forms = [answered(vision_stack, {"photo": {"type": "image_url",
                                               "image_url": {"url": url(RED)}}}, q),
             answered(vision_stack, {"photo": {"type": "input_image", "image_url": url(RED)}}, q),
             answered(vision_stack, {"photo": "[image 1]"}, q, images=[url(RED)])]
    ph = "<image:38e7ceb377534468bba143e212050716>"
    forms.append(answered(vision_stack, {"photo": ph}, q, assets={ph: {
        "type": "image", "format": "png", "data_base64": base64.b64encode(RED).decode()}}))
    raw, ctype = multipart({"state": {"photo": ph}, "model": "jev-latest", "questions": q,
                            "assets": {ph: {"type": "image", "part": "asset-0"}}},
                           {"asset-0": RED})
    status, _, doc = vision_stack.request("POST", "/v1/systemone", raw, {"Content-Type": ctype})
    assert status == 200, doc
    forms.append(doc)
    server = ThreadingHTTPServer(("127.0.0.1", 0), Images)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = free_port()
    shim = start_shim(vision_stack.vllm_url, port, {"ONEPASS_IMAGE_LINKS": "all",
                                                    "ONEPASS_IMAGE_LINKS_HTTP": "true",
                                                    "ONEPASS_IMAGE_LINK_PORTS":
                                                    str(server.server_port)},
                      ("--profile", VISION_PROFILE))
    try:
        base = f"http://127.0.0.1:{port}"
        wait_health(base, {"ok"})
        status, _, doc = request(base, "POST", "/v1/systemone", {
            "model": "jev-latest", "state": {"photo": "[image 1]"}, "questions": q,
            "images": [f"http://127.0.0.1:{server.server_port}/red.png"]})
        assert status == 200, doc
        forms.append(doc)
    finally:
        shim.terminate()
        shim.wait(timeout=30)
        server.shutdown()
    for doc in forms:
        assert doc["answers"] == inline


def test_refusals_are_4xx_in_the_contracts_shape(vision_stack, stack):
    """No image, two images, more box questions than the limit, an unknown mode: 422 at the
    field; /v1/decisions: 400 naming the field; a text-only profile: 422 saying why. The
    server answers the next request."""
    photo = {"photo": url(RED)}
    cases = [({"note": "no image"}, {"b": FIND}, ["body", "questions", "b", "box"], "has 0"),
             ({"a": url(RED), "b": url(RED)}, {"b": FIND}, ["body", "questions", "b", "box"],
              "has 2"),
             (photo, {f"b{i}": FIND for i in range(5)}, ["body", "questions"], "at most 4 box"),
             (photo, {"b": {**FIND, "box": {"mode": "guess"}}},
              ["body", "questions", "b", "box", "box", "mode"], "must be one of")]
    for state, questions, loc, words in cases:
        status, _, doc = ask(vision_stack, state, questions)
        assert status == 422 and doc["detail"][0]["loc"] == loc, doc
        assert words in doc["detail"][0]["msg"], doc
    status, _, doc = vision_stack.request("POST", "/v1/decisions", {
        "model": "jev-latest", "input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": url(RED)}]}],
        "questions": [{"type": "box", "instructions": "the square"}]})
    assert status == 400 and doc["error"]["param"] == "questions[0].type", doc
    assert "/v1/systemone" in doc["error"]["message"]
    status, _, doc = ask(stack, photo, {"b": FIND})
    assert status == 422 and "vision-language" in doc["detail"][0]["msg"], doc
    answered(vision_stack, photo, {"b": FIND})


def test_repeated_requests_give_the_same_box(vision_stack):
    """Greedy generation and reads: the same request twice is the same answer; and a fresh
    picture's box and reads alone (cold cache), beside background requests, then warm:
    byte-identical (bench/measure/determinism.py --box, the loop of test_determinism_live.py)."""
    q = {"b": {**FIND, "box": {"mode": "hybrid"}}, "c": {
        "type": "choice", "instructions": "Colour?", "criteria": {"red": None, "blue": None}}}
    first = answered(vision_stack, {"photo": url(RED)}, q)
    assert answered(vision_stack, {"photo": url(RED)}, q)["answers"] == first["answers"]
    got = determinism.compare(vision_stack.url, requests=2, reasoning_every=0, first=9000,
                              box=True)
    assert got["pairs"] == 4 and got["differing"] == 0, got


def test_no_image_or_box_reaches_a_log(vision_stack):
    """Neither the image's bytes nor what the model wrote (the box, its raw numbers) is
    logged by the shim or by vLLM."""
    secret = png(23, 17, (3, 1, 4))
    doc = answered(vision_stack, {"photo": url(secret)}, {"b": {**FIND, "box": {
        "mode": "hybrid"}}})
    a = doc["answers"]["b"]
    needles = [base64.b64encode(secret).decode()[:40], json.dumps(a["box"]),
               str(a["box"]["left"]), '"box":']
    if a["x_box_raw"] is not None:
        needles.append(json.dumps(a["x_box_raw"], separators=(",", ":")))
    for log in vision_stack.log_dir.glob("*.log"):
        text = log.read_text(errors="replace")
        for needle in needles:
            assert needle not in text, (log.name, needle)
