"""moeperm for PyTorch: autograd and torch.compile.

``permute_with_routing_map(tokens, routing_map, probs=None, num_out_tokens=None,
drop_and_pad=False)`` is differentiable in ``tokens`` and ``probs``; its backward is moeperm's
Grad operator (aclnnMoeTokenPermuteWithRoutingMapGrad).

TransformerEngine's names, with its semantics (moeperm._torch_te; Megatron's
``--moe-permute-fusion`` path): ``moe_permute``, ``moe_permute_with_probs``,
``moe_unpermute``, ``moe_sort_chunks_by_index`` and ``moe_sort_chunks_by_index_with_probs``.

With PyTorch >= 2.4 both go through the custom operators ``torch.ops.moeperm.
permute_with_routing_map`` and ``torch.ops.moeperm.permute_with_routing_map_grad``
(``torch.library.custom_op`` with fake implementations and a registered autograd formula),
so ``torch.compile(fullgraph=True)`` traces through them. ``PermuteWithRoutingMap`` is the
same computation as a plain ``torch.autograd.Function`` (used on older PyTorch).

The third output, ``sorted_indices``, is CANN's sortedIndices (SPEC §2), not
TransformerEngine's row_id_map: pair it with CANN's unpermute, which this module has too:
``npu_moe_token_unpermute_with_routing_map(permuted_tokens, sorted_indices, restore_shape, *,
probs=None, routing_map=None, drop_and_pad=False)`` (torch_npu's call shape, differentiable
by torch_npu's rule; custom operators ``torch.ops.moeperm.unpermute_with_routing_map`` and
``..._grad``), ``unpermute_with_routing_map(_all)`` and ``unpermute_with_routing_map_grad``.
"""

from typing import Optional, Tuple

import torch

from . import _api
from ._torch_common import CUSTOM_OPS as _CUSTOM_OPS
from ._torch_common import empty_like_outputs as _empty_like_outputs
from ._torch_te import (moe_permute, moe_permute_and_pad_with_probs, moe_permute_with_probs,
                        moe_sort_chunks_by_index, moe_sort_chunks_by_index_with_probs,
                        moe_unpermute)
from ._torch_unpermute import (UnpermuteWithRoutingMap, npu_moe_token_unpermute_with_routing_map,
                               unpermute_with_routing_map_all, unpermute_with_routing_map_grad)

__all__ = ["permute_with_routing_map", "permute_with_routing_map_grad",
           "PermuteWithRoutingMap", "custom_ops_registered", "moe_permute",
           "moe_permute_with_probs", "moe_unpermute", "moe_sort_chunks_by_index",
           "moe_sort_chunks_by_index_with_probs", "moe_permute_and_pad_with_probs",
           "npu_moe_token_unpermute_with_routing_map", "unpermute_with_routing_map",
           "unpermute_with_routing_map_all", "unpermute_with_routing_map_grad",
           "UnpermuteWithRoutingMap"]


def _save(ctx, tokens, routing_map, probs, sorted_indices, drop_and_pad):
    ctx.save_for_backward(sorted_indices, routing_map)
    ctx.num_tokens = tokens.shape[0]
    ctx.hidden = tokens.shape[1]
    ctx.num_experts = routing_map.shape[1]
    ctx.drop_and_pad = drop_and_pad
    ctx.tokens_dtype = tokens.dtype
    ctx.has_probs = probs is not None
    ctx.probs_dtype = probs.dtype if probs is not None else None


