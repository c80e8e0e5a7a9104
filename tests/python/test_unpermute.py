"""The unpermute pair from Python (SPEC-unpermute U1-U5): moeperm.unpermute_with_routing_map
(_all, _grad) against PyTorch autograd of Megatron-LM's unfused `unpermute` in float64, U5's
relations bit for bit, the zero-prob mask, -1 slots, K = 512 / 513, empty problems, the
custom operators (opcheck, torch.compile) and a two-expert MoE training step that runs
permute -> experts -> unpermute entirely on moeperm."""

import pytest
import torch

import moeperm
import moeperm.torch as mt
from moe_reference import DTYPES, random_case

needs_custom_ops = pytest.mark.skipif(not mt.custom_ops_registered(),
                                      reason="torch.library.custom_op needs PyTorch >= 2.4")

# U3's dP tolerance by probs dtype (TransformerEngine's rtol, atol).
DP_TOL = {torch.float32: (1e-6, 1e-6), torch.float16: (3e-3, 1e-5), torch.bfloat16: (2e-2, 1e-5)}


def forward_case(seed, drop_and_pad, dtypes):
    """A random permute (moeperm's, bit-exact with the reference: test_permute.py), whose
    rows X, S and map the unpermute then reads; G is a random [T, H] gradient."""
    dtype, probs_dtype = DTYPES[dtypes]
    case = random_case(seed, drop_and_pad, dtype, probs_dtype, torch.bool, True)
    tokens, m, p = case["tokens"], case["routing_map"], case["probs"]
    num_out = case["num_out_tokens"]
    if not drop_and_pad:
        num_out = tokens.shape[0] * (num_out // max(tokens.shape[0], 1))
    x, _, s = moeperm.permute_with_routing_map(tokens, m, p, num_out, drop_and_pad)
    g = torch.Generator().manual_seed(seed + 1)
    x = torch.randn(x.shape, generator=g).to(dtype)  # the experts' output: any values
    grad = torch.randn(tokens.shape, generator=g).to(dtype)
    return dict(x=x, s=s, m=m, p=p, grad=grad, drop_and_pad=drop_and_pad,
                T=tokens.shape[0], H=tokens.shape[1])


def token_of_row(s, num_rows, drop_and_pad, top_k):
    """Megatron's row -> token index from CANN's S (-1: a row no slot names)."""
    if drop_and_pad:
        return s.long()
    t = torch.full((num_rows,), -1, dtype=torch.int64)
    slots = torch.arange(s.numel())
    valid = s >= 0
    t[s[valid].long()] = slots[valid] // top_k
    return t


def megatron_unpermute(x, s, m, p, T, H, drop_and_pad):
    """Megatron-LM's unfused unpermute (moe_utils.unpermute) on row -> token indices: rows
    weighted by their probs (gathered as Megatron gathers them), scatter-added to tokens.
    Rows no slot names (drop-less padding) are left out."""
    R = x.shape[0]
    top_k = R // T if T else 0
    tok = token_of_row(s, R, drop_and_pad, top_k)
    rows = (tok >= 0).nonzero().squeeze(1)
    y, tok = x.index_select(0, rows), tok.index_select(0, rows)
    if p is not None:
        E = m.shape[1]
        if drop_and_pad:
            capacity = R // E
            flat = torch.arange(E).repeat_interleave(capacity) * T + tok
            permuted_probs = p.T.reshape(-1).index_select(0, flat)
        else:
            permuted_probs = p.T.contiguous().masked_select(m.T.bool().contiguous())
        y = y * permuted_probs[:y.shape[0]].unsqueeze(-1)
    out = y.new_zeros(T, H)
    return out.scatter_add(0, tok.unsqueeze(1).expand(-1, H), y)


def reference(case, with_probs):
    """float64 autograd of megatron_unpermute: (out, dX, dP, |out| bound terms, Σ|a·b|)."""
    x = case["x"].double().requires_grad_()
    p = case["p"].double().requires_grad_() if with_probs else None
    args = (case["s"], case["m"], p, case["T"], case["H"], case["drop_and_pad"])
    out = megatron_unpermute(x, *args)
    grads = torch.autograd.grad(out, [x] + ([p] if with_probs else []), case["grad"].double())
    xa = case["x"].double().abs()
    pa = case["p"].double().abs() if with_probs else None
    abs_out = megatron_unpermute(xa, case["s"], case["m"], pa, case["T"], case["H"],
                                 case["drop_and_pad"])
    abs_dp = None
    if with_probs:
        pa = pa.requires_grad_()
        (abs_dp,) = torch.autograd.grad(megatron_unpermute(xa, case["s"], case["m"], pa,
                                                           case["T"], case["H"],
                                                           case["drop_and_pad"]),
                                        [pa], case["grad"].double().abs())
    return out.detach(), grads[0], (grads[1] if with_probs else None), abs_out, abs_dp


def assert_close_to(ours, exact, bound):
    err = (ours.double() - exact).abs()
    assert bool((err <= bound).all()), f"max excess {float((err - bound).max())}"


@pytest.mark.parametrize("dtypes", list(DTYPES))
@pytest.mark.parametrize("drop_and_pad", [False, True], ids=["dropless", "droppad"])
@pytest.mark.parametrize("with_probs", [False, True], ids=["noprobs", "probs"])
@pytest.mark.parametrize("seed", range(6))
def test_forward_and_grad_match_megatrons_unfused_unpermute(seed, with_probs, drop_and_pad,
                                                            dtypes):
    case = forward_case(seed, drop_and_pad, dtypes)
    x, s, m, p, T, H = (case[k] for k in ("x", "s", "m", "p", "T", "H"))
    probs = p if with_probs else None
    out = moeperm.unpermute_with_routing_map(x, s, (T, H), probs=probs, routing_map=m,
                                             drop_and_pad=drop_and_pad)
    o, i = s, s
    if drop_and_pad:
        _, o, i, _ = moeperm.unpermute_with_routing_map_all(x, s, (T, H), probs, m, True)
    dx, dp = moeperm.unpermute_with_routing_map_grad(case["grad"], o, i, m, x, probs,
                                                     drop_and_pad)
    want_out, want_dx, want_dp, abs_out, abs_dp = reference(case, with_probs)
    assert out.dtype == x.dtype and out.shape == (T, H)
    terms = max(x.shape[0] // max(T, 1), 1) if not drop_and_pad else max(x.shape[0], 1)
    eps = torch.finfo(x.dtype).eps
    # fp32 products and sums (terms roundings of 2^-24), one rounding to the dtype; drop-and-
    # pad with probs of the token dtype rounds each product to it (CANN multiplies in it).
    products = 0.5 * eps if drop_and_pad and with_probs and p.dtype == x.dtype else 0.0
    bound = 0.5 * eps * want_out.abs() + (terms * 2.0**-24 + products) * abs_out * 1.01 + 1e-30
    assert_close_to(out, want_out, bound)
    assert_close_to(dx, want_dx, 0.5 * eps * want_dx.abs())  # one product, one rounding
    if with_probs:
        rtol, atol = DP_TOL[p.dtype]
        assert dp.dtype == p.dtype
        assert_close_to(dp, want_dp, rtol * want_dp.abs() + atol + (H / 32 + 5) * 2.0**-24 * abs_dp)
    else:
        assert dp is None


def test_a_zero_prob_masks_a_nan_row_only_in_dropless_mode():
    # T = 2, E = 2, every token routed to both experts; token 0's prob for expert 1 is 0.
    tokens = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    m = torch.ones(2, 2, dtype=torch.bool)
    p = torch.tensor([[0.5, 0.0], [0.25, 0.75]])
    x, _, s = moeperm.permute_with_routing_map(tokens, m, p, 4)
    x[s[1]] = float("nan")  # token 0's row for expert 1 (prob 0)
    out = moeperm.unpermute_with_routing_map(x, s, (2, 2), probs=p, routing_map=m)
    assert torch.equal(out[0], tokens[0] * 0.5)  # the NaN row is skipped
    # Drop-and-pad (C = 2): the slot of token 0 for expert 1 is added, NaN and all.
    x, _, s = moeperm.permute_with_routing_map(tokens, m, p, 4, drop_and_pad=True)
    x[2] = float("nan")  # expert 1's first slot: token 0
    assert int(s[2]) == 0
    out = moeperm.unpermute_with_routing_map(x, s, (2, 2), probs=p, routing_map=m,
                                             drop_and_pad=True)
    assert bool(out[0].isnan().all()) and not bool(out[1].isnan().any())


def test_minus_one_slots_and_tokens_with_fewer_than_k_experts():
    # Token 1 routes to one expert of K = 2: its second slot is -1 and adds nothing.
    tokens = torch.tensor([[1.0, 1.0], [2.0, 2.0], [3.0, 3.0]])
    m = torch.tensor([[1, 1, 0], [0, 1, 0], [1, 0, 1]], dtype=torch.bool)
    p = torch.tensor([[0.5, 0.25, 0.0], [0.0, 2.0, 0.0], [1.0, 0.0, 4.0]])
    x, _, s = moeperm.permute_with_routing_map(tokens, m, p, 6)
    assert int(s[3]) == -1
    out, o, i, pp = moeperm.unpermute_with_routing_map_all(x, s, (3, 2), p, m)
    assert torch.equal(out, torch.tensor([[0.75, 0.75], [4.0, 4.0], [15.0, 15.0]]))
    assert torch.equal(o, s) and torch.equal(i, torch.tensor([0, 0, 1, 1, 2, 2], dtype=torch.int32))
    assert torch.equal(pp, torch.tensor([0.5, 0.25, 2.0, 0.0, 1.0, 4.0]))


def test_topk_512_runs_and_513_is_cannes_limit():
    T, H = 2, 3
    for k, ok in ((512, True), (513, False)):
        x = torch.randn(T * k, H)
        s = torch.arange(T * k, dtype=torch.int32)
        if ok:
            out = moeperm.unpermute_with_routing_map(x, s, (T, H))
            rows = x.view(T, k, H)
            want = torch.zeros(T, H)
            for j in range(k):  # ascending k in float32, bit for bit
                want = want + rows[:, j]
            assert torch.equal(out, want)
        else:
            with pytest.raises(moeperm.OperatorError, match="topK = 513 exceeds") as e:
                moeperm.unpermute_with_routing_map(x, s, (T, H))
            assert e.value.code == 561103


@pytest.mark.parametrize("dtypes", ["bf16", "f16", "f32"])
def test_without_probs_it_is_the_permute_grad_bit_for_bit(dtypes):
    case = forward_case(3, False, dtypes)
    x, s, m, T, H = case["x"], case["s"], case["m"], case["T"], case["H"]
    out = moeperm.unpermute_with_routing_map(x, s, (T, H))
    tokens_grad, _ = moeperm.permute_with_routing_map_grad(x, None, s, m, m.shape[1], T)
    assert torch.equal(out.view(torch.uint8), tokens_grad.view(torch.uint8))
    # And its Grad without probs is the permute's row copy of G (rows past the routed zero).
    dx, _ = moeperm.unpermute_with_routing_map_grad(case["grad"], s, s)
    rows, _, _ = moeperm.permute_with_routing_map(case["grad"], m, None, x.shape[0])
    assert torch.equal(dx.view(torch.uint8), rows.view(torch.uint8))


def test_round_trip_returns_k_times_the_tokens():
    T, E, K, H = 7, 5, 3, 9
    m = torch.zeros(T, E, dtype=torch.bool)
    for t in range(T):
        m[t, [(t + j) % E for j in range(K)]] = True
    tokens = torch.randn(T, H)
    x, _, s = moeperm.permute_with_routing_map(tokens, m, None, T * K)
    out = moeperm.unpermute_with_routing_map(x, s, (T, H))
    want = tokens + tokens + tokens  # float32, ascending k
    assert torch.equal(out, want)


@pytest.mark.parametrize("drop_and_pad", [False, True], ids=["dropless", "droppad"])
def test_adjoint(drop_and_pad):
    case = forward_case(11, drop_and_pad, "f32")
    x, s, m, p, T, H, g = (case[k] for k in ("x", "s", "m", "p", "T", "H", "grad"))
    out, o, i, _ = moeperm.unpermute_with_routing_map_all(x, s, (T, H), p, m, drop_and_pad)
    dx, _ = moeperm.unpermute_with_routing_map_grad(g, o, i, m, x, p, drop_and_pad)
    lhs = (out.double() * g.double()).sum()
    rhs = (x.double() * dx.double()).sum()
    scale = (out.double().abs() * g.double().abs()).sum() + 1.0
    assert abs(float(lhs - rhs)) <= 1e-5 * float(scale)


@pytest.mark.parametrize("shape", [(0, 3, 4), (4, 3, 0), (3, 2, 0)], ids=["T0", "H0", "R0"])
def test_empty_problems(shape):
    """T = 0 (R = 0), H = 0, and R = 0 with tokens: zeros where nothing is summed, empty
    gradients, also through autograd."""
    T, E, H = shape
    R = 0 if shape[2] == 0 and T else T * 2
    x = torch.randn(R, H, requires_grad=True)
    p = torch.rand(T, E, requires_grad=True)
    m = torch.ones(T, E, dtype=torch.bool)
    s = torch.arange(R, dtype=torch.int32)
    out = mt.npu_moe_token_unpermute_with_routing_map(x, s, (T, H), probs=p, routing_map=m)
    assert out.shape == (T, H) and bool((out == 0).all())
    out.sum().backward()
    assert x.grad.shape == (R, H) and p.grad.shape == (T, E)
    assert bool((p.grad == 0).all())


def megatron_full(x, routing_map, probs, drop_and_pad, capacity):
    """Megatron's unfused path: permute (row -> token), then its unpermute with probs."""
    T, H = x.shape
    E = routing_map.shape[1]
    if drop_and_pad:
        order = routing_map.T.to(torch.int8).argsort(dim=-1, descending=True, stable=True)
        token = order[:, :capacity].reshape(-1)
    else:
        token = torch.arange(T).unsqueeze(0).expand(E, T).masked_select(routing_map.T)
    return x.index_select(0, token), token


class MoELayer(torch.nn.Module):
    """Router, permute, two experts, unpermute weighted by the router probabilities inside
    the unpermute (MindSpeed's fused path)."""

    def __init__(self, hidden, ffn, top_k):
        super().__init__()
        self.router = torch.nn.Linear(hidden, 2, bias=False)
        self.experts = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(hidden, ffn), torch.nn.GELU(),
                                torch.nn.Linear(ffn, hidden)) for _ in range(2))
        self.top_k = top_k

    def forward(self, x, on_moeperm, drop_and_pad, capacity):
        T, H = x.shape
        scores = self.router(x).softmax(dim=-1)
        top = scores.topk(self.top_k, dim=-1).indices
        routing_map = torch.zeros_like(scores, dtype=torch.bool).scatter(1, top, True)
        probs = scores * routing_map
        counts = [capacity] * 2 if drop_and_pad else routing_map.sum(0).tolist()
        n = 2 * capacity if drop_and_pad else T * self.top_k
        if on_moeperm:
            permuted, _, s = mt.permute_with_routing_map(x, routing_map, None, n, drop_and_pad)
        else:
            permuted, token = megatron_full(x, routing_map, probs, drop_and_pad, capacity)
        y = torch.cat([e(c) for e, c in zip(self.experts, permuted[:sum(counts)].split(counts))])
        if on_moeperm:
            y = torch.cat([y, y.new_zeros(permuted.shape[0] - y.shape[0], H)])
            return mt.npu_moe_token_unpermute_with_routing_map(
                y, s, (T, H), probs=probs, routing_map=routing_map, drop_and_pad=drop_and_pad)
        if drop_and_pad:
            flat = torch.arange(2).repeat_interleave(capacity) * T + token
            weights = probs.T.reshape(-1).index_select(0, flat)
        else:
            weights = probs.T.masked_select(routing_map.T)
        out = y.new_zeros(T, H)
        return out.scatter_add(0, token.unsqueeze(1).expand(-1, H), y * weights.unsqueeze(1))


