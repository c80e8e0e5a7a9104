// The unpermute pair on random problems: every backend configuration (the CPU backend per
// ISA variant x {1 thread, all threads}, and the CUDA backend on a GPU, label gpu, with the
// tensors in device memory) against the reference, bit for bit, on every
// output byte (views and the storage around them, poisoned alike), across both modes, the
// dtype combinations of SPEC-unpermute U4, with and without probs and the optional outputs,
// contiguous, row-padded and column-strided layouts, and sizes that cross the kernels'
// internal boundaries: H past the 1024-element accumulator tile and not a multiple of any
// vector width or of U3's 32 partial sums, T across several token blocks, drop-and-pad
// tokens with more than 512 slots (the gather limit), K = 512. Indices are random but
// valid: drop-less S and outIndex are permutations with -1 holes; drop-and-pad token ids are
// arbitrary (a token may be named by many slots or none, and a dP entry twice).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <numeric>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <moeperm/acl_handles.hpp>

#include "backend_matrix.hpp"
#include "fp_reference.hpp"
#include "poisoned_buffer.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

struct Case {
  std::string name;
  bool drop_and_pad = false;
  int64_t T = 0, E = 0, KC = 0, H = 0;  // KC: K (drop-less) or C (drop-and-pad)
  DType vdt = DType::f32;
  std::optional<DType> pdt;  // probs dtype; none: no probs
  bool extras = false;       // forward: the three optional outputs; Grad: dP
  Lay lay = Lay::contiguous;
  int64_t R() const { return drop_and_pad ? E * KC : T * KC; }
};

uint32_t special_bits(DType dt, std::mt19937 &rng) {
  static const std::vector<uint32_t> bf16{0x7fc0, 0x7f81, 0xffc3, 0x7f80, 0xff80, 0x7f7f},
      f16{0x7e00, 0x7d00, 0xfe55, 0x7c00, 0xfc00, 0x7bff},
      f32{0x7fc00001, 0xff800123, 0x7fbfffff, 0x7f800000, 0xff800000, 0x7f7fffff};
  const std::vector<uint32_t> &v = dt == DType::bf16 ? bf16 : dt == DType::f16 ? f16 : f32;
  return v[rng() % v.size()];
}

// Random inputs of one case, shared by both operators' runs.
struct Inputs {
  Buf x, g, map, probs, s, o, i;
};

uint32_t value_bits(DType dt, std::mt19937 &rng) {
  const double v = (static_cast<int>(rng() % 2001) - 1000) / 256.0;
  return encode(dt, v);
}

