/* moeperm: MoeTokenUnpermuteWithRoutingMap, the unpermute forward (SPEC-unpermute U1). */
#ifndef MOEPERM_ACLNNOP_ACLNN_MOE_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_H_
#define MOEPERM_ACLNNOP_ACLNN_MOE_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: validates the arguments (SPEC-unpermute U4, in order) and builds a single-use
 * executor. outIndex, permuteTokenId and permuteProbs may be null. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(
    const aclTensor *permutedTokens, const aclTensor *sortedIndices,
    const aclTensor *routingMapOptional, const aclTensor *probsOptional, bool paddedMode,
    const aclIntArray *restoreShapeOptional, aclTensor *unpermutedTokens, aclTensor *outIndex,
    aclTensor *permuteTokenId, aclTensor *permuteProbs, uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2: runs the executor on stream and frees it, also when it fails. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMap(void *workspace,
                                                                     uint64_t workspaceSize,
                                                                     aclOpExecutor *executor,
                                                                     aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
