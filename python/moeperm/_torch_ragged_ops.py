"""The ragged pair and the chunk sort as PyTorch custom operators (torch.ops.moeperm.ragged_*,
torch.ops.moeperm.sort_chunks), so that torch.compile(fullgraph=True) traces through
moeperm.megatron and moeperm.torch's TransformerEngine names: fake implementations from the
library's own output rules, autograd by the backward operators (also custom operators, so
the backward graph traces too). On PyTorch without torch.library.custom_op the same calls go
through the autograd Functions of _torch_ragged.

ragged_permute, ragged_unpermute and sort_chunks below are what the rest of the package
calls: they pick the custom operator or the Function.
"""

from typing import List, Optional, Tuple

import torch

from . import _ragged_api, _sort_chunks_api
from ._torch_common import CUSTOM_OPS, empty_like_outputs
from ._torch_ragged import RaggedPermute, RaggedUnpermute, SortChunks

_Tensor = torch.Tensor


def _none_if_empty_stand_in(t, given):
    """Custom operators cannot return None: an absent output is an empty stand-in."""
    return t if given else None


if CUSTOM_OPS:
    @torch.library.custom_op("moeperm::ragged_permute", mutates_args=())
    def _permute_op(tokens: _Tensor, routing_map: _Tensor, probs: Optional[_Tensor],
                    num_out_tokens: int, drop_and_pad: bool) -> Tuple[_Tensor, _Tensor, _Tensor]:
        y, yp, s = _ragged_api.ragged_permute(tokens, routing_map, probs, num_out_tokens,
                                              drop_and_pad)
        return y, (yp if yp is not None else tokens.new_empty(0)), s

    @_permute_op.register_fake
    def _permute_fake(tokens, routing_map, probs, num_out_tokens, drop_and_pad):
        outputs = _ragged_api.infer_ragged_permute_outputs(tokens, routing_map, probs,
                                                           num_out_tokens, drop_and_pad)
        return empty_like_outputs(outputs, tokens,
                                  ("permuted_tokens", "permuted_probs", "sorted_indices"))

    @torch.library.custom_op("moeperm::ragged_permute_grad", mutates_args=())
    def _permute_grad_op(grad: _Tensor, grad_probs: Optional[_Tensor], sorted_indices: _Tensor,
                         routing_map: Optional[_Tensor], num_tokens: int, drop_and_pad: bool,
                         probs_grad: bool) -> Tuple[_Tensor, _Tensor]:
        dx, dp = _ragged_api.ragged_permute_grad(grad, sorted_indices, num_tokens, grad_probs,
                                                 routing_map, drop_and_pad, probs_grad)
        return dx, (dp if dp is not None else grad.new_empty(0))

    @_permute_grad_op.register_fake
    def _permute_grad_fake(grad, grad_probs, sorted_indices, routing_map, num_tokens,
                           drop_and_pad, probs_grad):
        dx = grad.new_empty((num_tokens, grad.shape[1]))
        if probs_grad and grad_probs is not None and routing_map is not None:
            return dx, grad_probs.new_empty((num_tokens, routing_map.shape[1]))
        return dx, grad.new_empty(0)

    def _permute_setup(ctx, inputs, output):
        tokens, routing_map, probs, _rows, drop_and_pad = inputs
        ctx.save_for_backward(output[2], routing_map)
        ctx.num_tokens, ctx.drop_and_pad = tokens.shape[0], drop_and_pad
        ctx.has_probs = probs is not None
        ctx.rows, ctx.hidden, ctx.dtype = output[0].shape[0], tokens.shape[1], tokens.dtype
        ctx.probs_dtype = None if probs is None else probs.dtype

    def _permute_backward(ctx, grad_y, grad_yp, _grad_s):
        s, routing_map = ctx.saved_tensors
        need_probs = ctx.has_probs and ctx.needs_input_grad[2]
        if grad_y is None:  # an output that did not reach the loss: zeros stand in
            grad_y = torch.zeros((ctx.rows, ctx.hidden), dtype=ctx.dtype, device=s.device)
        if need_probs and grad_yp is None:
            grad_yp = torch.zeros(ctx.rows, dtype=ctx.probs_dtype, device=s.device)
        dx, dp = _permute_grad_op(grad_y, grad_yp if need_probs else None, s,
                                  routing_map if need_probs else None, ctx.num_tokens,
                                  ctx.drop_and_pad, need_probs)
        return dx, None, (dp if need_probs else None), None, None

    _permute_op.register_autograd(_permute_backward, setup_context=_permute_setup)

    @torch.library.custom_op("moeperm::ragged_unpermute", mutates_args=())
    def _unpermute_op(permuted_tokens: _Tensor, sorted_indices: _Tensor,
                      restore_shape: Optional[List[int]], probs: Optional[_Tensor],
                      routing_map: Optional[_Tensor], drop_and_pad: bool) -> _Tensor:
        return _ragged_api.ragged_unpermute(permuted_tokens, sorted_indices, restore_shape,
                                            probs, routing_map, drop_and_pad)

    @_unpermute_op.register_fake
    def _unpermute_fake(permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
                        drop_and_pad):
        outputs = _ragged_api.infer_ragged_unpermute_outputs(
            permuted_tokens, sorted_indices, restore_shape, probs, routing_map, drop_and_pad)
        return empty_like_outputs(outputs, permuted_tokens, ("unpermuted_tokens",))[0]

    @torch.library.custom_op("moeperm::ragged_unpermute_grad", mutates_args=())
    def _unpermute_grad_op(grad: _Tensor, sorted_indices: _Tensor,
                           routing_map: Optional[_Tensor], permuted_tokens: Optional[_Tensor],
                           probs: Optional[_Tensor], drop_and_pad: bool,
                           probs_grad: bool) -> Tuple[_Tensor, _Tensor]:
        dx, dp = _ragged_api.ragged_unpermute_grad(grad, sorted_indices, routing_map,
                                                   permuted_tokens, probs, drop_and_pad,
                                                   probs_grad)
        return dx, (dp if dp is not None else grad.new_empty(0))

    @_unpermute_grad_op.register_fake
    def _unpermute_grad_fake(grad, sorted_indices, routing_map, permuted_tokens, probs,
                             drop_and_pad, probs_grad):
        dx = grad.new_empty((sorted_indices.shape[0], grad.shape[1]))
        if probs_grad and probs is not None and permuted_tokens is not None:
            return dx, probs.new_empty(probs.shape)
        return dx, grad.new_empty(0)

    def _unpermute_setup(ctx, inputs, output):
        x, s, _restore, probs, routing_map, drop_and_pad = inputs
        need_probs = probs is not None and ctx.needs_input_grad[3]
        # permuted_tokens only when probs need a gradient: it is read only for their dots.
        ctx.save_for_backward(s, probs, routing_map, x if need_probs else None)
        ctx.drop_and_pad, ctx.need_probs = drop_and_pad, need_probs

    def _unpermute_backward(ctx, grad_out):
        s, probs, routing_map, x = ctx.saved_tensors
        dx, dp = _unpermute_grad_op(grad_out, s, routing_map, x, probs, ctx.drop_and_pad,
                                    ctx.need_probs)
        return dx, None, None, (dp if ctx.need_probs else None), None, None

    _unpermute_op.register_autograd(_unpermute_backward, setup_context=_unpermute_setup)

    @torch.library.custom_op("moeperm::sort_chunks", mutates_args=())
    def _sort_op(tokens: _Tensor, split_sizes: _Tensor, sorted_index: _Tensor,
                 probs: Optional[_Tensor], grad: bool) -> Tuple[_Tensor, _Tensor]:
        run = _sort_chunks_api.sort_chunks_grad if grad else _sort_chunks_api.sort_chunks
        y, yp = run(tokens, split_sizes, sorted_index, probs)
        return y, (yp if yp is not None else tokens.new_empty(0))

    @_sort_op.register_fake
    def _sort_fake(tokens, split_sizes, sorted_index, probs, grad):
        return (tokens.new_empty(tokens.shape),
                probs.new_empty(probs.shape) if probs is not None else tokens.new_empty(0))

    def _sort_setup(ctx, inputs, output):
        _tokens, split_sizes, sorted_index, probs, grad = inputs
        ctx.save_for_backward(split_sizes, sorted_index)
        ctx.grad, ctx.has_probs = grad, probs is not None
        ctx.probs_dtype = None if probs is None else probs.dtype

    def _sort_backward(ctx, grad_y, grad_yp):
        # The adjoint of a row permutation is its inverse: the other direction.
        sizes, order = ctx.saved_tensors
        need_probs = ctx.has_probs and ctx.needs_input_grad[3]
        if need_probs and grad_yp is None:
            grad_yp = torch.zeros(grad_y.shape[0], dtype=ctx.probs_dtype, device=grad_y.device)
        dx, dp = _sort_op(grad_y, sizes, order, grad_yp if need_probs else None, not ctx.grad)
        return dx, None, None, (dp if need_probs else None), None

    _sort_op.register_autograd(_sort_backward, setup_context=_sort_setup)


