// The ragged pair's validation (docs/ragged.md): each planning rule broken once, in the
// order the descriptions check them, with its status and a message that names the
// operator, the argument, the expectation and the value; and the data rules of the second
// phase on every host backend, which write nothing when they fail.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "backend_matrix.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

constexpr int64_t T = 4, E = 3, H = 5, R = 6;

TensorDesc desc(DType dt, std::vector<int64_t> shape) { return TensorDesc::contiguous(dt, shape); }

RaggedPermuteDesc valid_permute() {
  RaggedPermuteDesc d;
  d.tokens = desc(DType::bf16, {T, H});
  d.routing_map = desc(DType::i32, {T, E});
  d.probs = desc(DType::f32, {T, E});
  d.num_out_tokens = R;
  d.permuted_tokens = desc(DType::bf16, {R, H});
  d.permuted_probs = desc(DType::f32, {R});
  d.sorted_indices = desc(DType::i32, {R});
  return d;
}

RaggedUnpermuteDesc valid_unpermute() {
  RaggedUnpermuteDesc d;
  d.permuted_tokens = desc(DType::f16, {R, H});
  d.sorted_indices = desc(DType::i32, {R});
  d.routing_map = desc(DType::u8, {T, E});
  d.probs = desc(DType::bf16, {T, E});
  d.unpermuted_tokens = desc(DType::f16, {T, H});
  return d;
}

struct PermuteRow {
  const char *name;
  std::function<void(RaggedPermuteDesc &)> mutate;
  Code code;
  std::string message;
};

struct UnpermuteRow {
  const char *name;
  std::function<void(RaggedUnpermuteDesc &)> mutate;
  Code code;
  std::string message;
};

const std::string kP = "moeperm::ragged_permute: ", kU = "moeperm::ragged_unpermute: ";

TEST(RaggedErrors, ValidDescriptionsPlan) {
  EXPECT_NO_THROW(plan_ragged_permute(valid_permute()));
  EXPECT_NO_THROW(plan_ragged_unpermute(valid_unpermute()));
  RaggedPermuteDesc p = valid_permute();
  p.drop_and_pad = true;  // C = 2
  EXPECT_EQ(plan_ragged_permute(p).sizes().capacity, 2);
}

TEST(RaggedErrors, PermuteRules) {
  const PermuteRow rows[] = {
      {"negative rows", [](auto &d) { d.num_out_tokens = -1; }, Code::invalid_param,
       kP + "num_out_tokens must be >= 0, got -1"},
      {"probs without their output", [](auto &d) { d.permuted_probs.reset(); }, Code::null_pointer,
       kP + "permuted_probs must not be null when probs is given"},
      {"float map", [](auto &d) { d.routing_map.dtype = DType::f32; }, Code::invalid_param,
       kP + "routing_map must have dtype bool, int8, uint8 or int32, got float32"},
      {"integer probs", [](auto &d) { d.probs->dtype = DType::i32; }, Code::invalid_param,
       kP + "probs must have dtype bfloat16, float16 or float32, got int32"},
      {"output dtype", [](auto &d) { d.permuted_tokens.dtype = DType::f32; }, Code::invalid_param,
       kP + "permuted_tokens must have dtype bfloat16 (the dtype of tokens), got float32"},
      {"map rows",
       [](auto &d) {
         d.routing_map.shape = {T + 1, E};
       },
       Code::invalid_param,
       kP + "routing_map has shape [5, 3], expected [4, experts] (its rows are the tokens)"},
      {"probs shape",
       [](auto &d) {
         d.probs->shape = {T, E + 1};
       },
       Code::invalid_param,
       kP + "probs has shape [4, 4], expected [4, 3] (the shape of routing_map)"},
      {"rows not a multiple of E",
       [](auto &d) {
         d.drop_and_pad = true;
         d.num_out_tokens = 7;
       },
       Code::invalid_param,
       kP + "num_out_tokens = 7 is not a multiple of the 3 experts (drop_and_pad=true"},
      {"output rows", [](auto &d) { d.sorted_indices.shape = {R + 1}; }, Code::invalid_param,
       kP + "sorted_indices has length 7, expected 6 (num_out_tokens = 6)"},
  };
  for (const PermuteRow &row : rows) {
    RaggedPermuteDesc d = valid_permute();
    row.mutate(d);
    const Failure f = failure_of([&] { plan_ragged_permute(d); });
    EXPECT_EQ(f.code, row.code) << row.name << ": " << f.message;
    EXPECT_NE(f.message.find(row.message), std::string::npos) << row.name << ": " << f.message;
  }
}

