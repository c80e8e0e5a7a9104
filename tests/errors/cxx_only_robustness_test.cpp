// Robustness of the operators that have no CANN C API (the ragged pair and the chunk sort;
// the C API's operators are the libFuzzer harness's, tests/fuzz): random calls, most of them
// valid, the rest with one mistake (a dimension off by one, another dtype, an optional
// tensor missing or added, index data out of range or repeated, split sizes that do not add
// up), on random layouts with poisoned storage. For every call:
//  * planning either succeeds on every host backend or fails on each with the same status
//    (161001 / 161002) and message, which names the operator;
//  * a run either fails on every configuration with the reference's status and message and
//    leaves every output byte as it was, or succeeds on each and writes the reference's bytes
//    (every storage byte, so nothing outside a view is written);
//  * inputs are never written.
// Under the asan preset (the README's test command runs it) ASan and UBSan check every
// access as well.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "backend_matrix.hpp"
#include "fp_reference.hpp"
#include "poisoned_buffer.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

// One call: its tensors (inputs first), which are outputs, and how to plan and run it.
struct Call {
  std::string api;
  std::vector<Buf> bufs;
  std::vector<bool> is_output;
  std::function<Plan(const std::vector<Buf> &, Backend)> plan;
  std::function<void(const Plan &, std::vector<Buf> &, std::span<std::byte>)> run;
};

class Maker {
 public:
  explicit Maker(uint32_t seed) : rng_(seed) {}
  int64_t pick(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(rng_() % static_cast<uint32_t>(hi - lo + 1));
  }
  bool one_in(int n) { return rng_() % static_cast<uint32_t>(n) == 0; }
  DType value_dtype() { return std::array{DType::bf16, DType::f16, DType::f32}[rng_() % 3]; }
  DType map_dtype() {
    return std::array{DType::boolean, DType::i8, DType::u8, DType::i32}[rng_() % 4];
  }
  Lay lay() { return std::array{Lay::contiguous, Lay::padded, Lay::strided}[rng_() % 3]; }
  // A shape with, on a mistake, one dimension off by one.
  std::vector<int64_t> shape(std::vector<int64_t> s) {
    if (mistake_ && one_in(6)) s[rng_() % s.size()] += 1;
    return s;
  }
  DType dtype(DType d) {
    return mistake_ && one_in(8) ? std::array{DType::i32, DType::f16, DType::i64}[rng_() % 3] : d;
  }
  bool present(bool wanted) { return mistake_ && one_in(8) ? !wanted : wanted; }
  Buf tensor(DType d, std::vector<int64_t> s) { return Buf(dtype(d), shape(std::move(s)), lay()); }
  void fill_values(Buf &b) {
    for (int64_t i = 0; i < b.desc.shape[0]; ++i)
      for (int64_t j = 0; j < (b.desc.shape.size() == 2 ? b.desc.shape[1] : 1); ++j) {
        const double v = static_cast<double>(pick(-500, 500)) / 128.0;
        if (b.desc.dtype == DType::f32 || b.desc.dtype == DType::f16 || b.desc.dtype == DType::bf16)
          b.set_bits(i, j, encode(b.desc.dtype, v));
        else
          b.set_bits(i, j, static_cast<uint32_t>(pick(0, 2)));
      }
  }
  // Index values in [lo, hi), sometimes a garbage value.
  void fill_index(Buf &b, int64_t lo, int64_t hi) {
    for (int64_t i = 0; i < b.desc.shape[0]; ++i) {
      int64_t v = hi > lo ? pick(lo, hi - 1) : -1;
      if (one_in(40)) v = std::array<int64_t, 3>{hi, -7, 2147483647}[rng_() % 3];
      b.set_bits(i, 0, static_cast<uint32_t>(v));
    }
  }
  bool mistake_ = false;

 private:
  std::mt19937 rng_;
};

std::optional<TensorDesc> optd(const std::vector<Buf> &b, size_t i) {
  return b[i].bytes.empty() ? std::nullopt : std::optional<TensorDesc>(b[i].desc);
}
void *ptr(std::vector<Buf> &b, size_t i) { return b[i].bytes.empty() ? nullptr : b[i].data(); }

