"""Measure a running onepass server's box answers on bench/data/box_scenes.py's rendered scenes.

Usage: .venv/bin/python bench/measure/box_eval.py --url http://127.0.0.1:8741
       [--data /tmp/onepass_box_scenes] [--split eval|fit|all] [--mode generate|edges|hybrid]
       [--limit N] [--concurrency 2] [--model jev-latest]
       [--extra '{"kwargs": {"box": {"mode": "edges"}}}'] [--json OUT.json] [--png iou.png]
       .venv/bin/python bench/measure/box_eval.py --summary-of OUT.json
Owns: one /v1/systemone request per item (the image as state `photo`, one box question `q`), a
per-item record {id, split, present_true, status, found, box, iou, hit, confidence, present,
x_box_logprob, x_box_mode, x_box_raw, latency_ms, objects}, and the summary: mean IoU and
Acc@0.5 and confidence ECE (event IoU >= 0.5) over the items whose object is present (a
not-found answer scores the whole-image box), `present` accuracy, ECE and AUC over all items,
found rate, latency p50/p95, non-200 count; where the scenes' object counts differ, mean IoU
and Acc@0.5 per count (`by_objects`: how a model's boxes fall off as the crowd grows).
Never starts or stops a server, never changes the data, and never stops on a non-200 answer:
those are counted and sampled. HTTP goes through bench/measure/evaluate.py's `post` (key from
ONEPASS_API_KEY) and its `_progress` bar.
"""
import argparse
import json
import shlex
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]  # bench/: its modules import each other by name
sys.path[:0] = [str(BENCH / d) for d in ("data", "lib", "measure")]
import box_metrics as bm  # noqa: E402
import box_scenes  # noqa: E402
import evaluate  # noqa: E402

MODEL = "jev-latest"
MODES = ("generate", "edges", "hybrid")
SAMPLE_ERRORS = 5


def add_common_args(parser: argparse.ArgumentParser) -> None:
    """The flags box_eval.py and fit_box_calibration.py share."""
    parser.add_argument("--url", default="http://127.0.0.1:8741", help="server base URL")
    parser.add_argument("--data", default=box_scenes.DEFAULT_OUT,
                        help="box_scenes.jsonl or the directory holding it")
    parser.add_argument("--mode", choices=MODES, default=None,
                        help="the question's box.mode (default: none sent, the server's generate)")
    parser.add_argument("--model", default=MODEL, help="request's model (a profile alias)")
    parser.add_argument("--limit", type=int, default=None, help="first N items of the split")
    parser.add_argument("--concurrency", type=int, default=2, help="requests at once")
    parser.add_argument("--extra", type=json.loads, default={},
                        help="JSON object merged into every request body")


def body(item: dict, mode: str | None, model: str = MODEL, extra: dict | None = None) -> dict:
    question = {"type": "box", "instructions": item["instructions"]}
    if mode:
        question["box"] = {"mode": mode}
    return {"model": model, "state": {"photo": item["image"]}, "questions": {"q": question},
            **(extra or {})}


def score(item: dict, status, doc: dict | None, seconds: float) -> tuple:
    """(record, error reason or None) for one reply."""
    rec = {"id": item["id"], "split": item["split"], "present_true": item["present"],
           "objects": len(item.get("objects") or ()), "status": status,
           "latency_ms": seconds * 1000, "found": None, "box": None, "iou": None, "hit": None,
           "confidence": None, "present": None, "x_box_logprob": None, "x_box_mode": None,
           "x_box_raw": None}
    if status != 200:
        return rec, "HTTP " + str(status) if isinstance(status, int) else str(status)
    answer = (doc or {}).get("answers", {}).get("q")
    if not isinstance(answer, dict) or answer.get("type") != "box":
        return rec, "answer missing or of the wrong type"
    found = bool(answer.get("found"))
    box = answer.get("box") if found else bm.WHOLE
    if not (isinstance(box, dict) and all(isinstance(box.get(k), (int, float)) for k in bm.WHOLE)):
        return rec, "found, but the box is malformed"
    rec.update(found=found, box=box, confidence=answer.get("confidence"),
               present=answer.get("present"), x_box_logprob=answer.get("x_box_logprob"),
               x_box_mode=answer.get("x_box_mode"), x_box_raw=answer.get("x_box_raw"))
    if item["present"] and isinstance(box, dict):
        rec["iou"] = bm.iou(box, item["box"])
        rec["hit"] = rec["iou"] >= bm.HIT_IOU
    return rec, None


def run(url: str, items: list, mode: str | None, concurrency: int = 2, model: str = MODEL,
        extra: dict | None = None, desc: str = "boxes") -> dict:
    """Send every item; {records, errors, error_samples}."""
    endpoint = url.rstrip("/") + "/v1/systemone"
    bar = evaluate._progress(len(items), desc)

    def one(item):
        result = evaluate.post(endpoint, body(item, mode, model, extra))
        bar.update(1)
        return result
    with ThreadPoolExecutor(max_workers=max(1, concurrency)) as pool:
        replies = list(pool.map(one, items))
    bar.close()
    records, errors, samples = [], Counter(), []
    for item, (status, doc, seconds) in zip(items, replies):
        rec, problem = score(item, status, doc, seconds)
        records.append(rec)
        if problem:
            errors[problem] += 1
            if len(samples) < SAMPLE_ERRORS:
                samples.append({"id": item["id"], "status": status, "body": doc})
    return {"records": records, "errors": dict(errors), "error_samples": samples}