def _backward(ctx, grad_tokens, grad_probs, grad_op):
    """(grad of tokens, grad of probs) through moeperm's Grad operator.

    grad_op(G, P, S, M, E, T, drop_and_pad, probs_grad_dtype) -> (tokens_grad, probs_grad or
    None).
    """
    sorted_indices, routing_map = ctx.saved_tensors
    need_tokens, need_probs = ctx.needs_input_grad[0], ctx.has_probs and ctx.needs_input_grad[2]
    if not (need_tokens or need_probs):
        return None, None
    if ctx.num_tokens == 0 or ctx.num_experts == 0:
        # No token or no expert: the forward moved nothing, so both gradients are zero (and
        # empty when T = 0). The Grad operator cannot say it (CANN's tokensNum and numExperts
        # must be > 0), so it is not called.
        device = sorted_indices.device
        tokens_grad = torch.zeros((ctx.num_tokens, ctx.hidden), dtype=ctx.tokens_dtype,
                                  device=device) if need_tokens else None
        probs_grad = torch.zeros((ctx.num_tokens, ctx.num_experts), dtype=ctx.probs_dtype,
                                 device=device) if need_probs else None
        return tokens_grad, probs_grad
    if grad_tokens is None:
        # Only permuted_probs reached the loss: G is zero. A stride-0 view costs no memory;
        # the operator accepts any strides.
        grad_tokens = torch.zeros((), dtype=ctx.tokens_dtype, device=sorted_indices.device)
        grad_tokens = grad_tokens.expand(sorted_indices.shape[0], ctx.hidden)
    p = grad_probs if need_probs else None
    # Without P (permuted_probs did not reach the loss) probs' gradient is zero: the operator
    # fills its probs-grad output with zeros when given one without P (SPEC §3).
    probs_grad_dtype = ctx.probs_dtype if need_probs and p is None else None
    tokens_grad, probs_grad = grad_op(grad_tokens, p, sorted_indices, routing_map,
                                      ctx.num_experts, ctx.num_tokens, ctx.drop_and_pad,
                                      probs_grad_dtype)
    return (tokens_grad if need_tokens else None), (probs_grad if need_probs else None)


class PermuteWithRoutingMap(torch.autograd.Function):
    """The forward as an autograd.Function: apply(tokens, routing_map, probs, num_out_tokens,
    drop_and_pad) -> (permuted_tokens, permuted_probs or None, sorted_indices)."""

    @staticmethod
    def forward(ctx, tokens, routing_map, probs, num_out_tokens, drop_and_pad):
        permuted, permuted_probs, sorted_indices = _api._permute(
            tokens, routing_map, probs, num_out_tokens, drop_and_pad)
        ctx.mark_non_differentiable(sorted_indices)
        _save(ctx, tokens, routing_map, probs, sorted_indices, drop_and_pad)
        return permuted, permuted_probs, sorted_indices

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx, grad_tokens, grad_probs, _grad_indices):
        tokens_grad, probs_grad = _backward(ctx, grad_tokens, grad_probs,
                                            _api.permute_with_routing_map_grad)
        return tokens_grad, None, probs_grad, None, None


def custom_ops_registered():
    """Whether torch.ops.moeperm.* exist (PyTorch >= 2.4: torch.library.custom_op)."""
    return _CUSTOM_OPS

