"""moeperm.torch: autograd (the custom operator and the plain autograd.Function),
torch.compile, and a training step of a tiny
two-expert MoE layer whose gradients match the pure-PyTorch (Megatron unfused) layer.
TransformerEngine's names (moe_permute_with_probs & co.) are test_te_names.py's."""

import pytest
import torch

import moeperm
import moeperm.torch as mt
from moe_reference import DTYPES, megatron_permute, random_case

needs_custom_ops = pytest.mark.skipif(not mt.custom_ops_registered(),
                                      reason="torch.library.custom_op needs PyTorch >= 2.4")


def differentiable_case(seed, drop_and_pad, dtypes, map_dtype=torch.bool):
    dtype, probs_dtype = DTYPES[dtypes]
    case = random_case(seed, drop_and_pad, dtype, probs_dtype, map_dtype, True)
    case["tokens"].requires_grad_()
    case["probs"].requires_grad_()
    return case


def run_backward(permute, case, use_tokens=True, use_probs=True):
    """Forward with `permute`, backward of <permuted, G> + <permuted_probs, P>; returns the
    outputs and the gradients of tokens and probs (None when not reached)."""
    tokens, probs = case["tokens"], case["probs"]
    tokens.grad = probs.grad = None
    out = permute(tokens, case["routing_map"], probs, case["num_out_tokens"], case["drop_and_pad"])
    outputs, grads = [], []
    if use_tokens:
        outputs.append(out[0])
        grads.append(case["grad"])
    if use_probs:
        outputs.append(out[1])
        grads.append(case["probs_grad"])
    torch.autograd.backward(outputs, grads)
    return out, tokens.grad, probs.grad


def direct_grads(case, sorted_indices):
    """The Grad operator called directly (checked against the reference in test_permute.py)."""
    num_tokens, num_experts = case["routing_map"].shape
    return moeperm.permute_with_routing_map_grad(
        case["grad"], case["probs_grad"], sorted_indices, case["routing_map"], num_experts,
        num_tokens, case["drop_and_pad"])


def function_apply(*args):
    return mt.PermuteWithRoutingMap.apply(*args)


PATHS = {"custom_op": mt.permute_with_routing_map, "autograd_function": function_apply,
         "top_level": moeperm.permute_with_routing_map}


@pytest.mark.parametrize("dtypes", list(DTYPES))
@pytest.mark.parametrize("drop_and_pad", [False, True], ids=["dropless", "droppad"])
@pytest.mark.parametrize("path", list(PATHS))
def test_autograd_uses_the_grad_operator(path, drop_and_pad, dtypes):
    if path == "custom_op" and not mt.custom_ops_registered():
        pytest.skip("PyTorch < 2.4: moeperm.torch uses the autograd.Function")
    for seed in range(2):
        case = differentiable_case(seed + 50, drop_and_pad, dtypes)
        (permuted, permuted_probs, s), tokens_grad, probs_grad = run_backward(PATHS[path], case)
        ref = megatron_permute(case["tokens"].detach(), case["routing_map"],
                               case["probs"].detach(), case["num_out_tokens"], drop_and_pad)
        assert torch.equal(permuted.detach(), ref[0]) and torch.equal(s.long(), ref[2])
        assert torch.equal(permuted_probs.detach(), ref[1])
        assert not s.requires_grad
        want_tokens_grad, want_probs_grad = direct_grads(case, s)
        assert tokens_grad.dtype == case["tokens"].dtype
        assert torch.equal(tokens_grad, want_tokens_grad)
        assert torch.equal(probs_grad, want_probs_grad)


@pytest.mark.parametrize("path", ["custom_op", "autograd_function"])
def test_gradients_when_only_one_output_reaches_the_loss(path):
    if path == "custom_op" and not mt.custom_ops_registered():
        pytest.skip("PyTorch < 2.4")
    case = differentiable_case(8, False, "bf16+f32probs")
    (_, _, s), tokens_grad, probs_grad = run_backward(PATHS[path], case, use_probs=False)
    want_tokens_grad, _ = direct_grads(case, s)
    assert torch.equal(tokens_grad, want_tokens_grad)
    assert torch.equal(probs_grad, torch.zeros_like(case["probs"]))

    (_, _, s), tokens_grad, probs_grad = run_backward(PATHS[path], case, use_tokens=False)
    _, want_probs_grad = direct_grads(case, s)
    assert torch.equal(tokens_grad, torch.zeros_like(case["tokens"]))
    assert torch.equal(probs_grad, want_probs_grad)


def test_no_grad_mode_returns_plain_tensors():
    case = differentiable_case(4, True, "f16")
    with torch.no_grad():
        permuted, permuted_probs, _ = moeperm.permute_with_routing_map(
            case["tokens"], case["routing_map"], case["probs"], case["num_out_tokens"], True)
    assert permuted.grad_fn is None and not permuted.requires_grad


