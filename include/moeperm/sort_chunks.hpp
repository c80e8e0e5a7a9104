// moeperm's chunk sort: Megatron-LM's sort_chunks_by_idxs and TransformerEngine's
// moe_sort_chunks_by_index, which expert parallelism runs between its all-to-all and the
// experts (docs/sort_chunks.md). Part of the C++ API: <moeperm/moeperm.hpp> includes this
// header, and this header includes it, so either may come first.
#pragma once

#include <moeperm/moeperm.hpp>

namespace moeperm {

// tokens' T rows are S chunks, chunk c of split_sizes[c] rows (int32, each >= 0, summing to
// T); sorted_tokens is the chunks in the order sorted_index gives (int32, a permutation of
// 0 .. S-1): sorted chunk j is chunk sorted_index[j]. probs [T] (any float dtype) travel
// with their rows into sorted_probs. Both index tensors are read in the second phase, which
// checks them before it writes anything.
struct SortChunksDesc {
  TensorDesc tokens;                       // [T, H]
  TensorDesc split_sizes;                  // [S] int32
  TensorDesc sorted_index;                 // [S] int32
  std::optional<TensorDesc> probs;         // [T]
  TensorDesc sorted_tokens;                // [T, H] out
  std::optional<TensorDesc> sorted_probs;  // [T] out, the dtype of probs
};

struct SortChunksData {
  const void *tokens = nullptr;
  const void *split_sizes = nullptr;
  const void *sorted_index = nullptr;
  const void *probs = nullptr;
  void *sorted_tokens = nullptr;
  void *sorted_probs = nullptr;
};

// The backward of sort_chunks (the same split_sizes and sorted_index): each row of
// sorted_tokens_grad goes back to the row of tokens it came from; sorted_probs_grad alike.
struct SortChunksGradDesc {
  TensorDesc sorted_tokens_grad;                // [T, H]
  TensorDesc split_sizes;                       // [S] int32
  TensorDesc sorted_index;                      // [S] int32
  std::optional<TensorDesc> sorted_probs_grad;  // [T]
  TensorDesc tokens_grad;                       // [T, H] out
  std::optional<TensorDesc> probs_grad;         // [T] out, the dtype of sorted_probs_grad
};

struct SortChunksGradData {
  const void *sorted_tokens_grad = nullptr;
  const void *split_sizes = nullptr;
  const void *sorted_index = nullptr;
  const void *sorted_probs_grad = nullptr;
  void *tokens_grad = nullptr;
  void *probs_grad = nullptr;
};

MOEPERM_API SortChunksDesc infer_outputs(const SortChunksDesc &desc);
MOEPERM_API SortChunksGradDesc infer_outputs(const SortChunksGradDesc &desc);

MOEPERM_API Plan plan_sort_chunks(const SortChunksDesc &desc, const PlanOptions &options = {});
MOEPERM_API Plan plan_sort_chunks_grad(const SortChunksGradDesc &desc,
                                       const PlanOptions &options = {});

// As for the other operators: synchronous (on a CUDA stream when given), or enqueued.
MOEPERM_API void run(const Plan &plan, const SortChunksData &data, std::span<std::byte> workspace,
                     void *cuda_stream = nullptr);
MOEPERM_API void run(const Plan &plan, const SortChunksGradData &data,
                     std::span<std::byte> workspace, void *cuda_stream = nullptr);
MOEPERM_API void run_async(const Plan &plan, const SortChunksData &data,
                           std::span<std::byte> workspace, void *cuda_stream,
                           RunCallback on_done = nullptr, void *context = nullptr);
MOEPERM_API void run_async(const Plan &plan, const SortChunksGradData &data,
                           std::span<std::byte> workspace, void *cuda_stream,
                           RunCallback on_done = nullptr, void *context = nullptr);

// One-shot conveniences: plan, allocate the workspace, run.
MOEPERM_API void sort_chunks(const SortChunksDesc &desc, const SortChunksData &data,
                             const PlanOptions &options = {});
MOEPERM_API void sort_chunks_grad(const SortChunksGradDesc &desc, const SortChunksGradData &data,
                                  const PlanOptions &options = {});

}  // namespace moeperm
