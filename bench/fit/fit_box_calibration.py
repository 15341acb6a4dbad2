"""Fit a vision profile's box confidence map and `present` temperature on the box scenes' fit half.

Usage: .venv/bin/python bench/fit/fit_box_calibration.py --profile idefics3-tiny
       [--url http://127.0.0.1:8741 --data /tmp/onepass_box_scenes | --from-json FIT.json]
       [--mode generate] [--limit N] [--config serve_config.json] [--write] [--png reliability.png]
       [--feature edges=log_area]
Owns: getting per-item records (box_eval.run on the `fit` split, or a --from-json written by
bench/measure/box_eval.py), fitting (a, b) of confidence = sigmoid(a * x + b) against the event
IoU >= 0.5 (maximum likelihood, a weak L2 on a; over found answers on items whose object is
present: a not-found answer's confidence is 0 whatever the map), x the map's feature
(kinds/box_confidence.py map_input: the record's x_box_logprob, or with --feature MODE=log_area
the log of its box's area; default: what the profile's map reads), fitting the present
temperature T and bias c (raw = (logit(present) - c_current) * T_current, P = sigmoid(raw / T +
c), maximum likelihood over all answered items: `present_fit`), the before/after table, the
reliability diagram, and with --write the profile's `vision.box.confidence`,
`present_temperature`, `present_bias` and `fitted` record. The confidence map is fitted
per mode that made the box (generate, edges: kinds/box_confidence.py MAPPED), from the records'
x_box_mode (hybrid's records hold only the mode it answered, so fit each mode on its own run); a
mode with no found box keeps its map. The server must serve the file as it is: the present
temperature is fitted on reads recovered through the file's temperature, so restart the stack
after a --write before the next fit (a second fit against the old stack gave 1.58 where the
right value was 1.43, 2026-12-04).
Never restarts the server, never touches other profiles or keys, never writes without --write.
"""
import argparse
import datetime
import json
import math
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1]  # bench/: its modules import each other by name
sys.path[:0] = [str(BENCH / d) for d in ("data", "lib", "measure")]
import box_eval  # noqa: E402
import box_metrics as bm  # noqa: E402
import box_scenes  # noqa: E402

sys.path.insert(0, str(BENCH.parent))
from onepass.kinds.box import EDGES  # noqa: E402
from onepass.kinds.box_confidence import FEATURES, MAPPED, map_input, mode_map  # noqa: E402

CONFIG = BENCH.parent / "serve_config.json"
BEFORE, AFTER = (200, 30, 30), (30, 60, 200)


def box_settings(config: dict, profile: str) -> dict | None:
    return ((config.get("profiles", {}).get(profile) or {}).get("vision") or {}).get("box")


def records_and_source(args) -> tuple:
    """(records, split, the data's command) from --from-json, or measured now on the fit
    split."""
    if args.from_json:
        doc = json.loads(Path(args.from_json).read_text(encoding="utf-8"))
        scenes = doc.get("scenes") or {}
        if doc.get("split") != "fit":
            print(f"warning: {args.from_json} holds the {doc.get('split')!r} split, not 'fit'")
        return doc["records"], doc.get("split"), box_scenes.command(scenes)
    items = box_scenes.select(box_scenes.load(args.data), "fit", args.limit)
    result = box_eval.run(args.url, items, args.mode, args.concurrency, args.model, args.extra,
                          "fit")
    for what, count in result["errors"].items():
        print(f"fit: {what}: {count}")
    return result["records"], "fit", box_scenes.command(items[0] if items else {})


def confidence_data(records: list, mode: str, feature: str = "logprob") -> tuple:
    """(features, hits, confidences) of the found boxes `mode` made on present items; each
    feature as the server computes it (map_input)."""
    rows = [r for r in records if r.get("present_true") and r.get("found")
            and r.get("hit") is not None and r.get("x_box_mode") == mode
            and isinstance(r.get("x_box_logprob"), (int, float))]
    return ([map_input({"feature": feature}, r["x_box_logprob"], [r["box"][e] for e in EDGES])
             for r in rows],
            [bool(r["hit"]) for r in rows],
            [float(r["confidence"] or 0.0) for r in rows])


def present_data(records: list, t_current: float, bias_current: float = 0.0) -> tuple:
    """(the reads' own logits, truths, present as served): each logit recovered through the
    served temperature and bias (kinds/box.py tempered)."""
    rows = [r for r in records if isinstance(r.get("present"), (int, float))]
    return ([(bm.logit(r["present"]) - bias_current) * t_current for r in rows],
            [bool(r["present_true"]) for r in rows],
            [float(r["present"]) for r in rows])


