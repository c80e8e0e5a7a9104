"""The framework-neutral functions: DLPack tensors in, the input's framework out.

Inputs reach the C++ operators without a copy (any strides, any storage offset). Outputs
are allocated by the framework of the first tensor argument (``tokens`` /
``permuted_tokens_grad``): PyTorch tensors on the same device, or NumPy arrays. Other
DLPack producers on the CPU are viewed through ``numpy.from_dlpack`` (no copy) and get
NumPy outputs. The operator validates everything (SPEC §5) before anything is allocated.
"""

import sys

from . import _moeperm

# The names the C++ binding asks its ``alloc`` callback for, and which input's dtype each
# output takes (SPEC §2, §3); "int32" and "workspace" are fixed.
_FORWARD_OUTPUTS = {"permuted_tokens": "tokens", "permuted_probs": "probs",
                    "sorted_indices": "int32"}
_GRAD_OUTPUTS = {"tokens_grad": "permuted_tokens_grad", "probs_grad": "permuted_probs_grad"}


def _invalid(message):
    """moeperm.InvalidArgumentError (a ValueError) with code 161002, as the operator raises."""
    exc = _moeperm.InvalidArgumentError(message)
    exc.code = 161002
    return exc


# The oldest PyTorch whose tensors reach the binding (pyproject's `torch` extra says the same):
# older ones export DLPack in a form nanobind does not take, which would surface as its
# "incompatible function arguments" TypeError.
MIN_TORCH = (2, 0)


def _torch_version(torch):
    parts = []
    for piece in torch.__version__.split("+")[0].split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def _check_torch(torch):
    if _torch_version(torch) < MIN_TORCH:
        raise ImportError(f"moeperm needs PyTorch >= {MIN_TORCH[0]}.{MIN_TORCH[1]} for torch "
                          f"tensors, found {torch.__version__} (pip install 'torch>=2.0'; "
                          "NumPy arrays work without it)")


def _torch_module(x):
    torch = sys.modules.get("torch")
    if torch is None or not isinstance(x, torch.Tensor):
        return None
    _check_torch(torch)
    return torch


def _is_numpy(x):
    np = sys.modules.get("numpy")
    return np is not None and isinstance(x, np.ndarray)


def _is_numpy_bfloat16(x):
    # ml_dtypes.bfloat16 is a NumPy extension dtype: no DLPack or buffer-protocol export.
    return x.dtype.name == "bfloat16" and x.dtype.itemsize == 2


class _Call:
    """The tensors of one call, prepared for the binding, and the output allocator."""

    def __init__(self, api, primary_name, primary):
        self.api = api
        self.torch = _torch_module(primary)
        self.bf16_views = 0
        self.arrays = {}  # name -> prepared array (what the binding sees)
        self.dtypes = {"int32": None}  # name -> framework dtype of an input
        self.outputs = {}  # name -> array handed to the caller
        if self.torch is None and not _is_numpy(primary):
            primary = self._from_dlpack(primary_name, primary)
        self.device = primary.device if self.torch is not None else None

    def _from_dlpack(self, name, x):
        if not hasattr(x, "__dlpack__"):
            raise TypeError(f"{self.api}: {name} must be a PyTorch tensor, a NumPy array or an "
                            f"object with __dlpack__, got {type(x).__name__}")
        import numpy as np
        try:
            return np.from_dlpack(x)
        except (BufferError, RuntimeError, TypeError, ValueError) as e:
            raise TypeError(f"{self.api}: {name} ({type(x).__name__}) cannot be viewed as a "
                            f"NumPy array ({e}); pass PyTorch tensors or NumPy arrays") from e

    def add(self, index, name, x):
        """Prepares input `name` (operand `index` of the binding) and returns it."""
        if x is None:
            self.dtypes[name] = None
            return None
        if _torch_module(x) is not None:
            # A tensor that requires grad refuses DLPack export; the operator does not
            # differentiate (moeperm.torch does, around it), so its data is all we need.
            x = x.detach()
        elif not _is_numpy(x):
            x = self._from_dlpack(name, x)
        self.dtypes[name] = x.dtype
        if _is_numpy(x):
            if _is_numpy_bfloat16(x):
                import numpy as np
                x = x.view(np.uint16)
                self.bf16_views |= 1 << index
            elif x.dtype.kind == "V" or x.dtype.num >= 256:
                raise _invalid(f"{self.api}: {name} has dtype {x.dtype}, which is no moeperm "
                               "element type (float32, float16, bfloat16, int8, bool, int32)")
        self.arrays[name] = x
        return x

    def alloc_for(self, sources):
        """The callback the binding allocates outputs with: alloc(name, shape) -> array."""
        def alloc(name, shape):
            if self.torch is not None:
                torch = self.torch
                if name == "workspace":
                    return torch.empty(shape, dtype=torch.uint8, device=self.device)
                source = sources[name]
                dtype = torch.int32 if source == "int32" else self.dtypes[source]
                out = torch.empty(shape, dtype=dtype, device=self.device)
                self.outputs[name] = out
                return out
            import numpy as np
            if name == "workspace":  # only CUDA plans ask for one
                return np.empty(shape, dtype=np.uint8)
            source = sources[name]
            dtype = np.int32 if source == "int32" else self.dtypes[source]
            out = np.empty(shape, dtype=dtype)
            self.outputs[name] = out
            return out.view(np.uint16) if _is_numpy_bfloat16(out) else out
        return alloc

    def stream(self):
        """The current CUDA stream of the primary tensor's device, else 0."""
        if self.torch is not None and self.device.type == "cuda":
            return self.torch.cuda.current_stream(self.device).cuda_stream
        return 0

    def device_guard(self):
        if self.torch is not None and self.device.type == "cuda":
            return self.torch.cuda.device(self.device)
        import contextlib
        return contextlib.nullcontext()