Call ragged_call(Maker &m, int which) {
  const int64_t T = m.pick(0, 9), E = m.pick(0, 5), H = m.pick(0, 6);
  const bool dnp = m.one_in(2) && E > 0;
  const int64_t R = dnp ? E * m.pick(0, 3) : m.pick(0, 12);
  const DType vt = m.value_dtype(), pt = m.value_dtype(), mt = m.map_dtype();
  Call c;
  auto add = [&](Buf b, bool out) { c.bufs.push_back(std::move(b)), c.is_output.push_back(out); };
  auto maybe = [&](bool want, DType d, std::vector<int64_t> s, bool out) {
    add(m.present(want) ? m.tensor(d, s) : Buf(), out);
  };
  const bool probs = m.one_in(2);
  if (which == 0) {  // ragged_permute
    c.api = "moeperm::ragged_permute";
    add(m.tensor(vt, {T, H}), false), add(m.tensor(mt, {T, E}), false);
    maybe(probs, pt, {T, E}, false);
    add(m.tensor(vt, {R, H}), true), maybe(probs, pt, {R}, true),
        add(m.tensor(DType::i32, {R}), true);
    c.plan = [=](const std::vector<Buf> &b, Backend be) {
      return plan_ragged_permute(
          {b[0].desc, b[1].desc, optd(b, 2), R, dnp, b[3].desc, optd(b, 4), b[5].desc}, {be});
    };
    c.run = [](const Plan &p, std::vector<Buf> &b, std::span<std::byte> ws) {
      run(p,
          RaggedPermuteData{b[0].data(), b[1].data(), ptr(b, 2), b[3].data(), ptr(b, 4),
                            b[5].data()},
          ws);
    };
  } else if (which == 1) {  // ragged_unpermute
    c.api = "moeperm::ragged_unpermute";
    add(m.tensor(vt, {R, H}), false), add(m.tensor(DType::i32, {R}), false);
    maybe(probs && !dnp, mt, {T, E}, false), maybe(probs, pt, {T, E}, false);
    add(m.tensor(vt, {T, H}), true);
    c.plan = [=](const std::vector<Buf> &b, Backend be) {
      std::optional<std::vector<int64_t>> restore;
      if (b[3].bytes.empty()) restore = std::vector<int64_t>{T, H};
      return plan_ragged_unpermute(
          {b[0].desc, b[1].desc, optd(b, 2), optd(b, 3), dnp, restore, b[4].desc}, {be});
    };
    c.run = [](const Plan &p, std::vector<Buf> &b, std::span<std::byte> ws) {
      run(p, RaggedUnpermuteData{b[0].data(), b[1].data(), ptr(b, 2), ptr(b, 3), b[4].data()}, ws);
    };
  } else if (which == 2) {  // ragged_permute_grad
    c.api = "moeperm::ragged_permute_grad";
    add(m.tensor(vt, {R, H}), false), maybe(probs, pt, {R}, false);
    add(m.tensor(DType::i32, {R}), false), maybe(probs, mt, {T, E}, false);
    add(m.tensor(vt, {T, H}), true), maybe(probs, pt, {T, E}, true);
    c.plan = [=](const std::vector<Buf> &b, Backend be) {
      return plan_ragged_permute_grad(
          {b[0].desc, optd(b, 1), b[2].desc, optd(b, 3), T, dnp, b[4].desc, optd(b, 5)}, {be});
    };
    c.run = [](const Plan &p, std::vector<Buf> &b, std::span<std::byte> ws) {
      run(p,
          RaggedPermuteGradData{b[0].data(), ptr(b, 1), b[2].data(), ptr(b, 3), b[4].data(),
                                ptr(b, 5)},
          ws);
    };
  } else {  // ragged_unpermute_grad
    c.api = "moeperm::ragged_unpermute_grad";
    add(m.tensor(vt, {T, H}), false), add(m.tensor(DType::i32, {R}), false);
    maybe(probs && !dnp, mt, {T, E}, false), maybe(probs, vt, {R, H}, false);
    maybe(probs, pt, {T, E}, false);
    add(m.tensor(vt, {R, H}), true), maybe(probs, pt, {T, E}, true);
    c.plan = [=](const std::vector<Buf> &b, Backend be) {
      return plan_ragged_unpermute_grad(
          {b[0].desc, b[1].desc, optd(b, 2), optd(b, 3), optd(b, 4), dnp, b[5].desc, optd(b, 6)},
          {be});
    };
    c.run = [](const Plan &p, std::vector<Buf> &b, std::span<std::byte> ws) {
      run(p,
          RaggedUnpermuteGradData{b[0].data(), b[1].data(), ptr(b, 2), ptr(b, 3), ptr(b, 4),
                                  b[5].data(), ptr(b, 6)},
          ws);
    };
  }
  for (size_t i = 0; i < c.bufs.size(); ++i) {
    Buf &b = c.bufs[i];
    if (c.is_output[i] || b.bytes.empty()) continue;
    const bool index = b.desc.dtype == DType::i32 && b.desc.shape.size() == 1;
    if (index)
      m.fill_index(b, -1, which == 0 ? 0 : T);
    else
      m.fill_values(b);
  }
  return c;
}

