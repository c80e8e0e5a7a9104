/* moeperm: MoeTokenUnpermuteWithRoutingMapGrad, the unpermute backward (SPEC-unpermute U2). */
#ifndef MOEPERM_ACLNNOP_ACLNN_MOE_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_GRAD_H_
#define MOEPERM_ACLNNOP_ACLNN_MOE_TOKEN_UNPERMUTE_WITH_ROUTING_MAP_GRAD_H_

#include "aclnn/acl_meta.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Phase 1: validates the arguments (SPEC-unpermute U4, in order) and builds a single-use
 * executor. permutedTokensOptional is needed only with probsGradOutOptional. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(
    const aclTensor *unpermutedTokensGrad, const aclTensor *outIndex,
    const aclTensor *permuteTokenId, const aclTensor *routingMapOptional,
    const aclTensor *permutedTokensOptional, const aclTensor *probsOptional, bool dropAndPad,
    const aclIntArray *restoreShapeOptional, aclTensor *permutedTokensGradOut,
    aclTensor *probsGradOutOptional, uint64_t *workspaceSize, aclOpExecutor **executor);

/* Phase 2: runs the executor on stream and frees it, also when it fails. */
ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenUnpermuteWithRoutingMapGrad(void *workspace,
                                                                         uint64_t workspaceSize,
                                                                         aclOpExecutor *executor,
                                                                         aclrtStream stream);

#ifdef __cplusplus
}
#endif

#endif
