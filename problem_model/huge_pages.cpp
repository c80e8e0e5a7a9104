// Huge-page advice for the problem model's buffers (problem_model.hpp).
#include <atomic>
#include <cstdint>
#include <fstream>
#include <string>

#include "problem_model.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace moeperm::problem_model {
namespace {

std::atomic<bool> g_advice{false};
// The transparent-huge-page size of x86-64 and of 4 KiB-page arm64; elsewhere the advice
// covers whole multiples of it, which is still whole pages.
constexpr uintptr_t kHugePage = uintptr_t{2} << 20;
constexpr size_t kMinBytes = size_t{4} << 20;

}  // namespace

void set_huge_page_advice(bool on) { g_advice.store(on, std::memory_order_relaxed); }

bool huge_page_advice() { return g_advice.load(std::memory_order_relaxed); }

std::string thp_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(in, line);
  const size_t open = line.find('['), close = line.find(']');
  return open != std::string::npos && close != std::string::npos && close > open
             ? line.substr(open + 1, close - open - 1)
             : "";
}

void advise_huge_pages_within(void *p, size_t n) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  if (!huge_page_advice() || !p || n < kMinBytes) return;
  const auto begin = reinterpret_cast<uintptr_t>(p), end = begin + n;
  const uintptr_t first = (begin + kHugePage - 1) & ~(kHugePage - 1), last = end & ~(kHugePage - 1);
  // Advice only: where the kernel declines, the pages stay small and nothing else changes.
  if (last > first) (void)madvise(reinterpret_cast<void *>(first), last - first, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

}  // namespace moeperm::problem_model
