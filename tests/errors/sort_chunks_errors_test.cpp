// The chunk sort pair's validation (docs/sort_chunks.md): each planning rule broken once,
// with its status and a message that names the operator, the argument, the expectation and
// the value; and the data rules of the second phase (split_sizes, then sorted_index) on
// every host backend, which write nothing when they fail.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "backend_matrix.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

constexpr int64_t T = 7, H = 3, S = 4;

TensorDesc desc(DType dt, std::vector<int64_t> shape) { return TensorDesc::contiguous(dt, shape); }

// n int32 values that are all one element of memory (stride 0).
TensorDesc repeated(int64_t n) {
  TensorDesc d = desc(DType::i32, {n});
  d.strides = {0};
  return d;
}

SortChunksDesc valid() {
  return {.tokens = desc(DType::bf16, {T, H}),
          .split_sizes = desc(DType::i32, {S}),
          .sorted_index = desc(DType::i32, {S}),
          .probs = desc(DType::f32, {T}),
          .sorted_tokens = desc(DType::bf16, {T, H}),
          .sorted_probs = desc(DType::f32, {T})};
}

SortChunksGradDesc valid_grad() {
  return {.sorted_tokens_grad = desc(DType::f16, {T, H}),
          .split_sizes = desc(DType::i32, {S}),
          .sorted_index = desc(DType::i32, {S}),
          .sorted_probs_grad = desc(DType::bf16, {T}),
          .tokens_grad = desc(DType::f16, {T, H}),
          .probs_grad = desc(DType::bf16, {T})};
}

const std::string kF = "moeperm::sort_chunks: ", kB = "moeperm::sort_chunks_grad: ";

struct Row {
  const char *name;
  std::function<void(SortChunksDesc &)> mutate;
  Code code;
  std::string message;
};

TEST(SortChunksErrors, ValidDescriptionsPlan) {
  const Plan p = plan_sort_chunks(valid());
  EXPECT_EQ(p.sizes().tokens, T);
  EXPECT_EQ(p.sizes().chunks, S);
  EXPECT_NO_THROW(plan_sort_chunks_grad(valid_grad()));
  const SortChunksDesc inferred = infer_outputs(valid());
  EXPECT_EQ(inferred.sorted_tokens.shape, (std::vector<int64_t>{T, H}));
  ASSERT_TRUE(inferred.sorted_probs);
  EXPECT_EQ(inferred.sorted_probs->dtype, DType::f32);
}

TEST(SortChunksErrors, PlanningRules) {
  const Row rows[] = {
      {"probs without their output", [](auto &d) { d.sorted_probs.reset(); }, Code::null_pointer,
       kF + "sorted_probs must not be null when probs is given"},
      {"int64 split sizes", [](auto &d) { d.split_sizes.dtype = DType::i64; }, Code::invalid_param,
       kF + "split_sizes must have dtype int32, got int64"},
      {"float order", [](auto &d) { d.sorted_index.dtype = DType::f32; }, Code::invalid_param,
       kF + "sorted_index must have dtype int32, got float32"},
      {"integer tokens", [](auto &d) { d.tokens.dtype = DType::i32; }, Code::invalid_param,
       kF + "tokens must have dtype bfloat16, float16 or float32, got int32"},
      {"probs dtype out", [](auto &d) { d.sorted_probs->dtype = DType::bf16; }, Code::invalid_param,
       kF + "sorted_probs must have dtype float32"},
      {"1-D tokens", [](auto &d) { d.tokens.shape = {T}; }, Code::invalid_param,
       kF + "tokens: expected 2-D, got 1-D [7]"},
      {"order length", [](auto &d) { d.sorted_index.shape = {S + 1}; }, Code::invalid_param,
       kF + "sorted_index has length 5, expected 4 (one per chunk of split_sizes)"},
      {"probs length", [](auto &d) { d.probs->shape = {T + 1}; }, Code::invalid_param,
       kF + "probs has length 8, expected 7 (one per row)"},
      {"output rows",
       [](auto &d) {
         d.sorted_tokens.shape = {T - 1, H};
       },
       Code::invalid_param, kF + "sorted_tokens has shape [6, 3], expected [7, 3] (the rows in)"},
  };
  for (const Row &row : rows) {
    SortChunksDesc d = valid();
    row.mutate(d);
    const Failure f = failure_of([&] { plan_sort_chunks(d); });
    EXPECT_EQ(f.code, row.code) << row.name << ": " << f.message;
    EXPECT_NE(f.message.find(row.message), std::string::npos) << row.name << ": " << f.message;
  }
  SortChunksGradDesc g = valid_grad();
  g.probs_grad.reset();
  const Failure f = failure_of([&] { plan_sort_chunks_grad(g); });
  EXPECT_EQ(f.code, Code::null_pointer);
  EXPECT_NE(f.message.find(kB + "probs_grad must not be null when sorted_probs_grad is given"),
            std::string::npos)
      << f.message;
}

