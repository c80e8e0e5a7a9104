"""Error paths: the operator's status becomes a Python exception carrying its message.

161001 / 161002 raise moeperm.InvalidArgumentError (a ValueError), any other code
moeperm.OperatorError (a RuntimeError); both are moeperm.Error with the code in `.code`.
"""

import re

import numpy as np
import pytest
import torch

import moeperm
from moeperm import permute_with_routing_map as permute
from moeperm import permute_with_routing_map_grad as permute_grad

FWD = "aclnnMoeTokenPermuteWithRoutingMap: "
BWD = "aclnnMoeTokenPermuteWithRoutingMapGrad: "


def tokens(t=4, h=3, dtype=torch.float32):
    return torch.randn(t, h).to(dtype)


def rmap(t=4, e=3):
    m = torch.zeros(t, e, dtype=torch.bool)
    m[:, 0] = True
    return m


def expect(exc_type, code, message, fn):
    """fn() raises exc_type with .code == code and exactly `message` (a full match)."""
    with pytest.raises(exc_type) as info:
        fn()
    assert info.value.code == code
    assert str(info.value) == message
    return info.value


def test_exception_classes():
    assert issubclass(moeperm.InvalidArgumentError, moeperm.Error)
    assert issubclass(moeperm.InvalidArgumentError, ValueError)
    assert issubclass(moeperm.OperatorError, moeperm.Error)
    assert issubclass(moeperm.OperatorError, RuntimeError)
    assert not issubclass(moeperm.OperatorError, ValueError)


FORWARD_CASES = [
    # (description, call, code, message)
    ("negative numOutTokens", lambda: permute(tokens(), rmap(), num_out_tokens=-1), 161002,
     FWD + "numOutTokens must be >= 0, got -1"),
    ("tokens dtype", lambda: permute(tokens().int(), rmap(), num_out_tokens=4), 161002,
     FWD + "tokens must have dtype bfloat16, float16 or float32, got int32"),
    ("float64 tokens", lambda: permute(tokens().double(), rmap(), num_out_tokens=4), 161002,
     FWD + "tokens must have dtype bfloat16, float16 or float32, got float64"),
    ("routing map dtype", lambda: permute(tokens(), rmap().float(), num_out_tokens=4), 161002,
     FWD + "routingMap must have dtype int8 or bool, got float32"),
    ("probs dtype", lambda: permute(tokens(), rmap(), torch.rand(4, 3).half(), 4), 161002,
     FWD + "probsOptional must have dtype float32 (to match tokens), got float16"),
    ("routing map rank", lambda: permute(tokens(), rmap()[0], num_out_tokens=4), 161002,
     FWD + "routingMap: expected 2-D, got 1-D [3]"),
    ("probs shape", lambda: permute(tokens(), rmap(), torch.rand(4, 2), 4), 161002,
     FWD + "probsOptional has shape [4, 2], expected [4, 3] (the shape of routingMap)"),
    ("routing map rows", lambda: permute(tokens(), rmap(5), num_out_tokens=4), 161002,
     FWD + "routingMap has shape [5, 3], expected [4, numExperts] (its rows are the tokens "
     "of tokens [4, 3])"),
    ("capacity above T", lambda: permute(tokens(), rmap(), num_out_tokens=15, drop_and_pad=True),
     161002, FWD + "capacity = numOutTokens / numExperts = 15 / 3 = 5 exceeds the 4 tokens an "
     "expert can be given (dropAndPad=true)"),
    ("a token with more than topK experts (data)",
     lambda: permute(tokens(), torch.ones(4, 3, dtype=torch.bool), num_out_tokens=8), 161002,
     FWD + "routingMap row 0 selects 3 experts, more than topK = numOutTokens / tokens = 2 "
     "(dropAndPad=false); nothing was written"),
]


@pytest.mark.parametrize("call,code,message", [c[1:] for c in FORWARD_CASES],
                         ids=[c[0] for c in FORWARD_CASES])
def test_forward_argument_errors_are_value_errors(call, code, message):
    expect(ValueError, code, message, call)


def test_topk_above_cann_limit_is_a_runtime_error():
    err = expect(RuntimeError, 561103,
                 FWD + "topK = 513 exceeds the supported maximum of 512 for dropAndPad=false "
                 "(CANN's tiling limit)",
                 lambda: permute(tokens(), rmap(), num_out_tokens=4 * 513))
    assert isinstance(err, moeperm.OperatorError) and not isinstance(err, ValueError)


