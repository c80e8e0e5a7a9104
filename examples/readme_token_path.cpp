// README.md's token-path example (kept in sync by the readme_examples test).
#include <moeperm/moeperm.hpp>

#include <cstdio>
#include <utility>
#include <vector>

using moeperm::DType;

moeperm::TensorDesc contiguous(DType dtype, std::vector<int64_t> shape) {
  moeperm::TensorDesc d;
  d.dtype = dtype;
  d.shape = std::move(shape);
  return d;
}

int main() {
  // One MoE layer's token path, T = 3 tokens, E = 2 experts, top-2, H = 2, drop-less.
  const int64_t T = 3, E = 2, K = 2, H = 2, R = T * K;
  std::vector<float> tokens = {1, 2, 3, 4, 5, 6}, probs = {0.5f, 0.5f, 0.25f, 0.75f, 1, 0};
  std::vector<int8_t> routing_map = {1, 1, 1, 1, 1, 1};
  std::vector<float> rows(R * H), out(T * H), out_grad = {1, 1, 1, 1, 1, 1};
  std::vector<float> rows_grad(R * H), probs_grad(T * E);
  std::vector<int32_t> sorted_indices(R);
  try {
    // 1. Permute: tokens -> expert-major rows (the experts would run on `rows`).
    moeperm::PermuteDesc p;
    p.tokens = contiguous(DType::f32, {T, H});
    p.routing_map = contiguous(DType::i8, {T, E});
    p.num_out_tokens = R;
    p = moeperm::infer_outputs(p);  // permuted_tokens [R, H], sorted_indices [R]
    moeperm::permute(p, {.tokens = tokens.data(),
                         .routing_map = routing_map.data(),
                         .permuted_tokens = rows.data(),
                         .sorted_indices = sorted_indices.data()});
    // 2. Unpermute: rows -> tokens, weighted by the router probabilities.
    moeperm::UnpermuteDesc u;
    u.permuted_tokens = p.permuted_tokens;
    u.sorted_indices = p.sorted_indices;
    u.routing_map = p.routing_map;
    u.probs = contiguous(DType::f32, {T, E});
    u = moeperm::infer_outputs(u);  // unpermuted_tokens [T, H], permute_probs [R]
    u.permute_probs.reset();        // an optional output (SPEC-unpermute U1): not wanted here
    moeperm::unpermute(u, {.permuted_tokens = rows.data(),
                           .sorted_indices = sorted_indices.data(),
                           .routing_map = routing_map.data(),
                           .probs = probs.data(),
                           .unpermuted_tokens = out.data()});
    // 3. Its backward: drop-less callers pass sorted_indices as outIndex and permuteTokenId.
    moeperm::UnpermuteGradDesc g;
    g.unpermuted_tokens_grad = contiguous(DType::f32, {T, H});
    g.out_index = g.permute_token_id = p.sorted_indices;
    g.routing_map = p.routing_map;
    g.permuted_tokens = p.permuted_tokens;  // read for the probs gradient only
    g.probs = u.probs;
    g = moeperm::infer_outputs(g);  // permuted_tokens_grad [R, H], probs_grad [T, E]
    moeperm::unpermute_grad(g, {.unpermuted_tokens_grad = out_grad.data(),
                                .out_index = sorted_indices.data(),
                                .permute_token_id = sorted_indices.data(),
                                .routing_map = routing_map.data(),
                                .permuted_tokens = rows.data(),
                                .probs = probs.data(),
                                .permuted_tokens_grad_out = rows_grad.data(),
                                .probs_grad_out = probs_grad.data()});
  } catch (const moeperm::Error &e) {
    std::printf("%d: %s\n", static_cast<int>(e.code()), e.what());
    return 1;
  }
  // The probs of each token sum to 1: the layer returns its tokens; dP[t, e] = <x_t, 1>.
  std::printf("out = [%g %g] [%g %g] [%g %g]\n", out[0], out[1], out[2], out[3], out[4], out[5]);
  return out == tokens && probs_grad == std::vector<float>{3, 3, 7, 7, 11, 11} ? 0 : 1;
}
