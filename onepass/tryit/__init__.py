"""The try-it page: GET / and /try (the page), its script's ES modules (/try/app.js, which
imports /try/page.js, /try/form.js, /try/request.js and /try/answers.js), /try/style.css and
/try/info (what this server serves, for the page's form), all from files shipped in this folder.

Owns: the page's files and their headers (a strict Content-Security-Policy: no inline code, no
request leaves this origin), and the info document the page builds its form from (the served
question types and the raw read's calibration, both from the kinds' registry).
Never: answers a decision (the page posts to /v1/systemone like any client), reads a key or
keeps one (the page holds it in the tab's memory only), or fetches anything from outside.
In: a path; for /try/info, what the service knows (phase, kinds, limits) and whether the caller
had the key. Out: a (content type, bytes, headers) triple or the info document.
"""
from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

from .. import kinds
from ..errors import NotFound

HERE = Path(__file__).resolve().parent
# The page's script: app.js, the module page.html loads, and the modules it imports (each
# served as JavaScript: a browser refuses a module script of any other type).
MODULES = ("app.js", "page.js", "form.js", "request.js", "answers.js")
# path -> (file in this folder, content type); /try/info is built, not read
FILES = {"/": ("page.html", "text/html; charset=utf-8"),
         "/try": ("page.html", "text/html; charset=utf-8"),
         **{f"/try/{name}": (name, "text/javascript; charset=utf-8") for name in MODULES},
         "/try/style.css": ("style.css", "text/css; charset=utf-8")}
INFO = "/try/info"
PATHS = (*FILES, INFO)
# Nothing inline, nothing from another origin: the page's script and style are its own files
# (script-src 'self' admits its modules and their imports, all from this origin), its only calls
# go to this server, images it shows are the user's own (data: / blob: URLs).
CSP = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:; "
       "connect-src 'self'; form-action 'none'; frame-ancestors 'none'; base-uri 'none'")
HEADERS = {"Content-Security-Policy": CSP, "X-Content-Type-Options": "nosniff",
           "X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-cache"}


@lru_cache(maxsize=None)
def _asset(name: str) -> bytes:
    return (HERE / name).read_bytes()


def asset(path: str) -> tuple[str, bytes]:
    """(content type, bytes) of one of the page's files."""
    name, content_type = FILES[path]
    return content_type, _asset(name)


def examples() -> dict:
    """The bodies one click away: the README's example, and one with an image question for a
    vision profile (its picture is drawn by the page)."""
    return json.loads(_asset("examples.json"))


def raw_calibration() -> dict:
    """The page's raw read's kwargs.calibration: the calibration off, as the registered kinds
    have it (temperature 1 for each reading kind, no label prior, no re-read, each kind's own
    calibration settings at their defaults: no floor, no fit)."""
    return {"temperature": {k.name: 1 for k in kinds.reading()}, "reread_below": 0,
            "label_prior": {},
            **{name: t.default for name, t in kinds.calibration_settings().items()}}


def info(phase: str, auth: bool, authorized: bool, served: dict | None, vision: bool,
         attention_modes: list, limits: dict) -> dict:
    """What the page builds its form from. The server's details (kinds, vision, modes, limits,
    the raw read's calibration) go only to a caller with the key, as /health's do; anyone
    learns whether a key is needed."""
    doc = {"phase": phase, "auth": auth, "authorized": authorized, "examples": examples()}
    if authorized:
        doc.update(kinds=served, vision=vision, attention_modes=attention_modes, limits=limits,
                   raw_calibration=raw_calibration())
    return doc


def serve(service, path: str, authorized: bool) -> tuple[bytes, str]:
    """(bytes, content type) of the page's files, or of /try/info: what the page's form offers
    on `service` (the running server.Service); sent with HEADERS."""
    settings, profile = service.settings, service.profile
    if settings.try_page == "off":
        raise NotFound(f"no route {path} (the try-it page is off on this server)")
    if path != INFO:
        content_type, data = asset(path)
        return data, content_type
    phase, pipe = ("draining" if service.slots.closed else service.phase), service.pipeline
    served = None
    if phase == "ready":  # each /v1/systemone type: None when served, else why it is refused
        served = {kinds.KINDS[name].systemone.type: limit.refusal
                  for name, limit in pipe.limits.kinds.items() if kinds.KINDS[name].systemone}
    doc = info(phase, bool(settings.api_key), authorized, served, profile.vision is not None,
               service.attention_modes(),
               {"max_questions": settings.max_questions, "max_body_bytes": settings.max_body_bytes,
                "max_images": profile.vision.max_images if profile.vision else 0})
    return json.dumps(doc).encode(), "application/json"
