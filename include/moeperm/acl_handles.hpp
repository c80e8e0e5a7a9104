// RAII over the CANN handles a program of the aclnn API owns (SPEC §6), header-only C++ over
// the C API, so a program written with it makes exactly the calls a CANN program makes:
//   TensorPtr        aclTensor *    aclDestroyTensor      (create_tensor, try_create_tensor)
//   IntArrayPtr      aclIntArray *  aclDestroyIntArray    (create_int_array)
//   StreamPtr        aclrtStream    aclrtDestroyStream    (create_stream)
//   ContextPtr       aclrtContext   aclrtDestroyContext   (create_context)
//   DeviceMemoryPtr  aclrtMalloc'd  aclrtFree             (device_malloc)
// std::unique_ptr owners: move-only, get() / release() / reset() as usual, null owns nothing.
// Built on them: Runtime (aclInit + aclrtSetDevice for a scope), DeviceBuffer (a growable
// allocation with host copies) and DeviceTensor (host storage uploaded, an aclTensor over it).
// The runtime subset has no aclScalar, and an aclOpExecutor is consumed by the second phase on
// every path, so neither has an owner here.
//
// A failing call becomes an AclError carrying the call, its status and aclGetRecentErrMsg().
// Deleters cannot throw: a release that fails there is reported on stderr and otherwise
// ignored; code that must see such a failure releases by hand (`check(aclrtFree(p.release()),
// "aclrtFree")`). Declare the Runtime first, so that every other handle is released before
// aclFinalize (which refuses to finalize while tensors, streams or allocations are alive).
#pragma once

#include <acl/acl.h>
#include <aclnn/acl_meta.h>
#include <moeperm/moeperm.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace moeperm::acl {

// A CANN call that did not return ACL_SUCCESS / ACLNN_SUCCESS (both 0). what() reads
// "<call> returned <status>: <aclGetRecentErrMsg()>" (the message part only when there is one).
class AclError : public std::runtime_error {
 public:
  AclError(std::string call, int32_t status)
      : std::runtime_error(describe(call, status)), call_(std::move(call)), status_(status) {}
  const std::string &call() const noexcept { return call_; }
  int32_t status() const noexcept { return status_; }

  static std::string describe(const std::string &call, int32_t status) {
    const char *msg = aclGetRecentErrMsg();
    std::string s = call + " returned " + std::to_string(status);
    if (msg && *msg) s += ": " + std::string(msg);
    return s;
  }

 private:
  std::string call_;
  int32_t status_;
};

// Throws AclError(call, status) unless status is 0 (ACL_SUCCESS, ACLNN_SUCCESS).
inline void check(int32_t status, const char *call) {
  if (status != ACL_SUCCESS) throw AclError(call, status);
}

namespace detail {
// The deleters' half of check(): report, do not throw.
inline void warn_if_failed(int32_t status, const char *call) noexcept {
  if (status != ACL_SUCCESS)
    std::fprintf(stderr, "moeperm::acl: warning: %s\n", AclError::describe(call, status).c_str());
}
}  // namespace detail

struct TensorDeleter {
  void operator()(aclTensor *t) const noexcept {
    detail::warn_if_failed(aclDestroyTensor(t), "aclDestroyTensor");
  }
};
struct IntArrayDeleter {
  void operator()(aclIntArray *a) const noexcept {
    detail::warn_if_failed(aclDestroyIntArray(a), "aclDestroyIntArray");
  }
};
struct StreamDeleter {
  using pointer = aclrtStream;
  void operator()(aclrtStream s) const noexcept {
    detail::warn_if_failed(aclrtDestroyStream(s), "aclrtDestroyStream");
  }
};
struct ContextDeleter {
  using pointer = aclrtContext;
  void operator()(aclrtContext c) const noexcept {
    detail::warn_if_failed(aclrtDestroyContext(c), "aclrtDestroyContext");
  }
};
struct DeviceMemoryDeleter {
  void operator()(void *p) const noexcept { detail::warn_if_failed(aclrtFree(p), "aclrtFree"); }
};
using TensorPtr = std::unique_ptr<aclTensor, TensorDeleter>;
using IntArrayPtr = std::unique_ptr<aclIntArray, IntArrayDeleter>;
using StreamPtr = std::unique_ptr<void, StreamDeleter>;
using ContextPtr = std::unique_ptr<void, ContextDeleter>;
using DeviceMemoryPtr = std::unique_ptr<void, DeviceMemoryDeleter>;

