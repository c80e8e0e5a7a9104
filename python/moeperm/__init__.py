"""moeperm: Huawei CANN's MoE token permutation operators (permute, unpermute and their Grads)
on CPUs (and CUDA when built with it).

    import moeperm
    permuted, permuted_probs, sorted_indices = moeperm.permute_with_routing_map(
        tokens, routing_map, probs, num_out_tokens=T * K)
    tokens_grad, probs_grad = moeperm.permute_with_routing_map_grad(
        grad, probs_grad_in, sorted_indices, routing_map, num_experts=E, num_tokens=T,
        drop_and_pad=False)
    out = moeperm.unpermute_with_routing_map(
        expert_output, sorted_indices, restore_shape=(T, H), probs=probs,
        routing_map=routing_map)
    rows_grad, probs_grad = moeperm.unpermute_with_routing_map_grad(
        out_grad, sorted_indices, sorted_indices, routing_map, expert_output, probs)

Tensors are PyTorch tensors or NumPy arrays (any DLPack tensor; bfloat16 through PyTorch or
ml_dtypes), of any strides; outputs come back in the framework and on the device of the
first tensor. ``moeperm.torch`` adds autograd and torch.compile support.

Errors raise ``moeperm.InvalidArgumentError`` (a ValueError; codes 161001/161002) or
``moeperm.OperatorError`` (a RuntimeError; other codes), both ``moeperm.Error`` with the
CANN status in ``.code`` and the operator's message.
"""

from ._moeperm import (Error, InvalidArgumentError, OperatorError, __version__, cuda_built,
                       cuda_device_count, get_num_threads, set_num_threads)
from ._api import (infer_permute_grad_outputs, infer_permute_outputs,
                   infer_unpermute_grad_outputs, infer_unpermute_outputs,
                   permute_with_routing_map_grad, unpermute_with_routing_map_grad)
from . import _api
from ._ragged_api import (infer_ragged_permute_outputs, infer_ragged_unpermute_outputs,
                          ragged_permute, ragged_permute_grad, ragged_unpermute,
                          ragged_unpermute_grad)
from ._sort_chunks_api import infer_sort_chunks_outputs, sort_chunks, sort_chunks_grad

__all__ = ["permute_with_routing_map", "permute_with_routing_map_grad",
           "unpermute_with_routing_map", "unpermute_with_routing_map_all",
           "unpermute_with_routing_map_grad", "infer_outputs", "infer_permute_outputs",
           "infer_permute_grad_outputs", "infer_unpermute_outputs",
           "infer_unpermute_grad_outputs", "ragged_permute", "ragged_unpermute",
           "ragged_permute_grad", "ragged_unpermute_grad",
           "infer_ragged_permute_outputs", "infer_ragged_unpermute_outputs", "sort_chunks",
           "sort_chunks_grad", "infer_sort_chunks_outputs", "Error",
           "InvalidArgumentError", "OperatorError", "cuda_built", "cuda_device_count",
           "get_num_threads", "set_num_threads", "__version__"]

# The package's modules import in one direction only: this file -> megatron / torch
# (lazily) -> _ragged_api / _sort_chunks_api -> _api -> _moeperm (tests/structure/check_structure.sh checks that no import goes round).


def permute_with_routing_map(tokens, routing_map, probs=None, num_out_tokens=None,
                             drop_and_pad=False):
    """aclnnMoeTokenPermuteWithRoutingMap (SPEC §2).

    tokens [T, H] (bfloat16, float16 or float32), routing_map [T, E] (bool or int8), probs
    [T, E] (the dtype of tokens, or float32 with bfloat16 tokens) or None. num_out_tokens is
    T*K drop-less (K = topK; None: the most experts any token selects) or E*C with
    drop_and_pad (C = capacity; required).

    Returns (permuted_tokens [R, H], permuted_probs [R] or None, sorted_indices [R] int32)
    in the framework and on the device of `tokens`. PyTorch tensors that require grad are
    differentiated through moeperm.torch.
    """
    if _api._wants_autograd(tokens, probs):
        from . import torch as moeperm_torch
        return moeperm_torch.permute_with_routing_map(tokens, routing_map, probs,
                                                      num_out_tokens, drop_and_pad)
    return _api._permute(tokens, routing_map, probs, num_out_tokens, drop_and_pad)


def unpermute_with_routing_map(permuted_tokens, sorted_indices, restore_shape=None, probs=None,
                               routing_map=None, drop_and_pad=False):
    """aclnnMoeTokenUnpermuteWithRoutingMap (SPEC-unpermute U1): the permuted rows back to
    their tokens, summed (weighted by probs when given).

    permuted_tokens X [R, H], sorted_indices S [R] int32 exactly as permute_with_routing_map
    returned it in the same mode, restore_shape (T, H) (required without probs), probs
    [T, E] (the dtype of X, or float32 with bfloat16 X), routing_map [T, E] (required with
    probs in drop-less mode). Returns unpermuted_tokens [T, H] in the framework and on the
    device of `permuted_tokens`. PyTorch tensors that require grad are differentiated
    through moeperm.torch (torch_npu's autograd rule).
    """
    return _unpermute(permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
                      drop_and_pad, all_outputs=False)[0]


def unpermute_with_routing_map_all(permuted_tokens, sorted_indices, restore_shape=None,
                                   probs=None, routing_map=None, drop_and_pad=False):
    """unpermute_with_routing_map that also returns CANN's other outputs: (unpermuted_tokens
    [T, H], out_index [R] int32, permute_token_id [R] int32, permute_probs [R]) as SPEC-
    unpermute U1 defines them (permute_probs in the dtype of probs; zeros of the tokens'
    dtype without probs). out_index and permute_token_id are what
    unpermute_with_routing_map_grad takes in either mode."""
    return _unpermute(permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
                      drop_and_pad, all_outputs=True)


def _unpermute(permuted_tokens, sorted_indices, restore_shape, probs, routing_map, drop_and_pad,
               all_outputs):
    """Autograd (moeperm.torch) when a PyTorch input requires grad, else the plain call."""
    if _api._wants_autograd(permuted_tokens, probs):
        from . import torch as moeperm_torch
        return moeperm_torch.unpermute_with_routing_map_all(
            permuted_tokens, sorted_indices, restore_shape, probs=probs,
            routing_map=routing_map, drop_and_pad=drop_and_pad)
    return _api._unpermute(permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
                           drop_and_pad, all_outputs)


_INFER = {"permute": infer_permute_outputs, "permute_grad": infer_permute_grad_outputs,
          "unpermute": infer_unpermute_outputs, "unpermute_grad": infer_unpermute_grad_outputs}


def infer_outputs(operator, *args, **kwargs):
    """The outputs an operator would return for these inputs, from the library's own rules
    (moeperm::infer_outputs), without running it: {name: (shape, dtype name)}.

    operator is "permute", "permute_grad", "unpermute" or "unpermute_grad" (the arguments of
    permute_with_routing_map, permute_with_routing_map_grad, unpermute_with_routing_map (with
    all_outputs=True: those of unpermute_with_routing_map_all) and
    unpermute_with_routing_map_grad). Only shapes and dtypes are read, so PyTorch's fake and
    meta tensors do.
    """
    try:
        infer = _INFER[operator]
    except KeyError:
        raise ValueError(f"infer_outputs: operator must be one of {sorted(_INFER)}, "
                         f"got {operator!r}") from None
    return infer(*args, **kwargs)
