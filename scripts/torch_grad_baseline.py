#!/usr/bin/env python3
"""PyTorch's eager composition of each operator moeperm benchmarks, timed on the GPU.

This is what Megatron's unfused path runs for the backward of the routing-map permute:
tokens_grad = zeros(T, H).index_add_(0, token_of_row, G) and
probs_grad = zeros(E, T).masked_scatter_(M.T, P).T. Timed with CUDA events (median of
--runs after --warmup), on the same sizes `moeperm bench --device cuda` uses, and printed
as JSON: {"case": {"backward_ms": ..., "forward_ms": ...}}. The forward composition is
index_select of the tokens by the expert-major token list, plus masked_select of the probs.
"""
import argparse
import json
import statistics

import torch

CASES = {
    # name: (T, H, E, K or capacity, drop_and_pad, dtype)
    "deepseek": (4096, 7168, 256, 8, False, torch.bfloat16),
    "mixtral": (8192, 4096, 8, 2, False, torch.bfloat16),
    "cann-sample": (4096, 7168, 256, 16, True, torch.float32),
}


def routing(T, E, K, gen):
    scores = torch.rand(T, E, generator=gen, device="cuda")
    top = scores.topk(K, dim=1).indices
    m = torch.zeros(T, E, dtype=torch.bool, device="cuda")
    m.scatter_(1, top, True)
    return m


def time_ms(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    args = ap.parse_args()
    gen = torch.Generator(device="cuda").manual_seed(0)
    out = {}
    for name, (T, H, E, KC, dp, dtype) in CASES.items():
        K = 8 if dp else KC
        m = routing(T, E, K, gen)
        x = torch.randn(T, H, device="cuda", dtype=dtype)
        probs = torch.rand(T, E, device="cuda", dtype=dtype)
        if not dp:
            token_of_row = m.T.nonzero()[:, 1]  # expert-major token list f
            R = token_of_row.numel()
            P = torch.rand(R, device="cuda", dtype=dtype)
            mask_t = m.T.contiguous()
        else:
            C = KC
            # per expert: routed tokens ascending, then the others, first C (stable sort)
            order = torch.argsort((~m.T).to(torch.int8), dim=1, stable=True)[:, :C]
            token_of_row = order.reshape(-1)
            R = token_of_row.numel()
            P = torch.rand(R, device="cuda", dtype=dtype)
            expert_of_row = torch.arange(E, device="cuda").repeat_interleave(C)
        G = torch.randn(R, H, device="cuda", dtype=dtype)

        def backward():
            tg = torch.zeros(T, H, device="cuda", dtype=dtype).index_add_(0, token_of_row, G)
            if not dp:
                pg = torch.zeros(E, T, device="cuda", dtype=dtype).masked_scatter_(mask_t, P).T
            else:
                pg = torch.zeros(T, E, device="cuda", dtype=dtype)
                pg[token_of_row, expert_of_row] = P
            return tg, pg

        def forward():
            y = x.index_select(0, token_of_row)
            pp = probs.T.masked_select(mask_t) if not dp else probs[token_of_row, expert_of_row]
            return y, pp

        # Megatron-LM's unfused unpermute and its backward (what autograd runs for it): the
        # rows weighted by their probs and added back to their tokens; the backward gathers
        # each row's token gradient, times its prob, and the prob's gradient is the dot
        # product of that gradient with the forward's row.
        X = torch.randn(R, H, device="cuda", dtype=dtype)
        Gt = torch.randn(T, H, device="cuda", dtype=dtype)

        def unpermute():
            return torch.zeros(T, H, device="cuda", dtype=dtype).index_add_(
                0, token_of_row, X * P[:, None])

        def unpermute_grad():
            g = Gt.index_select(0, token_of_row)
            return g * P[:, None], (g.float() * X.float()).sum(-1)

        # Expert parallelism's chunk sort (Megatron's sort_chunks_by_idxs): the rows split in
        # E chunks, concatenated in another order.
        sizes = [R * (c + 1) // E - R * c // E for c in range(E)]
        chunk_order = torch.randperm(E, generator=torch.Generator().manual_seed(1)).tolist()

        def sort_chunks():
            chunks = torch.split(G, sizes)
            return torch.cat([chunks[i] for i in chunk_order])

        timings = {
            "backward_ms": time_ms(backward, args.runs, args.warmup),
            "forward_ms": time_ms(forward, args.runs, args.warmup),
            "unpermute_ms": time_ms(unpermute, args.runs, args.warmup),
            "unpermute_grad_ms": time_ms(unpermute_grad, args.runs, args.warmup),
            "sort_chunks_ms": time_ms(sort_chunks, args.runs, args.warmup),
        }
        # The ragged pair runs the same formulas (Megatron's permute and unpermute), and the
        # chunk sort's backward is a chunk sort.
        for op in ("forward", "backward", "unpermute", "unpermute_grad"):
            key = {"forward": "permute", "backward": "permute_grad"}.get(op, op)
            timings["ragged_" + key + "_ms"] = timings[op + "_ms"]
        timings["sort_chunks_grad_ms"] = timings["sort_chunks_ms"]
        out[name] = timings
    print(json.dumps(out))


if __name__ == "__main__":
    main()
