"""The ragged pair for PyTorch (docs/ragged.md): autograd Functions over moeperm's ragged
operators, on which moeperm.megatron builds Megatron-LM's functions.

Forward passes are moeperm's operators. The permute's backward for the tokens is the
ragged unpermute of the gradient (the same operator: each token's rows summed in ascending
row order, float32, rounded once). Until the ragged Grad operators land (issue 13), the rest
of the backwards are PyTorch compositions with the same semantics: the probs' gradient of
the permute is a scatter of the permuted probs' gradient; the unpermute's gradient is a
gather of the tokens' gradient scaled by each row's prob, and its probs' gradient each row's
dot product in float32.
"""

import torch

from . import _ragged_api


def row_experts(sorted_indices, routing_map, num_experts, drop_and_pad):
    """The expert of each row (int64 [R]): r // C drop-and-pad; drop-less, the expert whose
    block of the map's expert-major pair list holds r (rows past the pairs: E, none)."""
    rows = sorted_indices.shape[0]
    r = torch.arange(rows, device=sorted_indices.device)
    if drop_and_pad:
        return r // max(rows // max(num_experts, 1), 1)
    ends = torch.cumsum(torch.count_nonzero(routing_map, dim=0), 0)
    return torch.searchsorted(ends, r, right=True)


def _scatter_rows_to_dense(values, sorted_indices, experts, shape, dtype):
    """dense[t, e] += values[r] for the rows r that name a token (t) and an expert (e) in
    float32; a (t, e) pair is named at most once by a permute's rows."""
    dense = torch.zeros(shape, dtype=torch.float32, device=values.device)
    valid = (sorted_indices >= 0) & (experts < shape[1])
    t, e = sorted_indices[valid].long(), experts[valid]
    dense.index_put_((t, e), values[valid].float(), accumulate=True)
    return dense.to(dtype)


class RaggedPermute(torch.autograd.Function):
    """apply(tokens, routing_map, probs, num_out_tokens, drop_and_pad) -> (permuted_tokens,
    permuted_probs or None, sorted_indices)."""

    @staticmethod
    def forward(ctx, tokens, routing_map, probs, num_out_tokens, drop_and_pad):
        y, yp, s = _ragged_api.ragged_permute(tokens, routing_map, probs, num_out_tokens,
                                              drop_and_pad)
        ctx.save_for_backward(s, routing_map)
        ctx.shape, ctx.drop_and_pad = tuple(tokens.shape), drop_and_pad
        ctx.probs_dtype = None if probs is None else probs.dtype
        ctx.mark_non_differentiable(s)
        return y, yp, s

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_y, grad_yp, _grad_s):
        s, routing_map = ctx.saved_tensors
        d_tokens = d_probs = None
        if ctx.needs_input_grad[0]:
            d_tokens = _ragged_api.ragged_unpermute(grad_y, s, restore_shape=ctx.shape,
                                                    drop_and_pad=ctx.drop_and_pad)
        if ctx.needs_input_grad[2] and grad_yp is not None:
            experts = row_experts(s, routing_map, routing_map.shape[1], ctx.drop_and_pad)
            d_probs = _scatter_rows_to_dense(grad_yp, s, experts, tuple(routing_map.shape),
                                             ctx.probs_dtype)
        return d_tokens, None, d_probs, None, None


class RaggedUnpermute(torch.autograd.Function):
    """apply(permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
    drop_and_pad) -> unpermuted_tokens [T, H]."""

    @staticmethod
    def forward(ctx, permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
                drop_and_pad):
        out = _ragged_api.ragged_unpermute(permuted_tokens, sorted_indices, restore_shape,
                                           probs, routing_map, drop_and_pad)
        need_x = probs is not None and ctx.needs_input_grad[3]
        ctx.save_for_backward(sorted_indices, probs, routing_map,
                              permuted_tokens if need_x else None)
        ctx.drop_and_pad = drop_and_pad
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        s, probs, routing_map, x = ctx.saved_tensors
        valid = s >= 0
        rows = grad_out.index_select(0, s.clamp(min=0).long())
        rows = torch.where(valid.unsqueeze(1), rows, torch.zeros((), dtype=rows.dtype))
        if probs is None:
            return rows, None, None, None, None, None
        experts = row_experts(s, routing_map, probs.shape[1], ctx.drop_and_pad)
        has_expert = valid & (experts < probs.shape[1])
        p = probs[s.clamp(min=0).long(), experts.clamp(max=probs.shape[1] - 1)].float()
        p = torch.where(has_expert, p, torch.zeros((), dtype=p.dtype))
        d_x = (rows.float() * p.unsqueeze(1)).to(grad_out.dtype)
        d_probs = None
        if ctx.needs_input_grad[3]:
            dots = (rows.float() * x.float()).sum(dim=1)
            d_probs = _scatter_rows_to_dense(dots, s, experts, tuple(probs.shape), probs.dtype)
        return d_x, None, None, d_probs, None, None
