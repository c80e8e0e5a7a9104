// aclnnMoeTokenPermuteWithRoutingMap's operands by CANN's parameter names (SPEC §2), for the
// API layers to fill with designated initializers, and their indices in its description.
#pragma once

#include <moeperm/moeperm.hpp>

#include "core/op_desc.hpp"

namespace moeperm::detail {

namespace permute_operands {
enum : int8_t { X, M, PR, Y, YP, S };  // CANN's parameter order
}

struct PermuteOperands {  // SPEC §2
  static constexpr Op op = Op::permute;
  const TensorDesc *tokens = nullptr;           // tokens
  const TensorDesc *routing_map = nullptr;      // routingMap
  const TensorDesc *probs = nullptr;            // probsOptional
  int64_t num_out_tokens = 0;                   // numOutTokens
  bool drop_and_pad = false;                    // dropAndPad
  const TensorDesc *permuted_tokens = nullptr;  // permuteTokensOut
  const TensorDesc *permuted_probs = nullptr;   // permuteProbsOutOptional
  const TensorDesc *sorted_indices = nullptr;   // sortedIndicesOut
};

OperandSet to_set(const PermuteOperands &ops);

}  // namespace moeperm::detail
