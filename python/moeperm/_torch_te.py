"""TransformerEngine's MoE permutation names on moeperm (moeperm.torch re-exports them):
moe_permute, moe_permute_with_probs, moe_unpermute, moe_sort_chunks_by_index and
moe_sort_chunks_by_index_with_probs, with TransformerEngine's documented semantics and call
shapes, so that code importing them from transformer_engine.pytorch can import them from
moeperm.torch. Built on the ragged pair and the chunk sort (their custom operators, so
torch.compile(fullgraph=True) traces through; docs/ragged.md, docs/sort_chunks.md).

row_id_map is TransformerEngine's mask-map layout: int32 [num_experts, num_tokens], entry
(e, t) the output row of token t's copy for expert e, -1 where the token does not go to e
or its row was dropped (rows past num_out_tokens). moe_unpermute reads the rows' tokens and
experts from it, so it needs nothing else from the permute.

Not matched, with an error that says so: FP8 tensors (moeperm moves bfloat16, float16 and
float32 values; TransformerEngine's FP8 path rescales in the kernel), map_type="index" (the
legacy [T, topK] index routing; build a mask map instead), and moe_permute_and_pad_with_probs
(pad_offsets: per-expert alignment padding inside the permute).
"""

import torch

from ._torch_ragged_ops import ragged_permute, ragged_unpermute, sort_chunks

__all__ = ["moe_permute", "moe_permute_with_probs", "moe_unpermute",
           "moe_sort_chunks_by_index", "moe_sort_chunks_by_index_with_probs",
           "moe_permute_and_pad_with_probs"]


def _reject_fp8(api, *tensors):
    for t in tensors:
        if t is not None and type(t) is not torch.Tensor and hasattr(t, "_fp8_dtype"):
            raise TypeError(f"moeperm.torch.{api}: FP8 tensors ({type(t).__name__}) are not "
                            "supported: moeperm's operators move bfloat16, float16 and float32 "
                            "values (TransformerEngine's FP8 path rescales inside its kernel); "
                            "dequantize first")


def _check_map_type(api, map_type):
    if map_type == "mask":
        return
    if map_type == "index":
        raise NotImplementedError(
            f"moeperm.torch.{api}: map_type='index' (TransformerEngine's legacy [num_tokens, "
            "topK] index routing) is not supported; pass a mask map instead: routing_map = "
            "torch.zeros(T, E, dtype=torch.bool).scatter(1, indices, True) (and for "
            "moe_unpermute, merging_probs = torch.zeros(T, E).scatter(1, indices, probs))")
    raise ValueError(f"moeperm.torch.{api}: map_type should be one of 'mask' or 'index', "
                     f"got {map_type!r}")


def _row_id_map(routing_map, sorted_indices):
    """TransformerEngine's [E, T] map from the permute's row -> token index: row r belongs
    to the expert whose block of the expert-major pair list holds it (tokens ascending
    inside an expert), and rows past the pairs (index -1) to none. Static shapes only."""
    num_tokens, num_experts = routing_map.shape
    rows = sorted_indices.shape[0]
    per_expert = (routing_map != 0).sum(0)
    expert = torch.searchsorted(torch.cumsum(per_expert, 0), torch.arange(
        rows, device=routing_map.device), right=True).clamp(max=max(num_experts - 1, 0))
    kept = sorted_indices >= 0
    sink = num_experts * num_tokens  # where rows without a pair go (cut off below)
    flat = torch.where(kept, expert * num_tokens + sorted_indices.long(), sink)
    out = torch.full((sink + 1,), -1, dtype=torch.int32, device=routing_map.device)
    out.scatter_(0, flat, torch.arange(rows, dtype=torch.int32, device=routing_map.device))
    return out[:sink].view(num_experts, num_tokens)


def _sorted_indices(row_id_map, rows):
    """The row -> token index (-1: no token) from a row_id_map [E, T]."""
    num_experts, num_tokens = row_id_map.shape
    tokens = torch.arange(num_tokens, dtype=torch.int32, device=row_id_map.device)
    flat = torch.where(row_id_map >= 0, row_id_map.long(), rows).reshape(-1)
    out = torch.full((rows + 1,), -1, dtype=torch.int32, device=row_id_map.device)
    out.scatter_(0, flat, tokens.expand(num_experts, num_tokens).reshape(-1))
    return out[:rows]


