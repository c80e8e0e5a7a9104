#include "capi_run.hpp"

#include <aclnnop/aclnn_moe_token_permute_with_routing_map.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h>

#include <moeperm/acl_handles.hpp>

#include <chrono>
#include <memory>
#include <span>

namespace moeperm::cli {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using acl::check;
using acl::DeviceBuffer;
using acl::DeviceTensor;

// A host tensor's twin in device memory: the whole storage is copied, so strides and the
// storage offset carry over, and so does the poison in output buffers (a slot the operator
// fails to write shows up in the comparison).
DeviceTensor upload(const problem_model::HostTensor &host) {
  return DeviceTensor(host.desc, std::as_bytes(std::span(host.storage)));
}
void download(const DeviceTensor &t, problem_model::HostTensor &host) {
  t.download(std::as_writable_bytes(std::span(host.storage)));
}

// Optional operands (probs) exist on the device only when the problem has them.
std::unique_ptr<DeviceTensor> upload_if(bool present, const problem_model::HostTensor &host) {
  return present ? std::make_unique<DeviceTensor>(upload(host)) : nullptr;
}
aclTensor *get_or_null(const std::unique_ptr<DeviceTensor> &t) { return t ? t->get() : nullptr; }
void download_if(const std::unique_ptr<DeviceTensor> &t, problem_model::HostTensor &host) {
  if (t) download(*t, host);
}

// Phase 1 timed, the workspace (re)allocated untimed (as a caching allocator would serve
// it), then phase 2 + stream synchronisation timed together: on a created stream the
// kernel runs, and reports data errors, at the synchronisation.
template <class GetWorkspaceSize, class Execute>
void timed_call(OpTimes &times, DeviceBuffer &workspace, aclrtStream stream,
                const char *phase1_name, const char *phase2_name, GetWorkspaceSize phase1,
                Execute phase2) {
  uint64_t ws = 0;
  aclOpExecutor *executor = nullptr;
  auto t0 = Clock::now();
  check(phase1(&ws, &executor), phase1_name);
  times.get_workspace_size.push_back(seconds_since(t0));
  times.workspace_bytes = ws;
  workspace.reserve(ws);
  t0 = Clock::now();
  check(phase2(ws > 0 ? workspace.get() : nullptr, ws, executor, stream), phase2_name);
  check(aclrtSynchronizeStream(stream), "aclrtSynchronizeStream");
  times.execute_sync.push_back(seconds_since(t0));
}

}  // namespace

CapiTimes run_through_capi(problem_model::Problem &p, int repeat) {
  const problem_model::ProblemSpec &s = p.spec;
  acl::Runtime runtime;  // first in, last out: every resource below is released before it
  const acl::StreamPtr stream = acl::create_stream();
  const DeviceTensor tokens = upload(p.tokens), routing_map = upload(p.routing_map);
  const DeviceTensor permuted_tokens = upload(p.permuted_tokens);
  const DeviceTensor sorted_indices = upload(p.sorted_indices);
  const DeviceTensor grad = upload(p.grad), tokens_grad = upload(p.tokens_grad);
  auto probs = upload_if(s.with_probs, p.probs);
  auto permuted_probs = upload_if(s.with_probs, p.permuted_probs);
  auto probs_grad = upload_if(s.with_probs, p.probs_grad);
  auto dense_probs_grad = upload_if(s.with_probs, p.dense_probs_grad);
  DeviceBuffer workspace;

  CapiTimes times;
  for (int i = 0; i < repeat; ++i) {
    timed_call(
        times.forward, workspace, stream.get(),
        "aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize", "aclnnMoeTokenPermuteWithRoutingMap",
        [&](uint64_t *ws, aclOpExecutor **ex) {
          return aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
              tokens.get(), routing_map.get(), get_or_null(probs), s.num_out_tokens(),
              s.drop_and_pad, permuted_tokens.get(), get_or_null(permuted_probs),
              sorted_indices.get(), ws, ex);
        },
        aclnnMoeTokenPermuteWithRoutingMap);
    timed_call(
        times.backward, workspace, stream.get(),
        "aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize",
        "aclnnMoeTokenPermuteWithRoutingMapGrad",
        [&](uint64_t *ws, aclOpExecutor **ex) {
          return aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
              grad.get(), get_or_null(probs_grad), sorted_indices.get(), routing_map.get(), s.E,
              s.T, s.drop_and_pad, tokens_grad.get(), get_or_null(dense_probs_grad), ws, ex);
        },
        aclnnMoeTokenPermuteWithRoutingMapGrad);
  }

  download(permuted_tokens, p.permuted_tokens);
  download(sorted_indices, p.sorted_indices);
  download(tokens_grad, p.tokens_grad);
  download_if(permuted_probs, p.permuted_probs);
  download_if(dense_probs_grad, p.dense_probs_grad);
  return times;
}

}  // namespace moeperm::cli
