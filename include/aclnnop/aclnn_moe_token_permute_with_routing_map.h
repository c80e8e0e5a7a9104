/* moeperm: MoeTokenPermuteWithRoutingMap, the forward operator (SPEC §2). */
#ifndef MOEPERM_ACLNNOP_ACLNN_MOE_TOKEN_PERMUTE_WITH_ROUTING_MAP_H_
#define MOEPERM_ACLNNOP_ACLNN_MOE_TOKEN_PERMUTE_WITH_ROUTING_MAP_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: validates the arguments (SPEC §5) and builds a single-use executor. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
    const aclTensor *tokens, const aclTensor *routingMap, const aclTensor *probsOptional,
    int64_t numOutTokens, bool dropAndPad, aclTensor *permuteTokensOut,
    aclTensor *permuteProbsOutOptional, aclTensor *sortedIndicesOut, uint64_t *workspaceSize,
    aclOpExecutor **executor);

/* Phase 2: runs the executor on stream and frees it, also when it fails. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMap(void *workspace,
                                                                   uint64_t workspaceSize,
                                                                   aclOpExecutor *executor,
                                                                   aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
