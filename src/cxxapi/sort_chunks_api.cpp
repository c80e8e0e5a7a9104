// The C++ API of the chunk sort pair (docs/sort_chunks.md): descriptors to operands, data to
// buffers, and the entry points; planning and the run path are moeperm_api.cpp's.
#include <moeperm/moeperm.hpp>

#include <vector>

#include "core/operands.hpp"
#include "cxxapi/run_path.hpp"

namespace moeperm {
namespace {

using cxxapi::Bound;
using cxxapi::opt;
namespace I = detail::sort_chunks_operands;

static_assert(static_cast<int>(Operator::sort_chunks) ==
              detail::op_index(detail::SortChunksOperands::op));
static_assert(static_cast<int>(Operator::sort_chunks_grad) ==
              detail::op_index(detail::SortChunksGradOperands::op));

detail::SortChunksOperands operands_of(const SortChunksDesc &d) {
  return {.tokens = &d.tokens,
          .split_sizes = &d.split_sizes,
          .sorted_index = &d.sorted_index,
          .probs = opt(d.probs),
          .sorted_tokens = &d.sorted_tokens,
          .sorted_probs = opt(d.sorted_probs)};
}

detail::SortChunksGradOperands operands_of(const SortChunksGradDesc &d) {
  return {.sorted_tokens_grad = &d.sorted_tokens_grad,
          .split_sizes = &d.split_sizes,
          .sorted_index = &d.sorted_index,
          .sorted_probs_grad = opt(d.sorted_probs_grad),
          .tokens_grad = &d.tokens_grad,
          .probs_grad = opt(d.probs_grad)};
}

Bound bind(const SortChunksData &d) {
  return {detail::SortChunksOperands::op, "SortChunksData",
          detail::buffers_of(
              detail::SortChunksOperands::op,
              {d.tokens, d.split_sizes, d.sorted_index, d.probs, d.sorted_tokens, d.sorted_probs})};
}

Bound bind(const SortChunksGradData &d) {
  return {detail::SortChunksGradOperands::op, "SortChunksGradData",
          detail::buffers_of(detail::SortChunksGradOperands::op,
                             {d.sorted_tokens_grad, d.split_sizes, d.sorted_index,
                              d.sorted_probs_grad, d.tokens_grad, d.probs_grad})};
}

}  // namespace

SortChunksDesc infer_outputs(const SortChunksDesc &d) {
  SortChunksDesc out = d;
  const auto o = cxxapi::inferred(detail::to_set(operands_of(d))).outputs;
  out.sorted_tokens = *o[I::Y];
  out.sorted_probs = o[I::YP];
  return out;
}

SortChunksGradDesc infer_outputs(const SortChunksGradDesc &d) {
  SortChunksGradDesc out = d;
  const auto o = cxxapi::inferred(detail::to_set(operands_of(d))).outputs;
  out.tokens_grad = *o[I::Y];
  out.probs_grad = o[I::YP];
  return out;
}

Plan plan_sort_chunks(const SortChunksDesc &d, const PlanOptions &options) {
  return cxxapi::plan_of(detail::to_set(operands_of(d)), options);
}

Plan plan_sort_chunks_grad(const SortChunksGradDesc &d, const PlanOptions &options) {
  return cxxapi::plan_of(detail::to_set(operands_of(d)), options);
}

void run(const Plan &plan, const SortChunksData &d, std::span<std::byte> ws, void *stream) {
  cxxapi::run_bound(plan, bind(d), ws, stream, false, nullptr, nullptr);
}
void run(const Plan &plan, const SortChunksGradData &d, std::span<std::byte> ws, void *stream) {
  cxxapi::run_bound(plan, bind(d), ws, stream, false, nullptr, nullptr);
}
void run_async(const Plan &plan, const SortChunksData &d, std::span<std::byte> ws, void *stream,
               RunCallback on_done, void *context) {
  cxxapi::run_bound(plan, bind(d), ws, stream, true, on_done, context);
}
void run_async(const Plan &plan, const SortChunksGradData &d, std::span<std::byte> ws, void *stream,
               RunCallback on_done, void *context) {
  cxxapi::run_bound(plan, bind(d), ws, stream, true, on_done, context);
}

void sort_chunks(const SortChunksDesc &desc, const SortChunksData &data,
                 const PlanOptions &options) {
  const Plan plan = plan_sort_chunks(desc, options);
  std::vector<std::byte> ws(plan.workspace_bytes());
  run(plan, data, ws);
}

void sort_chunks_grad(const SortChunksGradDesc &desc, const SortChunksGradData &data,
                      const PlanOptions &options) {
  const Plan plan = plan_sort_chunks_grad(desc, options);
  std::vector<std::byte> ws(plan.workspace_bytes());
  run(plan, data, ws);
}

}  // namespace moeperm
