// The CANN C API from tests: owning aclTensor handles over test tensors, and the two-phase
// call sequence (GetWorkspaceSize, a workspace of exactly that size, execute), written once
// for every operator (operators.hpp).
#pragma once

#include <aclnn/acl_meta.h>
#include <moeperm/acl_handles.hpp>

#include <array>
#include <memory>
#include <string>

#include "operators.hpp"
#include "testing.hpp"

namespace moeperm::testing {

// The shipped owner of an aclTensor (moeperm/acl_handles.hpp).
using AclTensorPtr = acl::TensorPtr;

// An aclTensor with desc's geometry over `data` (storageDims = {storage_elements} when the
// descriptor knows its storage, else no storage dims); null where aclCreateTensor refuses, so
// that a test can hand the operator exactly what the C API gave it.
inline AclTensorPtr make_acl_tensor(const TensorDesc &desc, void *data) {
  return acl::try_create_tensor(desc, data);
}
inline AclTensorPtr make_acl_tensor(HostTensor &t) { return make_acl_tensor(t.desc, t.data()); }

// The aclTensor handles of one call of operator Op, one per operand in CANN order (null where
// `a` leaves the operand out), over the storage `storage(operand)` gives.
template <class Op>
struct OperandTensors {
  std::array<AclTensorPtr, Op::kOperands.size()> owned;
  Handles<Op> handles{};
};
template <class Op, class Storage>
OperandTensors<Op> make_operand_tensors(const typename Op::Args &a, Storage &&storage) {
  OperandTensors<Op> t;
  for (size_t i = 0; i < t.owned.size(); ++i)
    if (const OptDesc &d = a.*Op::kOperands[i].arg) {
      t.owned[i] = make_acl_tensor(*d, storage(Op::kOperands[i]));
      t.handles[i] = t.owned[i].get();
    }
  return t;
}

// A status and the message aclGetRecentErrMsg() returned right after it (empty on success).
struct CStatus {
  int32_t code = 0;
  std::string message;
};
CStatus c_status(int32_t code);

// Runs p's forward / backward through the C API on the default stream (synchronous). The
// tensors live in host memory, or, when `memory` names a device backend, in device memory
// (the problem is uploaded and downloaded again, device_memory.hpp; the current device must be
// that backend's). Which backend runs is the C runtime's choice: the current device, and for
// host memory MOEPERM_BACKEND. A failure in either phase is returned.
CStatus c_forward(Problem &p, Backend memory = Backend::automatic);
CStatus c_backward(Problem &p, Backend memory = Backend::automatic);
// The same with a descriptor the test changed (an optional tensor left out: a null handle);
// every tensor of `desc` is the one of p that plays its operand.
CStatus c_run_with(Problem &p, Backend memory, const PermuteDesc &desc);
CStatus c_run_with(Problem &p, Backend memory, const PermuteGradDesc &desc);

// Frees an executor of operator Op that the test did not mean to run, without running it
// (the second phase consumes an executor on every path; a non-live stream makes it fail
// before any work).
template <class Op>
void discard_executor(aclOpExecutor *executor) {
  if (!executor) return;
  void *not_a_stream = reinterpret_cast<void *>(uintptr_t{0x10});
  (void)Op::second_phase(nullptr, 0, executor, not_a_stream);
}
inline void discard_executor(aclOpExecutor *executor, bool grad) {
  grad ? discard_executor<PermuteGradOp>(executor) : discard_executor<PermuteOp>(executor);
}

}  // namespace moeperm::testing