// aclrtCreateStream; throws AclError.
inline StreamPtr create_stream() {
  aclrtStream s = nullptr;
  check(aclrtCreateStream(&s), "aclrtCreateStream");
  return StreamPtr(s);
}

// aclrtCreateContext on `device` (which also makes it current); throws AclError.
inline ContextPtr create_context(int32_t device) {
  aclrtContext c = nullptr;
  check(aclrtCreateContext(&c, device), "aclrtCreateContext");
  return ContextPtr(c);
}

// aclrtMalloc(bytes, ACL_MEM_MALLOC_HUGE_FIRST); throws AclError. 0 bytes allocate nothing
// (aclrtMalloc rejects size 0): the result is null.
inline DeviceMemoryPtr device_malloc(size_t bytes) {
  if (bytes == 0) return nullptr;
  void *p = nullptr;
  check(aclrtMalloc(&p, bytes, ACL_MEM_MALLOC_HUGE_FIRST), "aclrtMalloc");
  return DeviceMemoryPtr(p);
}

// An aclTensor over `data` made from a moeperm::TensorDesc the way a CANN caller writes it: the
// strides spelled out (row-major contiguous when desc.strides is empty; a dimension of 0 counts
// as 1, as CANN's do), desc.offset as the storage offset, format ND, and storageDims =
// {storage_elements} when the descriptor knows its storage, else no storage dims. Null when
// aclCreateTensor refuses (the reason is in aclGetRecentErrMsg()).
inline TensorPtr try_create_tensor(const TensorDesc &desc, void *data) {
  std::vector<int64_t> strides = desc.strides;
  if (strides.empty()) {
    strides.assign(desc.shape.size(), 1);
    for (size_t i = desc.shape.size(); i-- > 1;)
      strides[i - 1] = strides[i] * std::max<int64_t>(desc.shape[i], 1);
  }
  const int64_t storage = desc.storage_elements.value_or(0);
  return TensorPtr(aclCreateTensor(
      desc.shape.data(), desc.shape.size(), static_cast<aclDataType>(desc.dtype), strides.data(),
      desc.offset, ACL_FORMAT_ND, &storage, desc.storage_elements ? 1 : 0, data));
}

// try_create_tensor, throwing AclError where aclCreateTensor refuses. aclCreateTensor has no
// status; ACLNN_ERR_PARAM_NULLPTR is the one CANN gives the null handle it returns.
inline TensorPtr create_tensor(const TensorDesc &desc, void *data) {
  TensorPtr t = try_create_tensor(desc, data);
  if (!t) throw AclError("aclCreateTensor", ACLNN_ERR_PARAM_NULLPTR);
  return t;
}

// aclCreateIntArray over `values` (copied); throws AclError where it refuses.
inline IntArrayPtr create_int_array(std::span<const int64_t> values) {
  IntArrayPtr a(aclCreateIntArray(values.data(), values.size()));
  if (!a) throw AclError("aclCreateIntArray", ACLNN_ERR_PARAM_NULLPTR);
  return a;
}

