"""The chunk sort (docs/sort_chunks.md): moeperm.sort_chunks / sort_chunks_grad from NumPy
and PyTorch against torch.split + torch.cat (Megatron-LM's unfused sort_chunks_by_idxs
formula, written here), bit for bit; autograd against autograd of that formula; the
patched moeperm.megatron.sort_chunks_by_idxs against Megatron-core's own function on the
expert-parallel shapes its AlltoAll dispatcher uses (sort by local expert, then restore);
the errors, with the operator's code and message; empty problems."""

import warnings

import numpy as np
import pytest
import torch

with warnings.catch_warnings():  # "Transformer Engine and Apex are not installed"
    warnings.simplefilter("ignore")
    from megatron.core.transformer.moe import moe_utils

import moeperm
import moeperm.megatron as mm


def split_cat(x, split_sizes, sorted_index):
    """The formula: chunks by split_sizes, concatenated in sorted_index's order."""
    chunks = torch.split(x, [int(n) for n in split_sizes], dim=0)
    return torch.cat([chunks[int(i)] for i in sorted_index], dim=0)


def random_chunks(T, S, gen):
    """S sizes summing to T (some empty) and a random order."""
    cuts = torch.sort(torch.randint(0, T + 1, (S - 1,), generator=gen)).values
    edges = torch.cat([torch.tensor([0]), cuts, torch.tensor([T])])
    return (edges[1:] - edges[:-1]), torch.randperm(S, generator=gen)


