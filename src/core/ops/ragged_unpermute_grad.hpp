// ragged_unpermute_grad's operands (the ragged pair's backward, docs/ragged.md): the
// gradients of ragged_unpermute's output back to its inputs.
//   unpermuted_tokens_grad [T, H], sorted_indices [R], routing_map [T, E], permuted_tokens
//   [R, H] (for probs_grad), probs [T, E] -> permuted_tokens_grad [R, H], probs_grad [T, E]
#pragma once

#include <moeperm/moeperm.hpp>

#include "core/op_desc.hpp"

namespace moeperm::detail {

namespace ragged_unpermute_grad_operands {
enum : int8_t { G, S, M, X, P, DX, DP };
}

struct RaggedUnpermuteGradOperands {
  static constexpr Op op = Op::ragged_unpermute_grad;
  const TensorDesc *unpermuted_tokens_grad = nullptr;
  const TensorDesc *sorted_indices = nullptr;
  const TensorDesc *routing_map = nullptr;
  const TensorDesc *permuted_tokens = nullptr;
  const TensorDesc *probs = nullptr;
  bool drop_and_pad = false;
  const TensorDesc *permuted_tokens_grad = nullptr;
  const TensorDesc *probs_grad = nullptr;
};

OperandSet to_set(const RaggedUnpermuteGradOperands &ops);

}  // namespace moeperm::detail
