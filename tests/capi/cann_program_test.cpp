// A program written the way CANN's samples are, against the CANN headers only, from aclInit to
// aclFinalize: set the device, create a stream, allocate device memory, copy the inputs over,
// wrap them in aclTensors, run both two-phase operators (forward, then backward on the
// forward's sortedIndices) on the stream, synchronise, copy back, release everything. The
// results are compared with the C++ reference backend on the same data.
//
// Each test performs the whole aclInit..aclFinalize sequence itself (no global environment),
// so the tests are independent of each other's order.
#include <acl/acl.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h>
#include <gtest/gtest.h>

#include <vector>

#include "testing.hpp"

namespace moeperm::testing {
namespace {

#define CHECK_ACL(expr) ASSERT_EQ((expr), 0) << #expr << ": " << aclGetRecentErrMsg()

// One device buffer per tensor, as a CANN program keeps them.
struct DeviceBuffer {
  void *ptr = nullptr;
  size_t bytes = 0;
  aclTensor *tensor = nullptr;
};

// aclrtMalloc + aclrtMemcpy(H2D) + aclCreateTensor, spelled out.
void upload(const HostTensor &h, DeviceBuffer &d) {
  d.bytes = h.storage.size();
  CHECK_ACL(aclrtMalloc(&d.ptr, d.bytes, ACL_MEM_MALLOC_HUGE_FIRST));
  CHECK_ACL(aclrtMemcpy(d.ptr, d.bytes, h.storage.data(), d.bytes, ACL_MEMCPY_HOST_TO_DEVICE));
  const std::vector<int64_t> &dims = h.desc.shape;
  const int64_t storage = *h.desc.storage_elements;
  d.tensor =
      aclCreateTensor(dims.data(), dims.size(), static_cast<aclDataType>(h.desc.dtype),
                      h.desc.strides.data(), h.desc.offset, ACL_FORMAT_ND, &storage, 1, d.ptr);
  ASSERT_NE(d.tensor, nullptr) << aclGetRecentErrMsg();
}

void run_cann_program(Problem &host, bool on_stream) {
  CHECK_ACL(aclInit(nullptr));
  CHECK_ACL(aclrtSetDevice(0));
  aclrtStream stream = nullptr;
  if (on_stream) {
    CHECK_ACL(aclrtCreateStream(&stream));
  }

  const bool dp = host.spec.drop_and_pad;
  DeviceBuffer x, m, pr, y, yp, s, g, pg, tg, pgo;
  HostTensor *hosts[] = {
      &host.tokens,         &host.routing_map,     &host.probs, &host.permuted_tokens,
      &host.permuted_probs, &host.sorted_indices,  &host.grad,  &host.probs_grad,
      &host.tokens_grad,    &host.dense_probs_grad};
  DeviceBuffer *devs[] = {&x, &m, &pr, &y, &yp, &s, &g, &pg, &tg, &pgo};
  for (size_t i = 0; i < 10; ++i) upload(*hosts[i], *devs[i]);

  // Forward: phase 1, workspace of exactly the reported size, phase 2 on the stream.
  uint64_t ws_size = 0;
  aclOpExecutor *exec = nullptr;
  CHECK_ACL(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
      x.tensor, m.tensor, pr.tensor, host.spec.num_out_tokens(), dp, y.tensor, yp.tensor, s.tensor,
      &ws_size, &exec));
  void *ws = nullptr;
  if (ws_size > 0) {
    CHECK_ACL(aclrtMalloc(&ws, ws_size, ACL_MEM_MALLOC_HUGE_FIRST));
  }
  CHECK_ACL(aclnnMoeTokenPermuteWithRoutingMap(ws, ws_size, exec, stream));

  // Backward, enqueued behind the forward: it reads the forward's sortedIndices on device.
  uint64_t grad_ws_size = 0;
  CHECK_ACL(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
      g.tensor, pg.tensor, s.tensor, m.tensor, host.spec.E, host.spec.T, dp, tg.tensor, pgo.tensor,
      &grad_ws_size, &exec));
  void *grad_ws = nullptr;
  if (grad_ws_size > 0) {
    CHECK_ACL(aclrtMalloc(&grad_ws, grad_ws_size, ACL_MEM_MALLOC_HUGE_FIRST));
  }
  CHECK_ACL(aclnnMoeTokenPermuteWithRoutingMapGrad(grad_ws, grad_ws_size, exec, stream));
  CHECK_ACL(aclrtSynchronizeStream(stream));

