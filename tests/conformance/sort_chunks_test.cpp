// sort_chunks and sort_chunks_grad (docs/sort_chunks.md) on random problems, against an
// oracle of this file: the sorted rows listed by walking sorted_index and each chunk's rows
// (their input rows from a running sum of split_sizes). Values are random bit patterns
// (NaNs with payloads, -0, denormals included): a chunk sort moves bits and must keep every
// one. Chunks that are empty, a single chunk, chunks longer than the CPU's row blocks, S
// from 1 to 96, probs of another dtype than the tokens', three layouts, T = 0 and H = 0.
// The reference is checked against the oracle; every CPU configuration (ISA x {1, all}
// threads) against the reference's storage bytes, views and poisoned storage around them.
// The backward is checked against the oracle and, through a round trip, against the input.
// On a GPU (label gpu) the CUDA backend runs every case in both directions on device copies
// and must write the reference's bytes.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend_matrix.hpp"
#include "poisoned_buffer.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

struct Case {
  std::string name;
  int64_t T = 0, H = 0, S = 0;
  int64_t long_chunk = 0;  // > 0: one chunk of this many rows, the rest spread
  DType vdt = DType::f32;
  std::optional<DType> pdt;
  Lay lay = Lay::contiguous;
};

void PrintTo(const Case &c, std::ostream *os) { *os << c.name; }

struct Inputs {
  Buf x, sizes, order, probs;
  std::vector<int64_t> source;  // the oracle: sorted row r is input row source[r]
};

uint32_t random_bits(DType dt, std::mt19937 &rng) {
  const uint32_t mask = dt == DType::f32 ? 0xFFFFFFFFu : 0xFFFFu;
  uint32_t v = rng() & mask;
  while (v == mask) v = rng() & mask;  // all ones is the poison
  return v;
}

Inputs make_inputs(const Case &c, uint32_t seed) {
  std::mt19937 rng(seed);
  Inputs in;
  in.x = Buf(c.vdt, {c.T, c.H}, c.lay);
  for (int64_t t = 0; t < c.T; ++t)
    for (int64_t h = 0; h < c.H; ++h) in.x.set_bits(t, h, random_bits(c.vdt, rng));
  // Sizes: cut T at S - 1 random points (so some chunks are empty), or one long chunk.
  std::vector<int64_t> sizes(static_cast<size_t>(c.S), 0);
  int64_t left = c.T;
  if (c.long_chunk > 0)
    sizes[static_cast<size_t>(rng() % c.S)] = c.long_chunk, left -= c.long_chunk;
  for (int64_t i = 0; i < left; ++i) ++sizes[rng() % static_cast<size_t>(c.S)];
  std::vector<int64_t> order(static_cast<size_t>(c.S));
  std::iota(order.begin(), order.end(), int64_t{0});
  std::shuffle(order.begin(), order.end(), rng);
  in.sizes = Buf(DType::i32, {c.S}, c.lay);
  in.order = Buf(DType::i32, {c.S}, c.lay);
  std::vector<int64_t> start(static_cast<size_t>(c.S));
  for (int64_t s = 0, sum = 0; s < c.S; sum += sizes[static_cast<size_t>(s++)]) {
    in.sizes.set_bits(s, 0, static_cast<uint32_t>(sizes[static_cast<size_t>(s)]));
    in.order.set_bits(s, 0, static_cast<uint32_t>(order[static_cast<size_t>(s)]));
    start[static_cast<size_t>(s)] = sum;
  }
  for (int64_t chunk : order)
    for (int64_t i = 0; i < sizes[static_cast<size_t>(chunk)]; ++i)
      in.source.push_back(start[static_cast<size_t>(chunk)] + i);
  if (c.pdt) {
    in.probs = Buf(*c.pdt, {c.T}, c.lay);
    for (int64_t t = 0; t < c.T; ++t) in.probs.set_bits(t, 0, random_bits(*c.pdt, rng));
  }
  return in;
}

struct Out {
  Buf y, yp;
};

