"""The README's example answer, from the shipped default: written, checked and timed.

Usage: python3 bench/measure/readme_example.py --url http://127.0.0.1:8741 [--write]
       [--timing N] [--machine TEXT]
       python3 bench/measure/readme_example.py --fingerprint
The request is the README's own (the curl command under "## An example"); the server must serve
the default profile of serve_config.json (its model name is checked). Prints the answer. --write
puts it into the README, with the date, the machine, the dtype the server reports and the
fingerprint of what made it: the default profile's settings, its model's weights digest and the
request (card_tests/test_card_files.py recomputes it, so a README answer left behind by a
changed profile, model or request fails there). --timing N: N more sends, each state made
distinct by a ticket number in front so the prefix cache cannot replay it; prints p50 and p95 ms
(the default profile's rule: docs/configuration.md#how-the-default-profile-is-chosen).
--fingerprint: print today's fingerprint and exit (no server).
Owns: the README's example answer block and the line above it. Never starts a server.
"""
import argparse
import datetime
import hashlib
import json
import platform
import re
import statistics
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "bench" / "lib"), str(ROOT / "tools" / "models")]
import shim_auth  # noqa: E402
from build_model import MODELS  # noqa: E402  (standard library at import)

README = ROOT / "README.md"
SECTION = ("## An example", "## How an answer is read")
# the line written above the answer; the fingerprint rides in an HTML comment a reader never sees
SHOWN = re.compile(r"The shipped default's answer \(.*?\):\n\n```json\n.*?\n```\n"
                   r"<!-- readme_example fingerprint [0-9a-f]{16} -->\n", re.S)
# what a profile says about itself but that never changes an answer
NOT_READ = ("comment", "description", "release_date", "provenance")


def example(readme: str) -> dict:
    """The request body of the README's curl command."""
    section = readme[readme.index(SECTION[0]):readme.index(SECTION[1])]
    return json.loads(re.search(r"-d '(\{.*?\})'\n", section, re.S).group(1))


def default_profile() -> tuple[str, dict]:
    doc = json.loads((ROOT / "serve_config.json").read_text())
    return doc["default_profile"], doc["profiles"][doc["default_profile"]]


def fingerprint(readme: str) -> str:
    """What the shown answer depends on, hashed: the default profile's settings, its embedded
    model's built weights and the request."""
    _, profile = default_profile()
    settings = {k: v for k, v in profile.items() if k not in NOT_READ}
    weights = MODELS.get(profile.get("embedded", "smollm2-135m-instruct"), {}).get("expected")
    text = json.dumps([settings, weights, example(readme)], sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def post(url: str, body: dict) -> tuple[dict, float]:
    req = urllib.request.Request(url + "/v1/systemone", json.dumps(body).encode(),
                                 shim_auth.headers())
    start = time.perf_counter()
    with urllib.request.urlopen(req, timeout=300) as r:
        doc = json.loads(r.read())
    return doc, (time.perf_counter() - start) * 1000


def served_dtype(url: str) -> str:
    req = urllib.request.Request(url + "/metrics", headers=shim_auth.headers())
    with urllib.request.urlopen(req, timeout=30) as r:
        found = re.search(r'onepass_build_info\{[^}]*dtype="(\w+)"', r.read().decode())
    return found.group(1) if found else "unknown dtype"


def rendered(doc: dict) -> str:
    """The answer as the README shows it: one question per line group."""
    lines = [f'{{"model": {json.dumps(doc["model"])},', ' "answers": {']
    answers = list(doc["answers"].items())
    for i, (qid, answer) in enumerate(answers):
        end = "}," if i < len(answers) - 1 else "}},"
        lines.append(f"   {json.dumps(qid)}: {json.dumps(answer)[:-1]}{end}")
    rest = {k: v for k, v in doc.items() if k not in ("model", "answers")}
    lines.append(" " + json.dumps(rest)[1:])
    return "\n".join(lines)


def write(readme: str, doc: dict, dtype: str, machine: str) -> str:
    block = (f"The shipped default's answer ({doc['model']}, {dtype} on {machine},\n"
             f"{datetime.date.today().isoformat()}; written by "
             f"`bench/measure/readme_example.py --write`):\n\n```json\n{rendered(doc)}\n```\n"
             f"<!-- readme_example fingerprint {fingerprint(readme)} -->\n")
    if not SHOWN.search(readme):
        sys.exit("readme_example: the README has no shipped-default answer block to replace")
    return SHOWN.sub(lambda _: block, readme, count=1)


def timing(url: str, body: dict, n: int) -> None:
    run = f"{time.time_ns() % 10**8:08d}"
    ms = []
    for i in range(n):
        state = f"Ticket {run}-{i}. {body['state']}"
        ms.append(post(url, {**body, "state": state})[1])
    ms.sort()
    p95 = ms[min(len(ms) - 1, round(0.95 * (len(ms) - 1)))]
    print(f"README example, {n} sends, fresh states: p50 {statistics.median(ms):.0f} ms, "
          f"p95 {p95:.0f} ms, all {[round(m) for m in ms]}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8741")
    parser.add_argument("--write", action="store_true", help="put the answer into README.md")
    parser.add_argument("--timing", type=int, default=0, help="N timed sends, fresh states")
    parser.add_argument("--machine", default=f"{platform.machine()} CPU",
                        help="how the README names the machine")
    parser.add_argument("--fingerprint", action="store_true", help="print it; no server")
    args = parser.parse_args()
    readme = README.read_text(encoding="utf-8")
    if args.fingerprint:
        print(fingerprint(readme))
        return 0
    body = example(readme)
    _, profile = default_profile()
    doc, ms = post(args.url, body)
    if doc.get("model") != profile["model_name"]:
        sys.exit(f"readme_example: {args.url} serves {doc.get('model')}, not the default "
                 f"profile's {profile['model_name']}")
    print(json.dumps(doc, indent=1))
    print(f"answered in {ms:.0f} ms (prefix cache as it was)")
    if args.write:
        README.write_text(write(readme, doc, served_dtype(args.url), args.machine),
                          encoding="utf-8")
        print(f"wrote the answer into {README}")
    if args.timing:
        timing(args.url, body, args.timing)
    return 0


if __name__ == "__main__":
    sys.exit(main())
