// Transparent huge pages for large host "device memory" (Note [Huge pages]).
#pragma once

#include <cstddef>
#include <string_view>

namespace moeperm::detail {

// Allocations of at least this many bytes get huge pages; smaller ones are not worth up to
// a huge page of rounding.
inline constexpr size_t kHugePageMinBytes = size_t{4} << 20;

// The huge-page size to align large allocations to, or 0 for none, from what the host says:
// `env` is MOEPERM_HUGE_PAGES (null: unset; "0" turns huge pages off), `thp_enabled` the
// contents of /sys/kernel/mm/transparent_hugepage/enabled (the mode in brackets: "always",
// "madvise" or "never"; empty where the file is absent) and `pmd_bytes` those of
// .../hpage_pmd_size (the huge-page size in bytes). Pure, so tests can give any host.
size_t huge_page_bytes_for(const char *env, std::string_view thp_enabled,
                           std::string_view pmd_bytes);

// huge_page_bytes_for this process's environment and host, read once.
size_t huge_page_bytes();

// Advises the kernel to back [p, p + bytes) with huge pages (p and bytes multiples of
// huge_page_bytes()). Advice only: where the kernel declines, memory stays as it was.
void advise_huge_pages(void *p, size_t bytes);

}  // namespace moeperm::detail
