#include "gpu_mode.hpp"

#include <acl/acl.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "acl_support.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

// Device copies of every tensor of a problem, keyed by the host storage they mirror.
class DeviceProblem {
 public:
  explicit DeviceProblem(tools::Problem &p)
      : tensors_{&p.tokens,         &p.routing_map,     &p.probs, &p.permuted_tokens,
                 &p.permuted_probs, &p.sorted_indices,  &p.grad,  &p.probs_grad,
                 &p.tokens_grad,    &p.dense_probs_grad} {
    for (tools::HostTensor *t : tensors_) {
      if (t->storage.empty()) continue;
      void *d = nullptr;
      EXPECT_EQ(aclrtMalloc(&d, t->storage.size(), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS)
          << aclGetRecentErrMsg();
      EXPECT_EQ(aclrtMemcpy(d, t->storage.size(), t->storage.data(), t->storage.size(),
                            ACL_MEMCPY_HOST_TO_DEVICE),
                ACL_SUCCESS)
          << aclGetRecentErrMsg();
      device_[t->data()] = d;
    }
  }
  ~DeviceProblem() {
    for (auto &[host, d] : device_) {
      EXPECT_EQ(aclrtFree(d), ACL_SUCCESS) << aclGetRecentErrMsg();
    }
  }
  DeviceProblem(const DeviceProblem &) = delete;
  DeviceProblem &operator=(const DeviceProblem &) = delete;

  // The device address of a host storage pointer (null stays null).
  void *operator()(const void *host) const {
    if (!host) return nullptr;
    auto it = device_.find(host);
    if (it == device_.end()) {
      ADD_FAILURE() << "gpu mode: a data pointer outside the problem's tensors";
      return nullptr;
    }
    return it->second;
  }
  void download() {
    for (tools::HostTensor *t : tensors_)
      if (!t->storage.empty()) {
        EXPECT_EQ(aclrtMemcpy(t->storage.data(), t->storage.size(), (*this)(t->data()),
                              t->storage.size(), ACL_MEMCPY_DEVICE_TO_HOST),
                  ACL_SUCCESS)
            << aclGetRecentErrMsg();
      }
  }

 private:
  std::vector<tools::HostTensor *> tensors_;
  std::map<const void *, void *> device_;
};

class DeviceWorkspace {
 public:
  explicit DeviceWorkspace(uint64_t bytes) : bytes_(bytes) {
    if (bytes_) {
      EXPECT_EQ(aclrtMalloc(&ptr_, bytes_, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS)
          << aclGetRecentErrMsg();
    }
  }
  ~DeviceWorkspace() {
    if (ptr_) {
      EXPECT_EQ(aclrtFree(ptr_), ACL_SUCCESS) << aclGetRecentErrMsg();
    }
  }
  DeviceWorkspace(const DeviceWorkspace &) = delete;
  DeviceWorkspace &operator=(const DeviceWorkspace &) = delete;
  std::span<std::byte> span() const { return {static_cast<std::byte *>(ptr_), bytes_}; }
  void *get() const { return ptr_; }

 private:
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

class GpuEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    if (!cuda_built()) GTEST_SKIP() << "no CUDA GPU: this moeperm was built without CUDA";
    if (cuda_device_count() == 0) GTEST_SKIP() << "no CUDA GPU: the CUDA driver reports none";
    // The capi binaries' own environment may have set the device already; repeating is fine.
    ASSERT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << aclGetRecentErrMsg();
  }
};

[[maybe_unused]] const bool kRegistered =
    gpu_mode() && ::testing::AddGlobalTestEnvironment(new GpuEnvironment) != nullptr;

}  // namespace

bool gpu_mode() {
  const char *v = std::getenv("MOEPERM_TEST_DEVICE");
  return v && std::string(v) == "cuda";
}

void run_on_gpu(tools::Problem &p, bool grad) {
  DeviceProblem dev(p);
  try {
    if (!grad) {
      const Plan plan = plan_permute(p.permute_desc(), {Backend::cuda});
      DeviceWorkspace ws(plan.workspace_bytes());
      const PermuteData h = p.permute_data();
      const PermuteData d{dev(h.tokens),          dev(h.routing_map),    dev(h.probs),
                          dev(h.permuted_tokens), dev(h.permuted_probs), dev(h.sorted_indices)};
      run(plan, d, ws.span(), nullptr);
    } else {
      const Plan plan = plan_permute_grad(p.grad_desc(), {Backend::cuda});
      DeviceWorkspace ws(plan.workspace_bytes());
      const PermuteGradData h = p.grad_data();
      const PermuteGradData d{dev(h.permuted_token_output_grad),
                              dev(h.permuted_probs_output_grad),
                              dev(h.sorted_indices),
                              dev(h.routing_map),
                              dev(h.tokens_grad_out),
                              dev(h.probs_grad_out)};
      run(plan, d, ws.span(), nullptr);
    }
  } catch (...) {
    dev.download();  // a failed run must have written nothing: let the test see that
    throw;
  }
  dev.download();
}

CStatus c_run_on_gpu(tools::Problem &p, bool grad) {
  DeviceProblem dev(p);
  const bool probs = p.spec.with_probs;
  auto tensor = [&](tools::HostTensor &t) { return make_acl_tensor(t.desc, dev(t.data())); };
  uint64_t ws_size = 0;
  aclOpExecutor *exec = nullptr;
  int32_t st;
  if (!grad) {
    auto x = tensor(p.tokens), m = tensor(p.routing_map), y = tensor(p.permuted_tokens),
         s = tensor(p.sorted_indices);
    AclTensorPtr pr = probs ? tensor(p.probs) : nullptr;
    AclTensorPtr yp = probs ? tensor(p.permuted_probs) : nullptr;
    st = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
        x.get(), m.get(), pr.get(), p.spec.num_out_tokens(), p.spec.drop_and_pad, y.get(), yp.get(),
        s.get(), &ws_size, &exec);
    if (st != 0) return c_status(st);
    DeviceWorkspace ws(ws_size);
    st = aclnnMoeTokenPermuteWithRoutingMap(ws.get(), ws_size, exec, nullptr);
  } else {
    auto g = tensor(p.grad), s = tensor(p.sorted_indices), m = tensor(p.routing_map),
         tg = tensor(p.tokens_grad);
    AclTensorPtr pg_in = probs ? tensor(p.probs_grad) : nullptr;
    AclTensorPtr pg_out = probs ? tensor(p.dense_probs_grad) : nullptr;
    st = aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
        g.get(), pg_in.get(), s.get(), m.get(), p.spec.E, p.spec.T, p.spec.drop_and_pad, tg.get(),
        pg_out.get(), &ws_size, &exec);
    if (st != 0) return c_status(st);
    DeviceWorkspace ws(ws_size);
    st = aclnnMoeTokenPermuteWithRoutingMapGrad(ws.get(), ws_size, exec, nullptr);
  }
  CStatus result = c_status(st);
  dev.download();
  return result;
}

}  // namespace moeperm::testing