def s32(values):
    return torch.tensor(values, dtype=torch.int32)


GRAD_CASES = [
    ("numExperts", lambda: permute_grad(torch.randn(4, 3), None, s32([0, 1, 2, 3]), None, 0, 2),
     161002, BWD + "numExperts must be > 0, got 0"),
    ("tokensNum", lambda: permute_grad(torch.randn(4, 3), None, s32([0, 1, 2, 3]), None, 2, -1),
     161002, BWD + "tokensNum must be > 0, got -1"),
    ("probs grad without routing map",
     lambda: permute_grad(torch.randn(4, 3), torch.randn(4), s32([0, 1, 2, 3]), None, 2, 2), 161001,
     BWD + "routingMapOptional must not be null when permutedProbsOutputGradOptional is given"),
    ("sorted indices dtype",
     lambda: permute_grad(torch.randn(4, 3), None, torch.arange(4), None, 2, 2), 161002,
     BWD + "sortedIndices must have dtype int32, got int64"),
    ("index out of range (data)",
     lambda: permute_grad(torch.randn(4, 3), None, s32([0, 1, 2, 99]), None, 2, 2), 161002,
     BWD + "sortedIndices[3] = 99 is outside [0, 4) or -1 (dropAndPad=false, R=4); "
     "nothing was written"),
]


@pytest.mark.parametrize("call,code,message", [c[1:] for c in GRAD_CASES],
                         ids=[c[0] for c in GRAD_CASES])
def test_grad_argument_errors_are_value_errors(call, code, message):
    expect(moeperm.InvalidArgumentError, code, message, call)


def test_grad_index_error_from_a_drop_and_pad_problem():
    with pytest.raises(ValueError, match=re.escape("sortedIndices[1] = 7 is outside [0, 4)")):
        permute_grad(torch.randn(4, 3), None, s32([0, 7, 1, 2]), None, 2, 4, True)


def test_drop_and_pad_needs_num_out_tokens():
    expect(ValueError, 161002,
           "permute_with_routing_map: num_out_tokens is required when drop_and_pad=True "
           "(it sets capacity = num_out_tokens // num_experts), got None",
           lambda: permute(tokens(), rmap(), drop_and_pad=True))


def test_unsupported_element_type_is_named():
    expect(ValueError, 161002,
           "permute_with_routing_map: tokens has dtype int16, which is no moeperm element type "
           "(float32, float16, bfloat16, int8, bool, int32)",
           lambda: permute(torch.zeros(4, 3, dtype=torch.int16), rmap(), num_out_tokens=4))


def test_not_a_tensor_is_a_type_error():
    with pytest.raises(TypeError, match="tokens must be a PyTorch tensor, a NumPy array or an "
                                        "object with __dlpack__, got list"):
        permute([[1.0, 2.0]], rmap(1, 1))


def test_numpy_errors_carry_the_same_messages():
    expect(ValueError, 161002, FWD + "routingMap must have dtype int8 or bool, got uint8",
           lambda: permute(np.zeros((4, 3), np.float32), np.zeros((4, 3), np.uint8), None, 4))


def test_cuda_tensors_without_cuda_build():
    if moeperm.cuda_built() or not torch.cuda.is_available():
        pytest.skip("needs a GPU and a moeperm built without CUDA")
    with pytest.raises(RuntimeError, match="built without CUDA"):
        permute(tokens().cuda(), rmap().cuda(), num_out_tokens=4)


@pytest.mark.parametrize("version", ["1.13.1", "1.13.0+cpu", "0.4.1"])
def test_an_old_pytorch_gets_a_clear_error_naming_both_versions(monkeypatch, version):
    monkeypatch.setattr(torch, "__version__", version)
    want = rf"PyTorch >= 2\.0 for torch tensors, found {re.escape(version)}"
    with pytest.raises(ImportError, match=want):
        moeperm.permute_with_routing_map(torch.rand(4, 3), rmap(), num_out_tokens=4)
    monkeypatch.setattr(torch, "__version__", "2.0.0")
    moeperm.permute_with_routing_map(torch.rand(4, 3), rmap(), num_out_tokens=4)
