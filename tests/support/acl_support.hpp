// The CANN C API from tests: owning aclTensor handles over test tensors, and the two-phase
// call sequence (GetWorkspaceSize, a workspace of exactly that size, execute).
#pragma once

#include <aclnn/acl_meta.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h>

#include <memory>
#include <string>

#include "testing.hpp"

namespace moeperm::testing {

struct AclTensorDeleter {
  void operator()(aclTensor *t) const noexcept { aclDestroyTensor(t); }
};
using AclTensorPtr = std::unique_ptr<aclTensor, AclTensorDeleter>;

// An aclTensor with desc's geometry over `data` (storageDims = {storage_elements} when the
// descriptor knows its storage, else no storage dims).
AclTensorPtr make_acl_tensor(const TensorDesc &desc, void *data);
inline AclTensorPtr make_acl_tensor(HostTensor &t) { return make_acl_tensor(t.desc, t.data()); }

// A status and the message aclGetRecentErrMsg() returned right after it (empty on success).
struct CStatus {
  int32_t code = 0;
  std::string message;
};
CStatus c_status(int32_t code);

// Runs p's forward / backward through the C API on the default stream (synchronous), with
// host memory as the tensors' storage. A failure in either phase is returned.
CStatus c_forward(Problem &p);
CStatus c_backward(Problem &p);

// A tensor in device memory (aclrtMalloc): the host tensor's whole storage is uploaded
// (aclrtMemcpy HOST_TO_DEVICE) and an aclTensor with the same geometry views it. The tensor is
// destroyed and the memory freed with the object.
class DeviceTensor {
 public:
  explicit DeviceTensor(const HostTensor &host);
  ~DeviceTensor();
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;

  aclTensor *get() const { return tensor_.get(); }
  void *data() const { return device_; }
  // Copies the device storage back into `host` (DEVICE_TO_HOST), which must have the layout
  // the object was made from.
  void download(HostTensor &host) const;

 private:
  void *device_ = nullptr;
  size_t bytes_ = 0;
  AclTensorPtr tensor_;
};

// Frees an executor the test did not mean to run, without running it (the second phase
// consumes an executor on every path; a non-live stream makes it fail before any work).
void discard_executor(aclOpExecutor *executor, bool grad);

}  // namespace moeperm::testing
