// The CANN runtime subset of SPEC §6, on the CPU device or a CUDA GPU (Note [Devices]).
#include "capi/runtime.hpp"

#include <acl/acl.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>

#include "backend/registry.hpp"
#include "capi/acl_tensor.hpp"
#include "capi/enum_value.hpp"
#include "capi/executor.hpp"
#include "capi/fault_injection.hpp"
#include "capi/last_error.hpp"
#include "capi/stream.hpp"
#include "core/status.hpp"
#include "cuda/cuda_runtime.hpp"

namespace moeperm::capi {
namespace {

std::mutex g_mu;
bool g_initialized = false;
DeviceKind g_device = DeviceKind::cpu;  // guarded by g_mu
int g_gpu = 0;                          // the CUDA device id when g_device is cuda

struct Allocation {
  size_t size;
  DeviceKind kind;
};
std::map<uintptr_t, Allocation> &allocations() {  // base -> size and device
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

size_t device_bytes_from_locked(const void *p) {
  const auto *a = find_locked(p);
  return a ? a->first + a->second.size - reinterpret_cast<uintptr_t>(p) : 0;
}

gpu::CopyKind copy_kind(int kind) {
  switch (kind) {
    case ACL_MEMCPY_HOST_TO_DEVICE: return gpu::CopyKind::host_to_device;
    case ACL_MEMCPY_DEVICE_TO_HOST: return gpu::CopyKind::device_to_host;
    case ACL_MEMCPY_DEVICE_TO_DEVICE: return gpu::CopyKind::device_to_device;
    default: return gpu::CopyKind::host_to_host;
  }
}

aclError report_status(const detail::Status &s) {
  return report_acl(ACL_ERROR_RT_FAILURE, s.message);
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

DeviceKind allocation_kind(const void *p) {
  std::lock_guard lock(g_mu);
  const auto *a = find_locked(p);
  return a ? a->second.kind : DeviceKind::cpu;
}

DeviceKind current_device() {
  std::lock_guard lock(g_mu);
  return g_device;
}

detail::Status activate_gpu() {
  int id;
  {
    std::lock_guard lock(g_mu);
    id = g_gpu;
  }
  return gpu::set_device(id);
}

Backend operator_backend() {
  return current_device() == DeviceKind::cuda ? Backend::cuda : Backend::automatic;
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
  const char *env = std::getenv("MOEPERM_DEVICE");
  const std::string choice = env ? env : "";
  if (!choice.empty() && choice != "cpu" && choice != "cuda" && choice != "auto")
    return report_acl(
        ACL_ERROR_INVALID_DEVICE,
        cat("aclrtSetDevice: MOEPERM_DEVICE must be cpu, cuda or auto, got '", choice, "'"));
  const int gpus = choice == "cpu" ? 0 : moeperm::detail::cuda_device_count();
  if (choice == "cuda" && gpus == 0)
    return report_acl(
        ACL_ERROR_INVALID_DEVICE,
        moeperm::detail::find_backend(moeperm::Backend::cuda) != nullptr
            ? "aclrtSetDevice: MOEPERM_DEVICE=cuda, but the CUDA driver reports no GPU"
            : "aclrtSetDevice: MOEPERM_DEVICE=cuda, but this moeperm was built "
              "without CUDA (MOEPERM_CUDA=OFF, or nvcc was not found)");
  const bool cuda = gpus > 0;
  if (!cuda) {
    if (deviceId != 0)
      return report_acl(ACL_ERROR_INVALID_DEVICE,
                        cat("aclrtSetDevice: deviceId must be 0 (the CPU device), got ", deviceId));
  } else {
    if (deviceId < 0 || deviceId >= gpus)
      return report_acl(ACL_ERROR_INVALID_DEVICE, cat("aclrtSetDevice: deviceId must be in [0, ",
                                                      gpus, ") (the CUDA GPUs), got ", deviceId));
    if (moeperm::detail::Status s = moeperm::gpu::set_device(deviceId); !s.ok())
      return report_acl(ACL_ERROR_INVALID_DEVICE, "aclrtSetDevice: " + s.message);
  }
  std::lock_guard lock(mc::g_mu);
  mc::g_device = cuda ? mc::DeviceKind::cuda : mc::DeviceKind::cpu;
  mc::g_gpu = cuda ? deviceId : 0;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtResetDevice(int32_t deviceId) {
  const bool cuda = mc::current_device() == mc::DeviceKind::cuda;
  const int devices = cuda ? moeperm::detail::cuda_device_count() : 1;
  if (deviceId < 0 || deviceId >= devices)
    return report_acl(ACL_ERROR_INVALID_DEVICE,
                      cat("aclrtResetDevice: deviceId must be ",
                          cuda ? "a CUDA GPU in [0, " : "0 (the CPU device) in [0, ", devices,
                          "), got ", deviceId));
  mc::wait_all();
  if (cuda)
    if (moeperm::detail::Status s = moeperm::gpu::device_synchronize(); !s.ok())
      return mc::report_status(s);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtGetDeviceCount(uint32_t *count) {
  if (!count)
    return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtGetDeviceCount: count must not be null");
  const int gpus =
      mc::current_device() == mc::DeviceKind::cuda ? moeperm::detail::cuda_device_count() : 0;
  *count = gpus > 0 ? static_cast<uint32_t>(gpus) : 1u;
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
  if (mc::enum_value(policy) < ACL_MEM_MALLOC_HUGE_FIRST ||
      mc::enum_value(policy) > ACL_MEM_MALLOC_NORMAL_ONLY_P2P)
    return report_acl(ACL_ERROR_INVALID_PARAM,
                      cat("aclrtMalloc: policy must be an aclrtMemMallocPolicy (0..5), got ",
                          mc::enum_value(policy)));
  const size_t rounded =
      (size + mc::kDeviceAlignment - 1) / mc::kDeviceAlignment * mc::kDeviceAlignment;
  if (rounded < size)
    return report_acl(ACL_ERROR_BAD_ALLOC, cat("aclrtMalloc: cannot allocate ", size, " bytes"));
  const mc::DeviceKind device = mc::current_device();
  void *p = nullptr;
  if (moeperm::capi::fault_fires(MOEPERM_FAULT_ACLRT_MALLOC)) {
    p = nullptr;
  } else if (device == mc::DeviceKind::cuda) {
    // cudaMalloc aligns to at least 256 bytes; kDeviceAlignment (512) is a CPU-side promise.
    moeperm::detail::Status s = mc::activate_gpu();
    if (s.ok()) s = moeperm::gpu::malloc(&p, size);
    if (!s.ok())
      return report_acl(ACL_ERROR_BAD_ALLOC,
                        cat("aclrtMalloc: cannot allocate ", size, " bytes: ", s.message));
  } else {
    p = std::aligned_alloc(mc::kDeviceAlignment, rounded);
  }
  if (!p)
    return report_acl(ACL_ERROR_BAD_ALLOC, cat("aclrtMalloc: cannot allocate ", size, " bytes"));
  std::lock_guard lock(mc::g_mu);
  mc::allocations()[reinterpret_cast<uintptr_t>(p)] = mc::Allocation{size, device};
  *devPtr = p;
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY aclError aclrtFree(void *devPtr) {
  if (!devPtr) return report_acl(ACL_ERROR_INVALID_PARAM, "aclrtFree: devPtr must not be null");
  // Work still queued may use the memory: let it finish first.
  mc::wait_all();
  mc::DeviceKind kind;
  {
    std::lock_guard lock(mc::g_mu);
    auto it = mc::allocations().find(reinterpret_cast<uintptr_t>(devPtr));
    if (it == mc::allocations().end())
      return report_acl(ACL_ERROR_INVALID_PARAM,
                        "aclrtFree: devPtr is not the start of a live aclrtMalloc allocation");
    kind = it->second.kind;
    mc::allocations().erase(it);
  }
  if (kind == mc::DeviceKind::cuda) {
    // cudaFree waits for the device, so kernels still using the memory finish first.
    if (moeperm::detail::Status s = moeperm::gpu::free(devPtr); !s.ok())
      return mc::report_status(s);
  } else {
    std::free(devPtr);
  }
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
  const bool on_gpu = (dst_dev && mc::allocation_kind(dst) == mc::DeviceKind::cuda) ||
                      (src_dev && mc::allocation_kind(src) == mc::DeviceKind::cuda);
  if (on_gpu) {
    // Blocking streams: cudaMemcpy waits for the work already enqueued on them.
    if (moeperm::detail::Status s = moeperm::gpu::memcpy(dst, src, count, mc::copy_kind(k));
        !s.ok())
      return mc::report_status(s);
    return ACL_SUCCESS;
  }
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
  if (mc::allocation_kind(devPtr) == mc::DeviceKind::cuda) {
    if (moeperm::detail::Status s = moeperm::gpu::memset(devPtr, value, count); !s.ok())
      return mc::report_status(s);
    return ACL_SUCCESS;
  }
  std::memset(devPtr, value, count);
  return ACL_SUCCESS;
}

ACL_FUNC_VISIBILITY size_t aclDataTypeSize(aclDataType dataType) {
  return static_cast<size_t>(
      moeperm::element_size(static_cast<moeperm::DType>(mc::enum_value(dataType))));
}

}  // extern "C"
