// Note [Device memory]: on the CPU device, aclrtMalloc returns host memory aligned to
// kDeviceAlignment and registered, so aclrtMemcpy/aclrtMemset/aclrtFree can check that a
// "device" pointer really is one and that a copy fits inside its allocation.
#pragma once

#include <cstddef>
#include <cstdint>

namespace moeperm::capi {

inline constexpr size_t kDeviceAlignment = 512;

// Bytes of device memory from p to the end of its allocation; 0 when p is not device memory.
size_t device_bytes_from(const void *p);
int64_t live_allocations();

}  // namespace moeperm::capi
