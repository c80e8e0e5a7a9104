/* moeperm: MoeTokenPermuteWithRoutingMapGrad, the backward operator (SPEC §3). */
#ifndef MOEPERM_ACLNNOP_ACLNN_MOE_TOKEN_PERMUTE_WITH_ROUTING_MAP_GRAD_H_
#define MOEPERM_ACLNNOP_ACLNN_MOE_TOKEN_PERMUTE_WITH_ROUTING_MAP_GRAD_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: validates the arguments (SPEC §5, in order) and builds a single-use executor. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
    const aclTensor *permutedTokenOutputGrad, const aclTensor *permutedProbsOutputGradOptional,
    const aclTensor *sortedIndices, const aclTensor *routingMapOptional, int64_t numExperts,
    int64_t tokensNum, bool dropAndPad, aclTensor *tokensGradOut, aclTensor *probsGradOutOptional,
    uint64_t *workspaceSize, aclOpExecutor **executor);

/* Phase 2: runs the executor on stream and frees it, also when it fails. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGrad(void *workspace,
                                                                       uint64_t workspaceSize,
                                                                       aclOpExecutor *executor,
                                                                       aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
