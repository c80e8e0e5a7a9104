// README.md's C++ API example (kept in sync by the readme_examples test).
#include <moeperm/moeperm.hpp>

#include <cstdio>
#include <utility>
#include <vector>

moeperm::TensorDesc contiguous(moeperm::DType dtype, std::vector<int64_t> shape) {
  moeperm::TensorDesc d;  // no strides: row-major contiguous
  d.dtype = dtype;
  d.shape = std::move(shape);
  return d;
}

int main() {
  // The same backward as the C example: plan from descriptors (no data), then run.
  const int64_t T = 2, E = 2, H = 2, R = 4;
  std::vector<float> G = {1, 1, 2, 2, 3, 3, 4, 4};
  std::vector<int32_t> S = {0, 2, 1, 3};
  std::vector<float> tokens_grad(T * H);

  moeperm::PermuteGradDesc desc;
  desc.permuted_token_output_grad = contiguous(moeperm::DType::f32, {R, H});
  desc.sorted_indices = contiguous(moeperm::DType::i32, {R});
  desc.num_experts = E;
  desc.tokens_num = T;
  desc.tokens_grad_out = contiguous(moeperm::DType::f32, {T, H});
  try {
    const moeperm::Plan plan = moeperm::plan_permute_grad(desc);  // validates; reusable
    std::vector<std::byte> workspace(plan.workspace_bytes());
    moeperm::PermuteGradData data;
    data.permuted_token_output_grad = G.data();
    data.sorted_indices = S.data();
    data.tokens_grad_out = tokens_grad.data();
    moeperm::run(plan, data, workspace);  // synchronous, on the calling thread
    std::printf("%s\ntokensGrad = [%g %g] [%g %g]\n", plan.to_string().c_str(), tokens_grad[0],
                tokens_grad[1], tokens_grad[2], tokens_grad[3]);
  } catch (const moeperm::Error &e) {  // CANN's status code and the C API's message
    std::printf("%d: %s\n", static_cast<int>(e.code()), e.what());
    return 1;
  }
  return tokens_grad == std::vector<float>{4, 4, 6, 6} ? 0 : 1;
}
