"""The ragged pair and the chunk sort for PyTorch (docs/ragged.md, docs/sort_chunks.md):
autograd Functions over moeperm's operators, on which moeperm.megatron builds Megatron-LM's
functions. Forward and backward
are moeperm's operators: ragged_permute / ragged_permute_grad and ragged_unpermute /
ragged_unpermute_grad (permuted_tokens is kept for the backward only when probs need a
gradient: it is read only for their dot products).
"""

import torch

from . import _ragged_api, _sort_chunks_api


class RaggedPermute(torch.autograd.Function):
    """apply(tokens, routing_map, probs, num_out_tokens, drop_and_pad) -> (permuted_tokens,
    permuted_probs or None, sorted_indices)."""

    @staticmethod
    def forward(ctx, tokens, routing_map, probs, num_out_tokens, drop_and_pad):
        y, yp, s = _ragged_api.ragged_permute(tokens, routing_map, probs, num_out_tokens,
                                              drop_and_pad)
        ctx.save_for_backward(s, routing_map)
        ctx.num_tokens, ctx.drop_and_pad = tokens.shape[0], drop_and_pad
        ctx.probs_dtype = None if probs is None else probs.dtype
        ctx.rows_shape = tuple(y.shape)
        ctx.mark_non_differentiable(s)
        return y, yp, s

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_y, grad_yp, _grad_s):
        s, routing_map = ctx.saved_tensors
        need_tokens, need_probs = ctx.needs_input_grad[0], ctx.needs_input_grad[2]
        if not (need_tokens or need_probs):
            return None, None, None, None, None
        # An output that did not reach the loss has no gradient: zeros stand in.
        if grad_y is None:
            grad_y = torch.zeros(ctx.rows_shape, dtype=torch.float32, device=s.device)
        if need_probs and grad_yp is None:
            grad_yp = torch.zeros(s.shape[0], dtype=ctx.probs_dtype, device=s.device)
        d_tokens, d_probs = _ragged_api.ragged_permute_grad(
            grad_y, s, ctx.num_tokens, grad_yp if need_probs else None,
            routing_map if need_probs else None, ctx.drop_and_pad, need_probs)
        return (d_tokens if need_tokens else None), None, d_probs, None, None


class RaggedUnpermute(torch.autograd.Function):
    """apply(permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
    drop_and_pad) -> unpermuted_tokens [T, H]."""

    @staticmethod
    def forward(ctx, permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
                drop_and_pad):
        out = _ragged_api.ragged_unpermute(permuted_tokens, sorted_indices, restore_shape,
                                           probs, routing_map, drop_and_pad)
        need_probs = probs is not None and ctx.needs_input_grad[3]
        ctx.save_for_backward(sorted_indices, probs, routing_map,
                              permuted_tokens if need_probs else None)
        ctx.drop_and_pad, ctx.need_probs = drop_and_pad, need_probs
        return out

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out):
        s, probs, routing_map, x = ctx.saved_tensors
        d_x, d_probs = _ragged_api.ragged_unpermute_grad(
            grad_out, s, routing_map, x, probs, ctx.drop_and_pad, ctx.need_probs)
        return ((d_x if ctx.needs_input_grad[0] else None), None, None,
                (d_probs if ctx.need_probs else None), None, None)


class SortChunks(torch.autograd.Function):
    """apply(tokens, split_sizes, sorted_index, probs) -> (sorted_tokens, sorted_probs or
    None); split_sizes and sorted_index int32 on the tokens' device. The backward is
    sort_chunks_grad with the same chunks: a pure copy, exact."""

    @staticmethod
    def forward(ctx, tokens, split_sizes, sorted_index, probs):
        y, yp = _sort_chunks_api.sort_chunks(tokens, split_sizes, sorted_index, probs)
        ctx.save_for_backward(split_sizes, sorted_index)
        ctx.rows_shape, ctx.dtype = tuple(y.shape), tokens.dtype
        ctx.probs_dtype = None if probs is None else probs.dtype
        return y, yp

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_y, grad_yp):
        sizes, order = ctx.saved_tensors
        need_tokens, need_probs = ctx.needs_input_grad[0], ctx.needs_input_grad[3]
        if not (need_tokens or need_probs):
            return None, None, None, None
        if grad_y is None:  # an output that did not reach the loss: zeros stand in
            grad_y = torch.zeros(ctx.rows_shape, dtype=ctx.dtype, device=sizes.device)
        if need_probs and grad_yp is None:
            grad_yp = torch.zeros(ctx.rows_shape[0], dtype=ctx.probs_dtype, device=sizes.device)
        d_tokens, d_probs = _sort_chunks_api.sort_chunks_grad(
            grad_y, sizes, order, grad_yp if need_probs else None)
        return (d_tokens if need_tokens else None), None, None, d_probs
