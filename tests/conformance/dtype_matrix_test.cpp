// Every dtype combination SPEC §2-§3 allows, in both modes: values bf16/fp16/fp32; probs of the
// value dtype, fp32 with bf16 values, or none; routing maps int8 and bool. Every fast backend
// equals the reference bit for bit; the reference equals the suite's oracle. Matrix::isas: the
// row kernels are per dtype and per CPU variant, and the problems are small (one token block,
// so the thread count would not change the work split).
#include <gtest/gtest.h>

#include "backend_matrix.hpp"
#include "naive.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

struct Combo {
  DType values;
  std::optional<DType> probs;
  DType map;
  bool dp;
};

std::vector<Combo> all_combos() {
  std::vector<Combo> v;
  const std::pair<DType, std::vector<std::optional<DType>>> allowed[] = {
      {DType::bf16, {DType::bf16, DType::f32, std::nullopt}},
      {DType::f16, {DType::f16, std::nullopt}},
      {DType::f32, {DType::f32, std::nullopt}},
  };
  for (bool dp : {false, true})
    for (const auto &[values, probs_list] : allowed)
      for (const auto &probs : probs_list)
        for (DType map : {DType::i8, DType::boolean}) v.push_back({values, probs, map, dp});
  return v;
}

using Param = std::tuple<Combo, BackendConfig>;
class DtypeCombo : public BackendCase<Param> {};

TEST_P(DtypeCombo, BackendEqualsReferenceEqualsSpec) {
  const Combo &c = std::get<0>(GetParam());
  ProblemSpec s;
  s.T = 37, s.H = 129, s.E = 9, s.K = 3, s.capacity = 5, s.drop_and_pad = c.dp;
  s.dtype = c.values;
  s.with_probs = c.probs.has_value();
  s.probs_dtype = c.probs.value_or(c.values);
  s.map_dtype = c.map;
  s.seed = 7;
  SCOPED_TRACE(describe(s));
  Problem ref = tools::make_problem(s);
  Problem fast = ref;
  run_both(ref, Backend::reference);
  run_both(fast, backend());
  EXPECT_TRUE(ForwardMatchesSpec(ref));
  EXPECT_TRUE(BackwardMatchesSpec(ref));
  EXPECT_TRUE(SameOutputs(fast, ref));
}

INSTANTIATE_TEST_SUITE_P(Spec2And3, DtypeCombo,
                         ::testing::Combine(::testing::ValuesIn(all_combos()),
                                            ::testing::ValuesIn(backend_configs(Matrix::isas))),
                         [](const ::testing::TestParamInfo<Param> &param_info) {
                           const Combo &c = std::get<0>(param_info.param);
                           return std::string(c.dp ? "droppad_" : "dropless_") +
                                  to_string(c.values) + "_probs_" +
                                  (c.probs ? to_string(*c.probs) : "none") + "_map_" +
                                  to_string(c.map) + "_" +
                                  config_name(std::get<1>(param_info.param));
                         });

}  // namespace
}  // namespace moeperm::testing
