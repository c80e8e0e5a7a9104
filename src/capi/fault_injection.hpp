// Fault injection for the robustness tests (docs/robustness.md). In-process switches make
// chosen allocation points of the runtime fail as if the system were out of memory or out
// of threads, so that every error path can be exercised: it must return a status code with
// a message and leak nothing. Disarmed by default; a disarmed hook costs one relaxed atomic
// load. This is a testing hook, not part of CANN's API (hence the moeperm_ prefix): the C
// functions are exported so that test programs can arm it through the shared library.
#pragma once

#include <acl/acl_base.h>

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  MOEPERM_FAULT_ACLRT_MALLOC = 0,   // aclrtMalloc: the allocation fails (ACL_ERROR_BAD_ALLOC)
  MOEPERM_FAULT_CREATE_TENSOR = 1,  // aclCreateTensor: the descriptor allocation fails (null)
  MOEPERM_FAULT_CREATE_STREAM = 2,  // aclrtCreateStream: the worker thread cannot start
  MOEPERM_FAULT_EXECUTOR = 3,       // first phase: allocating the executor throws bad_alloc
  MOEPERM_FAULT_POINT_COUNT = 4
} moeperm_fault_point;

// Arms `point`: the next `skip` calls that reach it proceed, then `count` calls fail
// (count < 0: every later call fails); count == 0 disarms it. Resets its injected count.
ACL_FUNC_VISIBILITY void moeperm_fault_inject(moeperm_fault_point point, int64_t skip,
                                              int64_t count);
// Disarms every point.
ACL_FUNC_VISIBILITY void moeperm_fault_reset(void);
// Failures injected at `point` since it was last armed.
ACL_FUNC_VISIBILITY int64_t moeperm_fault_injected(moeperm_fault_point point);

#ifdef __cplusplus
}  // extern "C"

namespace moeperm::capi {
// The hook: true when this call at `point` must fail. Thread-safe.
bool fault_fires(moeperm_fault_point point) noexcept;
}  // namespace moeperm::capi
#endif
