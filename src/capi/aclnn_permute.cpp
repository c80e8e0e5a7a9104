// aclnnMoeTokenPermuteWithRoutingMap{GetWorkspaceSize,}: aclTensor -> descriptors, then
// the core. No logic lives here; no exception crosses the C ABI.
#include <aclnnop/aclnn_moe_token_permute_with_routing_map.h>

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

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
    const aclTensor *tokens, const aclTensor *routingMap, const aclTensor *probsOptional,
    int64_t numOutTokens, bool dropAndPad, aclTensor *permuteTokensOut,
    aclTensor *permuteProbsOutOptional, aclTensor *sortedIndicesOut, uint64_t *workspaceSize,
    aclOpExecutor **executor) try {
  detail::PermuteOperands ops{desc_of(tokens),
                              desc_of(routingMap),
                              desc_of(probsOptional),
                              numOutTokens,
                              dropAndPad,
                              desc_of(permuteTokensOut),
                              desc_of(permuteProbsOutOptional),
                              desc_of(sortedIndicesOut)};
  detail::Plan plan;
  if (detail::Status s = detail::plan_call(detail::to_set(ops), capi::operator_backend(), &plan);
      !s.ok())
    return capi::report(s);
  detail::Buffers buffers{
      data_of(tokens),        data_of(permuteTokensOut),        data_of(routingMap),
      data_of(probsOptional), data_of(permuteProbsOutOptional), data_of(sortedIndicesOut)};
  return capi::finish_first_phase(plan, buffers, workspaceSize, executor);
} catch (const std::bad_alloc &) {
  return capi::report(detail::out_of_memory("aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize"));
} catch (const std::exception &e) {
  return capi::report(
      detail::internal_error("aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize", e.what()));
}

ACL_FUNC_VISIBILITY aclnnStatus aclnnMoeTokenPermuteWithRoutingMap(void *workspace,
                                                                   uint64_t workspaceSize,
                                                                   aclOpExecutor *executor,
                                                                   aclrtStream stream) try {
  return capi::second_phase(detail::Op::permute, workspace, workspaceSize, executor, stream);
} catch (const std::bad_alloc &) {
  return capi::report(detail::out_of_memory("aclnnMoeTokenPermuteWithRoutingMap"));
} catch (const std::exception &e) {
  return capi::report(detail::internal_error("aclnnMoeTokenPermuteWithRoutingMap", e.what()));
}

}  // extern "C"
