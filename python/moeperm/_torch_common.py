"""What moeperm.torch's modules share: whether torch.library's custom operators exist, and
the empty outputs their fake implementations return."""

import torch

from . import _api

_api._check_torch(torch)  # a clear ImportError on a PyTorch older than moeperm takes

# torch.library.custom_op and register_fake (PyTorch >= 2.4): the operators are then
# torch.ops.moeperm.*, traceable by torch.compile.
CUSTOM_OPS = hasattr(torch.library, "custom_op") and hasattr(torch.library, "register_fake")


def empty_like_outputs(outputs, like, names):
    """Empty tensors of the shapes and dtypes infer_outputs gave, on `like`'s device, in the
    order of `names` (a name the call has no output for: an empty 1-D tensor of like's
    dtype, the custom operators' stand-in for None)."""
    result = []
    for name in names:
        if name in outputs:
            shape, dtype = outputs[name]
            result.append(like.new_empty(shape, dtype=getattr(torch, dtype)))
        else:
            result.append(like.new_empty(0))
    return tuple(result)