Call sort_chunks_call(Maker &m, bool grad) {
  const int64_t T = m.pick(0, 12), H = m.pick(0, 6), S = m.pick(0, 5);
  const DType vt = m.value_dtype(), pt = m.value_dtype();
  const bool probs = m.one_in(2);
  Call c;
  c.api = grad ? "moeperm::sort_chunks_grad" : "moeperm::sort_chunks";
  auto add = [&](Buf b, bool out) { c.bufs.push_back(std::move(b)), c.is_output.push_back(out); };
  add(m.tensor(vt, {T, H}), false);
  add(m.tensor(DType::i32, {S}), false), add(m.tensor(DType::i32, {S}), false);
  add(m.present(probs) ? m.tensor(pt, {T}) : Buf(), false);
  add(m.tensor(vt, {T, H}), true);
  add(m.present(probs) ? m.tensor(pt, {T}) : Buf(), true);
  c.plan = [grad](const std::vector<Buf> &b, Backend be) {
    if (grad)
      return plan_sort_chunks_grad(
          {b[0].desc, b[1].desc, b[2].desc, optd(b, 3), b[4].desc, optd(b, 5)}, {be});
    return plan_sort_chunks({b[0].desc, b[1].desc, b[2].desc, optd(b, 3), b[4].desc, optd(b, 5)},
                            {be});
  };
  c.run = [grad](const Plan &p, std::vector<Buf> &b, std::span<std::byte> ws) {
    if (grad)
      run(p,
          SortChunksGradData{b[0].data(), b[1].data(), b[2].data(), ptr(b, 3), b[4].data(),
                             ptr(b, 5)},
          ws);
    else
      run(p,
          SortChunksData{b[0].data(), b[1].data(), b[2].data(), ptr(b, 3), b[4].data(), ptr(b, 5)},
          ws);
  };
  m.fill_values(c.bufs[0]);
  if (!c.bufs[3].bytes.empty()) m.fill_values(c.bufs[3]);
  // Sizes that cover the rows (sometimes not), an order that is a permutation (sometimes not).
  Buf &sizes = c.bufs[1], &order = c.bufs[2];
  const int64_t n = sizes.desc.shape[0];
  if (sizes.desc.dtype == DType::i32) {
    std::vector<int64_t> v(static_cast<size_t>(n), 0);
    for (int64_t left = T; left > 0 && n > 0; --left) ++v[static_cast<size_t>(m.pick(0, n - 1))];
    if (n > 0 && m.one_in(10)) v[static_cast<size_t>(m.pick(0, n - 1))] += m.pick(-2, 2);
    for (int64_t i = 0; i < n; ++i)
      sizes.set_bits(i, 0, static_cast<uint32_t>(v[static_cast<size_t>(i)]));
  }
  if (order.desc.dtype == DType::i32) {
    std::vector<int64_t> v(static_cast<size_t>(order.desc.shape[0]));
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<int64_t>(i);
    for (size_t i = v.size(); i > 1; --i)
      std::swap(v[i - 1], v[static_cast<size_t>(m.pick(0, static_cast<int64_t>(i) - 1))]);
    if (!v.empty() && m.one_in(10)) v[0] = m.one_in(2) ? v.back() : static_cast<int64_t>(v.size());
    for (size_t i = 0; i < v.size(); ++i)
      order.set_bits(static_cast<int64_t>(i), 0, static_cast<uint32_t>(v[i]));
  }
  return c;
}

