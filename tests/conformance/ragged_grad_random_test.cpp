// The ragged pair's backward operators (docs/ragged.md) on the random problems of
// ragged_problems.hpp: the reference against an oracle of this file, every host backend
// configuration against the reference's storage byte for byte.
//   ragged_permute_grad: tokens_grad[t] = the rows naming t summed in ascending order with
//   fp32 additions (modelled exactly in double with round_to), probs_grad[t, e] = the probs
//   gradient of the row of (t, e), +0 elsewhere: exact.
//   ragged_unpermute_grad: permuted_tokens_grad[r] = round(G[t] * p) (+0 for -1 rows): exact;
//   probs_grad[t, e] = U3's dot product, against the exact dot within fp32's error bound.
// An index no permute makes (random tokens, repeated inside a token's and an expert's rows,
// -1 holes: random_index) is checked against the reference on every configuration too.
// Device backends (the CUDA backend, label gpu: skipped without a GPU) run every case once,
// with the tensors in device memory, for both indices, against the reference's bytes.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
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

struct GradInputs {
  Buf g_rows, g_probs, g_tokens;  // the permute's [R, H], [R]; the unpermute's [T, H]
};

GradInputs make_grads(const Case &c, const Inputs &in, uint32_t seed) {
  std::mt19937 rng(seed);
  GradInputs gi;
  gi.g_rows = Buf(c.vdt, {in.R, c.H}, c.lay);
  for (int64_t r = 0; r < in.R; ++r)
    for (int64_t h = 0; h < c.H; ++h) gi.g_rows.set_bits(r, h, value_bits(c.vdt, rng));
  gi.g_tokens = Buf(c.vdt, {c.T, c.H}, c.lay);
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t h = 0; h < c.H; ++h) gi.g_tokens.set_bits(t, h, value_bits(c.vdt, rng));
  const DType pd = c.pdt.value_or(DType::f32);
  gi.g_probs = Buf(pd, {in.R}, c.lay);
  for (int64_t r = 0; r < in.R; ++r) gi.g_probs.set_bits(r, 0, value_bits(pd, rng));
  return gi;
}

struct Out {
  Buf main, probs;
};

Out run_permute_grad(const Case &c, Inputs &in, GradInputs &gi, Buf index, Backend be) {
  RaggedPermuteGradDesc d;
  d.permuted_tokens_grad = gi.g_rows.desc;
  d.sorted_indices = index.desc;
  d.num_tokens = c.T;
  d.drop_and_pad = c.drop_and_pad;
  Out o;
  o.main = Buf(c.vdt, {c.T, c.H}, c.lay);
  d.tokens_grad = o.main.desc;
  if (c.pdt) {
    d.permuted_probs_grad = gi.g_probs.desc;
    d.routing_map = in.map.desc;
    o.probs = Buf(*c.pdt, {c.T, c.E}, c.lay);
    d.probs_grad = o.probs.desc;
  }
  const Plan plan = plan_ragged_permute_grad(d, {.backend = be});
  expect_planned_on(plan, be);
  Memory mem(be);  // a device backend's copies come back when it goes
  run(plan,
      RaggedPermuteGradData{mem(gi.g_rows), c.pdt ? mem(gi.g_probs) : nullptr, mem(index),
                            c.pdt ? mem(in.map) : nullptr, mem(o.main),
                            c.pdt ? mem(o.probs) : nullptr},
      mem.workspace(plan.workspace_bytes()));
  return o;
}

Out run_unpermute_grad(const Case &c, Inputs &in, GradInputs &gi, Buf index, Backend be) {
  RaggedUnpermuteGradDesc d;
  d.unpermuted_tokens_grad = gi.g_tokens.desc;
  d.sorted_indices = index.desc;
  d.drop_and_pad = c.drop_and_pad;
  Out o;
  o.main = Buf(c.vdt, {in.R, c.H}, c.lay);
  d.permuted_tokens_grad = o.main.desc;
  if (c.pdt) {
    d.probs = in.probs.desc;
    d.routing_map = in.map.desc;
    d.permuted_tokens = in.y.desc;
    o.probs = Buf(*c.pdt, {c.T, c.E}, c.lay);
    d.probs_grad = o.probs.desc;
  }
  const Plan plan = plan_ragged_unpermute_grad(d, {.backend = be});
  expect_planned_on(plan, be);
  Memory mem(be);
  run(plan,
      RaggedUnpermuteGradData{mem(gi.g_tokens), mem(index), c.pdt ? mem(in.map) : nullptr,
                              c.pdt ? mem(in.y) : nullptr, c.pdt ? mem(in.probs) : nullptr,
                              mem(o.main), c.pdt ? mem(o.probs) : nullptr},
      mem.workspace(plan.workspace_bytes()));
  return o;
}

