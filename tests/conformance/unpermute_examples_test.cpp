// The unpermute pair (SPEC-unpermute U1-U5), first cases: hand-worked examples with every
// expected number written out (drop-less with and without probs, a token with fewer than K
// experts, a zero prob masking a NaN row, drop-and-pad with its side outputs, and both
// Grad modes with U3's dot products), U5's identity with the permute Grad on a random
// bf16 problem, and U4's presence rules. Outputs are poisoned (NaN / 0x5A5A5A5A) first.
// Every case runs on each host backend (the reference, and the CPU backend once per ISA
// variant: its row kernels and dot products differ per variant) and checks that the plan
// ran there; the data are host vectors, so device backends run the pair in the conformance
// suites that move problems to the device.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "backend_matrix.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();
constexpr int32_t kPoisonIndex = 0x5A5A5A5A;

TensorDesc f32(std::vector<int64_t> shape) { return TensorDesc::contiguous(DType::f32, shape); }
TensorDesc i32(std::vector<int64_t> shape) { return TensorDesc::contiguous(DType::i32, shape); }

// Bitwise equality of float vectors (NaN equal to NaN, +0 not equal to -0).
void expect_bits(const std::vector<float> &got, const std::vector<float> &want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    EXPECT_EQ(a, b) << "element " << i << ": " << got[i] << " vs " << want[i];
  }
}

struct Forward {
  Backend backend = Backend::automatic;
  std::vector<float> x, probs, out, permute_probs;
  std::vector<int32_t> s, out_index, token_id;
  std::vector<int8_t> map;
  UnpermuteDesc d;

  void run() {
    d = infer_outputs(d);
    out.assign(static_cast<size_t>(d.unpermuted_tokens.shape[0] * d.unpermuted_tokens.shape[1]),
               kNaN);
    const auto R = static_cast<size_t>(d.permuted_tokens.shape[0]);
    out_index.assign(R, kPoisonIndex), token_id.assign(R, kPoisonIndex);
    permute_probs.assign(R, kNaN);
    d.out_index = i32({static_cast<int64_t>(R)});
    d.permute_token_id = i32({static_cast<int64_t>(R)});
    if (!d.permute_probs) d.permute_probs = f32({static_cast<int64_t>(R)});  // zero-filled
    const Plan plan = plan_unpermute(d, {.backend = backend});
    expect_planned_on(plan, backend);
    std::vector<std::byte> ws(plan.workspace_bytes());
    moeperm::run(plan,
                 UnpermuteData{x.data(), s.data(), d.routing_map ? map.data() : nullptr,
                               d.probs ? probs.data() : nullptr, out.data(), out_index.data(),
                               token_id.data(), permute_probs.data()},
                 ws);
  }
};

class UnpermuteExample : public BackendCase<> {};

TEST_P(UnpermuteExample, DroplessWithoutProbsSumsEachTokensRows) {
  Forward f;
  f.backend = backend();  // T = 2, K = 2, H = 2: slot t*K + k holds row S[t*K + k]
  f.x = {1, 2, 3, 4, 5, 6, 7, 8};
  f.s = {0, 2, 1, -1};
  f.d.permuted_tokens = f32({4, 2});
  f.d.sorted_indices = i32({4});
  f.d.restore_shape = std::vector<int64_t>{2, 2};
  f.run();
  expect_bits(f.out, {1 + 5, 2 + 6, 3, 4});  // token 1's second slot is -1
  EXPECT_EQ(f.out_index, (std::vector<int32_t>{0, 2, 1, -1}));
  EXPECT_EQ(f.token_id, (std::vector<int32_t>{0, 0, 1, 1}));
  expect_bits(f.permute_probs, {0, 0, 0, 0});
}

