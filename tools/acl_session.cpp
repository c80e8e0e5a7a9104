#include "acl_session.hpp"

#include <cstdio>
#include <utility>
#include <vector>

namespace moeperm::cli {
namespace {

std::string describe(const std::string &call, int32_t status) {
  const char *msg = aclGetRecentErrMsg();
  std::string s = call + " returned " + std::to_string(status);
  if (msg && *msg) s += ": " + std::string(msg);
  return s;
}

// Destructors cannot throw: a failed release is reported and otherwise ignored.
void warn_if_failed(int32_t status, const char *call) {
  if (status != ACL_SUCCESS)
    std::fprintf(stderr, "moeperm: warning: %s\n", describe(call, status).c_str());
}

}  // namespace

AclError::AclError(const std::string &call, int32_t status)
    : std::runtime_error(describe(call, status)), status_(status) {}

void check_acl(int32_t status, const char *call) {
  if (status != ACL_SUCCESS) throw AclError(call, status);
}

AclRuntime::AclRuntime() {
  check_acl(aclInit(nullptr), "aclInit");
  if (const aclError rc = aclrtSetDevice(0); rc != ACL_SUCCESS) {
    const AclError error("aclrtSetDevice", rc);
    (void)aclFinalize();
    throw error;
  }
}

AclRuntime::~AclRuntime() {
  warn_if_failed(aclrtResetDevice(0), "aclrtResetDevice");
  warn_if_failed(aclFinalize(), "aclFinalize");
}

AclStream::AclStream() { check_acl(aclrtCreateStream(&stream_), "aclrtCreateStream"); }
AclStream::~AclStream() { warn_if_failed(aclrtDestroyStream(stream_), "aclrtDestroyStream"); }
void AclStream::synchronize() const {
  check_acl(aclrtSynchronizeStream(stream_), "aclrtSynchronizeStream");
}

DeviceBuffer::DeviceBuffer(size_t bytes) { reserve(bytes); }
DeviceBuffer::~DeviceBuffer() { release(); }
DeviceBuffer::DeviceBuffer(DeviceBuffer &&other) noexcept
    : ptr_(std::exchange(other.ptr_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}
DeviceBuffer &DeviceBuffer::operator=(DeviceBuffer &&other) noexcept {
  if (this != &other) {
    release();
    ptr_ = std::exchange(other.ptr_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

void DeviceBuffer::reserve(size_t bytes) {
  if (bytes <= bytes_) return;
  release();
  check_acl(aclrtMalloc(&ptr_, bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  bytes_ = bytes;
}

void DeviceBuffer::release() noexcept {
  if (ptr_) warn_if_failed(aclrtFree(ptr_), "aclrtFree");
  ptr_ = nullptr;
  bytes_ = 0;
}

DeviceTensor::DeviceTensor(const tools::HostTensor &host) : buffer_(host.storage.size()) {
  check_acl(aclrtMemcpy(buffer_.get(), buffer_.bytes(), host.storage.data(), host.storage.size(),
                        ACL_MEMCPY_HOST_TO_DEVICE),
            "aclrtMemcpy");
  const TensorDesc &d = host.desc;
  const int64_t storage_dims[1] = {d.storage_elements.value_or(host.numel())};
  tensor_ = aclCreateTensor(d.shape.data(), d.shape.size(), static_cast<aclDataType>(d.dtype),
                            d.strides.empty() ? nullptr : d.strides.data(), d.offset, ACL_FORMAT_ND,
                            storage_dims, 1, buffer_.get());
  if (!tensor_) throw AclError("aclCreateTensor", ACLNN_ERR_PARAM_NULLPTR);
}

DeviceTensor::~DeviceTensor() { warn_if_failed(aclDestroyTensor(tensor_), "aclDestroyTensor"); }

void DeviceTensor::download(tools::HostTensor &host) const {
  check_acl(aclrtMemcpy(host.storage.data(), host.storage.size(), buffer_.get(), buffer_.bytes(),
                        ACL_MEMCPY_DEVICE_TO_HOST),
            "aclrtMemcpy");
}

}  // namespace moeperm::cli
