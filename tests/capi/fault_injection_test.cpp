// Fault injection (docs/robustness.md): the runtime's allocation points fail on demand
// (capi/fault_injection.hpp) and every failure must come back as a status code with a message,
// leave the runtime usable, and leak nothing. The last point is checked twice: the global
// environment's aclFinalize fails if any tensor, allocation, stream or executor is still
// live, and the asan preset runs this binary with LeakSanitizer on.
#include <acl/acl.h>
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "acl_support.hpp"
#include "capi/fault_injection.hpp"
#include "device_memory.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

std::string message() { return aclGetRecentErrMsg(); }

// Device memory owned the way a CANN program owns it: every runtime status is returned, and
// whatever was obtained is released by the destructor.
struct Uploaded {
  acl::DeviceMemoryPtr device;
  size_t bytes = 0;
  AclTensorPtr tensor;

  int32_t allocate(size_t n) {
    bytes = n;
    void *p = nullptr;
    const int32_t status = aclrtMalloc(&p, n, ACL_MEM_MALLOC_HUGE_FIRST);
    device.reset(p);
    return status;
  }
  int32_t upload(const HostTensor &host) {
    if (int32_t s = allocate(host.storage.size()); s != ACL_SUCCESS) return s;
    if (int32_t s =
            aclrtMemcpy(device.get(), bytes, host.storage.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE);
        s != ACL_SUCCESS)
      return s;
    tensor = make_acl_tensor(host.desc, device.get());
    return tensor ? ACL_SUCCESS : ACL_ERROR_BAD_ALLOC;
  }
  void download(HostTensor &host) const {
    EXPECT_EQ(
        aclrtMemcpy(host.storage.data(), bytes, device.get(), bytes, ACL_MEMCPY_DEVICE_TO_HOST),
        ACL_SUCCESS)
        << aclGetRecentErrMsg();
  }
  ~Uploaded() {
    tensor.reset();  // before the memory it views
    free_checked(std::move(device));
  }
};

class FaultInjection : public ::testing::Test {
 protected:
  void TearDown() override { moeperm_fault_reset(); }
};

TEST_F(FaultInjection, AclrtMallocFailureIsBadAllocWithAMessage) {
  moeperm_fault_inject(MOEPERM_FAULT_ACLRT_MALLOC, 0, 1);
  void *p = reinterpret_cast<void *>(0x1);
  EXPECT_EQ(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC);
  EXPECT_EQ(p, nullptr) << "a failed aclrtMalloc must not leave a stale pointer behind";
  EXPECT_NE(message().find("aclrtMalloc: cannot allocate 4096 bytes"), std::string::npos)
      << message();
  EXPECT_EQ(moeperm_fault_injected(MOEPERM_FAULT_ACLRT_MALLOC), 1);
  // The fault was one-shot: the runtime works again.
  ASSERT_EQ(aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS) << message();
  EXPECT_EQ(aclrtFree(p), ACL_SUCCESS);
}

