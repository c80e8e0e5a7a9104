// aclnnMoeTokenUnpermuteWithRoutingMap{GetWorkspaceSize,}: CANN's parameters, by name, into
// the operator's operands and buffers; capi/two_phase.hpp does the rest.
#include <aclnnop/aclnn_moe_token_unpermute_with_routing_map.h>

#include "capi/acl_tensor.hpp"
#include "capi/two_phase.hpp"
#include "core/ops/unpermute.hpp"

using moeperm::capi::data_of;
using moeperm::capi::desc_of;
using moeperm::capi::int_array_of;
using moeperm::detail::buffers_of;
using moeperm::detail::UnpermuteOperands;

extern "C" {

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(
    const aclTensor *permutedTokens, const aclTensor *sortedIndices,
    const aclTensor *routingMapOptional, const aclTensor *probsOptional, bool paddedMode,
    const aclIntArray *restoreShapeOptional, aclTensor *unpermutedTokens, aclTensor *outIndex,
    aclTensor *permuteTokenId, aclTensor *permuteProbs, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
  return moeperm::capi::first_phase(
      UnpermuteOperands{.permuted_tokens = desc_of(permutedTokens),
                        .sorted_indices = desc_of(sortedIndices),
                        .routing_map = desc_of(routingMapOptional),
                        .probs = desc_of(probsOptional),
                        .padded_mode = paddedMode,
                        .restore_shape = int_array_of(restoreShapeOptional),
                        .unpermuted_tokens = desc_of(unpermutedTokens),
                        .out_index = desc_of(outIndex),
                        .permute_token_id = desc_of(permuteTokenId),
                        .permute_probs = desc_of(permuteProbs)},
      // The data in parameter order; the description puts each at its role.
      buffers_of(UnpermuteOperands::op,
                 {data_of(permutedTokens), data_of(sortedIndices), data_of(routingMapOptional),
                  data_of(probsOptional), data_of(unpermutedTokens), data_of(outIndex),
                  data_of(permuteTokenId), data_of(permuteProbs)}),
      workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMap(void *workspace,
                                                                     uint64_t workspaceSize,
                                                                     aclOpExecutor *executor,
                                                                     aclrtStream stream) {
  return moeperm::capi::second_phase<UnpermuteOperands>(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
