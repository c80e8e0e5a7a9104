// Every CPU instruction-set variant, forced through MOEPERM_CPU_ISA (architecture §6.6), equals
// the reference bit for bit: all value dtypes, both modes, row widths around the vector
// width and across the row kernels' 1024-element tiles, more than 8 source rows (register
// groups), more sources than one gather holds (512), and outputs large enough (>= 16 MiB)
// for non-temporal stores, with rows that are not vector-aligned. The parameter is the CPU
// backend once per variant this CPU supports (backend_matrix.hpp, Matrix::isas, default
// thread count).
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "backend_matrix.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

class Isa : public BackendCase<> {
 protected:
  // Runs s on the reference and on the forced CPU variant; expects identical outputs and
  // that the plan really used the variant.
  void expect_equal(const ProblemSpec &s, const char *extra_plan_text = nullptr) {
    SCOPED_TRACE(describe(s));
    Problem ref = tools::make_problem(s);
    Problem cpu = ref;
    run_both(ref, Backend::reference);
    const Plan fwd = plan_permute(cpu.permute_desc(), {backend()});
    EXPECT_NE(
        fwd.to_string().find(std::string("backend=") + config().info.name + "/" + config().isa),
        std::string::npos)
        << fwd.to_string();
    if (extra_plan_text) {
      EXPECT_NE(fwd.to_string().find(extra_plan_text), std::string::npos) << fwd.to_string();
    }
    run_both(cpu, backend());
    EXPECT_TRUE(SameOutputs(cpu, ref));
  }
};

TEST_P(Isa, EveryDtypeModeAndRowWidth) {
  for (DType dtype : {DType::bf16, DType::f16, DType::f32})
    for (bool dp : {false, true})
      for (int64_t H : {1, 16, 17, 2049}) {
        ProblemSpec s;
        s.T = 67, s.H = H, s.E = 16, s.K = 9, s.capacity = 30, s.drop_and_pad = dp;
        s.dtype = dtype, s.probs_dtype = dtype == DType::bf16 ? DType::f32 : dtype;
        s.seed = static_cast<uint64_t>(H);
        expect_equal(s);
      }
}

// Drop-and-pad with 600 experts and C = T = 2: each token fills a slot of every expert, so
// its sum has 600 sources (more than one 512-pointer gather). Drop-less K = 512: exactly one.
TEST_P(Isa, SumsWithManySources) {
  ProblemSpec dp;
  dp.T = 2, dp.H = 37, dp.E = 600, dp.K = 1, dp.capacity = 2, dp.drop_and_pad = true;
  dp.dtype = DType::bf16, dp.probs_dtype = DType::f32;
  expect_equal(dp);
  ProblemSpec dl;
  dl.T = 4, dl.H = 37, dl.E = 520, dl.K = 512, dl.dtype = dl.probs_dtype = DType::f16;
  expect_equal(dl);
}

// Outputs of at least the streaming threshold are written with non-temporal stores where
// rows are aligned; odd row widths make most rows unaligned. The threshold is pinned to
// 16 MiB here (it follows the host's cache otherwise), so the same problems stream on
// every host.
TEST_P(Isa, StreamingStoresForLargeOutputs) {
  const ScopedEnv threshold("MOEPERM_CPU_STREAMING_BYTES", "16777216");
  ProblemSpec dl;
  dl.T = 2048, dl.H = 2049, dl.E = 8, dl.K = 2, dl.dtype = dl.probs_dtype = DType::f32;
  expect_equal(dl, "streaming-stores");
  ProblemSpec dp;
  dp.T = 4096, dp.H = 2049, dp.E = 8, dp.K = 2, dp.capacity = 512, dp.drop_and_pad = true;
  dp.dtype = DType::bf16, dp.probs_dtype = DType::bf16;
  expect_equal(dp, "streaming-stores");
}

