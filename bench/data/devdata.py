"""Labelled development decisions in one common form, and their deterministic fit/eval split.

Owns: reading sys1bench JSONL files and BIG-bench `task.json` files (../shared/data/dev beside the checkout) into
items `{"task", "id", "body", "gold"}`, where `body` is a ready /v1/systemone request body and
`gold` maps each question id to an option key (choice), a bool (noul) or a level index (score).
Never talks to a server, never writes anything, and never alters what the files say.
"""
import json
from collections import Counter
from pathlib import Path

# ../shared beside the checkout, as the project hands it to developers and CI
DEFAULT_DATA = Path(__file__).resolve().parents[3] / "shared" / "data" / "dev"
MODEL = "jev-latest"
KINDS = ("noul", "choice", "score")
PARTS = ("fit", "eval", "all")
MAX_KEY_CHARS = 64  # longer BIG-bench option texts get letter keys (answer keys stay readable)
DEFAULT_INSTRUCTIONS = "Which option is correct?"


def load(paths=None, skipped: Counter | None = None) -> list[dict]:
    """Items from files or directories (default: all of DEFAULT_DATA), in a stable order.

    `skipped` (if given) counts what was left out, by reason."""
    skipped = Counter() if skipped is None else skipped
    items = []
    for path in _data_files(paths or [DEFAULT_DATA]):
        if path.suffix == ".jsonl":
            items.extend(_sys1bench_file(path, skipped))
        else:
            items.extend(_bigbench_file(path, skipped))
    return items


def split(items: list[dict], part: str, limit: int | None = None) -> list[dict]:
    """Within each task, even positions go to `fit` and odd ones to `eval`; then the first
    `limit` per task. Task order and item order are kept."""
    if part not in PARTS:
        raise ValueError(f"part must be one of {PARTS}, not {part!r}")
    seen, kept = Counter(), Counter()
    out = []
    for item in items:
        index = seen[item["task"]]
        seen[item["task"]] += 1
        if part != "all" and index % 2 != (0 if part == "fit" else 1):
            continue
        if limit is not None and kept[item["task"]] >= limit:
            continue
        kept[item["task"]] += 1
        out.append(item)
    return out


def question_count(items: list[dict]) -> int:
    return sum(len(item["gold"]) for item in items)


def _data_files(paths) -> list[Path]:
    files = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            files.extend(sorted(path.rglob("*.jsonl")))
            files.extend(sorted(path.rglob("task.json")))
        elif path.is_file():
            files.append(path)
        else:
            raise FileNotFoundError(f"no such data file or directory: {path}")
    seen, unique = set(), []
    for f in files:  # a file named twice (a dir and a file in it) is read once
        if f.resolve() not in seen:
            seen.add(f.resolve())
            unique.append(f)
    return unique


def _body(state, questions: dict) -> dict:
    return {"model": MODEL, "state": state, "questions": questions}


# --- sys1bench -----------------------------------------------------------------------------

def _sys1bench_file(path: Path, skipped: Counter) -> list[dict]:
    family = path.name.split("-")[0]  # support_tickets-200-seed42.jsonl -> support_tickets
    items = []
    with path.open(encoding="utf-8") as f:
        for line_no, line in enumerate(f):
            if not line.strip():
                continue
            case = json.loads(line)
            questions, gold = {}, {}
            for qid, q in case["questions"].items():
                if q.get("type") not in KINDS:
                    skipped[f"sys1bench: question type {q.get('type')!r}"] += 1
                    continue
                questions[qid] = _contract_question(q)
                gold[qid] = q["ground_truth"]
            if not questions:
                skipped["sys1bench: case without a noul/choice/score question"] += 1
                continue
            items.append({"task": family, "id": str(case.get("task_id", f"{family}:{line_no}")),
                          "body": _body(case["state"], questions), "gold": gold})
    return items


def _contract_question(q: dict) -> dict:
    """Only the contract's fields (unknown fields inside a question are a 422)."""
    out = {"type": q["type"]}
    if "instructions" in q:
        out["instructions"] = q["instructions"]
    criteria = q.get("criteria")
    if q["type"] == "choice" and isinstance(criteria, list):
        # sys1bench lists [{key, description}]; System One wants {key: description}, in order
        criteria = {c["key"]: c.get("description") for c in criteria}
    if q["type"] == "score" and isinstance(criteria, list):
        # sys1bench levels are [{level, description}] in level order: the text is the level
        criteria = [c.get("description", str(c)) if isinstance(c, dict) else c for c in criteria]
    if "criteria" in q:
        out["criteria"] = criteria
    return out


# --- BIG-bench -----------------------------------------------------------------------------

def _bigbench_name(path: Path) -> str:
    """bigbench/<task dir under the bigbench folder>: bigbench/cause_and_effect/two_sentences."""
    task_dir = path.parent
    for parent in task_dir.parents:
        if parent.name == "bigbench":
            return "bigbench/" + task_dir.relative_to(parent).as_posix()
    return "bigbench/" + task_dir.name


def _bigbench_file(path: Path, skipped: Counter) -> list[dict]:
    task = json.loads(path.read_text(encoding="utf-8"))
    name = _bigbench_name(path)
    task_prefix = task.get("task_prefix") or ""
    input_prefix = task.get("example_input_prefix") or ""
    instructions = _bigbench_instructions(task)
    items = []
    for index, example in enumerate(task.get("examples", [])):
        scores = example.get("target_scores") or {}
        correct = [text for text, score in scores.items() if score == 1]
        if len(correct) != 1:
            skipped[f"{name}: {len(correct)} correct answers"] += 1
            continue
        criteria, key_of = _bigbench_options(list(scores))
        text = example.get("input") or ""
        # the input's own label ("Example: ") only when there is an input to label
        state = (task_prefix + (input_prefix + text if text else "")).strip()
        question = {"type": "choice", "instructions": instructions, "criteria": criteria}
        items.append({"task": name, "id": f"{name}:{index}",
                      "body": _body(state, {"answer": question}),
                      "gold": {"answer": key_of[correct[0]]}})
    return items


def _bigbench_instructions(task: dict) -> str:
    """The task's own question when its answer prefix is one ("Joke or not?"), else generic."""
    own = (task.get("example_output_prefix") or "").strip()
    return own if own.endswith("?") else DEFAULT_INSTRUCTIONS


def _bigbench_options(texts: list[str]) -> tuple[dict, dict]:
    """(criteria, text -> key). Short unique texts are their own keys (described by name);
    otherwise letters A, B, ... keyed to the text as the description."""
    if all(len(t) <= MAX_KEY_CHARS for t in texts) and len(set(texts)) == len(texts):
        return {t: None for t in texts}, {t: t for t in texts}
    keys = [_letters(i) for i in range(len(texts))]
    return dict(zip(keys, texts)), dict(zip(texts, keys))


def _letters(i: int) -> str:
    return chr(65 + i) if i < 26 else chr(65 + i // 26 - 1) + chr(65 + i % 26)