if _CUSTOM_OPS:
    # Custom operators cannot return None: an absent probs output is an empty tensor here
    # and None again in the functional wrappers.

    @torch.library.custom_op("moeperm::permute_with_routing_map", mutates_args=())
    def _permute_op(tokens: torch.Tensor, routing_map: torch.Tensor,
                    probs: Optional[torch.Tensor], num_out_tokens: int,
                    drop_and_pad: bool) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        permuted, permuted_probs, sorted_indices = _api._permute(
            tokens, routing_map, probs, num_out_tokens, drop_and_pad)
        if permuted_probs is None:
            permuted_probs = tokens.new_empty(0)
        return permuted, permuted_probs, sorted_indices

    @_permute_op.register_fake
    def _permute_fake(tokens, routing_map, probs, num_out_tokens, drop_and_pad):
        outputs = _api.infer_permute_outputs(tokens, routing_map, probs, num_out_tokens,
                                             drop_and_pad)
        return _empty_like_outputs(outputs, tokens,
                                   ("permuted_tokens", "permuted_probs", "sorted_indices"))

    @torch.library.custom_op("moeperm::permute_with_routing_map_grad", mutates_args=())
    def _grad_op(permuted_tokens_grad: torch.Tensor, permuted_probs_grad: Optional[torch.Tensor],
                 sorted_indices: torch.Tensor, routing_map: Optional[torch.Tensor],
                 num_experts: int, num_tokens: int, drop_and_pad: bool,
                 probs_grad_dtype: Optional[torch.dtype] = None
                 ) -> Tuple[torch.Tensor, torch.Tensor]:
        tokens_grad, probs_grad = _api.permute_with_routing_map_grad(
            permuted_tokens_grad, permuted_probs_grad, sorted_indices, routing_map, num_experts,
            num_tokens, drop_and_pad, probs_grad_dtype)
        if probs_grad is None:
            probs_grad = permuted_tokens_grad.new_empty(0)
        return tokens_grad, probs_grad

    @_grad_op.register_fake
    def _grad_fake(permuted_tokens_grad, permuted_probs_grad, sorted_indices, routing_map,
                   num_experts, num_tokens, drop_and_pad, probs_grad_dtype=None):
        outputs = _api.infer_permute_grad_outputs(
            permuted_tokens_grad, permuted_probs_grad, sorted_indices, routing_map, num_experts,
            num_tokens, drop_and_pad, probs_grad_dtype)
        return _empty_like_outputs(outputs, permuted_tokens_grad, ("tokens_grad", "probs_grad"))

    def _grad_via_op(g, p, s, m, num_experts, num_tokens, drop_and_pad, probs_grad_dtype=None):
        tokens_grad, probs_grad = _grad_op(g, p, s, m, num_experts, num_tokens, drop_and_pad,
                                           probs_grad_dtype)
        has_probs_grad = p is not None or probs_grad_dtype is not None
        return tokens_grad, (probs_grad if has_probs_grad else None)

    def _setup_context(ctx, inputs, output):
        tokens, routing_map, probs, _num_out_tokens, drop_and_pad = inputs
        _save(ctx, tokens, routing_map, probs, output[2], drop_and_pad)

    def _op_backward(ctx, grad_tokens, grad_probs, _grad_indices):
        tokens_grad, probs_grad = _backward(ctx, grad_tokens, grad_probs, _grad_via_op)
        return tokens_grad, None, probs_grad, None, None

    _permute_op.register_autograd(_op_backward, setup_context=_setup_context)


def permute_with_routing_map(tokens, routing_map, probs=None, num_out_tokens=None,
                             drop_and_pad=False):
    """Differentiable aclnnMoeTokenPermuteWithRoutingMap (SPEC §2), torch_npu's call shape.

    Returns (permuted_tokens [R, H], permuted_probs [R] or None, sorted_indices [R] int32).
    num_out_tokens None (drop-less only) is T times the most experts any token selects;
    computing it reads the routing map, so under torch.compile pass it explicitly.
    """
    n = _api._resolve_num_out_tokens("permute_with_routing_map", tokens, routing_map,
                                     num_out_tokens, bool(drop_and_pad))
    if not _CUSTOM_OPS:
        return PermuteWithRoutingMap.apply(tokens, routing_map, probs, n, bool(drop_and_pad))
    permuted, permuted_probs, sorted_indices = _permute_op(tokens, routing_map, probs, n,
                                                           bool(drop_and_pad))
    return permuted, (permuted_probs if probs is not None else None), sorted_indices


def permute_with_routing_map_grad(permuted_tokens_grad, permuted_probs_grad, sorted_indices,
                                  routing_map, num_experts, num_tokens, drop_and_pad=False,
                                  probs_grad_dtype=None):
    """aclnnMoeTokenPermuteWithRoutingMapGrad (SPEC §3) as a traceable operator (not itself
    differentiable). Returns (tokens_grad, probs_grad or None); probs_grad_dtype without
    permuted_probs_grad asks for a zero probs_grad of that dtype."""
    if not _CUSTOM_OPS:
        return _api.permute_with_routing_map_grad(permuted_tokens_grad, permuted_probs_grad,
                                                  sorted_indices, routing_map, num_experts,
                                                  num_tokens, drop_and_pad, probs_grad_dtype)
    return _grad_via_op(permuted_tokens_grad, permuted_probs_grad, sorted_indices, routing_map,
                        int(num_experts), int(num_tokens), bool(drop_and_pad), probs_grad_dtype)


def unpermute_with_routing_map(permuted_tokens, sorted_indices, restore_shape=None, probs=None,
                               routing_map=None, drop_and_pad=False):
    """Differentiable aclnnMoeTokenUnpermuteWithRoutingMap: unpermuted_tokens [T, H]."""
    return unpermute_with_routing_map_all(permuted_tokens, sorted_indices, restore_shape,
                                          probs=probs, routing_map=routing_map,
                                          drop_and_pad=drop_and_pad)[0]
