#include "capi/executor.hpp"

#include <map>
#include <mutex>

#include "backend/registry.hpp"
#include "capi/fault_injection.hpp"
#include "capi/last_error.hpp"
#include "capi/runtime.hpp"
#include "capi/stream.hpp"
#include "capi/two_phase.hpp"
#include "core/messages.hpp"

namespace moeperm::capi {
namespace {

std::mutex g_mu;
uintptr_t g_next_handle = 0x1000;  // handles are ids, not addresses: never reused
std::map<uintptr_t, std::unique_ptr<Executor>> &executors() {
  static std::map<uintptr_t, std::unique_ptr<Executor>> m;
  return m;
}

// A device plan reads and writes its tensors and workspace on its device: other memory
// there would be an illegal access (on a GPU, a sticky error), so it is rejected up front.
detail::Status check_device_memory(const detail::Plan &plan, const detail::Buffers &b,
                                   const void *workspace) {
  const detail::DeviceOps &device = detail::device_of(plan);
  auto on_device = [&](const void *p) { return !p || device_of_pointer(p) == &device; };
  auto wrong = [&](const char *name) {
    return detail::inconsistent(
        plan.api(),
        detail::cat(name, ": expected ", device.memory, " from aclrtMalloc (the operator runs on ",
                    device.noun, "), got a pointer outside all ", device.memory));
  };
  for (const detail::OperandDesc &o : detail::op_desc(plan.op).operands)
    if (!on_device(detail::buffer_of(b, o.role))) return wrong(o.name);
  if (!on_device(workspace)) return wrong("workspace");
  return detail::Status::success();
}

}  // namespace

aclOpExecutor *register_executor(std::unique_ptr<Executor> executor) {
  std::lock_guard lock(g_mu);
  const uintptr_t id = g_next_handle;
  g_next_handle += 16;
  executors()[id] = std::move(executor);
  return reinterpret_cast<aclOpExecutor *>(id);
}

std::unique_ptr<Executor> take_executor(aclOpExecutor *handle) {
  std::lock_guard lock(g_mu);
  auto it = executors().find(reinterpret_cast<uintptr_t>(handle));
  if (it == executors().end()) return nullptr;
  std::unique_ptr<Executor> e = std::move(it->second);
  executors().erase(it);
  return e;
}

int64_t live_executors() {
  std::lock_guard lock(g_mu);
  return static_cast<int64_t>(executors().size());
}

aclnnStatus plan_and_register(const detail::OperandSet &set, const detail::Buffers &buffers,
                              uint64_t *workspace_size, aclOpExecutor **executor) {
  detail::Plan plan;
  if (detail::Status s = detail::plan_call(set, operator_backend(), &plan); !s.ok())
    return report(s);
  if (!workspace_size) return report(detail::null_argument(plan.api(), "workspaceSize"));
  if (!executor) return report(detail::null_argument(plan.api(), "executor"));
  if (detail::Status s = detail::check_buffers(plan, buffers); !s.ok()) return report(s);
  if (fault_fires(MOEPERM_FAULT_EXECUTOR)) throw std::bad_alloc();  // as make_unique would
  auto e = std::make_unique<Executor>();
  e->plan = plan;
  e->buffers = buffers;
  *workspace_size = detail::workspace_bytes(plan);
  *executor = register_executor(std::move(e));
  return ACLNN_SUCCESS;
}

aclnnStatus take_and_run(detail::Op op, void *workspace, uint64_t workspace_size,
                         aclOpExecutor *handle, aclrtStream stream) {
  const char *api = detail::op_desc(op).api;
  if (!handle) return report(detail::null_argument(api, "executor"));
  std::unique_ptr<Executor> e = take_executor(handle);
  if (!e)
    return report(detail::inconsistent(
        api,
        "executor is not live: it was already executed (executors are single-use) or was "
        "not created by a GetWorkspaceSize call"));
  if (e->plan.op != op)
    return report(detail::inconsistent(
        api, detail::cat("executor was created by ", e->plan.api(), "GetWorkspaceSize")));
  // Workspace errors are visible now, whatever the stream: report them from this phase.
  if (detail::Status s = detail::check_workspace(e->plan, workspace, workspace_size); !s.ok())
    return report(s);
  if (detail::runs_on_device(e->plan))
    if (detail::Status s = check_device_memory(e->plan, e->buffers, workspace); !s.ok())
      return report(s);
  return report(submit(stream, std::move(e), workspace, workspace_size));
}

}  // namespace moeperm::capi
