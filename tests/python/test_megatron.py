"""moeperm.megatron against the real Megatron-core (megatron-core from PyPI, installed by
scripts/install-python-deps.sh): the patched permute and unpermute against Megatron's own
unfused moe_utils functions, forward and autograd, on routing maps made the way Megatron
makes them (top-k, moe_utils.apply_router_token_dropping with and without padding to
capacity, moe_utils.pad_routing_map for FP8, an expert-parallel rank's slice of the map),
and patch() / unpatch() where Megatron binds the names.

The permute moves data: its outputs must equal Megatron's bit for bit. The unpermute sums:
moeperm adds in float32 and rounds once, so it is compared with Megatron's formula run in
float64 on the same inputs, within half an output ulp plus float32's accumulation error.
Megatron-core's own AlltoAll token dispatcher runs under the patch in
test_megatron_dispatcher.py (two processes, gloo, CPU stand-ins for its CUDA streams).
"""

import warnings

import pytest
import torch

with warnings.catch_warnings():  # "Transformer Engine and Apex are not installed"
    warnings.simplefilter("ignore")
    from megatron.core.transformer.moe import moe_utils, token_dispatcher

import moeperm
import moeperm.megatron as mm

EPS = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-23}
SHAPES = [(1, 1, 1), (37, 6, 19), (256, 8, 64), (129, 33, 7)]  # (T, E, H)


def topk_routing(T, E, k, probs_dtype, gen):
    """Top-k routing as Megatron's router returns it: a bool map and probs that are the
    softmax scores of the selected experts, zero elsewhere."""
    scores = torch.rand(T, E, generator=gen).softmax(dim=-1)
    values, idx = torch.topk(scores, k=min(k, E), dim=1)
    routing_map = torch.zeros(T, E, dtype=torch.bool).scatter(1, idx, True)
    probs = torch.zeros(T, E).scatter(1, idx, values).to(probs_dtype)
    return routing_map, probs


def ragged_routing(T, E, probs_dtype, gen):
    """Any number of experts per token (0 .. E), as an expert-parallel rank sees them."""
    routing_map = torch.rand(T, E, generator=gen) < 0.35
    routing_map[::7] = False
    routing_map[3::11] = True
    probs = (torch.rand(T, E, generator=gen) * routing_map).to(probs_dtype)
    return routing_map, probs


def unpermute_bound(rows, sorted_indices, shape, probs, routing_map, drop_and_pad, dtype):
    """Half an output ulp (relative) of Megatron's float64 result plus float32's error on
    the sum of the terms' magnitudes."""
    exact = moe_utils.unpermute(rows.double(), sorted_indices.long(), shape,
                                probs=None if probs is None else probs.double(),
                                routing_map=routing_map, drop_and_pad=drop_and_pad)
    magnitude = moe_utils.unpermute(rows.double().abs(), sorted_indices.long(), shape,
                                    probs=None if probs is None else probs.double().abs(),
                                    routing_map=routing_map, drop_and_pad=drop_and_pad)
    return exact, EPS[dtype] * exact.abs() + 2.0**-20 * magnitude + 1e-30


def expect_unpermute_close(got, rows, sorted_indices, shape, probs, routing_map,
                           drop_and_pad=False):
    exact, bound = unpermute_bound(rows, sorted_indices, shape, probs, routing_map,
                                   drop_and_pad, got.dtype)
    err = (got.double() - exact).abs()
    assert bool((err <= bound).all()), f"max error {float((err - bound).max())} past the bound"


