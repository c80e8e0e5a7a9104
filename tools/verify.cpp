#include "verify.hpp"

#include <moeperm/moeperm.hpp>

#include <chrono>

namespace moeperm::cli {
namespace {

using Clock = std::chrono::steady_clock;
using problem_model::HostTensor;

constexpr PlanOptions kReference{Backend::reference};

// Same view and storage size as `t`, every byte poisoned as make_problem poisons outputs,
// so an element the reference leaves unwritten compares like one the product leaves.
HostTensor blank_like(const HostTensor &t) {
  HostTensor b;
  b.desc = t.desc;
  b.storage.assign(t.storage.size(), std::byte{0xA5});
  return b;
}

// Element-wise comparison of the views. Fast path: same view over byte-identical storage
// means every element is identical (one memcmp instead of one per element).
OutputComparison compare(const char *name, const HostTensor &got, const HostTensor &want) {
  const bool same_view = got.desc.shape == want.desc.shape &&
                         got.desc.strides == want.desc.strides &&
                         got.desc.offset == want.desc.offset;
  if (same_view && got.storage == want.storage) return {name, want.numel(), 0};
  return {name, want.numel(), problem_model::count_bit_differences(got, want)};
}

// The outputs of one reference run: blank twins of the outputs under test, compared after.
class Outputs {
 public:
  void *twin(const char *name, const HostTensor &under_test, bool present = true) {
    if (!present) return nullptr;
    entries_.push_back({name, &under_test, blank_like(under_test)});
    return entries_.back().reference.data();
  }
  Verification compare_all(double seconds) const {
    Verification v;
    v.seconds = seconds;
    for (const Entry &e : entries_)
      v.outputs.push_back(compare(e.name, *e.under_test, e.reference));
    return v;
  }

 private:
  struct Entry {
    const char *name;
    const HostTensor *under_test;
    HostTensor reference;
  };
  std::vector<Entry> entries_;
};

template <class Run>
double timed(Run &&run) {
  const auto t0 = Clock::now();
  run();
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

}  // namespace

int64_t Verification::differing() const {
  int64_t n = 0;
  for (const OutputComparison &c : outputs) n += c.differing;
  return n;
}

Verification verify_permute(const problem_model::Problem &p) {
  const bool probs = p.spec.with_probs;
  Outputs out;
  PermuteData d;
  d.tokens = p.tokens.data();
  d.routing_map = p.routing_map.data();
  d.probs = probs ? p.probs.data() : nullptr;
  d.permuted_tokens = out.twin("permuteTokensOut", p.permuted_tokens);
  d.permuted_probs = out.twin("permuteProbsOutOptional", p.permuted_probs, probs);
  d.sorted_indices = out.twin("sortedIndicesOut", p.sorted_indices);
  const double s = timed([&] { permute(p.permute_desc(), d, kReference); });
  return out.compare_all(s);
}

Verification verify_unpermute(problem_model::Problem &p, problem_model::UnpermuteTensors &u) {
  // The inputs under test (the permute's rows and S); the outputs go to blank twins.
  UnpermuteData d = problem_model::unpermute_data(p, u);
  Outputs out;
  d.unpermuted_tokens = out.twin("unpermutedTokens", u.unpermuted);
  d.out_index = out.twin("outIndex", u.out_index);
  d.permute_token_id = out.twin("permuteTokenId", u.token_id);
  d.permute_probs = out.twin("permuteProbs", u.permute_probs);
  const double s = timed([&] { unpermute(problem_model::unpermute_desc(p, u), d, kReference); });
  return out.compare_all(s);
}

Verification verify_unpermute_grad(problem_model::Problem &p, problem_model::UnpermuteTensors &u) {
  UnpermuteGradData d = problem_model::unpermute_grad_data(p, u);
  Outputs out;
  d.permuted_tokens_grad_out = out.twin("permutedTokensGradOut", u.permuted_tokens_grad);
  d.probs_grad_out = out.twin("probsGradOutOptional", u.probs_grad, p.spec.with_probs);
  const double s =
      timed([&] { unpermute_grad(problem_model::unpermute_grad_desc(p, u), d, kReference); });
  return out.compare_all(s);
}

Verification verify_permute_grad(const problem_model::Problem &p, const HostTensor &grad) {
  const bool probs = p.spec.with_probs;
  Outputs out;
  PermuteGradData d;
  d.permuted_token_output_grad = grad.data();
  d.sorted_indices = p.sorted_indices.data();  // the S under test
  d.routing_map = p.routing_map.data();
  d.permuted_probs_output_grad = probs ? p.probs_grad.data() : nullptr;
  d.tokens_grad_out = out.twin("tokensGradOut", p.tokens_grad);
  d.probs_grad_out = out.twin("probsGradOutOptional", p.dense_probs_grad, probs);
  PermuteGradDesc desc = p.grad_desc();
  desc.permuted_token_output_grad = grad.desc;
  const double s = timed([&] { permute_grad(desc, d, kReference); });
  return out.compare_all(s);
}

void reference_permute(problem_model::Problem &p) {
  permute(p.permute_desc(), p.permute_data(), kReference);
}
void reference_unpermute(problem_model::Problem &p, problem_model::UnpermuteTensors &u) {
  unpermute(problem_model::unpermute_desc(p, u), problem_model::unpermute_data(p, u), kReference);
}
void reference_unpermute_grad(problem_model::Problem &p, problem_model::UnpermuteTensors &u) {
  unpermute_grad(problem_model::unpermute_grad_desc(p, u), problem_model::unpermute_grad_data(p, u),
                 kReference);
}

}  // namespace moeperm::cli
