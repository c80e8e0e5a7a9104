// Device memory for the tests, through the C runtime subset (aclrtMalloc / aclrtMemcpy /
// aclrtFree), so that a device backend runs the same problems as the host ones: the problem's
// whole storage is uploaded (outputs keep their poison, so unwritten elements and writes
// outside a view still show), the operator runs on the device, and every tensor is
// downloaded again, also when the operator fails (a failed run must have written nothing).
// The current device (aclrtSetDevice) must be the backend's; BackendCase (backend_matrix.hpp)
// sets it.
#pragma once

#include <moeperm/acl_handles.hpp>

#include "problem_model.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace moeperm::testing {

// Frees `memory` now and fails the test if aclrtFree does (the owners' deleters only warn).
void free_checked(acl::DeviceMemoryPtr memory);

// Device copies of every tensor of a problem, keyed by the host storage they mirror.
class DeviceProblem {
 public:
  explicit DeviceProblem(problem_model::Problem &p);
  ~DeviceProblem();
  DeviceProblem(const DeviceProblem &) = delete;
  DeviceProblem &operator=(const DeviceProblem &) = delete;

  // The device address of a host storage pointer (null stays null); a pointer outside the
  // problem's tensors fails the test.
  void *operator()(const void *host) const;
  // Copies every device tensor back into the problem.
  void download();

 private:
  std::vector<problem_model::HostTensor *> tensors_;
  std::map<const void *, acl::DeviceMemoryPtr> device_;
};

// A device workspace of exactly `bytes` (none when 0).
class DeviceWorkspace {
 public:
  explicit DeviceWorkspace(uint64_t bytes);
  ~DeviceWorkspace();
  DeviceWorkspace(const DeviceWorkspace &) = delete;
  DeviceWorkspace &operator=(const DeviceWorkspace &) = delete;
  std::span<std::byte> span() const { return {static_cast<std::byte *>(get()), bytes_}; }
  void *get() const { return memory_.get(); }

 private:
  acl::DeviceMemoryPtr memory_;
  size_t bytes_ = 0;
};

}  // namespace moeperm::testing
