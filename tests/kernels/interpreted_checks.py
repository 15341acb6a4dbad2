"""vLLM 0.32.0's Triton attention kernels (TRITON_ATTN, the GPU profiles' backend) run by
Triton's interpreter on small CPU tensors, driven the way onepass drives them, against torch
references. Run by test_triton_interpreter.py in a process of its own:

    python tests/kernels/interpreted_checks.py [CHECK ...]

prints one `CHECK {json}` line per check (ok, seconds, the failure's traceback).
"""
import functools
import json
import sys
import time
import traceback

import interpreted as it
import torch
from interpreted import BLOCK, HEAD, HEADS, KV_HEADS, Req, assert_close, causal_sees, step

KERNEL_LAYOUT = it.KVCacheLayout.LBNHC  # vLLM's choice for TRITON_ATTN; the kernel reads strides
GEN = torch.Generator().manual_seed(48)


def qkv(n):
    return (torch.randn(n, HEADS, HEAD, generator=GEN),
            torch.randn(n, KV_HEADS, HEAD, generator=GEN),
            torch.randn(n, KV_HEADS, HEAD, generator=GEN))


def request(name, length, computed, blocks, cache):
    r = Req(name, *qkv(length), computed, blocks)
    if computed:  # written by an earlier step
        it.write(cache, r.k, r.v, r.blocks, range(computed))
    return r


def check_rows(out, reqs, sees_of):
    at = 0
    for r in reqs:
        rows = out[at:at + len(r.new)]
        assert_close(rows, r.q[r.computed:], r.k, r.v, sees_of(r), f"request {r.name}")
        at += len(r.new)


def prefill_row_flags():
    """Two-way and one-way prefill rows in one batch, flagged the plugin's way (int32, 1 =
    causal, 0 = two-way), one causal row continuing after 12 cached tokens: each row reads as
    its flag says; the causal rows have the same bits as in the step without flags."""
    cache = it.kv_cache(KERNEL_LAYOUT)
    reqs = [request("a", 23, 0, [3, 9], cache), request("b", 21, 12, [5, 0], cache),
            request("c", 9, 0, [12], cache), request("d", 14, 0, [7], cache)]
    two_way = {"a", "c"}
    seen = []
    original = it.triton_attn.unified_attention

    def spy(*args, **kwargs):
        seen.append(kwargs["causal"])
        return original(*args, **kwargs)
    it.triton_attn.unified_attention = spy
    try:
        out, metadata = step(cache, reqs, two_way=two_way)
        plain, stock = step(cache, reqs)
    finally:
        it.triton_attn.unified_attention = original
    flags = seen[0]
    assert isinstance(flags, torch.Tensor) and flags.dtype == torch.int32, flags
    assert flags.tolist() == [0, 1, 0, 1], f"the kernel got causal={flags.tolist()}"
    assert flags is metadata.causal and seen[1] is True and stock.causal is True
    check_rows(out, reqs, lambda r: (torch.ones(len(r.new), r.length, dtype=torch.bool)
                                     if r.name in two_way else causal_sees(r.new, r.length)))
    at = 0
    for r in reqs:
        if r.name not in two_way:
            assert torch.equal(out[at:at + len(r.new)], plain[at:at + len(r.new)]), \
                f"causal request {r.name}: other bits in a step with two-way rows"
        at += len(r.new)