TEST_P(UnpermuteExample, DroplessWithProbsWeighsSkipsZeroProbsAndMissingExperts) {
  Forward f;
  f.backend =
      backend();  // T = 2, E = 3, K = 2, H = 2; token 0 -> experts {0, 2}, token 1 -> {1} only
  f.x = {1, 2, 3, 4, 5, 6, kNaN, kNaN};  // slot 3 (token 1, k = 1) has no expert: q = 0
  f.s = {0, 1, 2, 3};
  f.map = {1, 0, 1, 0, 1, 0};
  f.probs = {0.5f, 9, 0.25f, 9, 2, 9};
  f.d.permuted_tokens = f32({4, 2});
  f.d.sorted_indices = i32({4});
  f.d.routing_map = TensorDesc::contiguous(DType::i8, {2, 3});
  f.d.probs = f32({2, 3});
  f.run();
  expect_bits(f.out, {1 * 0.5f + 3 * 0.25f, 2 * 0.5f + 4 * 0.25f, 5 * 2.0f, 6 * 2.0f});
  expect_bits(f.permute_probs, {0.5f, 0.25f, 2, 0});
  EXPECT_EQ(f.token_id, (std::vector<int32_t>{0, 0, 1, 1}));

  // An exact zero prob masks its row, NaN included (CANN skips the slot).
  f.probs[2] = 0;
  f.x[2] = f.x[3] = kNaN;
  f.d.permute_probs.reset();
  f.run();
  expect_bits(f.out, {0.5f, 1.0f, 10, 12});
}

TEST_P(UnpermuteExample, DropAndPadWeighsEveryRowAndSortsItsIndices) {
  Forward f;
  f.backend = backend();  // E = 2, C = 2, R = 4, T = 3, H = 1; S holds each row's token
  f.x = {1, 2, 3, 4};
  f.s = {2, 0, 0, 1};
  f.probs = {2, 3, 9, 4, 0.5f, 9};  // P[t][e]: rows of expert 0 are j = 0, 1; of 1, j = 2, 3
  f.d.permuted_tokens = f32({4, 1});
  f.d.sorted_indices = i32({4});
  f.d.probs = f32({3, 2});
  f.d.padded_mode = true;
  f.run();
  // Y = [1 * P[2][0], 2 * P[0][0], 3 * P[0][1], 4 * P[1][1]] = [0.5, 4, 9, 16].
  expect_bits(f.out, {4 + 9, 16, 0.5f});
  EXPECT_EQ(f.token_id, (std::vector<int32_t>{0, 0, 1, 2}));   // S sorted
  EXPECT_EQ(f.out_index, (std::vector<int32_t>{1, 2, 3, 0}));  // its stable argsort
  expect_bits(f.permute_probs, {0.5f, 2, 3, 4});
}

struct Backward {
  Backend backend = Backend::automatic;
  std::vector<float> g, x, probs, dx, dp;
  std::vector<int32_t> o, i;
  std::vector<int8_t> map;
  UnpermuteGradDesc d;

  void run() {
    d = infer_outputs(d);
    dx.assign(static_cast<size_t>(d.permuted_tokens_grad_out.shape[0] *
                                  d.permuted_tokens_grad_out.shape[1]),
              kNaN);
    if (d.probs_grad_out)
      dp.assign(static_cast<size_t>(d.probs_grad_out->shape[0] * d.probs_grad_out->shape[1]), kNaN);
    const Plan plan = plan_unpermute_grad(d, {.backend = backend});
    expect_planned_on(plan, backend);
    std::vector<std::byte> ws(plan.workspace_bytes());
    moeperm::run(plan,
                 UnpermuteGradData{g.data(), o.data(), i.data(), map.empty() ? nullptr : map.data(),
                                   x.empty() ? nullptr : x.data(), d.probs ? probs.data() : nullptr,
                                   dx.data(), d.probs_grad_out ? dp.data() : nullptr},
                 ws);
  }
};

class UnpermuteGradExample : public BackendCase<> {};

TEST_P(UnpermuteGradExample, DroplessWithProbsScalesRowsAndTakesDotProducts) {
  Backward b;
  b.backend = backend();  // the forward example above: T = 2, E = 3, K = 2, H = 2
  b.g = {1, 1, 2, 3};
  b.x = {1, 2, 3, 4, 5, 6, kNaN, kNaN};
  b.o = {0, 1, 2, 3};
  b.i = {0, 0, 1, 1};
  b.map = {1, 0, 1, 0, 1, 0};
  b.probs = {0.5f, 9, 0.25f, 9, 2, 9};
  b.d.unpermuted_tokens_grad = f32({2, 2});
  b.d.out_index = i32({4});
  b.d.permute_token_id = i32({4});
  b.d.routing_map = TensorDesc::contiguous(DType::i8, {2, 3});
  b.d.permuted_tokens = f32({4, 2});
  b.d.probs = f32({2, 3});
  b.run();
  // dX[r] = G[t] * p (p = 0 for token 1's second slot, which has no expert).
  expect_bits(b.dx, {0.5f, 0.5f, 0.25f, 0.25f, 4, 6, 0, 0});
  // dP[t][e_k(t)] = dot(X[r], G[t]); every other entry 0 (the NaN row has no dP entry).
  expect_bits(b.dp, {1 + 2, 0, 3 + 4, 0, 10 + 18, 0});
}