def _max_experts_per_token(routing_map):
    """topK for a drop-less call without num_out_tokens: the most experts any token has."""
    if routing_map.shape[0] == 0 or routing_map.shape[1] == 0:
        return 0
    torch = _torch_module(routing_map)
    if torch is not None:
        return int(torch.count_nonzero(routing_map, dim=1).max())
    import numpy as np
    return int(np.count_nonzero(np.asarray(routing_map), axis=1).max())


def _resolve_num_out_tokens(api, tokens, routing_map, num_out_tokens, drop_and_pad):
    if num_out_tokens is not None:
        return int(num_out_tokens)
    if drop_and_pad:
        raise _invalid(f"{api}: num_out_tokens is required when drop_and_pad=True (it sets "
                       "capacity = num_out_tokens // num_experts), got None")
    if len(tokens.shape) != 2 or len(routing_map.shape) != 2:
        return 0  # the operator reports the rank
    return tokens.shape[0] * _max_experts_per_token(routing_map)


def _wants_autograd(*tensors):
    """Whether a call on these tensors must be recorded by autograd (moeperm.torch)."""
    for t in tensors:
        torch = _torch_module(t)
        if torch is not None and t.requires_grad and torch.is_grad_enabled():
            return True
    return False


def _dtype_name(dtype):
    """moeperm's name of a PyTorch or NumPy dtype ("float32", "bfloat16", "bool", ...)."""
    torch = sys.modules.get("torch")
    if torch is not None and isinstance(dtype, torch.dtype):
        return str(dtype).split(".")[-1]
    import numpy as np
    return np.dtype(dtype).name


def _spec(x):
    """A tensor as infer_outputs sees it, (dtype name, shape): no data is read, so fake and
    meta tensors do."""
    return None if x is None else (_dtype_name(x.dtype), [int(d) for d in x.shape])


def _as_dict(outputs):
    return {name: (tuple(shape), dtype) for name, shape, dtype in outputs}


def infer_permute_outputs(tokens, routing_map, probs=None, num_out_tokens=None,
                          drop_and_pad=False):
    """The outputs permute_with_routing_map would return for these inputs, from the
    operator's own rules (moeperm::infer_outputs): {name: (shape, dtype name)} for
    "permuted_tokens", "permuted_probs" (with probs) and "sorted_indices". Reads shapes and
    dtypes only, except that num_out_tokens=None reads the routing map (as the operator
    call does). Invalid inputs raise the error the operator would raise."""
    api = "permute_with_routing_map"
    n = _resolve_num_out_tokens(api, tokens, routing_map, num_out_tokens, bool(drop_and_pad))
    return _as_dict(_moeperm.infer_permute(_spec(tokens), _spec(routing_map), _spec(probs), n,
                                           bool(drop_and_pad)))


