// The registry of live executors (Note [Executor lifetime], src/core/notes.md).
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

}  // namespace moeperm::capi