@pytest.mark.parametrize("mode", ["dropless-top1", "dropless-top2", "droppad"])
def test_training_step_entirely_on_moeperm_matches_megatrons_unfused_layer(mode):
    torch.manual_seed(1)
    drop_and_pad = mode == "droppad"
    top_k = 2 if mode == "dropless-top2" else 1
    model, reference_model = MoELayer(10, 16, top_k), MoELayer(10, 16, top_k)
    reference_model.load_state_dict(model.state_dict())
    x, target = torch.randn(19, 10), torch.randn(19, 10)
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, reference_model)]
    for _ in range(3):
        losses = []
        for m, on_moeperm, opt in zip((model, reference_model), (True, False), optimizers):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(m(x, on_moeperm, drop_and_pad, 7), target)
            loss.backward()
            losses.append(loss.detach())
        # Float32 everywhere; sums of at most top_k terms in another order.
        torch.testing.assert_close(losses[0], losses[1], rtol=1e-6, atol=0)
        for (name, a), b in zip(model.named_parameters(), reference_model.parameters()):
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-5, atol=1e-7, msg=name)
        assert float(model.router.weight.grad.abs().sum()) > 0  # probs got their gradient
        for opt in optimizers:
            opt.step()


@needs_custom_ops
@pytest.mark.parametrize("drop_and_pad", [False, True], ids=["dropless", "droppad"])
def test_opcheck(drop_and_pad):
    case = forward_case(5, drop_and_pad, "f32")
    x, s, m, p, T, H = (case[k] for k in ("x", "s", "m", "p", "T", "H"))
    x, p = x.requires_grad_(), p.requires_grad_()
    torch.library.opcheck(torch.ops.moeperm.unpermute_with_routing_map,
                          (x, s, [T, H], p, m, drop_and_pad))


