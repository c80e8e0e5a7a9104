// The device interface (ggml's device and buffer interfaces, cut to what the CANN runtime
// subset of SPEC §6 needs): memory, copies, native streams and making a device current.
// The C runtime (src/capi) asks the current device; it never names one. A device backend's
// folder defines its DeviceOps, and the registry (backend/registry.cpp) lists it on the
// backend's line; the host device is always there.
//
// "Does this pointer belong to you" is answered above the devices, by the runtime's table
// of aclrtMalloc allocations (Note [Device memory]): each allocation records the DeviceOps
// that made it, so copies, frees and phase-2 checks act on what the pointer is, whatever
// device is current later.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/status.hpp"

namespace moeperm::detail {

enum class CopyKind { host_to_host, host_to_device, device_to_host, device_to_device };

// Every function is synchronous unless named otherwise, and ordered after the work already
// enqueued on the device's native streams (which is what aclrtMemcpy promises).
// Page size preference of an allocation (aclrtMemMallocPolicy without P2P): huge pages where
// the device can give them (HUGE_FIRST, HUGE_ONLY), or its normal pages (NORMAL_ONLY).
enum class Pages : uint8_t { huge_first, normal_only };

struct DeviceOps {
  const char *name;    // MOEPERM_DEVICE's value for this device ("cpu", ...)
  const char *noun;    // what its memory and streams belong to, in messages ("the GPU", ...)
  const char *memory;  // its memory, in messages ("GPU memory", ...)
  const char *units;   // what its device ids count, in messages ("the CPU device", ...)
  // Why count() is 0, in messages ("the ... driver reports no GPU").
  const char *none_present;
  int (*count)();  // devices of this kind present now (the host device: 1)
  // Makes device `id` current on the calling thread (a GPU runtime's current device is per
  // thread; aclrtSetDevice's choice is process-wide).
  Status (*activate)(int id);
  // Memory aligned to at least 256 bytes (the host device: kDeviceAlignment). `pages`:
  // aclrtMalloc's policy, where the device has a choice (the host device: Note [Huge pages]).
  Status (*malloc)(void **ptr, size_t bytes, Pages pages);
  Status (*free)(void *ptr);  // waits for the device's work first
  Status (*memcpy)(void *dst, const void *src, size_t bytes, CopyKind kind);
  Status (*memset)(void *ptr, int value, size_t bytes);
  // Native streams (null for the host device, whose streams are worker threads: Note
  // [Streams]). Created blocking: work on the device's default stream (what memcpy and
  // memset use) waits for them.
  Status (*stream_create)(void **stream);
  Status (*stream_destroy)(void *stream);
  Status (*stream_synchronize)(void *stream);
  Status (*synchronize)();  // the whole device
};

// Host "device memory" alignment (Note [Device memory]).
inline constexpr size_t kDeviceAlignment = 512;

// The CPU as a device: host memory, memmove and memset; streams are worker threads.
extern const DeviceOps kHostDevice;

inline bool is_host(const DeviceOps &device) { return &device == &kHostDevice; }

}  // namespace moeperm::detail