TEST(RaggedErrors, UnpermuteRules) {
  const UnpermuteRow rows[] = {
      {"no way to know T",
       [](auto &d) {
         d.probs.reset();
         d.restore_shape.reset();
       },
       Code::null_pointer, kU + "probs and restore_shape must not both be null"},
      {"drop-less probs without the map", [](auto &d) { d.routing_map.reset(); },
       Code::null_pointer,
       kU + "routing_map must not be null when probs is given (drop_and_pad=false)"},
      {"index dtype", [](auto &d) { d.sorted_indices.dtype = DType::i64; }, Code::invalid_param,
       kU + "sorted_indices must have dtype int32, got int64"},
      {"map shape",
       [](auto &d) {
         d.routing_map->shape = {T, E + 2};
       },
       Code::invalid_param, kU + "routing_map has shape [4, 5], expected [4, 3] (tokens, experts)"},
      {"restore shape",
       [](auto &d) {
         d.restore_shape = std::vector<int64_t>{T, H + 1};
       },
       Code::invalid_param, "restore_shape"},
      {"rows not a multiple of E",
       [](auto &d) {
         d.drop_and_pad = true;
         d.permuted_tokens.shape = {7, H};
         d.sorted_indices.shape = {7};
       },
       Code::invalid_param, kU + "permuted_tokens has 7 rows, which is not a multiple of the 3"},
  };
  for (const UnpermuteRow &row : rows) {
    RaggedUnpermuteDesc d = valid_unpermute();
    row.mutate(d);
    const Failure f = failure_of([&] { plan_ragged_unpermute(d); });
    EXPECT_EQ(f.code, row.code) << row.name << ": " << f.message;
    EXPECT_NE(f.message.find(row.message), std::string::npos) << row.name << ": " << f.message;
  }
}

RaggedPermuteGradDesc valid_permute_grad() {
  RaggedPermuteGradDesc d;
  d.permuted_tokens_grad = desc(DType::bf16, {R, H});
  d.permuted_probs_grad = desc(DType::f32, {R});
  d.sorted_indices = desc(DType::i32, {R});
  d.routing_map = desc(DType::boolean, {T, E});
  d.num_tokens = T;
  d.tokens_grad = desc(DType::bf16, {T, H});
  d.probs_grad = desc(DType::f32, {T, E});
  return d;
}

RaggedUnpermuteGradDesc valid_unpermute_grad() {
  RaggedUnpermuteGradDesc d;
  d.unpermuted_tokens_grad = desc(DType::f32, {T, H});
  d.sorted_indices = desc(DType::i32, {R});
  d.routing_map = desc(DType::i8, {T, E});
  d.permuted_tokens = desc(DType::f32, {R, H});
  d.probs = desc(DType::bf16, {T, E});
  d.permuted_tokens_grad = desc(DType::f32, {R, H});
  d.probs_grad = desc(DType::bf16, {T, E});
  return d;
}

template <class Desc, class Plan>
void expect_rules(
    Desc (*valid)(), Plan plan,
    const std::vector<std::tuple<const char *, std::function<void(Desc &)>, Code, std::string>>
        &rows) {
  EXPECT_NO_THROW(plan(valid()));
  for (const auto &[name, mutate, code, message] : rows) {
    Desc d = valid();
    mutate(d);
    const Failure f = failure_of([&] { plan(d); });
    EXPECT_EQ(f.code, code) << name << ": " << f.message;
    EXPECT_NE(f.message.find(message), std::string::npos) << name << ": " << f.message;
  }
}

TEST(RaggedErrors, PermuteGradRules) {
  const std::string api = "moeperm::ragged_permute_grad: ";
  expect_rules<RaggedPermuteGradDesc>(
      valid_permute_grad, [](const auto &d) { return plan_ragged_permute_grad(d); },
      {{"negative tokens", [](auto &d) { d.num_tokens = -1; }, Code::invalid_param,
        api + "num_tokens must be >= 0, got -1"},
       {"probs_grad without its input", [](auto &d) { d.permuted_probs_grad.reset(); },
        Code::null_pointer, api + "permuted_probs_grad must not be null when probs_grad is given"},
       {"probs_grad without the map", [](auto &d) { d.routing_map.reset(); }, Code::null_pointer,
        api + "routing_map must not be null when probs_grad is given"},
       {"output shape",
        [](auto &d) {
          d.tokens_grad.shape = {T, H + 1};
        },
        Code::invalid_param, api + "tokens_grad has shape [4, 6], expected [4, 5]"}});
}

