// Note [Executor lifetime]: an aclOpExecutor is single-use (SPEC §6). The first phase
// registers it under a fresh handle that is never reused; the second phase removes it from
// the registry on its first line and owns it from then on, so it is freed on every path,
// failures included. A null, unknown or already-executed handle is then just a lookup
// miss: an error, never a dereference of freed memory.
#pragma once

#include <aclnn/acl_meta.h>

#include <memory>

#include "core/plan.hpp"

namespace moeperm::capi {

struct Executor {
  detail::Plan plan;
  detail::Buffers buffers;
};

aclOpExecutor *register_executor(std::unique_ptr<Executor> executor);
// Removes and returns the executor; null if the handle is not live.
std::unique_ptr<Executor> take_executor(aclOpExecutor *handle);
int64_t live_executors();

// Phase 1 tail shared by both operators: check the data pointers, register the executor
// and report its workspace size.
aclnnStatus finish_first_phase(const detail::Plan &plan, const detail::Buffers &buffers,
                               uint64_t *workspace_size, aclOpExecutor **executor);
// Phase 2 shared by both operators.
aclnnStatus second_phase(detail::Op op, void *workspace, uint64_t workspace_size,
                         aclOpExecutor *executor, aclrtStream stream);

}  // namespace moeperm::capi
