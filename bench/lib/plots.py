"""The bench tools' pictures (`--png PATH`): latency against clients (measure/throughput.py),
reliability per kind (measure/evaluate.py), goodput against offered load (measure/overload.py),
order sensitivity per layout (measure/techniques.py) and the box IoU histogram
(measure/box_eval.py). Each figure is labelled with what measured it:
the model the server named and this machine's CPU, and the date.

matplotlib (pinned in deps/test.txt, Agg backend, no display) is imported here only, so the
tools run without it unless asked for a picture.
"""
import datetime
import json
import os
import platform
import textwrap
import urllib.request

import shim_auth  # bench/lib, beside this module


def machine() -> str:
    """This machine's CPU as a figure's footer says it: cores, model name, architecture."""
    name = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            name = next(line.split(":", 1)[1].strip() for line in f
                        if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{os.cpu_count()}-core {name} ({platform.machine()}), no GPU"


def served_model(url: str) -> str:
    """The model a running onepass serves, from /health (the key from ONEPASS_API_KEY)."""
    req = urllib.request.Request(url.rstrip("/") + "/health", headers=shim_auth.headers())
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            doc = json.loads(r.read())
    except (OSError, ValueError):
        return "model unknown"
    return f"{doc.get('model', 'model unknown')} (profile {doc.get('profile', '?')})"


def label(model: str) -> str:
    return f"{model} on a {machine()}, {datetime.date.today().isoformat()}"


def _figure(width=7.0, height=4.2, panels=1):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(1, panels, figsize=(width, height), squeeze=False)
    return plt, fig, list(axes[0])


def _save(plt, fig, path: str, title: str, footer: str) -> None:
    fig.suptitle(title, fontsize=11)
    fig.text(0.01, 0.01, footer, fontsize=7, color="#555555")
    fig.tight_layout(rect=(0, 0.04, 1, 0.95))
    fig.savefig(path, dpi=110)
    plt.close(fig)
    print(f"saved {path}")


def latency_vs_clients(path: str, rows: list, footer: str, title: str) -> None:
    """One line per path (onepass, direct calls): p50 solid and p99 dashed latency per decision
    against the number of clients sending at once."""
    plt, fig, (ax,) = _figure()
    for n, name in enumerate(dict.fromkeys(r["path"] for r in rows)):
        mine = sorted((r for r in rows if r["path"] == name), key=lambda r: r["clients"])
        x = [r["clients"] for r in mine]
        line, = ax.plot(x, [r["p50_ms"] for r in mine], "o-", label=f"{name} p50")
        ax.plot(x, [r["p99_ms"] for r in mine], "s--", color=line.get_color(), alpha=0.6,
                label=f"{name} p99")
    ax.set_xscale("log", base=2)
    ax.set_xticks(sorted({r["clients"] for r in rows}), [str(c) for c in
                                                        sorted({r["clients"] for r in rows})])
    ax.set(xlabel="clients sending at once", ylabel="latency per decision (ms)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    _save(plt, fig, path, title, footer)


def goodput_vs_load(path: str, runs: list, footer: str, title: str) -> None:
    """bench/measure/overload.py: goodput (answers received in time, per second) and the share
    of engine tokens spent on answers nobody received, against the offered load (x capacity);
    a line per run (its mode), the targets dotted: 90 % of each run's own 1x goodput, 5 %."""
    plt, fig, (left, right) = _figure(width=9.0, panels=2)
    for run in runs:
        rows = sorted(run["rows"], key=lambda r: r["load"])
        x = [r["load"] for r in rows]
        line, = left.plot(x, [r["goodput_per_s"] for r in rows], "o-", label=run["mode"])
        right.plot(x, [100 * r["wasted_share"] for r in rows], "o-", label=run["mode"])
        base = next((r["goodput_per_s"] for r in rows if r["load"] == 1), None)
        if base:  # each run's target: 90 % of its own 1x goodput
            left.axhline(0.9 * base, ls=":", color=line.get_color(),
                         label=f"90 % of its 1x ({run['mode']})")
    right.axhline(5, ls=":", color="#888888", label="5 % target")
    left.set(xlabel="offered load (x measured capacity)", ylabel="goodput (answers in time / s)")
    right.set(xlabel="offered load (x measured capacity)",
              ylabel="engine tokens nobody received (%)")
    for ax in (left, right):
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    _save(plt, fig, path, title, footer)


def reliability_per_kind(path: str, records: list, footer: str, title: str) -> None:
    """A reliability diagram per question kind: accuracy against top-option confidence in ten
    bins, each point's size its count, the diagonal perfect calibration."""
    import decision_metrics as metrics
    kinds = sorted({r["kind"] for r in records})
    plt, fig, axes = _figure(3.3 * len(kinds), 3.8, len(kinds))
    for ax, kind in zip(axes, kinds):
        mine = [r for r in records if r["kind"] == kind]
        bins = [b for b in metrics.reliability(mine) if b["n"]]
        ax.plot([0, 1], [0, 1], color="#999999", lw=1)
        ax.bar([(b["lo"] + b["hi"]) / 2 for b in bins], [b["accuracy"] for b in bins],
               width=0.09, color="#2f6fdf", alpha=0.35)
        ax.scatter([b["confidence"] for b in bins], [b["accuracy"] for b in bins],
                   s=[12 + 4 * b["n"] for b in bins], color="#1d4fb0", zorder=3)
        ece = metrics.ece(mine)
        ax.set(xlim=(0, 1), ylim=(0, 1), xlabel="top-option confidence",
               title=f"{kind}: {len(mine)} questions, ECE {ece:.3f}" if ece is not None else kind)
        ax.title.set_fontsize(9)
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("accuracy (bars: per bin; dots sized by count)")
    _save(plt, fig, path, title, footer)


def order_sensitivity(path: str, rows: dict, footer: str, title: str) -> None:
    """A bar per layout: the share of choice questions whose top answer changed when the
    options were read reversed."""
    names = [n for n, r in rows.items() if r.get("order_sensitivity") is not None]
    plt, fig, (ax,) = _figure(9.0, 0.4 * len(names) + 1.8)
    values = [rows[n]["order_sensitivity"] for n in names]
    ax.barh(range(len(names)), values, color="#2f6fdf")
    for i, v in enumerate(values):
        ax.text(v + 0.01, i, f"{v:.3f}", va="center", fontsize=7)
    ax.set_yticks(range(len(names)), [textwrap.fill(n, 42) for n in names], fontsize=7)
    ax.invert_yaxis()
    ax.set(xlim=(0, 1), xlabel="share of choices whose top answer changed with the options "
           "reversed")
    ax.grid(axis="x", alpha=0.3)
    _save(plt, fig, path, title, footer)


def iou_histogram(path: str, records: list, footer: str, title: str) -> None:
    """IoU of each box with the true one (items whose object is present), with the 0.5 line
    that Acc@0.5 counts from."""
    ious = [r["iou"] for r in records if r.get("iou") is not None]
    plt, fig, (ax,) = _figure()
    ax.hist(ious, bins=[i / 20 for i in range(21)], color="#2f6fdf", edgecolor="white")
    ax.axvline(0.5, color="#b42318", lw=1, ls="--", label="IoU 0.5")
    hits = sum(i >= 0.5 for i in ious)
    ax.set(xlim=(0, 1), xlabel="IoU with the true box",
           ylabel=f"boxes (of {len(ious)}; {hits} at IoU >= 0.5)")
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    _save(plt, fig, path, title, footer)
