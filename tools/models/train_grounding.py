"""Train a small Idefics3 grounding model from scratch on CPU, on onepass's own box prompts over
the synthetic scenes (bench/data/box_scenes.py), so box questions can be measured with a model
that sees.

Usage: .venv/bin/python tools/models/train_grounding.py [--steps 1500] [--batch 16]
         [--profile idefics3-tiny] [--start probe|onepass|plain] [--init DIR] [--seed 0]
         [--gate-at STAGE | --clock-at STAGE [--mix S]] [--heads-first N] [--scene-seed 1000]
         [--ship DIR]
Writes DIR (default models/idefics3-grounding/): weights.safetensors (what build_grounding.py
builds the model from), curve.tsv (the training curve), digests.json (the built model's
sha256, which the build then requires) and heads.safetensors (the dense targets' heads, for
the next run's --init; never served).
The architecture and processor are build_grounding.py's (Idefics3, as build_vlm.py: vLLM 0.32
CPU serves it). Examples come from tools/models/grounding_prompts.py: the present read, one of the
four edge reads (at random) and the box generation, exactly as onepass lays them out for the
profile, with the right label or JSON as target. Training scenes use --scene-seed (the eval set
is seed 0, so no eval scene is trained on). The loss is cross-entropy on the target tokens only,
over the whole vocabulary (label reads and the box's log-probs are read from the full
distribution), plus the dense targets of grounding_targets.py on the image tokens (what lies
under each, and a layer before the answer, ASKED_LAYER, whether it is the question's target and
where its asked edge is); a curriculum (grounding_curriculum.py: a gate, then a clock) starts on
lone targets' edges and ends on onepass's own prompts over full scenes. Deterministic for a
seed on one machine; another CPU may round differently, so a retrained model gets its own digests
(the build from shipped weights is the same on every CPU: build_grounding.portable_normal).
Prints a line per --log-every steps (step, seconds, mean loss per example kind, edges open,
the crowd stage: an index into grounding_curriculum.CROWD_STAGES), as curve.tsv.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import build_grounding  # noqa: E402
import build_vlm  # noqa: E402
import grounding_curve  # noqa: E402
from grounding_loss import KINDS, losses  # noqa: E402
from grounding_curriculum import CROWD_STAGES, GATE  # noqa: E402
from grounding_examples import Examples  # noqa: E402
import grounding_prompts  # noqa: E402
import grounding_targets  # noqa: E402
from model_manifest import sha256  # noqa: E402

HEADS = "heads.safetensors"  # the dense targets' heads (grounding_targets.head_tensors)


def record_digests(ship: Path, files: Path, tok) -> None:
    """SHIP/digests.json: the sha256 of the model build_grounding.py makes from SHIP's weights
    (FILES holds the tokenizer and processor; the build is written there too)."""
    build_grounding.write(ship / "weights.safetensors", tok, files)
    digests = {name: sha256(files / name) for name in ("model.safetensors", "tokenizer.json")}
    (ship / "digests.json").write_text(json.dumps(digests, indent=2) + "\n")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch", type=int, default=16)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (1: the machine "
                        "is shared; 2 threads on 2 busy cores ran 4x slower here)")
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--profile", default="idefics3-tiny", help="the vision profile whose "
                        "prompts are learnt (idefics3-tiny's layout, labels and convention)")
    parser.add_argument("--seed", type=int, default=0, help="the data stream's order")
    parser.add_argument("--scene-seed", type=int, default=1000)
    parser.add_argument("--log-every", type=int, default=50)
    parser.add_argument("--save-every", type=int, default=500)
    parser.add_argument("--ship", default=str(build_grounding.SHIPPED),
                        help="where the weights (and the curve, digests) are written")
    parser.add_argument("--stop-after", type=int, default=0, help="stop after this many steps "
                        "(the curriculum and learning rate still follow --steps) and ship then; "
                        "or touch SHIP/stop to end after the current step")
    parser.add_argument("--init", default="", help="start from the weights another run shipped "
                        "in this directory (its weights.safetensors), not from the seed")
    parser.add_argument("--gate-at", type=int, default=0, help="with --init and --start "
                        "onepass: begin with every edge open at this crowd stage (an index "
                        "into CROWD_STAGES: where the run it goes on from stood)")
    parser.add_argument("--clock-at", type=int, default=None, help="with --init and --start "
                        "onepass: every edge open, the crowd held at this stage, and the clock "
                        "running from the first step (the present reads and box generations "
                        "come in before the crowd's last stage)")
    parser.add_argument("--mix", type=float, default=None, help="with a crowd stage: "
                        "this share of scenes lone, the others at a stage drawn evenly from "
                        "the first crowded one to the held one (grounding_curriculum."
                        "mixed_stage); unset: every scene at the held stage")
    parser.add_argument("--only", default="", help="comma-separated example kinds (present, "
                        "edge, box): only these are asked, whatever the clock says")
    parser.add_argument("--soft-edges", action="store_true", help="each edge read's target "
                        "spread over the two bands around the edge, so the expected band "
                        "centre onepass reads is the edge itself (grounding_targets.soft_bands)")
    parser.add_argument("--present-weight", type=float, default=1.0, help="the present "
                        "read's loss, times this (the others' stay at 1)")
    parser.add_argument("--misname", type=float, default=0.0, help="this share of present "
                        "scenes is also asked `present` under words that miss its target "
                        "(grounding_curriculum.misnamed: the same image, the answer No)")
    parser.add_argument("--read-weight", type=float, default=0.0, help="the read targets' "
                        "loss (grounding_targets.read_targets: the colour and shape named, and "
                        "which are in the image, on the answer's input), times this; 0: off")
    parser.add_argument("--heads-first", type=int, default=0, help="with --init from a run "
                        "that shipped no heads: this many steps train the dense targets' heads "
                        "alone, so their first (random) gradients never reach the trained model")
    parser.add_argument("--start", choices=("probe", "onepass", "plain"), default="probe",
                        help="the gate's edges asked in one line (probe) or in onepass's own "
                        "prompts (onepass: no probe or short examples); plain: no gate, every "
                        "scene asked as onepass serves it (the clock's last shares) throughout")
    parser.add_argument("--tokenizer", default=str(Path.home() / ".cache/onepass/models/"
                                                   f"{build_vlm.TOKENIZER_NAME}"))
    parser.add_argument("--record-digests", action="store_true", help="only write "
                        "SHIP/digests.json for the weights already there (after a change to "
                        "build_grounding's initialisation)")
    parser.add_argument("--png", default="", help="also draw the curve here (--steps 0: only "
                        "draw the curve already in --ship)")
    args = parser.parse_args(argv)
    for flag, stage, given in (("--gate-at", args.gate_at, args.gate_at != 0),
                               ("--clock-at", args.clock_at, args.clock_at is not None)):
        if given and not (args.init and args.start == "onepass"):
            parser.error(f"{flag} goes on from a run: it needs --init and --start onepass")
        if given and not 0 <= stage < len(CROWD_STAGES):
            parser.error(f"{flag}: a crowd stage from 0 to {len(CROWD_STAGES) - 1}")
    if args.mix is not None and not (0 <= args.mix <= 1 and args.start == "onepass"):
        parser.error("--mix: a share from 0 to 1, with --start onepass (its crowd stages)")
    if args.gate_at and args.clock_at is not None:
        parser.error("--gate-at or --clock-at, not both")
    ship = Path(args.ship)
    if args.steps == 0:
        grounding_curve.draw(ship / "curve.tsv", Path(args.png), KINDS)
        return 0
    if args.record_digests:
        files = Path(tempfile.mkdtemp(prefix="grounding-"))
        record_digests(ship, files, build_grounding.prepare(files, Path(args.tokenizer)))
        return 0
    import torch
    from safetensors.torch import load_file, save_file
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    ship.mkdir(parents=True, exist_ok=True)
    (ship / "stop").unlink(missing_ok=True)  # an earlier run's
    files = Path(tempfile.mkdtemp(prefix="grounding-"))  # tokenizer, processor, then the build
    tok = build_grounding.prepare(files, Path(args.tokenizer))
    data = Examples(files, args.profile, args.scene_seed, args.seed)
    data.only = set(args.only.split(",")) - {""} or None
    data.misname = args.misname
    data.mix = args.mix
    data.soft = grounding_prompts.band_tokens(data.main[0], tok) if args.soft_edges else None
    model = build_grounding.new_model(tok)
    if args.init:
        start = load_file(Path(args.init) / "weights.safetensors")
        build_grounding.apply(model, start)
        data.used.update(start["embed_ids"].tolist())  # its trained rows ship again
    else:
        grounding_targets.sincos_positions(
            model.model.vision_model.embeddings.position_embedding.weight)
    model.train()
    # the dense targets' heads: trained beside the model, never served (a run ships them for
    # the next one's --init)
    heads = [torch.nn.Linear(model.config.text_config.hidden_size, width)
             for width in (grounding_targets.WIDTH, sum(grounding_targets.ASKED),
                           sum(grounding_targets.READ))]
    if args.init and (Path(args.init) / HEADS).exists():
        grounding_targets.load_heads(heads, load_file(Path(args.init) / HEADS))
    embed = model.get_input_embeddings().weight
    seen_rows = torch.zeros(embed.shape[0], dtype=torch.bool)
    # rows of tokens no prompt has used stay at their seeded values: the repo ships only the
    # used rows (build_grounding.py), so nothing else may move them
    embed.register_hook(lambda g: g * seen_rows[:, None].to(g.dtype))
    rest = ([p for p in model.parameters() if p is not embed]
            + [p for head in heads for p in head.parameters()])
    opt = torch.optim.AdamW([{"params": rest, "weight_decay": 0.01},
                             {"params": [embed], "weight_decay": 0.0}], lr=args.lr)
    warm = max(1, args.steps // 100)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * 0.5 * (
        1 + math.cos(math.pi * min(1.0, s / args.steps))))
    curve = open(ship / "curve.tsv", "w")
    curve.write("step\tseconds\t" + "\t".join(KINDS) + "\tedges_open\tcrowd\n")
    started, seen = time.time(), {k: [] for k in KINDS}
    plain, data.rewords = args.start == "plain", args.start == "probe"
    data.crowd = args.gate_at if args.start == "onepass" else None
    last, opened = args.stop_after or args.steps, 0 if plain else None  # the gate opened
    if args.clock_at is not None:  # the gate stays where it is; the clock runs from step 1
        data.crowd, opened = args.clock_at, 0

    def checkpoint():  # what --init goes on from: the shipped delta and the dense heads
        save_file(build_grounding.delta(model, data.used), ship / "weights.safetensors")
        save_file(grounding_targets.head_tensors(heads), ship / HEADS)
    data.open = (len(grounding_prompts.EDGE_FIELDS) if plain or args.gate_at
                 or args.clock_at is not None else data.open)
    for step in range(1, last + 1):
        data.progress = (1.0 if plain else 0.0 if opened is None
                         else (step - opened) / (args.steps - opened))
        batch = data.batch(args.batch)
        seen_rows[torch.tensor(sorted(data.used))] = True
        loss, per_kind = losses(model, heads, batch, args.present_weight, args.read_weight)
        opt.zero_grad()
        loss.backward()
        if step <= args.heads_first:  # AdamW leaves a parameter without a gradient as it is
            for p in model.parameters():
                p.grad = None
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        for k, v in per_kind.items():
            seen[k].append(v)
        if step % args.log_every == 0 or step == last:
            means = [sum(v) / len(v) if v else float("nan") for v in seen.values()]
            line = (f"{step}\t{time.time() - started:.0f}\t" + "\t".join(f"{m:.4f}" for m in means)
                    + f"\t{data.open}\t{data.crowd}")
            print(line, flush=True)
            curve.write(line + "\n")
            curve.flush()
            if opened is None and means[KINDS.index("edge")] < GATE:
                opened = step if data.widen() else None
            seen = {k: [] for k in KINDS}
        if step % args.save_every == 0:  # a look at it served while training goes on
            checkpoint()
        if (ship / "stop").exists():  # asked to end here and ship what it has (the budget)
            last = step
            break
    checkpoint()
    record_digests(ship, files, tok)
    if args.png:
        grounding_curve.draw(ship / "curve.tsv", Path(args.png), KINDS)
    print(f"train_grounding: {last} steps in {time.time() - started:.0f} s; shipped "
          f"{ship / 'weights.safetensors'} ({len(data.used)} embedding rows trained)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
