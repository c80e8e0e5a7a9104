#include "acl_support.hpp"

#include "gpu_mode.hpp"

#include <acl/acl.h>

#include <algorithm>
#include <vector>

namespace moeperm::testing {

AclTensorPtr make_acl_tensor(const TensorDesc &d, void *data) {
  std::vector<int64_t> strides = d.strides;
  if (strides.empty()) {  // row-major contiguous, spelled out as a CANN caller would
    strides.assign(d.shape.size(), 1);
    for (size_t i = d.shape.size(); i-- > 1;)
      strides[i - 1] = strides[i] * std::max<int64_t>(d.shape[i], 1);
  }
  const int64_t storage = d.storage_elements.value_or(0);
  return AclTensorPtr(aclCreateTensor(d.shape.data(), d.shape.size(),
                                      static_cast<aclDataType>(d.dtype), strides.data(), d.offset,
                                      ACL_FORMAT_ND, &storage, d.storage_elements ? 1 : 0, data));
}

CStatus c_status(int32_t code) {
  return CStatus{code, code == 0 ? std::string() : std::string(aclGetRecentErrMsg())};
}

CStatus c_forward(Problem &p) {
  if (gpu_mode()) return c_run_on_gpu(p, false);
  const bool probs = p.spec.with_probs;
  auto x = make_acl_tensor(p.tokens), m = make_acl_tensor(p.routing_map);
  auto y = make_acl_tensor(p.permuted_tokens), s = make_acl_tensor(p.sorted_indices);
  AclTensorPtr pr = probs ? make_acl_tensor(p.probs) : nullptr;
  AclTensorPtr yp = probs ? make_acl_tensor(p.permuted_probs) : nullptr;
  uint64_t ws_size = 0;
  aclOpExecutor *exec = nullptr;
  const int32_t st = aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
      x.get(), m.get(), pr.get(), p.spec.num_out_tokens(), p.spec.drop_and_pad, y.get(), yp.get(),
      s.get(), &ws_size, &exec);
  if (st != 0) return c_status(st);
  std::vector<std::byte> ws(static_cast<size_t>(ws_size));
  return c_status(
      aclnnMoeTokenPermuteWithRoutingMap(ws.empty() ? nullptr : ws.data(), ws_size, exec, nullptr));
}

CStatus c_backward(Problem &p) {
  if (gpu_mode()) return c_run_on_gpu(p, true);
  const bool probs = p.spec.with_probs;
  auto g = make_acl_tensor(p.grad), s = make_acl_tensor(p.sorted_indices);
  auto m = make_acl_tensor(p.routing_map), tg = make_acl_tensor(p.tokens_grad);
  AclTensorPtr pg_in = probs ? make_acl_tensor(p.probs_grad) : nullptr;
  AclTensorPtr pg_out = probs ? make_acl_tensor(p.dense_probs_grad) : nullptr;
  uint64_t ws_size = 0;
  aclOpExecutor *exec = nullptr;
  const int32_t st = aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
      g.get(), pg_in.get(), s.get(), m.get(), p.spec.E, p.spec.T, p.spec.drop_and_pad, tg.get(),
      pg_out.get(), &ws_size, &exec);
  if (st != 0) return c_status(st);
  std::vector<std::byte> ws(static_cast<size_t>(ws_size));
  return c_status(aclnnMoeTokenPermuteWithRoutingMapGrad(ws.empty() ? nullptr : ws.data(), ws_size,
                                                         exec, nullptr));
}

DeviceTensor::DeviceTensor(const HostTensor &host) : bytes_(host.storage.size()) {
  EXPECT_EQ(aclrtMalloc(&device_, bytes_, ACL_MEM_MALLOC_HUGE_FIRST), ACL_SUCCESS)
      << aclGetRecentErrMsg();
  EXPECT_EQ(aclrtMemcpy(device_, bytes_, host.storage.data(), bytes_, ACL_MEMCPY_HOST_TO_DEVICE),
            ACL_SUCCESS)
      << aclGetRecentErrMsg();
  tensor_ = make_acl_tensor(host.desc, device_);
}

DeviceTensor::~DeviceTensor() {
  tensor_.reset();
  EXPECT_EQ(aclrtFree(device_), ACL_SUCCESS) << aclGetRecentErrMsg();
}

void DeviceTensor::download(HostTensor &host) const {
  ASSERT_EQ(host.storage.size(), bytes_);
  EXPECT_EQ(aclrtMemcpy(host.storage.data(), bytes_, device_, bytes_, ACL_MEMCPY_DEVICE_TO_HOST),
            ACL_SUCCESS)
      << aclGetRecentErrMsg();
}

void discard_executor(aclOpExecutor *executor, bool grad) {
  if (!executor) return;
  // Too small a workspace, or (when none is needed) a stream handle that is not live: the
  // second phase fails before doing any work and frees the executor.
  void *not_a_stream = reinterpret_cast<void *>(uintptr_t{0x10});
  if (grad)
    (void)aclnnMoeTokenPermuteWithRoutingMapGrad(nullptr, 0, executor, not_a_stream);
  else
    (void)aclnnMoeTokenPermuteWithRoutingMap(nullptr, 0, executor, not_a_stream);
}

}  // namespace moeperm::testing
