"""The unpermute pair for PyTorch (moeperm.torch re-exports it): autograd by torch_npu's rule
and torch.compile.

The forward is aclnnMoeTokenUnpermuteWithRoutingMap (SPEC-unpermute U1); its backward is
aclnnMoeTokenUnpermuteWithRoutingMapGrad (U2) fed as torch_npu feeds it: drop-less with
(sorted_indices, sorted_indices), drop-and-pad with the forward's (out_index,
permute_token_id). permuted_tokens is saved for the backward only when probs need a gradient
(it is read only for their dot products), so a layer without a probs gradient keeps no
[R, H] tensor alive. probs_grad comes back in the probs' dtype.
"""

from typing import List, Optional, Tuple

import torch

from . import _api
from ._torch_common import CUSTOM_OPS, empty_like_outputs

_FORWARD_NAMES = ("unpermuted_tokens", "out_index", "permute_token_id", "permute_probs")


def _save(ctx, permuted_tokens, sorted_indices, probs, routing_map, drop_and_pad, outputs):
    """What the backward needs; permuted_tokens only when probs need a gradient."""
    need_probs = probs is not None and ctx.needs_input_grad[3]
    _, out_index, token_id, _ = outputs
    o, i = (out_index, token_id) if drop_and_pad else (sorted_indices, sorted_indices)
    ctx.save_for_backward(o, i, routing_map, probs, permuted_tokens if need_probs else None)
    ctx.drop_and_pad = drop_and_pad
    ctx.need_probs = need_probs
    ctx.mark_non_differentiable(out_index, token_id)


def _backward(ctx, grad_out, grad_op):
    """(grad of permuted_tokens, grad of probs) through the unpermute Grad operator;
    grad_op(G, O, I, M, X, P, drop_and_pad, probs_grad) -> (dX, dP or None)."""
    o, i, routing_map, probs, permuted_tokens = ctx.saved_tensors
    need_x = ctx.needs_input_grad[0]
    if not (need_x or ctx.need_probs):
        return None, None
    dx, dp = grad_op(grad_out, o, i, routing_map, permuted_tokens, probs, ctx.drop_and_pad,
                     ctx.need_probs)
    return (dx if need_x else None), (dp if ctx.need_probs else None)


class UnpermuteWithRoutingMap(torch.autograd.Function):
    """The forward as an autograd.Function: apply(permuted_tokens, sorted_indices,
    restore_shape, probs, routing_map, drop_and_pad) -> the four outputs of
    unpermute_with_routing_map_all (used on PyTorch without torch.library.custom_op)."""

    @staticmethod
    def forward(ctx, permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
                drop_and_pad):
        outputs = _api._unpermute(permuted_tokens, sorted_indices, restore_shape, probs,
                                  routing_map, drop_and_pad, True)
        _save(ctx, permuted_tokens, sorted_indices, probs, routing_map, drop_and_pad, outputs)
        ctx.mark_non_differentiable(outputs[3])
        return outputs

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_out, _g_index, _g_token_id, _g_probs):
        dx, dp = _backward(ctx, grad_out, _api.unpermute_with_routing_map_grad)
        return dx, None, None, dp, None, None


