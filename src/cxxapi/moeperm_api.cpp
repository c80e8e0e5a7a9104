// The C++ facade: descriptors in, Plan out; run() throws moeperm::Error.
#include <moeperm/moeperm.hpp>

#include <vector>

#include "backend/registry.hpp"
#include "core/operands.hpp"
#include "cxxapi/run_path.hpp"

namespace moeperm {
namespace cxxapi {

void throw_if_failed(const detail::Status &s) {
  if (!s.ok()) throw Error(s.code, s.message);
}

detail::InferredOutputs inferred(const detail::OperandSet &set) {
  detail::InferredOutputs out;
  throw_if_failed(detail::infer_outputs(set, &out));
  return out;
}

Plan plan_of(const detail::OperandSet &set, const PlanOptions &options) {
  auto plan = std::make_shared<detail::Plan>();
  throw_if_failed(detail::plan_call(set, options.backend, plan.get()));
  return Plan(std::move(plan));
}

}  // namespace cxxapi

using cxxapi::Bound;
using cxxapi::inferred;
using cxxapi::opt;
using cxxapi::throw_if_failed;

TensorDesc TensorDesc::contiguous(DType dtype, std::vector<int64_t> shape) {
  TensorDesc d;
  d.dtype = dtype;
  d.shape = std::move(shape);
  return d;
}

uint64_t Plan::workspace_bytes() const noexcept { return detail::workspace_bytes(*impl_); }
Sizes Plan::sizes() const noexcept {
  return Sizes{impl_->T, impl_->E, impl_->H, impl_->K, impl_->C, impl_->R, impl_->S};
}
bool Plan::drop_and_pad() const noexcept { return impl_->drop_and_pad; }
Operator Plan::op() const noexcept { return static_cast<Operator>(impl_->op); }
bool Plan::is_grad() const noexcept { return is_backward(op()); }
const char *Plan::backend_name() const noexcept { return impl_->backend->name; }
const char *Plan::variant() const noexcept { return impl_->variant_name; }
std::string Plan::to_string() const { return detail::to_string(*impl_); }

// The public Operator and the core's Op name the same operators with the same values.
static_assert(static_cast<int>(Operator::permute) == detail::op_index(detail::PermuteOperands::op));
static_assert(static_cast<int>(Operator::permute_grad) ==
              detail::op_index(detail::PermuteGradOperands::op));

const char *to_string(Operator op) noexcept { return detail::op_desc(detail::Op(op)).api; }
bool is_backward(Operator op) noexcept { return detail::op_desc(detail::Op(op)).backward; }

std::vector<BackendInfo> backends() { return detail::registered_backends(); }

namespace {

detail::PermuteOperands operands_of(const PermuteDesc &d) {
  return {.tokens = &d.tokens,
          .routing_map = &d.routing_map,
          .probs = opt(d.probs),
          .num_out_tokens = d.num_out_tokens,
          .drop_and_pad = d.drop_and_pad,
          .permuted_tokens = &d.permuted_tokens,
          .permuted_probs = opt(d.permuted_probs),
          .sorted_indices = &d.sorted_indices};
}

detail::PermuteGradOperands operands_of(const PermuteGradDesc &d) {
  return {.grad = &d.permuted_token_output_grad,
          .probs_grad = opt(d.permuted_probs_output_grad),
          .sorted_indices = &d.sorted_indices,
          .routing_map = opt(d.routing_map),
          .num_experts = d.num_experts,
          .tokens_num = d.tokens_num,
          .drop_and_pad = d.drop_and_pad,
          .tokens_grad = &d.tokens_grad_out,
          .dense_probs_grad = opt(d.probs_grad_out)};
}

}  // namespace

PermuteDesc infer_outputs(const PermuteDesc &d) {
  PermuteDesc out = d;
  namespace I = detail::permute_operands;
  const auto o = inferred(detail::to_set(operands_of(d))).outputs;
  out.permuted_tokens = *o[I::Y];
  out.permuted_probs = o[I::YP];
  out.sorted_indices = *o[I::S];
  return out;
}

PermuteGradDesc infer_outputs(const PermuteGradDesc &d) {
  PermuteGradDesc out = d;
  namespace I = detail::permute_grad_operands;
  const auto o = inferred(detail::to_set(operands_of(d))).outputs;
  out.tokens_grad_out = *o[I::TG];
  out.probs_grad_out = o[I::PG];
  return out;
}

Plan plan_permute(const PermuteDesc &d, const PlanOptions &options) {
  return cxxapi::plan_of(detail::to_set(operands_of(d)), options);
}

Plan plan_permute_grad(const PermuteGradDesc &d, const PlanOptions &options) {
  return cxxapi::plan_of(detail::to_set(operands_of(d)), options);
}

namespace {

Bound bind(const PermuteData &d) {
  return {detail::PermuteOperands::op, "PermuteData",
          detail::buffers_of(detail::PermuteOperands::op,
                             {d.tokens, d.routing_map, d.probs, d.permuted_tokens, d.permuted_probs,
                              d.sorted_indices})};
}

Bound bind(const PermuteGradData &d) {
  return {
      detail::PermuteGradOperands::op, "PermuteGradData",
      detail::buffers_of(detail::PermuteGradOperands::op,
                         {d.permuted_token_output_grad, d.permuted_probs_output_grad,
                          d.sorted_indices, d.routing_map, d.tokens_grad_out, d.probs_grad_out})};
}

// The data must be of the plan's operator: "a <operator> plan was given <data>".
void check_operator(const Plan &plan, const Bound &b, const char *fn) {
  if (plan.impl().op == b.op) return;
  constexpr std::string_view kPrefix = "aclnn";
  const std::string_view api = plan.impl().api();
  throw Error(Code::invalid_param, detail::cat("moeperm::", fn, ": a ", api.substr(kPrefix.size()),
                                               " plan was given ", b.data_name));
}

struct Callback {
  RunCallback fn;
  void *context;
};

void deliver_to_callback(void *context, detail::Status status) {
  auto *cb = static_cast<Callback *>(context);
  if (cb->fn) cb->fn(cb->context, status.code, status.message.c_str());
  delete cb;
}

// The one run path: synchronous on the host, or enqueued on a device stream; with
// `on_done`, a device run reports its outcome to the callback instead of waiting.
}  // namespace

namespace cxxapi {

void run_bound(const Plan &plan, const Bound &b, std::span<std::byte> ws, void *stream, bool async,
               RunCallback on_done, void *context) {
  check_operator(plan, b, async ? "run_async" : "run");
  const detail::Plan &p = plan.impl();
  if (!detail::runs_on_device(p)) {
    throw_if_failed(detail::execute(p, b.buffers, ws.data(), ws.size()));
    if (async && on_done) on_done(context, Code::ok, "");
    return;
  }
  if (!async) {
    throw_if_failed(detail::execute_on_stream(p, b.buffers, ws.data(), ws.size(), stream));
    return;
  }
  auto *cb = new Callback{on_done, context};
  const detail::Status s = detail::execute_on_stream(
      p, b.buffers, ws.data(), ws.size(), stream, detail::DeviceErrorSink{deliver_to_callback, cb});
  if (!s.ok()) {
    delete cb;  // nothing was enqueued that could call back
    throw_if_failed(s);
  }
}

}  // namespace cxxapi

using cxxapi::run_bound;

void run(const Plan &plan, const PermuteData &d, std::span<std::byte> workspace) {
  run_bound(plan, bind(d), workspace, nullptr, false, nullptr, nullptr);
}
void run(const Plan &plan, const PermuteGradData &d, std::span<std::byte> workspace) {
  run_bound(plan, bind(d), workspace, nullptr, false, nullptr, nullptr);
}
void run(const Plan &plan, const PermuteData &d, std::span<std::byte> workspace, void *stream) {
  run_bound(plan, bind(d), workspace, stream, false, nullptr, nullptr);
}
void run(const Plan &plan, const PermuteGradData &d, std::span<std::byte> workspace, void *stream) {
  run_bound(plan, bind(d), workspace, stream, false, nullptr, nullptr);
}
void run_async(const Plan &plan, const PermuteData &d, std::span<std::byte> workspace, void *stream,
               RunCallback on_done, void *context) {
  run_bound(plan, bind(d), workspace, stream, true, on_done, context);
}
void run_async(const Plan &plan, const PermuteGradData &d, std::span<std::byte> workspace,
               void *stream, RunCallback on_done, void *context) {
  run_bound(plan, bind(d), workspace, stream, true, on_done, context);
}

bool cuda_built() noexcept { return detail::find_backend(Backend::cuda) != nullptr; }
int cuda_device_count() noexcept { return detail::device_count(Backend::cuda); }

void permute(const PermuteDesc &desc, const PermuteData &data, const PlanOptions &options) {
  const Plan plan = plan_permute(desc, options);
  std::vector<std::byte> ws(plan.workspace_bytes());
  run(plan, data, ws);
}

void permute_grad(const PermuteGradDesc &desc, const PermuteGradData &data,
                  const PlanOptions &options) {
  const Plan plan = plan_permute_grad(desc, options);
  std::vector<std::byte> ws(plan.workspace_bytes());
  run(plan, data, ws);
}

}  // namespace moeperm