@pytest.mark.parametrize("T,H,S", [(1, 1, 1), (37, 19, 6), (300, 64, 32), (1031, 7, 97)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("probs_dtype", [None, torch.float32, "same"])
def test_sort_chunks_matches_split_and_cat(T, H, S, dtype, probs_dtype):
    gen = torch.Generator().manual_seed(T * 7 + H + S)
    x = torch.randn(T, H, generator=gen).to(dtype)
    probs = None
    if probs_dtype is not None:
        probs = torch.rand(T, generator=gen).to(dtype if probs_dtype == "same" else probs_dtype)
    sizes, order = random_chunks(T, S, gen)
    y, yp = moeperm.sort_chunks(x, sizes, order, probs)
    assert torch.equal(y, split_cat(x, sizes, order))
    assert (yp is None) == (probs is None)
    if probs is not None:
        assert yp.dtype == probs.dtype and torch.equal(yp, split_cat(probs, sizes, order))
    back, back_probs = moeperm.sort_chunks_grad(y, sizes, order, yp)
    assert torch.equal(back, x)
    if probs is not None:
        assert torch.equal(back_probs, probs)


def test_numpy_lists_and_strided_tensors():
    gen = torch.Generator().manual_seed(3)
    x = torch.randn(40, 10, generator=gen)
    sizes, order = random_chunks(40, 5, gen)
    want = split_cat(x, sizes, order)
    y, _ = moeperm.sort_chunks(x.numpy(), sizes.numpy(), order.numpy().astype(np.int16))
    assert isinstance(y, np.ndarray) and np.array_equal(y, want.numpy())
    y, _ = moeperm.sort_chunks(x, sizes.tolist(), order.tolist())
    assert torch.equal(y, want)
    wide = torch.randn(40, 20, generator=gen)
    y, _ = moeperm.sort_chunks(wide[:, ::2], sizes[None, :].expand(2, -1)[1], order)
    assert torch.equal(y, split_cat(wide[:, ::2], sizes, order))
    assert moeperm.infer_sort_chunks_outputs(x, sizes, order, torch.ones(40)) == {
        "sorted_tokens": ((40, 10), "float32"), "sorted_probs": ((40,), "float32")}


@pytest.mark.parametrize("dtype,probs_dtype", [(torch.bfloat16, torch.float32),
                                               (torch.float32, torch.float32)])
def test_autograd_matches_split_and_cat(dtype, probs_dtype):
    from moeperm._torch_ragged import SortChunks
    gen = torch.Generator().manual_seed(11)
    T, H, S = 203, 24, 12
    x0 = torch.randn(T, H, generator=gen).to(dtype)
    p0 = torch.rand(T, generator=gen).to(probs_dtype)
    sizes, order = random_chunks(T, S, gen)
    w = torch.randn(T, H, generator=gen).to(dtype)
    grads = []
    for ours in (True, False):
        x, p = x0.clone().requires_grad_(), p0.clone().requires_grad_()
        if ours:
            y, yp = SortChunks.apply(x, sizes.to(torch.int32), order.to(torch.int32), p)
        else:
            y, yp = split_cat(x, sizes, order), split_cat(p, sizes, order)
        ((y.float() * w.float()).sum() + (yp.float() * torch.arange(T)).sum()).backward()
        grads.append((x.grad, p.grad))
    assert torch.equal(grads[0][0], grads[1][0]) and torch.equal(grads[0][1], grads[1][1])


def ep_chunks(ep_size, num_local_experts, gen):
    """The AlltoAll dispatcher's chunks: tokens from each of ep_size ranks for each local
    expert ([ep, local] counts), sorted by local expert, then restored."""
    counts = torch.randint(0, 9, (ep_size, num_local_experts), generator=gen)
    counts[0, 0] = 0
    idx = torch.arange(ep_size * num_local_experts)
    sort_by_local = idx.reshape(ep_size, -1).T.ravel()
    restore = idx.reshape(num_local_experts, -1).T.ravel()
    return counts, sort_by_local, restore


@pytest.mark.parametrize("ep_size,num_local_experts", [(1, 4), (2, 3), (8, 8), (4, 1)])
@pytest.mark.parametrize("probs_shape", [None, "flat", "2d"])
def test_megatron_sort_chunks_by_idxs_matches_megatron(ep_size, num_local_experts, probs_shape):
    gen = torch.Generator().manual_seed(ep_size * 10 + num_local_experts)
    counts, sort_by_local, restore = ep_chunks(ep_size, num_local_experts, gen)
    N = int(counts.sum())
    x0 = torch.randn(N, 16, generator=gen).to(torch.bfloat16)
    p0 = None
    if probs_shape == "flat":
        p0 = torch.rand(N, generator=gen)
    elif probs_shape == "2d":
        p0 = torch.rand(N, 3, generator=gen)
    results = []
    for fn in (mm.sort_chunks_by_idxs, moe_utils.sort_chunks_by_idxs):
        x = x0.clone().requires_grad_()
        p = None if p0 is None else p0.clone().requires_grad_()
        y, yp = fn(x, counts.ravel(), sort_by_local, probs=p)
        back, _ = fn(y * 3, counts.T.ravel(), restore)  # the combine's restore
        loss = back.float().square().sum() + (0 if yp is None else (yp * yp).sum())
        loss.backward()
        results.append((y, yp, back, x.grad, None if p is None else p.grad))
    for ours, theirs in zip(*results):
        assert (ours is None) == (theirs is None)
        if ours is not None:
            assert torch.equal(ours, theirs)


def test_errors_name_the_operator_and_write_nothing():
    x = torch.randn(7, 3)
    with pytest.raises(moeperm.InvalidArgumentError, match="split_sizes sums to 8") as e:
        moeperm.sort_chunks(x, [3, 0, 4, 1], [0, 1, 2, 3])
    assert e.value.code == 161002
    with pytest.raises(ValueError, match=r"split_sizes\[1\] = -1 is negative"):
        moeperm.sort_chunks(x, [3, -1, 4, 1], [0, 1, 2, 3])
    with pytest.raises(ValueError, match=r"sorted_index\[2\] = 2 names the same chunk"):
        moeperm.sort_chunks(x, [3, 0, 3, 1], [2, 1, 2, 3])
    with pytest.raises(ValueError, match=r"sort_chunks: sorted_index holds values outside int32"):
        mm.sort_chunks_by_idxs(x, torch.tensor([7]), torch.tensor([2**40]))
    with pytest.raises(ValueError, match="split_sizes must hold integers"):
        moeperm.sort_chunks(x, torch.tensor([7.0]), [0])
    with pytest.raises(ValueError, match="moeperm::sort_chunks_grad: split_sizes sums to 6"):
        moeperm.sort_chunks_grad(x, [3, 3], [1, 0])
    with pytest.raises(ValueError, match=r"sort_chunks: probs has length 8, expected 7 \(one per row\)"):
        moeperm._moeperm.infer_sort_chunks(("float32", [7, 3]), ("int32", [2]), ("int32", [2]),
                                           ("float16", [8]), False)


def test_empty_problems():
    for T, H, S in [(0, 8, 3), (5, 0, 2), (0, 0, 1)]:
        x = torch.randn(T, H, requires_grad=True)
        sizes = torch.tensor([T] + [0] * (S - 1))
        y, yp = mm.sort_chunks_by_idxs(x, sizes, torch.arange(S).flip(0),
                                       probs=torch.ones(T, requires_grad=True))
        assert y.shape == (T, H) and yp.shape == (T,)
        (y.sum() + yp.sum()).backward()
        assert torch.equal(x.grad, torch.ones(T, H))
