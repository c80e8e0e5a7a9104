// aclnnMoeTokenPermuteWithRoutingMapGrad{GetWorkspaceSize,}: aclTensor -> descriptors,
// then the core. No logic lives here; no exception crosses the C ABI.
#include <aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h>

#include <new>

#include "backend/registry.hpp"
#include "capi/acl_tensor.hpp"
#include "capi/executor.hpp"
#include "capi/last_error.hpp"
#include "capi/runtime.hpp"
#include "core/messages.hpp"
#include "core/operands.hpp"

using namespace moeperm;
using capi::data_of;
using capi::desc_of;

extern "C" {

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
    const aclTensor *permutedTokenOutputGrad, const aclTensor *permutedProbsOutputGradOptional,
    const aclTensor *sortedIndices, const aclTensor *routingMapOptional, int64_t numExperts,
    int64_t tokensNum, bool dropAndPad, aclTensor *tokensGradOut, aclTensor *probsGradOutOptional,
    uint64_t *workspaceSize, aclOpExecutor **executor) try {
  detail::PermuteGradOperands ops{desc_of(permutedTokenOutputGrad),
                                  desc_of(permutedProbsOutputGradOptional),
                                  desc_of(sortedIndices),
                                  desc_of(routingMapOptional),
                                  numExperts,
                                  tokensNum,
                                  dropAndPad,
                                  desc_of(tokensGradOut),
                                  desc_of(probsGradOutOptional)};
  detail::Plan plan;
  if (detail::Status s = detail::plan_call(detail::to_set(ops), capi::operator_backend(), &plan);
      !s.ok())
    return capi::report(s);
  detail::Buffers buffers{data_of(tokensGradOut),
                          data_of(permutedTokenOutputGrad),
                          data_of(routingMapOptional),
                          data_of(probsGradOutOptional),
                          data_of(permutedProbsOutputGradOptional),
                          data_of(sortedIndices)};
  return capi::finish_first_phase(plan, buffers, workspaceSize, executor);
} catch (const std::bad_alloc &) {
  return capi::report(
      detail::out_of_memory("aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize"));
} catch (const std::exception &e) {
  return capi::report(
      detail::internal_error("aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize", e.what()));
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGrad(void *workspace,
                                                                       uint64_t workspaceSize,
                                                                       aclOpExecutor *executor,
                                                                       aclrtStream stream) try {
  return capi::second_phase(detail::Op::permute_grad, workspace, workspaceSize, executor, stream);
} catch (const std::bad_alloc &) {
  return capi::report(detail::out_of_memory("aclnnMoeTokenPermuteWithRoutingMapGrad"));
} catch (const std::exception &e) {
  return capi::report(detail::internal_error("aclnnMoeTokenPermuteWithRoutingMapGrad", e.what()));
}

}  // extern "C"
