"""Megatron-core's own AlltoAll token dispatcher (MoEAlltoAllTokenDispatcher: permute, the
expert-parallel all-to-all, sort_chunks_by_idxs by local expert, and back) on CPU, in two
processes over torch.distributed with gloo on loopback, with and without
moeperm.megatron.patch(): forward and backward must agree.

Where it meets CUDA, and what stands in for it (the test's shims, nothing else changed):
Megatron's dispatcher overlaps its device-to-host copies of the split sizes on a side CUDA
stream (torch.cuda.Stream / current_stream / stream / record_event) and allocates
all-gather buffers with device=torch.cuda.current_device(); on the host the streams order
nothing and the device is the CPU, so no-op streams and the CPU stand in. Its DtoH helper
(maybe_move_tensor_to_cpu) turns device split sizes into NumPy for all_to_all_single and
leaves host tensors as they are; on the host the shim does that conversion. The rest is
Megatron-core's code, unchanged. moe_permute_fusion (TransformerEngine's kernels on CUDA)
is off; the patch replaces the unfused functions it would call.

The unpatched run is the reference, in float64 (Megatron's unpermute adds in the token
dtype; moeperm adds in float32 and rounds once), so the patched run in float32 / bfloat16 is
compared within its dtype's tolerance; the float32 drop-less case must also agree with the
unpatched float32 run within float32 rounding.
"""

import contextlib
import datetime
import os
import socket
import warnings

import pytest
import torch
import torch.multiprocessing as mp

WORLD = 2
TIMEOUT_S = 120


class _HostEvent:
    def synchronize(self):
        pass


class _HostStream:
    """A CUDA stream's stand-in on the host, where work is ordered already."""

    def wait_stream(self, _other):
        pass

    def record_event(self):
        return _HostEvent()


def _install_host_shims():
    current = _HostStream()
    torch.cuda.Stream = lambda *a, **k: _HostStream()
    torch.cuda.current_stream = lambda *a, **k: current
    torch.cuda.stream = lambda _s: contextlib.nullcontext()
    torch.cuda.current_device = lambda: torch.device("cpu")
    from megatron.core.transformer.moe import token_dispatcher
    token_dispatcher.maybe_move_tensor_to_cpu = (
        lambda t, as_numpy=False, record_stream=False:
        t.numpy() if as_numpy and torch.is_tensor(t) else t)


def _routing(T, E, k, drop_and_pad, gen):
    from megatron.core.transformer.moe import moe_utils
    scores = torch.rand(T, E, generator=gen).softmax(-1)
    idx = scores.topk(k, dim=1).indices
    routing_map = torch.zeros(T, E, dtype=torch.bool).scatter(1, idx, True)
    probs = scores * routing_map
    if drop_and_pad:  # as Megatron's router does it: exactly capacity tokens per expert
        probs, routing_map = moe_utils.apply_router_token_dropping(
            probs, routing_map, router_topk=k, capacity_factor=1.0, pad_to_capacity=True)
    return routing_map, probs


def _layer(dispatcher, x, routing_map, probs, weight):
    """The dispatcher's whole round trip around a per-local-expert linear expert."""
    h, hp = dispatcher.dispatch_preprocess(x, routing_map, probs)
    h, hp = dispatcher.token_dispatch(h, hp)
    h, tokens_per_expert, hp = dispatcher.dispatch_postprocess(h, hp)
    chunks = torch.split(h, [int(n) for n in tokens_per_expert])
    h = torch.cat([c @ weight[i].to(c.dtype) for i, c in enumerate(chunks)]) * hp[:, None]
    h = dispatcher.combine_preprocess(h)
    h = dispatcher.token_combine(h)
    return dispatcher.combine_postprocess(h)


def _worker(rank, port, case, queue):
    try:
        os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        torch.distributed.init_process_group(
            "gloo", rank=rank, world_size=WORLD, timeout=datetime.timedelta(seconds=TIMEOUT_S))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _install_host_shims()
            queue.put((rank, _run_case(rank, case)))
        torch.distributed.destroy_process_group()
    except BaseException as e:  # reported to the test, which fails with it
        queue.put((rank, repr(e)))


