"""moeperm: Huawei CANN's MoE token permutation operators on CPUs (and CUDA when built with it).

    import moeperm
    permuted, permuted_probs, sorted_indices = moeperm.permute_with_routing_map(
        tokens, routing_map, probs, num_out_tokens=T * K)
    tokens_grad, probs_grad = moeperm.permute_with_routing_map_grad(
        grad, probs_grad_in, sorted_indices, routing_map, num_experts=E, num_tokens=T,
        drop_and_pad=False)

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
                   permute_with_routing_map_grad)
from . import _api

__all__ = ["permute_with_routing_map", "permute_with_routing_map_grad", "infer_outputs",
           "infer_permute_outputs", "infer_permute_grad_outputs", "Error",
           "InvalidArgumentError", "OperatorError", "cuda_built", "cuda_device_count",
           "get_num_threads", "set_num_threads", "__version__"]

# The package's modules import in one direction only: this file -> torch (lazily) -> _api
# -> _moeperm (tests/structure/check_structure.sh checks that no import goes round).


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


_INFER = {"permute": infer_permute_outputs, "permute_grad": infer_permute_grad_outputs}


def infer_outputs(operator, *args, **kwargs):
    """The outputs an operator would return for these inputs, from the library's own rules
    (moeperm::infer_outputs), without running it: {name: (shape, dtype name)}.

    operator is "permute" (the arguments of permute_with_routing_map) or "permute_grad" (those
    of permute_with_routing_map_grad). Only shapes and dtypes are read, so PyTorch's fake and
    meta tensors do.
    """
    try:
        infer = _INFER[operator]
    except KeyError:
        raise ValueError(f"infer_outputs: operator must be one of {sorted(_INFER)}, "
                         f"got {operator!r}") from None
    return infer(*args, **kwargs)
