#include "capi_run.hpp"

#include <aclnnop/aclnn_moe_token_permute_with_routing_map.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h>
#include <aclnnop/aclnn_moe_token_unpermute_with_routing_map.h>
#include <aclnnop/aclnn_moe_token_unpermute_with_routing_map_grad.h>

#include <moeperm/acl_handles.hpp>

#include <chrono>
#include <memory>
#include <span>

namespace moeperm::cli {
namespace {

using Clock = std::chrono::steady_clock;
using problem_model::HostTensor;

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

using acl::check;
using acl::DeviceBuffer;
using acl::DeviceTensor;

// A host tensor's twin in device memory, or none for an operand the call leaves out (an
// empty host tensor). The whole storage is copied, so strides and the storage offset carry
// over, and so does the poison in output buffers (an element the operator fails to write
// shows up in the comparison).
class Operand {
 public:
  Operand(const HostTensor &host, bool present = true)
      : t_(present
               ? std::make_unique<DeviceTensor>(host.desc, std::as_bytes(std::span(host.storage)))
               : nullptr) {}
  aclTensor *get() const { return t_ ? t_->get() : nullptr; }
  void download(HostTensor &host) const {
    if (t_) t_->download(std::as_writable_bytes(std::span(host.storage)));
  }

 private:
  std::unique_ptr<DeviceTensor> t_;
};

// Phase 1 timed, the workspace (re)allocated untimed (as a caching allocator would serve
// it), then phase 2 + stream synchronisation timed together: on a created stream the
// kernel runs, and reports data errors, at the synchronisation.
template <class GetWorkspaceSize, class Execute>
OpTimes timed_calls(int repeat, void *stream, const char *phase1_name, const char *phase2_name,
                    GetWorkspaceSize phase1, Execute phase2) {
  OpTimes times;
  DeviceBuffer workspace;
  for (int i = 0; i < repeat; ++i) {
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
  return times;
}

}  // namespace

OpTimes capi_permute(problem_model::Problem &p, void *stream, int repeat) {
  const problem_model::ProblemSpec &s = p.spec;
  const Operand tokens(p.tokens), map(p.routing_map), probs(p.probs, s.with_probs);
  const Operand rows(p.permuted_tokens), row_probs(p.permuted_probs, s.with_probs);
  const Operand sorted(p.sorted_indices);
  const OpTimes t = timed_calls(
      repeat, stream, "aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize",
      "aclnnMoeTokenPermuteWithRoutingMap",
      [&](uint64_t *ws, aclOpExecutor **ex) {
        return aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
            tokens.get(), map.get(), probs.get(), s.num_out_tokens(), s.drop_and_pad, rows.get(),
            row_probs.get(), sorted.get(), ws, ex);
      },
      aclnnMoeTokenPermuteWithRoutingMap);
  rows.download(p.permuted_tokens);
  row_probs.download(p.permuted_probs);
  sorted.download(p.sorted_indices);
  return t;
}

OpTimes capi_unpermute(problem_model::Problem &p, problem_model::UnpermuteTensors &u, void *stream,
                       int repeat) {
  const problem_model::ProblemSpec &s = p.spec;
  const Operand rows(p.permuted_tokens), sorted(p.sorted_indices);
  const Operand map(p.routing_map, s.with_probs), probs(p.probs, s.with_probs);
  const Operand out(u.unpermuted), out_index(u.out_index), token_id(u.token_id);
  const Operand permute_probs(u.permute_probs);
  const int64_t shape[] = {s.T, s.H};
  const acl::IntArrayPtr restore = acl::create_int_array(shape);
  const OpTimes t = timed_calls(
      repeat, stream, "aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize",
      "aclnnMoeTokenUnpermuteWithRoutingMap",
      [&](uint64_t *ws, aclOpExecutor **ex) {
        return aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(
            rows.get(), sorted.get(), map.get(), probs.get(), s.drop_and_pad, restore.get(),
            out.get(), out_index.get(), token_id.get(), permute_probs.get(), ws, ex);
      },
      aclnnMoeTokenUnpermuteWithRoutingMap);
  out.download(u.unpermuted);
  out_index.download(u.out_index);
  token_id.download(u.token_id);
  permute_probs.download(u.permute_probs);
  return t;
}

OpTimes capi_unpermute_grad(problem_model::Problem &p, problem_model::UnpermuteTensors &u,
                            void *stream, int repeat) {
  const problem_model::ProblemSpec &s = p.spec;
  const Operand grad(u.out_grad), out_index(u.out_index), token_id(u.token_id);
  const Operand map(p.routing_map, s.with_probs), rows(p.permuted_tokens, s.with_probs);
  const Operand probs(p.probs, s.with_probs);
  const Operand rows_grad(u.permuted_tokens_grad), probs_grad(u.probs_grad, s.with_probs);
  const OpTimes t = timed_calls(
      repeat, stream, "aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize",
      "aclnnMoeTokenUnpermuteWithRoutingMapGrad",
      [&](uint64_t *ws, aclOpExecutor **ex) {
        return aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(
            grad.get(), out_index.get(), token_id.get(), map.get(), rows.get(), probs.get(),
            s.drop_and_pad, nullptr, rows_grad.get(), probs_grad.get(), ws, ex);
      },
      aclnnMoeTokenUnpermuteWithRoutingMapGrad);
  rows_grad.download(u.permuted_tokens_grad);
  probs_grad.download(u.probs_grad);
  return t;
}

OpTimes capi_permute_grad(problem_model::Problem &p, const HostTensor &grad_in, void *stream,
                          int repeat) {
  const problem_model::ProblemSpec &s = p.spec;
  const Operand grad(grad_in), probs_grad(p.probs_grad, s.with_probs);
  const Operand sorted(p.sorted_indices), map(p.routing_map);
  const Operand tokens_grad(p.tokens_grad), dense_probs_grad(p.dense_probs_grad, s.with_probs);
  const OpTimes t = timed_calls(
      repeat, stream, "aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize",
      "aclnnMoeTokenPermuteWithRoutingMapGrad",
      [&](uint64_t *ws, aclOpExecutor **ex) {
        return aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
            grad.get(), probs_grad.get(), sorted.get(), map.get(), s.E, s.T, s.drop_and_pad,
            tokens_grad.get(), dense_probs_grad.get(), ws, ex);
      },
      aclnnMoeTokenPermuteWithRoutingMapGrad);
  tokens_grad.download(p.tokens_grad);
  dense_probs_grad.download(p.dense_probs_grad);
  return t;
}

}  // namespace moeperm::cli
