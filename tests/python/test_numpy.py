"""NumPy inputs: outputs are NumPy arrays, equal bit for bit to the results on the same data
as PyTorch tensors (themselves checked against the reference in test_permute.py).
float32 / float16 natively, bfloat16 through ml_dtypes (NumPy cannot export that dtype
through DLPack, so moeperm passes a uint16 view of it and says it is bfloat16)."""

import ml_dtypes
import numpy as np
import pytest
import torch

import moeperm
from moe_reference import megatron_permute, random_case, spec_order_tokens_grad

NUMPY_DTYPES = {  # name: (torch dtype, numpy dtype)
    "f32": (torch.float32, np.float32),
    "f16": (torch.float16, np.float16),
    "bf16": (torch.bfloat16, ml_dtypes.bfloat16),
}


def to_numpy(t, np_dtype):
    if t is None:
        return None
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np_dtype)
    return t.numpy().astype(np_dtype, copy=False)


def to_torch(a):
    if a.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(a.view(np.int16).copy()).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(a))


@pytest.fixture(autouse=True)
def poisoned_allocations(monkeypatch):
    """np.empty (moeperm's NumPy output allocator) returns garbage-filled arrays."""
    real_empty = np.empty

    def poisoned(shape, dtype=float, *args, **kwargs):
        out = real_empty(shape, dtype, *args, **kwargs)
        out.view(np.uint8)[...] = 0x7F  # NaN-like / large values in every dtype
        return out

    monkeypatch.setattr(np, "empty", poisoned)


@pytest.mark.parametrize("map_dtype", [np.bool_, np.int8], ids=["bool", "int8"])
@pytest.mark.parametrize("name", list(NUMPY_DTYPES))
@pytest.mark.parametrize("drop_and_pad", [False, True], ids=["dropless", "droppad"])
def test_numpy_matches_torch(drop_and_pad, name, map_dtype):
    torch_dtype, np_dtype = NUMPY_DTYPES[name]
    for seed in range(3):
        case = random_case(31 * seed + 5, drop_and_pad, torch_dtype, torch_dtype, torch.bool, True)
        n = case["num_out_tokens"]
        tokens, probs = to_numpy(case["tokens"], np_dtype), to_numpy(case["probs"], np_dtype)
        routing_map = case["routing_map"].numpy().astype(map_dtype)
        permuted, permuted_probs, s = moeperm.permute_with_routing_map(tokens, routing_map, probs,
                                                                       n, drop_and_pad)
        assert isinstance(permuted, np.ndarray) and permuted.dtype == np_dtype
        assert permuted_probs.dtype == np_dtype and s.dtype == np.int32
        ref = megatron_permute(case["tokens"], case["routing_map"], case["probs"], n, drop_and_pad)
        assert torch.equal(to_torch(permuted), ref[0])
        assert torch.equal(to_torch(permuted_probs), ref[1])
        assert torch.equal(to_torch(s).long(), ref[2])

        grad, probs_grad = to_numpy(case["grad"], np_dtype), to_numpy(case["probs_grad"], np_dtype)
        num_tokens, num_experts = case["routing_map"].shape
        tokens_grad, probs_grad_out = moeperm.permute_with_routing_map_grad(
            grad, probs_grad, s, routing_map, num_experts, num_tokens, drop_and_pad)
        assert tokens_grad.dtype == np_dtype and probs_grad_out.dtype == np_dtype
        want_grad, want_probs_grad = moeperm.permute_with_routing_map_grad(
            case["grad"], case["probs_grad"], to_torch(s), case["routing_map"], num_experts,
            num_tokens, drop_and_pad)
        assert torch.equal(to_torch(tokens_grad), want_grad)
        assert torch.equal(to_torch(tokens_grad),
                           spec_order_tokens_grad(case["grad"], to_torch(s), num_tokens,
                                                  drop_and_pad))
        assert torch.equal(to_torch(probs_grad_out), want_probs_grad)


@pytest.mark.parametrize("name", list(NUMPY_DTYPES))
def test_numpy_strided_views(name):
    """Transposed, sliced and reversed (negative-stride) NumPy views, read in place."""
    _, np_dtype = NUMPY_DTYPES[name]
    rng = np.random.default_rng(3)
    t, e, h = 9, 4, 5
    tokens_t = rng.standard_normal((h, t)).astype(np.float32).astype(np_dtype)
    tokens = tokens_t.T  # column-major view
    big_map = rng.random((t, 2 * e)) < 0.5
    routing_map = big_map[::-1, ::2]  # negative row stride, every other column
    probs = rng.random((t, e)).astype(np.float32).astype(np_dtype)[::-1]
    assert not tokens.flags.c_contiguous and routing_map.strides[0] < 0
    n = t * e
    got = moeperm.permute_with_routing_map(tokens, routing_map, probs, n)
    want = moeperm.permute_with_routing_map(np.ascontiguousarray(tokens),
                                            np.ascontiguousarray(routing_map),
                                            np.ascontiguousarray(probs), n)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and np.array_equal(g.view(np.uint8), w.view(np.uint8))


def test_read_only_and_broadcast_inputs():
    tokens = np.broadcast_to(np.arange(3, dtype=np.float32), (5, 3))  # stride 0, read-only
    routing_map = np.ones((5, 2), dtype=np.bool_)
    routing_map.flags.writeable = False
    permuted, _, s = moeperm.permute_with_routing_map(tokens, routing_map, num_out_tokens=10)
    assert np.array_equal(permuted, np.broadcast_to(np.arange(3, dtype=np.float32), (10, 3)))
    assert s.tolist() == [0, 5, 1, 6, 2, 7, 3, 8, 4, 9]


def test_other_dlpack_producers_get_numpy_outputs():
    class Producer:  # a minimal DLPack producer that is neither NumPy nor PyTorch
        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    tokens = np.arange(6, dtype=np.float32).reshape(3, 2)
    routing_map = np.ones((3, 2), dtype=np.bool_)
    permuted, _, s = moeperm.permute_with_routing_map(Producer(tokens), Producer(routing_map),
                                                      num_out_tokens=6)
    assert isinstance(permuted, np.ndarray)
    assert s.tolist() == [0, 3, 1, 4, 2, 5]
    assert np.array_equal(permuted, tokens[[0, 1, 2, 0, 1, 2]])
