// aclnnMoeTokenPermuteWithRoutingMapGrad{GetWorkspaceSize,}: CANN's parameters, by name,
// into the operator's operands and buffers; capi/two_phase.hpp does the rest.
#include <aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h>

#include "capi/acl_tensor.hpp"
#include "capi/two_phase.hpp"
#include "core/operands.hpp"

using moeperm::capi::data_of;
using moeperm::capi::desc_of;
using moeperm::detail::buffers_of;
using moeperm::detail::PermuteGradOperands;

extern "C" {

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
    const aclTensor *permutedTokenOutputGrad, const aclTensor *permutedProbsOutputGradOptional,
    const aclTensor *sortedIndices, const aclTensor *routingMapOptional, int64_t numExperts,
    int64_t tokensNum, bool dropAndPad, aclTensor *tokensGradOut, aclTensor *probsGradOutOptional,
    uint64_t *workspaceSize, aclOpExecutor **executor) {
  return moeperm::capi::first_phase(
      PermuteGradOperands{.grad = desc_of(permutedTokenOutputGrad),
                          .probs_grad = desc_of(permutedProbsOutputGradOptional),
                          .sorted_indices = desc_of(sortedIndices),
                          .routing_map = desc_of(routingMapOptional),
                          .num_experts = numExperts,
                          .tokens_num = tokensNum,
                          .drop_and_pad = dropAndPad,
                          .tokens_grad = desc_of(tokensGradOut),
                          .dense_probs_grad = desc_of(probsGradOutOptional)},
      // The data in parameter order; the description puts each at its role.
      buffers_of(PermuteGradOperands::op,
                 {data_of(permutedTokenOutputGrad), data_of(permutedProbsOutputGradOptional),
                  data_of(sortedIndices), data_of(routingMapOptional), data_of(tokensGradOut),
                  data_of(probsGradOutOptional)}),
      workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGrad(void *workspace,
                                                                       uint64_t workspaceSize,
                                                                       aclOpExecutor *executor,
                                                                       aclrtStream stream) {
  return moeperm::capi::second_phase<PermuteGradOperands>(workspace, workspaceSize, executor,
                                                          stream);
}

}  // extern "C"
