"""Images end to end on the real stack: serve.sh with the vision profile (VISION_PROFILE, a small
Idefics3 trained only on box scenes) on vLLM CPU, every input form through vLLM's chat route
and vision tower. These questions are not what the model was trained on, so the tests check
plumbing: an answer moves when the image changes,
the same image sent in different forms reads exactly the same, limits are 422s naming the image.
"""
import base64
import json
import threading
from http.server import ThreadingHTTPServer

import pytest

from onepass.backend.warmup import png
from tests.support.image_requests import BLUE, RED, Images, multipart, url
from tests.support.json_http import request
from tests.support.live_stack import (ROOT, VISION_PROFILE, free_port, start_shim, vllm_auth,
                                      wait_health)
from tests.support.openai_client import client

from onepass.config import load_profile

SERVED = load_profile(str(ROOT / "serve_config.json"), VISION_PROFILE)[1].served_model_name

QUESTIONS = {"colour": {"type": "choice", "instructions": "Which colour is [image 1]?",
                        "criteria": {"red": None, "blue": None, "green": "grass"}},
             "dark": {"type": "noul", "instructions": "Is the picture dark?"},
             "bright": {"type": "score", "criteria": ["dim", "normal", "bright"]}}


def answers(stack, state, path="/v1/systemone", **extra):
    status, _, doc = stack.request("POST", path, {"model": "jev-latest", "state": state,
                                                  "questions": QUESTIONS, **extra})
    assert status == 200, doc
    return doc


def numbers(doc) -> list:
    a = doc["answers"]
    return [*a["colour"]["probabilities"].values(), a["dark"]["noul"],
            *a["bright"]["probabilities"].values()]


def test_the_answer_moves_with_the_image_and_repeats_for_the_same(vision_stack):
    red = answers(vision_stack, {"photo": url(RED), "note": "a product photo"})
    blue = answers(vision_stack, {"photo": url(BLUE), "note": "a product photo"})
    again = answers(vision_stack, {"photo": url(RED), "note": "a product photo"})
    assert numbers(red) == numbers(again)
    assert max(abs(a - b) for a, b in zip(numbers(red), numbers(blue))) > 1e-3
    assert red["usage"]["images"] == 1
    text_only = answers(vision_stack, {"photo": "none", "note": "a product photo"})
    assert "images" not in text_only["usage"]
    # vLLM's own count: each of the three questions' reads carries the image's tokens
    assert red["usage"]["input_tokens"] > text_only["usage"]["input_tokens"] + 3 * 20


def test_every_form_of_the_same_image_reads_the_same(vision_stack):
    """The same bytes in the same place: a data URL in the state, a chat-style part, an
    OpenAI-style part, a TypeSafe asset (inline base64 and multipart) give identical answers.
    The `images` list (data URL, bare base64) shows the image in the same place too."""
    inline = numbers(answers(vision_stack, {"photo": url(RED)}))
    chat = numbers(answers(vision_stack, {"photo": {"type": "image_url",
                                                    "image_url": {"url": url(RED)}}}))
    openai_part = numbers(answers(vision_stack, {"photo": {"type": "input_image",
                                                           "image_url": url(RED)}}))
    ph = "<image:38e7ceb377534468bba143e212050716>"
    asset = numbers(answers(vision_stack, {"photo": ph}, assets={ph: {
        "type": "image", "format": "png", "data_base64": base64.b64encode(RED).decode()}}))
    raw, ctype = multipart({"state": {"photo": ph}, "model": "jev-latest",
                            "questions": QUESTIONS,
                            "assets": {ph: {"type": "image", "part": "asset-0"}}},
                           {"asset-0": RED})
    status, _, doc = vision_stack.request("POST", "/v1/systemone", raw,
                                          {"Content-Type": ctype})
    assert status == 200, doc
    assert inline == chat == openai_part == asset == numbers(doc)
    listed = [numbers(answers(vision_stack, {"photo": "[image 1]"}, images=[form]))
              for form in (url(RED), base64.b64encode(RED).decode(),
                           {"type": "image_url", "image_url": {"url": url(RED)}})]
    assert listed[0] == listed[1] == listed[2] == inline


def test_a_placeholder_used_twice_shows_the_image_once(vision_stack):
    ph = "<<photo>>"
    raw, ctype = multipart({"state": f"Look at {ph}. Again: {ph}", "model": "jev-latest",
                            "questions": {"q": {"type": "noul",
                                                "instructions": f"Is {ph} red?"}},
                            "assets": {ph: {"type": "image", "part": "asset-0"}}},
                           {"asset-0": RED})
    status, _, doc = vision_stack.request("POST", "/v1/systemone", raw, {"Content-Type": ctype})
    assert status == 200 and doc["usage"]["images"] == 1, doc


