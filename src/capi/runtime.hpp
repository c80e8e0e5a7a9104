// Note [Device memory]: on the CPU device, aclrtMalloc returns host memory aligned to
// kDeviceAlignment and registered, so aclrtMemcpy/aclrtMemset/aclrtFree can check that a
// "device" pointer really is one and that a copy fits inside its allocation.
#pragma once

#include <moeperm/moeperm.hpp>

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"

namespace moeperm::capi {

// Note [Devices]: aclrtSetDevice picks the device the runtime serves, process-wide: a CUDA
// GPU when moeperm has its CUDA backend and the driver reports a GPU, else the CPU.
// MOEPERM_DEVICE=cpu|cuda overrides (cuda without a GPU is an error). aclrtMalloc then
// returns memory of that device; each allocation remembers its kind, so aclrtMemcpy and
// aclrtFree act on what the pointer is, whatever the current device is later. Operators
// planned while a GPU is current run on the CUDA backend.
enum class DeviceKind { cpu, cuda };
DeviceKind current_device();
// The backend the C API's first phase plans for: cuda on a GPU, else automatic.
Backend operator_backend();
// CUDA's current device is per thread, the runtime's device process-wide: makes the GPU that
// aclrtSetDevice chose current on the calling thread before it allocates or launches.
detail::Status activate_gpu();

inline constexpr size_t kDeviceAlignment = 512;

// Bytes of device memory from p to the end of its allocation; 0 when p is not device memory.
size_t device_bytes_from(const void *p);
// The kind of the allocation holding p (meaningful when device_bytes_from(p) > 0).
DeviceKind allocation_kind(const void *p);
int64_t live_allocations();

}  // namespace moeperm::capi
