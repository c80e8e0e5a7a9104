// The C++ facade: descriptors in, Plan out; run() throws moeperm::Error.
#include <moeperm/moeperm.hpp>

#include <vector>

#include "backend/backend.hpp"
#include "backend/registry.hpp"
#include "core/operands.hpp"
#include "core/plan.hpp"

namespace moeperm {
namespace {

void throw_if_failed(const detail::Status &s) {
  if (!s.ok()) throw Error(s.code, s.message);
}

template <class T>
const T *opt(const std::optional<T> &o) {
  return o ? &*o : nullptr;
}

}  // namespace

TensorDesc TensorDesc::contiguous(DType dtype, std::vector<int64_t> shape) {
  TensorDesc d;
  d.dtype = dtype;
  d.shape = std::move(shape);
  return d;
}

uint64_t Plan::workspace_bytes() const noexcept { return detail::workspace_bytes(*impl_); }
Sizes Plan::sizes() const noexcept {
  return Sizes{impl_->T, impl_->E, impl_->H, impl_->K, impl_->C, impl_->R};
}
bool Plan::drop_and_pad() const noexcept { return impl_->drop_and_pad; }
bool Plan::is_grad() const noexcept { return impl_->op == detail::Op::permute_grad; }
Operator Plan::op() const noexcept {
  return impl_->op == detail::Op::permute ? Operator::permute : Operator::permute_grad;
}

const char *to_string(Operator op) noexcept {
  return op == Operator::permute ? "aclnnMoeTokenPermuteWithRoutingMap"
                                 : "aclnnMoeTokenPermuteWithRoutingMapGrad";
}
bool is_backward(Operator op) noexcept { return op == Operator::permute_grad; }

std::vector<BackendInfo> backends() {
  const bool gpu = detail::cuda_device_count() > 0;
  return {{Backend::cpu, "cpu", false, true},
          {Backend::reference, "reference", false, true},
          {Backend::cuda, "cuda", true, gpu}};
}

PermuteDesc infer_outputs(const PermuteDesc &d) {
  PermuteDesc out = d;
  if (d.tokens.shape.size() == 2 && d.routing_map.shape.size() == 2) {
    const int64_t T = d.tokens.shape[0], H = d.tokens.shape[1], E = d.routing_map.shape[1];
    int64_t R = 0;
    if (!d.drop_and_pad)
      R = T > 0 ? T * (d.num_out_tokens / T) : 0;
    else if (E > 0)
      R = E * (d.num_out_tokens / E);
    out.permuted_tokens = TensorDesc::contiguous(d.tokens.dtype, {R, H});
    out.sorted_indices = TensorDesc::contiguous(DType::i32, {R});
    if (d.probs)
      out.permuted_probs = TensorDesc::contiguous(d.probs->dtype, {R});
    else if (d.permuted_probs)
      out.permuted_probs = TensorDesc::contiguous(d.permuted_probs->dtype, {R});
  }
  (void)plan_permute(out, {Backend::reference});
  return out;
}

PermuteGradDesc infer_outputs(const PermuteGradDesc &d) {
  PermuteGradDesc out = d;
  const TensorDesc &G = d.permuted_token_output_grad;
  if (G.shape.size() == 2) {
    out.tokens_grad_out = TensorDesc::contiguous(G.dtype, {d.tokens_num, G.shape[1]});
    const auto &P = d.permuted_probs_output_grad;
    if (P)
      out.probs_grad_out = TensorDesc::contiguous(P->dtype, {d.tokens_num, d.num_experts});
    else if (d.probs_grad_out)
      out.probs_grad_out =
          TensorDesc::contiguous(d.probs_grad_out->dtype, {d.tokens_num, d.num_experts});
  }
  (void)plan_permute_grad(out, {Backend::reference});
  return out;
}
const char *Plan::backend_name() const noexcept { return detail::backend_ops(impl_->backend).name; }
std::string Plan::to_string() const { return detail::to_string(*impl_); }

Plan plan_permute(const PermuteDesc &d, const PlanOptions &options) {
  detail::PermuteOperands ops{
      &d.tokens,      &d.routing_map,     opt(d.probs),          d.num_out_tokens,
      d.drop_and_pad, &d.permuted_tokens, opt(d.permuted_probs), &d.sorted_indices};
  auto plan = std::make_shared<detail::Plan>();
  throw_if_failed(detail::make_permute_plan(ops, options.backend, plan.get()));
  return Plan(std::move(plan));
}

Plan plan_permute_grad(const PermuteGradDesc &d, const PlanOptions &options) {
  detail::PermuteGradOperands ops{&d.permuted_token_output_grad,
                                  opt(d.permuted_probs_output_grad),
                                  &d.sorted_indices,
                                  opt(d.routing_map),
                                  d.num_experts,
                                  d.tokens_num,
                                  d.drop_and_pad,
                                  &d.tokens_grad_out,
                                  opt(d.probs_grad_out)};
  auto plan = std::make_shared<detail::Plan>();
  throw_if_failed(detail::make_permute_grad_plan(ops, options.backend, plan.get()));
  return Plan(std::move(plan));
}

// The role buffers are typed void* for both directions; inputs are never written.
void run(const Plan &plan, const PermuteData &d, std::span<std::byte> workspace) {
  if (plan.is_grad())
    throw Error(Code::invalid_param,
                "moeperm::run: a MoeTokenPermuteWithRoutingMapGrad plan was given PermuteData");
  detail::Buffers b{const_cast<void *>(d.tokens), d.permuted_tokens, d.routing_map,
                    const_cast<void *>(d.probs),  d.permuted_probs,  d.sorted_indices};
  throw_if_failed(detail::execute(plan.impl(), b, workspace.data(), workspace.size()));
}

void run(const Plan &plan, const PermuteGradData &d, std::span<std::byte> workspace) {
  if (!plan.is_grad())
    throw Error(Code::invalid_param,
                "moeperm::run: a MoeTokenPermuteWithRoutingMap plan was given PermuteGradData");
  detail::Buffers b{d.tokens_grad_out,
                    const_cast<void *>(d.permuted_token_output_grad),
                    d.routing_map,
                    d.probs_grad_out,
                    const_cast<void *>(d.permuted_probs_output_grad),
                    const_cast<void *>(d.sorted_indices)};
  throw_if_failed(detail::execute(plan.impl(), b, workspace.data(), workspace.size()));
}

void run(const Plan &plan, const PermuteData &d, std::span<std::byte> workspace,
         void *cuda_stream) {
  if (plan.impl().backend != detail::BackendId::cuda) return run(plan, d, workspace);
  if (plan.is_grad())
    throw Error(Code::invalid_param,
                "moeperm::run: a MoeTokenPermuteWithRoutingMapGrad plan was given PermuteData");
  detail::Buffers b{const_cast<void *>(d.tokens), d.permuted_tokens, d.routing_map,
                    const_cast<void *>(d.probs),  d.permuted_probs,  d.sorted_indices};
  throw_if_failed(
      detail::execute_on_stream(plan.impl(), b, workspace.data(), workspace.size(), cuda_stream));
}

void run(const Plan &plan, const PermuteGradData &d, std::span<std::byte> workspace,
         void *cuda_stream) {
  if (plan.impl().backend != detail::BackendId::cuda) return run(plan, d, workspace);
  if (!plan.is_grad())
    throw Error(Code::invalid_param,
                "moeperm::run: a MoeTokenPermuteWithRoutingMap plan was given PermuteGradData");
  detail::Buffers b{d.tokens_grad_out,
                    const_cast<void *>(d.permuted_token_output_grad),
                    d.routing_map,
                    d.probs_grad_out,
                    const_cast<void *>(d.permuted_probs_output_grad),
                    const_cast<void *>(d.sorted_indices)};
  throw_if_failed(
      detail::execute_on_stream(plan.impl(), b, workspace.data(), workspace.size(), cuda_stream));
}

namespace {

struct Callback {
  RunCallback fn;
  void *context;
};

void deliver_to_callback(void *context, detail::Status status) {
  auto *cb = static_cast<Callback *>(context);
  if (cb->fn) cb->fn(cb->context, status.code, status.message.c_str());
  delete cb;
}

void enqueue(const Plan &plan, const detail::Buffers &b, std::span<std::byte> workspace,
             void *cuda_stream, RunCallback on_done, void *context) {
  if (plan.impl().backend != detail::BackendId::cuda) {
    throw_if_failed(detail::execute(plan.impl(), b, workspace.data(), workspace.size()));
    if (on_done) on_done(context, Code::ok, "");
    return;
  }
  auto *cb = new Callback{on_done, context};
  const detail::Status s =
      detail::execute_on_stream(plan.impl(), b, workspace.data(), workspace.size(), cuda_stream,
                                detail::DeviceErrorSink{deliver_to_callback, cb});
  if (!s.ok()) {
    delete cb;  // nothing was enqueued that could call back
    throw_if_failed(s);
  }
}

}  // namespace

void run_async(const Plan &plan, const PermuteData &d, std::span<std::byte> workspace,
               void *cuda_stream, RunCallback on_done, void *context) {
  if (plan.is_grad())
    throw Error(
        Code::invalid_param,
        "moeperm::run_async: a MoeTokenPermuteWithRoutingMapGrad plan was given PermuteData");
  enqueue(plan,
          detail::Buffers{const_cast<void *>(d.tokens), d.permuted_tokens, d.routing_map,
                          const_cast<void *>(d.probs), d.permuted_probs, d.sorted_indices},
          workspace, cuda_stream, on_done, context);
}

void run_async(const Plan &plan, const PermuteGradData &d, std::span<std::byte> workspace,
               void *cuda_stream, RunCallback on_done, void *context) {
  if (!plan.is_grad())
    throw Error(
        Code::invalid_param,
        "moeperm::run_async: a MoeTokenPermuteWithRoutingMap plan was given PermuteGradData");
  enqueue(plan,
          detail::Buffers{d.tokens_grad_out, const_cast<void *>(d.permuted_token_output_grad),
                          d.routing_map, d.probs_grad_out,
                          const_cast<void *>(d.permuted_probs_output_grad),
                          const_cast<void *>(d.sorted_indices)},
          workspace, cuda_stream, on_done, context);
}

bool cuda_built() noexcept { return detail::cuda_backend_built(); }
int cuda_device_count() noexcept { return detail::cuda_device_count(); }

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
