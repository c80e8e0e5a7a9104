"""Megatron-core's token permutation on moeperm: ``permute``, ``unpermute`` and
``sort_chunks_by_idxs`` with the signatures and semantics of
``megatron.core.transformer.moe.moe_utils``, and ``patch()``,
which puts them wherever Megatron-core has bound its own (its token dispatchers import the
names directly), as MindSpeed's fused-permute feature does for torch_npu:

    import moeperm.megatron
    with moeperm.megatron.patch():   # or moeperm.megatron.patch() ... moeperm.megatron.unpatch()
        output = moe_layer(hidden_states)

All are differentiable, and torch.compile(fullgraph=True) traces them: they are the custom
operators torch.ops.moeperm.ragged_* and sort_chunks (moeperm._torch_ragged_ops). permute and unpermute are built on the
ragged operators (docs/ragged.md): any number of experts per token, any float probs dtype
(``moe_router_dtype``) with any token dtype, bool / int8 / uint8 / int32 maps.
sort_chunks_by_idxs (expert parallelism's sort of the all-to-all's chunks by local expert)
is the sort_chunks operator (docs/sort_chunks.md): pure copies, so equal to Megatron's bit
for bit.

Differences from Megatron's unfused functions, all deliberate:
  * ``fused`` is accepted and ignored: these are the fused path.
  * sorted_indices is int32 (Megatron's is int64); ``unpermute`` takes either.
  * ``unpermute`` adds a token's rows in float32 in ascending row order and rounds once:
    deterministic, and at least as accurate as Megatron's scatter_add in the token dtype.
  * drop_and_pad: Megatron documents that each map column then has exactly `capacity`
    nonzeros (its router pads the map); there both agree bit for bit. Where a column has
    fewer, Megatron fills the spare rows with tokens the expert was not routed; moeperm
    leaves them empty (index -1, zeros), so no unrelated token reaches the expert.
"""

import math
import sys

import torch

from ._torch_ragged_ops import ragged_permute, ragged_unpermute, sort_chunks

__all__ = ["permute", "unpermute", "sort_chunks_by_idxs", "patch", "unpatch"]


def permute(tokens, routing_map, probs=None, num_out_tokens=None, fused=False,
            drop_and_pad=False):
    """megatron.core.transformer.moe.moe_utils.permute on moeperm: (permuted_input,
    permuted_probs or None, sorted_indices). Drop-less the rows are the routed pairs (as
    Megatron's unfused permute, which does not read num_out_tokens there); with drop_and_pad
    and num_out_tokens, capacity = num_out_tokens // num_experts rows per expert."""
    del fused  # moeperm is the fused path
    num_experts = routing_map.shape[1]
    if drop_and_pad and num_out_tokens is not None:
        rows = (int(num_out_tokens) // num_experts) * num_experts if num_experts else 0
    else:
        drop_and_pad = False
        rows = int(torch.count_nonzero(routing_map))
    return ragged_permute(tokens, routing_map, probs, rows, bool(drop_and_pad))


def unpermute(permuted_tokens, sorted_indices, restore_shape, probs=None, routing_map=None,
              fused=False, drop_and_pad=False):
    """megatron.core.transformer.moe.moe_utils.unpermute on moeperm: the rows summed back to
    their tokens, weighted by probs [T, E] when given (routing_map is then required, as in
    Megatron), in the dtype of permuted_tokens."""
    del fused
    if probs is not None and routing_map is None:
        raise ValueError("moeperm.megatron.unpermute: routing_map must be provided with probs "
                         "(Megatron's rule: it says which expert each row belongs to)")
    if sorted_indices.dtype != torch.int32:
        sorted_indices = sorted_indices.to(torch.int32)
    return ragged_unpermute(permuted_tokens, sorted_indices, restore_shape, probs, routing_map,
                            bool(drop_and_pad))


def sort_chunks_by_idxs(input, split_sizes, sorted_idxs, probs=None, fused=False):
    """megatron.core.transformer.moe.moe_utils.sort_chunks_by_idxs on moeperm: input's rows
    split into chunks of split_sizes rows and put in the order sorted_idxs gives, probs
    (any shape [N, ...], any float dtype) with them. Returns (output, permuted_probs or
    None)."""
    del fused  # moeperm is the fused path
    sizes = torch.as_tensor(split_sizes, device=input.device)
    order = torch.as_tensor(sorted_idxs, device=input.device)
    rows = input.shape[0]
    # The operator sorts [N, H] rows; other shapes are sorted as rows of their trailing
    # elements, and probs other than [N] as rows of their own.
    x = input.reshape(rows, math.prod(input.shape[1:]))
    flat_probs = probs is not None and probs.dim() == 1
    out, out_probs = sort_chunks(x, sizes, order, probs if flat_probs else None)
    if probs is not None and not flat_probs:
        out_probs, _ = sort_chunks(probs.reshape(rows, math.prod(probs.shape[1:])), sizes, order,
                                   None)
        out_probs = out_probs.reshape(probs.shape)
    return out.reshape(input.shape), out_probs


_REPLACED = ("permute", "unpermute", "sort_chunks_by_idxs")
_active = []  # the live patches, innermost last


class _Patch:
    """The replacements one patch() made: (module, name, original) triples; a context
    manager that undoes them on exit."""

    def __init__(self, replaced):
        self.replaced = replaced

    def undo(self):
        for module, name, original in reversed(self.replaced):
            setattr(module, name, original)
        self.replaced = []
        if self in _active:
            _active.remove(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.undo()
        return False


def patch():
    """Replaces Megatron-core's moe_utils.permute, unpermute and sort_chunks_by_idxs with
    moeperm's in moe_utils
    and in every loaded megatron module that bound them by name (the token dispatchers are
    imported first, so theirs are among them). Returns a handle; use it as a context
    manager, or call unpatch()."""
    from megatron.core.transformer.moe import moe_utils
    import megatron.core.transformer.moe.token_dispatcher  # noqa: F401  (binds the names)
    ours = {"permute": permute, "unpermute": unpermute, "sort_chunks_by_idxs": sort_chunks_by_idxs}
    originals = {name: getattr(moe_utils, name) for name in _REPLACED}
    replaced = []
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("megatron"):
            continue
        for name in _REPLACED:
            if getattr(module, name, None) is originals[name]:
                replaced.append((module, name, originals[name]))
                setattr(module, name, ours[name])
    handle = _Patch(replaced)
    _active.append(handle)
    return handle


def unpatch():
    """Undoes the most recent patch() that is still in force (no-op without one)."""
    if _active:
        _active[-1].undo()