if CUSTOM_OPS:
    @torch.library.custom_op("moeperm::unpermute_with_routing_map", mutates_args=())
    def _unpermute_op(permuted_tokens: torch.Tensor, sorted_indices: torch.Tensor,
                      restore_shape: Optional[List[int]], probs: Optional[torch.Tensor],
                      routing_map: Optional[torch.Tensor], drop_and_pad: bool
                      ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        return _api._unpermute(permuted_tokens, sorted_indices, restore_shape, probs,
                               routing_map, drop_and_pad, True)

    @_unpermute_op.register_fake
    def _unpermute_fake(permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
                        drop_and_pad):
        outputs = _api.infer_unpermute_outputs(permuted_tokens, sorted_indices, restore_shape,
                                               probs, routing_map, drop_and_pad, True)
        return empty_like_outputs(outputs, permuted_tokens, _FORWARD_NAMES)

    @torch.library.custom_op("moeperm::unpermute_with_routing_map_grad", mutates_args=())
    def _grad_op(unpermuted_tokens_grad: torch.Tensor, out_index: torch.Tensor,
                 permute_token_id: torch.Tensor, routing_map: Optional[torch.Tensor],
                 permuted_tokens: Optional[torch.Tensor], probs: Optional[torch.Tensor],
                 drop_and_pad: bool, probs_grad: bool) -> Tuple[torch.Tensor, torch.Tensor]:
        dx, dp = _api.unpermute_with_routing_map_grad(
            unpermuted_tokens_grad, out_index, permute_token_id, routing_map, permuted_tokens,
            probs, drop_and_pad, None, probs_grad)
        return dx, (dp if dp is not None else unpermuted_tokens_grad.new_empty(0))

    @_grad_op.register_fake
    def _grad_fake(unpermuted_tokens_grad, out_index, permute_token_id, routing_map,
                   permuted_tokens, probs, drop_and_pad, probs_grad):
        outputs = _api.infer_unpermute_grad_outputs(
            unpermuted_tokens_grad, out_index, permute_token_id, routing_map, permuted_tokens,
            probs, drop_and_pad, None, probs_grad)
        return empty_like_outputs(outputs, unpermuted_tokens_grad,
                                  ("permuted_tokens_grad", "probs_grad"))

    def _grad_via_op(g, o, i, m, x, p, drop_and_pad, probs_grad):
        dx, dp = _grad_op(g, o, i, m, x, p, drop_and_pad, probs_grad)
        return dx, (dp if p is not None and probs_grad else None)

    def _setup_context(ctx, inputs, output):
        permuted_tokens, sorted_indices, _restore, probs, routing_map, drop_and_pad = inputs
        _save(ctx, permuted_tokens, sorted_indices, probs, routing_map, drop_and_pad, output)

    def _op_backward(ctx, grad_out, _g_index, _g_token_id, _g_probs):
        dx, dp = _backward(ctx, grad_out, _grad_via_op)
        return dx, None, None, dp, None, None

    _unpermute_op.register_autograd(_op_backward, setup_context=_setup_context)


def _restore(restore_shape):
    return None if restore_shape is None else [int(d) for d in restore_shape]


def unpermute_with_routing_map_all(permuted_tokens, sorted_indices, restore_shape=None, *,
                                   probs=None, routing_map=None, drop_and_pad=False):
    """Differentiable aclnnMoeTokenUnpermuteWithRoutingMap with all four outputs
    (unpermuted_tokens, out_index, permute_token_id, permute_probs); differentiable in
    permuted_tokens and probs through unpermuted_tokens."""
    args = (permuted_tokens, sorted_indices, _restore(restore_shape), probs, routing_map,
            bool(drop_and_pad))
    if not CUSTOM_OPS:
        return UnpermuteWithRoutingMap.apply(*args)
    return _unpermute_op(*args)


def npu_moe_token_unpermute_with_routing_map(permuted_tokens, sorted_indices, restore_shape, *,
                                             probs=None, routing_map=None, drop_and_pad=False):
    """torch_npu.npu_moe_token_unpermute_with_routing_map: the call shape MindSpeed uses,
    returning unpermuted_tokens [T, H] (differentiable in permuted_tokens and probs)."""
    return unpermute_with_routing_map_all(permuted_tokens, sorted_indices, restore_shape,
                                          probs=probs, routing_map=routing_map,
                                          drop_and_pad=drop_and_pad)[0]


def unpermute_with_routing_map_grad(unpermuted_tokens_grad, out_index, permute_token_id,
                                    routing_map=None, permuted_tokens=None, probs=None,
                                    drop_and_pad=False, restore_shape=None, probs_grad=True):
    """aclnnMoeTokenUnpermuteWithRoutingMapGrad as a traceable operator (not itself
    differentiable): (permuted_tokens_grad, probs_grad or None)."""
    del restore_shape  # not read (SPEC-unpermute U2)
    if not CUSTOM_OPS:
        return _api.unpermute_with_routing_map_grad(
            unpermuted_tokens_grad, out_index, permute_token_id, routing_map, permuted_tokens,
            probs, drop_and_pad, None, probs_grad)
    return _grad_via_op(unpermuted_tokens_grad, out_index, permute_token_id, routing_map,
                        permuted_tokens, probs, bool(drop_and_pad), bool(probs_grad))
