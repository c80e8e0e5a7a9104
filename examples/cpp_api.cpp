// The modern C++ API in one page: SPEC §2's worked example (T=3 tokens, E=2 experts, every
// token routed to both, drop-less) forward and backward, then an error caught as
// moeperm::Error. Exits non-zero if a result is not what the spec says.
#include <moeperm/moeperm.hpp>

#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

using moeperm::DType;
using moeperm::TensorDesc;

// A row-major view: empty strides mean contiguous, offset 0.
TensorDesc contiguous(DType dtype, std::vector<int64_t> shape) {
  TensorDesc d;
  d.dtype = dtype;
  d.shape = std::move(shape);
  return d;
}

int main() {
  constexpr int64_t T = 3, E = 2, H = 2, K = 2, R = T * K;
  std::vector<float> tokens = {0, 0, 1, 1, 2, 2};  // token t is [t, t]
  std::vector<int8_t> routing_map(T * E, 1);       // every token picks both experts
  std::vector<float> permuted(R * H);
  std::vector<int32_t> sorted_indices(R);

  // Forward: plan once from descriptors (validates, sizes the workspace), then run.
  moeperm::PermuteDesc fwd;
  fwd.tokens = contiguous(DType::f32, {T, H});
  fwd.routing_map = contiguous(DType::i8, {T, E});
  fwd.num_out_tokens = R;
  fwd.permuted_tokens = contiguous(DType::f32, {R, H});
  fwd.sorted_indices = contiguous(DType::i32, {R});
  const moeperm::Plan plan = moeperm::plan_permute(fwd);
  std::printf("%s\n", plan.to_string().c_str());
  std::vector<std::byte> workspace(plan.workspace_bytes());
  moeperm::PermuteData data;
  data.tokens = tokens.data();
  data.routing_map = routing_map.data();
  data.permuted_tokens = permuted.data();
  data.sorted_indices = sorted_indices.data();
  moeperm::run(plan, data, workspace);  // the plan is reusable for more calls

  // Backward, one-shot: plan + workspace + run. G = the permuted tokens themselves, so
  // token t's gradient is K copies of itself summed: [2t, 2t].
  std::vector<float> tokens_grad(T * H);
  moeperm::PermuteGradDesc bwd;
  bwd.permuted_token_output_grad = contiguous(DType::f32, {R, H});
  bwd.sorted_indices = contiguous(DType::i32, {R});
  bwd.num_experts = E;
  bwd.tokens_num = T;
  bwd.tokens_grad_out = contiguous(DType::f32, {T, H});
  moeperm::PermuteGradData grad;
  grad.permuted_token_output_grad = permuted.data();
  grad.sorted_indices = sorted_indices.data();
  grad.tokens_grad_out = tokens_grad.data();
  moeperm::permute_grad(bwd, grad);

  int bad = 0;
  const int32_t want_indices[R] = {0, 3, 1, 4, 2, 5};  // SPEC §2
  for (int64_t i = 0; i < R; ++i) bad += sorted_indices[i] != want_indices[i];
  for (int64_t i = 0; i < T * H; ++i) bad += tokens_grad[i] != 2.0f * static_cast<float>(i / H);
  std::printf("sortedIndices = [%d %d %d %d %d %d], tokensGrad[2] = [%g %g]\n", sorted_indices[0],
              sorted_indices[1], sorted_indices[2], sorted_indices[3], sorted_indices[4],
              sorted_indices[5], tokens_grad[4], tokens_grad[5]);

  // Errors are exceptions carrying CANN's status code and a message naming the argument.
  bwd.num_experts = 0;
  try {
    moeperm::plan_permute_grad(bwd);
    bad++;
  } catch (const moeperm::Error &e) {
    std::printf("error %d (%s): %s\n", static_cast<int>(e.code()), moeperm::to_string(e.code()),
                e.what());
    bad += e.code() != moeperm::Code::invalid_param;
  }
  return bad == 0 ? 0 : 1;
}