def test_openai_input_image_with_the_real_client(vision_stack):
    """openai 3.51: an input_image part on /v1/decisions answers 200 with usage.images."""
    out = client(vision_stack.url + "/v1", "image")  # asserts the client's version
    assert [a["type"] for a in out["answers"]] == ["predicate", "choice"]
    assert out["usage"]["images"] == 1 and out["usage_types"] == ["int"]


def test_limits_and_bad_images_are_422_naming_the_image(vision_stack):
    q = {"q": {"type": "noul", "instructions": "Red?"}}
    cases = [({"images": [url(RED)] * 5}, ["body", "images", 4], "at most 4 images"),
             ({"images": [url(RED), "data:image/png;base64,AAAA"]}, ["body", "images", 1],
              "image 2: "),
             ({"images": ["bm90IGFuIGltYWdl"]}, ["body", "images", 0], "not a PNG"),
             ({"state": {"a": "data:image/png;base64," + base64.b64encode(b"GIF89a").decode()}},
              ["body", "state", "a"], "image 1: "),
             ({"images": ["https://127.0.0.1/a.png"]}, ["body", "images", 0],
              "image 1: the image link could not be fetched")]
    for extra, loc, msg in cases:
        body = {"model": "jev-latest", "state": "x", "questions": q, **extra}
        status, _, doc = vision_stack.request("POST", "/v1/systemone", body)
        assert status == 422, (extra, doc)
        assert doc["detail"][0]["loc"] == loc and msg in doc["detail"][0]["msg"], doc
    status, _, doc = vision_stack.request("GET", "/health")
    assert status == 200


def test_a_text_model_says_it_reads_text_only(stack):
    q = {"q": {"type": "noul", "instructions": "Red?"}}
    status, _, doc = stack.request("POST", "/v1/systemone", {"model": "jev-latest",
                                                             "state": {"a": url(RED)},
                                                             "questions": q})
    assert status == 422 and doc["detail"][0]["loc"] == ["body", "state", "a"]
    assert "reads text only" in doc["detail"][0]["msg"]


def test_repetition_shows_the_images_in_every_copy(vision_stack):
    one = answers(vision_stack, {"photo": url(RED)})
    two = answers(vision_stack, {"photo": url(RED)}, kwargs={"layout": {"repeat": 2}})
    assert two["usage"]["input_tokens"] >= 2 * one["usage"]["input_tokens"] - 3 * 60
    assert two["usage"]["images"] == 1


def test_two_way_reads_images_too(vision_stack):
    status, _, health = vision_stack.request("GET", "/health")
    if "bidirectional" not in health["attention_modes"]:
        pytest.skip("the engine plugin is not live on this stack")
    causal = numbers(answers(vision_stack, {"photo": url(RED)}))
    two_way = answers(vision_stack, {"photo": url(RED)}, attention_mode="bidirectional")
    assert two_way["x_attention_mode"] == "bidirectional" and numbers(two_way) != causal


