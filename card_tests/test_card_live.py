"""The documentation held to the running stack (the session's serve.sh): the routes named answer,
and the claims "never logged", "standard library only" and "probabilities sum to
1 within 1e-9" are checked, not restated. The README's example is held to the shipped default
in tests/live/test_default_model_live.py.
"""
import http.client
import subprocess

import claims
from claims import ROOT


def test_every_route_named_answers(stack):
    """`GET /x` and `POST /x` in the docs: the live shim knows the route (never a 404)."""
    named = {r for p in claims.documents() for r in claims.routes(claims.text(p))}
    assert ("POST", "/v1/systemone") in named and ("GET", "/health") in named
    host, port = stack.url.split("//")[1].split(":")
    for method, path in sorted(named):
        conn = http.client.HTTPConnection(host, int(port), timeout=60)
        conn.request(method, path, body=b"{}" if method == "POST" else None,
                     headers={"Content-Type": "application/json"} if method == "POST" else {})
        response = conn.getresponse()
        body = response.read()  # JSON, or the metrics' text
        conn.close()
        assert response.status != 404, (method, path, body[:200])


def test_never_logged_keys_bodies_and_images(stack):
    """A bearer key, a distinctive state and an image sent to the server appear in no log."""
    secret_key = "sk-card-test-9f8e7d6c5b4a"
    marker = "zebra-quartz-4471-never-logged"
    image = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"
    stack.request("POST", "/v1/systemone", {
        "model": "jev-latest", "state": f"{marker} data:image/png;base64,{image}",
        "questions": {"q": {"type": "noul", "instructions": f"Is {marker} here?"}}},
        {"Authorization": f"Bearer {secret_key}"})
    logs = list(stack.log_dir.glob("*.log"))
    assert logs
    for log in logs:
        text = log.read_text(errors="replace")
        for needle in (secret_key, marker, image[:40]):
            assert needle not in text, (log.name, needle)


def test_the_shim_is_standard_library_only():
    """Every module of the shim imports in an interpreter without site-packages (-I -S)."""
    modules = sorted(".".join(p.relative_to(ROOT).with_suffix("").parts)
                     for p in (ROOT / "onepass").rglob("*.py") if p.name != "__init__.py")
    code = (f"import importlib, sys\nsys.path.insert(0, {str(ROOT)!r})\n"  # -I drops the cwd
            + "\n".join(f"importlib.import_module({m!r})" for m in modules))
    out = subprocess.run(["python3", "-I", "-S", "-c", code],
                         cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-500:]


def test_probabilities_sum_to_one_within_1e9(stack):
    """A request of every read type (a 26-option choice among them): each answer's
    probabilities sum to 1 within 1e-9, on both APIs."""
    options = {chr(65 + i): f"option {i}" for i in range(26)}
    status, _, doc = stack.request("POST", "/v1/systemone", {
        "model": "jev-latest", "state": "A ticket about a double charge.",
        "questions": {"c": {"type": "choice", "instructions": "Which?", "criteria": options},
                      "s": {"type": "score", "criteria": [str(i) for i in range(10)]}}})
    assert status == 200, doc
    for a in doc["answers"].values():
        assert abs(sum(a["probabilities"].values()) - 1) <= 1e-9, a
    status, _, doc = stack.request("POST", "/v1/decisions", {
        "model": "jev-latest", "input": "A ticket about a double charge.",
        "questions": [{"type": "choice", "instructions": "Which?",
                       "choices": [{"value": v} for v in options]}]})
    assert status == 200, doc
    assert abs(sum(p["probability"] for p in doc["answers"][0]["probabilities"]) - 1) <= 1e-9
