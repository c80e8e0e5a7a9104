"""The chunk sort pair (docs/sort_chunks.md), framework-neutral: Megatron-LM's
sort_chunks_by_idxs and TransformerEngine's moe_sort_chunks_by_index on moeperm's
sort_chunks / sort_chunks_grad operators. Tensors as in _api: PyTorch tensors or NumPy
arrays of any strides, outputs in the framework and on the device of the first tensor."""

from . import _api, _moeperm

_INT32_MIN, _INT32_MAX = -2**31, 2**31 - 1


def _chunk_index(api, name, value, like):
    """split_sizes / sorted_index as the operator reads them: int32 on the device of `like`.
    Lists and tensors of any integer dtype are taken; a value int32 cannot hold is an error
    (a silent wrap could turn a bad size into a plausible one)."""
    torch = _api._torch_module(like)
    if torch is not None:
        t = torch.as_tensor(value, device=like.device)
        if t.dtype == torch.int32:
            return t
        if t.is_floating_point() or t.is_complex() or t.dtype == torch.bool:
            raise _api._invalid(f"{api}: {name} must hold integers, got dtype {t.dtype}")
        if t.numel() and (int(t.min()) < _INT32_MIN or int(t.max()) > _INT32_MAX):
            raise _api._invalid(f"{api}: {name} holds values outside int32 ({int(t.min())} .. "
                                f"{int(t.max())})")
        return t.to(torch.int32)
    import numpy as np
    a = np.asarray(value)
    if a.dtype == np.int32:
        return a
    if a.size == 0:
        return a.astype(np.int32)
    if a.dtype.kind not in "iu":
        raise _api._invalid(f"{api}: {name} must hold integers, got dtype {a.dtype}")
    if int(a.min()) < _INT32_MIN or int(a.max()) > _INT32_MAX:
        raise _api._invalid(f"{api}: {name} holds values outside int32 ({int(a.min())} .. "
                            f"{int(a.max())})")
    return a.astype(np.int32)


def _run(api, names, x, split_sizes, sorted_index, probs, grad):
    sizes = _chunk_index(api, "split_sizes", split_sizes, x)
    order = _chunk_index(api, "sorted_index", sorted_index, x)
    call = _api._Call(api, names[0], x)
    a = call.add(0, names[0], x)
    s = call.add(1, "split_sizes", sizes)
    o = call.add(2, "sorted_index", order)
    p = call.add(3, names[1], probs)
    with call.device_guard():
        _moeperm.sort_chunks(a, s, o, p, grad,
                             call.alloc_for({names[2]: names[0], names[3]: names[1]}),
                             call.bf16_views, call.stream())
    return call.outputs[names[2]], call.outputs.get(names[3])


def sort_chunks(tokens, split_sizes, sorted_index, probs=None):
    """moeperm::sort_chunks: tokens [T, H] (bfloat16, float16, float32) are S chunks, chunk c
    of split_sizes[c] rows (>= 0, summing to T); the output is the chunks in the order
    sorted_index gives (a permutation of 0 .. S-1): output chunk j is chunk sorted_index[j].
    probs [T] (any float dtype) travel with their rows. split_sizes and sorted_index may be
    lists or integer tensors of any dtype (converted to int32).

    Returns (sorted_tokens [T, H], sorted_probs [T] or None)."""
    return _run("sort_chunks", ("tokens", "probs", "sorted_tokens", "sorted_probs"), tokens,
                split_sizes, sorted_index, probs, False)


def sort_chunks_grad(sorted_tokens_grad, split_sizes, sorted_index, sorted_probs_grad=None):
    """moeperm::sort_chunks_grad, the backward of sort_chunks (the same split_sizes and
    sorted_index): every row goes back to where sort_chunks took it from.

    Returns (tokens_grad [T, H], probs_grad [T] or None)."""
    return _run("sort_chunks_grad",
                ("sorted_tokens_grad", "sorted_probs_grad", "tokens_grad", "probs_grad"),
                sorted_tokens_grad, split_sizes, sorted_index, sorted_probs_grad, True)


def _index_spec(value):
    """split_sizes / sorted_index as sort_chunks passes them: int32 of their length."""
    shape = [int(d) for d in value.shape] if hasattr(value, "shape") else [len(value)]
    return ("int32", shape)


def infer_sort_chunks_outputs(tokens, split_sizes, sorted_index, probs=None):
    """The outputs sort_chunks would return: {name: (shape, dtype name)} (no data is read:
    fake and meta tensors do)."""
    return _api._as_dict(_moeperm.infer_sort_chunks(
        _api._spec(tokens), _index_spec(split_sizes), _index_spec(sorted_index),
        _api._spec(probs), False))
