"""moeperm.ragged_* (docs/ragged.md) from Python: NumPy and PyTorch inputs, the outputs'
shapes against infer_ragged_*_outputs, the backward operators against the forward's
definitions, and errors with the operator's code and message."""

import numpy as np
import pytest
import torch

import moeperm


def problem(T=9, E=4, H=6, seed=0):
    rng = np.random.default_rng(seed)
    tokens = rng.integers(-64, 64, size=(T, H)).astype(np.float32) / 8
    routing_map = rng.random((T, E)) < 0.5
    routing_map[0] = False  # a token with no expert
    probs = (rng.integers(1, 8, size=(T, E)) / 8 * routing_map).astype(np.float32)
    return tokens, routing_map, probs


def test_numpy_forward_matches_a_loop_and_infer_outputs():
    tokens, routing_map, probs = problem()
    y, yp, s = moeperm.ragged_permute(tokens, routing_map, probs)
    pairs = [(t, e) for e in range(4) for t in range(9) if routing_map[t, e]]
    assert isinstance(y, np.ndarray) and s.dtype == np.int32
    assert s.tolist() == [t for t, _ in pairs]
    assert np.array_equal(y, tokens[[t for t, _ in pairs]])
    assert np.array_equal(yp, np.array([probs[t, e] for t, e in pairs], dtype=np.float32))
    inferred = moeperm.infer_ragged_permute_outputs(tokens, routing_map, probs,
                                                    num_out_tokens=len(pairs))
    assert inferred == {"permuted_tokens": ((len(pairs), 6), "float32"),
                        "permuted_probs": ((len(pairs),), "float32"),
                        "sorted_indices": ((len(pairs),), "int32")}
    out = moeperm.ragged_unpermute(y, s, probs=probs, routing_map=routing_map)
    want = tokens * probs.sum(axis=1, keepdims=True)  # exact: multiples of 1/64
    assert np.array_equal(out, want)
    assert moeperm.infer_ragged_unpermute_outputs(y, s, (9, 6)) == {
        "unpermuted_tokens": ((9, 6), "float32")}


def test_backward_operators_from_python():
    tokens, routing_map, probs = problem(seed=1)
    y, yp, s = moeperm.ragged_permute(tokens, routing_map, probs)
    g = np.arange(y.size, dtype=np.float32).reshape(y.shape) / 16
    gp = np.arange(yp.size, dtype=np.float32)
    tg, pg = moeperm.ragged_permute_grad(g, s, 9, gp, routing_map)
    want = np.zeros_like(tokens)
    np.add.at(want, s, g)
    assert np.array_equal(tg, want)
    e_of = np.concatenate([[e] * int(routing_map[:, e].sum()) for e in range(4)])
    want_p = np.zeros_like(probs)
    want_p[s, e_of] = gp
    assert np.array_equal(pg, want_p)
    dx, dp = moeperm.ragged_unpermute_grad(tokens, s, routing_map, y, probs)
    assert np.array_equal(dx, tokens[s] * yp[:, None])
    assert np.allclose(dp[s, e_of], (tokens[s] * y).sum(axis=1), rtol=1e-6)
    assert np.count_nonzero(dp) <= len(s)
    # Without probs the gradient rows are copies and there is no probs gradient.
    dx, dp = moeperm.ragged_unpermute_grad(tokens, s)
    assert dp is None and np.array_equal(dx, tokens[s])


def test_torch_bfloat16_tokens_with_float32_probs_and_int32_map():
    tokens, routing_map, probs = problem(seed=2)
    t = torch.from_numpy(tokens).to(torch.bfloat16)
    y, yp, s = moeperm.ragged_permute(t, torch.from_numpy(routing_map).to(torch.int32),
                                      torch.from_numpy(probs))
    assert y.dtype == torch.bfloat16 and yp.dtype == torch.float32 and s.dtype == torch.int32
    out = moeperm.ragged_unpermute(y, s, probs=torch.from_numpy(probs),
                                   routing_map=torch.from_numpy(routing_map))
    assert out.dtype == torch.bfloat16
    assert torch.equal(out.float(), (t.float() * torch.from_numpy(probs).sum(1, keepdim=True))
                       .to(torch.bfloat16).float())


def test_errors_name_the_operator_and_the_argument():
    tokens, routing_map, probs = problem()
    with pytest.raises(moeperm.InvalidArgumentError,
                       match="routing_map must have dtype bool, int8, uint8 or int32, got float32"):
        moeperm.ragged_permute(tokens, routing_map.astype(np.float32))
    with pytest.raises(moeperm.InvalidArgumentError, match="num_out_tokens is required"):
        moeperm.ragged_permute(tokens, routing_map, drop_and_pad=True)
    y, _, s = moeperm.ragged_permute(tokens, routing_map)
    s[1] = 9
    with pytest.raises(moeperm.InvalidArgumentError,
                       match=r"moeperm::ragged_unpermute: sorted_indices\[1\] = 9"):
        moeperm.ragged_unpermute(y, s, (9, 6))
    with pytest.raises(moeperm.Error) as info:
        moeperm.ragged_unpermute(y, s)
    assert info.value.code == 161001