def ragged_permute(tokens, routing_map, probs, num_out_tokens, drop_and_pad):
    """(permuted_tokens, permuted_probs or None, sorted_indices), differentiable."""
    if not CUSTOM_OPS:
        return RaggedPermute.apply(tokens, routing_map, probs, num_out_tokens, drop_and_pad)
    y, yp, s = _permute_op(tokens, routing_map, probs, int(num_out_tokens), bool(drop_and_pad))
    return y, _none_if_empty_stand_in(yp, probs is not None), s


def ragged_unpermute(permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
                     drop_and_pad):
    """unpermuted_tokens [T, H], differentiable in permuted_tokens and probs."""
    restore = None if restore_shape is None else [int(d) for d in restore_shape]
    if not CUSTOM_OPS:
        return RaggedUnpermute.apply(permuted_tokens, sorted_indices, restore, probs,
                                     routing_map, drop_and_pad)
    return _unpermute_op(permuted_tokens, sorted_indices, restore, probs, routing_map,
                         bool(drop_and_pad))


def sort_chunks(tokens, split_sizes, sorted_index, probs):
    """(sorted_tokens, sorted_probs or None), differentiable in tokens and probs.
    split_sizes and sorted_index: integer tensors (any integer dtype; the operator checks
    and converts them, inside the custom operator, so tracing reads no data)."""
    if not CUSTOM_OPS:
        api = "sort_chunks"
        sizes = _sort_chunks_api._chunk_index(api, "split_sizes", split_sizes, tokens)
        order = _sort_chunks_api._chunk_index(api, "sorted_index", sorted_index, tokens)
        return SortChunks.apply(tokens, sizes, order, probs)
    y, yp = _sort_op(tokens, split_sizes, sorted_index, probs, False)
    return y, _none_if_empty_stand_in(yp, probs is not None)
