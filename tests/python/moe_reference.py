"""The independent reference of the Python tests, written from SPEC §2-§4 in plain PyTorch.

* `megatron_permute`: Megatron-LM's unfused permute (index_select / masked_select / stable
  argsort), laid out as CANN's operator returns it: drop-less outputs have R = T*K rows,
  rows past the routed ones are zero, and sorted_indices is CANN's (the stable argsort of
  the expert-major token list, -1 in unused slots). It is differentiable: the reference
  gradients are PyTorch autograd of these formulas, computed in float64.
* `spec_order_tokens_grad`: the tokens gradient summed in SPEC §4's order (ascending k, or
  ascending j) in float32 and rounded once: what the operator must return bit for bit.
* `random_case`: random problems of odd sizes.
"""

import torch


def megatron_permute(tokens, routing_map, probs, num_out_tokens, drop_and_pad):
    """(permuted [R, H], permuted_probs [R] or None, sorted_indices [R] int64)."""
    num_tokens, hidden = tokens.shape
    num_experts = routing_map.shape[1]
    mask = routing_map.bool()
    if drop_and_pad:
        # Megatron: per expert, a stable descending argsort of its mask column keeps the
        # routed tokens first, each group in ascending id; truncated to the capacity.
        capacity = num_out_tokens // num_experts
        order = mask.T.to(torch.int8).argsort(dim=-1, descending=True, stable=True)
        sorted_indices = order[:, :capacity].reshape(-1)
        permuted = tokens.index_select(0, sorted_indices)
        permuted_probs = None
        if probs is not None:
            expert_of_row = torch.arange(num_experts).repeat_interleave(capacity)
            flat = expert_of_row * num_tokens + sorted_indices
            permuted_probs = probs.T.reshape(-1).index_select(0, flat)
        return permuted, permuted_probs, sorted_indices

    top_k = num_out_tokens // num_tokens if num_tokens else 0
    rows = num_tokens * top_k
    # Megatron: the token of every row, expert-major (routing_map.T masked).
    token_ids = torch.arange(num_tokens).unsqueeze(0).expand(num_experts, num_tokens)
    row_token = token_ids.masked_select(mask.T)
    routed = row_token.numel()
    permuted = torch.cat([tokens.index_select(0, row_token), tokens.new_zeros(rows - routed, hidden)])
    permuted_probs = None
    if probs is not None:
        permuted_probs = torch.cat([probs.T.masked_select(mask.T), probs.new_zeros(rows - routed)])
    # CANN's sortedIndicesOut = stable_argsort(row_token): slot t*K + r holds the row of
    # token t's r-th expert (experts ascending), -1 when token t has fewer than K.
    order = torch.argsort(row_token, stable=True)
    counts = mask.sum(dim=1)
    starts = torch.cumsum(counts, 0) - counts
    token = row_token[order]
    slot = token * top_k + (torch.arange(routed) - starts[token])
    sorted_indices = torch.full((rows,), -1, dtype=torch.int64)
    sorted_indices[slot] = order
    return permuted, permuted_probs, sorted_indices


def autograd_reference(tokens, routing_map, probs, num_out_tokens, drop_and_pad, grad, probs_grad):
    """Gradients of megatron_permute by PyTorch autograd in float64 (inputs upcast exactly).

    Returns (tokens_grad, probs_grad or None, abs_tokens_grad): the last is the same
    backward applied to |grad|, i.e. the sum of |terms| of every tokens_grad element.
    """
    x = tokens.double().requires_grad_()
    p = probs.double().requires_grad_() if probs is not None else None
    permuted, permuted_probs, _ = megatron_permute(x, routing_map, p, num_out_tokens, drop_and_pad)
    outputs, grads = [permuted], [grad.double()]
    if p is not None and probs_grad is not None:
        outputs.append(permuted_probs)
        grads.append(probs_grad.double())
    tokens_grad, *rest = torch.autograd.grad(outputs, [x] + ([p] if p is not None else []), grads,
                                             allow_unused=True)
    x_abs = tokens.double().requires_grad_()
    permuted_abs, _, _ = megatron_permute(x_abs, routing_map, None, num_out_tokens, drop_and_pad)
    (abs_grad,) = torch.autograd.grad([permuted_abs], [x_abs], [grad.double().abs()])
    probs_grad_ref = rest[0] if rest else None
    if probs_grad_ref is None and p is not None:
        probs_grad_ref = torch.zeros_like(p)
    return tokens_grad, probs_grad_ref, abs_grad


