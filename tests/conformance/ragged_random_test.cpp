// The ragged pair (docs/ragged.md) on random problems, against an oracle of this file: the
// routed pairs listed and stably sorted by expert (so tokens ascend inside an expert), then
// laid into rows per mode; the unpermute's sums modelled in double with every fp32 product
// and addition rounded by fp_reference's round_to, so the expected bits are exact. Every
// host backend configuration (the CPU backend per ISA x {1 thread, all threads}, and the
// reference) must match the oracle bit for bit, and every storage byte of a run (views and
// the poisoned storage around them) must equal the reference's. Maps of every dtype (int32
// values that are multiples of 256: a one-byte read would miss them), tokens with no expert
// and with all of them, R below, at and above the routed pairs, capacities that drop and
// that pad, probs of a dtype other than the tokens', three layouts.
// The reference is checked against the oracle, every other configuration against the
// reference's bytes (the storage comparison is the stronger one).
// Device backends (the CUDA backend, label gpu: skipped without a GPU) run every case once,
// with the tensors in device memory, against the reference's bytes; a data error found on
// the device names the row as the host does and leaves the output unwritten.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend_matrix.hpp"
#include "fp_reference.hpp"
#include "poisoned_buffer.hpp"
#include "ragged_problems.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

using namespace ragged;

struct PermuteOut {
  Buf y, yp, s;
};

PermuteOut run_permute(const Case &c, Inputs &in, Backend backend) {
  RaggedPermuteDesc d;
  d.tokens = in.x.desc;
  d.routing_map = in.map.desc;
  d.num_out_tokens = in.R;
  d.drop_and_pad = c.drop_and_pad;
  PermuteOut o;
  o.y = Buf(c.vdt, {in.R, c.H}, c.lay);
  o.s = Buf(DType::i32, {in.R}, c.lay);
  d.permuted_tokens = o.y.desc;
  d.sorted_indices = o.s.desc;
  if (c.pdt) {
    o.yp = Buf(*c.pdt, {in.R}, c.lay);
    d.probs = in.probs.desc;
    d.permuted_probs = o.yp.desc;
  }
  const Plan plan = plan_ragged_permute(d, {.backend = backend});
  expect_planned_on(plan, backend);
  Memory mem(backend);  // a device backend's copies come back when it goes
  run(plan,
      RaggedPermuteData{mem(in.x), mem(in.map), c.pdt ? mem(in.probs) : nullptr, mem(o.y),
                        c.pdt ? mem(o.yp) : nullptr, mem(o.s)},
      mem.workspace(plan.workspace_bytes()));
  return o;
}

// Its outputs are written back when the run's Memory goes, also after a failure (out).
void run_unpermute_into(const Case &c, Inputs &in, Buf index, Backend backend, Buf &out) {
  RaggedUnpermuteDesc d;
  d.permuted_tokens = in.y.desc;
  d.sorted_indices = index.desc;
  d.drop_and_pad = c.drop_and_pad;
  if (c.pdt)
    d.probs = in.probs.desc, d.routing_map = in.map.desc;
  else
    d.restore_shape = std::vector<int64_t>{c.T, c.H};
  d.unpermuted_tokens = out.desc;
  const Plan plan = plan_ragged_unpermute(d, {.backend = backend});
  expect_planned_on(plan, backend);
  Memory mem(backend);
  run(plan,
      RaggedUnpermuteData{mem(in.y), mem(index), c.pdt ? mem(in.map) : nullptr,
                          c.pdt ? mem(in.probs) : nullptr, mem(out)},
      mem.workspace(plan.workspace_bytes()));
}

Buf run_unpermute(const Case &c, Inputs &in, const Buf &index, Backend backend) {
  Buf out(c.vdt, {c.T, c.H}, c.lay);
  run_unpermute_into(c, in, index, backend, out);
  return out;
}

void expect_permute_is_the_oracle(const Case &c, const Inputs &in, const PermuteOut &o) {
  for (int64_t r = 0; r < in.R; ++r) {
    const Pair p = in.rows[static_cast<size_t>(r)];
    ASSERT_EQ(static_cast<int32_t>(o.s.bits(r)), p.t) << "sorted_indices[" << r << "]";
    for (int64_t h = 0; h < c.H; ++h)
      ASSERT_EQ(o.y.bits(r, h), p.t < 0 ? 0u : in.x.bits(p.t, h)) << "row " << r << ", h " << h;
    if (c.pdt) {
      ASSERT_EQ(o.yp.bits(r), p.t < 0 ? 0u : in.probs.bits(p.t, p.e)) << "permuted_probs " << r;
    }
  }
}

void expect_unpermute_is_the_oracle(const Case &c, const Inputs &in, const Buf &out) {
  auto f32 = [](double v) { return round_to(DType::f32, v); };
  std::vector<std::vector<int64_t>> rows_of(static_cast<size_t>(c.T));  // ascending rows
  for (int64_t r = 0; r < in.R; ++r)
    if (const Pair p = in.rows[static_cast<size_t>(r)]; p.t >= 0)
      rows_of[static_cast<size_t>(p.t)].push_back(r);
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t h = 0; h < c.H; ++h) {
      double acc = 0.0;
      for (int64_t r : rows_of[static_cast<size_t>(t)]) {
        double v = decode(c.vdt, in.y.bits(r, h));
        const int64_t e = in.rows[static_cast<size_t>(r)].e;
        if (c.pdt) v = f32(v * decode(*c.pdt, in.probs.bits(t, e)));
        acc = f32(acc + v);
      }
      ASSERT_EQ(out.bits(t, h), encode(c.vdt, acc)) << "token " << t << ", h " << h;
    }
}

