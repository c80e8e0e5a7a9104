"""The operators on PyTorch CPU tensors against the reference (moe_reference.py): random
problems of odd sizes, both modes, every dtype combination, bool and int8 routing maps,
with and without probs; strided inputs; thread-count determinism."""

import math

import pytest
import torch

import moeperm
from moe_reference import (DTYPES, assert_within_rounding, autograd_reference, max_terms,
                           megatron_permute, random_case, spec_order_tokens_grad)


@pytest.fixture(autouse=True)
def poisoned_allocations(monkeypatch):
    """Every torch.empty (moeperm allocates its outputs and workspace with it) returns
    memory full of garbage, so an element the operator fails to write shows up."""
    real_empty = torch.empty

    def poisoned(*args, **kwargs):
        out = real_empty(*args, **kwargs)
        if out.dtype.is_floating_point:
            out.fill_(math.nan)
        elif out.dtype == torch.bool:
            out.fill_(True)
        else:
            out.fill_(0x5A)
        return out

    monkeypatch.setattr(torch, "empty", poisoned)


def check_case(case):
    tokens, routing_map, probs = case["tokens"], case["routing_map"], case["probs"]
    n, dap = case["num_out_tokens"], case["drop_and_pad"]
    permuted, permuted_probs, sorted_indices = moeperm.permute_with_routing_map(
        tokens, routing_map, probs, num_out_tokens=n, drop_and_pad=dap)
    ref_permuted, ref_probs, ref_indices = megatron_permute(tokens, routing_map, probs, n, dap)

    # Forward: pure data movement, bit for bit (zero rows included; NaN poison fails equal).
    assert sorted_indices.dtype == torch.int32
    assert torch.equal(sorted_indices.long(), ref_indices)
    assert permuted.dtype == tokens.dtype and torch.equal(permuted, ref_permuted)
    if probs is None:
        assert permuted_probs is None
    else:
        assert permuted_probs.dtype == probs.dtype and torch.equal(permuted_probs, ref_probs)

    # Backward.
    grad, probs_grad = case["grad"], case["probs_grad"]
    num_tokens, num_experts = tokens.shape[0], routing_map.shape[1]
    tokens_grad, probs_grad_out = moeperm.permute_with_routing_map_grad(
        grad, probs_grad, sorted_indices, routing_map if probs is not None else None,
        num_experts, num_tokens, dap)
    ref_tokens_grad, ref_probs_grad, abs_sum = autograd_reference(
        tokens, routing_map, probs, n, dap, grad, probs_grad)
    assert tokens_grad.dtype == grad.dtype and tokens_grad.shape == tokens.shape
    # SPEC §4 order and rounding: exact; and the sums are those of autograd (in float64).
    assert torch.equal(tokens_grad, spec_order_tokens_grad(grad, sorted_indices, num_tokens, dap))
    assert_within_rounding(tokens_grad, ref_tokens_grad, abs_sum,
                           max_terms(sorted_indices, num_tokens, dap))
    if probs is None:
        assert probs_grad_out is None
    else:
        # A scatter of P: exact.
        assert probs_grad_out.dtype == probs.dtype
        assert torch.equal(probs_grad_out, ref_probs_grad.to(probs.dtype))


@pytest.mark.parametrize("with_probs", [True, False], ids=["probs", "noprobs"])
@pytest.mark.parametrize("map_dtype", [torch.bool, torch.int8], ids=["bool", "int8"])
@pytest.mark.parametrize("dtypes", list(DTYPES), ids=list(DTYPES))
@pytest.mark.parametrize("drop_and_pad", [False, True], ids=["dropless", "droppad"])
def test_random_problems(drop_and_pad, dtypes, map_dtype, with_probs):
    dtype, probs_dtype = DTYPES[dtypes]
    for seed in range(4):
        case = random_case(1000 * seed + 17, drop_and_pad, dtype, probs_dtype, map_dtype, with_probs)
        check_case(case)


def test_reference_reproduces_the_spec_worked_example():
    # SPEC §2: T=3, E=2, all routed, numOutTokens=6, drop-less.
    x = torch.arange(3.0).unsqueeze(1)
    permuted, _, s = megatron_permute(x, torch.ones(3, 2, dtype=torch.bool), None, 6, False)
    assert s.tolist() == [0, 3, 1, 4, 2, 5]
    assert permuted.flatten().tolist() == [0, 1, 2, 0, 1, 2]
    ours = moeperm.permute_with_routing_map(x, torch.ones(3, 2, dtype=torch.bool), None, 6)
    assert ours[2].tolist() == [0, 3, 1, 4, 2, 5]


def test_default_num_out_tokens_is_tokens_times_the_most_experts_of_a_token():
    tokens = torch.randn(4, 3)
    routing_map = torch.tensor([[1, 1, 0], [0, 1, 0], [0, 0, 0], [1, 1, 1]], dtype=torch.int8)
    permuted, _, s = moeperm.permute_with_routing_map(tokens, routing_map)
    assert permuted.shape == (12, 3)
    ref_permuted, _, ref_s = megatron_permute(tokens, routing_map, None, 12, False)
    assert torch.equal(s.long(), ref_s) and torch.equal(permuted, ref_permuted)
    # A token with no experts: -1 in all of its slots.
    assert s[6:9].tolist() == [-1, -1, -1]