def spec_order_tokens_grad(grad, sorted_indices, num_tokens, drop_and_pad):
    """SPEC §3-§4: tokensGrad summed in float32 in ascending k (drop-less) or ascending j
    (drop-and-pad), rounded once to the dtype of grad."""
    g = grad.float()
    s = sorted_indices.long()
    hidden = g.shape[1]
    if not drop_and_pad:
        top_k = s.numel() // num_tokens
        table = s.view(num_tokens, top_k)
    else:
        # Every token's slots j, ascending, as the rows of a table padded with -1.
        order = torch.argsort(s, stable=True)
        token = s[order]
        counts = torch.bincount(token, minlength=num_tokens)
        starts = torch.cumsum(counts, 0) - counts
        width = int(counts.max()) if counts.numel() else 0
        table = torch.full((num_tokens, width), -1, dtype=torch.int64)
        table[token, torch.arange(s.numel()) - starts[token]] = order
    acc = torch.zeros(num_tokens, hidden, dtype=torch.float32)
    for k in range(table.shape[1]):
        rows = table[:, k]
        term = g[rows.clamp(min=0)] if g.shape[0] else torch.zeros_like(acc)
        acc = acc + torch.where((rows >= 0).unsqueeze(1), term, torch.zeros_like(term))
    return acc.to(grad.dtype)


def assert_within_rounding(ours, exact, abs_sum, terms):
    """|ours - exact| within the error of summing `terms` values in float32 and rounding the
    sum once to ours.dtype (SPEC §4), where exact is the float64 sum and abs_sum the sum of
    the terms' magnitudes: float32 accumulation errs by at most (terms-1) * 2^-24 * abs_sum,
    the final rounding by half an ulp, at most eps/2 * |value|, plus half the smallest
    subnormal of the dtype."""
    info = torch.finfo(ours.dtype)
    accumulation = max(terms - 1, 0) * 2.0**-24 * abs_sum
    tol = 0.5 * info.eps * (exact.abs() + accumulation) + accumulation + info.tiny * info.eps
    err = (ours.double() - exact).abs()
    assert bool((err <= tol).all()), f"max error {float((err - tol).max())} above the bound"


DTYPES = {  # name: (tokens dtype, probs dtype)
    "f32": (torch.float32, torch.float32),
    "f16": (torch.float16, torch.float16),
    "bf16": (torch.bfloat16, torch.bfloat16),
    "bf16+f32probs": (torch.bfloat16, torch.float32),
}


def random_case(seed, drop_and_pad, dtype, probs_dtype, map_dtype, with_probs):
    """A random problem of odd sizes: dict of tokens, routing_map, probs, num_out_tokens,
    grad (the permuted tokens' gradient) and probs_grad (the permuted probs' gradient)."""
    g = torch.Generator().manual_seed(seed)

    def pick(options):
        return options[int(torch.randint(len(options), (1,), generator=g))]

    num_tokens, num_experts, hidden = pick([1, 5, 13, 31]), pick([1, 2, 5, 8]), pick([1, 3, 19])
    scores = torch.rand(num_tokens, num_experts, generator=g)
    if drop_and_pad:
        mask = scores < pick([0.2, 0.5, 0.9])
        capacity = int(torch.randint(num_tokens + 1, (1,), generator=g))
        num_out_tokens = num_experts * capacity + int(torch.randint(num_experts, (1,), generator=g))
        rows = num_experts * capacity
    else:
        top_k = int(torch.randint(1, num_experts + 1, (1,), generator=g))
        mask = torch.zeros(num_tokens, num_experts, dtype=torch.bool)
        mask.scatter_(1, scores.topk(top_k, dim=1).indices, True)
        if pick([False, True]):  # ragged: some tokens keep fewer than topK experts
            mask &= torch.rand(num_tokens, num_experts, generator=g) < 0.7
        num_out_tokens = num_tokens * top_k + int(torch.randint(num_tokens, (1,), generator=g))
        rows = num_tokens * top_k
    return dict(
        tokens=torch.randn(num_tokens, hidden, generator=g).to(dtype),
        routing_map=mask.to(map_dtype),
        probs=torch.rand(num_tokens, num_experts, generator=g).to(probs_dtype) if with_probs else None,
        num_out_tokens=num_out_tokens,
        drop_and_pad=drop_and_pad,
        grad=torch.randn(rows, hidden, generator=g).to(dtype),
        probs_grad=torch.randn(rows, generator=g).to(probs_dtype) if with_probs else None,
    )


def max_terms(sorted_indices, num_tokens, drop_and_pad):
    """The most summands any tokens_grad element has."""
    if sorted_indices.numel() == 0 or num_tokens == 0:
        return 0
    if not drop_and_pad:
        return sorted_indices.numel() // num_tokens
    return int(torch.bincount(sorted_indices.long(), minlength=num_tokens).max())
