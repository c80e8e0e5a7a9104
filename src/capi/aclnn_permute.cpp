// aclnnMoeTokenPermuteWithRoutingMap{GetWorkspaceSize,}: CANN's parameters, by name, into
// the operator's operands and buffers; capi/two_phase.hpp does the rest.
#include <aclnnop/aclnn_moe_token_permute_with_routing_map.h>

#include "capi/acl_tensor.hpp"
#include "capi/two_phase.hpp"
#include "core/operands.hpp"

using moeperm::capi::data_of;
using moeperm::capi::desc_of;
using moeperm::detail::buffers_of;
using moeperm::detail::PermuteOperands;

extern "C" {

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
    const aclTensor *tokens, const aclTensor *routingMap, const aclTensor *probsOptional,
    int64_t numOutTokens, bool dropAndPad, aclTensor *permuteTokensOut,
    aclTensor *permuteProbsOutOptional, aclTensor *sortedIndicesOut, uint64_t *workspaceSize,
    aclOpExecutor **executor) {
  return moeperm::capi::first_phase(
      PermuteOperands{.tokens = desc_of(tokens),
                      .routing_map = desc_of(routingMap),
                      .probs = desc_of(probsOptional),
                      .num_out_tokens = numOutTokens,
                      .drop_and_pad = dropAndPad,
                      .permuted_tokens = desc_of(permuteTokensOut),
                      .permuted_probs = desc_of(permuteProbsOutOptional),
                      .sorted_indices = desc_of(sortedIndicesOut)},
      buffers_of(PermuteOperands::op, {data_of(tokens), data_of(routingMap), data_of(probsOptional),
                                       data_of(permuteTokensOut), data_of(permuteProbsOutOptional),
                                       data_of(sortedIndicesOut)}),
      workspaceSize, executor);
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMap(void *workspace,
                                                                   uint64_t workspaceSize,
                                                                   aclOpExecutor *executor,
                                                                   aclrtStream stream) {
  return moeperm::capi::second_phase<PermuteOperands>(workspace, workspaceSize, executor, stream);
}

}  // extern "C"