@pytest.mark.parametrize("T,E,H", SHAPES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("router", ["topk", "ragged"])
@pytest.mark.parametrize("probs_kind", ["none", "same", "fp32"])
def test_permute_and_unpermute_match_megatron(T, E, H, dtype, router, probs_kind):
    gen = torch.Generator().manual_seed(T * 131 + E * 7 + H)
    probs_dtype = torch.float32 if probs_kind == "fp32" else dtype
    routing_map, probs = (topk_routing(T, E, 2, probs_dtype, gen) if router == "topk"
                          else ragged_routing(T, E, probs_dtype, gen))
    probs = None if probs_kind == "none" else probs
    tokens = torch.randn(T, H, generator=gen).to(dtype)
    n = int(routing_map.sum())
    want = moe_utils.permute(tokens, routing_map, probs=probs, num_out_tokens=n)
    got = mm.permute(tokens, routing_map, probs=probs, num_out_tokens=n)
    assert torch.equal(got[0], want[0])
    assert torch.equal(got[2].long(), want[2])
    assert (got[1] is None) == (want[1] is None)
    if probs is not None:
        assert got[1].dtype == probs.dtype and torch.equal(got[1], want[1])
    rows = torch.randn(n, H, generator=gen).to(dtype)  # the experts' output
    out = mm.unpermute(rows, got[2], (T, H), probs=probs, routing_map=routing_map)
    assert out.dtype == dtype and out.shape == (T, H)
    expect_unpermute_close(out, rows, want[2], (T, H), probs, routing_map)


@pytest.mark.parametrize("T,E,H", SHAPES[1:])
@pytest.mark.parametrize("dtype,probs_dtype", [(torch.bfloat16, torch.float32),
                                               (torch.float32, torch.float32),
                                               (torch.float16, torch.float16)])
def test_autograd_matches_megatron(T, E, H, dtype, probs_dtype):
    gen = torch.Generator().manual_seed(T + E + H)
    routing_map, probs0 = ragged_routing(T, E, probs_dtype, gen)
    tokens0 = torch.randn(T, H, generator=gen).to(dtype)
    g_out = torch.randn(T, H, generator=gen).to(dtype)

    def layer(permute, unpermute, tokens, probs):
        y, yp, s = permute(tokens, routing_map, probs=probs,
                           num_out_tokens=int(routing_map.sum()))
        expert = y * 1.5 + yp.unsqueeze(1).to(y.dtype)  # uses both outputs
        return unpermute(expert, s, (T, H), probs=probs, routing_map=routing_map)

    tokens, probs = tokens0.clone().requires_grad_(), probs0.clone().requires_grad_()
    (layer(mm.permute, mm.unpermute, tokens, probs).float() * g_out.float()).sum().backward()
    ref_t, ref_p = tokens0.double().requires_grad_(), probs0.double().requires_grad_()
    (layer(moe_utils.permute, moe_utils.unpermute, ref_t, ref_p) * g_out.double()).sum().backward()
    assert tokens.grad.dtype == dtype and probs.grad.dtype == probs_dtype
    # Each gradient goes through one rounding of the token dtype on the way (the expert's
    # output, the rows' gradient) and float32 sums: a few ulps of the token dtype.
    tol = 8 * EPS[dtype]
    scale_t = ref_t.grad.abs().max().item() + 1
    scale_p = ref_p.grad.abs().max().item() + 1
    assert (tokens.grad.double() - ref_t.grad).abs().max().item() <= tol * scale_t
    assert (probs.grad.double() - ref_p.grad).abs().max().item() <= tol * scale_p
    assert bool((probs.grad[~routing_map] == 0).all())


def test_gradients_of_outputs_that_do_not_reach_the_loss():
    """Probs applied in the unpermute only (Megatron's default): the permuted probs get no
    gradient, the probs still do; and tokens whose permuted rows are unused get zeros."""
    gen = torch.Generator().manual_seed(3)
    routing_map, probs0 = ragged_routing(23, 5, torch.bfloat16, gen)
    tokens = torch.randn(23, 8, generator=gen).to(torch.bfloat16).requires_grad_()
    probs = probs0.clone().requires_grad_()
    y, _, s = mm.permute(tokens, routing_map, probs=probs)
    mm.unpermute(y * 2, s, (23, 8), probs=probs, routing_map=routing_map).sum().backward()
    assert probs.grad.dtype == torch.bfloat16 and tokens.grad.dtype == torch.bfloat16
    ref_p = probs0.double().requires_grad_()
    ref_t = tokens.detach().double().requires_grad_()
    ry, _, rs = moe_utils.permute(ref_t, routing_map, probs=ref_p)
    moe_utils.unpermute(ry * 2, rs, (23, 8), probs=ref_p, routing_map=routing_map).sum().backward()
    assert (probs.grad.double() - ref_p.grad).abs().max().item() <= 8 * EPS[torch.bfloat16] * (
        ref_p.grad.abs().max().item() + 1)
    _, yp, _ = mm.permute(tokens, routing_map, probs=probs)
    tokens.grad = probs.grad = None
    yp.sum().backward()  # only the permuted probs reach the loss
    assert torch.equal(tokens.grad, torch.zeros_like(tokens))
    assert torch.equal(probs.grad, routing_map.to(torch.bfloat16))


@pytest.mark.parametrize("capacity_factor", [0.5, 1.0, 1.7])
@pytest.mark.parametrize("pad_to_capacity", [False, True])
def test_capacity_dropping_matches_megatron(capacity_factor, pad_to_capacity):
    T, E, H, k = 96, 8, 33, 2
    gen = torch.Generator().manual_seed(int(capacity_factor * 10) + pad_to_capacity)
    routing_map, probs = topk_routing(T, E, k, torch.float32, gen)
    probs, routing_map = moe_utils.apply_router_token_dropping(
        probs, routing_map, router_topk=k, capacity_factor=capacity_factor,
        pad_to_capacity=pad_to_capacity)
    tokens = torch.randn(T, H, generator=gen).to(torch.bfloat16)
    if pad_to_capacity:  # Megatron's drop-and-pad path: exactly capacity tokens per expert
        capacity = moe_utils.get_capacity(T * k, E, capacity_factor)
        n = capacity * E
        assert bool((routing_map.sum(dim=0) == capacity).all())
    else:
        n = int(routing_map.sum())
    want = moe_utils.permute(tokens, routing_map, probs=probs, num_out_tokens=n,
                             drop_and_pad=pad_to_capacity)
    got = mm.permute(tokens, routing_map, probs=probs, num_out_tokens=n,
                     drop_and_pad=pad_to_capacity)
    assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    assert torch.equal(got[2].long(), want[2])
    rows = torch.randn(n, H, generator=gen).to(torch.bfloat16)
    out = mm.unpermute(rows, got[2], (T, H), probs=probs, routing_map=routing_map,
                       drop_and_pad=pad_to_capacity)
    expect_unpermute_close(out, rows, want[2], (T, H), probs, routing_map, pad_to_capacity)


def test_fp8_router_padding_matches_megatron():
    T, E, H = 77, 6, 16
    gen = torch.Generator().manual_seed(5)
    routing_map, _ = topk_routing(T, E, 2, torch.float32, gen)
    routing_map = moe_utils.pad_routing_map(routing_map, 16)
    assert bool((routing_map.sum(dim=0) % 16 == 0).all())
    tokens = torch.randn(T, H, generator=gen).to(torch.bfloat16)
    n = int(routing_map.sum())
    want = moe_utils.permute(tokens, routing_map, num_out_tokens=n)
    got = mm.permute(tokens, routing_map, num_out_tokens=n)
    assert torch.equal(got[0], want[0]) and torch.equal(got[2].long(), want[2])


def test_expert_parallel_slices_and_map_dtypes():
    """Each rank of 4 owns E/4 experts: its slice of the map gives tokens 0..E/4 experts.
    The rows of all slices, in rank order, are the whole map's rows; int8, uint8 and int32
    maps give the bool map's result."""
    T, E, H = 200, 16, 24
    gen = torch.Generator().manual_seed(9)
    routing_map, probs = topk_routing(T, E, 4, torch.float32, gen)
    tokens = torch.randn(T, H, generator=gen)
    whole = mm.permute(tokens, routing_map, probs=probs)
    parts = [mm.permute(tokens, routing_map[:, r * 4:(r + 1) * 4], probs=probs[:, r * 4:(r + 1) * 4])
             for r in range(4)]
    assert torch.equal(torch.cat([p[0] for p in parts]), whole[0])
    assert torch.equal(torch.cat([p[2] for p in parts]), whole[2])
    for dtype in (torch.int8, torch.uint8, torch.int32):
        as_ints = routing_map.to(dtype) * (7 if dtype != torch.int32 else 512)
        y, yp, s = moeperm.ragged_permute(tokens, as_ints, probs)
        assert torch.equal(y, whole[0]) and torch.equal(yp, whole[1]) and torch.equal(s, whole[2])


def test_empty_problems():
    for T, E, H in [(0, 4, 8), (5, 4, 0), (5, 3, 2)]:
        tokens = torch.randn(T, H, requires_grad=True)
        routing_map = torch.zeros(T, E, dtype=torch.bool)
        y, _, s = mm.permute(tokens, routing_map)
        assert y.shape == (0, H) and s.shape == (0,)
        out = mm.unpermute(y, s, (T, H))
        assert out.shape == (T, H) and bool((out == 0).all())
        out.sum().backward()
        assert torch.equal(tokens.grad, torch.zeros(T, H))


def test_fewer_rows_than_pairs_and_padding_rows():
    """num_out_tokens below / above the routed pairs (TransformerEngine's rule, through
    moeperm.ragged_permute): later pairs dropped, extra rows empty (-1, zeros)."""
    routing_map = torch.tensor([[1, 1], [0, 1], [1, 0]], dtype=torch.bool)
    tokens = torch.arange(6.0).reshape(3, 2)
    y, _, s = moeperm.ragged_permute(tokens, routing_map, num_out_tokens=3)
    assert s.tolist() == [0, 2, 0] and torch.equal(y, tokens[[0, 2, 0]])
    y, _, s = moeperm.ragged_permute(tokens, routing_map, num_out_tokens=6)
    assert s.tolist() == [0, 2, 0, 1, -1, -1] and bool((y[4:] == 0).all())
    out = moeperm.ragged_unpermute(y, s, restore_shape=(3, 2))
    assert torch.equal(out, tokens * torch.tensor([[2.0], [1.0], [1.0]]))


def test_patch_replaces_every_binding_and_unpatch_restores_them():
    original = (moe_utils.permute, moe_utils.unpermute, token_dispatcher.permute,
                token_dispatcher.unpermute)
    original_sort = (moe_utils.sort_chunks_by_idxs, token_dispatcher.sort_chunks_by_idxs)
    with mm.patch() as handle:
        assert moe_utils.permute is mm.permute and moe_utils.unpermute is mm.unpermute
        assert token_dispatcher.permute is mm.permute
        assert token_dispatcher.unpermute is mm.unpermute
        assert moe_utils.sort_chunks_by_idxs is mm.sort_chunks_by_idxs
        assert token_dispatcher.sort_chunks_by_idxs is mm.sort_chunks_by_idxs
        assert len(handle.replaced) >= 6
    assert (moe_utils.sort_chunks_by_idxs, token_dispatcher.sort_chunks_by_idxs) == original_sort
    assert (moe_utils.permute, moe_utils.unpermute, token_dispatcher.permute,
            token_dispatcher.unpermute) == original
    mm.patch()
    assert token_dispatcher.permute is mm.permute
    mm.unpatch()
    assert token_dispatcher.permute is original[2]
    mm.unpatch()  # nothing in force: a no-op
    assert moe_utils.permute is original[0]


def test_unpermute_needs_the_map_with_probs():
    with pytest.raises(ValueError, match="routing_map must be provided with probs"):
        mm.unpermute(torch.zeros(2, 3), torch.zeros(2, dtype=torch.int32), (2, 3),
                     probs=torch.ones(2, 2))


def test_readme_megatron_example_runs():
    """The README's moeperm.megatron example, executed as written (with its own asserts)."""
    from pathlib import Path

    readme = Path(__file__).resolve().parents[2] / "README.md"
    section = readme.read_text(encoding="utf-8").split("\n## Megatron-LM: ", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, f"{readme} (## Megatron-LM)", "exec"), {})
    assert moe_utils.permute is not mm.permute  # the example's patch was undone
