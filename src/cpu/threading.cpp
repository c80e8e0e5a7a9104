#include "cpu/threading.hpp"

#include <moeperm/moeperm.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace moeperm {
namespace {
std::atomic<int> g_threads{0};  // 0: not set through the API
}

void set_num_threads(int n) { g_threads.store(n > 0 ? n : 0, std::memory_order_relaxed); }

int get_num_threads() { return detail::cpu::num_threads(); }

}  // namespace moeperm

namespace moeperm::detail::cpu {

int num_threads() {
  if (const char *env = std::getenv("MOEPERM_NUM_THREADS"); env && *env) {
    const long v = std::strtol(env, nullptr, 10);
    if (v > 0) return static_cast<int>(v);
  }
  if (const int n = g_threads.load(std::memory_order_relaxed); n > 0) return n;
  const unsigned hw = std::thread::hardware_concurrency();
  return hw > 0 ? static_cast<int>(hw) : 1;
}

TokenBlocks::TokenBlocks(int64_t T, const int64_t *rows_before, int64_t rows_per_token)
    : T_(T), rows_before_(rows_before), rows_per_token_(rows_per_token) {
  const int64_t by_size = (T + kMinTokens - 1) / kMinTokens;
  n_ = std::min(int64_t{num_threads()} * kBlocksPerThread, by_size);
}

int64_t TokenBlocks::begin(int64_t i) const {
  if (i >= n_) return T_;
  // The first t whose work before it reaches i/n of the total. work_before is strictly
  // increasing, so blocks are contiguous, in order, and cover [0, T).
  const int64_t target = i * work_before(T_) / n_;
  int64_t lo = 0, hi = T_;  // work_before(hi) >= target
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo) / 2;
    if (work_before(mid) >= target)
      hi = mid;
    else
      lo = mid + 1;
  }
  return lo;
}

}  // namespace moeperm::detail::cpu
