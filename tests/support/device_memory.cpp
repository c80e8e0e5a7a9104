#include "device_memory.hpp"

#include <acl/acl.h>
#include <gtest/gtest.h>

#include <utility>

namespace moeperm::testing {

void free_checked(acl::DeviceMemoryPtr memory) {
  if (memory) {
    EXPECT_EQ(aclrtFree(memory.release()), ACL_SUCCESS) << aclGetRecentErrMsg();
  }
}

DeviceProblem::DeviceProblem(problem_model::Problem &p)
    : tensors_{&p.tokens,         &p.routing_map,     &p.probs, &p.permuted_tokens,
               &p.permuted_probs, &p.sorted_indices,  &p.grad,  &p.probs_grad,
               &p.tokens_grad,    &p.dense_probs_grad} {
  for (problem_model::HostTensor *t : tensors_) {
    if (t->storage.empty()) continue;
    void *d = nullptr;
    EXPECT_EQ(aclrtMalloc(&d, t->storage.size(), ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS)
        << aclGetRecentErrMsg();
    device_[t->data()] = acl::DeviceMemoryPtr(d);
    EXPECT_EQ(aclrtMemcpy(d, t->storage.size(), t->storage.data(), t->storage.size(),
                          ACL_MEMCPY_HOST_TO_DEVICE),
              ACL_SUCCESS)
        << aclGetRecentErrMsg();
  }
}

DeviceProblem::~DeviceProblem() {
  for (auto &[host, d] : device_) free_checked(std::move(d));
}

void *DeviceProblem::operator()(const void *host) const {
  if (!host) return nullptr;
  auto it = device_.find(host);
  if (it == device_.end()) {
    ADD_FAILURE() << "device run: a data pointer outside the problem's tensors";
    return nullptr;
  }
  return it->second.get();
}

void DeviceProblem::download() {
  for (problem_model::HostTensor *t : tensors_)
    if (!t->storage.empty()) {
      EXPECT_EQ(aclrtMemcpy(t->storage.data(), t->storage.size(), (*this)(t->data()),
                            t->storage.size(), ACL_MEMCPY_DEVICE_TO_HOST),
                ACL_SUCCESS)
          << aclGetRecentErrMsg();
    }
}

DeviceWorkspace::DeviceWorkspace(uint64_t bytes) : bytes_(bytes) {
  if (bytes_) {
    void *p = nullptr;
    EXPECT_EQ(aclrtMalloc(&p, bytes_, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS)
        << aclGetRecentErrMsg();
    memory_.reset(p);
  }
}

DeviceWorkspace::~DeviceWorkspace() { free_checked(std::move(memory_)); }

}  // namespace moeperm::testing
