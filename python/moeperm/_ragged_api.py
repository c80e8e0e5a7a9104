"""The ragged pair (docs/ragged.md), framework-neutral: moeperm's permute and unpermute with
Megatron-LM's and TransformerEngine's routing-map semantics (any number of experts per
token, a row -> token index). Tensors as in _api: PyTorch tensors or NumPy arrays of any
strides, outputs in the framework and on the device of the first tensor."""

from . import _api, _moeperm


def _count_routed(routing_map):
    torch = _api._torch_module(routing_map)
    if torch is not None:
        return int(torch.count_nonzero(routing_map))
    import numpy as np
    return int(np.count_nonzero(np.asarray(routing_map)))


def _rows(api, routing_map, num_out_tokens, drop_and_pad):
    if num_out_tokens is not None:
        return int(num_out_tokens)
    if drop_and_pad:
        raise _api._invalid(f"{api}: num_out_tokens is required when drop_and_pad=True (it "
                            "sets capacity = num_out_tokens / experts), got None")
    return _count_routed(routing_map)


def ragged_permute(tokens, routing_map, probs=None, num_out_tokens=None, drop_and_pad=False):
    """moeperm::ragged_permute: tokens [T, H] (bfloat16, float16, float32), routing_map
    [T, E] (bool, int8, uint8 or int32), probs [T, E] (any float dtype) or None.

    Drop-less: R = num_out_tokens rows (None: the routed pairs), the pairs in expert-major
    order, tokens ascending inside an expert; pairs past R are dropped, rows past the pairs
    are empty. Drop-and-pad: capacity C = num_out_tokens / E (a multiple of E), expert e's
    first C tokens in rows e*C ... Empty rows are zeros with index -1.

    Returns (permuted_tokens [R, H], permuted_probs [R] or None, sorted_indices [R] int32:
    row -> token).
    """
    api = "ragged_permute"
    rows = _rows(api, routing_map, num_out_tokens, drop_and_pad)
    call = _api._Call(api, "tokens", tokens)
    x = call.add(0, "tokens", tokens)
    m = call.add(1, "routing_map", routing_map)
    p = call.add(2, "probs", probs)
    sources = {"permuted_tokens": "tokens", "permuted_probs": "probs",
               "sorted_indices": "int32"}
    with call.device_guard():
        _moeperm.ragged_permute(x, m, p, rows, bool(drop_and_pad), call.alloc_for(sources),
                                call.bf16_views, call.stream())
    out = call.outputs
    return out["permuted_tokens"], out.get("permuted_probs"), out["sorted_indices"]


def infer_ragged_permute_outputs(tokens, routing_map, probs=None, num_out_tokens=None,
                                 drop_and_pad=False):
    """The outputs ragged_permute would return: {name: (shape, dtype name)} (num_out_tokens
    is required: the routed pairs are data)."""
    rows = _rows("ragged_permute", routing_map, num_out_tokens, True)
    return _api._as_dict(_moeperm.infer_ragged_permute(
        _api._spec(tokens), _api._spec(routing_map), _api._spec(probs), rows,
        bool(drop_and_pad)))


def ragged_unpermute(permuted_tokens, sorted_indices, restore_shape=None, probs=None,
                     routing_map=None, drop_and_pad=False):
    """moeperm::ragged_unpermute: permuted_tokens [R, H], sorted_indices [R] int32 (row ->
    token, -1: empty), restore_shape (T, H) (required without probs), probs [T, E] (any
    float dtype) with routing_map [T, E] (required with probs, drop-less).

    Returns unpermuted_tokens [T, H]: each token's rows summed in ascending row order (times
    probs[t, e(row)] with probs) in float32, rounded once to the tokens' dtype."""
    api = "ragged_unpermute"
    call = _api._Call(api, "permuted_tokens", permuted_tokens)
    x = call.add(0, "permuted_tokens", permuted_tokens)
    s = call.add(1, "sorted_indices", sorted_indices)
    m = call.add(2, "routing_map", routing_map)
    p = call.add(3, "probs", probs)
    with call.device_guard():
        _moeperm.ragged_unpermute(x, s, m, p, bool(drop_and_pad),
                                  _api._restore_shape(restore_shape),
                                  call.alloc_for({"unpermuted_tokens": "permuted_tokens"}),
                                  call.bf16_views, call.stream())
    return call.outputs["unpermuted_tokens"]


