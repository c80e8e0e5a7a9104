#include "verify.hpp"

#include <moeperm/moeperm.hpp>

#include <chrono>

namespace moeperm::cli {
namespace {

using Clock = std::chrono::steady_clock;

// Same view and storage size as `t`, every byte poisoned as make_problem poisons outputs,
// so an element the reference leaves unwritten compares like one the product leaves.
problem_model::HostTensor blank_like(const problem_model::HostTensor &t) {
  problem_model::HostTensor b;
  b.desc = t.desc;
  b.storage.assign(t.storage.size(), std::byte{0xA5});
  return b;
}

// Element-wise comparison of the views. Fast path: same view over byte-identical storage
// means every element is identical (one memcmp instead of one per element).
OutputComparison compare(const char *name, const problem_model::HostTensor &got,
                         const problem_model::HostTensor &want) {
  const bool same_view = got.desc.shape == want.desc.shape &&
                         got.desc.strides == want.desc.strides &&
                         got.desc.offset == want.desc.offset;
  if (same_view && got.storage == want.storage) return {name, want.numel(), 0};
  return {name, want.numel(), problem_model::count_bit_differences(got, want)};
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

}  // namespace

int64_t Verification::differing() const {
  int64_t n = 0;
  for (const OutputComparison &c : outputs) n += c.differing;
  return n;
}

Verification verify_against_reference(const problem_model::Problem &p) {
  const PlanOptions reference{Backend::reference};
  const bool probs = p.spec.with_probs;
  Verification v;

  problem_model::HostTensor permuted_tokens = blank_like(p.permuted_tokens);
  problem_model::HostTensor sorted_indices = blank_like(p.sorted_indices);
  problem_model::HostTensor permuted_probs =
      probs ? blank_like(p.permuted_probs) : problem_model::HostTensor{};
  PermuteData fwd;
  fwd.tokens = p.tokens.data();
  fwd.routing_map = p.routing_map.data();
  fwd.permuted_tokens = permuted_tokens.data();
  fwd.sorted_indices = sorted_indices.data();
  if (probs) fwd.probs = p.probs.data(), fwd.permuted_probs = permuted_probs.data();
  auto t0 = Clock::now();
  permute(p.permute_desc(), fwd, reference);
  v.forward_seconds = seconds_since(t0);
  v.outputs.push_back(compare("permuteTokensOut", p.permuted_tokens, permuted_tokens));
  if (probs)
    v.outputs.push_back(compare("permuteProbsOutOptional", p.permuted_probs, permuted_probs));
  v.outputs.push_back(compare("sortedIndicesOut", p.sorted_indices, sorted_indices));
  permuted_tokens = {};  // release the largest buffer before the backward allocates

  problem_model::HostTensor tokens_grad = blank_like(p.tokens_grad);
  problem_model::HostTensor dense_probs_grad =
      probs ? blank_like(p.dense_probs_grad) : problem_model::HostTensor{};
  PermuteGradData bwd;
  bwd.permuted_token_output_grad = p.grad.data();
  bwd.sorted_indices = p.sorted_indices.data();  // the S under test; see the header
  bwd.routing_map = p.routing_map.data();
  bwd.tokens_grad_out = tokens_grad.data();
  if (probs)
    bwd.permuted_probs_output_grad = p.probs_grad.data(),
    bwd.probs_grad_out = dense_probs_grad.data();
  t0 = Clock::now();
  permute_grad(p.grad_desc(), bwd, reference);
  v.backward_seconds = seconds_since(t0);
  v.outputs.push_back(compare("tokensGradOut", p.tokens_grad, tokens_grad));
  if (probs)
    v.outputs.push_back(compare("probsGradOutOptional", p.dense_probs_grad, dense_probs_grad));
  return v;
}

}  // namespace moeperm::cli
