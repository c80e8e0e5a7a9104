// Transparent huge pages for large host "device memory" (Note [Huge pages]).
#include "device/host_pages.hpp"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace moeperm::detail {
namespace {

std::string read_file(const char *path) {
  std::ifstream in(path);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

size_t huge_page_bytes_for(const char *env, std::string_view thp_enabled,
                           std::string_view pmd_bytes) {
  if (env && std::string_view(env) == "0") return 0;
  // The kernel's mode is the bracketed word; "[never]" ignores madvise, and an absent file
  // means no THP at all.
  if (thp_enabled.find("[always]") == std::string_view::npos &&
      thp_enabled.find("[madvise]") == std::string_view::npos)
    return 0;
  size_t bytes = 0;
  const auto [end, ec] =
      std::from_chars(pmd_bytes.data(), pmd_bytes.data() + pmd_bytes.size(), bytes);
  (void)end;
  // A power of two between 64 KiB and 1 GiB (2 MiB on x86-64 and on 4 KiB-page arm64);
  // anything else is not a size this code should align to.
  const bool sane = ec == std::errc() && bytes >= (size_t{1} << 16) && bytes <= (size_t{1} << 30) &&
                    (bytes & (bytes - 1)) == 0;
  return sane ? bytes : 0;
}

size_t huge_page_bytes() {
  static const size_t bytes = [] {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    return huge_page_bytes_for(std::getenv("MOEPERM_HUGE_PAGES"),
                               read_file("/sys/kernel/mm/transparent_hugepage/enabled"),
                               read_file("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size"));
#else
    return size_t{0};
#endif
  }();
  return bytes;
}

void advise_huge_pages(void *p, size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  (void)madvise(p, bytes, MADV_HUGEPAGE);  // advice: a refusal leaves small pages, no error
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace moeperm::detail