def infer_ragged_unpermute_outputs(permuted_tokens, sorted_indices, restore_shape=None,
                                   probs=None, routing_map=None, drop_and_pad=False):
    """The output ragged_unpermute would return: {"unpermuted_tokens": (shape, dtype)}."""
    return _api._as_dict(_moeperm.infer_ragged_unpermute(
        _api._spec(permuted_tokens), _api._spec(sorted_indices), _api._spec(routing_map),
        _api._spec(probs), bool(drop_and_pad), _api._restore_shape(restore_shape)))


def ragged_permute_grad(permuted_tokens_grad, sorted_indices, num_tokens,
                        permuted_probs_grad=None, routing_map=None, drop_and_pad=False,
                        probs_grad=True):
    """moeperm::ragged_permute_grad: (tokens_grad [T, H], probs_grad [T, E] or None).

    tokens_grad[t] sums the rows of permuted_tokens_grad that sorted_indices names t
    (ascending, float32, rounded once); probs_grad (with permuted_probs_grad, the routing map
    and probs_grad=True) is the probs' gradient of the row of (t, e), +0 elsewhere."""
    api = "ragged_permute_grad"
    call = _api._Call(api, "permuted_tokens_grad", permuted_tokens_grad)
    g = call.add(0, "permuted_tokens_grad", permuted_tokens_grad)
    gp = call.add(1, "permuted_probs_grad", permuted_probs_grad)
    s = call.add(2, "sorted_indices", sorted_indices)
    m = call.add(3, "routing_map", routing_map)
    sources = {"tokens_grad": "permuted_tokens_grad", "probs_grad": "permuted_probs_grad"}
    with call.device_guard():
        _moeperm.ragged_permute_grad(g, gp, s, m, int(num_tokens), bool(drop_and_pad),
                                     bool(probs_grad), call.alloc_for(sources), call.bf16_views,
                                     call.stream())
    return call.outputs["tokens_grad"], call.outputs.get("probs_grad")


def ragged_unpermute_grad(unpermuted_tokens_grad, sorted_indices, routing_map=None,
                          permuted_tokens=None, probs=None, drop_and_pad=False, probs_grad=True):
    """moeperm::ragged_unpermute_grad: (permuted_tokens_grad [R, H], probs_grad [T, E] or
    None). Row r gets its token's gradient (times probs[t, e(r)], rounded once; +0 for a -1
    row); probs_grad (with probs, permuted_tokens and probs_grad=True) holds U3's dot
    products of each token's gradient with its rows."""
    api = "ragged_unpermute_grad"
    call = _api._Call(api, "unpermuted_tokens_grad", unpermuted_tokens_grad)
    g = call.add(0, "unpermuted_tokens_grad", unpermuted_tokens_grad)
    s = call.add(1, "sorted_indices", sorted_indices)
    m = call.add(2, "routing_map", routing_map)
    x = call.add(3, "permuted_tokens", permuted_tokens)
    p = call.add(4, "probs", probs)
    sources = {"permuted_tokens_grad": "unpermuted_tokens_grad", "probs_grad": "probs"}
    with call.device_guard():
        _moeperm.ragged_unpermute_grad(g, s, m, x, p, bool(drop_and_pad), bool(probs_grad),
                                       call.alloc_for(sources), call.bf16_views, call.stream())
    return call.outputs["permuted_tokens_grad"], call.outputs.get("probs_grad")