def _permute(api, inp, routing_map, probs, num_out_tokens):
    _reject_fp8(api, inp, probs)
    if inp.dim() != 2 or routing_map.dim() != 2 or inp.shape[0] != routing_map.shape[0]:
        raise ValueError(f"moeperm.torch.{api}: Permute not possible: inp {tuple(inp.shape)} "
                         f"and routing_map {tuple(routing_map.shape)} must be [T, H] and [T, E]")
    if num_out_tokens is None or num_out_tokens < 0:  # TransformerEngine's -1: drop nothing
        num_out_tokens = int(torch.count_nonzero(routing_map))
    y, yp, s = ragged_permute(inp, routing_map, probs, int(num_out_tokens), False)
    return y, yp, _row_id_map(routing_map, s)


def moe_permute(inp, routing_map, num_out_tokens=-1, max_token_num=-1, map_type="mask"):
    """TransformerEngine's moe_permute: (output [num_out_tokens, H], row_id_map). Tokens
    grouped by expert (ascending), tokens ascending inside an expert; num_out_tokens < 0
    keeps every routed pair, a smaller count drops the pairs past it. max_token_num (a
    workspace hint in TransformerEngine) is not needed. routing_map: bool, int8, uint8 or
    int32 [T, E]."""
    del max_token_num
    _check_map_type("moe_permute", map_type)
    output, _, row_id_map = _permute("moe_permute", inp, routing_map, None, num_out_tokens)
    return output, row_id_map


def moe_permute_with_probs(inp, probs, routing_map, num_out_tokens=-1):
    """TransformerEngine's moe_permute_with_probs: (output, permuted_probs, row_id_map);
    probs [T, E] (any float dtype) travel with their rows."""
    return _permute("moe_permute_with_probs", inp, routing_map, probs, num_out_tokens)


def moe_unpermute(inp, row_id_map, merging_probs=None, restore_shape=None, map_type="mask",
                  probs=None):
    """TransformerEngine's moe_unpermute: each token's rows summed (times merging_probs[t, e]
    when given), in float32 in ascending row order, rounded once to inp's dtype.
    restore_shape (T, H) defaults to inp's shape, as in TransformerEngine; probs is the
    deprecated name of merging_probs."""
    if probs is not None:
        if merging_probs is not None:
            raise ValueError("Both merging_probs and probs kwarg are provided. probs is "
                             "deprecated.")
        merging_probs = probs
    _check_map_type("moe_unpermute", map_type)
    _reject_fp8("moe_unpermute", inp, merging_probs)
    if restore_shape is None:
        restore_shape = inp.shape
    s = _sorted_indices(row_id_map, inp.shape[0])
    routing_map = (row_id_map >= 0).T if merging_probs is not None else None
    return ragged_unpermute(inp, s, restore_shape, merging_probs, routing_map, False)


def moe_sort_chunks_by_index(inp, split_sizes, sorted_index):
    """TransformerEngine's moe_sort_chunks_by_index: inp's rows split by split_sizes, the
    chunks put in the order sorted_index gives."""
    _reject_fp8("moe_sort_chunks_by_index", inp)
    return sort_chunks(inp, torch.as_tensor(split_sizes, device=inp.device),
                       torch.as_tensor(sorted_index, device=inp.device), None)[0]


def moe_sort_chunks_by_index_with_probs(inp, probs, split_sizes, sorted_index):
    """TransformerEngine's moe_sort_chunks_by_index_with_probs: (output, permuted_probs),
    probs [T] travelling with their rows."""
    _reject_fp8("moe_sort_chunks_by_index_with_probs", inp, probs)
    return sort_chunks(inp, torch.as_tensor(split_sizes, device=inp.device),
                       torch.as_tensor(sorted_index, device=inp.device), probs)


def moe_permute_and_pad_with_probs(*_args, **_kwargs):
    """TransformerEngine's permute with per-expert alignment padding (pad_offsets): not
    supported (raises)."""
    raise NotImplementedError(
        "moeperm.torch.moe_permute_and_pad_with_probs: per-expert alignment padding "
        "(TransformerEngine's pad_offsets) is not supported: moeperm's rows follow Megatron's "
        "layout without padding between experts; pad the routing map instead "
        "(megatron.core.transformer.moe.moe_utils.pad_routing_map), then moe_permute_with_probs")