def _run_case(rank, case, world=WORLD, device="cpu"):
    """One rank's three runs (float64 reference, Megatron, moeperm) and their relative errors.
    On CUDA (test_cuda.py) the dispatcher runs unshimmed, its tensors on the GPU."""
    from megatron.core.process_groups_config import ProcessGroupCollection
    from megatron.core.transformer.moe import token_dispatcher
    from megatron.core.transformer.moe.token_dispatcher import MoEAlltoAllTokenDispatcher
    from megatron.core.transformer.transformer_config import TransformerConfig
    import moeperm.megatron as mm

    E, H, T, k, dtype, drop_and_pad = (case[n] for n in ("E", "H", "T", "k", "dtype",
                                                         "drop_and_pad"))
    group = torch.distributed.group.WORLD
    singles = [torch.distributed.new_group([r]) for r in range(world)]
    groups = ProcessGroupCollection(ep=group, expt_tp=singles[rank], tp_ep=group)
    config = TransformerConfig(
        num_layers=1, hidden_size=H, num_attention_heads=1, num_moe_experts=E,
        moe_router_topk=k, moe_token_dispatcher_type="alltoall",
        expert_model_parallel_size=world, use_cpu_initialization=device == "cpu",
        moe_expert_capacity_factor=1.0 if drop_and_pad else None,
        moe_pad_expert_input_to_capacity=drop_and_pad)
    local = E // world
    gen = torch.Generator().manual_seed(17 + rank)
    routing_map, probs0 = (t.to(device) for t in _routing(T, E, k, drop_and_pad, gen))
    x0 = torch.randn(T, H, generator=gen).to(device)
    weight = (torch.randn(local, H, H, generator=gen) / H**0.5).to(device)
    results = {}
    for name, patched, run_dtype in (("reference", False, torch.float64),
                                     ("megatron", False, dtype), ("moeperm", True, dtype)):
        with (mm.patch() if patched else contextlib.nullcontext()):
            if patched:
                assert token_dispatcher.sort_chunks_by_idxs is mm.sort_chunks_by_idxs
            d = MoEAlltoAllTokenDispatcher(local, list(range(rank * local, rank * local + local)),
                                           config, pg_collection=groups)
            # Fresh leaves per run (.to() of the same dtype would return the same tensor, and
            # the runs' gradients would add up in it).
            x = x0.to(run_dtype).clone().requires_grad_()
            p = probs0.to(torch.float64 if run_dtype == torch.float64 else torch.float32)
            p = p.clone().requires_grad_()
            out = _layer(d, x, routing_map, p, weight)
            out.float().square().sum().backward()
            results[name] = tuple(t.detach().double().cpu() for t in (out, x.grad, p.grad))
    # Relative errors against the float64 reference, as plain floats (tensors do not outlive
    # this process in a queue).
    errors = {}
    for i, what in enumerate(("output", "tokens' gradient", "probs' gradient")):
        want = results["reference"][i]
        scale = want.abs().max().item() + 1e-30
        for name in ("moeperm", "megatron"):
            errors[(name, what)] = (results[name][i] - want).abs().max().item() / scale
    return errors


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_two_ranks(case):
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_worker, args=(r, port, case, queue)) for r in range(WORLD)]
    for p in procs:
        p.start()
    results = {}
    try:
        for _ in range(WORLD):
            rank, result = queue.get(timeout=TIMEOUT_S)
            results[rank] = result
    finally:
        for p in procs:
            p.join(timeout=10)
            if p.is_alive():
                p.kill()
    for rank in range(WORLD):
        assert isinstance(results.get(rank), dict), f"rank {rank}: {results.get(rank)}"
    return results


TOL = {torch.float32: 2.0**-16, torch.bfloat16: 2.0**-6}

CASES = [
    dict(E=4, H=16, T=24, k=2, dtype=torch.float32, drop_and_pad=False),
    dict(E=8, H=16, T=40, k=3, dtype=torch.bfloat16, drop_and_pad=False),
    dict(E=2, H=8, T=16, k=2, dtype=torch.float32, drop_and_pad=False),  # 1 local expert
    dict(E=4, H=16, T=32, k=2, dtype=torch.float32, drop_and_pad=True),
]
CASE_IDS = ["fp32-dropless", "bf16-dropless-k3", "fp32-one-local-expert", "fp32-drop-and-pad"]


def check_errors(rank, errors, dtype):
    for (name, what), err in errors.items():
        assert err <= TOL[dtype], f"rank {rank}, {name} {what}: relative error {err}"


@pytest.mark.parametrize("case", CASES, ids=CASE_IDS)
def test_alltoall_dispatcher_with_and_without_the_patch(case):
    for rank, errors in _run_two_ranks(case).items():
        check_errors(rank, errors, case["dtype"])