def test_links_fetched_by_the_shim_read_like_inline_images(vision_stack):
    """A second shim allowing private addresses, http and the server's port
    (ONEPASS_IMAGE_LINKS=all, a trusted network) fetches a link from a local server; the
    default shim refuses the same link."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), Images)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    link = f"http://127.0.0.1:{server.server_port}"
    port = free_port()
    shim = start_shim(vision_stack.vllm_url, port, {"ONEPASS_IMAGE_LINKS": "all",
                                                    "ONEPASS_IMAGE_LINKS_HTTP": "true",
                                                    "ONEPASS_IMAGE_LINK_PORTS":
                                                    str(server.server_port)},
                      ("--profile", VISION_PROFILE))
    try:
        wait_health(f"http://127.0.0.1:{port}", {"ok"})
        base = f"http://127.0.0.1:{port}"
        fetched = request(base, "POST", "/v1/systemone", {
            "model": "jev-latest", "state": {"photo": "[image 1]"}, "questions": QUESTIONS,
            "images": [link + "/red.png"]})
        assert fetched[0] == 200, fetched
        inline = answers(vision_stack, {"photo": "[image 1]"}, images=[url(RED)])
        assert numbers(fetched[2]) == numbers(inline)
        def openai_input(image_url):
            return request(base, "POST", "/v1/decisions", {
                "model": "jev-latest", "questions": [{"type": "predicate", "instructions": "Red?"}],
                "input": [{"role": "user", "content": [
                    {"type": "input_image", "image_url": image_url}]}]})
        linked, inline_part = openai_input(link + "/red.png"), openai_input(url(RED))
        assert linked[0] == 200 and linked[2]["answers"] == inline_part[2]["answers"], linked
        status, _, doc = request(base, "POST", "/v1/systemone", {
            "model": "jev-latest", "state": "x", "questions": QUESTIONS,
            "images": [link + "/page"]})
        assert status == 422 and "could not be fetched" in doc["detail"][0]["msg"]
        status, _, doc = vision_stack.request("POST", "/v1/systemone", {
            "model": "jev-latest", "state": "x", "questions": QUESTIONS,
            "images": [link + "/red.png"]})
        assert status == 422 and "https" in doc["detail"][0]["msg"]
        assert link not in json.dumps(doc)  # refusals never echo the link
    finally:
        shim.terminate()
        shim.wait(timeout=30)
        server.shutdown()


def test_no_image_or_link_reaches_a_log(vision_stack):
    secret = url(png(12, 12, (1, 2, 3)))
    answers(vision_stack, {"photo": secret})
    for log in vision_stack.log_dir.glob("*.log"):
        text = log.read_text(errors="replace")
        assert secret.split(",", 1)[1][:40] not in text, log.name


def test_vllm_itself_refuses_to_fetch(vision_stack):
    """vLLM was started so that it cannot fetch: a link sent to it directly is refused."""
    body = {"model": SERVED, "max_tokens": 1, "messages": [{"role": "user", "content": [
        {"type": "image_url", "image_url": {"url": "http://127.0.0.1:9/a.png"}}]}]}
    status, _, doc = request(vision_stack.vllm_url, "POST", "/v1/chat/completions", body,
                             vllm_auth(vision_stack.vllm_url))
    assert status == 400 and "domain" in json.dumps(doc).lower(), doc


def test_the_profiles_tokens_per_image_bounds_vllms_count(vision_stack):
    """Fitting reserves the profile's tokens_per_image for each image slot; vLLM's own count
    (prompt_tokens_details.multimodal_tokens) for small, large and odd-shaped images stays
    within it."""
    vision = load_profile(str(ROOT / "serve_config.json"), VISION_PROFILE)[1].vision
    seen = []
    for size in ((10, 10), (64, 64), (640, 640), (2000, 100)):
        body = {"model": SERVED, "max_tokens": 1, "messages": [{"role": "user", "content": [
            {"type": "image_url", "image_url": {"url": url(png(*size, (9, 9, 9)))}}]}]}
        status, _, doc = request(vision_stack.vllm_url, "POST", "/v1/chat/completions", body,
                                 vllm_auth(vision_stack.vllm_url))
        assert status == 200, doc
        seen.append(doc["usage"]["prompt_tokens_details"]["multimodal_tokens"]["image"])
    assert 0 < min(seen) and max(seen) <= vision.tokens_per_image, seen


def test_typesafe_sdk_sends_images_as_zstd_multipart_assets(vision_stack):
    """dropin.sdk-python with images: typesafe-sdk 0.7.5 puts an Image in the state and in the
    instructions (its `<image:…>` reference), uploads it as a multipart asset, zstd-compressed
    past 1 KiB; the answer equals the same image sent inline as a data URL."""
    from typesafe_sdk import Image, Noul, TypeSafeClient
    img, note = Image(RED), "a product photo; " * 80  # over 1 KiB: the SDK compresses
    with TypeSafeClient(api_key="some-key", base_url=vision_stack.url, timeout=120) as client:
        r = client.system_one(model="jev-preview", state={"photo": img, "note": note},
                              questions={"red": Noul(instructions=f"Is {img} red?")})
    sent = r.raw_http_response.request.headers
    assert sent["content-type"].startswith("multipart/form-data")
    assert sent.get("content-encoding") == "zstd"
    assert r.usage.input_tokens > 0
    status, _, inline = vision_stack.request("POST", "/v1/systemone", {
        "model": "jev-preview", "state": {"photo": url(RED), "note": note},
        "questions": {"red": {"type": "noul", "instructions": "Is [image 1] red?"}}})
    assert status == 200 and r.nouls["red"].noul == inline["answers"]["red"]["noul"]