void expect_permute_grad_is_the_oracle(const Case &c, const Inputs &in, const GradInputs &gi,
                                       const Out &o) {
  auto f32 = [](double v) { return round_to(DType::f32, v); };
  std::vector<std::vector<int64_t>> rows_of(static_cast<size_t>(c.T));
  for (int64_t r = 0; r < in.R; ++r)
    if (const Pair p = in.rows[static_cast<size_t>(r)]; p.t >= 0)
      rows_of[static_cast<size_t>(p.t)].push_back(r);
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t h = 0; h < c.H; ++h) {
      double acc = 0.0;
      for (int64_t r : rows_of[static_cast<size_t>(t)])
        acc = f32(acc + decode(c.vdt, gi.g_rows.bits(r, h)));
      ASSERT_EQ(o.main.bits(t, h), encode(c.vdt, acc)) << "tokens_grad " << t << ", " << h;
    }
  if (!c.pdt) return;
  std::vector<uint32_t> want(static_cast<size_t>(c.T * c.E), 0u);
  for (int64_t r = 0; r < in.R; ++r)
    if (const Pair p = in.rows[static_cast<size_t>(r)]; p.t >= 0)
      want[static_cast<size_t>(p.t * c.E + p.e)] = gi.g_probs.bits(r);
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t e = 0; e < c.E; ++e)
      ASSERT_EQ(o.probs.bits(t, e), want[static_cast<size_t>(t * c.E + e)])
          << "probs_grad " << t << ", " << e;
}

void expect_unpermute_grad_is_the_oracle(const Case &c, const Inputs &in, const GradInputs &gi,
                                         const Out &o) {
  std::vector<double> dot(static_cast<size_t>(c.T * c.E), 0.0), mag(dot.size(), 0.0);
  for (int64_t r = 0; r < in.R; ++r) {
    const Pair p = in.rows[static_cast<size_t>(r)];
    const double w = p.t >= 0 && c.pdt ? decode(*c.pdt, in.probs.bits(p.t, p.e)) : 1.0;
    for (int64_t h = 0; h < c.H; ++h) {
      const double g = p.t >= 0 ? decode(c.vdt, gi.g_tokens.bits(p.t, h)) : 0.0;
      ASSERT_EQ(o.main.bits(r, h), p.t < 0 ? 0u : encode(c.vdt, round_to(DType::f32, g * w)))
          << "permuted_tokens_grad " << r << ", " << h;
      if (p.t < 0 || !c.pdt) continue;
      const double x = decode(c.vdt, in.y.bits(r, h));
      dot[static_cast<size_t>(p.t * c.E + p.e)] += g * x;
      mag[static_cast<size_t>(p.t * c.E + p.e)] += std::fabs(g * x);
    }
  }
  if (!c.pdt) return;
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t e = 0; e < c.E; ++e) {
      const auto i = static_cast<size_t>(t * c.E + e);
      const double got = decode(*c.pdt, o.probs.bits(t, e));
      const double eps = *c.pdt == DType::bf16 ? 0x1p-8 : *c.pdt == DType::f16 ? 0x1p-11 : 0x1p-24;
      ASSERT_LE(std::fabs(got - dot[i]), eps * std::fabs(dot[i]) + 0x1p-18 * mag[i] + 1e-30)
          << "probs_grad " << t << ", " << e;
    }
}

class RaggedGradRandom : public ::testing::TestWithParam<Case> {
 protected:
  static std::vector<BackendConfig> configs(const Case &c) {
    return backend_configs(c.lay == Lay::contiguous ? Matrix::full : Matrix::isas,
                           {.reference = false, .devices = false});
  }
};

// Each configuration's permute Grad against the reference's bytes, for `index`.
void expect_permute_grads_match(const Case &c, Inputs &in, GradInputs &gi, const Buf &index,
                                const Out &want, const std::vector<BackendConfig> &cfgs) {
  for (const BackendConfig &cfg : cfgs) {
    SCOPED_TRACE(config_name(cfg));
    const ScopedConfig scope(cfg);
    const Out got = run_permute_grad(c, in, gi, index, cfg.backend());
    expect_same_bytes(got.main, want.main, "tokens_grad");
    if (c.pdt) expect_same_bytes(got.probs, want.probs, "probs_grad");
  }
}

