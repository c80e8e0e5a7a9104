// The one path of every aclnn operator's two C entry points. An entry point names its
// operands by designated initializers (the operator's Operands struct for the descriptors,
// Buffers for the data) and hands them here; the API name, the exception guard, planning
// on the current device's backend and the executor hand-off are written once.
//
// Who checks what in the second phase: Note [Phase 2 checks] (src/core/notes.md).
#pragma once

#include <aclnn/acl_meta.h>

#include <new>
#include <string>

#include "capi/last_error.hpp"
#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "core/plan.hpp"

namespace moeperm::capi {

// Runs `body`; an exception becomes the status of SPEC §6 (out of memory, internal error)
// named for the API `api` + `suffix`, so none crosses the C ABI.
template <class Body>
aclnnStatus guarded(detail::Op op, const char *suffix, Body &&body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc &) {
    return report(detail::out_of_memory(std::string(detail::op_desc(op).api) + suffix));
  } catch (const std::exception &e) {
    return report(detail::internal_error(std::string(detail::op_desc(op).api) + suffix, e.what()));
  }
}

// Plans the call, checks the buffers, registers the executor, reports the workspace size.
aclnnStatus plan_and_register(const detail::OperandSet &set, const detail::Buffers &buffers,
                              uint64_t *workspace_size, aclOpExecutor **executor);
// Takes the executor and runs it (Note [Phase 2 checks]).
aclnnStatus take_and_run(detail::Op op, void *workspace, uint64_t workspace_size,
                         aclOpExecutor *executor, aclrtStream stream);

// <api>GetWorkspaceSize.
template <class Operands>
aclnnStatus first_phase(const Operands &operands, const detail::Buffers &buffers,
                        uint64_t *workspace_size, aclOpExecutor **executor) noexcept {
  // to_set by argument-dependent lookup: declared with the Operands struct.
  return guarded(Operands::op, "GetWorkspaceSize", [&] {
    return plan_and_register(to_set(operands), buffers, workspace_size, executor);
  });
}

// <api>.
template <class Operands>
aclnnStatus second_phase(void *workspace, uint64_t workspace_size, aclOpExecutor *executor,
                         aclrtStream stream) noexcept {
  return guarded(Operands::op, "", [&] {
    return take_and_run(Operands::op, workspace, workspace_size, executor, stream);
  });
}

}  // namespace moeperm::capi
