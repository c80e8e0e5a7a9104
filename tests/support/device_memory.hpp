// Device memory for the tests, through the C runtime subset (aclrtMalloc / aclrtMemcpy /
// aclrtFree), so that a device backend runs the same problems as the host ones: the problem's
// whole storage is uploaded (outputs keep their poison, so unwritten elements and writes
// outside a view still show), the operator runs on the device, and every tensor is
// downloaded again, also when the operator fails (a failed run must have written nothing).
// The current device (aclrtSetDevice) must be the backend's; BackendCase (backend_matrix.hpp)
// sets it.
#pragma once

#include <problem.hpp>

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <vector>

namespace moeperm::testing {

// Device copies of every tensor of a problem, keyed by the host storage they mirror.
class DeviceProblem {
 public:
  explicit DeviceProblem(tools::Problem &p);
  ~DeviceProblem();
  DeviceProblem(const DeviceProblem &) = delete;
  DeviceProblem &operator=(const DeviceProblem &) = delete;

  // The device address of a host storage pointer (null stays null); a pointer outside the
  // problem's tensors fails the test.
  void *operator()(const void *host) const;
  // Copies every device tensor back into the problem.
  void download();

 private:
  std::vector<tools::HostTensor *> tensors_;
  std::map<const void *, void *> device_;
};

// A device workspace of exactly `bytes` (none when 0).
class DeviceWorkspace {
 public:
  explicit DeviceWorkspace(uint64_t bytes);
  ~DeviceWorkspace();
  DeviceWorkspace(const DeviceWorkspace &) = delete;
  DeviceWorkspace &operator=(const DeviceWorkspace &) = delete;
  std::span<std::byte> span() const { return {static_cast<std::byte *>(ptr_), bytes_}; }
  void *get() const { return ptr_; }

 private:
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace moeperm::testing
