// The host device: "device memory" is host memory from aligned_alloc (Note [Device memory]).
#include <cstdlib>
#include <cstring>

#include "device/device.hpp"

namespace moeperm::detail {
namespace {

Status host_malloc(void **ptr, size_t bytes) {
  // aligned_alloc wants a multiple of the alignment; the rounding must not wrap.
  const size_t rounded = (bytes + kDeviceAlignment - 1) / kDeviceAlignment * kDeviceAlignment;
  *ptr = rounded < bytes ? nullptr : std::aligned_alloc(kDeviceAlignment, rounded);
  if (!*ptr)
    return fail(Code::runtime_error, rounded < bytes ? "the size rounded up to the alignment "
                                                       "overflows size_t"
                                                     : "aligned_alloc failed");
  return Status::success();
}

Status host_free(void *ptr) {
  std::free(ptr);
  return Status::success();
}

Status host_memcpy(void *dst, const void *src, size_t bytes, CopyKind) {
  std::memmove(dst, src, bytes);
  return Status::success();
}

Status host_memset(void *ptr, int value, size_t bytes) {
  std::memset(ptr, value, bytes);
  return Status::success();
}

}  // namespace

const DeviceOps kHostDevice{
    .name = "cpu",
    .noun = "the CPU device",
    .memory = "CPU device memory",
    .units = "the CPU device",
    .none_present = "",
    .count = [] { return 1; },
    .activate = [](int) { return Status::success(); },
    .malloc = host_malloc,
    .free = host_free,
    .memcpy = host_memcpy,
    .memset = host_memset,
    .stream_create = nullptr,
    .stream_destroy = nullptr,
    .stream_synchronize = nullptr,
    .synchronize = [] { return Status::success(); },
};

}  // namespace moeperm::detail
