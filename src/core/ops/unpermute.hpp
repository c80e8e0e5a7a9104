// aclnnMoeTokenUnpermuteWithRoutingMap's operands by CANN's parameter names (SPEC-unpermute
// U1), for the API layers to fill with designated initializers, and their indices in its
// description.
#pragma once

#include <moeperm/moeperm.hpp>

#include <optional>
#include <span>

#include "core/op_desc.hpp"

namespace moeperm::detail {

namespace unpermute_operands {
enum : int8_t { X, S, M, P, Y, O, I, PP };  // CANN's parameter order (tensors)
}

struct UnpermuteOperands {  // SPEC-unpermute U1
  static constexpr Op op = Op::unpermute;
  const TensorDesc *permuted_tokens = nullptr;            // permutedTokens (X)
  const TensorDesc *sorted_indices = nullptr;             // sortedIndices (S)
  const TensorDesc *routing_map = nullptr;                // routingMapOptional (M)
  const TensorDesc *probs = nullptr;                      // probsOptional (P)
  bool padded_mode = false;                               // paddedMode
  std::optional<std::span<const int64_t>> restore_shape;  // restoreShapeOptional
  const TensorDesc *unpermuted_tokens = nullptr;          // unpermutedTokens
  const TensorDesc *out_index = nullptr;                  // outIndex
  const TensorDesc *permute_token_id = nullptr;           // permuteTokenId
  const TensorDesc *permute_probs = nullptr;              // permuteProbs
};

OperandSet to_set(const UnpermuteOperands &ops);

}  // namespace moeperm::detail
