// The C++ API of the ragged pair (docs/ragged.md): descriptors to operands, data to buffers,
// and the entry points; planning and the run path are moeperm_api.cpp's.
#include <moeperm/moeperm.hpp>

#include <vector>

#include "core/operands.hpp"
#include "cxxapi/run_path.hpp"

namespace moeperm {
namespace {

using cxxapi::Bound;
using cxxapi::opt;

static_assert(static_cast<int>(Operator::ragged_permute) ==
              detail::op_index(detail::RaggedPermuteOperands::op));
static_assert(static_cast<int>(Operator::ragged_unpermute) ==
              detail::op_index(detail::RaggedUnpermuteOperands::op));

detail::RaggedPermuteOperands operands_of(const RaggedPermuteDesc &d) {
  return {.tokens = &d.tokens,
          .routing_map = &d.routing_map,
          .probs = opt(d.probs),
          .num_out_tokens = d.num_out_tokens,
          .drop_and_pad = d.drop_and_pad,
          .permuted_tokens = &d.permuted_tokens,
          .permuted_probs = opt(d.permuted_probs),
          .sorted_indices = &d.sorted_indices};
}

detail::RaggedUnpermuteOperands operands_of(const RaggedUnpermuteDesc &d) {
  return {.permuted_tokens = &d.permuted_tokens,
          .sorted_indices = &d.sorted_indices,
          .routing_map = opt(d.routing_map),
          .probs = opt(d.probs),
          .drop_and_pad = d.drop_and_pad,
          .restore_shape = cxxapi::int_array(d.restore_shape),
          .unpermuted_tokens = &d.unpermuted_tokens};
}

Bound bind(const RaggedPermuteData &d) {
  return {detail::RaggedPermuteOperands::op, "RaggedPermuteData",
          detail::buffers_of(detail::RaggedPermuteOperands::op,
                             {d.tokens, d.routing_map, d.probs, d.permuted_tokens, d.permuted_probs,
                              d.sorted_indices})};
}

Bound bind(const RaggedUnpermuteData &d) {
  return {detail::RaggedUnpermuteOperands::op, "RaggedUnpermuteData",
          detail::buffers_of(
              detail::RaggedUnpermuteOperands::op,
              {d.permuted_tokens, d.sorted_indices, d.routing_map, d.probs, d.unpermuted_tokens})};
}

}  // namespace

RaggedPermuteDesc infer_outputs(const RaggedPermuteDesc &d) {
  namespace I = detail::ragged_permute_operands;
  RaggedPermuteDesc out = d;
  const auto o = cxxapi::inferred(detail::to_set(operands_of(d))).outputs;
  out.permuted_tokens = *o[I::Y];
  out.permuted_probs = o[I::YP];
  out.sorted_indices = *o[I::S];
  return out;
}

RaggedUnpermuteDesc infer_outputs(const RaggedUnpermuteDesc &d) {
  namespace I = detail::ragged_unpermute_operands;
  RaggedUnpermuteDesc out = d;
  out.unpermuted_tokens = *cxxapi::inferred(detail::to_set(operands_of(d))).outputs[I::Y];
  return out;
}

Plan plan_ragged_permute(const RaggedPermuteDesc &d, const PlanOptions &options) {
  return cxxapi::plan_of(detail::to_set(operands_of(d)), options);
}

Plan plan_ragged_unpermute(const RaggedUnpermuteDesc &d, const PlanOptions &options) {
  return cxxapi::plan_of(detail::to_set(operands_of(d)), options);
}

void run(const Plan &plan, const RaggedPermuteData &d, std::span<std::byte> workspace) {
  cxxapi::run_bound(plan, bind(d), workspace, nullptr, false, nullptr, nullptr);
}
void run(const Plan &plan, const RaggedUnpermuteData &d, std::span<std::byte> workspace) {
  cxxapi::run_bound(plan, bind(d), workspace, nullptr, false, nullptr, nullptr);
}
void run(const Plan &plan, const RaggedPermuteData &d, std::span<std::byte> workspace,
         void *stream) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, false, nullptr, nullptr);
}
void run(const Plan &plan, const RaggedUnpermuteData &d, std::span<std::byte> workspace,
         void *stream) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, false, nullptr, nullptr);
}
void run_async(const Plan &plan, const RaggedPermuteData &d, std::span<std::byte> workspace,
               void *stream, RunCallback on_done, void *context) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, true, on_done, context);
}
void run_async(const Plan &plan, const RaggedUnpermuteData &d, std::span<std::byte> workspace,
               void *stream, RunCallback on_done, void *context) {
  cxxapi::run_bound(plan, bind(d), workspace, stream, true, on_done, context);
}

void ragged_permute(const RaggedPermuteDesc &desc, const RaggedPermuteData &data,
                    const PlanOptions &options) {
  const Plan plan = plan_ragged_permute(desc, options);
  std::vector<std::byte> ws(plan.workspace_bytes());
  run(plan, data, ws);
}

void ragged_unpermute(const RaggedUnpermuteDesc &desc, const RaggedUnpermuteData &data,
                      const PlanOptions &options) {
  const Plan plan = plan_ragged_unpermute(desc, options);
  std::vector<std::byte> ws(plan.workspace_bytes());
  run(plan, data, ws);
}

}  // namespace moeperm
