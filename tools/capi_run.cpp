#include "capi_run.hpp"

#include <aclnnop/aclnn_moe_token_permute_with_routing_map.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h>

#include <chrono>
#include <memory>

#include "acl_session.hpp"

namespace moeperm::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// Optional operands (probs) exist on the device only when the problem has them.
std::unique_ptr<DeviceTensor> upload_if(bool present, const tools::HostTensor &host) {
  return present ? std::make_unique<DeviceTensor>(host) : nullptr;
}
aclTensor *get_or_null(const std::unique_ptr<DeviceTensor> &t) { return t ? t->get() : nullptr; }
void download_if(const std::unique_ptr<DeviceTensor> &t, tools::HostTensor &host) {
  if (t) t->download(host);
}

// Phase 1 timed, the workspace (re)allocated untimed (as a caching allocator would serve
// it), then phase 2 + stream synchronisation timed together: on a created stream the
// kernel runs, and reports data errors, at the synchronisation.
template <class GetWorkspaceSize, class Execute>
void timed_call(OpTimes &times, DeviceBuffer &workspace, const AclStream &stream,
                const char *phase1_name, const char *phase2_name, GetWorkspaceSize phase1,
                Execute phase2) {
  uint64_t ws = 0;
  aclOpExecutor *executor = nullptr;
  auto t0 = Clock::now();
  check_acl(phase1(&ws, &executor), phase1_name);
  times.get_workspace_size.push_back(seconds_since(t0));
  times.workspace_bytes = ws;
  workspace.reserve(ws);
  t0 = Clock::now();
  check_acl(phase2(ws > 0 ? workspace.get() : nullptr, ws, executor, stream.get()), phase2_name);
  stream.synchronize();
  times.execute_sync.push_back(seconds_since(t0));
}

}  // namespace

CapiTimes run_through_capi(tools::Problem &p, int repeat) {
  const tools::ProblemSpec &s = p.spec;
  AclRuntime runtime;  // first in, last out: every resource below is released before it
  AclStream stream;
  DeviceTensor tokens(p.tokens), routing_map(p.routing_map);
  DeviceTensor permuted_tokens(p.permuted_tokens), sorted_indices(p.sorted_indices);
  DeviceTensor grad(p.grad), tokens_grad(p.tokens_grad);
  auto probs = upload_if(s.with_probs, p.probs);
  auto permuted_probs = upload_if(s.with_probs, p.permuted_probs);
  auto probs_grad = upload_if(s.with_probs, p.probs_grad);
  auto dense_probs_grad = upload_if(s.with_probs, p.dense_probs_grad);
  DeviceBuffer workspace;

  CapiTimes times;
  for (int i = 0; i < repeat; ++i) {
    timed_call(
        times.forward, workspace, stream, "aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize",
        "aclnnMoeTokenPermuteWithRoutingMap",
        [&](uint64_t *ws, aclOpExecutor **ex) {
          return aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
              tokens.get(), routing_map.get(), get_or_null(probs), s.num_out_tokens(),
              s.drop_and_pad, permuted_tokens.get(), get_or_null(permuted_probs),
              sorted_indices.get(), ws, ex);
        },
        aclnnMoeTokenPermuteWithRoutingMap);
    timed_call(
        times.backward, workspace, stream, "aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize",
        "aclnnMoeTokenPermuteWithRoutingMapGrad",
        [&](uint64_t *ws, aclOpExecutor **ex) {
          return aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
              grad.get(), get_or_null(probs_grad), sorted_indices.get(), routing_map.get(), s.E,
              s.T, s.drop_and_pad, tokens_grad.get(), get_or_null(dense_probs_grad), ws, ex);
        },
        aclnnMoeTokenPermuteWithRoutingMapGrad);
  }

  permuted_tokens.download(p.permuted_tokens);
  sorted_indices.download(p.sorted_indices);
  tokens_grad.download(p.tokens_grad);
  download_if(permuted_probs, p.permuted_probs);
  download_if(dense_probs_grad, p.dense_probs_grad);
  return times;
}

}  // namespace moeperm::cli