Inputs make_inputs(const Case &c, uint32_t seed) {
  std::mt19937 rng(seed);
  const int64_t R = c.R();
  Inputs in;
  in.x = Buf(c.vdt, {R, c.H}, c.lay);
  in.g = Buf(c.vdt, {c.T, c.H}, c.lay);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t h = 0; h < c.H; ++h) in.x.set_bits(r, h, value_bits(c.vdt, rng));
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t h = 0; h < c.H; ++h) in.g.set_bits(t, h, value_bits(c.vdt, rng));
  // A quarter of G's rows (even tokens) get one special value: NaNs with assorted payloads (quiet
  // and signalling), infinities (times a zero prob: the default NaN) and the largest finite value
  // (times a prob above 1: overflow). Every row kernel must round them as the reference does (the
  // vector kernels take a separate NaN path). One per row: the dot products of dP then see at most
  // one NaN, whose payload every fma order keeps.
  for (int64_t t = 0; t < c.T; t += 2)
    if (c.H > 0 && rng() % 2 == 0)
      in.g.set_bits(t, static_cast<int64_t>(rng() % static_cast<uint32_t>(c.H)),
                    special_bits(c.vdt, rng));
  // Map: each token routes to 0..K distinct experts (drop-less: fewer than K is allowed).
  in.map = Buf(c.T % 2 ? DType::boolean : DType::i8, {c.T, c.E}, c.lay);
  const int64_t max_k = c.drop_and_pad ? c.E : c.KC;
  std::vector<int64_t> experts(static_cast<size_t>(c.E));
  std::iota(experts.begin(), experts.end(), 0);
  for (int64_t t = 0; t < c.T; ++t) {
    std::shuffle(experts.begin(), experts.end(), rng);
    const int64_t n = t % 5 == 0 ? max_k : static_cast<int64_t>(rng() % (max_k + 1));
    for (int64_t e = 0; e < c.E; ++e) in.map.set_bits(t, e, 0);
    for (int64_t k = 0; k < n; ++k)  // int8 maps: any nonzero byte routes
      in.map.set_bits(t, experts[static_cast<size_t>(k)],
                      in.map.desc.dtype == DType::i8 ? 1 + rng() % 3 : 1);
  }
  if (c.pdt) {
    in.probs = Buf(*c.pdt, {c.T, c.E}, c.lay);
    for (int64_t t = 0; t < c.T; ++t) {
      bool nan_prob_in_row = false;
      for (int64_t e = 0; e < c.E; ++e) {
        const uint32_t r = rng() % 16;
        const double v = r == 0 ? 0.0 : r == 1 ? -0.0 : (rng() % 1000) / 997.0;
        in.probs.set_bits(t, e, encode(*c.pdt, v));
        // fp32 NaNs whose low payload bits are set: a product keeps them, and rounding it to
        // a 16-bit token dtype must not carry them into the exponent (the NaN fix-up). At
        // most one per token, on odd tokens only (G's special values are on even ones): two
        // NaNs meeting in one add or product keep the payload of whichever operand the
        // compiler put first, which no specification fixes.
        if (*c.pdt == DType::f32 && r == 2 && t % 2 == 1 && !nan_prob_in_row) {
          in.probs.set_bits(t, e, rng() % 2 ? 0x7fffffffu : 0xff80ffffu);
          nan_prob_in_row = true;
        }
      }
    }
  }
  // S / outIndex: drop-less, permutations of the rows with -1 holes; drop-and-pad, S and
  // permuteTokenId any token ids, outIndex a permutation.
  std::vector<int32_t> rows(static_cast<size_t>(R));
  std::iota(rows.begin(), rows.end(), 0);
  in.s = Buf(DType::i32, {R}, c.lay);
  in.o = Buf(DType::i32, {R}, c.lay);
  in.i = Buf(DType::i32, {R}, c.lay);
  auto fill_perm = [&](Buf &b, bool holes) {
    std::shuffle(rows.begin(), rows.end(), rng);
    for (int64_t j = 0; j < R; ++j)
      b.set_bits(
          j, 0, static_cast<uint32_t>(holes && rng() % 6 == 0 ? -1 : rows[static_cast<size_t>(j)]));
  };
  if (!c.drop_and_pad) {
    fill_perm(in.s, true);
    fill_perm(in.o, true);
    for (int64_t j = 0; j < R; ++j) in.i.set_bits(j, 0, static_cast<uint32_t>(j / c.KC));
  } else {
    // Skewed: low token ids take most slots, so some tokens get many and some none.
    for (int64_t j = 0; j < R; ++j) {
      const auto t = static_cast<uint32_t>(rng() % 3 == 0 ? rng() % c.T
                                                          : rng() % std::max<int64_t>(1, c.T / 4));
      in.s.set_bits(j, 0, t);
      in.i.set_bits(j, 0, static_cast<uint32_t>(rng() % c.T));
    }
    fill_perm(in.o, false);
  }
  return in;
}

// The outputs of one forward run.
struct ForwardOut {
  Buf out, out_index, token_id, permute_probs;
};