// aclInit(nullptr) + aclrtSetDevice(device) for the lifetime of the object; aclrtResetDevice
// + aclFinalize after. If aclrtSetDevice fails, aclFinalize runs before the AclError leaves.
class Runtime {
 public:
  explicit Runtime(int32_t device = 0) : device_(device) {
    check(aclInit(nullptr), "aclInit");
    if (const aclError rc = aclrtSetDevice(device); rc != ACL_SUCCESS) {
      const AclError error("aclrtSetDevice", rc);  // before aclFinalize replaces the message
      (void)aclFinalize();
      throw error;
    }
  }
  ~Runtime() {
    detail::warn_if_failed(aclrtResetDevice(device_), "aclrtResetDevice");
    detail::warn_if_failed(aclFinalize(), "aclFinalize");
  }
  Runtime(const Runtime &) = delete;
  Runtime &operator=(const Runtime &) = delete;
  int32_t device() const noexcept { return device_; }

 private:
  int32_t device_;
};

// A device allocation that grows on demand (a workspace), with synchronous host copies.
// bytes() is the size asked for; a buffer of 0 bytes holds no allocation (get() is null).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes) { reserve(bytes); }
  DeviceBuffer(DeviceBuffer &&other) noexcept
      : memory_(std::move(other.memory_)), bytes_(std::exchange(other.bytes_, 0)) {}
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    if (this != &other) {
      memory_ = std::move(other.memory_);
      bytes_ = std::exchange(other.bytes_, 0);
    }
    return *this;
  }
  void *get() const noexcept { return memory_.get(); }
  size_t bytes() const noexcept { return bytes_; }
  std::span<std::byte> span() const noexcept { return {static_cast<std::byte *>(get()), bytes_}; }

  // Grows to at least `bytes`; the contents are not kept when it grows.
  void reserve(size_t bytes) {
    if (bytes <= bytes_) return;
    memory_.reset();  // free first: the old and the new allocation need not fit together
    bytes_ = 0;
    memory_ = device_malloc(bytes);
    bytes_ = bytes;
  }
  // Gives the allocation up (ownership passes to the caller); the buffer is empty after.
  DeviceMemoryPtr release() noexcept {
    bytes_ = 0;
    return std::move(memory_);
  }
  // Host -> device / device -> host copies of the first `host.size()` bytes (aclrtMemcpy).
  void upload(std::span<const std::byte> host) {
    if (!host.empty())
      check(aclrtMemcpy(get(), bytes_, host.data(), host.size(), ACL_MEMCPY_HOST_TO_DEVICE),
            "aclrtMemcpy");
  }
  void download(std::span<std::byte> host) const {
    if (!host.empty())
      check(aclrtMemcpy(host.data(), host.size(), get(), host.size(), ACL_MEMCPY_DEVICE_TO_HOST),
            "aclrtMemcpy");
  }

 private:
  DeviceMemoryPtr memory_;
  size_t bytes_ = 0;
};

// A tensor in device memory: a DeviceBuffer holding the host storage (uploaded whole, so the
// strides, the storage offset and any poison between elements carry over) and an aclTensor
// with desc's geometry over it. Movable; download() copies the whole storage back.
class DeviceTensor {
 public:
  DeviceTensor(const TensorDesc &desc, std::span<const std::byte> host_storage)
      : buffer_(host_storage.size()) {
    buffer_.upload(host_storage);
    tensor_ = create_tensor(desc, buffer_.get());
  }
  aclTensor *get() const noexcept { return tensor_.get(); }
  void *data() const noexcept { return buffer_.get(); }
  size_t bytes() const noexcept { return buffer_.bytes(); }
  // Device -> host; `host` must be the storage size the object was made from.
  void download(std::span<std::byte> host) const {
    if (host.size() != buffer_.bytes())
      throw std::invalid_argument("moeperm::acl::DeviceTensor::download: host storage of " +
                                  std::to_string(host.size()) + " bytes, expected " +
                                  std::to_string(buffer_.bytes()));
    buffer_.download(host);
  }

 private:
  DeviceBuffer buffer_;  // declared first: the tensor is destroyed before the memory it views
  TensorPtr tensor_;
};

}  // namespace moeperm::acl
