"""The try-it page (onepass/tryit/, docs/try-page.md) in a real browser: Debian's Chromium,
headless, driven by playwright (tests/support/browser.py). The page loads the README example,
sends it, and the bars it draws carry the numbers the API gives for the same body; a validation
error is shown at the field it names; with a key set, the key is sent only as the header and
kept nowhere. On the vision profile the image example is sent and its box drawn.

Every run saves its screenshots (the answered README example, the answered image example) in
the test's tmp_path; ONEPASS_TRY_SCREENSHOTS=docs/img saves them there too (the docs' pictures
docs/img/try-page.png and try-page-vision.png are made so).
"""
import json
import signal

import pytest

from tests.support.browser import (Watched, assert_bars_match, chromium, drawn, open_page,
                                   screenshot, send)
from tests.support.json_http import request
from tests.support.live_stack import free_port, start_shim, wait_health
from tests.support.live_bodies import UNTEMPERED

from onepass import tryit

EXAMPLE = tryit.examples()
KEY = "pw-try-4f1c9e"


@pytest.fixture(scope="module")
def browser():
    with chromium() as b:
        yield b


@pytest.fixture
def watched(browser):
    w = Watched(browser)
    yield w
    w.close()


def test_readme_example_bars_are_the_api_answer(stack, watched, tmp_path):
    """On the fast profile (test_default_model_live.py draws it on the shipped default)."""
    page = open_page(watched, stack.url)
    assert "ready" in page.text_content("#status")
    sent, response = send(page)
    body = json.loads(sent.post_data)
    assert body == EXAMPLE["text"]  # one click away: the README's example, loaded on open
    assert response.status == 200 and response.headers["content-type"] == "application/json"
    page.wait_for_selector("#result:not([hidden])")
    status, _, api = stack.request("POST", "/v1/systemone", body)
    assert status == 200
    assert_bars_match(drawn(page), api["answers"])
    meta = page.text_content("#meta")
    assert f"{api['usage']['input_tokens']} input tokens" in meta
    assert f"attention {api['x_attention_mode']}" in meta and " ms" in meta
    assert page.locator(".answer[data-qid=team] .summary").text_content() == (
        f"choice {api['answers']['team']['choice']} · confidence "
        f"{api['answers']['team']['confidence']:.3f}")
    screenshot(page, tmp_path, "try-page-fast.png")
    assert watched.problems == []  # no CSP violation, no script error, nothing failed to load


def test_raw_view_is_the_uncalibrated_read(stack, watched):
    """With "also read raw" the page sends the body again with the calibration off; the thin
    bars are that answer's numbers, the thick ones the calibrated answer's."""
    page = open_page(watched, stack.url)
    page.check("#raw")
    with page.expect_request(lambda r: r.url.endswith("/v1/systemone")
                             and "calibration" in (r.post_data or "")) as raw_sent:
        send(page)
    page.wait_for_selector(".bar[data-raw-p]")
    raw_body = json.loads(raw_sent.value.post_data)
    # the calibration off: every kind's own setting at its default too (no number fit)
    assert raw_body["kwargs"]["calibration"] == {**UNTEMPERED, "number_confidence": None}
    _, _, calibrated = stack.request("POST", "/v1/systemone", EXAMPLE["text"])
    _, _, raw = stack.request("POST", "/v1/systemone", raw_body)
    assert raw["answers"] != calibrated["answers"]  # the two views differ on this model
    assert_bars_match(drawn(page), calibrated["answers"], raw["answers"])
    assert watched.problems == []


def test_validation_error_is_shown_at_its_question(stack, watched):
    """A choice cut to one option: the API's 422 detail[], each entry beside the question its
    `loc` names (not only in a banner), and no answer drawn."""
    page = open_page(watched, stack.url)
    team = page.locator(".question", has=page.locator(".q-id[value=team]"))
    team.locator(".q-criteria").fill("billing: Payments and refunds")
    sent, response = send(page)
    assert response.status == 422
    status, _, api = stack.request("POST", "/v1/systemone", json.loads(sent.post_data))
    assert status == 422 and api["detail"]
    shown = team.locator(".q-error").text_content()
    for entry in api["detail"]:
        assert entry["loc"][:3] == ["body", "questions", "team"]
        assert f"{'.'.join(map(str, entry['loc'][1:]))}: {entry['msg']}" in shown
    assert "invalid" in team.get_attribute("class")
    assert page.locator(".question.invalid").count() == 1
    assert page.is_hidden("#result")
    assert "422" in page.text_content("#status")
    # a problem the page finds itself (state marked JSON but not JSON) is shown at the state
    page.select_option("#state-format", "json")
    page.click("#send")
    assert page.text_content("[data-error-for=state]").startswith("not JSON")