ForwardOut run_forward(const Case &c, Inputs &in, Backend backend) {
  const int64_t R = c.R();
  UnpermuteDesc d;
  d.permuted_tokens = in.x.desc;
  d.sorted_indices = in.s.desc;
  d.padded_mode = c.drop_and_pad;
  if (c.pdt) d.probs = in.probs.desc, d.routing_map = in.map.desc;
  if (!c.pdt || c.extras) d.restore_shape = std::vector<int64_t>{c.T, c.H};
  ForwardOut o;
  o.out = Buf(c.vdt, {c.T, c.H}, c.lay);
  d.unpermuted_tokens = o.out.desc;
  if (c.extras) {
    o.out_index = Buf(DType::i32, {R}, c.lay);
    o.token_id = Buf(DType::i32, {R}, c.lay);
    o.permute_probs = Buf(c.pdt.value_or(DType::f32), {R}, c.lay);
    d.out_index = o.out_index.desc, d.permute_token_id = o.token_id.desc;
    d.permute_probs = o.permute_probs.desc;
  }
  const Plan plan = plan_unpermute(d, {.backend = backend});
  expect_planned_on(plan, backend);
  {
    Memory mem(backend);  // a device backend's copies come back when it goes
    moeperm::run(
        plan,
        UnpermuteData{mem(in.x), mem(in.s), c.pdt ? mem(in.map) : nullptr,
                      c.pdt ? mem(in.probs) : nullptr, mem(o.out),
                      c.extras ? mem(o.out_index) : nullptr, c.extras ? mem(o.token_id) : nullptr,
                      c.extras ? mem(o.permute_probs) : nullptr},
        mem.workspace(plan.workspace_bytes()));
  }
  return o;
}

struct GradOut {
  Buf dx, dp;
};

GradOut run_grad(const Case &c, Inputs &in, Backend backend) {
  // With probs, CANN's tiling rejects drop-and-pad C > T (U4 Grad rule 3): such a case
  // runs its Grad without probs.
  const bool probs = c.pdt && !(c.drop_and_pad && c.KC > c.T);
  UnpermuteGradDesc d;
  d.unpermuted_tokens_grad = in.g.desc;
  d.out_index = in.o.desc;
  d.permute_token_id = in.i.desc;
  d.drop_and_pad = c.drop_and_pad;
  if (probs) d.probs = in.probs.desc, d.routing_map = in.map.desc;
  GradOut o;
  o.dx = Buf(c.vdt, {c.R(), c.H}, c.lay);
  d.permuted_tokens_grad_out = o.dx.desc;
  const bool dp = c.extras && probs;
  if (dp) {
    o.dp = Buf(c.pdt.value_or(DType::f32), {c.T, c.E}, c.lay);
    d.probs_grad_out = o.dp.desc;
    d.permuted_tokens = in.x.desc;
  }
  const Plan plan = plan_unpermute_grad(d, {.backend = backend});
  expect_planned_on(plan, backend);
  {
    Memory mem(backend);  // a device backend's copies come back when it goes
    moeperm::run(plan,
                 UnpermuteGradData{mem(in.g), mem(in.o), mem(in.i), probs ? mem(in.map) : nullptr,
                                   dp ? mem(in.x) : nullptr, probs ? mem(in.probs) : nullptr,
                                   mem(o.dx), dp ? mem(o.dp) : nullptr},
                 mem.workspace(plan.workspace_bytes()));
  }
  return o;
}