@needs_custom_ops
@pytest.mark.parametrize("drop_and_pad", [False, True], ids=["dropless", "droppad"])
def test_opcheck(drop_and_pad):
    """PyTorch's own consistency checks of the custom operators: schema, fake (meta)
    implementation, autograd registration, AOT dispatch."""
    case = differentiable_case(11, drop_and_pad, "bf16+f32probs")
    args = (case["tokens"], case["routing_map"], case["probs"], case["num_out_tokens"],
            drop_and_pad)
    torch.library.opcheck(torch.ops.moeperm.permute_with_routing_map.default, args)
    _, _, s = mt.permute_with_routing_map(*args)
    num_tokens, num_experts = case["routing_map"].shape
    grad_args = (case["grad"], case["probs_grad"], s, case["routing_map"], num_experts,
                 num_tokens, drop_and_pad)
    torch.library.opcheck(torch.ops.moeperm.permute_with_routing_map_grad.default, grad_args)


@needs_custom_ops
@pytest.mark.parametrize("backend", ["eager", "aot_eager"])
@pytest.mark.filterwarnings("ignore:Your compiler for AOTAutograd")  # the recording backend
def test_torch_compile_fullgraph_traces_through(backend):
    from torch._dynamo.testing import AotEagerAndRecordGraphs, EagerAndRecordGraphs

    case = differentiable_case(21, False, "f32")
    n = case["num_out_tokens"]
    weight = torch.randn(case["tokens"].shape[1], 7, requires_grad=True)

    def step(tokens, routing_map, probs):
        permuted, permuted_probs, _ = mt.permute_with_routing_map(tokens, routing_map, probs, n)
        return ((permuted @ weight).tanh().sum(1) * permuted_probs).sum()

    torch._dynamo.reset()
    recorder = EagerAndRecordGraphs() if backend == "eager" else AotEagerAndRecordGraphs()
    compiled = torch.compile(step, backend=recorder, fullgraph=True)
    args = (case["tokens"], case["routing_map"], case["probs"])
    loss = compiled(*args)
    grads = torch.autograd.grad(loss, [case["tokens"], case["probs"], weight])
    want_loss = step(*args)
    want_grads = torch.autograd.grad(want_loss, [case["tokens"], case["probs"], weight])
    assert torch.equal(loss, want_loss)
    for g, w in zip(grads, want_grads):
        assert torch.equal(g, w)

    # One graph (fullgraph), holding our operator as a node, not a fallback to Python.
    def targets(graphs):
        return " ".join(str(node.target) for g in graphs for node in g.graph.nodes)

    assert len(recorder.graphs) == 1
    assert "moeperm.permute_with_routing_map" in targets(recorder.graphs)
    if backend == "aot_eager":  # AOT autograd traced the backward: the Grad operator
        assert "moeperm.permute_with_routing_map_grad" in targets(recorder.bw_graphs)


class TinyMoE(torch.nn.Module):
    """Router (softmax, top-k), permute, two experts (Linear-GELU-Linear), unpermute weighted
    by the router probabilities. `permute` and `unpermute` are the pluggable pair."""

    def __init__(self, hidden, ffn, num_experts=2, top_k=1):
        super().__init__()
        self.router = torch.nn.Linear(hidden, num_experts, bias=False)
        self.experts = torch.nn.ModuleList(
            torch.nn.Sequential(torch.nn.Linear(hidden, ffn), torch.nn.GELU(),
                                torch.nn.Linear(ffn, hidden)) for _ in range(num_experts))
        self.top_k = top_k

    def forward(self, x, impl, drop_and_pad=False, capacity=None):
        num_tokens, num_experts = x.shape[0], len(self.experts)
        scores = self.router(x).softmax(dim=-1)
        top = scores.topk(self.top_k, dim=-1).indices
        routing_map = torch.zeros_like(scores, dtype=torch.bool).scatter(1, top, True)
        probs = scores * routing_map  # Megatron: probabilities of the selected experts only
        if drop_and_pad:
            rows_per_expert = [capacity] * num_experts
            n = capacity * num_experts
        else:
            rows_per_expert = routing_map.sum(0).tolist()
            n = num_tokens * self.top_k
        permuted, permuted_probs, indices = impl.permute(x, routing_map, probs, n, drop_and_pad)
        chunks = permuted[:sum(rows_per_expert)].split(rows_per_expert)
        y = torch.cat([expert(c) for expert, c in zip(self.experts, chunks)])
        y = y * permuted_probs[:y.shape[0], None]
        return impl.unpermute(y, indices, num_tokens, drop_and_pad)


class MegatronImpl:
    """Megatron-LM's unfused permute / unpermute in plain PyTorch (its row -> token index)."""

    @staticmethod
    def permute(x, routing_map, probs, n, drop_and_pad):
        if drop_and_pad:
            permuted, permuted_probs, token_of_row = megatron_permute(x, routing_map, probs, n, True)
            return permuted, permuted_probs, token_of_row
        mask = routing_map.T
        token_of_row = torch.arange(x.shape[0]).unsqueeze(0).expand_as(mask).masked_select(mask)
        return x.index_select(0, token_of_row), probs.T.masked_select(mask), token_of_row

    @staticmethod
    def unpermute(y, token_of_row, num_tokens, drop_and_pad):
        out = y.new_zeros(num_tokens, y.shape[1])
        index = token_of_row[:y.shape[0]].unsqueeze(1).expand(-1, y.shape[1])
        return out.scatter_add(0, index, y)