// Forward: sort `x`'s chunks. Backward (grad): put `x`'s sorted chunks back. A device
// backend runs on device copies of every storage (Memory), downloaded after the run.
Out run_sort(const Case &c, Inputs &in, Buf &x, Buf &probs, bool grad, Backend backend) {
  Out o{Buf(c.vdt, {c.T, c.H}, c.lay), c.pdt ? Buf(*c.pdt, {c.T}, c.lay) : Buf()};
  std::optional<TensorDesc> pd, ypd;
  if (c.pdt) pd = probs.desc, ypd = o.yp.desc;
  Plan plan = grad
                  ? plan_sort_chunks_grad({x.desc, in.sizes.desc, in.order.desc, pd, o.y.desc, ypd},
                                          {.backend = backend})
                  : plan_sort_chunks({x.desc, in.sizes.desc, in.order.desc, pd, o.y.desc, ypd},
                                     {.backend = backend});
  if (c.T > 0 && c.H > 0) expect_planned_on(plan, backend);
  Memory mem(backend);
  const void *pr = c.pdt ? mem(probs) : nullptr;
  void *yp = c.pdt ? mem(o.yp) : nullptr;
  const std::span<std::byte> ws = mem.workspace(plan.workspace_bytes());
  if (grad)
    run(plan, SortChunksGradData{mem(x), mem(in.sizes), mem(in.order), pr, mem(o.y), yp}, ws);
  else
    run(plan, SortChunksData{mem(x), mem(in.sizes), mem(in.order), pr, mem(o.y), yp}, ws);
  return o;
}

// Sorted row r of `sorted` is row source[r] of `original`.
void expect_oracle(const Case &c, const Inputs &in, const Buf &original, const Buf &sorted,
                   const char *what) {
  for (int64_t r = 0; r < c.T; ++r)
    for (int64_t h = 0; h < (sorted.desc.shape.size() == 2 ? c.H : 1); ++h)
      ASSERT_EQ(sorted.bits(r, h), original.bits(in.source[static_cast<size_t>(r)], h))
          << what << ": sorted row " << r << ", h " << h;
}

std::vector<BackendConfig> configs(const Case &c) {
  return backend_configs(c.lay == Lay::contiguous ? Matrix::full : Matrix::isas,
                         {.reference = false, .devices = false});
}

class SortChunksRandom : public ::testing::TestWithParam<Case> {};

TEST_P(SortChunksRandom, ForwardMatchesTheOracle) {
  const Case &c = GetParam();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 13 + c.H * 7 + c.S));
  const Out want = run_sort(c, in, in.x, in.probs, false, Backend::reference);
  expect_oracle(c, in, in.x, want.y, "sorted_tokens");
  if (c.pdt) expect_oracle(c, in, in.probs, want.yp, "sorted_probs");
  EXPECT_EQ(poisoned_elements(want.y), 0);
  for (const BackendConfig &cfg : configs(c)) {
    SCOPED_TRACE(config_name(cfg));
    const ScopedConfig scope(cfg);
    const Out got = run_sort(c, in, in.x, in.probs, false, cfg.backend());
    expect_same_bytes(got.y, want.y, "sorted_tokens");
    if (c.pdt) expect_same_bytes(got.yp, want.yp, "sorted_probs");
  }
}

// The backward of random gradients against the oracle (tokens_grad[source[r]] = G[r]), and
// the round trip: the backward of the forward's output is the forward's input, bit for bit.
TEST_P(SortChunksRandom, BackwardPutsTheRowsBack) {
  const Case &c = GetParam();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 5 + c.H * 3 + c.S));
  Inputs g = make_inputs(c, static_cast<uint32_t>(c.T * 11 + c.H + c.S));
  const Out want = run_sort(c, in, g.x, g.probs, true, Backend::reference);
  expect_oracle(c, in, want.y, g.x, "tokens_grad");
  if (c.pdt) expect_oracle(c, in, want.yp, g.probs, "probs_grad");
  Out sorted = run_sort(c, in, in.x, in.probs, false, Backend::reference);
  for (const BackendConfig &cfg : configs(c)) {
    SCOPED_TRACE(config_name(cfg));
    const ScopedConfig scope(cfg);
    const Out got = run_sort(c, in, g.x, g.probs, true, cfg.backend());
    expect_same_bytes(got.y, want.y, "tokens_grad");
    if (c.pdt) expect_same_bytes(got.yp, want.yp, "probs_grad");
    const Out back = run_sort(c, in, sorted.y, sorted.yp, true, cfg.backend());
    expect_same_bytes(back.y, in.x, "round trip of tokens");
    if (c.pdt) expect_same_bytes(back.yp, in.probs, "round trip of probs");
  }
}

