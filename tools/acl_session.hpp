// Thin RAII over the CANN runtime calls the moeperm command makes (SPEC §6), so that the
// timed path is exactly what a CANN program does, and every failure becomes an AclError
// carrying the call, its status and aclGetRecentErrMsg().
#pragma once

#include <acl/acl.h>
#include <aclnn/acl_meta.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "problem.hpp"

namespace moeperm::cli {

class AclError : public std::runtime_error {
 public:
  AclError(const std::string &call, int32_t status);
  int32_t status() const noexcept { return status_; }

 private:
  int32_t status_;
};

// Throws AclError when status is not ACL_SUCCESS / ACLNN_SUCCESS.
void check_acl(int32_t status, const char *call);

// aclInit + aclrtSetDevice(0) for the lifetime of the object; aclrtResetDevice +
// aclFinalize after. Declare it first, so every other resource is released before it.
class AclRuntime {
 public:
  AclRuntime();
  ~AclRuntime();
  AclRuntime(const AclRuntime &) = delete;
  AclRuntime &operator=(const AclRuntime &) = delete;
};

class AclStream {
 public:
  AclStream();
  ~AclStream();
  AclStream(const AclStream &) = delete;
  AclStream &operator=(const AclStream &) = delete;
  aclrtStream get() const { return stream_; }
  void synchronize() const;

 private:
  aclrtStream stream_ = nullptr;
};

// One aclrtMalloc allocation (ACL_MEM_MALLOC_HUGE_FIRST).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer &&other) noexcept;
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept;
  void *get() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  // Grows to at least `bytes` (contents are not kept).
  void reserve(size_t bytes);

 private:
  void release() noexcept;
  void *ptr_ = nullptr;
  size_t bytes_ = 0;
};

// A host tensor's twin in device memory: the whole storage is copied, so strides and the
// storage offset carry over, and so does the poison in output buffers (a slot the operator
// fails to write shows up in the comparison).
class DeviceTensor {
 public:
  explicit DeviceTensor(const tools::HostTensor &host);
  ~DeviceTensor();
  DeviceTensor(const DeviceTensor &) = delete;
  DeviceTensor &operator=(const DeviceTensor &) = delete;
  aclTensor *get() const { return tensor_; }
  void download(tools::HostTensor &host) const;  // device -> host, whole storage

 private:
  DeviceBuffer buffer_;
  aclTensor *tensor_ = nullptr;
};

}  // namespace moeperm::cli