def infer_permute_grad_outputs(permuted_tokens_grad, permuted_probs_grad, sorted_indices,
                               routing_map, num_experts, num_tokens, drop_and_pad=False,
                               probs_grad_dtype=None):
    """The outputs permute_with_routing_map_grad would return, as infer_permute_outputs:
    "tokens_grad" and, with permuted_probs_grad or probs_grad_dtype, "probs_grad"."""
    dtype = None if probs_grad_dtype is None else _dtype_name(probs_grad_dtype)
    return _as_dict(_moeperm.infer_permute_grad(
        _spec(permuted_tokens_grad), _spec(permuted_probs_grad), _spec(sorted_indices),
        _spec(routing_map), int(num_experts), int(num_tokens), bool(drop_and_pad), dtype))


def _permute(tokens, routing_map, probs, num_out_tokens, drop_and_pad):
    """The forward without autograd: (permuted_tokens, permuted_probs or None, sorted_indices)."""
    api = "permute_with_routing_map"
    call = _Call(api, "tokens", tokens)
    x = call.add(0, "tokens", tokens)
    m = call.add(1, "routing_map", routing_map)
    p = call.add(2, "probs", probs)
    n = _resolve_num_out_tokens(api, x, m, num_out_tokens, bool(drop_and_pad))
    with call.device_guard():
        _moeperm.permute(x, m, p, n, bool(drop_and_pad), call.alloc_for(_FORWARD_OUTPUTS),
                         call.bf16_views, call.stream())
    out = call.outputs
    return out["permuted_tokens"], out.get("permuted_probs"), out["sorted_indices"]


def permute_with_routing_map_grad(permuted_tokens_grad, permuted_probs_grad, sorted_indices,
                                  routing_map, num_experts, num_tokens, drop_and_pad=False,
                                  probs_grad_dtype=None):
    """aclnnMoeTokenPermuteWithRoutingMapGrad (SPEC §3).

    permuted_tokens_grad G [R, H], permuted_probs_grad P [R] or None, sorted_indices S [R]
    int32 as the forward returned it, routing_map M [T, E] (required with P), num_experts E,
    num_tokens T. probs_grad_dtype (a dtype, used only without P): also return probs_grad
    [T, E] of that dtype, which the operator fills with zeros (SPEC §3).

    Returns (tokens_grad [T, H] in the dtype of G, probs_grad [T, E] in the dtype of P, or
    None) in the framework and on the device of `permuted_tokens_grad`.
    """
    api = "permute_with_routing_map_grad"
    call = _Call(api, "permuted_tokens_grad", permuted_tokens_grad)
    g = call.add(0, "permuted_tokens_grad", permuted_tokens_grad)
    p = call.add(1, "permuted_probs_grad", permuted_probs_grad)
    s = call.add(2, "sorted_indices", sorted_indices)
    m = call.add(3, "routing_map", routing_map)
    dtype = None
    if p is None and probs_grad_dtype is not None:
        dtype = _dtype_name(probs_grad_dtype)
        call.dtypes["probs_grad_dtype"] = (getattr(call.torch, dtype) if call.torch is not None
                                           else probs_grad_dtype)
    sources = dict(_GRAD_OUTPUTS)
    if dtype is not None:
        sources["probs_grad"] = "probs_grad_dtype"
    with call.device_guard():
        _moeperm.permute_grad(g, p, s, m, int(num_experts), int(num_tokens), bool(drop_and_pad),
                              call.alloc_for(sources), dtype, call.bf16_views, call.stream())
    out = call.outputs
    return out["tokens_grad"], out.get("probs_grad")


def _restore_shape(restore_shape):
    """restoreShapeOptional as the binding takes it: None, or a list of ints (from a tuple,
    a list or a torch.Size)."""
    return None if restore_shape is None else [int(d) for d in restore_shape]


def infer_unpermute_outputs(permuted_tokens, sorted_indices, restore_shape=None, probs=None,
                            routing_map=None, drop_and_pad=False, all_outputs=False):
    """The outputs unpermute_with_routing_map(_all) would return, as infer_permute_outputs:
    "unpermuted_tokens" and, with all_outputs, "out_index", "permute_token_id" and
    "permute_probs"."""
    return _as_dict(_moeperm.infer_unpermute(
        _spec(permuted_tokens), _spec(sorted_indices), _spec(routing_map), _spec(probs),
        bool(drop_and_pad), _restore_shape(restore_shape), bool(all_outputs)))


