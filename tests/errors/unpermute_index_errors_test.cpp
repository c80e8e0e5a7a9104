// SPEC-unpermute U4 forward rule 6 and Grad rule 5: index values are checked by the second
// phase, on every host backend (the reference and each CPU variant), through both APIs'
// second phases: the status is 161002, the message names the operator, the argument, the
// first bad position, its value and the range, and nothing is written (every output still
// holds its poison).
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "backend_matrix.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

constexpr int64_t T = 3, E = 2, H = 4;
const std::string kFwd = "aclnnMoeTokenUnpermuteWithRoutingMap: ";
const std::string kBwd = "aclnnMoeTokenUnpermuteWithRoutingMapGrad: ";

TensorDesc f32(std::vector<int64_t> shape) { return TensorDesc::contiguous(DType::f32, shape); }
TensorDesc i32(std::vector<int64_t> shape) { return TensorDesc::contiguous(DType::i32, shape); }

bool all_bytes(const std::vector<float> &v, uint8_t byte) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  for (uint8_t x : b)
    if (x != byte) return false;
  return true;
}

class UnpermuteIndexErrors : public BackendCase<> {
 protected:
  // The forward with S = s (length R), probs when drop-and-pad, every optional output given.
  Failure forward(const std::vector<int32_t> &s, bool drop_and_pad) {
    const auto R = static_cast<int64_t>(s.size());
    UnpermuteDesc d;
    d.permuted_tokens = f32({R, H});
    d.sorted_indices = i32({R});
    d.padded_mode = drop_and_pad;
    d.restore_shape = std::vector<int64_t>{T, H};
    if (drop_and_pad) {
      d.probs = f32({T, E});
      d.routing_map = TensorDesc::contiguous(DType::i8, {T, E});
    }
    d = infer_outputs(d);
    d.out_index = i32({R}), d.permute_token_id = i32({R}), d.permute_probs = f32({R});
    std::vector<float> x(static_cast<size_t>(R * H), 1.5f), probs(T * E, 0.25f);
    std::vector<int8_t> map(T * E, 1);
    out_.assign(T * H, 0), side_.assign(static_cast<size_t>(3 * R), 0);
    std::memset(out_.data(), 0xA5, out_.size() * 4);
    std::memset(side_.data(), 0xA5, side_.size() * 4);
    return failure_of([&] {
      const Plan plan = plan_unpermute(d, {.backend = backend()});
      expect_planned_on(plan, backend());
      std::vector<std::byte> ws(plan.workspace_bytes());
      moeperm::run(
          plan,
          UnpermuteData{x.data(), s.data(), drop_and_pad ? map.data() : nullptr,
                        drop_and_pad ? probs.data() : nullptr, out_.data(), &side_[0],
                        &side_[static_cast<size_t>(R)], &side_[static_cast<size_t>(2 * R)]},
          ws);
    });
  }
  // The Grad with (O, I), probs and dP when drop-and-pad.
  Failure grad(const std::vector<int32_t> &o, const std::vector<int32_t> &i, bool drop_and_pad) {
    const auto R = static_cast<int64_t>(o.size());
    UnpermuteGradDesc d;
    d.unpermuted_tokens_grad = f32({T, H});
    d.out_index = i32({R});
    d.permute_token_id = i32({R});
    d.drop_and_pad = drop_and_pad;
    if (drop_and_pad) {
      d.probs = f32({T, E});
      d.routing_map = TensorDesc::contiguous(DType::i8, {T, E});
      d.permuted_tokens = f32({R, H});
      d.probs_grad_out = f32({T, E});
    }
    d = infer_outputs(d);
    std::vector<float> g(T * H, 2.0f), x(static_cast<size_t>(R * H), 1.5f), probs(T * E, 0.25f);
    std::vector<int8_t> map(T * E, 1);
    out_.assign(static_cast<size_t>(R * H), 0), side_.assign(T * E, 0);
    std::memset(out_.data(), 0xA5, out_.size() * 4);
    std::memset(side_.data(), 0xA5, side_.size() * 4);
    return failure_of([&] {
      const Plan plan = plan_unpermute_grad(d, {.backend = backend()});
      expect_planned_on(plan, backend());
      std::vector<std::byte> ws(plan.workspace_bytes());
      moeperm::run(plan,
                   UnpermuteGradData{
                       g.data(), o.data(), i.data(), drop_and_pad ? map.data() : nullptr,
                       drop_and_pad ? x.data() : nullptr, drop_and_pad ? probs.data() : nullptr,
                       out_.data(), drop_and_pad ? side_.data() : nullptr},
                   ws);
    });
  }
  bool nothing_written() const { return all_bytes(out_, 0xA5) && all_bytes(side_, 0xA5); }

