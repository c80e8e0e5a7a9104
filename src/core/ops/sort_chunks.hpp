// sort_chunks' operands: Megatron-LM's sort_chunks_by_idxs and TransformerEngine's
// moe_sort_chunks_by_index (docs/sort_chunks.md). tokens' T rows are split into S chunks of
// split_sizes[c] rows; the output is the chunks in the order sorted_index gives:
//   tokens [T, H], split_sizes [S], sorted_index [S], probs [T] ->
//   sorted_tokens [T, H], sorted_probs [T]
// sort_chunks_grad puts the chunks of its input back where sort_chunks took them from (the
// adjoint of a row permutation is its inverse): same split_sizes and sorted_index,
//   sorted_tokens_grad [T, H], sorted_probs_grad [T] -> tokens_grad [T, H], probs_grad [T].
// C++ names (TransformerEngine's); there is no CANN API.
#pragma once

#include <moeperm/moeperm.hpp>

#include "core/op_desc.hpp"

namespace moeperm::detail {

// Both operators list their operands in this order: the rows in, the chunks, the probs
// in, the rows out, the probs out.
namespace sort_chunks_operands {
enum : int8_t { X, SZ, IX, PR, Y, YP };
}

struct SortChunksOperands {
  static constexpr Op op = Op::sort_chunks;
  const TensorDesc *tokens = nullptr;
  const TensorDesc *split_sizes = nullptr;
  const TensorDesc *sorted_index = nullptr;
  const TensorDesc *probs = nullptr;
  const TensorDesc *sorted_tokens = nullptr;
  const TensorDesc *sorted_probs = nullptr;
};

struct SortChunksGradOperands {
  static constexpr Op op = Op::sort_chunks_grad;
  const TensorDesc *sorted_tokens_grad = nullptr;
  const TensorDesc *split_sizes = nullptr;
  const TensorDesc *sorted_index = nullptr;
  const TensorDesc *sorted_probs_grad = nullptr;
  const TensorDesc *tokens_grad = nullptr;
  const TensorDesc *probs_grad = nullptr;
};

OperandSet to_set(const SortChunksOperands &ops);
OperandSet to_set(const SortChunksGradOperands &ops);

}  // namespace moeperm::detail