std::vector<Case> cases() {
  struct Combo {
    const char *name;
    DType v;
    std::optional<DType> p;
  };
  const Combo combos[] = {
      {"bf16", DType::bf16, std::nullopt},    {"bf16_bf16p", DType::bf16, DType::bf16},
      {"bf16_f32p", DType::bf16, DType::f32}, {"f16_f16p", DType::f16, DType::f16},
      {"f16", DType::f16, std::nullopt},      {"f32_f32p", DType::f32, DType::f32}};
  std::vector<Case> out;
  for (bool dp : {false, true})
    for (const Combo &k : combos)
      for (Lay lay : {Lay::contiguous, Lay::padded, Lay::strided}) {
        const bool big = lay == Lay::contiguous;
        const char *ln = lay == Lay::contiguous ? "contig"
                         : lay == Lay::padded   ? "padded"
                                                : "strided";
        for (bool extras : {false, true}) {
          Case c{.name = std::string(dp ? "dropandpad_" : "dropless_") + k.name + "_" + ln +
                         (extras ? "_extras" : ""),
                 .drop_and_pad = dp,
                 .T = big ? 613 : 67,
                 .E = big ? 9 : 5,
                 .KC = dp ? (big ? 150 : 20) : (big ? 3 : 2),
                 .H = big ? 1061 : 45,
                 .vdt = k.v,
                 .pdt = k.p,
                 .extras = extras,
                 .lay = lay};
          out.push_back(c);
        }
      }
  // More than 512 slots on a token (drop-and-pad, the gather limit), and K = 512.
  out.push_back({.name = "dropandpad_many_slots_per_token",
                 .drop_and_pad = true,
                 .T = 2,
                 .E = 3,
                 .KC = 400,
                 .H = 77,
                 .vdt = DType::bf16,
                 .pdt = DType::f32,
                 .extras = true});
  out.push_back({.name = "dropless_k512",
                 .drop_and_pad = false,
                 .T = 3,
                 .E = 600,
                 .KC = 512,
                 .H = 40,
                 .vdt = DType::bf16,
                 .pdt = DType::bf16,
                 .extras = true});
  return out;
}

class UnpermuteRandom : public BackendCase<std::tuple<Case, BackendConfig>> {
 protected:
  const Case &problem() const { return std::get<0>(GetParam()); }
};

TEST_P(UnpermuteRandom, ForwardMatchesTheReference) {
  const Case &c = problem();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 31 + c.H));
  const ForwardOut want = run_forward(c, in, Backend::reference);
  const ForwardOut got = run_forward(c, in, backend());
  expect_same_bytes(got.out, want.out, "unpermutedTokens");
  if (c.extras) {
    expect_same_bytes(got.out_index, want.out_index, "outIndex");
    expect_same_bytes(got.token_id, want.token_id, "permuteTokenId");
    expect_same_bytes(got.permute_probs, want.permute_probs, "permuteProbs");
  }
  EXPECT_EQ(poisoned_elements(want.out), 0) << "the reference left elements unwritten";
}

TEST_P(UnpermuteRandom, GradMatchesTheReference) {
  const Case &c = problem();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 17 + c.H));
  const GradOut want = run_grad(c, in, Backend::reference);
  const GradOut got = run_grad(c, in, backend());
  expect_same_bytes(got.dx, want.dx, "permutedTokensGradOut");
  if (!want.dp.bytes.empty()) expect_same_bytes(got.dp, want.dp, "probsGradOut");
  EXPECT_EQ(poisoned_elements(want.dx), 0) << "the reference left dX elements unwritten";
}

std::string CaseName(const ::testing::TestParamInfo<std::tuple<Case, BackendConfig>> &info) {
  return std::get<0>(info.param).name + "_" + config_name(std::get<1>(info.param));
}

std::vector<Case> cases_with(bool contiguous) {
  std::vector<Case> out;
  for (const Case &c : cases())
    if ((c.lay == Lay::contiguous) == contiguous) out.push_back(c);
  return out;
}

// Threads change the work split of the contiguous (large) cases; layouts change only which
// row path runs, so the strided cases run once per ISA.
INSTANTIATE_TEST_SUITE_P(Contiguous, UnpermuteRandom,
                         ::testing::Combine(::testing::ValuesIn(cases_with(true)),
                                            ::testing::ValuesIn(backend_configs(Matrix::full))),
                         CaseName);
INSTANTIATE_TEST_SUITE_P(Strided, UnpermuteRandom,
                         ::testing::Combine(::testing::ValuesIn(cases_with(false)),
                                            ::testing::ValuesIn(backend_configs(Matrix::isas))),
                         CaseName);

}  // namespace
}  // namespace moeperm::testing