  std::vector<float> out_, side_;
};

TEST_P(UnpermuteIndexErrors, ForwardDroplessRowOutOfRange) {
  // R = 6 (K = 2): rows are [0, 6) or -1; position 4 holds 6.
  const Failure f = forward({0, 1, -1, 2, 6, 7}, false);
  EXPECT_EQ(f.code, Code::invalid_param);
  EXPECT_EQ(f.message, kFwd +
                           "sortedIndices[4] = 6 is outside [0, 6) or -1 "
                           "(paddedMode=false, R=6); nothing was written");
  EXPECT_TRUE(nothing_written());
}

TEST_P(UnpermuteIndexErrors, ForwardDroplessBelowMinusOne) {
  const Failure f = forward({0, -2, 1, 2, 3, 4}, false);
  EXPECT_EQ(f.code, Code::invalid_param);
  EXPECT_NE(f.message.find(kFwd + "sortedIndices[1] = -2 is outside"), std::string::npos)
      << f.message;
  EXPECT_TRUE(nothing_written());
}

TEST_P(UnpermuteIndexErrors, ForwardDropAndPadTokenOutOfRange) {
  // R = 4 = E * C (C = 2): token ids in [0, 3); -1 is not a token here.
  const Failure f = forward({0, 2, -1, 3}, true);
  EXPECT_EQ(f.code, Code::invalid_param);
  EXPECT_EQ(f.message, kFwd +
                           "sortedIndices[2] = -1 is outside [0, 3) "
                           "(paddedMode=true, T=3); nothing was written");
  EXPECT_TRUE(nothing_written());
}

TEST_P(UnpermuteIndexErrors, GradDroplessRowOutOfRange) {
  const Failure f = grad({0, 1, 2, 3, 4, 9}, {0, 0, 1, 1, 2, 2}, false);
  EXPECT_EQ(f.code, Code::invalid_param);
  EXPECT_NE(f.message.find(kBwd + "outIndex[5] = 9 is outside [0, 6) or -1"), std::string::npos)
      << f.message;
  EXPECT_TRUE(nothing_written());
}

TEST_P(UnpermuteIndexErrors, GradDroplessRowNamedTwice) {
  const Failure f = grad({0, 5, -1, 3, 5, 1}, {0, 0, 1, 1, 2, 2}, false);
  EXPECT_EQ(f.code, Code::invalid_param);
  EXPECT_EQ(f.message, kBwd +
                           "outIndex[4] = 5 names the same row as outIndex[1] (each row may "
                           "be named once); nothing was written");
  EXPECT_TRUE(nothing_written());
}

TEST_P(UnpermuteIndexErrors, GradDropAndPadMinusOneIsNotARow) {
  const Failure f = grad({0, -1, 2, 3}, {0, 0, 1, 2}, true);
  EXPECT_EQ(f.code, Code::invalid_param);
  EXPECT_NE(f.message.find(kBwd + "outIndex[1] = -1 is outside [0, 4) "
                                  "(dropAndPad=true"),
            std::string::npos)
      << f.message;
  EXPECT_TRUE(nothing_written());
}

TEST_P(UnpermuteIndexErrors, GradDropAndPadTokenOutOfRange) {
  // outIndex is valid; permuteTokenId[3] = 3 is not a token (T = 3).
  const Failure f = grad({3, 2, 1, 0}, {0, 1, 2, 3}, true);
  EXPECT_EQ(f.code, Code::invalid_param);
  EXPECT_EQ(f.message, kBwd +
                           "permuteTokenId[3] = 3 is outside [0, 3) "
                           "(dropAndPad=true, T=3); nothing was written");
  EXPECT_TRUE(nothing_written());
}

TEST_P(UnpermuteIndexErrors, GradDroplessIgnoresPermuteTokenId) {
  // Drop-less reads only outIndex (U2): any permuteTokenId is accepted.
  const Failure f = grad({0, 1, 2, 3, 4, 5}, {-7, 99, 0, 0, 0, 0}, false);
  EXPECT_EQ(f.code, Code::ok) << f.message;
}

INSTANTIATE_TEST_SUITE_P(Hosts, UnpermuteIndexErrors,
                         ::testing::ValuesIn(backend_configs(Matrix::isas, {.reference = true,
                                                                            .devices = false})),
                         ConfigName);

}  // namespace
}  // namespace moeperm::testing
