"""TransformerEngine's names in moeperm.torch (moeperm._torch_te) with TransformerEngine's
semantics: moe_permute / moe_permute_with_probs against Megatron-core's unfused permute (the
same mask-map semantics) bit for bit, with row_id_map in TransformerEngine's [E, T] layout
built here by a loop; moe_unpermute against the float64 formula within half an output ulp
plus float32's accumulation error; autograd of the whole path against float64 autograd of
the formula; moe_sort_chunks_by_index(_with_probs) against torch.split + torch.cat;
torch.compile(fullgraph=True) through a TransformerEngine-style MoE step (one graph, our
custom operators in it); opcheck of the custom operators; empty inputs; the clear errors
where TransformerEngine cannot be matched (FP8, map_type='index', pad_offsets)."""

import warnings

import pytest
import torch

with warnings.catch_warnings():  # "Transformer Engine and Apex are not installed"
    warnings.simplefilter("ignore")
    from megatron.core.transformer.moe import moe_utils

import moeperm.torch as mt

needs_custom_ops = pytest.mark.skipif(not mt.custom_ops_registered(),
                                      reason="torch.library.custom_op needs PyTorch >= 2.4")
EPS = {torch.bfloat16: 2.0**-8, torch.float16: 2.0**-11, torch.float32: 2.0**-23}


def routing(T, E, kind, gen, map_dtype=torch.bool):
    if kind == "topk":
        idx = torch.rand(T, E, generator=gen).topk(min(2, E), dim=1).indices
        m = torch.zeros(T, E, dtype=torch.bool).scatter(1, idx, True)
    else:  # any number of experts per token, as an expert-parallel rank sees them
        m = torch.rand(T, E, generator=gen) < 0.4
        m[::5] = False
        m[2::7] = True
    return m.to(map_dtype)


def te_row_id_map(routing_map, rows):
    """The [E, T] layout by a loop: expert-major rows, tokens ascending; -1 past `rows`."""
    T, E = routing_map.shape
    out = torch.full((E, T), -1, dtype=torch.int32)
    r = 0
    for e in range(E):
        for t in range(T):
            if routing_map[t, e]:
                if r < rows:
                    out[e, t] = r
                r += 1
    return out


def unpermute_oracle(x, row_id_map, probs, T, H):
    """float64 out[t] = sum over e of x[row(e, t)] (* probs[t, e]), and the bound."""
    out = torch.zeros(T, H, dtype=torch.float64)
    mag = torch.zeros(T, H, dtype=torch.float64)
    for e in range(row_id_map.shape[0]):
        for t in range(T):
            r = int(row_id_map[e, t])
            if r >= 0:
                v = x[r].double() * (1.0 if probs is None else float(probs[t, e]))
                out[t] += v
                mag[t] += v.abs()
    return out, EPS[x.dtype] * out.abs() + 2.0**-20 * mag + 1e-30


