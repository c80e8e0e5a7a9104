// SPEC §7 scale (label `slow`): DeepSeek-V3-like routing (T = 4096 tokens, E = 256 experts,
// K = 8, bf16 values with fp32 probs; R = 32768) and CANN's drop-and-pad sample shape
// (E = 256, C = 16, fp32), with H cut to 128 to keep the run short. Every fast host backend
// equals the reference bit for bit, once each (Matrix::one: the biggest problems of the
// suite), the CPU backend at 1 and 4 threads; the reference equals the suite's oracle.
#include <gtest/gtest.h>

#include "backend_matrix.hpp"
#include "naive.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

class Spec7 : public BackendCase<> {
 protected:
  void check(const ProblemSpec &s) {
    SCOPED_TRACE(describe(s));
    Problem ref = tools::make_problem(s);
    Problem fresh = ref;
    run_both(ref, Backend::reference);
    EXPECT_TRUE(ForwardMatchesSpec(ref));
    EXPECT_TRUE(BackwardMatchesSpec(ref));
    for (int threads : {1, 4}) {
      ScopedThreads scoped(threads);
      Problem p = fresh;
      run_both(p, backend());
      EXPECT_TRUE(SameOutputs(p, ref)) << threads << " threads";
    }
  }
};

TEST_P(Spec7, DeepSeekLikeDropless) {
  ProblemSpec s;
  s.T = 4096, s.H = 128, s.E = 256, s.K = 8, s.drop_and_pad = false;
  s.dtype = DType::bf16, s.probs_dtype = DType::f32;
  check(s);
}

TEST_P(Spec7, CannSampleDropAndPad) {
  ProblemSpec s;
  s.T = 4096, s.H = 128, s.E = 256, s.K = 8, s.capacity = 16, s.drop_and_pad = true;
  s.dtype = s.probs_dtype = DType::f32;
  check(s);
}

INSTANTIATE_TEST_SUITE_P(Hosts, Spec7,
                         ::testing::ValuesIn(backend_configs(Matrix::one, {.devices = false})),
                         ConfigName);

}  // namespace
}  // namespace moeperm::testing
