// The operator arguments as the core sees them: descriptors only (never data), and
// nullable, because "not given" is itself something SPEC §5.2 validates.
#pragma once

#include <moeperm/moeperm.hpp>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail {

struct PermuteOperands {                        // SPEC §2, CANN parameter names in comments
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

// CANN's limit on topK in drop-less mode (SPEC §5.5).
inline constexpr int64_t kMaxTopK = 512;

// Validate (SPEC §5, first failure wins) and derive the plan, backend fields included.
Status make_permute_plan(const PermuteOperands &ops, Backend backend, Plan *plan);
Status make_permute_grad_plan(const PermuteGradOperands &ops, Backend backend, Plan *plan);

}  // namespace moeperm::detail
