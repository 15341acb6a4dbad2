"""Headless Chromium for the live suite: Debian's chromium package (test.sh installs it) driven
by playwright, which is told to use that binary and so downloads no browser of its own."""
import os
import shutil
from contextlib import contextmanager
from pathlib import Path


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
