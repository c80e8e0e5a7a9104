#include "capi/fault_injection.hpp"

#include <atomic>
#include <mutex>

namespace moeperm::capi {
namespace {

struct FaultState {
  int64_t skip = 0;
  int64_t remaining = 0;  // < 0: unlimited
  int64_t injected = 0;
};

std::mutex g_mu;
FaultState g_points[MOEPERM_FAULT_POINT_COUNT];
// Bit i set: point i is armed. Read without the lock on every hook, so that a disarmed
// hook is one relaxed load; the state itself is only touched under g_mu.
std::atomic<unsigned> g_armed{0};

bool valid(moeperm_fault_point point) {
  return static_cast<int>(point) >= 0 && static_cast<int>(point) < MOEPERM_FAULT_POINT_COUNT;
}

}  // namespace

bool fault_fires(moeperm_fault_point point) noexcept {
  if (!valid(point) || (g_armed.load(std::memory_order_relaxed) & (1u << point)) == 0) return false;
  std::lock_guard lock(g_mu);
  FaultState &s = g_points[point];
  if (s.remaining == 0) return false;  // disarmed by another thread meanwhile
  if (s.skip > 0) {
    --s.skip;
    return false;
  }
  if (s.remaining > 0 && --s.remaining == 0)
    g_armed.fetch_and(~(1u << point), std::memory_order_relaxed);
  ++s.injected;
  return true;
}

}  // namespace moeperm::capi

namespace mc = moeperm::capi;

extern "C" {

ACL_FUNC_VISIBILITY void moeperm_fault_inject(moeperm_fault_point point, int64_t skip,
                                              int64_t count) {
  if (!mc::valid(point)) return;
  std::lock_guard lock(mc::g_mu);
  mc::g_points[point] = mc::FaultState{skip > 0 ? skip : 0, count, 0};
  if (count != 0)
    mc::g_armed.fetch_or(1u << point, std::memory_order_relaxed);
  else
    mc::g_armed.fetch_and(~(1u << point), std::memory_order_relaxed);
}

ACL_FUNC_VISIBILITY void moeperm_fault_reset(void) {
  std::lock_guard lock(mc::g_mu);
  for (mc::FaultState &s : mc::g_points) s.skip = 0, s.remaining = 0;
  mc::g_armed.store(0, std::memory_order_relaxed);
}

ACL_FUNC_VISIBILITY int64_t moeperm_fault_injected(moeperm_fault_point point) {
  if (!mc::valid(point)) return 0;
  std::lock_guard lock(mc::g_mu);
  return mc::g_points[point].injected;
}

}  // extern "C"