// A case's inputs, the reference's outputs checked against the oracle, then every
// configuration of the case's matrix against the reference's bytes, in one test: the inputs
// and the oracle are the slow part, built once per case (CTest runs each test in a process).
class RaggedRandom : public ::testing::TestWithParam<Case> {
 protected:
  static std::vector<BackendConfig> configs(const Case &c) {
    // Threads change the work split of the contiguous (large) cases only.
    return backend_configs(c.lay == Lay::contiguous ? Matrix::full : Matrix::isas,
                           {.reference = false, .devices = false});
  }
};

TEST_P(RaggedRandom, PermuteMatchesTheOracle) {
  const Case &c = GetParam();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 31 + c.H + c.E));
  const PermuteOut want = run_permute(c, in, Backend::reference);
  expect_permute_is_the_oracle(c, in, want);
  for (const BackendConfig &cfg : configs(c)) {
    SCOPED_TRACE(config_name(cfg));
    const ScopedConfig scope(cfg);
    const PermuteOut got = run_permute(c, in, cfg.backend());
    expect_same_bytes(got.y, want.y, "permuted_tokens");
    expect_same_bytes(got.s, want.s, "sorted_indices");
    if (c.pdt) expect_same_bytes(got.yp, want.yp, "permuted_probs");
  }
}

TEST_P(RaggedRandom, UnpermuteMatchesTheOracle) {
  const Case &c = GetParam();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 17 + c.H + c.E));
  const Buf index = oracle_index(c, in);
  const Buf want = run_unpermute(c, in, index, Backend::reference);
  expect_unpermute_is_the_oracle(c, in, want);
  // And an index no permute makes (random_index: repeated rows, -1 holes).
  const Buf random = random_index(c, in, 9);
  const Buf want_random = run_unpermute(c, in, random, Backend::reference);
  for (const BackendConfig &cfg : configs(c)) {
    SCOPED_TRACE(config_name(cfg));
    const ScopedConfig scope(cfg);
    const Buf got = run_unpermute(c, in, index, cfg.backend());
    expect_same_bytes(got, want, "unpermuted_tokens");
    EXPECT_EQ(poisoned_elements(got), 0);
    expect_same_bytes(run_unpermute(c, in, random, cfg.backend()), want_random,
                      "unpermuted_tokens (random index)");
  }
}

std::string CaseName(const ::testing::TestParamInfo<Case> &p) { return p.param.name; }

INSTANTIATE_TEST_SUITE_P(Contiguous, RaggedRandom, ::testing::ValuesIn(cases(true)), CaseName);
INSTANTIATE_TEST_SUITE_P(Strided, RaggedRandom, ::testing::ValuesIn(cases(false)), CaseName);

// Every case on each device backend, against the reference's bytes.
class RaggedRandomOnDevice : public BackendCase<std::tuple<Case, BackendConfig>> {
 protected:
  const Case &problem() const { return std::get<0>(GetParam()); }
};

TEST_P(RaggedRandomOnDevice, PermuteMatchesTheReference) {
  const Case &c = problem();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 31 + c.H + c.E));
  const PermuteOut want = run_permute(c, in, Backend::reference);
  const PermuteOut got = run_permute(c, in, backend());
  expect_same_bytes(got.y, want.y, "permuted_tokens");
  expect_same_bytes(got.s, want.s, "sorted_indices");
  if (c.pdt) expect_same_bytes(got.yp, want.yp, "permuted_probs");
}

TEST_P(RaggedRandomOnDevice, UnpermuteMatchesTheReference) {
  const Case &c = problem();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 17 + c.H + c.E));
  for (const Buf &index : {oracle_index(c, in), random_index(c, in, 9)})
    expect_same_bytes(run_unpermute(c, in, index, backend()),
                      run_unpermute(c, in, index, Backend::reference), "unpermuted_tokens");
}

INSTANTIATE_TEST_SUITE_P(Devices, RaggedRandomOnDevice,
                         ::testing::Combine(::testing::ValuesIn(all_cases()),
                                            ::testing::ValuesIn(device_configs())),
                         CaseConfigName);

// Drop-less with probs, a row past the routed pairs that names a token has no expert: the
// run fails naming the row (as the host backends' message), and nothing is written. On every
// backend, the devices included (their check runs on the device).
class RaggedRowErrors : public BackendCase<> {};

TEST_P(RaggedRowErrors, RowPastTheRoutedPairsWritesNothing) {
  Case c{.name = "row_past_pairs",
         .T = 67,
         .E = 5,
         .H = 45,
         .rows = Rows::more,
         .vdt = DType::bf16,
         .pdt = DType::f32};
  Inputs in = make_inputs(c, 5);
  Buf index = oracle_index(c, in);
  const int64_t pairs = in.R - 37, bad = in.R - 2;  // Rows::more: 37 rows past the pairs
  ASSERT_EQ(static_cast<int32_t>(index.bits(bad)), -1);
  index.set_bits(bad, 0, 7u);
  Buf out(c.vdt, {c.T, c.H}, c.lay);
  const Failure f = failure_of([&] { run_unpermute_into(c, in, index, backend(), out); });
  EXPECT_EQ(f.code, Code::invalid_param);
  EXPECT_NE(f.message.find("moeperm::ragged_unpermute: sorted_indices[" + std::to_string(bad) +
                           "] = 7 names a token, but row " + std::to_string(bad) +
                           " lies past the " + std::to_string(pairs) + " (token, expert) pairs"),
            std::string::npos)
      << f.message;
  EXPECT_EQ(poisoned_elements(out), c.T * c.H) << "written before the check";
}

INSTANTIATE_TEST_SUITE_P(Backends, RaggedRowErrors,
                         ::testing::ValuesIn(backend_configs(Matrix::one, {.reference = true})),
                         ConfigName);

}  // namespace
}  // namespace moeperm::testing
