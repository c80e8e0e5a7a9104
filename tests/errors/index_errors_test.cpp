// SPEC §5.7 and the forward's data rule: errors only the second phase can see, because
// they depend on tensor data. Each must return 161002 with a message naming the first bad
// position, and must leave every output untouched (still poison). Run on every backend (the
// CPU backend per variant: Matrix::isas, since the checks run in its kernels' prologue),
// through the C++ API and through the C API (default stream: the second phase returns it).
#include <gtest/gtest.h>

#include "acl_support.hpp"
#include "backend_matrix.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

enum class Api { cxx, c };
using Route = std::tuple<Api, BackendConfig>;

struct Result {
  int32_t code = 0;
  std::string message;
};

// Runs the forward or the backward of p by `route`. The C API has no backend argument: the
// configuration pins it (BackendCase: the current device, MOEPERM_BACKEND).
Result run_by(const Route &route, Problem &p, bool grad) {
  const Backend backend = std::get<1>(route).backend();
  if (std::get<0>(route) == Api::c) {
    const CStatus st = grad ? c_backward(p, backend) : c_forward(p, backend);
    return {st.code, st.message};
  }
  try {
    grad ? run_backward(p, backend) : run_forward(p, backend);
  } catch (const Error &e) {
    return {static_cast<int32_t>(e.code()), e.what()};
  }
  return {};
}

// A problem whose S is a valid forward result (computed by the reference).
Problem forward_done(ProblemSpec spec) {
  Problem p = tools::make_problem(spec);
  run_forward(p, Backend::reference);
  return p;
}

ProblemSpec small(bool drop_and_pad) {
  ProblemSpec s;
  s.T = 6, s.H = 3, s.E = 4, s.K = 2, s.capacity = 3;
  s.drop_and_pad = drop_and_pad;
  s.dtype = DType::f32, s.probs_dtype = DType::f32;
  return s;
}

class DataErrors : public BackendCase<Route> {
 protected:
  // Backward with S[pos] = value for each pair; expects 161002 naming `first` and no writes.
  void expect_bad_indices(bool drop_and_pad, std::vector<std::pair<int64_t, int32_t>> bad,
                          const std::string &expected) {
    Problem p = forward_done(small(drop_and_pad));
    std::vector<int32_t> S = read_indices(p.sorted_indices);
    for (auto [pos, value] : bad) S[static_cast<size_t>(pos)] = value;
    write_indices(p.sorted_indices, S);
    const Result r = run_by(GetParam(), p, true);
    EXPECT_EQ(r.code, 161002);
    EXPECT_NE(r.message.find(expected), std::string::npos) << r.message;
    EXPECT_NE(r.message.find("nothing was written"), std::string::npos) << r.message;
    EXPECT_TRUE(untouched(p.tokens_grad));
    EXPECT_TRUE(untouched(p.dense_probs_grad));
  }
};

TEST_P(DataErrors, DroplessIndexEqualToRows) {
  expect_bad_indices(false, {{5, 12}},
                     "aclnnMoeTokenPermuteWithRoutingMapGrad: sortedIndices[5] = 12 is outside "
                     "[0, 12) or -1 (dropAndPad=false, R=12)");
}

TEST_P(DataErrors, DroplessIndexBelowMinusOne) {
  expect_bad_indices(false, {{5, -2}}, "sortedIndices[5] = -2 is outside [0, 12) or -1");
}

TEST_P(DataErrors, DroplessFirstOfSeveralBadPositionsIsNamed) {
  expect_bad_indices(false, {{9, 1000}, {5, -7}, {11, 12}}, "sortedIndices[5] = -7 is outside");
}

TEST_P(DataErrors, DropAndPadIndexEqualToTokens) {
  expect_bad_indices(true, {{5, 6}},
                     "sortedIndices[5] = 6 is outside [0, 6) (dropAndPad=true, tokensNum=6)");
}

TEST_P(DataErrors, DropAndPadMinusOneIsOutOfRange) {
  expect_bad_indices(true, {{5, -1}}, "sortedIndices[5] = -1 is outside [0, 6)");
}

TEST_P(DataErrors, DropAndPadLargestInt32) {
  expect_bad_indices(true, {{11, 2147483647}, {7, -2147483647 - 1}},
                     "sortedIndices[7] = -2147483648 is outside [0, 6)");
}