def summary(records: list) -> dict:
    """The numbers over answered records (status 200 with a box answer)."""
    ok = [r for r in records if r["found"] is not None]
    boxed = [r for r in ok if r["iou"] is not None]
    conf = [r for r in boxed if isinstance(r["confidence"], (int, float))]
    pres = [r for r in ok if isinstance(r["present"], (int, float))]
    latencies = [r["latency_ms"] for r in records if r["status"] == 200]

    def mean(values):
        values = list(values)
        return sum(values) / len(values) if values else None
    return {"n": len(records), "answered": len(ok),
            "non_200": sum(r["status"] != 200 for r in records),
            "present_items": len(boxed), "mean_iou": mean(r["iou"] for r in boxed),
            "acc_at_0.5": mean(1.0 if r["hit"] else 0.0 for r in boxed),
            "confidence_ece": bm.ece([r["confidence"] for r in conf], [r["hit"] for r in conf]),
            "present_accuracy": mean(1.0 if (r["present"] >= 0.5) == r["present_true"] else 0.0
                                     for r in pres),
            "present_ece": bm.ece([r["present"] for r in pres], [r["present_true"] for r in pres]),
            "present_auc": bm.auc([r["present"] for r in pres], [r["present_true"] for r in pres]),
            "found_rate": mean(1.0 if r["found"] else 0.0 for r in ok),
            "found_rate_absent": mean(1.0 if r["found"] else 0.0
                                      for r in ok if not r["present_true"]),
            "latency_ms_p50": bm.percentile(latencies, 50),
            "latency_ms_p95": bm.percentile(latencies, 95), "by_objects": by_objects(boxed)}


def by_objects(boxed: list) -> dict:
    """{objects in the scene: {n, mean_iou, acc_at_0.5}} over present items' records; empty
    when every scene has as many (a --solo set) or the records predate the count."""
    counts = sorted({r.get("objects") for r in boxed} - {None, 0})
    if len(counts) < 2:
        return {}
    out = {}
    for count in counts:
        rows = [r for r in boxed if r.get("objects") == count]
        out[count] = {"n": len(rows), "mean_iou": sum(r["iou"] for r in rows) / len(rows),
                      "acc_at_0.5": sum(1.0 for r in rows if r["hit"]) / len(rows)}
    return out


def format_table(summ: dict) -> str:
    labels = (("n", "items sent"), ("answered", "answered (200, box)"), ("non_200", "non-200"),
              ("present_items", "items with the object"), ("mean_iou", "mean IoU"),
              ("acc_at_0.5", "Acc@0.5"), ("confidence_ece", "confidence ECE (IoU>=0.5)"),
              ("present_accuracy", "present accuracy (0.5)"), ("present_ece", "present ECE"),
              ("present_auc", "present AUC"),
              ("found_rate", "found rate"), ("found_rate_absent", "found rate, absent items"),
              ("latency_ms_p50", "latency p50 ms"), ("latency_ms_p95", "latency p95 ms"))
    width = max(len(text) for _, text in labels)
    lines = []
    for key, text in labels:
        value = summ.get(key)
        shown = "-" if value is None else (f"{value:.3f}" if isinstance(value, float)
                                           else str(value))
        if key.startswith("latency") and value is not None:
            shown = f"{value:.0f}"
        lines.append(f"{text.ljust(width)}  {shown:>8}")
    for count, row in (summ.get("by_objects") or {}).items():
        lines.append(f"{count} objects in the scene: n {row['n']}, mean IoU "
                     f"{row['mean_iou']:.3f}, Acc@0.5 {row['acc_at_0.5']:.3f}")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_common_args(parser)
    parser.add_argument("--split", choices=("fit", "eval", "all"), default="eval")
    parser.add_argument("--json", help="write the summary and every record here")
    parser.add_argument("--png", help="draw the IoU histogram here (matplotlib)")
    parser.add_argument("--summary-of", metavar="JSON", help="only print the summary of the "
                        "records a --json run wrote (sends nothing)")
    args = parser.parse_args(argv)
    if args.summary_of:
        records = json.loads(Path(args.summary_of).read_text(encoding="utf-8"))["records"]
        print(format_table(summary(records)))
        return 0
    items = box_scenes.select(box_scenes.load(args.data), args.split, args.limit)
    result = run(args.url, items, args.mode, args.concurrency, args.model, args.extra, args.split)
    summ = summary(result["records"])
    given = sys.argv[1:] if argv is None else argv
    command = " ".join(shlex.quote(a) for a in ["bench/measure/box_eval.py", *given])
    print(format_table(summ))
    for what, count in result["errors"].items():
        print(f"{what}: {count}")
    print(f"command: {command}")
    if args.png:
        import plots
        plots.iou_histogram(args.png, result["records"], plots.label(plots.served_model(args.url)),
                            f"Box IoU ({args.split} split, {len(items)} scenes, mode "
                            f"{args.mode or 'the profile'})")
    if args.json:
        first = items[0] if items else {}
        doc = {"command": command, "url": args.url, "data": args.data, "split": args.split,
               "mode": args.mode, "limit": args.limit, "extra": args.extra,
               "scenes": {"seed": first.get("seed"), "n": first.get("n"),
                          "solo": bool(first.get("solo")), "command": box_scenes.command(first)},
               "summary": summ,
               "errors": result["errors"], "error_samples": result["error_samples"],
               "records": result["records"]}
        Path(args.json).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n",
                                   encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
