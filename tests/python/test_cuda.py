"""CUDA tensors (moeperm built with MOEPERM_CUDA=ON, a GPU, PyTorch with CUDA): the same
results as on the CPU, bit for bit (SPEC §4: every backend is bitwise identical), on the
tensor's current stream, with outputs and workspace from PyTorch's allocator. Skipped
elsewhere (CTest then reports this file as skipped)."""

import pytest
import torch

import moeperm
import moeperm.torch as mt
from moe_reference import DTYPES, random_case

pytestmark = pytest.mark.skipif(
    not torch.cuda.is_available() or not moeperm.cuda_built(),
    reason="needs a GPU, PyTorch with CUDA and moeperm built with MOEPERM_CUDA=ON")


def on(device, case):
    return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in case.items()}


@pytest.mark.parametrize("map_dtype", [torch.bool, torch.int8], ids=["bool", "int8"])
@pytest.mark.parametrize("dtypes", list(DTYPES))
@pytest.mark.parametrize("drop_and_pad", [False, True], ids=["dropless", "droppad"])
def test_cuda_matches_cpu_bitwise(drop_and_pad, dtypes, map_dtype):
    dtype, probs_dtype = DTYPES[dtypes]
    for seed in range(3):
        cpu = random_case(seed + 300, drop_and_pad, dtype, probs_dtype, map_dtype, True)
        gpu = on("cuda", cpu)
        results = []
        for case in (cpu, gpu):
            tokens = case["tokens"].clone().requires_grad_()
            probs = case["probs"].clone().requires_grad_()
            permuted, permuted_probs, s = mt.permute_with_routing_map(
                tokens, case["routing_map"], probs, case["num_out_tokens"], drop_and_pad)
            torch.autograd.backward([permuted, permuted_probs], [case["grad"], case["probs_grad"]])
            results.append([permuted.detach(), permuted_probs.detach(), s, tokens.grad, probs.grad])
        for want, got in zip(*results):
            assert got.device.type == "cuda" and got.dtype == want.dtype
            assert torch.equal(got.cpu(), want)


def test_cuda_runs_on_the_current_stream_with_strided_inputs():
    cpu = random_case(7, False, torch.bfloat16, torch.float32, torch.bool, True)
    want = moeperm.permute_with_routing_map(cpu["tokens"], cpu["routing_map"], cpu["probs"],
                                            cpu["num_out_tokens"])
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        # Inputs produced on the side stream, consumed there without synchronisation.
        tokens_t = cpu["tokens"].T.contiguous().to("cuda", non_blocking=True)
        got = moeperm.permute_with_routing_map(tokens_t.T, cpu["routing_map"].cuda(),
                                               cpu["probs"].cuda(), cpu["num_out_tokens"])
    stream.synchronize()
    for w, g in zip(want, got):
        assert torch.equal(g.cpu(), w)


def test_cuda_index_error_is_a_value_error():
    s = torch.tensor([0, 1, 2, 99], dtype=torch.int32, device="cuda")
    with pytest.raises(ValueError, match=r"sortedIndices\[3\] = 99 is outside \[0, 4\)"):
        moeperm.permute_with_routing_map_grad(torch.randn(4, 3, device="cuda"), None, s, None,
                                              2, 2, False)