// sorted_index is int32: more than 2^31 chunks cannot be a permutation, so planning says so
// before any backend sizes per-chunk work by S. Stride 0 makes such views a few bytes long.
TEST(SortChunksErrors, MoreChunksThanInt32CanNameFailAtPlanTime) {
  constexpr int64_t kMost = int64_t{1} << 31;
  for (int64_t chunks : {kMost + 1, int64_t{1} << 62}) {
    SortChunksDesc d = valid();
    d.split_sizes = repeated(chunks);
    d.sorted_index = d.split_sizes;
    const Failure f = failure_of([&] { plan_sort_chunks(d); });
    EXPECT_EQ(f.code, Code::invalid_param);
    EXPECT_NE(f.message.find(kF + "split_sizes has " + std::to_string(chunks) +
                             " chunks, but sorted_index is int32 and can name at most 2147483648"),
              std::string::npos)
        << f.message;
  }
  SortChunksGradDesc g = valid_grad();
  g.split_sizes = repeated(kMost);
  g.sorted_index = g.split_sizes;
  EXPECT_EQ(plan_sort_chunks_grad(g, {.backend = Backend::cpu}).sizes().chunks, kMost);
}

// S = 2^24 chunks in one int32 each (stride 0) and no rows: the empty problem runs on the
// reference, which must report the repeat at sorted_index[1] (it sizes nothing by S until the
// rules pass; tests/fuzz/regressions/crash-sort-chunks-more-chunks-than-int32 is the input
// that made it allocate 4 GiB).
TEST(SortChunksErrors, ChunksRepeatedByAZeroStrideFailOnTheFirstRepeat) {
  const int64_t chunks = int64_t{1} << 24;
  const TensorDesc one_value = repeated(chunks);
  const SortChunksDesc d{.tokens = desc(DType::f32, {0, H}),
                         .split_sizes = one_value,
                         .sorted_index = one_value,
                         .probs = std::nullopt,
                         .sorted_tokens = desc(DType::f32, {0, H}),
                         .sorted_probs = std::nullopt};
  int32_t zero = 0;
  float row = 0;
  const Failure f = failure_of([&] {
    sort_chunks(d, {&row, &zero, &zero, nullptr, &row, nullptr});
  });
  EXPECT_EQ(f.code, Code::invalid_param);
  EXPECT_NE(f.message.find(kF + "sorted_index[1] = 0 names the same chunk as sorted_index[0]"),
            std::string::npos)
      << f.message;
}