def present_fit(raws: list, ys: list) -> tuple:
    """(T, bias, note): P = sigmoid(raw / T + bias) by maximum likelihood (a logistic in the
    raw logit, T = 1 / its slope); the temperature alone, bias 0, where the slope is not
    positive or T would leave kinds/box.py's [0.001, 1000] (or the bias its ±100)."""
    a, b, note = bm.fit_logistic(raws, ys)
    if a > 1e-3 and abs(b) <= 100:
        return 1.0 / a, b, note
    t, t_note = bm.fit_temperature(raws, ys)
    return t, 0.0, "; ".join(n for n in (note, t_note, "temperature alone, bias 0") if n)


def nll(probs: list, ys: list) -> float | None:
    if not probs:
        return None
    return -sum(math.log(max(p if y else 1 - p, 1e-12)) for p, y in zip(probs, ys)) / len(probs)


def draw_reliability(path: str, panels: list) -> None:
    """One panel per (title, x label, outcomes, probs before, probs after): the observed rate per
    bin against the mean probability, before in red, after in blue, the diagonal in grey, and
    each bin's count as a light bar along the bottom."""
    from PIL import Image, ImageDraw
    size, margin = 320, 60
    image = Image.new("RGB", (len(panels) * (size + 2 * margin), size + 2 * margin + 20), "white")
    draw = ImageDraw.Draw(image)
    for i, (title, xlabel, ys, before, after) in enumerate(panels):
        x0, y0 = i * (size + 2 * margin) + margin, margin

        def point(p, f):
            return x0 + p * size, y0 + (1 - f) * size
        draw.text((x0, y0 - 40), title, fill="black")
        draw.text((x0, y0 - 24), "red: before  blue: after  grey line: perfect  bars: counts",
                  fill="black")
        counts = [b["n"] for b in bm.reliability(before, ys)]
        for k, count in enumerate(counts):  # how much data each before-bin holds
            h = 0.25 * count / max(max(counts), 1)
            draw.rectangle([point(k / 10 + 0.01, h), point((k + 1) / 10 - 0.01, 0)],
                           fill=(230, 230, 230))
        for t in range(6):
            v = t / 5
            draw.text((point(v, 0)[0] - 8, y0 + size + 4), f"{v:.1f}", fill="black")
            draw.text((x0 - 28, point(0, v)[1] - 6), f"{v:.1f}", fill="black")
        draw.rectangle([point(0, 1), point(1, 0)], outline="black")
        draw.line([point(0, 0), point(1, 1)], fill=(150, 150, 150))
        for probs, colour in ((before, BEFORE), (after, AFTER)):
            pts = [point(b["confidence"], b["frequency"])
                   for b in bm.reliability(probs, ys) if b["n"]]
            if len(pts) > 1:
                draw.line(pts, fill=colour, width=2)
            for x, y in pts:
                draw.ellipse([x - 4, y - 4, x + 4, y + 4], fill=colour)
        draw.text((x0, y0 + size + 22), f"x: {xlabel} (10 bins)", fill="black")
        draw.text((x0 - 55, y0 + size // 2), "observed\nrate", fill="black")
    image.save(path)


def write_config(path: Path, profile: str, maps: dict, t: float | None, fitted: dict,
                 bias: float | None = None) -> None:
    """Set the three keys in the profile's vision.box (`maps`: mode -> (a, b, feature), each
    mode in MAPPED; the map per mode, its feature written when not the default log-prob);
    json.dump indent=2 like the file itself."""
    text = path.read_text(encoding="utf-8")
    config = json.loads(text)
    if json.dumps(config, indent=2, ensure_ascii=False) + "\n" != text:
        print(f"warning: {path} was not in json.dump(indent=2) form; it will be now")
    box = config["profiles"][profile]["vision"]["box"]
    box["confidence"] = {mode: {"a": round(a, 4), "b": round(b, 4)}
                         | ({"feature": feature} if feature != "logprob" else {})
                         for mode, (a, b, feature) in maps.items()}
    if t is not None:
        box["present_temperature"] = round(t, 4)
    if bias is not None:
        box["present_bias"] = round(bias, 4)
    box["fitted"] = fitted
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    tmp.replace(path)  # a crash mid-write must not leave half a config


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    box_eval.add_common_args(parser)
    parser.add_argument("--from-json",
                        help="records from bench/measure/box_eval.py --json instead of a server")
    parser.add_argument("--config", default=str(CONFIG))
    parser.add_argument("--profile", help="vision profile (default: the file's default_profile)")
    parser.add_argument("--write", action="store_true", help="write the fit into the profile")
    parser.add_argument("--png", help="save a reliability diagram (before/after) here")
    parser.add_argument("--feature", action="append", default=[], metavar="MODE=FEATURE",
                        help=f"what MODE's map reads ({', '.join(FEATURES)}); default: what "
                        "the profile's map for it reads")
    args = parser.parse_args(argv)
    config_path = Path(args.config)
    config = json.loads(config_path.read_text(encoding="utf-8"))
    profile = args.profile or config.get("default_profile")
    settings = box_settings(config, profile)
    if settings is None:
        parser.error(f"profile {profile!r} in {config_path} has no vision.box")
    t_current = float(settings.get("present_temperature", 1.0))
    bias_current = float(settings.get("present_bias", 0.0))
    current = {mode: mode_map(settings.get("confidence", {"a": 1.0, "b": 0.0}), mode)
               for mode in MAPPED}
    old = {mode: (float(m["a"]), float(m["b"]), m.get("feature", "logprob"))
           for mode, m in current.items()}
    features = {mode: old[mode][2] for mode in MAPPED}
    for given in args.feature:
        mode, _, feature = given.partition("=")
        if mode not in MAPPED or feature not in FEATURES:
            parser.error(f"--feature {given}: MODE=FEATURE, MODE one of {', '.join(MAPPED)}, "
                         f"FEATURE one of {', '.join(FEATURES)}")
        features[mode] = feature

    records, split, data = records_and_source(args)
    maps, fitted_modes = dict(old), []
    rows = []  # (name, x label, outcomes, before, after): the table and the PNG's panels
    for mode in MAPPED:
        xs, hits, conf_before = confidence_data(records, mode, features[mode])
        if not xs:  # nothing to fit: keep the profile's map rather than reset it
            print(f"confidence ({mode}): no found boxes on present items; its map is kept")
            continue
        a, b, note = bm.fit_logistic(xs, hits)
        if note:
            print(f"confidence ({mode}): {note}")
        maps[mode] = (a, b, features[mode])
        fitted_modes.append(mode)
        rows.append((f"confidence {mode} ({features[mode]})", "confidence", hits, conf_before,
                     [bm.sigmoid(a * x + b) for x in xs]))
    raws, present_true, present_before = present_data(records, t_current, bias_current)
    t, bias, t_note = present_fit(raws, present_true)
    if t_note:
        print(f"present: {t_note}")
    present_after = [bm.sigmoid(z / t + bias) for z in raws] if t else present_before
    rows.append(("present", "present", present_true, present_before, present_after))

    for mode in MAPPED:
        print(f"profile {profile}: confidence ({mode}) a,b,feature {old[mode][0]:g},"
              f"{old[mode][1]:g},{old[mode][2]} -> {maps[mode][0]:.4f},{maps[mode][1]:.4f},"
              f"{maps[mode][2]}")
    print(f"profile {profile}: present_temperature, present_bias {t_current:g}, "
          f"{bias_current:g} -> {'unchanged' if t is None else f'{t:.4f}, {bias:.4f}'}")
    print(f"{'':30}{'n':>5}  {'ECE before':>10} {'after':>7}  {'NLL before':>10} {'after':>7}")
    for name, _, ys, before, after in rows:
        cells = [bm.ece(before, ys), bm.ece(after, ys), nll(before, ys), nll(after, ys)]
        shown = ["-" if v is None else f"{v:.3f}" for v in cells]
        print(f"{name:30}{len(ys):5d}  {shown[0]:>10} {shown[1]:>7}  {shown[2]:>10} {shown[3]:>7}")
    print("(fitted and measured on the same fit half: check the eval half with "
          "bench/measure/box_eval.py)")

    answered = sum(1 for r in records if r.get("found") is not None)
    fitted = {"by": "bench/fit/fit_box_calibration.py", "n": answered, "split": split,
              "data": data, "modes": fitted_modes,
              "date": datetime.datetime.now(datetime.timezone.utc).date().isoformat()}
    if args.write and not answered:
        print("nothing was answered: not writing")
        return 1
    if args.write:
        write_config(config_path, profile, maps, t, fitted, bias if t else None)
        print(f"wrote {config_path}: profiles.{profile}.vision.box (confidence, "
              f"present_temperature, present_bias, fitted {json.dumps(fitted)}); restart the "
              "stack before another fit or an eval")
    else:
        print(f"dry run (no --write): would set fitted = {json.dumps(fitted)}")
    if args.png:
        draw_reliability(args.png, [
            (f"{name}, {len(ys)} {'answers' if name == 'present' else 'found boxes'}",
             xlabel, ys, before, after) for name, xlabel, ys, before, after in rows])
        print(f"saved {args.png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
