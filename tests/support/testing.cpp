#include "testing.hpp"

#include "core/plan.hpp"
#include "device_memory.hpp"
#include "operators.hpp"

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace moeperm::testing {
namespace {

// Rows of the view, 0 when it has no elements: a [T, 0] tensor may have any T (the fuzz
// harness makes T = 2^48), and loops over its rows must not walk them.
int64_t rows_of(const HostTensor &t) {
  if (t.desc.shape.empty() || (t.desc.shape.size() == 2 && t.desc.shape[1] == 0)) return 0;
  return t.desc.shape[0];
}
int64_t cols_of(const HostTensor &t) { return t.desc.shape.size() == 2 ? t.desc.shape[1] : 1; }
int64_t offset_of(const HostTensor &t, int64_t i, int64_t j) {
  return t.desc.shape.size() == 2 ? t.at(i, j) : t.at(i);
}

// Plans `desc` for operator Op on `backend` and runs it over `data` with a workspace of
// exactly plan.workspace_bytes(): host memory as given, or p's device copies.
template <class Op>
void run_op(Problem &p, Backend backend, const typename Op::Desc &desc,
            const typename Op::Data &data) {
  const Plan plan = Op::plan(desc, PlanOptions{backend});
  expect_planned_on(plan, backend);
  if (!backend_info(backend).device) {
    std::vector<std::byte> ws(static_cast<size_t>(plan.workspace_bytes()));
    run(plan, data, ws);
    return;
  }
  DeviceProblem dev(p);
  DeviceWorkspace ws(plan.workspace_bytes());
  try {
    run(plan, Op::map_data(data, [&](auto *host) { return decltype(host)(dev(host)); }), ws.span(),
        nullptr);
  } catch (...) {
    dev.download();  // a failed run must have written nothing: let the test see that
    throw;
  }
  dev.download();
}

}  // namespace

void expect_planned_on(const Plan &plan, Backend backend) {
  if (backend == Backend::automatic) return;
  const BackendInfo b = backend_info(backend);
  // A pinned host backend hands R = 0 or H = 0 to the reference (Note [Empty problems]).
  const bool empty = plan.impl().R == 0 || plan.impl().H == 0;
  const char *expected = (empty && !b.device) ? "reference" : b.name;
  EXPECT_STREQ(plan.backend_name(), expected)
      << "the plan must run on the backend under test (" << b.name << ")";
}

BackendInfo backend_info(Backend backend) {
  for (const BackendInfo &b : backends())
    if (b.backend == backend) return b;
  return BackendInfo{backend, "automatic", false, true};
}

void run_forward(Problem &p, Backend backend) {
  run_op<PermuteOp>(p, backend, PermuteOp::desc(p), PermuteOp::data(p));
}

void run_backward(Problem &p, Backend backend) {
  run_op<PermuteGradOp>(p, backend, PermuteGradOp::desc(p), PermuteGradOp::data(p));
}

void run_both(Problem &p, Backend backend) {
  run_forward(p, backend);
  run_backward(p, backend);
}

void run_with(Problem &p, Backend backend, const PermuteDesc &desc, const PermuteData &data) {
  run_op<PermuteOp>(p, backend, desc, data);
}

void run_with(Problem &p, Backend backend, const PermuteGradDesc &desc,
              const PermuteGradData &data) {
  run_op<PermuteGradOp>(p, backend, desc, data);
}

HostTensor poisoned_like(const HostTensor &like, const Layout &layout) {
  return problem_model::make_tensor(like.desc.dtype, like.desc.shape, layout, kPoison);
}

HostTensor relayout(const HostTensor &src, const Layout &layout) {
  HostTensor dst = poisoned_like(src, layout);
  for (int64_t i = 0; i < rows_of(src); ++i)
    for (int64_t j = 0; j < cols_of(src); ++j) set_bits(dst, i, j, bits_at(src, i, j));
  return dst;
}

int64_t bytes_written_outside_view(const HostTensor &t) {
  const int64_t es = element_size(t.desc.dtype);
  std::vector<bool> inside(t.storage.size(), false);
  for (int64_t i = 0; i < rows_of(t); ++i)
    for (int64_t j = 0; j < cols_of(t); ++j)
      for (int64_t b = 0; b < es; ++b)
        inside[static_cast<size_t>(offset_of(t, i, j) * es + b)] = true;
  int64_t n = 0;
  for (size_t b = 0; b < t.storage.size(); ++b) n += !inside[b] && t.storage[b] != kPoison;
  return n;
}

bool untouched(const HostTensor &t) {
  for (std::byte b : t.storage)
    if (b != kPoison) return false;
  return true;
}

uint64_t bits_at(const HostTensor &t, int64_t i, int64_t j) {
  const int64_t es = element_size(t.desc.dtype);
  uint64_t v = 0;
  std::memcpy(&v, t.storage.data() + offset_of(t, i, j) * es, static_cast<size_t>(es));
  return v;  // little-endian: the low `es` bytes hold the element
}

void set_bits(HostTensor &t, int64_t i, int64_t j, uint64_t bits) {
  const int64_t es = element_size(t.desc.dtype);
  std::memcpy(t.storage.data() + offset_of(t, i, j) * es, &bits, static_cast<size_t>(es));
}

std::vector<int32_t> read_indices(const HostTensor &t) {
  std::vector<int32_t> v(static_cast<size_t>(rows_of(t)));
  for (int64_t i = 0; i < rows_of(t); ++i)
    v[static_cast<size_t>(i)] = static_cast<int32_t>(static_cast<uint32_t>(bits_at(t, i)));
  return v;
}

void write_indices(HostTensor &t, const std::vector<int32_t> &values) {
  for (size_t i = 0; i < values.size(); ++i)
    set_bits(t, static_cast<int64_t>(i), 0, static_cast<uint32_t>(values[i]));
}

::testing::AssertionResult BitwiseEqual(const HostTensor &got, const HostTensor &want) {
  if (got.desc.shape != want.desc.shape || got.desc.dtype != want.desc.dtype)
    return ::testing::AssertionFailure() << "shape/dtype differ: " << to_string(got.desc.dtype)
                                         << " vs " << to_string(want.desc.dtype);
  const int64_t diff = problem_model::count_bit_differences(got, want);
  if (diff == 0) return ::testing::AssertionSuccess();
  auto failure = ::testing::AssertionFailure();
  failure << diff << " of " << got.numel() << " elements differ; first:";
  int shown = 0;
  for (int64_t i = 0; i < rows_of(got) && shown < 5; ++i)
    for (int64_t j = 0; j < cols_of(got) && shown < 5; ++j)
      if (bits_at(got, i, j) != bits_at(want, i, j)) {
        failure << " [" << i << "," << j << "] got 0x" << std::hex << bits_at(got, i, j) << " ("
                << got.get(i, j) << ") want 0x" << bits_at(want, i, j) << " (" << want.get(i, j)
                << ")" << std::dec;
        ++shown;
      }
  return failure;
}

::testing::AssertionResult AllZero(const HostTensor &t) {
  for (int64_t i = 0; i < rows_of(t); ++i)
    for (int64_t j = 0; j < cols_of(t); ++j)
      if (bits_at(t, i, j) != 0)
        return ::testing::AssertionFailure()
               << "element [" << i << "," << j << "] has bits 0x" << std::hex << bits_at(t, i, j);
  return ::testing::AssertionSuccess();
}

::testing::AssertionResult SameOutputs(const Problem &got, const Problem &want) {
  struct Pair {
    const char *name;
    const HostTensor &a, &b;
  };
  const Pair pairs[] = {{"permuted_tokens", got.permuted_tokens, want.permuted_tokens},
                        {"sorted_indices", got.sorted_indices, want.sorted_indices},
                        {"tokens_grad", got.tokens_grad, want.tokens_grad},
                        {"permuted_probs", got.permuted_probs, want.permuted_probs},
                        {"dense_probs_grad", got.dense_probs_grad, want.dense_probs_grad}};
  for (const Pair &p : pairs) {
    if (p.a.desc.shape.empty() && p.b.desc.shape.empty()) continue;  // not allocated
    if (auto r = BitwiseEqual(p.a, p.b); !r)
      return ::testing::AssertionFailure() << p.name << ": " << r.message();
  }
  return ::testing::AssertionSuccess();
}

std::string describe(const ProblemSpec &s) {
  std::ostringstream o;
  o << "T=" << s.T << " H=" << s.H << " E=" << s.E << " K=" << s.K << " C=" << s.capacity
    << " dropAndPad=" << s.drop_and_pad << " dtype=" << to_string(s.dtype)
    << " probs=" << (s.with_probs ? to_string(s.probs_dtype) : "none")
    << " map=" << to_string(s.map_dtype) << " ragged=" << s.ragged << " seed=" << s.seed;
  return o.str();
}

ScopedEnv::ScopedEnv(const char *name, const char *value) : name_(name) {
  if (const char *old = std::getenv(name)) had_old_ = true, old_ = old;
  if (value)
    ::setenv(name, value, 1);
  else
    ::unsetenv(name);
}

ScopedEnv::~ScopedEnv() {
  if (had_old_)
    ::setenv(name_.c_str(), old_.c_str(), 1);
  else
    ::unsetenv(name_.c_str());
}

}  // namespace moeperm::testing