TEST(RaggedErrors, UnpermuteGradRules) {
  const std::string api = "moeperm::ragged_unpermute_grad: ";
  expect_rules<RaggedUnpermuteGradDesc>(
      valid_unpermute_grad, [](const auto &d) { return plan_ragged_unpermute_grad(d); },
      {{"probs_grad without the forward's input", [](auto &d) { d.permuted_tokens.reset(); },
        Code::null_pointer, api + "permuted_tokens must not be null when probs_grad is given"},
       {"drop-less probs without the map", [](auto &d) { d.routing_map.reset(); },
        Code::null_pointer, api + "routing_map must not be null when probs is given"},
       {"output dtype", [](auto &d) { d.permuted_tokens_grad.dtype = DType::bf16; },
        Code::invalid_param,
        api + "permuted_tokens_grad must have dtype float32 (the dtype of "
              "unpermuted_tokens_grad), got bfloat16"},
       {"output rows",
        [](auto &d) {
          d.permuted_tokens_grad.shape = {R + 1, H};
        },
        Code::invalid_param, api + "permuted_tokens_grad has shape [7, 5], expected [6, 5]"}});
}

// The second phase's data rules, on every host backend: nothing is written on failure.
class RaggedDataErrors : public BackendCase<> {};

TEST_P(RaggedDataErrors, IndexOutsideTheTokensWritesNothing) {
  RaggedUnpermuteDesc d = valid_unpermute();
  std::vector<uint16_t> x(R * H, 0x3c00), probs(T * E, 0x3f80), out(T * H, 0xA5A5);
  std::vector<uint8_t> map(T * E, 1);
  for (const int32_t bad : {int32_t{T}, int32_t{-2}}) {
    std::vector<int32_t> s = {0, 1, -1, bad, 2, 3};
    const Failure f = failure_of([&] {
      ragged_unpermute(d, {x.data(), s.data(), map.data(), probs.data(), out.data()},
                       {.backend = backend()});
    });
    EXPECT_EQ(f.code, Code::invalid_param);
    EXPECT_NE(f.message.find(kU + "sorted_indices[3] = " + std::to_string(bad)), std::string::npos)
        << f.message;
    EXPECT_NE(f.message.find("[0, 4) or -1"), std::string::npos) << f.message;
    EXPECT_EQ(out, std::vector<uint16_t>(T * H, 0xA5A5)) << "written before the check";
  }
}

TEST_P(RaggedDataErrors, DroplessRowPastTheRoutedPairsWithProbs) {
  RaggedUnpermuteDesc d = valid_unpermute();
  std::vector<uint16_t> x(R * H, 0x3c00), probs(T * E, 0x3f80), out(T * H, 0xA5A5);
  std::vector<uint8_t> map(T * E, 0);
  map[0 * E + 1] = map[2 * E + 0] = 1;  // two pairs: rows 0 and 1
  std::vector<int32_t> s = {2, 0, -1, -1, 3, -1};
  const Failure f = failure_of([&] {
    ragged_unpermute(d, {x.data(), s.data(), map.data(), probs.data(), out.data()},
                     {.backend = backend()});
  });
  EXPECT_EQ(f.code, Code::invalid_param);
  EXPECT_NE(f.message.find(kU + "sorted_indices[4] = 3 names a token, but row 4 lies past the 2 "
                                "(token, expert) pairs routing_map routes"),
            std::string::npos)
      << f.message;
  EXPECT_EQ(out, std::vector<uint16_t>(T * H, 0xA5A5)) << "written before the check";
  // Without probs the rows need no expert: the same index is valid.
  d.probs.reset();
  d.routing_map.reset();
  d.restore_shape = std::vector<int64_t>{T, H};
  EXPECT_NO_THROW(ragged_unpermute(d, {x.data(), s.data(), nullptr, nullptr, out.data()},
                                   {.backend = backend()}));
}

TEST_P(RaggedDataErrors, GradsCheckTheIndexBeforeWriting) {
  std::vector<uint16_t> g(R * H, 0x3f80), gp(R, 0x3f80), tg(T * H, 0xA5A5), pg(T * E, 0xA5A5);
  std::vector<uint8_t> map(T * E, 1);
  std::vector<int32_t> s = {0, 1, 2, 3, T, -1};
  RaggedPermuteGradDesc d = valid_permute_grad();
  d.permuted_probs_grad->dtype = DType::bf16;
  d.probs_grad->dtype = DType::bf16;
  const Failure f = failure_of([&] {
    ragged_permute_grad(d, {g.data(), gp.data(), s.data(), map.data(), tg.data(), pg.data()},
                        {.backend = backend()});
  });
  EXPECT_EQ(f.code, Code::invalid_param);
  EXPECT_NE(f.message.find("moeperm::ragged_permute_grad: sorted_indices[4] = 4"),
            std::string::npos)
      << f.message;
  EXPECT_EQ(tg, std::vector<uint16_t>(T * H, 0xA5A5)) << "written before the check";
  EXPECT_EQ(pg, std::vector<uint16_t>(T * E, 0xA5A5)) << "written before the check";
}

INSTANTIATE_TEST_SUITE_P(Hosts, RaggedDataErrors,
                         ::testing::ValuesIn(backend_configs(Matrix::isas, {.reference = true,
                                                                            .devices = false})),
                         ConfigName);

}  // namespace
}  // namespace moeperm::testing
