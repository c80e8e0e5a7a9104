// The CANN runtime subset of SPEC §6 on the CPU device.
#include "capi/runtime.hpp"

#include <acl/acl.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "capi/acl_tensor.hpp"
#include "capi/executor.hpp"
#include "capi/last_error.hpp"
#include "capi/stream.hpp"
#include "core/status.hpp"

namespace moeperm::capi {
namespace {

std::mutex g_mu;
bool g_initialized = false;
std::map<uintptr_t, size_t> &allocations() {  // base -> size
  static std::map<uintptr_t, size_t> m;
  return m;
}

size_t device_bytes_from_locked(const void *p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = allocations().upper_bound(addr);
  if (it == allocations().begin()) return 0;
  --it;
  if (addr >= it->first + it->second) return 0;
  return it->first + it->second - addr;
}

const char *kind_name(int kind) {
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_HOST: return "ACL_MEMCPY_HOST_TO_HOST";
    case ACL_MEMCPY_HOST_TO_DEVICE: return "ACL_MEMCPY_HOST_TO_DEVICE";
    case ACL_MEMCPY_DEVICE_TO_HOST: return "ACL_MEMCPY_DEVICE_TO_HOST";
    case ACL_MEMCPY_DEVICE_TO_DEVICE: return "ACL_MEMCPY_DEVICE_TO_DEVICE";
  }
  return "unknown";
}

// Checks one side of a copy: device memory with `count` bytes from p, or host memory.
aclError check_side(const char *api, const char *arg, const void *p, size_t count, bool device,
                    int kind) {
  const size_t avail = device_bytes_from(p);
  using detail::cat;
  if (device && avail == 0)
    return report_acl(ACL_ERROR_INVALID_PARAM,
                      cat(api, ": ", arg, " is not device memory from aclrtMalloc, as ",
                          kind_name(kind), " requires"));
  if (device && count > avail)
    return report_acl(ACL_ERROR_INVALID_PARAM,
                      cat(api, ": ", count, " bytes at ", arg, " run past the end of its ",
                          "device allocation (", avail, " bytes left)"));
  if (!device && avail != 0)
    return report_acl(ACL_ERROR_INVALID_PARAM, cat(api, ": ", arg, " is device memory, but ",
                                                   kind_name(kind), " says it is host memory"));
  return ACL_SUCCESS;
}

}  // namespace

size_t device_bytes_from(const void *p) {
  std::lock_guard lock(g_mu);
  return device_bytes_from_locked(p);
}

int64_t live_allocations() {
  std::lock_guard lock(g_mu);
  return static_cast<int64_t>(allocations().size());
}

}  // namespace moeperm::capi

using moeperm::capi::report_acl;
using moeperm::detail::cat;
namespace mc = moeperm::capi;

