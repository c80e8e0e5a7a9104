// The C++ API of the unpermute pair (SPEC-unpermute): descriptors to operands, data to
// buffers, and the entry points; planning and the run path are moeperm_api.cpp's.
#include <moeperm/moeperm.hpp>

#include <vector>

#include "core/operands.hpp"
#include "cxxapi/run_path.hpp"

namespace moeperm {
namespace {

using cxxapi::Bound;
using cxxapi::opt;

static_assert(static_cast<int>(Operator::unpermute) ==
              detail::op_index(detail::UnpermuteOperands::op));
static_assert(static_cast<int>(Operator::unpermute_grad) ==
              detail::op_index(detail::UnpermuteGradOperands::op));

detail::UnpermuteOperands operands_of(const UnpermuteDesc &d) {
  return {.permuted_tokens = &d.permuted_tokens,
          .sorted_indices = &d.sorted_indices,
          .routing_map = opt(d.routing_map),
          .probs = opt(d.probs),
          .padded_mode = d.padded_mode,
          .restore_shape = cxxapi::int_array(d.restore_shape),
          .unpermuted_tokens = &d.unpermuted_tokens,
          .out_index = opt(d.out_index),
          .permute_token_id = opt(d.permute_token_id),
          .permute_probs = opt(d.permute_probs)};
}

detail::UnpermuteGradOperands operands_of(const UnpermuteGradDesc &d) {
  return {.unpermuted_tokens_grad = &d.unpermuted_tokens_grad,
          .out_index = &d.out_index,
          .permute_token_id = &d.permute_token_id,
          .routing_map = opt(d.routing_map),
          .permuted_tokens = opt(d.permuted_tokens),
          .probs = opt(d.probs),
          .drop_and_pad = d.drop_and_pad,
          .restore_shape = cxxapi::int_array(d.restore_shape),
          .permuted_tokens_grad = &d.permuted_tokens_grad_out,
          .probs_grad = opt(d.probs_grad_out)};
}

Bound bind(const UnpermuteData &d) {
  return {
      detail::UnpermuteOperands::op, "UnpermuteData",
      detail::buffers_of(detail::UnpermuteOperands::op,
                         {d.permuted_tokens, d.sorted_indices, d.routing_map, d.probs,
                          d.unpermuted_tokens, d.out_index, d.permute_token_id, d.permute_probs})};
}

Bound bind(const UnpermuteGradData &d) {
  return {detail::UnpermuteGradOperands::op, "UnpermuteGradData",
          detail::buffers_of(
              detail::UnpermuteGradOperands::op,
              {d.unpermuted_tokens_grad, d.out_index, d.permute_token_id, d.routing_map,
               d.permuted_tokens, d.probs, d.permuted_tokens_grad_out, d.probs_grad_out})};
}

}  // namespace

UnpermuteDesc infer_outputs(const UnpermuteDesc &d) {
  namespace I = detail::unpermute_operands;
  UnpermuteDesc out = d;
  const auto o = cxxapi::inferred(detail::to_set(operands_of(d))).outputs;
  out.unpermuted_tokens = *o[I::Y];
  out.out_index = o[I::O];
  out.permute_token_id = o[I::I];
  out.permute_probs = o[I::PP];
  return out;
}

UnpermuteGradDesc infer_outputs(const UnpermuteGradDesc &d) {
  namespace I = detail::unpermute_grad_operands;
  UnpermuteGradDesc out = d;
  const auto o = cxxapi::inferred(detail::to_set(operands_of(d))).outputs;
  out.permuted_tokens_grad_out = *o[I::DX];
  out.probs_grad_out = o[I::PG];
  return out;
}

Plan plan_unpermute(const UnpermuteDesc &d, const PlanOptions &options) {
  return cxxapi::plan_of(detail::to_set(operands_of(d)), options);
}

Plan plan_unpermute_grad(const UnpermuteGradDesc &d, const PlanOptions &options) {
  return cxxapi::plan_of(detail::to_set(operands_of(d)), options);
}

void run(const Plan &plan, const UnpermuteData &d, std::span<std::byte> workspace) {
  cxxapi::run_bound(plan, bind(d), workspace, nullptr, false, nullptr, nullptr);
}
void run(const Plan &plan, const UnpermuteGradData &d, std::span<std::byte> workspace) {
  cxxapi::run_bound(plan, bind(d), workspace, nullptr, false, nullptr, nullptr);
}
void run(const Plan &plan, const UnpermuteData &d, std::span<std::byte> workspace, void *stream) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, false, nullptr, nullptr);
}
void run(const Plan &plan, const UnpermuteGradData &d, std::span<std::byte> workspace,
         void *stream) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, false, nullptr, nullptr);
}
void run_async(const Plan &plan, const UnpermuteData &d, std::span<std::byte> workspace,
               void *stream, RunCallback on_done, void *context) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, true, on_done, context);
}
void run_async(const Plan &plan, const UnpermuteGradData &d, std::span<std::byte> workspace,
               void *stream, RunCallback on_done, void *context) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, true, on_done, context);
}

void unpermute(const UnpermuteDesc &desc, const UnpermuteData &data, const PlanOptions &options) {
  const Plan plan = plan_unpermute(desc, options);
  std::vector<std::byte> ws(plan.workspace_bytes());
  run(plan, data, ws);
}

void unpermute_grad(const UnpermuteGradDesc &desc, const UnpermuteGradData &data,
                    const PlanOptions &options) {
  const Plan plan = plan_unpermute_grad(desc, options);
  std::vector<std::byte> ws(plan.workspace_bytes());
  run(plan, data, ws);
}

}  // namespace moeperm