// The plan chooses non-temporal stores from the output's size against the threshold, which
// MOEPERM_CPU_STREAMING_BYTES sets: 0 streams every output, a threshold above the output
// none; the bits are the same either way.
TEST_P(Isa, StreamingThresholdDecidesTheStoreKind) {
  ProblemSpec s;
  s.T = 300, s.H = 1000, s.E = 8, s.K = 2, s.dtype = s.probs_dtype = DType::bf16;
  for (const char *bytes : {"0", "1200000", "1200001", "1000000000"}) {
    SCOPED_TRACE(bytes);
    const ScopedEnv threshold("MOEPERM_CPU_STREAMING_BYTES", bytes);
    const Plan fwd = plan_permute(tools::make_problem(s).permute_desc(), {backend()});
    // The forward writes R = T*K = 600 rows of 1000 bf16: 1,200,000 bytes.
    const bool streams = std::stoll(bytes) <= 1200000;
    EXPECT_EQ(fwd.to_string().find("streaming-stores") != std::string::npos, streams)
        << fwd.to_string();
    expect_equal(s);
  }
}

// SPEC §4: sums are bitwise identical on every backend, NaNs included. G gets NaNs with
// assorted payloads and signs (quiet and signalling); every variant must round them to the
// same bits as the reference.
TEST_P(Isa, NanPayloadsMatchTheReference) {
  const std::pair<DType, std::vector<uint32_t>> nans[] = {
      {DType::bf16, {0x7fc0, 0x7f81, 0xffc3, 0x7ff5}},
      {DType::f16, {0x7e00, 0x7e01, 0x7d00, 0xfe55, 0x7c01, 0xffff}},
      {DType::f32, {0x7fc00000, 0x7fc00001, 0xff800123, 0x7fbfffff}},
  };
  for (const auto &[dtype, payloads] : nans)
    for (bool dp : {false, true}) {
      ProblemSpec s;
      s.T = 40, s.H = 48, s.E = 8, s.K = 2, s.capacity = 10, s.drop_and_pad = dp;
      s.dtype = s.probs_dtype = dtype, s.with_probs = false, s.seed = 21;
      SCOPED_TRACE(describe(s));
      Problem ref = tools::make_problem(s);
      run_forward(ref, Backend::reference);
      for (int64_t j = 0; j < s.rows(); j += 3)  // a NaN in every third row, at varying columns
        set_bits(ref.grad, j, (j * 7) % s.H, payloads[static_cast<size_t>(j) % payloads.size()]);
      Problem cpu = ref;
      run_backward(ref, Backend::reference);
      run_backward(cpu, backend());
      EXPECT_TRUE(BitwiseEqual(cpu.tokens_grad, ref.tokens_grad));
    }
}

// Denormal sums round like any other value: a row sum of denormal bf16 values is a denormal
// fp32 (exactly a bf16 denormal), which the vector kernels' rounding must keep. A rounding
// instruction that flushes denormals (AVX512-BF16's vcvtne2ps2bf16, docs/cpu-performance.md
// experiment 13) fails here unless it falls back for such vectors.
TEST_P(Isa, DenormalSumsMatchTheReference) {
  const uint32_t denormals[] = {0x0001, 0x8003, 0x007f, 0x0040, 0x80ff};
  for (bool dp : {false, true}) {
    ProblemSpec s;
    s.T = 40, s.H = 96, s.E = 8, s.K = 2, s.capacity = 10, s.drop_and_pad = dp;
    s.dtype = s.probs_dtype = DType::bf16, s.with_probs = false, s.seed = 23;
    SCOPED_TRACE(describe(s));
    Problem ref = tools::make_problem(s);
    run_forward(ref, Backend::reference);
    for (int64_t j = 0; j < s.rows(); ++j)  // whole vectors of denormals in every row
      for (int64_t h = 0; h < 64; h += 1 + j % 3)
        set_bits(ref.grad, j, h, denormals[static_cast<size_t>(j + h) % 5]);
    Problem cpu = ref;
    run_backward(ref, Backend::reference);
    run_backward(cpu, backend());
    EXPECT_TRUE(BitwiseEqual(cpu.tokens_grad, ref.tokens_grad));
  }
}

INSTANTIATE_TEST_SUITE_P(Variants, Isa, ::testing::ValuesIn(threaded_configs(Matrix::isas)),
                         ConfigName);

}  // namespace
}  // namespace moeperm::testing