void expect_same_failure(const Failure &got, const Failure &want, const std::string &where) {
  EXPECT_EQ(got.code, want.code) << where << ": " << got.message;
  EXPECT_EQ(got.message, want.message) << where;
}

enum class Result { plan_failed, run_failed, ran };

// Plans and runs `c` on the reference, then on every CPU configuration, and checks the
// invariants of the file's comment.
Result check_call(Call &c, int call) {
  const std::string where = c.api + " call " + std::to_string(call);
  const std::vector<Buf> before = c.bufs;
  std::optional<Plan> ref_plan;
  const Failure planned = failure_of([&] { ref_plan = c.plan(c.bufs, Backend::reference); });
  if (!ref_plan) {
    EXPECT_TRUE(planned.code == Code::null_pointer || planned.code == Code::invalid_param)
        << where << ": " << planned.message;
    EXPECT_EQ(planned.message.rfind(c.api + ": ", 0), 0u) << where << ": " << planned.message;
    expect_same_failure(failure_of([&] { c.plan(c.bufs, Backend::cpu); }), planned, where);
    return Result::plan_failed;
  }
  std::vector<Buf> want = before;
  std::vector<std::byte> ws(ref_plan->workspace_bytes());
  const Failure ran = failure_of([&] { c.run(*ref_plan, want, ws); });
  for (size_t i = 0; i < want.size(); ++i) {
    if (!c.is_output[i] || ran.code != Code::ok) {
      EXPECT_EQ(want[i].bytes, before[i].bytes) << where << ": tensor " << i << " written";
    }
  }
  if (ran.code != Code::ok) {
    EXPECT_EQ(ran.message.rfind(c.api + ": ", 0), 0u) << where << ": " << ran.message;
  }
  for (const BackendConfig &cfg :
       backend_configs(Matrix::isas, {.reference = false, .devices = false})) {
    const ScopedConfig scope(cfg);
    std::vector<Buf> got = before;
    std::optional<Plan> plan;
    const Failure p = failure_of([&] { plan = c.plan(got, cfg.backend()); });
    EXPECT_EQ(p.code, Code::ok) << where << " on " << config_name(cfg) << ": " << p.message;
    if (!plan) return Result::plan_failed;
    std::vector<std::byte> w(plan->workspace_bytes());
    const Failure r = failure_of([&] { c.run(*plan, got, w); });
    expect_same_failure(r, ran, where + " on " + config_name(cfg));
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_EQ(got[i].bytes, want[i].bytes)
          << where << " on " << config_name(cfg) << ": tensor " << i;
  }
  return ran.code == Code::ok ? Result::ran : Result::run_failed;
}

class CxxOnlyRobustness : public ::testing::TestWithParam<int> {};

TEST_P(CxxOnlyRobustness, RandomCallsFailCleanlyOrMatchTheReference) {
  const int family = GetParam();  // 0-3: the ragged operators, 4-5: the chunk sort pair
  Maker m(static_cast<uint32_t>(1000 + family));
  std::array<int, 3> results{};
  for (int call = 0; call < 400; ++call) {
    m.mistake_ = call % 3 == 2;
    Call c = family < 4 ? ragged_call(m, family) : sort_chunks_call(m, family == 5);
    ++results[static_cast<size_t>(check_call(c, call))];
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("%d calls failed to plan, %d failed to run, %d ran\n", results[0], results[1],
              results[2]);
  // Every outcome must be exercised, or the test checks less than it says.
  EXPECT_GT(results[0], 20);
  if (family != 0) {  // ragged_permute reads no index: it has no data rule
    EXPECT_GT(results[1], 3);
  }
  EXPECT_GT(results[2], 100);
}

std::string FamilyName(const ::testing::TestParamInfo<int> &info) {
  static const char *const kNames[] = {"ragged_permute",      "ragged_unpermute",
                                       "ragged_permute_grad", "ragged_unpermute_grad",
                                       "sort_chunks",         "sort_chunks_grad"};
  return kNames[info.param];
}

INSTANTIATE_TEST_SUITE_P(Operators, CxxOnlyRobustness, ::testing::Range(0, 6), FamilyName);

}  // namespace
}  // namespace moeperm::testing
