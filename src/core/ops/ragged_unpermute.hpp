// ragged_unpermute's operands (the ragged pair: moeperm's operators with Megatron-LM's and
// TransformerEngine's routing-map semantics, docs/ragged.md; see core/ops/ragged_permute.hpp).
//   ragged_unpermute: permuted_tokens [R, H], sorted_indices [R] (row -> token, -1: empty),
//                     routing_map [T, E], probs [T, E], restore_shape {T, H} ->
//                     unpermuted_tokens [T, H]
#pragma once

#include <moeperm/moeperm.hpp>

#include <optional>
#include <span>

#include "core/op_desc.hpp"

namespace moeperm::detail {

namespace ragged_unpermute_operands {
enum : int8_t { X, S, M, P, Y };
}

struct RaggedUnpermuteOperands {
  static constexpr Op op = Op::ragged_unpermute;
  const TensorDesc *permuted_tokens = nullptr;
  const TensorDesc *sorted_indices = nullptr;
  const TensorDesc *routing_map = nullptr;
  const TensorDesc *probs = nullptr;
  bool drop_and_pad = false;
  std::optional<std::span<const int64_t>> restore_shape;  // {T, H}
  const TensorDesc *unpermuted_tokens = nullptr;
};

OperandSet to_set(const RaggedUnpermuteOperands &ops);

}  // namespace moeperm::detail
