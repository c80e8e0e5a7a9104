#include "backend/registry.hpp"

#include <array>
#include <cstdlib>
#include <string_view>

#include "core/messages.hpp"

namespace moeperm::detail {

namespace {

const std::array<const BackendOps *, 2> &ordered() {
  static const std::array<const BackendOps *, 2> list{&kCpuBackend, &kReferenceBackend};
  return list;
}

}  // namespace

const BackendOps &backend_ops(BackendId id) {
  if (id == BackendId::cuda && cuda_backend_ops()) return *cuda_backend_ops();
  for (const BackendOps *b : ordered())
    if (b->id == id) return *b;
  return kReferenceBackend;
}

Status select_backend(Plan &plan, Backend requested) {
  // The CUDA backend is chosen only by name: its pointers are device memory, which a plan
  // (built from descriptors alone) cannot tell apart from host memory.
  if (requested == Backend::cuda) {
    const BackendOps *cuda = cuda_backend_ops();
    if (!cuda)
      return inconsistent(plan.api(),
                          "the CUDA backend was requested, but this moeperm was built without "
                          "it (MOEPERM_CUDA=OFF, or nvcc was not found)");
    plan.backend = BackendId::cuda;
    plan.workspace = WorkspaceLayout{};
    return cuda->prepare(plan);
  }
  if (requested == Backend::automatic) {
    if (const char *env = std::getenv("MOEPERM_BACKEND"); env && *env) {
      const std::string_view v(env);
      if (v == "cpu")
        requested = Backend::cpu;
      else if (v == "reference" || v == "ref")
        requested = Backend::reference;
      else if (v != "auto")
        return inconsistent(plan.api(),
                            cat("MOEPERM_BACKEND must be cpu, reference or auto, got '", v, "'"));
    }
  }
  const BackendOps *chosen = nullptr;
  for (const BackendOps *b : ordered()) {
    const bool wanted = requested == Backend::automatic ||
                        (requested == Backend::cpu && b->id == BackendId::cpu) ||
                        (requested == Backend::reference && b->id == BackendId::reference);
    if (wanted && b->supports(plan)) {
      chosen = b;
      break;
    }
  }
  // A pinned backend that cannot take this plan (an empty problem) defers to the reference,
  // which supports everything: results are defined by SPEC, not by the backend.
  if (!chosen) chosen = &kReferenceBackend;
  plan.backend = chosen->id;
  plan.workspace = WorkspaceLayout{};
  return chosen->prepare(plan);
}

Status check_buffers(const Plan &plan, const Buffers &b) {
  const char *api = plan.api();
  const bool fwd = plan.op == Op::permute;
  const int64_t th = plan.T * plan.H, rh = plan.R * plan.H, te = plan.T * plan.E;
  if (th > 0 && !b.tokens) return null_data(api, fwd ? "tokens" : "tokensGradOut", th);
  if (rh > 0 && !b.permuted)
    return null_data(api, fwd ? "permuteTokensOut" : "permutedTokenOutputGrad", rh);
  if (plan.has_routing_map && te > 0 && !b.routing_map)
    return null_data(api, fwd ? "routingMap" : "routingMapOptional", te);
  if (plan.R > 0 && !b.sorted_indices)
    return null_data(api, fwd ? "sortedIndicesOut" : "sortedIndices", plan.R);
  const bool dense_probs_used =
      fwd ? plan.probs == ProbsWork::compute : plan.probs != ProbsWork::none;
  const bool permuted_probs_used =
      fwd ? plan.probs != ProbsWork::none : plan.probs == ProbsWork::compute;
  if (dense_probs_used && te > 0 && !b.dense_probs)
    return null_data(api, fwd ? "probsOptional" : "probsGradOutOptional", te);
  if (permuted_probs_used && plan.R > 0 && !b.permuted_probs)
    return null_data(api, fwd ? "permuteProbsOutOptional" : "permutedProbsOutputGradOptional",
                     plan.R);
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
  return backend_ops(plan.backend).run(plan, buffers, aligned_workspace(plan, workspace));
}

Status execute_on_stream(const Plan &plan, const Buffers &buffers, void *workspace,
                         uint64_t workspace_bytes, void *stream, DeviceErrorSink sink) {
  const BackendOps &ops = backend_ops(plan.backend);
  if (!ops.run_on_stream) return execute(plan, buffers, workspace, workspace_bytes);
  MOEPERM_TRY(check_buffers(plan, buffers));
  MOEPERM_TRY(check_workspace(plan, workspace, workspace_bytes));
  return ops.run_on_stream(plan, buffers, aligned_workspace(plan, workspace), stream, sink);
}

}  // namespace moeperm::detail
