// ragged_permute's operands: the ragged pair is moeperm's permute and unpermute with
// Megatron-LM's and TransformerEngine's routing-map semantics (docs/ragged.md): any number of
// experts per token and a row -> token index. C++ names (Megatron's); there is no CANN API.
//   tokens [T, H], routing_map [T, E], probs [T, E] ->
//   permuted_tokens [R, H], permuted_probs [R], sorted_indices [R] (row -> token, -1: empty)
#pragma once

#include <moeperm/moeperm.hpp>

#include "core/op_desc.hpp"

namespace moeperm::detail {

namespace ragged_permute_operands {
enum : int8_t { X, M, PR, Y, YP, S };
}

struct RaggedPermuteOperands {
  static constexpr Op op = Op::ragged_permute;
  const TensorDesc *tokens = nullptr;
  const TensorDesc *routing_map = nullptr;
  const TensorDesc *probs = nullptr;
  int64_t num_out_tokens = 0;  // R drop-less; E * capacity drop-and-pad
  bool drop_and_pad = false;
  const TensorDesc *permuted_tokens = nullptr;
  const TensorDesc *permuted_probs = nullptr;
  const TensorDesc *sorted_indices = nullptr;
};

OperandSet to_set(const RaggedPermuteOperands &ops);

}  // namespace moeperm::detail
