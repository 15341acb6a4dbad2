"""Headless Chromium for the live suite: Debian's chromium package (test.sh installs it) driven
by playwright, which is told to use that binary and so downloads no browser of its own; and the
try-it page's moves (open, send, the bars drawn) the live tests share."""
import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import pytest


def chromium_path() -> str:
    found = shutil.which("chromium") or "/usr/bin/chromium"
    if not Path(found).exists():
        raise RuntimeError("no chromium on PATH: apt-get install -y chromium (test.sh does)")
    return found


@contextmanager
def chromium():
    """A headless Chromium (no sandbox: the suite runs as root), closed afterwards."""
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium_path(), headless=True,
                                    args=["--no-sandbox"])
        try:
            yield browser
        finally:
            browser.close()


class Watched:
    """A page whose console errors and failed loads are kept: a CSP violation or a script error
    shows up here, and a test asserts there was none."""

    def __init__(self, browser, viewport=(1100, 1300)):
        self.context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        self.page = self.context.new_page()
        self.problems = []
        self.page.on("console", lambda m: m.type == "error" and self.problems.append(m.text))
        self.page.on("pageerror", lambda e: self.problems.append(str(e)))
        self.page.on("requestfailed", lambda r: self.problems.append(f"failed: {r.url}"))

    def close(self):
        self.context.close()


def screenshot(page, tmp_path, name: str) -> None:
    """The whole page saved as tmp_path/name, and also in the folder ONEPASS_TRY_SCREENSHOTS
    names (ONEPASS_TRY_SCREENSHOTS=docs/img makes the docs' pictures of the try-it page)."""
    page.screenshot(path=str(tmp_path / name), full_page=True)
    if os.environ.get("ONEPASS_TRY_SCREENSHOTS"):
        page.screenshot(path=os.path.join(os.environ["ONEPASS_TRY_SCREENSHOTS"], name),
                        full_page=True)


# -- the try-it page (onepass/tryit/) -------------------------------------------------------
def open_page(w, base, path="/"):
    """The page at base + path in the Watched context, once it has heard /try/info."""
    page = w.page
    page.goto(base + path)
    page.wait_for_selector("#status.ok, #status.warn", timeout=60_000)
    return page


def send(page):
    """Click Send; the page's request (its body and headers) and the page's answer."""
    with page.expect_response("**/v1/systemone") as answer:
        page.click("#send")
    response = answer.value
    page.wait_for_selector("#send:not([disabled])")  # the page's CSP forbids eval'd waits
    return response.request, response


def drawn(page) -> dict:
    """Each answer's bars as the page shows them: {qid: {option: (p, text, width %)}}."""
    return page.evaluate("""() => Object.fromEntries([...document.querySelectorAll('.answer')]
        .map(a => [a.dataset.qid, Object.fromEntries([...a.querySelectorAll('.bar')].map(b =>
            [b.dataset.option, [Number(b.dataset.p), b.querySelector('.value').firstChild
             .textContent, parseFloat(b.querySelector('.fill').style.width),
             b.dataset.rawP === undefined ? null : Number(b.dataset.rawP)]]))]))""")


def expected_bars(answer: dict) -> dict:
    """The API's answer as bars: P(yes) and P(no) for a noul, each option's probability else."""
    if answer["type"] == "noul":
        return {"yes": answer["noul"], "no": 1 - answer["noul"]}
    return dict(answer["probabilities"])


def assert_bars_match(bars: dict, answers: dict, raw: dict | None = None):
    assert set(bars) == set(answers)
    for qid, answer in answers.items():
        want = expected_bars(answer)
        assert list(bars[qid]) == list(want), qid  # every option, in the response's order
        for option, p in want.items():
            shown, text, width, raw_p = bars[qid][option]
            assert shown == pytest.approx(p, abs=1e-9), (qid, option)
            assert text == f"{p:.3f}" and width == pytest.approx(100 * p, abs=0.01)
            if raw is not None:
                assert raw_p == pytest.approx(expected_bars(raw[qid])[option], abs=1e-9)