// Many threads scan S in chunks; the reported position must still be the smallest one.
TEST_P(DataErrors, FirstBadPositionWithManyThreads) {
  ProblemSpec s = small(false);
  s.T = 1000, s.E = 8, s.K = 4, s.H = 2;  // R = 4000
  for (int threads : {1, 7}) {
    SCOPED_TRACE(threads);
    ScopedThreads scoped(threads);
    Problem p = forward_done(s);
    std::vector<int32_t> S = read_indices(p.sorted_indices);
    S[3900] = -5, S[2500] = 4000, S[3999] = 99999;
    write_indices(p.sorted_indices, S);
    const Result r = run_by(GetParam(), p, true);
    EXPECT_EQ(r.code, 161002);
    EXPECT_NE(r.message.find("sortedIndices[2500] = 4000 is outside [0, 4000) or -1"),
              std::string::npos)
        << r.message;
    EXPECT_TRUE(untouched(p.tokens_grad));
  }
}

// Forward, drop-less: a token routed to more than K experts cannot be placed (SPEC §2).
TEST_P(DataErrors, ForwardRowWithMoreThanTopKExperts) {
  ProblemSpec s = small(false);
  s.T = 700, s.K = 1;  // several row blocks; rows 300 and 650 get a second expert
  Problem p = tools::make_problem(s);
  for (int64_t t : {650, 300})
    for (int64_t e = 0; e < 2; ++e) p.routing_map.set(t, e, 1);
  const Result r = run_by(GetParam(), p, false);
  EXPECT_EQ(r.code, 161002);
  EXPECT_NE(r.message.find("aclnnMoeTokenPermuteWithRoutingMap: routingMap row 300 selects "),
            std::string::npos)
      << r.message;
  EXPECT_NE(r.message.find("more than topK = numOutTokens / tokens = 1 (dropAndPad=false); "
                           "nothing was written"),
            std::string::npos)
      << r.message;
  EXPECT_TRUE(untouched(p.permuted_tokens));
  EXPECT_TRUE(untouched(p.permuted_probs));
  EXPECT_TRUE(untouched(p.sorted_indices));
}

// numOutTokens < T makes K = 0 (an empty output): a token with any expert is then one too
// many, even though there is nothing to write.
TEST_P(DataErrors, ForwardTopKZeroWithRoutedTokens) {
  ProblemSpec s = small(false);
  s.K = 0;
  Problem p = tools::make_problem(s);
  p.routing_map.set(4, 2, 1);
  const Result r = run_by(GetParam(), p, false);
  EXPECT_EQ(r.code, 161002);
  EXPECT_NE(r.message.find("routingMap row 4 selects 1 experts, more than topK = numOutTokens / "
                           "tokens = 0"),
            std::string::npos)
      << r.message;
}

// Backward, drop-less with P: the masked scatter has more set entries in M than P has rows.
TEST_P(DataErrors, MaskedScatterWithMorePairsThanRows) {
  ProblemSpec s = small(false);
  s.K = 1;  // R = 6
  Problem p = forward_done(s);
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t e = 0; e < s.E; ++e) p.routing_map.set(t, e, 1);  // 2*4 + 4 = 12 pairs
  const Result r = run_by(GetParam(), p, true);
  EXPECT_EQ(r.code, 161002);
  EXPECT_NE(r.message.find("routingMapOptional selects 12 (token, expert) pairs, more than the 6 "
                           "rows of permutedProbsOutputGradOptional; nothing was written"),
            std::string::npos)
      << r.message;
  EXPECT_TRUE(untouched(p.tokens_grad));
  EXPECT_TRUE(untouched(p.dense_probs_grad));
}

// Control for the case above: without P the routing map is not read, so it is no error.
TEST_P(DataErrors, OverfullRoutingMapWithoutProbsIsNotRead) {
  ProblemSpec s = small(false);
  s.K = 1, s.with_probs = false;
  Problem p = forward_done(s);
  for (int64_t t = 0; t < 2; ++t)
    for (int64_t e = 0; e < s.E; ++e) p.routing_map.set(t, e, 1);
  const Result r = run_by(GetParam(), p, true);
  EXPECT_EQ(r.code, 0) << r.message;
}

INSTANTIATE_TEST_SUITE_P(
    Spec5Rule7, DataErrors,
    ::testing::Combine(::testing::Values(Api::cxx, Api::c),
                       ::testing::ValuesIn(backend_configs(Matrix::isas, {.reference = true}))),
    [](const ::testing::TestParamInfo<Route> &param_info) {
      return std::string(std::get<0>(param_info.param) == Api::c ? "c_" : "cxx_") +
             config_name(std::get<1>(param_info.param));
    });

}  // namespace
}  // namespace moeperm::testing