def test_key_is_sent_as_the_header_and_kept_nowhere(stack, watched, tmp_path):
    """A shim with ONEPASS_API_KEY: the page asks for the key, a send without it is refused at
    the key field, with it answered; the key is never in the URL, the page's markup, storage or
    cookies, nor in the shim's log."""
    port = free_port()
    proc = start_shim(stack.vllm_url, port, {"ONEPASS_API_KEY": KEY})
    base = f"http://127.0.0.1:{port}"
    try:
        wait_health(base, {"ok"})
        page = open_page(watched, base)
        assert page.is_visible("#key") and page.get_attribute("#key", "type") == "password"
        assert "API key" in page.text_content("#status")
        sent, response = send(page)
        assert response.status == 401 and "Authorization" not in sent.headers
        assert "missing API key" in page.text_content("[data-error-for=key]")
        page.fill("#key", KEY)
        page.dispatch_event("#key", "change")
        page.wait_for_selector("#status.ok")  # the key showed /try/info's details
        sent, response = send(page)
        assert response.status == 200
        assert sent.headers["authorization"] == f"Bearer {KEY}"
        page.wait_for_selector("#result:not([hidden])")
        kept = page.evaluate("""() => [location.href, document.documentElement.outerHTML,
            document.cookie, localStorage.length, sessionStorage.length, document.title]""")
        assert kept[2:5] == ["", 0, 0]
        assert all(KEY not in str(v) for v in kept)
        assert KEY not in page.content() and KEY not in page.url
        page.reload()  # nothing kept across a reload either
        page.wait_for_selector("#status.warn")
        assert page.input_value("#key") == ""
    finally:
        proc.send_signal(signal.SIGTERM)
        log = proc.communicate(timeout=30)[0]
    assert KEY not in log


def test_page_routes_obey_the_edge(stack):
    """The page's files under the same edge: strict headers; other methods 405."""
    for path in ("/", "/try", *(f"/try/{name}" for name in tryit.MODULES), "/try/style.css"):
        status, headers, _ = raw_get(stack.url, path)
        assert status == 200 and headers["x-content-type-options"] == "nosniff"
        assert "script-src 'self'" in headers["content-security-policy"]
    status, _, doc = request(stack.url, "POST", "/try", {})
    assert status == 405 and doc["detail"]["error_type"]


def raw_get(base, path):
    import http.client
    host, port = base.split("//")[1].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=30)
    conn.request("GET", path)
    r = conn.getresponse()
    out = r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    conn.close()
    return out


def test_vision_page_sends_the_image_and_draws_the_box(vision_stack, watched, tmp_path):
    """The vision profile: the image example (a picture the page draws) is sent as an asset;
    the noul's bars and the box's numbers are the API's for that body, the box drawn over the
    image where the API put it."""
    page = open_page(watched, vision_stack.url)
    assert page.is_visible("#image-row") and page.is_visible("#image-preview")
    sent, response = send(page)
    assert response.status == 200
    body = json.loads(sent.post_data)
    asset = body["assets"]["<image>"]
    assert (asset["type"], asset["format"]) == ("image", "png") and len(asset["data_base64"]) > 100
    assert body["questions"] == EXAMPLE["vision"]["questions"]
    page.wait_for_selector("#result:not([hidden])")
    status, _, api = vision_stack.request("POST", "/v1/systemone", body)
    assert status == 200
    assert_bars_match({k: v for k, v in drawn(page).items() if k == "circle"},
                      {"circle": api["answers"]["circle"]})
    box = api["answers"]["where"]
    assert box["type"] == "box"
    summary = page.locator(".answer[data-qid=where] .summary").text_content()
    if box.get("box"):
        b = box["box"]
        assert (f"box left {b['left']:.3f} top {b['top']:.3f} right {b['right']:.3f} "
                f"bottom {b['bottom']:.3f}") in summary
        at = page.evaluate("""() => {  // the frame's edges as fractions of the image shown
            const v = document.querySelector('#image-preview').getBoundingClientRect();
            const o = document.querySelector('.box-overlay').getBoundingClientRect();
            return [(o.left - v.left) / v.width, (o.top - v.top) / v.height,
                    (o.right - v.left) / v.width, (o.bottom - v.top) / v.height]; }""")
        assert at == pytest.approx([b["left"], b["top"], b["right"], b["bottom"]], abs=0.01)
    if isinstance(box.get("confidence"), float):
        assert f"confidence {box['confidence']:.3f}" in summary
    screenshot(page, tmp_path, "try-page-vision.png")
    assert watched.problems == []