TEST_P(UnpermuteGradExample, DropAndPadWithoutProbsCopiesRowsBack) {
  Backward b;
  b.backend = backend();  // the drop-and-pad forward above: its outIndex and permuteTokenId
  b.g = {10, 20, 30};
  b.o = {1, 2, 3, 0};
  b.i = {0, 0, 1, 2};
  b.d.unpermuted_tokens_grad = f32({3, 1});
  b.d.out_index = i32({4});
  b.d.permute_token_id = i32({4});
  b.d.drop_and_pad = true;
  b.run();
  expect_bits(b.dx, {30, 10, 10, 20});  // dX[O[i]] = G[I[i]]
}

TEST_P(UnpermuteGradExample, DotProductsFollowU3sOrder) {
  // H = 70: partial sums over h = l, l + 32, l + 64, then halving. Values chosen so that
  // the order matters in fp32: a large term and small ones.
  Backward b;
  b.backend = backend();
  const int64_t H = 70;
  b.g.assign(H, 1.0f);
  b.x.resize(H);
  for (int64_t h = 0; h < H; ++h) b.x[static_cast<size_t>(h)] = h == 0 ? 1.0e8f : 1.0f + h;
  b.o = {0};
  b.i = {0};
  b.map = {1};
  b.probs = {1.0f};
  b.d.unpermuted_tokens_grad = f32({1, H});
  b.d.out_index = i32({1});
  b.d.permute_token_id = i32({1});
  b.d.routing_map = TensorDesc::contiguous(DType::i8, {1, 1});
  b.d.permuted_tokens = f32({1, H});
  b.d.probs = f32({1, 1});
  b.run();
  float part[32] = {};
  for (int64_t h = 0; h < H; ++h)
    part[h % 32] = std::fma(b.x[static_cast<size_t>(h)], 1.0f, part[h % 32]);
  for (int w = 16; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) part[l] += part[l + w];
  expect_bits(b.dp, {part[0]});
}

// U5: without probs, the unpermute is the permute Grad's tokens gradient, bit for bit.
class UnpermuteRelations : public BackendCase<> {};

TEST_P(UnpermuteRelations, WithoutProbsEqualsThePermuteGradsTokensGradient) {
  const int64_t T = 37, K = 3, H = 21, R = T * K;
  std::mt19937 rng(5);
  std::vector<uint16_t> x(static_cast<size_t>(R * H));
  for (auto &v : x) v = static_cast<uint16_t>(0x3c00 + rng() % 0x0800);  // bf16 in [1, 256)
  std::vector<int32_t> s(static_cast<size_t>(R));
  std::vector<int32_t> rows(static_cast<size_t>(R));
  for (int32_t r = 0; r < R; ++r) rows[static_cast<size_t>(r)] = r;
  std::shuffle(rows.begin(), rows.end(), rng);
  for (int64_t i = 0; i < R; ++i) s[static_cast<size_t>(i)] = rng() % 7 == 0 ? -1 : rows[i];

  UnpermuteDesc u;
  u.permuted_tokens = TensorDesc::contiguous(DType::bf16, {R, H});
  u.sorted_indices = i32({R});
  u.restore_shape = std::vector<int64_t>{T, H};
  u = infer_outputs(u);
  std::vector<uint16_t> out(static_cast<size_t>(T * H), 0x7fc1);
  unpermute(u, UnpermuteData{x.data(), s.data(), nullptr, nullptr, out.data()},
            {.backend = backend()});

  PermuteGradDesc g;
  g.permuted_token_output_grad = TensorDesc::contiguous(DType::bf16, {R, H});
  g.sorted_indices = i32({R});
  g.num_experts = 4, g.tokens_num = T;
  g = infer_outputs(g);
  std::vector<uint16_t> want(static_cast<size_t>(T * H), 0x7fc2);
  permute_grad(g, PermuteGradData{x.data(), nullptr, s.data(), nullptr, want.data()},
               {.backend = backend()});
  EXPECT_EQ(out, want);
}

