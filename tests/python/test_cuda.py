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