def decode(flagged: bool):
    """One query token per sequence (vLLM's 3D split-softmax path: max_query_len 1, fewer
    sequences than seq_threshold_3D), blocks scattered; flagged: with a one-token two-way
    prompt in the step, so the per-row flags reach the 3D path too."""
    cache = it.kv_cache(KERNEL_LAYOUT)
    free = torch.randperm(it.BLOCKS, generator=GEN).tolist()
    reqs = []
    for i, length in enumerate((1, 17, 32, 41, 64) + ((1,) if flagged else ())):
        blocks = [free.pop() for _ in range(-(-length // BLOCK))]
        reqs.append(request(f"r{i}", length, length - 1, blocks, cache))
    out, metadata = step(cache, reqs, two_way={"r5"} if flagged else ())
    assert metadata.max_query_len == 1 and len(reqs) <= metadata.seq_threshold_3D
    assert metadata.softmax_segm_output is not None, "the 3D path would not run"
    assert isinstance(metadata.causal, torch.Tensor) == flagged, metadata.causal
    check_rows(out, reqs, lambda r: torch.ones(1, r.length, dtype=torch.bool))


def paged_shared_prefix():
    """Three requests read the same two physical prefix blocks (a prefix-cache hit): one
    decodes, two prefill their own tokens across block boundaries; each reads the prefix and
    its own tokens only, and the shared blocks are left as they were."""
    cache = it.kv_cache(KERNEL_LAYOUT)
    prefix = qkv(32)
    shared = [7, 3]
    it.write(cache, prefix[1], prefix[2], shared, range(32))
    before = cache[shared].clone()
    reqs = []
    for name, own, computed, blocks in (("a", 6, 37, [5]), ("b", 12, 32, [1]),
                                        ("c", 20, 32, [0, 4])):
        r = Req(name, *(torch.cat([p, x]) for p, x in zip(prefix, qkv(own))), computed,
                shared + blocks)
        it.write(cache, r.k, r.v, r.blocks, range(32, computed))
        reqs.append(r)
    out, _ = step(cache, reqs)
    check_rows(out, reqs, lambda r: causal_sees(r.new, r.length))
    assert torch.equal(cache[shared], before), "the step wrote into the shared prefix blocks"


def cache_index(layout):
    """sets.index_triton finds each token's K and V where the backend's own cache write
    (triton_reshape_and_cache_flash, via do_kv_cache_update) put them, in any token order."""
    cache = it.kv_cache(layout)
    _, k, v = qkv(40)
    blocks = [6, 2, 9]
    it.write(cache, k, v, blocks, range(40))
    tokens = torch.randperm(40, generator=GEN)
    k_at, v_at = it.sets.index_triton(None, cache, torch.tensor(blocks), tokens)
    flat = it.sets.flat(cache)
    for name, at, want in (("K", k_at, k), ("V", v_at, v)):
        assert torch.equal(flat[at], want[tokens].transpose(0, 1)), (
            f"{layout.name} cache (strides {cache.stride()}): index_triton does not find the "
            f"{name} vLLM wrote")


VOCAB = 64
TABLES = qkv(VOCAB)  # a token's q, k, v before its position is applied, by token id
PREFIX = torch.randint(VOCAB, (20,), generator=GEN).tolist()
OPTIONS = [torch.randint(VOCAB, (n,), generator=GEN).tolist() for n in (5, 3, 7)]
TAIL = torch.randint(VOCAB, (6,), generator=GEN).tolist()


def rope(x, positions):
    inv = 10000.0 ** -(torch.arange(0, HEAD, 2, dtype=torch.float32) / HEAD)
    angle = torch.tensor(positions, dtype=torch.float32)[:, None] * inv[None, :]
    cos, sin = angle.cos()[:, None, :], angle.sin()[:, None, :]
    x1, x2 = x[..., :HEAD // 2], x[..., HEAD // 2:]
    return torch.cat([x1 * cos - x2 * sin, x2 * cos + x1 * sin], -1)


def set_prompt(order):
    """Token ids, spans, each token's position and who may see whom, written out from the
    method (not from sets.py): spans from the first span's start, the tail after the longest;
    a span sees the prefix and itself, the tail everything; causal inside a part unless
    two-way. Also each token's identity, the same in every order."""
    ids, spans, who = list(PREFIX), [], [("prefix", t) for t in range(len(PREFIX))]
    for j in order:
        spans.append((len(ids), len(ids) + len(OPTIONS[j])))
        ids += OPTIONS[j]
        who += [("option", j, t) for t in range(len(OPTIONS[j]))]
    ids += TAIL
    who += [("tail", t) for t in range(len(TAIL))]
    first, end = spans[0][0], spans[-1][1]
    longest = max(e - s for s, e in spans)
    positions = (list(range(first)) + [first + t - s for s, e in spans for t in range(s, e)]
                 + [first + longest + t for t in range(len(ids) - end)])
    part = torch.tensor([-1] * first + [j for j, (s, e) in enumerate(spans) for _ in range(s, e)]
                        + [len(spans)] * (len(ids) - end))
    return ids, spans, positions, part, who


def set_read(layout, two_way: bool, computed: int):
    """A set read's rows (recomputed by the plugin from the Triton-layout cache after the
    kernel ran) beside a plain causal request, against the set semantics with shared
    positions (RoPE applied at them); two orders of the options give the same bits per token.
    computed=16: the first prefix block came from an earlier step (a prefix-cache hit)."""
    plain_qkv = qkv(10)
    got = {}
    for order in ((0, 1, 2), (2, 0, 1)):
        ids, spans, positions, part, who = set_prompt(order)
        plugin = [it.sets.position(t, spans) for t in range(len(ids))]
        assert plugin == positions, f"sets.position gives {plugin}, the method {positions}"
        n, tail = len(ids), len(spans)
        q, k = (rope(table[ids], positions) for table in TABLES[:2])
        v = TABLES[2][ids]
        same = part[:, None] == part[None, :]
        earlier = torch.arange(n)[:, None] >= torch.arange(n)[None, :]
        sees = ((earlier | (same & two_way))
                & (same | (part[None, :] == -1) | (part[:, None] == tail)))
        cache = it.kv_cache(layout)
        plain = Req("plain", *plain_qkv, 0, [11])
        read = Req("set", q, k, v, computed, [6, 2, 9])
        if computed:
            it.write(cache, k, v, read.blocks, range(computed))
        geometry = it.sets.Geometry(len(plain.new), n - computed, computed, tuple(spans),
                                    torch.tensor(read.blocks), tuple(ids), two_way)
        out, _ = step(cache, [plain, read], two_way={"set"} if two_way else (),
                      set_reads=[geometry])
        assert_close(out[:10], plain.q, plain.k, plain.v, causal_sees(range(10), 10),
                     "the plain request")
        assert_close(out[10:], q[computed:], k, v, sees[computed:], f"set read, order {order}")
        got[order] = {who[t]: out[10 + t - computed] for t in range(computed, n)}
    first, second = got.values()
    moved = [w for w in first if not torch.equal(first[w], second[w])]
    assert not moved, f"the options' order changed the bits of {moved[:4]}"


LAYOUTS = {layout.name: layout for layout in (it.KVCacheLayout.LBNHC, it.KVCacheLayout.LBHNC)}
CHECKS = {"prefill_row_flags": prefill_row_flags,
          "decode": functools.partial(decode, False),
          "decode_flagged": functools.partial(decode, True),
          "paged_shared_prefix": paged_shared_prefix}
for name, layout in LAYOUTS.items():
    CHECKS[f"cache_index[{name}]"] = functools.partial(cache_index, layout)
    for mode, two_way, computed in (("one_way", False, 0), ("one_way_cached", False, 16),
                                    ("two_way", True, 0)):
        CHECKS[f"set_read[{name}-{mode}]"] = functools.partial(set_read, layout, two_way,
                                                              computed)


def main(names) -> None:
    for name in names or CHECKS:
        start, detail = time.monotonic(), ""
        try:
            CHECKS[name]()
        except Exception:  # reported to the pytest side, which fails that test with it
            detail = traceback.format_exc()
        print("CHECK " + json.dumps({"check": name, "ok": not detail, "detail": detail,
                                     "seconds": round(time.monotonic() - start, 2)}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
