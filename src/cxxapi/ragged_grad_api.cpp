// The C++ API of the ragged pair's backward operators (docs/ragged.md): descriptors to
// operands, data to buffers, and the entry points; planning and the run path are
// moeperm_api.cpp's.
#include <moeperm/moeperm.hpp>

#include <vector>

#include "core/operands.hpp"
#include "cxxapi/run_path.hpp"

namespace moeperm {
namespace {

using cxxapi::Bound;
using cxxapi::opt;

static_assert(static_cast<int>(Operator::ragged_permute_grad) ==
              detail::op_index(detail::RaggedPermuteGradOperands::op));
static_assert(static_cast<int>(Operator::ragged_unpermute_grad) ==
              detail::op_index(detail::RaggedUnpermuteGradOperands::op));

detail::RaggedPermuteGradOperands operands_of(const RaggedPermuteGradDesc &d) {
  return {.permuted_tokens_grad = &d.permuted_tokens_grad,
          .permuted_probs_grad = opt(d.permuted_probs_grad),
          .sorted_indices = &d.sorted_indices,
          .routing_map = opt(d.routing_map),
          .num_tokens = d.num_tokens,
          .drop_and_pad = d.drop_and_pad,
          .tokens_grad = &d.tokens_grad,
          .probs_grad = opt(d.probs_grad)};
}

detail::RaggedUnpermuteGradOperands operands_of(const RaggedUnpermuteGradDesc &d) {
  return {.unpermuted_tokens_grad = &d.unpermuted_tokens_grad,
          .sorted_indices = &d.sorted_indices,
          .routing_map = opt(d.routing_map),
          .permuted_tokens = opt(d.permuted_tokens),
          .probs = opt(d.probs),
          .drop_and_pad = d.drop_and_pad,
          .permuted_tokens_grad = &d.permuted_tokens_grad,
          .probs_grad = opt(d.probs_grad)};
}

Bound bind(const RaggedPermuteGradData &d) {
  return {detail::RaggedPermuteGradOperands::op, "RaggedPermuteGradData",
          detail::buffers_of(detail::RaggedPermuteGradOperands::op,
                             {d.permuted_tokens_grad, d.permuted_probs_grad, d.sorted_indices,
                              d.routing_map, d.tokens_grad, d.probs_grad})};
}

Bound bind(const RaggedUnpermuteGradData &d) {
  return {detail::RaggedUnpermuteGradOperands::op, "RaggedUnpermuteGradData",
          detail::buffers_of(detail::RaggedUnpermuteGradOperands::op,
                             {d.unpermuted_tokens_grad, d.sorted_indices, d.routing_map,
                              d.permuted_tokens, d.probs, d.permuted_tokens_grad, d.probs_grad})};
}

}  // namespace

RaggedPermuteGradDesc infer_outputs(const RaggedPermuteGradDesc &d) {
  namespace I = detail::ragged_permute_grad_operands;
  RaggedPermuteGradDesc out = d;
  const auto o = cxxapi::inferred(detail::to_set(operands_of(d))).outputs;
  out.tokens_grad = *o[I::TG];
  out.probs_grad = o[I::PG];
  return out;
}

RaggedUnpermuteGradDesc infer_outputs(const RaggedUnpermuteGradDesc &d) {
  namespace I = detail::ragged_unpermute_grad_operands;
  RaggedUnpermuteGradDesc out = d;
  const auto o = cxxapi::inferred(detail::to_set(operands_of(d))).outputs;
  out.permuted_tokens_grad = *o[I::DX];
  out.probs_grad = o[I::DP];
  return out;
}

Plan plan_ragged_permute_grad(const RaggedPermuteGradDesc &d, const PlanOptions &options) {
  return cxxapi::plan_of(detail::to_set(operands_of(d)), options);
}

Plan plan_ragged_unpermute_grad(const RaggedUnpermuteGradDesc &d, const PlanOptions &options) {
  return cxxapi::plan_of(detail::to_set(operands_of(d)), options);
}

void run(const Plan &plan, const RaggedPermuteGradData &d, std::span<std::byte> workspace,
         void *stream) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, false, nullptr, nullptr);
}
void run(const Plan &plan, const RaggedUnpermuteGradData &d, std::span<std::byte> workspace,
         void *stream) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, false, nullptr, nullptr);
}
void run_async(const Plan &plan, const RaggedPermuteGradData &d, std::span<std::byte> workspace,
               void *stream, RunCallback on_done, void *context) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, true, on_done, context);
}
void run_async(const Plan &plan, const RaggedUnpermuteGradData &d, std::span<std::byte> workspace,
               void *stream, RunCallback on_done, void *context) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, true, on_done, context);
}

void ragged_permute_grad(const RaggedPermuteGradDesc &desc, const RaggedPermuteGradData &data,
                         const PlanOptions &options) {
  const Plan plan = plan_ragged_permute_grad(desc, options);
  std::vector<std::byte> ws(plan.workspace_bytes());
  run(plan, data, ws);
}

void ragged_unpermute_grad(const RaggedUnpermuteGradDesc &desc, const RaggedUnpermuteGradData &data,
                           const PlanOptions &options) {
  const Plan plan = plan_ragged_unpermute_grad(desc, options);
  std::vector<std::byte> ws(plan.workspace_bytes());
  run(plan, data, ws);
}

}  // namespace moeperm
