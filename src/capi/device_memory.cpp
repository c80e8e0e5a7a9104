// The CANN runtime subset's memory calls (SPEC §6): allocations of the current device,
// registered with the device that made them (Note [Device memory]), and checked copies.
#include <acl/acl.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

#include "capi/enum_value.hpp"
#include "capi/fault_injection.hpp"
#include "capi/last_error.hpp"
#include "capi/runtime.hpp"
#include "capi/stream.hpp"

namespace moeperm::capi {
namespace {

using detail::cat;
using detail::DeviceOps;

struct Allocation {
  size_t size;
  const DeviceOps *device;
};

std::mutex g_mu;
std::map<uintptr_t, Allocation> &allocations() {  // base -> size and device; guarded by g_mu
  static std::map<uintptr_t, Allocation> m;
  return m;
}

// The allocation holding p, or null.
const std::pair<const uintptr_t, Allocation> *find_locked(const void *p) {
  const auto addr = reinterpret_cast<uintptr_t>(p);
  auto it = allocations().upper_bound(addr);
  if (it == allocations().begin()) return nullptr;
  --it;
  if (addr >= it->first + it->second.size) return nullptr;
  return &*it;
}

detail::CopyKind copy_kind(int kind) {
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_DEVICE: return detail::CopyKind::host_to_device;
    case ACL_MEMCPY_DEVICE_TO_HOST: return detail::CopyKind::device_to_host;
    case ACL_MEMCPY_DEVICE_TO_DEVICE: return detail::CopyKind::device_to_device;
    default: return detail::CopyKind::host_to_host;
  }
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

aclError report_status(const detail::Status &s) {
  return report_acl(ACL_ERROR_RT_FAILURE, s.message);
}

// Checks one side of a copy: device memory with `count` bytes from p, or host memory.
aclError check_side(const char *api, const char *arg, const void *p, size_t count, bool device,
                    int kind) {
  const size_t avail = device_bytes_from(p);
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

// The device that performs a copy between two sides (null: host memory): a device other
// than the host when either side is one (it can reach host memory too), else the host.
const DeviceOps &copy_engine(const DeviceOps *dst, const DeviceOps *src) {
  if (dst && !detail::is_host(*dst)) return *dst;
  if (src && !detail::is_host(*src)) return *src;
  return detail::kHostDevice;
}

}  // namespace

size_t device_bytes_from(const void *p) {
  std::lock_guard lock(g_mu);
  const auto *a = find_locked(p);
  return a ? a->first + a->second.size - reinterpret_cast<uintptr_t>(p) : 0;
}

const DeviceOps *device_of_pointer(const void *p) {
  std::lock_guard lock(g_mu);
  const auto *a = find_locked(p);
  return a ? a->second.device : nullptr;
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

ACL_FUNC_VISIBILITY aclError aclrtMalloc(void **devPtr, size_t size, aclrtMemMallocPolicy policy) {
  if (!devPtr) return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: devPtr must not be null");
  *devPtr = nullptr;
  if (size == 0) return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtMalloc: size must be > 0, got 0");
  if (mc::enum_value(policy) < ACL_MEM_MALLOC_HUGE_FIRST ||
      mc::enum_value(policy) > ACL_MEM_MALLOC_NORMAL_ONLY_P2P)
    return report_acl(ACL_ERROR_INVALID_PARAM,
                      cat("aclrtMalloc: policy must be an aclrtMemMallocPolicy (0..5), got ",
                          mc::enum_value(policy)));
  const moeperm::detail::DeviceOps &device = mc::current_device();
  void *p = nullptr;
  if (!mc::fault_fires(MOEPERM_FAULT_ACLRT_MALLOC)) {
    moeperm::detail::Status s = mc::activate_current_device();
    const bool normal =
        policy == ACL_MEM_MALLOC_NORMAL_ONLY || policy == ACL_MEM_MALLOC_NORMAL_ONLY_P2P;
    if (s.ok())
      s = device.malloc(
          &p, size,
          normal ? moeperm::detail::Pages::normal_only : moeperm::detail::Pages::huge_first);
    if (!s.ok())
      return report_acl(ACL_ERROR_BAD_ALLOC,
                        cat("aclrtMalloc: cannot allocate ", size, " bytes: ", s.message));
  }
  if (!p)
    return report_acl(ACL_ERROR_BAD_ALLOC, cat("aclrtMalloc: cannot allocate ", size, " bytes"));
  std::lock_guard lock(mc::g_mu);
  mc::allocations()[reinterpret_cast<uintptr_t>(p)] = mc::Allocation{size, &device};
  *devPtr = p;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr) {
  if (!devPtr) return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr must not be null");
  // Work still queued may use the memory: let it finish first.
  mc::wait_all();
  const moeperm::detail::DeviceOps *device;
  {
    std::lock_guard lock(mc::g_mu);
    auto it = mc::allocations().find(reinterpret_cast<uintptr_t>(devPtr));
    if (it == mc::allocations().end())
      return report_acl(ACL_ERROR_INVALID_PARAM,
                        "aclrtFree: devPtr is not the start of a live aclrtMalloc allocation");
    device = it->second.device;
    mc::allocations().erase(it);
  }
  // A device's free waits for it, so kernels still using the memory finish first.
  if (moeperm::detail::Status s = device->free(devPtr); !s.ok()) return mc::report_status(s);
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

// Synchronous, and ordered after all work already enqueued on any stream (a device's copy
// waits for its blocking native streams).
ACL_FUNC_VISIBILITY aclError aclrtMemcpy(void *dst, size_t destMax, const void *src, size_t count,
                                         aclrtMemcpyKind kind) {
  constexpr const char *api = "aclrtMemcpy";
  const int k = mc::enum_value(kind);
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
  const moeperm::detail::DeviceOps &engine =
      mc::copy_engine(dst_dev ? mc::device_of_pointer(dst) : nullptr,
                      src_dev ? mc::device_of_pointer(src) : nullptr);
  if (moeperm::detail::Status s = engine.memcpy(dst, src, count, mc::copy_kind(k)); !s.ok())
    return mc::report_status(s);
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
  if (moeperm::detail::Status s = mc::device_of_pointer(devPtr)->memset(devPtr, value, count);
      !s.ok())
    return mc::report_status(s);
  return ACL_SUCCESS;
}

}  // extern "C"