std::vector<Case> cases(bool contiguous) {
  struct Shape {
    const char *name;
    int64_t T, H, S, long_chunk;
  };
  const Shape shapes[] = {{"ep8x4", 389, 33, 32, 0}, {"one_chunk", 300, 17, 1, 0},
                          {"long", 1031, 9, 7, 700}, {"many", 777, 5, 96, 0},
                          {"h1", 257, 1, 5, 0},      {"t0", 0, 16, 4, 0},
                          {"h0", 37, 0, 3, 0},       {"big", 2600, 128, 24, 1100}};
  struct Dtypes {
    const char *name;
    DType vdt;
    std::optional<DType> pdt;
  };
  const Dtypes dtypes[] = {{"bf16", DType::bf16, std::nullopt},
                           {"f16_probs", DType::f16, DType::f16},
                           {"bf16_f32probs", DType::bf16, DType::f32},
                           {"f32_bf16probs", DType::f32, DType::bf16}};
  std::vector<Case> out;
  const Lay lays[] = {Lay::padded, Lay::strided};
  for (const Shape &s : shapes)
    for (const Dtypes &d : dtypes) {
      if (contiguous) {
        out.push_back({std::string(s.name) + "_" + d.name, s.T, s.H, s.S, s.long_chunk, d.vdt,
                       d.pdt, Lay::contiguous});
        continue;
      }
      if (s.T > 1500) continue;  // layouts change addressing, not the walk: small suffices
      const Lay lay = lays[out.size() % 2];
      out.push_back(
          {std::string(s.name) + "_" + d.name + (lay == Lay::padded ? "_padded" : "_strided"), s.T,
           s.H, s.S, s.long_chunk, d.vdt, d.pdt, lay});
    }
  return out;
}

std::string CaseName(const ::testing::TestParamInfo<Case> &p) { return p.param.name; }

// Device backends (label gpu; skipped without a GPU): both directions against the
// reference's storage bytes, on device copies of every storage.
class SortChunksOnDevice : public BackendCase<std::tuple<Case, BackendConfig>> {
 protected:
  const Case &problem() const { return std::get<0>(GetParam()); }
};

TEST_P(SortChunksOnDevice, BothDirectionsMatchTheReference) {
  const Case &c = problem();
  Inputs in = make_inputs(c, static_cast<uint32_t>(c.T * 13 + c.H * 7 + c.S));
  for (bool grad : {false, true}) {
    const Out want = run_sort(c, in, in.x, in.probs, grad, Backend::reference);
    const Out got = run_sort(c, in, in.x, in.probs, grad, backend());
    expect_same_bytes(got.y, want.y, grad ? "tokens_grad" : "sorted_tokens");
    if (c.pdt) expect_same_bytes(got.yp, want.yp, grad ? "probs_grad" : "sorted_probs");
  }
}

std::vector<BackendConfig> device_configs() {
  std::vector<BackendConfig> out;
  for (const BackendConfig &cfg : backend_configs(Matrix::one, {.reference = false}))
    if (cfg.info.device) out.push_back(cfg);
  return out;
}

std::string DeviceCaseName(const ::testing::TestParamInfo<std::tuple<Case, BackendConfig>> &p) {
  return std::get<0>(p.param).name + "_" + config_name(std::get<1>(p.param));
}

// Without a device backend in this build, the suite has no instances (allowed below).
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(SortChunksOnDevice);
INSTANTIATE_TEST_SUITE_P(All, SortChunksOnDevice,
                         ::testing::Combine(::testing::ValuesIn([] {
                                              std::vector<Case> all = cases(true);
                                              for (Case &k : cases(false)) all.push_back(k);
                                              return all;
                                            }()),
                                            ::testing::ValuesIn(device_configs())),
                         DeviceCaseName);

INSTANTIATE_TEST_SUITE_P(Contiguous, SortChunksRandom, ::testing::ValuesIn(cases(true)), CaseName);
INSTANTIATE_TEST_SUITE_P(Strided, SortChunksRandom, ::testing::ValuesIn(cases(false)), CaseName);

}  // namespace
}  // namespace moeperm::testing
