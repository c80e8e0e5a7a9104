// 64-bit offsets: a problem whose permuted tensor has R*H > 2^31 elements runs correctly on
// the CPU backend, both modes, forward then backward (SPEC §5.6 sizes are int64 throughout).
// The data are chosen so every expected value is exact: tokens are multiples of 1/16 in
// [0, 4), and backward on the forward's own output gives count(t) * x[t] exactly in bf16.
#include <gtest/gtest.h>
#include <moeperm/moeperm.hpp>

#include <cstring>
#include <random>

#include "backend/elements.hpp"
#include "problem_model.hpp"

namespace {

using moeperm::DType;
using moeperm::detail::bf16_to_f32;
using moeperm::detail::f32_to_bf16;

constexpr int64_t kH = 65536;
constexpr int64_t kT = 8200;
constexpr int64_t kE = 4;

float token_value(int64_t t, int64_t h) {
  return static_cast<float>((t * 31 + h * 7) % 64) / 16.0f;
}

class Offsets64 : public ::testing::TestWithParam<bool> {};

TEST_P(Offsets64, ForwardAndBackwardPastTwoToThe31Elements) {
  const bool drop_and_pad = GetParam();
  const int64_t K = 4, C = 8200;  // R = T*K = E*C = 32800 rows
  const int64_t R = drop_and_pad ? kE * C : kT * K;
  ASSERT_GT(R * kH, int64_t{1} << 31);

  using moeperm::problem_model::make_tensor;
  auto tokens = make_tensor(DType::bf16, {kT, kH});
  auto *x = static_cast<uint16_t *>(tokens.data());
#pragma omp parallel for
  for (int64_t t = 0; t < kT; ++t)
    for (int64_t h = 0; h < kH; ++h) x[t * kH + h] = f32_to_bf16(token_value(t, h));
  // Every token routes to all E=4 experts except a deterministic few with fewer.
  auto map = make_tensor(DType::boolean, {kT, kE}, {}, std::byte{0});
  auto *m = static_cast<uint8_t *>(map.data());
  for (int64_t t = 0; t < kT; ++t)
    for (int64_t e = 0; e < kE; ++e) m[t * kE + e] = (t % 7 == 3 && e == t % kE) ? 0 : 1;

  auto permuted = make_tensor(DType::bf16, {R, kH});
  auto sorted = make_tensor(DType::i32, {R});
  moeperm::PermuteDesc fd;
  fd.tokens = tokens.desc, fd.routing_map = map.desc, fd.num_out_tokens = R;
  fd.drop_and_pad = drop_and_pad, fd.permuted_tokens = permuted.desc,
  fd.sorted_indices = sorted.desc;
  moeperm::PermuteData fdata{tokens.data(),   map.data(), nullptr,
                             permuted.data(), nullptr,    sorted.data()};
  moeperm::permute(fd, fdata, {moeperm::Backend::cpu});

  // Indices and the last rows (whose element offsets exceed 2^31) against the rule itself.
  const auto *s = static_cast<const int32_t *>(sorted.data());
  const auto *y = static_cast<const uint16_t *>(permuted.data());
  std::vector<int64_t> count(kT, 0);
  for (int64_t j = 0; j < R; ++j) {
    ASSERT_GE(s[j], drop_and_pad ? 0 : -1) << "j=" << j;
    if (s[j] >= 0) {
      const int64_t row = drop_and_pad ? j : s[j];
      const int64_t t = drop_and_pad ? s[j] : j / K;
      ++count[t];
      if (j % 997 == 0 || j >= R - 3) {
        for (int64_t h = 0; h < kH; h += 251) {
          ASSERT_EQ(bf16_to_f32(y[row * kH + h]), token_value(t, h)) << "row " << row << " h " << h;
        }
      }
    }
  }

  // Backward on the forward's output: tokensGrad[t] = count(t) * x[t], exact.
  auto grad_out = make_tensor(DType::bf16, {kT, kH});
  moeperm::PermuteGradDesc gd;
  gd.permuted_token_output_grad = permuted.desc, gd.sorted_indices = sorted.desc;
  gd.num_experts = kE, gd.tokens_num = kT, gd.drop_and_pad = drop_and_pad;
  gd.tokens_grad_out = grad_out.desc;
  moeperm::PermuteGradData gdata{permuted.data(), nullptr,         sorted.data(),
                                 nullptr,         grad_out.data(), nullptr};
  moeperm::permute_grad(gd, gdata, {moeperm::Backend::cpu});
  const auto *g = static_cast<const uint16_t *>(grad_out.data());
  int64_t bad = 0;
#pragma omp parallel for reduction(+ : bad)
  for (int64_t t = 0; t < kT; ++t)
    for (int64_t h = 0; h < kH; ++h)
      bad += bf16_to_f32(g[t * kH + h]) !=
             static_cast<float>(count[static_cast<size_t>(t)]) * token_value(t, h);
  EXPECT_EQ(bad, 0);
}

INSTANTIATE_TEST_SUITE_P(BothModes, Offsets64, ::testing::Values(false, true),
                         [](const auto &param_info) {
                           return param_info.param ? "drop_and_pad" : "dropless";
                         });

}  // namespace
