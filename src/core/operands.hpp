// The operands of each operator by CANN's parameter names, for the API layers to fill with
// designated initializers; to_set() turns them into the OperandSet the generic planner walks
// (the order of the operator's description, core/ops/).
#pragma once

#include <moeperm/moeperm.hpp>

#include "core/op_desc.hpp"

namespace moeperm::detail {

// Operand indices in each description (CANN's parameter order).
namespace permute_operands {
enum : int8_t { X, M, PR, Y, YP, S };
}
namespace permute_grad_operands {
enum : int8_t { G, P, S, M, TG, PG };
}

struct PermuteOperands {                        // SPEC §2
  const TensorDesc *tokens = nullptr;           // tokens
  const TensorDesc *routing_map = nullptr;      // routingMap
  const TensorDesc *probs = nullptr;            // probsOptional
  int64_t num_out_tokens = 0;                   // numOutTokens
  bool drop_and_pad = false;                    // dropAndPad
  const TensorDesc *permuted_tokens = nullptr;  // permuteTokensOut
  const TensorDesc *permuted_probs = nullptr;   // permuteProbsOutOptional
  const TensorDesc *sorted_indices = nullptr;   // sortedIndicesOut
};

struct PermuteGradOperands {                     // SPEC §3
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

OperandSet to_set(const PermuteOperands &ops);
OperandSet to_set(const PermuteGradOperands &ops);

}  // namespace moeperm::detail
