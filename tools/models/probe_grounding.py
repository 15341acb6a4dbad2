"""How often a grounding checkpoint names the right band for each edge, on fresh training-style
examples: a look inside a run (tools/models/train_grounding.py) without serving it.

Usage: .venv/bin/python tools/models/probe_grounding.py WEIGHTS [--progress 1.0] [--open 4]
       [--n 60] [--scene-seed 5000] [--profile idefics3-tiny] [--start probe] [--crowd N]
WEIGHTS: a weights.safetensors train_grounding.py shipped (or saved mid-run). --progress picks
the curriculum's clock (train_grounding.SCHEDULE): 0.0 asks lone targets' edges in one line,
1.0 asks them in onepass's own prompts over full scenes; --open how many edges are asked (the
gate: 1 is the left edge only, 4 all); --profile and --start as the run was trained (--start
onepass: onepass's own prompts at every progress, lone targets at 0). Prints, per edge, how many
of its examples got the right band as the top of the ten labels, and whether the ten
probabilities differ between examples at all (a run on the plateau gives every example the same).
Scenes from --scene-seed (not the training seeds 1000/2000, nor the eval seed 0).
"""
import argparse
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import build_grounding  # noqa: E402
import build_vlm  # noqa: E402
import train_grounding  # noqa: E402
from grounding_prompts import EDGE_FIELDS, edge_named  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("weights")
    parser.add_argument("--progress", type=float, default=1.0)
    parser.add_argument("--open", type=int, default=4, help="edges asked: 1 the left only, "
                        "4 all (train_grounding.GATE opens them in turn)")
    parser.add_argument("--n", type=int, default=60, help="edge reads asked in all")
    parser.add_argument("--scene-seed", type=int, default=5000)
    parser.add_argument("--profile", default="idefics3-tiny", help="whose prompts: as trained")
    parser.add_argument("--start", choices=("probe", "onepass"), default="probe")
    parser.add_argument("--crowd", type=int, default=None, help="scenes as the crowd gate's "
                        "stage N shows them (grounding_curriculum.CROWD_STAGES), not --progress's")
    parser.add_argument("--tokenizer", default=str(Path.home() / ".cache/onepass/models/"
                                                   f"{build_vlm.TOKENIZER_NAME}"))
    args = parser.parse_args(argv)
    import torch
    from safetensors.torch import load_file
    files = Path(tempfile.mkdtemp(prefix="grounding-probe-"))
    tok = build_grounding.prepare(files, Path(args.tokenizer))
    model = build_grounding.new_model(tok)
    build_grounding.apply(model, load_file(args.weights))
    model.eval()
    data = train_grounding.Examples(files, args.profile, args.scene_seed, 0)
    data.progress, data.open, data.rewords = args.progress, args.open, args.start == "probe"
    data.crowd = args.crowd
    digits = [tok.encode(str(d), add_special_tokens=False)[0] for d in range(10)]
    asked, right, seen = Counter(), Counter(), set()
    while sum(asked.values()) < args.n:
        data.scene()
        for seq, pixels, pmask, _, kind, *_ in data.pool:
            if kind != "edge" or sum(asked.values()) >= args.n:
                continue
            edge = edge_named(tok.decode(seq))
            with torch.no_grad():
                hidden = model.model(input_ids=torch.tensor([seq[:-1]]),
                                     pixel_values=pixels[None],
                                     pixel_attention_mask=pmask[None]).last_hidden_state
                probs = torch.softmax(model.lm_head(hidden[0, -1])[digits], -1)
            seen.add(tuple(round(float(p), 3) for p in probs))
            asked[edge] += 1
            right[edge] += int(probs.argmax()) == int(tok.decode(seq[-1]))
        data.pool = []
    for edge in EDGE_FIELDS:
        if asked[edge]:
            print(f"{edge:6} right band {right[edge]:3} of {asked[edge]:3}")
    total = sum(asked.values())
    print(f"all    right band {sum(right.values()):3} of {total:3} (chance about {total // 10}); "
          f"{len(seen)} different band distributions over {total} examples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
