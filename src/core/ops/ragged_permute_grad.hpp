// ragged_permute_grad's operands (the ragged pair's backward, docs/ragged.md): the gradients
// of ragged_permute's outputs back to its inputs.
//   permuted_tokens_grad [R, H], permuted_probs_grad [R], sorted_indices [R] (row -> token),
//   routing_map [T, E], num_tokens T -> tokens_grad [T, H], probs_grad [T, E]
#pragma once

#include <moeperm/moeperm.hpp>

#include "core/op_desc.hpp"

namespace moeperm::detail {

namespace ragged_permute_grad_operands {
enum : int8_t { G, P, S, M, TG, PG };
}

struct RaggedPermuteGradOperands {
  static constexpr Op op = Op::ragged_permute_grad;
  const TensorDesc *permuted_tokens_grad = nullptr;
  const TensorDesc *permuted_probs_grad = nullptr;
  const TensorDesc *sorted_indices = nullptr;
  const TensorDesc *routing_map = nullptr;
  int64_t num_tokens = 0;
  bool drop_and_pad = false;
  const TensorDesc *tokens_grad = nullptr;
  const TensorDesc *probs_grad = nullptr;
};

OperandSet to_set(const RaggedPermuteGradOperands &ops);

}  // namespace moeperm::detail
