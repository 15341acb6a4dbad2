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


def screenshot(page, path, docs_env: str = "") -> None:
    """The whole page saved at `path`, and also where the environment variable `docs_env` says
    (ONEPASS_TRY_SCREENSHOT=docs/img/try-page.png makes the README's picture)."""
    page.screenshot(path=str(path), full_page=True)
    if docs_env and os.environ.get(docs_env):
        page.screenshot(path=os.environ[docs_env], full_page=True)