// A CANN program (upload inputs, allocate outputs and the workspace, run the backward,
// download) whose n-th aclrtMalloc fails, for every n: the program sees the failure where
// it happens, unwinds with the runtime's own calls, and the runtime is left with nothing
// live (checked by aclFinalize at exit and by LeakSanitizer).
TEST_F(FaultInjection, EveryAclrtMallocOfAProgramCanFail) {
  ProblemSpec spec;
  spec.T = 37, spec.H = 19, spec.E = 5, spec.K = 2, spec.dtype = DType::bf16;
  spec.probs_dtype = DType::f32;
  Problem base = tools::make_problem(spec);
  run_forward(base, Backend::reference);
  Problem want = base;
  run_backward(want, Backend::reference);

  int allocations_of_a_clean_run = -1;
  for (int fail_at = 0;; ++fail_at) {
    SCOPED_TRACE("aclrtMalloc number " + std::to_string(fail_at) + " fails");
    Problem p = base;
    moeperm_fault_inject(MOEPERM_FAULT_ACLRT_MALLOC, fail_at, 1);
    int32_t status = 0;
    std::string failure;  // the failing call's message (later calls replace the last one)
    {
      std::vector<std::unique_ptr<Uploaded>> tensors;
      for (HostTensor *t : {&p.grad, &p.probs_grad, &p.sorted_indices, &p.routing_map,
                            &p.tokens_grad, &p.dense_probs_grad}) {
        tensors.push_back(std::make_unique<Uploaded>());
        status = tensors.back()->upload(*t);
        if (status != ACL_SUCCESS) {
          failure = message();
          break;
        }
      }
      if (status == ACL_SUCCESS) {
        uint64_t ws_size = 0;
        aclOpExecutor *exec = nullptr;
        ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
                      tensors[0]->tensor.get(), tensors[1]->tensor.get(), tensors[2]->tensor.get(),
                      tensors[3]->tensor.get(), spec.E, spec.T, false, tensors[4]->tensor.get(),
                      tensors[5]->tensor.get(), &ws_size, &exec),
                  0)
            << message();
        Uploaded ws;
        if (ws_size > 0) status = ws.allocate(ws_size);
        if (status != ACL_SUCCESS) {
          failure = message();
          discard_executor(exec, true);
        } else {
          EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGrad(ws.device.get(), ws_size, exec, nullptr),
                    0)
              << message();
          tensors[4]->download(p.tokens_grad);
          tensors[5]->download(p.dense_probs_grad);
        }
      }
    }
    const int64_t injected = moeperm_fault_injected(MOEPERM_FAULT_ACLRT_MALLOC);
    moeperm_fault_reset();
    if (injected == 0) {  // fail_at is past the program's last allocation: a clean run
      ASSERT_EQ(status, ACL_SUCCESS) << message();
      EXPECT_TRUE(BitwiseEqual(p.tokens_grad, want.tokens_grad));
      EXPECT_TRUE(BitwiseEqual(p.dense_probs_grad, want.dense_probs_grad));
      allocations_of_a_clean_run = fail_at;
      break;
    }
    EXPECT_EQ(status, ACL_ERROR_BAD_ALLOC);
    EXPECT_NE(failure.find("aclrtMalloc: cannot allocate"), std::string::npos) << failure;
  }
  // Six tensors and the CPU backward's workspace of a drop-less problem with probs (its
  // ranks): every one of them was made to fail once.
  EXPECT_EQ(allocations_of_a_clean_run, 7);
}

TEST_F(FaultInjection, AclCreateTensorFailureIsNullWithAMessage) {
  const int64_t dims[] = {3, 4};
  float data[12] = {};
  moeperm_fault_inject(MOEPERM_FAULT_CREATE_TENSOR, 0, 1);
  EXPECT_EQ(aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 2, data), nullptr);
  EXPECT_NE(message().find("aclCreateTensor: out of host memory"), std::string::npos) << message();
  aclTensor *t = aclCreateTensor(dims, 2, ACL_FLOAT, nullptr, 0, ACL_FORMAT_ND, dims, 2, data);
  ASSERT_NE(t, nullptr) << message();
  EXPECT_EQ(aclDestroyTensor(t), ACL_SUCCESS);
}

TEST_F(FaultInjection, AclrtCreateStreamFailureIsARuntimeFailureWithAMessage) {
  moeperm_fault_inject(MOEPERM_FAULT_CREATE_STREAM, 0, 1);
  aclrtStream s = reinterpret_cast<aclrtStream>(0x1);
  EXPECT_EQ(aclrtCreateStream(&s), ACL_ERROR_RT_FAILURE);
  EXPECT_NE(message().find("aclrtCreateStream: cannot start the stream"), std::string::npos)
      << message();
  ASSERT_EQ(aclrtCreateStream(&s), ACL_SUCCESS) << message();
  EXPECT_EQ(aclrtDestroyStream(s), ACL_SUCCESS);
}