class MoepermImpl:
    """moeperm.torch's permute; the unpermute reads CANN's sorted_indices."""

    @staticmethod
    def permute(x, routing_map, probs, n, drop_and_pad):
        return mt.permute_with_routing_map(x, routing_map, probs, n, drop_and_pad)

    @staticmethod
    def unpermute(y, sorted_indices, num_tokens, drop_and_pad):
        s = sorted_indices.long()
        if drop_and_pad:  # S[j] is the token of row j
            out = y.new_zeros(num_tokens, y.shape[1])
            return out.scatter_add(0, s.unsqueeze(1).expand(-1, y.shape[1]), y)
        # Drop-less: S[t*K + k] is the row of token t's k-th expert.
        rows = y.index_select(0, s.clamp(min=0)) * (s >= 0).unsqueeze(1)
        return rows.view(num_tokens, -1, y.shape[1]).sum(1)


@pytest.mark.parametrize("mode", ["dropless-top1", "dropless-top2", "droppad"])
def test_training_step_of_a_tiny_two_expert_moe_matches_pure_pytorch(mode):
    torch.manual_seed(0)
    drop_and_pad = mode == "droppad"
    top_k = 2 if mode == "dropless-top2" else 1
    model = TinyMoE(hidden=12, ffn=20, top_k=top_k)
    reference = TinyMoE(hidden=12, ffn=20, top_k=top_k)
    reference.load_state_dict(model.state_dict())
    x = torch.randn(23, 12)
    target = torch.randn(23, 12)
    capacity = 9  # drop-and-pad: 23 tokens on 2 experts, some dropped, some padding
    optimizers = [torch.optim.SGD(m.parameters(), lr=0.1) for m in (model, reference)]

    for _ in range(3):  # a few steps: the routing changes as the router learns
        for m, impl, opt in zip((model, reference), (MoepermImpl, MegatronImpl), optimizers):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(m(x, impl, drop_and_pad, capacity), target)
            loss.backward()
            m.loss = loss.detach()
        # Same loss and same gradients for every parameter. Both compute in float32 with the
        # same operations except the permutation's gradient sums (moeperm: ascending k;
        # PyTorch's index_select backward: its own order), so results agree to float32
        # rounding of sums of at most top_k terms: rtol 1e-5 is ~80 ulps.
        torch.testing.assert_close(model.loss, reference.loss, rtol=1e-6, atol=0)
        for (name, p), q in zip(model.named_parameters(), reference.parameters()):
            assert p.grad is not None, name
            torch.testing.assert_close(p.grad, q.grad, rtol=1e-5, atol=1e-7, msg=name)
        assert any(p.grad.abs().sum() > 0 for p in model.router.parameters())
        for opt in optimizers:
            opt.step()


def test_readme_python_example_runs():
    """The README's Python example, executed as written (with its own asserts)."""
    from pathlib import Path

    readme = Path(__file__).resolve().parents[2] / "README.md"
    text = readme.read_text(encoding="utf-8")
    section = text.split("\n## Python\n", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, f"{readme} (## Python)", "exec"), {})


EMPTY_SHAPES = [  # (T, E, H, num_out_tokens): T = 0, R = 0, H = 0, E = 0
    (0, 4, 8, 0), (5, 4, 8, 0), (5, 4, 0, 10), (5, 0, 8, 0)]


@pytest.mark.parametrize("path", ["function", "custom_op", "compiled"])
@pytest.mark.parametrize("T,E,H,n", EMPTY_SHAPES)
@pytest.mark.filterwarnings("ignore:Your compiler for AOTAutograd")
def test_empty_problems_give_zero_gradients_in_every_autograd_path(path, T, E, H, n):
    if path != "function" and not mt.custom_ops_registered():
        pytest.skip("needs torch.library.custom_op (PyTorch >= 2.4)")
    tokens = torch.rand(T, H, requires_grad=True)
    probs = torch.rand(T, E, requires_grad=True)
    routing_map = torch.zeros(T, E, dtype=torch.bool)
    if n:
        routing_map[:, 0] = True  # one expert per token (K = n / T allows it)

    def step(x, p):
        if path == "function":
            out, out_probs, _ = mt.PermuteWithRoutingMap.apply(x, routing_map, p, n, False)
        else:
            out, out_probs, _ = mt.permute_with_routing_map(x, routing_map, p, n)
        return out.sum() + out_probs.sum()

    if path == "compiled":
        torch._dynamo.reset()
        step = torch.compile(step, backend="aot_eager", fullgraph=True)
    loss = step(tokens, probs)
    loss.backward()
    assert tokens.grad is not None and tokens.grad.shape == (T, H)
    assert probs.grad is not None and probs.grad.shape == (T, E)
    # d(sum)/d(token) counts the token's rows; d(sum)/d(prob) is 1 where routed, else 0.
    want_tokens = routing_map.sum(1, keepdim=True).float().expand(T, H)
    assert torch.equal(tokens.grad, want_tokens)
    assert torch.equal(probs.grad, routing_map.float())