def test_cuda_and_cpu_tensors_do_not_mix():
    with pytest.raises(ValueError, match="expected all tensors on one device"):
        moeperm.permute_with_routing_map(torch.randn(4, 3, device="cuda"),
                                         torch.ones(4, 2, dtype=torch.bool), num_out_tokens=8)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_cuda_sort_chunks_matches_cpu_bitwise(dtype):
    """The chunk sort's CUDA kernel (both directions, autograd, probs) against the CPU."""
    gen = torch.Generator().manual_seed(5)
    sizes = torch.tensor([5, 0, 130, 7, 1, 300, 0, 44])
    order = torch.tensor([3, 7, 0, 5, 1, 6, 2, 4])
    T = int(sizes.sum())
    x0 = torch.randn(T, 96, generator=gen).to(dtype)
    p0 = torch.rand(T, generator=gen)
    results = []
    for device in ("cpu", "cuda"):
        x = x0.to(device).requires_grad_()
        p = p0.to(device).requires_grad_()
        y, yp = mt.moe_sort_chunks_by_index_with_probs(x, p, sizes.to(device), order.to(device))
        (y.float().square().sum() + (yp * yp).sum()).backward()
        results.append([y.detach(), yp.detach(), x.grad, p.grad])
    for want, got in zip(*results):
        assert got.device.type == "cuda" and torch.equal(got.cpu(), want)
    with pytest.raises(ValueError, match=r"split_sizes sums to"):
        moeperm.sort_chunks(x0.cuda(), sizes.cuda() + 1, order.cuda())


@pytest.mark.parametrize("map_dtype", [torch.bool, torch.int32], ids=["bool", "int32"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("drop_and_pad", [False, True], ids=["dropless", "droppad"])
def test_cuda_ragged_pair_matches_cpu_bitwise(drop_and_pad, dtype, map_dtype):
    """The ragged pair's four CUDA kernels (Megatron's permute -> unpermute with probs, and
    autograd through both) against the CPU: any number of experts per token, fp32 probs with
    any token dtype, maps of int32 values a one-byte read would miss, capacity dropping."""
    import moeperm.megatron as mm
    gen = torch.Generator().manual_seed(11)
    T, E, H = 301, 7, 200
    routed = torch.rand(T, E, generator=gen) < torch.rand(T, 1, generator=gen)
    m0 = (routed.to(torch.int32) * 256) if map_dtype == torch.int32 else routed
    x0 = torch.randn(T, H, generator=gen).to(dtype)
    p0 = torch.rand(T, E, generator=gen) * routed
    rows = E * (T // 9) if drop_and_pad else None
    results = []
    for device in ("cpu", "cuda"):
        x = x0.to(device).requires_grad_()
        p = p0.to(device).requires_grad_()
        m = m0.to(device)
        y, _, s = mm.permute(x, m, num_out_tokens=rows, drop_and_pad=drop_and_pad)
        out = mm.unpermute(y * 1.5, s, x.shape, probs=p, routing_map=m,
                           drop_and_pad=drop_and_pad)
        out.float().square().sum().backward()
        results.append([y.detach(), s, out.detach(), x.grad, p.grad])
    for want, got in zip(*results):
        assert got.device.type == "cuda" and got.dtype == want.dtype
        assert torch.equal(got.cpu(), want)
    bad = results[1][1].clone()
    bad[0] = T
    with pytest.raises(ValueError, match=rf"sorted_indices\[0\] = {T}"):
        mm.unpermute(results[1][0], bad, (T, H))


@pytest.mark.parametrize("drop_and_pad", [False, True], ids=["dropless", "droppad"])
def test_cuda_megatron_dispatcher_with_and_without_the_patch(drop_and_pad):
    """The GPU half of test_megatron_dispatcher.py: Megatron-core's AlltoAll dispatcher with
    its real CUDA streams and device copies (no host shims), one rank over NCCL, on the GPU,
    with and without moeperm.megatron.patch() (its ragged pair and chunk sort on the CUDA
    backend) against the float64 unpatched run."""
    pytest.importorskip("megatron.core")
    if not torch.distributed.is_nccl_available():
        pytest.skip("needs PyTorch with NCCL")
    import socket
    from test_megatron_dispatcher import CASES, _run_case, check_errors
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    torch.cuda.set_device(0)
    torch.distributed.init_process_group("nccl", init_method=f"tcp://127.0.0.1:{port}",
                                         rank=0, world_size=1)
    try:
        for case in (c for c in CASES if c["drop_and_pad"] == drop_and_pad):
            check_errors(0, _run_case(0, case, world=1, device="cuda"), case["dtype"])
    finally:
        torch.distributed.destroy_process_group()