@pytest.mark.parametrize("T,E,H", [(1, 1, 3), (37, 6, 19), (129, 33, 8)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("kind", ["topk", "ragged"])
@pytest.mark.parametrize("map_dtype", [torch.bool, torch.int32])
def test_permute_and_unpermute_match(T, E, H, dtype, kind, map_dtype):
    gen = torch.Generator().manual_seed(T * 31 + E + H)
    m = routing(T, E, kind, gen, map_dtype)
    x = torch.randn(T, H, generator=gen).to(dtype)
    probs = torch.rand(T, E, generator=gen) * (m != 0)
    pairs = int(torch.count_nonzero(m))
    want_rows, want_probs, _ = moe_utils.permute(x, m.bool(), probs=probs)
    rows, row_id_map = mt.moe_permute(x, m)
    assert torch.equal(rows, want_rows) and torch.equal(row_id_map, te_row_id_map(m, pairs))
    rows, rows_probs, row_id_map = mt.moe_permute_with_probs(x, probs, m, num_out_tokens=pairs)
    assert torch.equal(rows, want_rows) and torch.equal(rows_probs, want_probs)
    for merging in (None, probs):
        out = mt.moe_unpermute(rows, row_id_map, merging_probs=merging, restore_shape=(T, H))
        want, bound = unpermute_oracle(rows, row_id_map, merging, T, H)
        assert out.dtype == dtype and bool(((out.double() - want).abs() <= bound).all())
    # Fewer rows than pairs: the pairs past num_out_tokens are dropped (and -1 in the map).
    keep = pairs // 2
    rows, row_id_map = mt.moe_permute(x, m, num_out_tokens=keep)
    assert torch.equal(rows, want_rows[:keep]) and torch.equal(row_id_map, te_row_id_map(m, keep))
    out = mt.moe_unpermute(rows, row_id_map, probs, (T, H))
    want, bound = unpermute_oracle(rows, row_id_map, probs, T, H)
    assert bool(((out.double() - want).abs() <= bound).all())


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_autograd_of_the_path_matches_float64(dtype):
    gen = torch.Generator().manual_seed(5)
    T, E, H = 45, 7, 12
    m = routing(T, E, "ragged", gen)
    x0 = torch.randn(T, H, generator=gen).to(dtype)
    p0 = torch.rand(T, E, generator=gen) * m
    w = torch.randn(H, H, generator=gen)

    def path(x, p, ours):
        if ours:
            rows, rows_probs, rim = mt.moe_permute_with_probs(x, p, m)
            expert = (rows.float() @ w).to(dtype)
            return mt.moe_unpermute(expert, rim, merging_probs=p, restore_shape=(T, H)), rows_probs
        rows, rows_probs, s = moe_utils.permute(x, m, probs=p)
        return moe_utils.unpermute(rows @ w.double(), s, (T, H), probs=p, routing_map=m), rows_probs

    x, p = x0.clone().requires_grad_(), p0.clone().requires_grad_()
    out, rows_probs = path(x, p, True)
    (out.float().square().sum() + rows_probs.sum()).backward()
    xr, pr = x0.double().requires_grad_(), p0.double().requires_grad_()
    want, want_probs = path(xr, pr, False)
    (want.square().sum() + want_probs.sum()).backward()
    scale = 64 * EPS[dtype]  # the expert's rounding to dtype, the fp32 sums
    torch.testing.assert_close(out.double(), want.detach(), rtol=scale, atol=scale)
    torch.testing.assert_close(x.grad.double(), xr.grad, rtol=scale, atol=scale * 8)
    torch.testing.assert_close(p.grad.double(), pr.grad, rtol=scale, atol=scale * 8)


def split_cat(x, split_sizes, sorted_index):
    chunks = torch.split(x, [int(n) for n in split_sizes], dim=0)
    return torch.cat([chunks[int(i)] for i in sorted_index], dim=0)


def test_sort_chunks_by_index_and_with_probs():
    gen = torch.Generator().manual_seed(9)
    sizes = torch.tensor([3, 0, 5, 2, 7, 1])
    order = torch.tensor([4, 2, 0, 5, 1, 3])
    x0 = torch.randn(18, 6, generator=gen).to(torch.bfloat16)
    p0 = torch.rand(18, generator=gen)
    assert torch.equal(mt.moe_sort_chunks_by_index(x0, sizes, order), split_cat(x0, sizes, order))
    x, p = x0.clone().requires_grad_(), p0.clone().requires_grad_()
    y, yp = mt.moe_sort_chunks_by_index_with_probs(x, p, sizes.int(), order.int())
    assert torch.equal(y, split_cat(x0, sizes, order)) and torch.equal(yp, split_cat(p0, sizes, order))
    (y.float().square().sum() + (yp * torch.arange(18.0)).sum()).backward()
    xr, pr = x0.clone().requires_grad_(), p0.clone().requires_grad_()
    (split_cat(xr, sizes, order).float().square().sum()
     + (split_cat(pr, sizes, order) * torch.arange(18.0)).sum()).backward()
    assert torch.equal(x.grad, xr.grad) and torch.equal(p.grad, pr.grad)


@needs_custom_ops
@pytest.mark.filterwarnings("ignore:Your compiler for AOTAutograd")
def test_torch_compile_fullgraph_traces_a_transformer_engine_step():
    from torch._dynamo.testing import AotEagerAndRecordGraphs

    gen = torch.Generator().manual_seed(21)
    T, E, H = 32, 4, 8
    m = routing(T, E, "ragged", gen)
    n = int(torch.count_nonzero(m))
    x0 = torch.randn(T, H, generator=gen)
    p0 = torch.rand(T, E, generator=gen) * m
    per_expert = m.sum(0)
    order, restore = torch.tensor([2, 0, 3, 1]), torch.tensor([1, 3, 0, 2])
    weight = torch.randn(H, H, generator=gen)

    def step(x, p):
        rows, rows_probs, rim = mt.moe_permute_with_probs(x, p, m, num_out_tokens=n)
        rows, rows_probs = mt.moe_sort_chunks_by_index_with_probs(rows, rows_probs, per_expert,
                                                                  order)
        rows = (rows @ weight).tanh() * rows_probs[:, None]
        rows = mt.moe_sort_chunks_by_index(rows, per_expert[order], restore)
        return mt.moe_unpermute(rows, rim, merging_probs=p, restore_shape=(T, H)).square().sum()

    torch._dynamo.reset()
    recorder = AotEagerAndRecordGraphs()
    compiled = torch.compile(step, backend=recorder, fullgraph=True)
    results = []
    for fn in (compiled, step):
        x, p = x0.clone().requires_grad_(), p0.clone().requires_grad_()
        loss = fn(x, p)
        loss.backward()
        results.append((loss, x.grad, p.grad))
    for got, want in zip(*results):
        assert torch.equal(got, want)
    targets = " ".join(str(node.target) for g in recorder.fw_graphs + recorder.bw_graphs
                       for node in g.graph.nodes)
    for op in ("ragged_permute", "sort_chunks", "ragged_unpermute", "ragged_unpermute_grad",
               "ragged_permute_grad"):
        assert f"moeperm.{op}" in targets, op


@needs_custom_ops
def test_opcheck_of_the_custom_operators():
    gen = torch.Generator().manual_seed(2)
    T, E, H = 11, 3, 5
    m = routing(T, E, "ragged", gen)
    n = int(torch.count_nonzero(m))
    x = torch.randn(T, H, generator=gen, requires_grad=True)
    p = (torch.rand(T, E, generator=gen) * m).requires_grad_()
    torch.library.opcheck(torch.ops.moeperm.ragged_permute.default, (x, m, p, n, False))
    _, _, s = moe_utils.permute(x.detach(), m)
    rows = torch.randn(n, H, generator=gen, requires_grad=True)
    torch.library.opcheck(torch.ops.moeperm.ragged_unpermute.default,
                          (rows, s.int(), [T, H], p, m, False))
    sizes, order = torch.tensor([4, 0, 7]), torch.tensor([2, 0, 1])
    torch.library.opcheck(torch.ops.moeperm.sort_chunks.default,
                          (x, sizes, order, torch.rand(T, requires_grad=True), False))


def test_empty_inputs():
    for T, E, H in [(0, 4, 8), (6, 3, 0), (5, 0, 4)]:
        x = torch.randn(T, H, requires_grad=True)
        p = torch.zeros(T, E, requires_grad=True)
        m = torch.zeros(T, E, dtype=torch.bool)
        rows, rows_probs, rim = mt.moe_permute_with_probs(x, p, m)
        assert rows.shape == (0, H) and rows_probs.shape == (0,) and rim.shape == (E, T)
        out = mt.moe_unpermute(rows, rim, merging_probs=p, restore_shape=(T, H))
        assert out.shape == (T, H) and bool((out == 0).all())
        (out.sum() + rows_probs.sum()).backward()
        assert torch.equal(x.grad, torch.zeros(T, H)) and torch.equal(p.grad, torch.zeros(T, E))
        y = mt.moe_sort_chunks_by_index(x.detach(), torch.tensor([T]), torch.tensor([0]))
        assert torch.equal(y, x.detach())


def test_what_cannot_be_matched_says_why():
    x, m = torch.randn(4, 3), torch.ones(4, 2, dtype=torch.bool)
    with pytest.raises(NotImplementedError, match="map_type='index'"):
        mt.moe_permute(x, torch.zeros(4, 1, dtype=torch.int32), map_type="index")
    with pytest.raises(ValueError, match="map_type should be one of 'mask' or 'index'"):
        mt.moe_unpermute(x, torch.zeros(2, 4, dtype=torch.int32), map_type="dense")
    with pytest.raises(NotImplementedError, match="pad_offsets"):
        mt.moe_permute_and_pad_with_probs(x, torch.ones(4, 2), m, torch.tensor([0, 0]))
    with pytest.raises(ValueError, match="Permute not possible"):
        mt.moe_permute(x, m[:3])

    class Float8Like(torch.Tensor):  # what TransformerEngine's Float8Tensor looks like here
        _fp8_dtype = "e4m3"

    with pytest.raises(TypeError, match="FP8 tensors .*Float8Like.* are not supported"):
        mt.moe_permute(x.as_subclass(Float8Like), m)
    with pytest.raises(ValueError, match="Both merging_probs and probs"):
        mt.moe_unpermute(x, torch.zeros(2, 4, dtype=torch.int32), torch.ones(4, 2),
                         probs=torch.ones(4, 2))
