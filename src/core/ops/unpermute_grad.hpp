// aclnnMoeTokenUnpermuteWithRoutingMapGrad's operands by CANN's parameter names
// (SPEC-unpermute U2), and their indices in its description.
#pragma once

#include <moeperm/moeperm.hpp>

#include <optional>
#include <span>

#include "core/op_desc.hpp"

namespace moeperm::detail {

namespace unpermute_grad_operands {
enum : int8_t { G, O, I, M, X, P, DX, PG };  // CANN's parameter order (tensors)
}

struct UnpermuteGradOperands {  // SPEC-unpermute U2
  static constexpr Op op = Op::unpermute_grad;
  const TensorDesc *unpermuted_tokens_grad = nullptr;     // unpermutedTokensGrad (G)
  const TensorDesc *out_index = nullptr;                  // outIndex (O)
  const TensorDesc *permute_token_id = nullptr;           // permuteTokenId (I)
  const TensorDesc *routing_map = nullptr;                // routingMapOptional (M)
  const TensorDesc *permuted_tokens = nullptr;            // permutedTokensOptional (X)
  const TensorDesc *probs = nullptr;                      // probsOptional (P)
  bool drop_and_pad = false;                              // dropAndPad
  std::optional<std::span<const int64_t>> restore_shape;  // restoreShapeOptional (not read)
  const TensorDesc *permuted_tokens_grad = nullptr;       // permutedTokensGradOut (dX)
  const TensorDesc *probs_grad = nullptr;                 // probsGradOutOptional (dP)
};

OperandSet to_set(const UnpermuteGradOperands &ops);

}  // namespace moeperm::detail
