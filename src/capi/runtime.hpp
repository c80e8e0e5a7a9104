// The runtime subset's state: the current device (Note [Devices]) and the table of device
// allocations (Note [Device memory]); both notes are in src/core/notes.md.
#pragma once

#include <moeperm/moeperm.hpp>

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"
#include "device/device.hpp"

namespace moeperm::capi {

// The device aclrtSetDevice chose (Note [Devices]); the host device before it is called.
const detail::DeviceOps &current_device();
// The backend the C API's first phase plans for: the current device's, else automatic.
Backend operator_backend();
// A GPU runtime's current device is per thread, the runtime's device process-wide: makes
// the device that aclrtSetDevice chose current on the calling thread before it allocates,
// creates a stream or launches.
detail::Status activate_current_device();

// Bytes of device memory from p to the end of its allocation; 0 when p is not device memory.
size_t device_bytes_from(const void *p);
// The device of the allocation holding p; null when p is not device memory.
const detail::DeviceOps *device_of_pointer(const void *p);
int64_t live_allocations();

}  // namespace moeperm::capi
