// aclnnMoeTokenPermuteWithRoutingMapGrad's operands by CANN's parameter names (SPEC §3), for
// the API layers to fill with designated initializers, and their indices in its description.
#pragma once

#include <moeperm/moeperm.hpp>

#include "core/op_desc.hpp"

namespace moeperm::detail {

namespace permute_grad_operands {
enum : int8_t { G, P, S, M, TG, PG };  // CANN's parameter order
}

struct PermuteGradOperands {  // SPEC §3
  static constexpr Op op = Op::permute_grad;
  const TensorDesc *grad = nullptr;              // permutedTokenOutputGrad (G)
  const TensorDesc *probs_grad = nullptr;        // permutedProbsOutputGradOptional (P)
  const TensorDesc *sorted_indices = nullptr;    // sortedIndices (S)
  const TensorDesc *routing_map = nullptr;       // routingMapOptional (M)
  int64_t num_experts = 0;                       // numExperts
  int64_t tokens_num = 0;                        // tokensNum
  bool drop_and_pad = false;                     // dropAndPad
  const TensorDesc *tokens_grad = nullptr;       // tokensGradOut
  const TensorDesc *dense_probs_grad = nullptr;  // probsGradOutOptional
};

OperandSet to_set(const PermuteGradOperands &ops);

}  // namespace moeperm::detail