  for (size_t i = 0; i < 10; ++i)  // outputs (and unchanged inputs) back to the host
    CHECK_ACL(aclrtMemcpy(hosts[i]->storage.data(), devs[i]->bytes, devs[i]->ptr, devs[i]->bytes,
                          ACL_MEMCPY_DEVICE_TO_HOST));

  for (DeviceBuffer *d : devs) {
    CHECK_ACL(aclDestroyTensor(d->tensor));
    CHECK_ACL(aclrtFree(d->ptr));
  }
  if (ws) {
    CHECK_ACL(aclrtFree(ws));
  }
  if (grad_ws) {
    CHECK_ACL(aclrtFree(grad_ws));
  }
  if (stream) {
    CHECK_ACL(aclrtDestroyStream(stream));
  }
  CHECK_ACL(aclrtResetDevice(0));
  CHECK_ACL(aclFinalize());  // 0 only if nothing above leaked
}

struct Case {
  const char *name;
  bool dp;
  DType values, probs;
  bool on_stream;
};

class CannProgram : public ::testing::TestWithParam<Case> {};

TEST_P(CannProgram, RunsUnchangedAndMatchesTheReference) {
  const Case &c = GetParam();
  ProblemSpec s;
  s.T = 300, s.H = 65, s.E = 16, s.K = 4, s.capacity = 24, s.drop_and_pad = c.dp;
  s.dtype = c.values, s.probs_dtype = c.probs;
  Problem cann = tools::make_problem(s);
  Problem ref = cann;
  run_cann_program(cann, c.on_stream);
  run_both(ref, Backend::reference);
  EXPECT_TRUE(SameOutputs(cann, ref));
}

INSTANTIATE_TEST_SUITE_P(
    Programs, CannProgram,
    ::testing::Values(Case{"dropless_bf16_f32probs_stream", false, DType::bf16, DType::f32, true},
                      Case{"droppad_f32_stream", true, DType::f32, DType::f32, true},
                      Case{"dropless_f16_default_stream", false, DType::f16, DType::f16, false},
                      Case{"droppad_bf16_default_stream", true, DType::bf16, DType::bf16, false}),
    [](const ::testing::TestParamInfo<Case> &param_info) {
      return std::string(param_info.param.name);
    });

// CANN callers often pass no strides (row-major) and storageDims equal to viewDims; the
// operators must read such tensors as contiguous.
TEST(CannProgramTensors, WithoutStridesAreRowMajor) {
  CHECK_ACL(aclInit(nullptr));
  ProblemSpec spec;
  spec.T = 37, spec.H = 16, spec.E = 8, spec.K = 2, spec.dtype = spec.probs_dtype = DType::f32;
  Problem p = tools::make_problem(spec);
  Problem ref = p;
  run_both(ref, Backend::reference);
  std::vector<aclTensor *> made;
  auto plain = [&](HostTensor &h) {
    const std::vector<int64_t> &dims = h.desc.shape;
    aclTensor *t = aclCreateTensor(dims.data(), dims.size(), static_cast<aclDataType>(h.desc.dtype),
                                   nullptr, 0, ACL_FORMAT_ND, dims.data(), dims.size(), h.data());
    made.push_back(t);
    return t;
  };
  uint64_t ws = 0;
  aclOpExecutor *exec = nullptr;
  ASSERT_EQ(
      aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
          plain(p.tokens), plain(p.routing_map), plain(p.probs), spec.num_out_tokens(), false,
          plain(p.permuted_tokens), plain(p.permuted_probs), plain(p.sorted_indices), &ws, &exec),
      0)
      << aclGetRecentErrMsg();
  std::vector<std::byte> work(ws);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMap(work.data(), ws, exec, nullptr), 0);
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
                plain(p.grad), plain(p.probs_grad), plain(p.sorted_indices), plain(p.routing_map),
                spec.E, spec.T, false, plain(p.tokens_grad), plain(p.dense_probs_grad), &ws, &exec),
            0)
      << aclGetRecentErrMsg();
  work.assign(ws, std::byte{0});
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(work.data(), ws, exec, nullptr), 0);
  EXPECT_TRUE(SameOutputs(p, ref));
  for (aclTensor *t : made) CHECK_ACL(aclDestroyTensor(t));
  CHECK_ACL(aclFinalize());
}

}  // namespace
}  // namespace moeperm::testing