// Allocating the executor fails inside the first phase (std::bad_alloc): the call returns
// 361001 with a message, no executor is handed out, and none is left live.
TEST_F(FaultInjection, ExecutorAllocationFailureInTheFirstPhase) {
  ProblemSpec spec;
  spec.T = 9, spec.H = 5, spec.E = 3, spec.K = 2, spec.dtype = DType::f32;
  spec.probs_dtype = DType::f32;
  Problem p = tools::make_problem(spec);
  auto x = make_acl_tensor(p.tokens), m = make_acl_tensor(p.routing_map);
  auto pr = make_acl_tensor(p.probs), y = make_acl_tensor(p.permuted_tokens);
  auto yp = make_acl_tensor(p.permuted_probs), s = make_acl_tensor(p.sorted_indices);
  moeperm_fault_inject(MOEPERM_FAULT_EXECUTOR, 0, 1);
  uint64_t ws = 0;
  aclOpExecutor *e = nullptr;
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                x.get(), m.get(), pr.get(), 18, false, y.get(), yp.get(), s.get(), &ws, &e),
            361001);
  EXPECT_EQ(e, nullptr);
  EXPECT_NE(
      message().find("aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize: out of host memory"),
      std::string::npos)
      << message();
  EXPECT_TRUE(untouched(p.permuted_tokens));
  // The same call succeeds afterwards and runs.
  ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                x.get(), m.get(), pr.get(), 18, false, y.get(), yp.get(), s.get(), &ws, &e),
            0)
      << message();
  std::vector<std::byte> work(ws);
  EXPECT_EQ(aclnnMoeTokenPermuteWithRoutingMap(work.data(), ws, e, nullptr), 0) << message();
  Problem want = p;
  run_forward(want, Backend::reference);
  EXPECT_TRUE(SameOutputs(p, want));
}

// aclrtDestroyStream with work still queued: the work completes (its outputs are right and
// nothing it uses is freed under it) before the stream goes away.
TEST_F(FaultInjection, StreamDestroyedWithWorkPending) {
  ProblemSpec spec;
  spec.T = 1500, spec.H = 257, spec.E = 16, spec.K = 3, spec.dtype = DType::bf16;
  spec.probs_dtype = DType::bf16;
  constexpr int kCalls = 6;
  std::vector<Problem> problems, wants;
  for (int i = 0; i < kCalls; ++i) {
    spec.seed = 100 + static_cast<uint64_t>(i);
    problems.push_back(tools::make_problem(spec));
    wants.push_back(problems.back());
    run_forward(wants.back(), Backend::reference);
  }
  aclrtStream stream = nullptr;
  ASSERT_EQ(aclrtCreateStream(&stream), ACL_SUCCESS);
  std::vector<AclTensorPtr> tensors;
  std::vector<std::vector<std::byte>> workspaces(kCalls);
  for (int i = 0; i < kCalls; ++i) {
    Problem &p = problems[static_cast<size_t>(i)];
    for (HostTensor *t : {&p.tokens, &p.routing_map, &p.probs, &p.permuted_tokens,
                          &p.permuted_probs, &p.sorted_indices})
      tensors.push_back(make_acl_tensor(*t));
    const size_t b = tensors.size() - 6;
    uint64_t ws = 0;
    aclOpExecutor *e = nullptr;
    ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                  tensors[b].get(), tensors[b + 1].get(), tensors[b + 2].get(), spec.T * spec.K,
                  false, tensors[b + 3].get(), tensors[b + 4].get(), tensors[b + 5].get(), &ws, &e),
              0)
        << message();
    workspaces[static_cast<size_t>(i)].resize(ws);
    ASSERT_EQ(aclnnMoeTokenPermuteWithRoutingMap(workspaces[static_cast<size_t>(i)].data(), ws, e,
                                                 stream),
              0)
        << message();
  }
  EXPECT_EQ(aclrtDestroyStream(stream), ACL_SUCCESS) << message();
  for (int i = 0; i < kCalls; ++i)
    EXPECT_TRUE(SameOutputs(problems[static_cast<size_t>(i)], wants[static_cast<size_t>(i)]))
        << "call " << i;
}

TEST_F(FaultInjection, ArmingIsCountedAndDisarmedByReset) {
  moeperm_fault_inject(MOEPERM_FAULT_ACLRT_MALLOC, 1, -1);  // the second call on, every call
  void *a = nullptr, *b = nullptr;
  ASSERT_EQ(aclrtMalloc(&a, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtMalloc(&b, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC);
  EXPECT_EQ(aclrtMalloc(&b, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_ERROR_BAD_ALLOC);
  EXPECT_EQ(moeperm_fault_injected(MOEPERM_FAULT_ACLRT_MALLOC), 2);
  moeperm_fault_reset();
  ASSERT_EQ(aclrtMalloc(&b, 64, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(a), ACL_SUCCESS);
  EXPECT_EQ(aclrtFree(b), ACL_SUCCESS);
  // Out-of-range points are ignored, not undefined behaviour.
  moeperm_fault_inject(static_cast<moeperm_fault_point>(99), 0, 1);
  EXPECT_EQ(moeperm_fault_injected(static_cast<moeperm_fault_point>(-1)), 0);
}

}  // namespace
}  // namespace moeperm::testing
