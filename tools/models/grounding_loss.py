"""The grounding model's training loss (tools/models/train_grounding.py): a batch of examples
laid out as one padded tensor set, and the answers' cross-entropy plus the dense targets' loss on
the image tokens (grounding_targets.py)."""
from __future__ import annotations

import build_vlm
import grounding_targets

KINDS = ("present", "edge", "box", "aux", "asked", "read")
AUX_WEIGHT = 1.0  # the dense targets' loss beside the answers' (grounding_targets.py)
ASKED_LAYER = 2  # of 4: the asked targets are read here, two layers before the answer


def collate(batch):
    import torch
    longest = max(len(ids) for ids, *_ in batch)
    tiles = max(pv.shape[0] for _, pv, *_ in batch)
    ids = torch.full((len(batch), longest), build_vlm.EOS_ID, dtype=torch.long)
    mask = torch.zeros((len(batch), longest), dtype=torch.long)
    pv = torch.zeros((len(batch), tiles, *batch[0][1].shape[1:]))
    pm = torch.zeros((len(batch), tiles, *batch[0][2].shape[1:]), dtype=torch.bool)
    rows, cols, targets, weights = [], [], [], []
    for b, (seq, pixels, pmask, n, _, _, _, soft, _) in enumerate(batch):
        ids[b, :len(seq)] = torch.tensor(seq)
        mask[b, :len(seq)] = 1
        pv[b, :pixels.shape[0]] = pixels
        pm[b, :pmask.shape[0]] = pmask
        for j in range(len(seq) - n, len(seq)):
            rows.append(b)
            cols.append(j - 1)  # the hidden state before a token predicts it
            # up to two weighted targets a token: a soft edge's two bands, else the token alone
            pair = soft if soft else [(seq[j], 1.0)]
            targets.append([t for t, _ in pair] + [seq[j]] * (2 - len(pair)))
            weights.append([w for _, w in pair] + [0.0] * (2 - len(pair)))
    cells = torch.tensor([example[5] for example in batch])
    wanted = torch.tensor([example[6] for example in batch])
    read = torch.tensor([example[8] for example in batch])[:, None]  # (B, 1, len(READ))
    last = torch.tensor([len(seq) - n - 1 for seq, _, _, n, *_ in batch])  # the answer's input
    return (ids, mask, pv, pm, torch.tensor(rows), torch.tensor(cols), torch.tensor(targets),
            torch.tensor(weights), cells, wanted, read, last)


def token_loss(logits, targets, weights):
    """Each target token's cross-entropy over the whole vocabulary against its weighted
    targets (collate: a token and weight 1, or a soft edge's two bands)."""
    import torch.nn.functional as F
    return -(F.log_softmax(logits, -1).gather(1, targets) * weights).sum(1)


def losses(model, heads, batch, present_weight: float = 1.0, read_weight: float = 0.0):
    """Mean cross-entropy over target tokens (a present read's times `present_weight`; a soft
    target's against its weighted bands) plus AUX_WEIGHT times the dense targets' loss on the
    image tokens as the language model receives them, plus `read_weight` times the read
    targets' loss on the answer's input at ASKED_LAYER; and each part, unweighted (the curve)."""
    import torch
    ids, mask, pv, pm, rows, cols, targets, weights, cells, wanted, read, last = collate(batch)
    out = model.model(input_ids=ids, attention_mask=mask, pixel_values=pv,
                      pixel_attention_mask=pm, output_hidden_states=True)
    logits = model.lm_head(out.last_hidden_state[rows, cols])
    each = token_loss(logits, targets, weights)
    kind_of = torch.tensor([KINDS.index(example[4]) for example in batch
                            for _ in range(example[3])])
    scale = 1.0 + (present_weight - 1.0) * (kind_of == KINDS.index("present")).float()
    per_kind = {k: float(each[kind_of == i].mean().detach()) for i, k in enumerate(KINDS)
                if bool((kind_of == i).any())}
    where, parts = ids == model.config.image_token_id, []
    for head, layer, want, groups in ((heads[0], 0, cells, grounding_targets.GROUPS),
                                      (heads[1], ASKED_LAYER, wanted, grounding_targets.ASKED)):
        image = out.hidden_states[layer][where]
        parts.append(grounding_targets.loss(head, image.view(len(batch), -1, image.shape[-1]),
                                            want, groups))
    per_kind["aux"], per_kind["asked"] = (float(part.detach()) for part in parts)
    answer_input = out.hidden_states[ASKED_LAYER][torch.arange(len(batch)), last][:, None]
    said = grounding_targets.loss(heads[2], answer_input, read, grounding_targets.READ)
    per_kind["read"] = float(said.detach())
    return ((each * scale).mean() + AUX_WEIGHT * (parts[0] + parts[1]) + read_weight * said,
            per_kind)