template <class F>
std::pair<Code, std::string> error_of(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return {e.code(), e.what()};
  }
  return {Code::ok, ""};
}

class UnpermuteRules : public BackendCase<> {};

TEST_P(UnpermuteRules, PresenceIndexAndTilingRules) {
  UnpermuteDesc u;
  u.permuted_tokens = f32({4, 2});
  u.sorted_indices = i32({4});
  u.unpermuted_tokens = f32({2, 2});
  EXPECT_EQ(error_of([&] { (void)plan_unpermute(u); }),
            std::make_pair(Code::null_pointer,
                           std::string("aclnnMoeTokenUnpermuteWithRoutingMap: probsOptional and "
                                       "restoreShapeOptional must not both be null")));
  u.probs = f32({2, 3});
  EXPECT_EQ(error_of([&] { (void)plan_unpermute(u); }),
            std::make_pair(Code::null_pointer,
                           std::string("aclnnMoeTokenUnpermuteWithRoutingMap: routingMapOptional "
                                       "must not be null when probsOptional is given "
                                       "(paddedMode=false)")));
  u.padded_mode = true;  // drop-and-pad reads no map: R = 4 is not divisible by E = 3
  EXPECT_EQ(error_of([&] { (void)plan_unpermute(u); }).first, Code::invalid_param);

  UnpermuteGradDesc g;
  g.unpermuted_tokens_grad = f32({2, 2});
  g.out_index = i32({4});
  g.permute_token_id = i32({3});
  g.permuted_tokens_grad_out = f32({4, 2});
  EXPECT_EQ(error_of([&] { (void)plan_unpermute_grad(g); }),
            std::make_pair(Code::tiling_error,
                           std::string("aclnnMoeTokenUnpermuteWithRoutingMapGrad: outIndex and "
                                       "permuteTokenId must have the same length, got 4 and 3")));
  g.permute_token_id = i32({4});
  g.unpermuted_tokens_grad = f32({2, 2, 1});  // the Grad's ranks are CANN's tiling rejection
  EXPECT_EQ(error_of([&] { (void)plan_unpermute_grad(g); }).first, Code::tiling_error);
  g.unpermuted_tokens_grad = f32({2, 2});
  g.probs = f32({2, 3});
  g.routing_map = TensorDesc::contiguous(DType::boolean, {2, 3});
  g.probs_grad_out = f32({2, 3});
  EXPECT_EQ(error_of([&] { (void)plan_unpermute_grad(g); }),
            std::make_pair(Code::null_pointer,
                           std::string("aclnnMoeTokenUnpermuteWithRoutingMapGrad: "
                                       "permutedTokensOptional must not be null when "
                                       "probsGradOutOptional and probsOptional are given")));

  // A row of dX named twice is refused before anything is written.
  Backward b;
  b.backend = backend();
  b.g = {1, 1, 2, 3};
  b.o = {0, 1, 1, 3};
  b.i = {0, 0, 1, 1};
  b.d.unpermuted_tokens_grad = f32({2, 2});
  b.d.out_index = i32({4});
  b.d.permute_token_id = i32({4});
  const auto [code, message] = error_of([&] { b.run(); });
  EXPECT_EQ(code, Code::invalid_param);
  EXPECT_EQ(message,
            "aclnnMoeTokenUnpermuteWithRoutingMapGrad: outIndex[2] = 1 names the same row as "
            "outIndex[1] (each row may be named once); nothing was written");
  for (float v : b.dx) EXPECT_TRUE(std::isnan(v));
}

const auto kHostConfigs =
    ::testing::ValuesIn(backend_configs(Matrix::isas, {.reference = true, .devices = false}));
INSTANTIATE_TEST_SUITE_P(Hosts, UnpermuteExample, kHostConfigs, ConfigName);
INSTANTIATE_TEST_SUITE_P(Hosts, UnpermuteGradExample, kHostConfigs, ConfigName);
INSTANTIATE_TEST_SUITE_P(Hosts, UnpermuteRelations, kHostConfigs, ConfigName);
INSTANTIATE_TEST_SUITE_P(Hosts, UnpermuteRules, kHostConfigs, ConfigName);

}  // namespace
}  // namespace moeperm::testing