def infer_unpermute_grad_outputs(unpermuted_tokens_grad, out_index, permute_token_id,
                                 routing_map=None, permuted_tokens=None, probs=None,
                                 drop_and_pad=False, restore_shape=None, probs_grad=True):
    """The outputs unpermute_with_routing_map_grad would return: "permuted_tokens_grad" and,
    with probs and probs_grad, "probs_grad"."""
    del restore_shape  # not read (SPEC-unpermute U2)
    return _as_dict(_moeperm.infer_unpermute_grad(
        _spec(unpermuted_tokens_grad), _spec(out_index), _spec(permute_token_id),
        _spec(routing_map), _spec(permuted_tokens), _spec(probs), bool(drop_and_pad),
        bool(probs_grad)))


def _unpermute(permuted_tokens, sorted_indices, restore_shape, probs, routing_map, drop_and_pad,
               all_outputs):
    """The unpermute without autograd: (unpermuted_tokens, out_index, permute_token_id,
    permute_probs), the last three None unless all_outputs."""
    api = "unpermute_with_routing_map"
    call = _Call(api, "permuted_tokens", permuted_tokens)
    x = call.add(0, "permuted_tokens", permuted_tokens)
    s = call.add(1, "sorted_indices", sorted_indices)
    m = call.add(2, "routing_map", routing_map)
    p = call.add(3, "probs", probs)
    # permuteProbs has the probs' dtype; without probs it is zeros of the tokens' dtype.
    sources = {"unpermuted_tokens": "permuted_tokens", "out_index": "int32",
               "permute_token_id": "int32",
               "permute_probs": "probs" if p is not None else "permuted_tokens"}
    with call.device_guard():
        _moeperm.unpermute(x, s, m, p, bool(drop_and_pad), _restore_shape(restore_shape),
                           bool(all_outputs), call.alloc_for(sources), call.bf16_views,
                           call.stream())
    out = call.outputs
    return (out["unpermuted_tokens"], out.get("out_index"), out.get("permute_token_id"),
            out.get("permute_probs"))


def unpermute_with_routing_map_grad(unpermuted_tokens_grad, out_index, permute_token_id,
                                    routing_map=None, permuted_tokens=None, probs=None,
                                    drop_and_pad=False, restore_shape=None, probs_grad=True):
    """aclnnMoeTokenUnpermuteWithRoutingMapGrad (SPEC-unpermute U2).

    unpermuted_tokens_grad G [T, H]; (out_index, permute_token_id) [R] int32: drop-less,
    the forward's sorted_indices twice (torch_npu's rule) or the forward's own two outputs;
    drop-and-pad, the forward's out_index and permute_token_id. With probs [T, E] the
    routing_map is required, and for the probs gradient (probs_grad=True) also the forward's
    permuted_tokens [R, H]. restore_shape is not read.

    Returns (permuted_tokens_grad [R, H] in the dtype of G, probs_grad [T, E] in the dtype of
    probs, or None without probs or with probs_grad=False) in the framework and on the
    device of `unpermuted_tokens_grad`.
    """
    del restore_shape  # not read (SPEC-unpermute U2)
    api = "unpermute_with_routing_map_grad"
    call = _Call(api, "unpermuted_tokens_grad", unpermuted_tokens_grad)
    g = call.add(0, "unpermuted_tokens_grad", unpermuted_tokens_grad)
    o = call.add(1, "out_index", out_index)
    i = call.add(2, "permute_token_id", permute_token_id)
    m = call.add(3, "routing_map", routing_map)
    x = call.add(4, "permuted_tokens", permuted_tokens)
    p = call.add(5, "probs", probs)
    sources = {"permuted_tokens_grad": "unpermuted_tokens_grad", "probs_grad": "probs"}
    with call.device_guard():
        _moeperm.unpermute_grad(g, o, i, m, x, p, bool(drop_and_pad), bool(probs_grad),
                                call.alloc_for(sources), call.bf16_views, call.stream())
    out = call.outputs
    return out["permuted_tokens_grad"], out.get("probs_grad")
