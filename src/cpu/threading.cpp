#include "cpu/threading.hpp"

#include <moeperm/moeperm.hpp>

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

}  // namespace moeperm::detail::cpu
