"""Python plans from the library: moeperm.infer_outputs (moeperm::infer_outputs through the
binding) against SPEC's own formulas, against what the operators really return (eager and in
PyTorch's fake-tensor mode, where the custom operators' fake implementations answer), and
with the operator's errors; the probs-grad zero fill done by the operator."""

import math
import random

import numpy as np
import pytest
import torch

import moeperm
import moeperm.torch as mt

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def spec_rows(T, E, num_out_tokens, drop_and_pad):
    """R by SPEC §2, written out here independently of the library."""
    if drop_and_pad:
        return E * (num_out_tokens // E)
    return T * (num_out_tokens // T) if T else 0


def random_problem(rng):
    """A valid forward problem of odd sizes: (tokens, routing_map, probs, n, drop_and_pad)."""
    T, E, H = rng.randint(1, 13), rng.randint(1, 9), rng.randint(1, 11)
    dtype = rng.choice(DTYPES)
    dap = rng.random() < 0.5
    gen = torch.Generator().manual_seed(rng.randint(0, 2**31))
    tokens = torch.randn(T, H, generator=gen).to(dtype)
    if dap:
        routing_map = torch.rand(T, E, generator=gen) < 0.4
        n = E * rng.randint(0, T)
    else:
        K = rng.randint(1, E)
        ranks = torch.rand(T, E, generator=gen).argsort(dim=1)
        routing_map = ranks < K
        n = T * K
    if rng.random() < 0.5:
        routing_map = routing_map.to(torch.int8)
    probs = None
    if rng.random() < 0.7:
        pdt = torch.float32 if dtype == torch.bfloat16 and rng.random() < 0.5 else dtype
        probs = torch.rand(T, E, generator=gen).to(pdt)
    return tokens, routing_map, probs, n, dap


def shapes_of(tensors):
    return {name: (tuple(t.shape), str(t.dtype).split(".")[-1])
            for name, t in tensors.items() if t is not None}


@pytest.mark.parametrize("seed", range(40))
def test_forward_outputs_match_infer_outputs_and_spec(seed):
    rng = random.Random(seed)
    tokens, routing_map, probs, n, dap = random_problem(rng)
    T, H = tokens.shape
    E = routing_map.shape[1]
    inferred = moeperm.infer_outputs("permute", tokens, routing_map, probs, n, dap)

    R = spec_rows(T, E, n, dap)
    want = {"permuted_tokens": ((R, H), str(tokens.dtype).split(".")[-1]),
            "sorted_indices": ((R,), "int32")}
    if probs is not None:
        want["permuted_probs"] = ((R,), str(probs.dtype).split(".")[-1])
    assert inferred == want

    permuted, permuted_probs, sorted_indices = moeperm.permute_with_routing_map(
        tokens, routing_map, probs, n, dap)
    assert shapes_of({"permuted_tokens": permuted, "permuted_probs": permuted_probs,
                      "sorted_indices": sorted_indices}) == inferred

    # The fake implementation (torch.compile's view of the operator) answers the same.
    if mt.custom_ops_registered():
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode() as mode:
            fake = [mode.from_tensor(x) if x is not None else None
                    for x in (tokens, routing_map, probs)]
            out = torch.ops.moeperm.permute_with_routing_map(*fake, n, dap)
        got = shapes_of({"permuted_tokens": out[0], "sorted_indices": out[2]})
        if probs is not None:
            got.update(shapes_of({"permuted_probs": out[1]}))
        assert got == inferred


@pytest.mark.parametrize("seed", range(30))
def test_grad_outputs_match_infer_outputs_and_spec(seed):
    rng = random.Random(1000 + seed)
    tokens, routing_map, probs, n, dap = random_problem(rng)
    T, H = tokens.shape
    E = routing_map.shape[1]
    _, permuted_probs, sorted_indices = moeperm.permute_with_routing_map(
        tokens, routing_map, probs, n, dap)
    R = sorted_indices.shape[0]
    g = torch.randn(R, H).to(tokens.dtype)
    p = torch.randn(R).to(probs.dtype) if probs is not None else None
    m = routing_map if probs is not None else None
    # Without P, ask for a zero probs-grad half of the time, in a probs dtype for G (SPEC §5).
    allowed = [g.dtype] + ([torch.float32] if g.dtype == torch.bfloat16 else [])
    zero_dtype = rng.choice([None] + allowed) if p is None else None
    inferred = moeperm.infer_outputs("permute_grad", g, p, sorted_indices, m, E, T, dap,
                                     zero_dtype)

    want = {"tokens_grad": ((T, H), str(g.dtype).split(".")[-1])}
    probs_dtype = p.dtype if p is not None else zero_dtype
    if probs_dtype is not None:
        want["probs_grad"] = ((T, E), str(probs_dtype).split(".")[-1])
    assert inferred == want

    tokens_grad, probs_grad = moeperm.permute_with_routing_map_grad(
        g, p, sorted_indices, m, E, T, dap, zero_dtype)
    assert shapes_of({"tokens_grad": tokens_grad, "probs_grad": probs_grad}) == inferred

    if mt.custom_ops_registered():
        from torch._subclasses.fake_tensor import FakeTensorMode
        with FakeTensorMode() as mode:
            fake = [mode.from_tensor(x) if x is not None else None
                    for x in (g, p, sorted_indices, m)]
            out = torch.ops.moeperm.permute_with_routing_map_grad(*fake, E, T, dap, zero_dtype)
        got = shapes_of({"tokens_grad": out[0]})
        if probs_dtype is not None:
            got.update(shapes_of({"probs_grad": out[1]}))
        assert got == inferred


def test_infer_outputs_raises_the_operators_error():
    tokens = torch.randn(4, 3)
    routing_map = torch.zeros(4, 5, dtype=torch.bool)
    bad_probs = torch.rand(4, 5, dtype=torch.float16)  # fp16 probs with fp32 tokens
    with pytest.raises(moeperm.InvalidArgumentError) as inferred:
        moeperm.infer_outputs("permute", tokens, routing_map, bad_probs, 8)
    with pytest.raises(moeperm.InvalidArgumentError) as ran:
        moeperm.permute_with_routing_map(tokens, routing_map, bad_probs, 8)
    assert inferred.value.code == ran.value.code == 161002
    assert str(inferred.value) == str(ran.value)
    with pytest.raises(ValueError, match="operator must be one of"):
        moeperm.infer_outputs("unpermute_typo", tokens, routing_map)


def test_numpy_inputs_infer_like_torch():
    tokens = np.zeros((6, 4), np.float16)
    routing_map = np.ones((6, 3), np.bool_)
    assert moeperm.infer_outputs("permute", tokens, routing_map, None, 12) == {
        "permuted_tokens": ((12, 4), "float16"), "sorted_indices": ((12,), "int32")}


def test_probs_grad_without_p_is_zero_filled_by_the_operator(monkeypatch):
    """The zero probs-grad comes from the operator (SPEC §3), into memory poisoned first."""
    real_empty = torch.empty

    def poisoned(*args, **kwargs):
        out = real_empty(*args, **kwargs)
        if out.dtype.is_floating_point:
            out.fill_(math.nan)
        return out

    monkeypatch.setattr(torch, "empty", poisoned)
    T, E, H, K = 5, 4, 3, 2
    tokens = torch.randn(T, H, dtype=torch.bfloat16)
    routing_map = torch.rand(T, E).argsort(dim=1) < K
    _, _, s = moeperm.permute_with_routing_map(tokens, routing_map, None, T * K)
    g = torch.randn(T * K, H, dtype=torch.bfloat16)
    tokens_grad, probs_grad = moeperm.permute_with_routing_map_grad(
        g, None, s, routing_map, E, T, False, torch.float32)  # fp32 probs with bf16 values
    assert probs_grad.dtype == torch.float32 and probs_grad.shape == (T, E)
    assert torch.equal(probs_grad, torch.zeros(T, E))
    assert not torch.isnan(tokens_grad).any()

    # Through autograd, with permuted_probs unused: probs' gradient is zero (autograd hands
    # the backward a materialised zero gradient for permuted_probs).
    x = tokens.float().requires_grad_()
    probs = torch.rand(T, E, dtype=torch.float32).requires_grad_()
    permuted, _, _ = mt.permute_with_routing_map(x, routing_map, probs, T * K)
    permuted.sum().backward()
    assert probs.grad is not None and torch.equal(probs.grad, torch.zeros(T, E))
