// aclnnMoeTokenUnpermuteWithRoutingMapGrad{GetWorkspaceSize,}: CANN's parameters, by name,
// into the operator's operands and buffers; capi/two_phase.hpp does the rest.
#include <aclnnop/aclnn_moe_token_unpermute_with_routing_map_grad.h>

#include "capi/acl_tensor.hpp"
#include "capi/two_phase.hpp"
#include "core/ops/unpermute_grad.hpp"

using moeperm::capi::data_of;
using moeperm::capi::desc_of;
using moeperm::capi::int_array_of;
using moeperm::detail::buffers_of;
using moeperm::detail::UnpermuteGradOperands;

extern "C" {

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(
    const aclTensor *unpermutedTokensGrad, const aclTensor *outIndex,
    const aclTensor *permuteTokenId, const aclTensor *routingMapOptional,
    const aclTensor *permutedTokensOptional, const aclTensor *probsOptional, bool dropAndPad,
    const aclIntArray *restoreShapeOptional, aclTensor *permutedTokensGradOut,
    aclTensor *probsGradOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor) {
  return moeperm::capi::first_phase(
      UnpermuteGradOperands{.unpermuted_tokens_grad = desc_of(unpermutedTokensGrad),
                            .out_index = desc_of(outIndex),
                            .permute_token_id = desc_of(permuteTokenId),
                            .routing_map = desc_of(routingMapOptional),
                            .permuted_tokens = desc_of(permutedTokensOptional),
                            .probs = desc_of(probsOptional),
                            .drop_and_pad = dropAndPad,
                            .restore_shape = int_array_of(restoreShapeOptional),
                            .permuted_tokens_grad = desc_of(permutedTokensGradOut),
                            .probs_grad = desc_of(probsGradOutOptional)},
      // The data in parameter order; the description puts each at its role.
      buffers_of(
          UnpermuteGradOperands::op,
          {data_of(unpermutedTokensGrad), data_of(outIndex), data_of(permuteTokenId),
           data_of(routingMapOptional), data_of(permutedTokensOptional), data_of(probsOptional),
           data_of(permutedTokensGradOut), data_of(probsGradOutOptional)}),
      workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGrad(void *workspace,
                                                                         uint64_t workspaceSize,
                                                                         aclOpExecutor *executor,
                                                                         aclrtStream stream) {
  return moeperm::capi::second_phase<UnpermuteGradOperands>(workspace, workspaceSize, executor,
                                                            stream);
}

}  // extern "C"