extern "C" {

ACL_FUNC_VISIBILITY aclError aclInit(const char *) {
  std::lock_guard lock(mc::g_mu);
  if (mc::g_initialized)
    return report_acl(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized");
  mc::g_initialized = true;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclFinalize(void) {
  mc::wait_all();
  const int64_t tensors = mc::live_tensors(), streams = mc::live_streams(),
                allocs = mc::live_allocations(), executors = mc::live_executors();
  std::lock_guard lock(mc::g_mu);
  if (!mc::g_initialized)
    return report_acl(
        ACL_ERROR_REPEAT_FINALIZE,
        "aclFinalize: not initialized (aclInit was not called, or aclFinalize already was)");
  mc::g_initialized = false;
  if (tensors + streams + allocs + executors > 0)
    return report_acl(ACL_ERROR_RELATIVE_RESOURCE_NOT_CLEARED,
                      cat("aclFinalize: resources are still alive: ", tensors, " tensor(s), ",
                          streams, " stream(s), ", allocs, " device allocation(s), ", executors,
                          " executor(s) never executed"));
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtSetDevice(int32_t deviceId) {
  if (deviceId != 0)
    return report_acl(ACL_ERROR_INVALID_DEVICE,
                      cat("aclrtSetDevice: deviceId must be 0 (the CPU device), got ", deviceId));
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId) {
  if (deviceId != 0)
    return report_acl(ACL_ERROR_INVALID_DEVICE,
                      cat("aclrtResetDevice: deviceId must be 0 (the CPU device), got ", deviceId));
  mc::wait_all();
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count) {
  if (!count)
    return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count must not be null");
  *count = 1;
  return ACL_SUCCESS;
}

// One implicit context per device: contexts exist for source compatibility only.
ACL_FUNC_VISIBILITY aclError aclrtCreateContext(aclrtContext *context, int32_t deviceId) {
  if (!context)
    return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtCreateContext: context must not be null");
  if (deviceId != 0)
    return report_acl(
        ACL_ERROR_INVALID_DEVICE,
        cat("aclrtCreateContext: deviceId must be 0 (the CPU device), got ", deviceId));
  static int the_context;
  *context = &the_context;
  return ACL_SUCCESS;
}
ACL_FUNC_VISIBILITY aclError aclrtDestroyContext(aclrtContext) { return ACL_SUCCESS; }
ACL_FUNC_VISIBILITY aclError aclrtSetCurrentContext(aclrtContext) { return ACL_SUCCESS; }

ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  if (!devPtr) return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr must not be null");
  *devPtr = nullptr;
  if (size == 0) return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size must be > 0, got 0");
  if (static_cast<int>(policy) < ACL_MEM_MALLOC_HUGE_FIRST ||
      static_cast<int>(policy) > ACL_MEM_MALLOC_NORMAL_ONLY_P2P)
    return report_acl(ACL_ERROR_INVALID_PARAM,
                      cat("aclrtMalloc: policy must be an aclrtMemMallocPolicy (0..5), got ",
                          static_cast<int>(policy)));
  const size_t rounded =
      (size + mc::kDeviceAlignment - 1) / mc::kDeviceAlignment * mc::kDeviceAlignment;
  if (rounded < size)
    return report_acl(ACL_ERROR_BAD_ALLOC, cat("aclrtMalloc: cannot allocate ", size, " bytes"));
  void *p = std::aligned_alloc(mc::kDeviceAlignment, rounded);
  if (!p)
    return report_acl(ACL_ERROR_BAD_ALLOC, cat("aclrtMalloc: cannot allocate ", size, " bytes"));
  std::lock_guard lock(mc::g_mu);
  mc::allocations()[reinterpret_cast<uintptr_t>(p)] = size;
  *devPtr = p;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr) {
  if (!devPtr) return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr must not be null");
  // Work still queued may use the memory: let it finish first.
  mc::wait_all();
  {
    std::lock_guard lock(mc::g_mu);
    if (mc::allocations().erase(reinterpret_cast<uintptr_t>(devPtr)) == 0)
      return report_acl(ACL_ERROR_INVALID_PARAM,
                        "aclrtFree: devPtr is not the start of a live aclrtMalloc allocation");
  }
  std::free(devPtr);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtMallocHost(void **hostPtr, size_t size) {
  if (!hostPtr)
    return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtMallocHost: hostPtr must not be null");
  *hostPtr = size ? std::malloc(size) : nullptr;
  if (!*hostPtr)
    return report_acl(size ? ACL_ERROR_BAD_ALLOC : ACL_ERROR_INVALID_PARAM,
                      cat("aclrtMallocHost: cannot allocate ", size, " bytes"));
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtFreeHost(void *hostPtr) {
  if (!hostPtr)
    return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtFreeHost: hostPtr must not be null");
  std::free(hostPtr);
  return ACL_SUCCESS;
}

// Synchronous, and ordered after all work already enqueued on any stream.
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind) {
  constexpr const char *api = "aclrtMemcpy";
  const int k = static_cast<int>(kind);
  if (k < ACL_MEMCPY_HOST_TO_HOST || k > ACL_MEMCPY_DEVICE_TO_DEVICE)
    return report_acl(ACL_ERROR_INVALID_PARAM,
                      cat(api, ": kind must be an aclrtMemcpyKind (0..3), got ", k));
  if (count > destMax)
    return report_acl(ACL_ERROR_INVALID_PARAM,
                      cat(api, ": count = ", count, " exceeds destMax = ", destMax));
  if (count == 0) return ACL_SUCCESS;
  if (!dst || !src)
    return report_acl(ACL_ERROR_INVALID_PARAM, cat(api, ": dst and src must not be null"));
  const bool dst_dev = k == ACL_MEMCPY_HOST_TO_DEVICE || k == ACL_MEMCPY_DEVICE_TO_DEVICE;
  const bool src_dev = k == ACL_MEMCPY_DEVICE_TO_HOST || k == ACL_MEMCPY_DEVICE_TO_DEVICE;
  if (aclError e = mc::check_side(api, "dst", dst, count, dst_dev, k)) return e;
  if (aclError e = mc::check_side(api, "src", src, count, src_dev, k)) return e;
  mc::wait_all();
  std::memmove(dst, src, count);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtMemset(void *devPtr, size_t maxCount, int32_t value,
                                         size_t count) {
  constexpr const char *api = "aclrtMemset";
  if (count > maxCount)
    return report_acl(ACL_ERROR_INVALID_PARAM,
                      cat(api, ": count = ", count, " exceeds maxCount = ", maxCount));
  if (count == 0) return ACL_SUCCESS;
  if (!devPtr) return report_acl(ACL_ERROR_INVALID_PARAM, cat(api, ": devPtr must not be null"));
  if (aclError e = mc::check_side(api, "devPtr", devPtr, count, true, ACL_MEMCPY_HOST_TO_DEVICE))
    return e;
  mc::wait_all();
  std::memset(devPtr, value, count);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType) {
  return static_cast<size_t>(moeperm::element_size(static_cast<moeperm::DType>(dataType)));
}

}  // extern "C"