def strided(t, kind):
    """The same values as t in a non-contiguous view with a storage offset: a 2-D tensor
    'transposed' (column-major storage) or 'sliced' (every other row, every third column of
    a larger buffer); a 1-D tensor every other element of a larger buffer."""
    if t.dim() == 1:
        base = torch.zeros(2 * t.shape[0] + 1, dtype=t.dtype)
        view = base[1::2]
    elif kind == "transposed":
        base = torch.zeros((t.shape[1] + 1, t.shape[0]), dtype=t.dtype)
        view = base[1:].T
    elif kind == "sliced":
        base = torch.zeros((2 * t.shape[0] + 1, 3 * t.shape[1]), dtype=t.dtype)
        view = base[1::2, ::3]
    else:
        raise ValueError(kind)
    view.copy_(t)
    assert not view.is_contiguous() and view.storage_offset() > 0
    assert torch.equal(view, t)
    return view


@pytest.mark.parametrize("drop_and_pad", [False, True], ids=["dropless", "droppad"])
@pytest.mark.parametrize("kind", ["transposed", "sliced"])
def test_strided_inputs_give_the_contiguous_results(drop_and_pad, kind):
    for seed in range(100):  # sizes where every view is really strided
        case = random_case(seed, drop_and_pad, torch.bfloat16, torch.float32, torch.int8, True)
        if min(case["tokens"].shape + case["routing_map"].shape + case["grad"].shape) >= 2:
            break
    tokens, routing_map, probs = case["tokens"], case["routing_map"], case["probs"]
    n = case["num_out_tokens"]
    want = moeperm.permute_with_routing_map(tokens, routing_map, probs, n, drop_and_pad)
    got = moeperm.permute_with_routing_map(strided(tokens, kind), strided(routing_map, kind),
                                           strided(probs, kind), n, drop_and_pad)
    for w, g in zip(want, got):
        assert g.is_contiguous() and torch.equal(w, g)

    s = want[2]
    args = (case["grad"], case["probs_grad"], s, routing_map)
    want_grad = moeperm.permute_with_routing_map_grad(*args, routing_map.shape[1],
                                                      tokens.shape[0], drop_and_pad)
    strided_args = [strided(a, kind) for a in args]
    got_grad = moeperm.permute_with_routing_map_grad(*strided_args, routing_map.shape[1],
                                                     tokens.shape[0], drop_and_pad)
    for w, g in zip(want_grad, got_grad):
        assert torch.equal(w, g)


def test_stride_zero_gradient():
    # An expanded (stride-0) gradient, as autograd hands over for a sum: accepted as is.
    tokens = torch.randn(6, 4)
    routing_map = torch.rand(6, 3) < 0.5
    routing_map[:, 0] = True
    _, _, s = moeperm.permute_with_routing_map(tokens, routing_map, num_out_tokens=18)
    grad = torch.tensor(0.5).expand(18, 4)
    tokens_grad, _ = moeperm.permute_with_routing_map_grad(grad, None, s, None, 3, 6, False)
    assert torch.equal(tokens_grad, 0.5 * routing_map.sum(1, keepdim=True).float().expand(6, 4))


def test_results_do_not_depend_on_the_thread_count():
    case = random_case(99, False, torch.bfloat16, torch.bfloat16, torch.bool, True)
    before = moeperm.get_num_threads()
    try:
        results = []
        for threads in (1, 2, 3):
            moeperm.set_num_threads(threads)
            out = moeperm.permute_with_routing_map(case["tokens"], case["routing_map"],
                                                   case["probs"], case["num_out_tokens"])
            grads = moeperm.permute_with_routing_map_grad(
                case["grad"], case["probs_grad"], out[2], case["routing_map"],
                case["routing_map"].shape[1], case["tokens"].shape[0], False)
            results.append(out + grads)
        for other in results[1:]:
            assert all(torch.equal(a, b) for a, b in zip(results[0], other))
    finally:
        moeperm.set_num_threads(0 if before <= 0 else before)


def test_empty_problems():
    tokens = torch.randn(5, 0)
    routing_map = torch.ones(5, 2, dtype=torch.bool)
    permuted, _, s = moeperm.permute_with_routing_map(tokens, routing_map, num_out_tokens=10)
    assert permuted.shape == (10, 0) and s.shape == (10,)
    tokens_grad, _ = moeperm.permute_with_routing_map_grad(torch.randn(10, 0), None, s, None,
                                                           2, 5, False)
    assert tokens_grad.shape == (5, 0)
    # R = 0: capacity 0 gives zeroed gradients.
    tokens_grad, probs_grad = moeperm.permute_with_routing_map_grad(
        torch.randn(0, 3), torch.randn(0), torch.zeros(0, dtype=torch.int32), routing_map, 2, 5,
        True)
    assert torch.equal(tokens_grad, torch.zeros(5, 3)) and torch.equal(probs_grad,
                                                                       torch.zeros(5, 2))