// The second phase's data rules, on every host backend: nothing is written on failure.
class SortChunksDataErrors : public BackendCase<> {
 protected:
  // Runs both operators on `sizes` and `order`; each must fail with `message` and leave its
  // outputs as they were.
  void expect_failure(std::vector<int32_t> sizes, std::vector<int32_t> order,
                      const std::string &message) {
    std::vector<uint16_t> x(T * H, 0x3f80), y(T * H, 0xA5A5);
    std::vector<float> probs(T, 0.5f), yp(T, -7.0f);
    const Failure f = failure_of([&] {
      sort_chunks(valid(),
                  {x.data(), sizes.data(), order.data(), probs.data(), y.data(), yp.data()},
                  {.backend = backend()});
    });
    EXPECT_EQ(f.code, Code::invalid_param);
    EXPECT_NE(f.message.find(kF + message), std::string::npos) << f.message;
    EXPECT_EQ(y, std::vector<uint16_t>(T * H, 0xA5A5)) << "written before the check";
    EXPECT_EQ(yp, std::vector<float>(T, -7.0f)) << "written before the check";
    std::vector<uint16_t> gp(T, 0x3f80), pg(T, 0xA5A5);
    const Failure b = failure_of([&] {
      sort_chunks_grad(valid_grad(),
                       {x.data(), sizes.data(), order.data(), gp.data(), y.data(), pg.data()},
                       {.backend = backend()});
    });
    EXPECT_NE(b.message.find(kB + message), std::string::npos) << b.message;
    EXPECT_EQ(y, std::vector<uint16_t>(T * H, 0xA5A5)) << "written before the check";
    EXPECT_EQ(pg, std::vector<uint16_t>(T, 0xA5A5)) << "written before the check";
  }
};

TEST_P(SortChunksDataErrors, NegativeSplitSize) {
  expect_failure({3, -1, 4, 1}, {0, 1, 2, 3},
                 "split_sizes[1] = -1 is negative (a chunk has >= 0 rows); nothing was written");
}

TEST_P(SortChunksDataErrors, SplitSizesThatDoNotCoverTheRows) {
  expect_failure({3, 0, 4, 1}, {0, 1, 2, 3}, "split_sizes sums to 8, but ");
  expect_failure({1, 0, 4, 1}, {0, 1, 2, 3}, "split_sizes sums to 6, but ");
}

TEST_P(SortChunksDataErrors, OrderOutsideTheChunks) {
  expect_failure({3, 0, 3, 1}, {0, 4, 2, 1},
                 "sorted_index[1] = 4 is outside [0, 4) (S=4); nothing was written");
  expect_failure({3, 0, 3, 1}, {0, 1, -1, 3}, "sorted_index[2] = -1 is outside [0, 4) (S=4)");
}

TEST_P(SortChunksDataErrors, ChunkNamedTwice) {
  expect_failure({3, 0, 3, 1}, {2, 1, 2, 3},
                 "sorted_index[2] = 2 names the same chunk as sorted_index[0] (each chunk may "
                 "be named once); nothing was written");
}

TEST_P(SortChunksDataErrors, ValidDataRuns) {
  std::vector<uint16_t> x(T * H), y(T * H, 0xA5A5);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint16_t>(0x3f80 + i);
  std::vector<float> probs(T), yp(T, -7.0f);
  for (int t = 0; t < T; ++t) probs[static_cast<size_t>(t)] = static_cast<float>(t);
  std::vector<int32_t> sizes = {3, 0, 3, 1}, order = {3, 2, 1, 0};
  sort_chunks(valid(), {x.data(), sizes.data(), order.data(), probs.data(), y.data(), yp.data()},
              {.backend = backend()});
  // Chunk 3 (row 6), chunk 2 (rows 3-5), chunk 1 (empty), chunk 0 (rows 0-2).
  EXPECT_EQ(yp, (std::vector<float>{6, 3, 4, 5, 0, 1, 2}));
  for (int64_t h = 0; h < H; ++h)
    EXPECT_EQ(y[static_cast<size_t>(h)], x[static_cast<size_t>(6 * H + h)]);
}

INSTANTIATE_TEST_SUITE_P(Hosts, SortChunksDataErrors,
                         ::testing::ValuesIn(backend_configs(Matrix::isas, {.reference = true,
                                                                            .devices = false})),
                         ConfigName);

}  // namespace
}  // namespace moeperm::testing
