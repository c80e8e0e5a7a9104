// moeperm's ragged pair: permute and unpermute with Megatron-LM's and TransformerEngine's
// routing-map semantics (docs/ragged.md). Part of the C++ API: <moeperm/moeperm.hpp>
// includes this header, and this header includes it, so either may come first.
#pragma once

#include <moeperm/moeperm.hpp>

namespace moeperm {

// The ragged pair: permute and unpermute with Megatron-LM's and TransformerEngine's
// routing-map semantics (docs/ragged.md), which CANN's operators do not have: a token may
// select any number of experts, and the index is row -> token (Megatron's sorted_indices).
//   Drop-less: R = num_out_tokens rows; the routed (token, expert) pairs in expert-major
//   order (tokens ascending inside an expert) fill rows 0, 1, ...; pairs past row R are
//   dropped; rows past the pairs are empty.
//   Drop-and-pad: capacity C = num_out_tokens / E; expert e's first C routed tokens fill
//   rows e*C, e*C + 1, ...; the rest of its C rows are empty.
// An empty row has sorted_indices -1 and +0 in permuted_tokens and permuted_probs. The map
// may be bool, int8, uint8 or int32; probs any float dtype with any token dtype.
struct RaggedPermuteDesc {
  TensorDesc tokens;                // [T, H]
  TensorDesc routing_map;           // [T, E]
  std::optional<TensorDesc> probs;  // [T, E]
  int64_t num_out_tokens = 0;       // R (drop-less) or E * C (drop-and-pad)
  bool drop_and_pad = false;
  TensorDesc permuted_tokens;                // [R, H] out
  std::optional<TensorDesc> permuted_probs;  // [R] out, the dtype of probs
  TensorDesc sorted_indices;                 // [R] int32 out: row -> token, -1 empty
};

struct RaggedPermuteData {
  const void *tokens = nullptr;
  const void *routing_map = nullptr;
  const void *probs = nullptr;
  void *permuted_tokens = nullptr;
  void *permuted_probs = nullptr;
  void *sorted_indices = nullptr;
};

// unpermuted_tokens[t] = the sum of the rows r that sorted_indices names t, in ascending r,
// each times probs[t, e(r)] when probs are given (e(r) = r / C drop-and-pad; drop-less the
// expert whose expert-major block of routing_map holds row r), in fp32, rounded once.
struct RaggedUnpermuteDesc {
  TensorDesc permuted_tokens;             // [R, H]
  TensorDesc sorted_indices;              // [R] int32: row -> token, -1 empty
  std::optional<TensorDesc> routing_map;  // [T, E]: needed with probs, drop-less
  std::optional<TensorDesc> probs;        // [T, E]
  bool drop_and_pad = false;
  std::optional<std::vector<int64_t>> restore_shape;  // {T, H}; required without probs
  TensorDesc unpermuted_tokens;                       // [T, H] out
};

struct RaggedUnpermuteData {
  const void *permuted_tokens = nullptr;
  const void *sorted_indices = nullptr;
  const void *routing_map = nullptr;
  const void *probs = nullptr;
  void *unpermuted_tokens = nullptr;
};

// The backward of ragged_permute: tokens_grad[t] = the sum of the rows of
// permuted_tokens_grad that sorted_indices names t (ascending rows, fp32, rounded once);
// probs_grad[t, e] = permuted_probs_grad of the row of (t, e), +0 where no row has it
// (probs_grad needs permuted_probs_grad and the routing map, which gives each row's expert).
struct RaggedPermuteGradDesc {
  TensorDesc permuted_tokens_grad;                // [R, H]
  std::optional<TensorDesc> permuted_probs_grad;  // [R]
  TensorDesc sorted_indices;                      // [R] int32, as ragged_permute wrote it
  std::optional<TensorDesc> routing_map;          // [T, E]
  int64_t num_tokens = 0;                         // T
  bool drop_and_pad = false;
  TensorDesc tokens_grad;                // [T, H] out
  std::optional<TensorDesc> probs_grad;  // [T, E] out, the dtype of permuted_probs_grad
};

struct RaggedPermuteGradData {
  const void *permuted_tokens_grad = nullptr;
  const void *permuted_probs_grad = nullptr;
  const void *sorted_indices = nullptr;
  const void *routing_map = nullptr;
  void *tokens_grad = nullptr;
  void *probs_grad = nullptr;
};

// The backward of ragged_unpermute: permuted_tokens_grad[r] = unpermuted_tokens_grad[t] for
// row r's token t (times probs[t, e(r)], rounded once; +0 for a -1 row); probs_grad[t, e] =
// SPEC-unpermute U3's dot product of unpermuted_tokens_grad[t] and permuted_tokens[r] for
// the row r of (t, e), +0 elsewhere (probs_grad needs probs and permuted_tokens).
struct RaggedUnpermuteGradDesc {
  TensorDesc unpermuted_tokens_grad;          // [T, H]
  TensorDesc sorted_indices;                  // [R] int32
  std::optional<TensorDesc> routing_map;      // [T, E]: needed with probs, drop-less
  std::optional<TensorDesc> permuted_tokens;  // [R, H]: the forward's input, for probs_grad
  std::optional<TensorDesc> probs;            // [T, E]
  bool drop_and_pad = false;
  TensorDesc permuted_tokens_grad;       // [R, H] out
  std::optional<TensorDesc> probs_grad;  // [T, E] out, the dtype of probs
};

struct RaggedUnpermuteGradData {
  const void *unpermuted_tokens_grad = nullptr;
  const void *sorted_indices = nullptr;
  const void *routing_map = nullptr;
  const void *permuted_tokens = nullptr;
  const void *probs = nullptr;
  void *permuted_tokens_grad = nullptr;
  void *probs_grad = nullptr;
};

MOEPERM_API RaggedPermuteDesc infer_outputs(const RaggedPermuteDesc &desc);
MOEPERM_API RaggedUnpermuteDesc infer_outputs(const RaggedUnpermuteDesc &desc);
MOEPERM_API RaggedPermuteGradDesc infer_outputs(const RaggedPermuteGradDesc &desc);
MOEPERM_API RaggedUnpermuteGradDesc infer_outputs(const RaggedUnpermuteGradDesc &desc);

MOEPERM_API Plan plan_ragged_permute(const RaggedPermuteDesc &desc,
                                     const PlanOptions &options = {});
MOEPERM_API Plan plan_ragged_unpermute(const RaggedUnpermuteDesc &desc,
                                       const PlanOptions &options = {});
MOEPERM_API Plan plan_ragged_permute_grad(const RaggedPermuteGradDesc &desc,
                                          const PlanOptions &options = {});
MOEPERM_API Plan plan_ragged_unpermute_grad(const RaggedUnpermuteGradDesc &desc,
                                            const PlanOptions &options = {});

// As for the other operators: synchronous, on a CUDA stream, enqueued.
MOEPERM_API void run(const Plan &plan, const RaggedPermuteData &data,
                     std::span<std::byte> workspace);
MOEPERM_API void run(const Plan &plan, const RaggedUnpermuteData &data,
                     std::span<std::byte> workspace);
MOEPERM_API void run(const Plan &plan, const RaggedPermuteData &data,
                     std::span<std::byte> workspace, void *cuda_stream);
MOEPERM_API void run(const Plan &plan, const RaggedUnpermuteData &data,
                     std::span<std::byte> workspace, void *cuda_stream);
MOEPERM_API void run_async(const Plan &plan, const RaggedPermuteData &data,
                           std::span<std::byte> workspace, void *cuda_stream,
                           RunCallback on_done = nullptr, void *context = nullptr);
MOEPERM_API void run_async(const Plan &plan, const RaggedUnpermuteData &data,
                           std::span<std::byte> workspace, void *cuda_stream,
                           RunCallback on_done = nullptr, void *context = nullptr);

MOEPERM_API void run(const Plan &plan, const RaggedPermuteGradData &data,
                     std::span<std::byte> workspace, void *cuda_stream = nullptr);
MOEPERM_API void run(const Plan &plan, const RaggedUnpermuteGradData &data,
                     std::span<std::byte> workspace, void *cuda_stream = nullptr);
MOEPERM_API void run_async(const Plan &plan, const RaggedPermuteGradData &data,
                           std::span<std::byte> workspace, void *cuda_stream,
                           RunCallback on_done = nullptr, void *context = nullptr);
MOEPERM_API void run_async(const Plan &plan, const RaggedUnpermuteGradData &data,
                           std::span<std::byte> workspace, void *cuda_stream,
                           RunCallback on_done = nullptr, void *context = nullptr);

// One-shot conveniences: plan, allocate the workspace, run.
MOEPERM_API void ragged_permute(const RaggedPermuteDesc &desc, const RaggedPermuteData &data,
                                const PlanOptions &options = {});
MOEPERM_API void ragged_unpermute(const RaggedUnpermuteDesc &desc, const RaggedUnpermuteData &data,
                                  const PlanOptions &options = {});
MOEPERM_API void ragged_permute_grad(const RaggedPermuteGradDesc &desc,
                                     const RaggedPermuteGradData &data,
                                     const PlanOptions &options = {});
MOEPERM_API void ragged_unpermute_grad(const RaggedUnpermuteGradDesc &desc,
                                       const RaggedUnpermuteGradData &data,
                                       const PlanOptions &options = {});

}  // namespace moeperm
