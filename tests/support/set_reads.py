"""Set reads' references for the tests and the bench that check engine/onepass_engine/sets.py
and set_plan.py: a set request over three options listed in any order, who sees whom by the
method, and the whole-bias code the blocks replaced (a [rows, keys] bias built once, repeated
per query head), kept as the bits the blocks must reproduce. Needs torch (the venv).
"""
from types import SimpleNamespace

from tests.support.venv_only import installed

try:
    import torch
except ImportError:
    if installed("torch"):
        raise
    torch = None  # the stdlib run (python3 -S): its tests skip

PREFIX, TAIL = [11, 12, 13, 14, 15], [40, 41, 42]
OPTIONS = [[30, 31, 32], [20, 21, 22, 23], [25, 26]]  # sorted by ids: 1, 2, 0


def geometry(order, two_way=False, computed=0, start=0):
    """A set request listing OPTIONS in `order`, and each token's identity (the same in every
    listing) and part (-1 the prefix, j option j, 9 the tail)."""
    ids, spans = list(PREFIX), []
    who, part = [("p", t) for t in range(len(PREFIX))], [-1] * len(PREFIX)
    for j in order:
        spans.append((len(ids), len(ids) + len(OPTIONS[j])))
        ids += OPTIONS[j]
        who += [("o", j, t) for t in range(len(OPTIONS[j]))]
        part += [j] * len(OPTIONS[j])
    ids += TAIL
    who += [("t", t) for t in range(len(TAIL))]
    part += [9] * len(TAIL)
    geo = SimpleNamespace(start=start, rows=len(ids) - computed, computed=computed,
                          spans=tuple(spans), token_ids=tuple(ids), two_way=two_way,
                          length=len(ids))
    return geo, who, part


def method_sees(part, two_way):
    """Who sees whom, from the method: a span the prefix and itself, the tail everything,
    causal inside a part unless two-way."""
    n = len(part)
    p = torch.tensor(part)
    same = p[:, None] == p[None, :]
    earlier = torch.arange(n)[:, None] >= torch.arange(n)[None, :]
    return (earlier | (same & two_way)) & (same | (p[None, :] == -1) | (p[:, None] == 9))


def whole_bias(geo):
    """The replaced code's bias: [rows, keys] for the whole step, built once."""
    spans, length = geo.spans, geo.length
    first, end = spans[0][0], spans[-1][1]
    ids = geo.token_ids
    canonical = sorted(spans, key=lambda s: (tuple(ids[s[0]:s[1]]), s))
    order = (list(range(first)) + [t for s, e in canonical for t in range(s, e)]
             + list(range(end, length)))
    group = [0] * first + [k + 1 for k, (s, e) in enumerate(canonical) for _ in range(s, e)] \
        + [len(spans) + 1] * (length - end)
    tail = len(spans) + 1
    token, group = torch.tensor(order), torch.tensor(group)
    rows = slice(0, length) if geo.two_way else slice(first, length)
    tq, gq = token[rows, None], group[rows, None]
    tk, gk = token[None, :], group[None, :]
    same = gq == gk
    sees = (gk == 0) | same | (gq == tail)
    if not geo.two_way:
        sees &= ~(same & (tk > tq))
    return torch.zeros(sees.shape).masked_fill_(~sees, float("-inf"))


def whole_attend(impl, q, k, v, bias):
    """The replaced attend: the bias repeated per query head, added by baddbmm."""
    h, r, d = q.shape
    kv = k.shape[0]
    g = h // kv
    q = q.reshape(kv, g * r, d)
    bias = bias.repeat(g, 1).expand(kv, -1, -1)
    cap = getattr(impl, "logits_soft_cap", 0) or 0
    if cap:
        scores = cap * torch.tanh(torch.bmm(q, k.transpose(1, 2)) * (impl.scale / cap)) + bias
    else:
        scores = torch.baddbmm(bias, q, k.transpose(1, 2), alpha=impl.scale)
    sinks = getattr(impl, "sinks", None)
    if sinks is not None:
        sink = sinks.float().view(kv, g, 1, 1).expand(kv, g, r, 1).reshape(kv, g * r, 1)
        weights = torch.softmax(torch.cat([scores, sink], -1), -1)[..., :-1]
    else:
        weights = torch.softmax(scores, -1)
    return torch.bmm(weights, v).view(h, r, d)
