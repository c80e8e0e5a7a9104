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
from ._api import permute_with_routing_map, permute_with_routing_map_grad

__all__ = ["permute_with_routing_map", "permute_with_routing_map_grad", "Error",
           "InvalidArgumentError", "OperatorError", "cuda_built", "cuda_device_count",
           "get_num_threads", "set_num_threads", "__version__"]