void expect_unpermute_grads_match(const Case &c, Inputs &in, GradInputs &gi, const Buf &index,
                                  const Out &want, const std::vector<BackendConfig> &cfgs) {
  for (const BackendConfig &cfg : cfgs) {
    SCOPED_TRACE(config_name(cfg));
    const ScopedConfig scope(cfg);
    const Out got = run_unpermute_grad(c, in, gi, index, cfg.backend());
    expect_same_bytes(got.main, want.main, "permuted_tokens_grad");
    if (c.pdt) expect_same_bytes(got.probs, want.probs, "probs_grad");
  }
}

TEST_P(RaggedGradRandom, PermuteGradMatchesTheOracle) {
  const Case &c = GetParam();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 7 + c.H + c.E));
  GradInputs gi = make_grads(c, in, 11);
  const Buf index = oracle_index(c, in);
  const Out want = run_permute_grad(c, in, gi, index, Backend::reference);
  expect_permute_grad_is_the_oracle(c, in, gi, want);
  expect_permute_grads_match(c, in, gi, index, want, configs(c));
  const Buf random = random_index(c, in, 3);
  expect_permute_grads_match(c, in, gi, random,
                             run_permute_grad(c, in, gi, random, Backend::reference), configs(c));
}

TEST_P(RaggedGradRandom, UnpermuteGradMatchesTheOracle) {
  const Case &c = GetParam();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 5 + c.H + c.E));
  GradInputs gi = make_grads(c, in, 13);
  const Buf index = oracle_index(c, in);
  const Out want = run_unpermute_grad(c, in, gi, index, Backend::reference);
  expect_unpermute_grad_is_the_oracle(c, in, gi, want);
  expect_unpermute_grads_match(c, in, gi, index, want, configs(c));
  const Buf random = random_index(c, in, 5);
  expect_unpermute_grads_match(
      c, in, gi, random, run_unpermute_grad(c, in, gi, random, Backend::reference), configs(c));
}

std::string CaseName(const ::testing::TestParamInfo<Case> &p) { return p.param.name; }

INSTANTIATE_TEST_SUITE_P(Contiguous, RaggedGradRandom, ::testing::ValuesIn(cases(true)), CaseName);
INSTANTIATE_TEST_SUITE_P(Strided, RaggedGradRandom, ::testing::ValuesIn(cases(false)), CaseName);

// Every case on each device backend, for the permute's index and a random one.
class RaggedGradRandomOnDevice : public BackendCase<std::tuple<Case, BackendConfig>> {
 protected:
  const Case &problem() const { return std::get<0>(GetParam()); }
};

TEST_P(RaggedGradRandomOnDevice, PermuteGradMatchesTheReference) {
  const Case &c = problem();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 7 + c.H + c.E));
  GradInputs gi = make_grads(c, in, 11);
  for (const Buf &index : {oracle_index(c, in), random_index(c, in, 3)}) {
    const Out want = run_permute_grad(c, in, gi, index, Backend::reference);
    const Out got = run_permute_grad(c, in, gi, index, backend());
    expect_same_bytes(got.main, want.main, "tokens_grad");
    if (c.pdt) expect_same_bytes(got.probs, want.probs, "probs_grad");
  }
}

TEST_P(RaggedGradRandomOnDevice, UnpermuteGradMatchesTheReference) {
  const Case &c = problem();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 5 + c.H + c.E));
  GradInputs gi = make_grads(c, in, 13);
  for (const Buf &index : {oracle_index(c, in), random_index(c, in, 5)}) {
    const Out want = run_unpermute_grad(c, in, gi, index, Backend::reference);
    const Out got = run_unpermute_grad(c, in, gi, index, backend());
    expect_same_bytes(got.main, want.main, "permuted_tokens_grad");
    if (c.pdt) expect_same_bytes(got.probs, want.probs, "probs_grad");
  }
}

INSTANTIATE_TEST_SUITE_P(Devices, RaggedGradRandomOnDevice,
                         ::testing::Combine(::testing::ValuesIn(all_cases()),
                                            ::testing::ValuesIn(device_configs())),
                         CaseConfigName);

}  // namespace
}  // namespace moeperm::testing