@needs_custom_ops
def test_torch_compile_fullgraph_traces_forward_and_backward():
    case = forward_case(7, False, "f32")
    x, s, m, p, T, H = (case[k] for k in ("x", "s", "m", "p", "T", "H"))

    def layer(a, b):
        return mt.npu_moe_token_unpermute_with_routing_map(a, s, (T, H), probs=b, routing_map=m)

    compiled = torch.compile(layer, fullgraph=True, backend="aot_eager")
    xa, pa = x.clone().requires_grad_(), p.clone().requires_grad_()
    xb, pb = x.clone().requires_grad_(), p.clone().requires_grad_()
    compiled(xa, pa).backward(case["grad"])
    layer(xb, pb).backward(case["grad"])
    assert torch.equal(xa.grad, xb.grad) and torch.equal(pa.grad, pb.grad)


def test_probs_without_a_gradient_save_no_rows():
    """permuted_tokens is saved for the backward only when probs need a gradient."""
    case = forward_case(2, False, "f32")
    x, s, m, p, T, H = (case[k] for k in ("x", "s", "m", "p", "T", "H"))
    saved = []

    def pack(t):
        saved.append(t)
        return t

    xr = x.clone().requires_grad_()
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = mt.npu_moe_token_unpermute_with_routing_map(xr, s, (T, H), probs=p, routing_map=m)
    assert not any(t.shape == x.shape for t in saved)
    out.backward(case["grad"])
    dx, _ = moeperm.unpermute_with_routing_map_grad(case["grad"], s, s, m, None, p,
                                                    probs_grad=False)
    assert torch.equal(xr.grad, dx)


def test_numpy_arrays_work_without_torch_tensors():
    np = pytest.importorskip("numpy")
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    s = np.array([0, 2, 1, 3], dtype=np.int32)
    out = moeperm.unpermute_with_routing_map(x, s, (2, 3))
    assert isinstance(out, np.ndarray)
    assert np.array_equal(out, x[[0, 1]] + x[[2, 3]])
