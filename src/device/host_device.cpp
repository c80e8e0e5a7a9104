// The host device: "device memory" is host memory from aligned_alloc (Note [Device memory]),
// huge pages for large allocations (Note [Huge pages]).
#include <cstdlib>
#include <cstring>

#include "device/device.hpp"
#include "device/host_pages.hpp"

namespace moeperm::detail {
namespace {

// Large allocations are aligned to the huge-page size and advised to use huge pages unless
// the caller asks for normal pages (Note [Huge pages]); the others to kDeviceAlignment.
Status host_malloc(void **ptr, size_t bytes, Pages pages) {
  const size_t huge =
      pages == Pages::huge_first && bytes >= kHugePageMinBytes ? huge_page_bytes() : 0;
  const size_t align = huge ? huge : kDeviceAlignment;
  // aligned_alloc wants a multiple of the alignment; the rounding must not wrap.
  const size_t rounded = (bytes + align - 1) / align * align;
  *ptr = rounded < bytes ? nullptr : std::aligned_alloc(align, rounded);
  if (!*ptr)
    return fail(Code::runtime_error, rounded < bytes ? "the size rounded up to the alignment "
                                                       "overflows size_t"
                                                     : "aligned_alloc failed");
  if (huge) advise_huge_pages(*ptr, rounded);
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
