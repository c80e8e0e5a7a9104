// The CUDA runtime calls behind the CANN runtime subset when the current device is a GPU
// (capi/runtime.cpp, capi/stream.cpp). Synchronous unless named otherwise. Built from
// cuda_runtime.cpp with the CUDA backend, else from cuda_absent.cpp, whose functions all
// report that moeperm was built without CUDA.
#pragma once

#include <cstddef>

#include "core/status.hpp"

namespace moeperm::gpu {

using detail::Status;

enum class CopyKind { host_to_host, host_to_device, device_to_host, device_to_device };

Status set_device(int id);
Status malloc(void **ptr, size_t bytes);
Status free(void *ptr);  // waits for the device first (cudaFree does)
// Ordered after all work already enqueued on the device's blocking streams.
Status memcpy(void *dst, const void *src, size_t bytes, CopyKind kind);
Status memset(void *ptr, int value, size_t bytes);
// Streams are created blocking: work on the legacy default stream (what memcpy and memset
// use) waits for them, which gives aclrtMemcpy its CANN ordering.
Status stream_create(void **stream);
Status stream_destroy(void *stream);
Status stream_synchronize(void *stream);
Status device_synchronize();

}  // namespace moeperm::gpu
