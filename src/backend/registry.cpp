// The one ordered registry of backends and their devices (oneDNN's implementation list):
// fastest host backend first, the naive reference last among the host backends (it supports
// every plan), device backends after them, chosen only by name, each with the device whose
// memory and streams it uses. A backend folder adds one line here.
#include "backend/registry.hpp"

#include <array>
#include <cstdlib>
#include <string_view>

#include "core/messages.hpp"

namespace moeperm::detail {

extern const BackendOps kCpuBackend;        // src/cpu
extern const BackendOps kReferenceBackend;  // src/reference
const BackendOps *cuda_backend();           // src/cuda; null when built without it
const DeviceOps *cuda_device();             // src/cuda; null when built without it

namespace {

using Entry = RegistryEntry;

const std::array<Entry, 3> &registry() {
  static const std::array<Entry, 3> list{{
      {&kCpuBackend, &kHostDevice, "cpu", Backend::cpu, false, "CPU", ""},
      {&kReferenceBackend, &kHostDevice, "reference", Backend::reference, false, "reference", ""},
      {cuda_backend(), cuda_device(), "cuda", Backend::cuda, true, "CUDA",
       "MOEPERM_CUDA=OFF, or nvcc was not found"},
  }};
  return list;
}

const Entry *entry_of(Backend kind) {
  for (const Entry &e : registry())
    if (e.kind == kind) return &e;
  return nullptr;
}

// MOEPERM_BACKEND names a host backend (or "auto", or "ref" for the reference).
Status backend_from_environment(const Plan &plan, Backend *requested) {
  const char *env = std::getenv("MOEPERM_BACKEND");
  if (!env || !*env) return Status::success();
  const std::string_view v(env);
  if (v == "auto") return Status::success();
  std::string names;
  for (const Entry &e : registry()) {
    if (e.device) continue;
    if (v == e.name || (e.kind == Backend::reference && v == "ref")) {
      *requested = e.kind;
      return Status::success();
    }
    names += cat(e.name, ", ");
  }
  names.resize(names.size() - 2);
  return inconsistent(plan.api(),
                      cat("MOEPERM_BACKEND must be ", names, " or auto, got '", v, "'"));
}

Status use(Plan &plan, const Entry &e) {
  plan.backend = e.ops;
  plan.workspace = WorkspaceLayout{};
  plan.ws_slot = no_slots();
  MOEPERM_TRY(e.ops->prepare(plan));
  if (const char *slot = plan.workspace.overflowed())
    return internal_error(
        plan.api(), cat("the ", e.title, " backend lays out more than ", WorkspaceLayout::kMaxSlots,
                        " workspace slots (no room for '", slot, "')"));
  if (const char *slot = plan.workspace.too_large())
    return inconsistent(plan.api(),
                        cat("the ", e.title, " backend's workspace would pass 2^63 bytes at slot '",
                            slot, "' (the problem is too large)"));
  return Status::success();
}

}  // namespace

const BackendOps *find_backend(Backend kind) {
  const Entry *e = entry_of(kind);
  return e ? e->ops : nullptr;
}

std::vector<BackendInfo> registered_backends() {
  std::vector<BackendInfo> out;
  for (const Entry &e : registry())
    out.push_back({e.kind, e.name, e.device, e.ops != nullptr && e.memory->count() > 0});
  return out;
}

std::vector<DeviceEntry> registered_devices() {
  std::vector<DeviceEntry> out{{&kHostDevice, kHostDevice.name, Backend::automatic, "", ""}};
  for (const Entry &e : registry())
    if (e.device) out.push_back({e.memory, e.name, e.kind, e.title, e.missing});
  return out;
}

const DeviceOps &device_of(const Plan &plan) {
  for (const Entry &e : registry())
    if (e.ops == plan.backend) return *e.memory;
  return kHostDevice;
}

int device_count(Backend kind) {
  const Entry *e = entry_of(kind);
  return e && e->memory ? e->memory->count() : 0;
}

Status plan_call(const OperandSet &set, Backend requested, Plan *plan) {
  Plan p;
  MOEPERM_TRY(make_plan(set, &p));
  MOEPERM_TRY(select_backend(p, requested));
  *plan = p;
  return Status::success();
}

Status select_backend(Plan &plan, Backend requested) {
  if (requested == Backend::automatic) MOEPERM_TRY(backend_from_environment(plan, &requested));
  return select_backend_in(registry(), plan, requested);
}

// Note [Backend selection].
Status select_backend_in(std::span<const RegistryEntry> list, Plan &plan, Backend requested) {
  // A device backend is chosen only by name: its pointers are device memory, which a plan
  // (built from descriptors alone) cannot tell apart from host memory. It takes every
  // problem it has a kernel for, empty ones included.
  for (const Entry &e : list) {
    if (!e.device || e.kind != requested) continue;
    if (!e.ops)
      return inconsistent(plan.api(), cat("the ", e.title,
                                          " backend was requested, but this moeperm was built "
                                          "without it (",
                                          e.missing, ")"));
    if (e.ops->supports(plan) != Support::yes) return not_implemented(plan, e.title);
    return use(plan, e);
  }
  const Entry *reference = nullptr;  // the last host backend
  for (const Entry &e : list)
    if (!e.device && e.ops) reference = &e;
  for (const Entry &e : list) {
    if (e.device || !e.ops || (requested != Backend::automatic && requested != e.kind)) continue;
    switch (e.ops->supports(plan)) {
      case Support::yes: return use(plan, e);
      case Support::no_kernel:
        if (requested != Backend::automatic) return not_implemented(plan, e.title);
        break;
      case Support::empty_problem:  // the one deferral (Note [Empty problems])
        if (requested != Backend::automatic && reference &&
            reference->ops->supports(plan) == Support::yes)
          return use(plan, *reference);
        break;
    }
  }
  // Automatic selection found no host backend with a kernel: the reference lacks one too.
  return not_implemented(plan, reference ? reference->title : "reference");
}

Status check_buffers(const Plan &plan, const Buffers &b) {
  const OpDesc &op = op_desc(plan.op);
  for (size_t i = 0; i < op.operands.size(); ++i) {
    const OperandDesc &o = op.operands[i];
    // An operand the plan does not have, or one it ignores (SPEC §3: "P without an output is
    // accepted and ignored"), needs no data.
    if (!(plan.used_operands >> i & 1u)) continue;
    const int64_t elements = role_elements(plan, o.role);
    if (elements > 0 && !buffer_of(b, o.role)) return null_data(plan.api(), o.name, elements);
  }
  return Status::success();
}

Status check_workspace(const Plan &plan, const void *workspace, uint64_t workspace_bytes) {
  const uint64_t need = detail::workspace_bytes(plan);
  if (workspace_bytes < need)
    return inconsistent(plan.api(),
                        cat("workspaceSize = ", workspace_bytes, " is smaller than the ", need,
                            " bytes the first phase asked for"));
  if (need > 0 && !workspace)
    return null_argument_because(plan.api(), "workspace", cat("workspaceSize is ", need));
  return Status::success();
}

namespace {

std::byte *aligned_workspace(const Plan &plan, void *workspace) {
  if (detail::workspace_bytes(plan) == 0) return nullptr;
  const auto addr = reinterpret_cast<uintptr_t>(workspace);
  const uintptr_t a = WorkspaceLayout::kAlignment;
  return static_cast<std::byte *>(workspace) + ((a - addr % a) % a);
}

}  // namespace

Status execute(const Plan &plan, const Buffers &buffers, void *workspace,
               uint64_t workspace_bytes) {
  MOEPERM_TRY(check_buffers(plan, buffers));
  MOEPERM_TRY(check_workspace(plan, workspace, workspace_bytes));
  return plan.backend->run(plan, buffers, aligned_workspace(plan, workspace));
}

Status execute_on_stream(const Plan &plan, const Buffers &buffers, void *workspace,
                         uint64_t workspace_bytes, void *stream, DeviceErrorSink sink) {
  if (!runs_on_device(plan)) return execute(plan, buffers, workspace, workspace_bytes);
  MOEPERM_TRY(check_buffers(plan, buffers));
  MOEPERM_TRY(check_workspace(plan, workspace, workspace_bytes));
  return plan.backend->run_on_stream(plan, buffers, aligned_workspace(plan, workspace), stream,
                                     sink);
}

}  // namespace moeperm::detail
