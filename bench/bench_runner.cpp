#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <span>
#include <vector>

#include "bench.hpp"

namespace moeperm::bench {
namespace {

double now_ms() {
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// The ceiling: a multi-threaded memcpy that moves `bytes` (reads bytes/2, writes bytes/2),
// each thread copying one contiguous chunk with the C library's memcpy.
class MemcpyBaseline {
 public:
  explicit MemcpyBaseline(double bytes)
      : n_(static_cast<size_t>(bytes / 2)), src_(n_, std::byte{1}), dst_(n_, std::byte{2}) {}
  double time_ms(int threads) {
    const double t0 = now_ms();
    const size_t chunk = (n_ + static_cast<size_t>(threads) - 1) / static_cast<size_t>(threads);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int i = 0; i < threads; ++i) {
      const size_t begin = std::min(n_, chunk * static_cast<size_t>(i));
      const size_t end = std::min(n_, begin + chunk);
      std::memcpy(dst_.data() + begin, src_.data() + begin, end - begin);
    }
    return now_ms() - t0;
  }

 private:
  size_t n_;
  std::vector<std::byte> src_, dst_;
};

template <class Fn>
double time_ms(Fn &&fn) {
  const double t0 = now_ms();
  fn();
  return now_ms() - t0;
}

// One operator of a case: its plan, workspace, traffic and same-run ceiling, and its
// samples.
struct Timed {
  Plan plan;
  std::function<void(const Plan &, std::span<std::byte>)> run;
  OpResult *result;
  std::vector<std::byte> workspace;
  MemcpyBaseline copy;
  std::vector<double> op_ms, copy_ms;

  Timed(Plan p, std::function<void(const Plan &, std::span<std::byte>)> f, OpResult *r,
        double bytes)
      : plan(std::move(p)),
        run(std::move(f)),
        result(r),
        workspace(plan.workspace_bytes()),
        copy(bytes) {
    result->bytes = bytes;
  }
};

}  // namespace

CaseResult run_case(const Case &c, const Options &o) {
  if (o.device == "cuda") return run_case_cuda(c, o);
  CaseResult res;
  res.c = c;
  set_num_threads(c.threads);
  problem_model::Problem p = problem_model::make_problem(c.spec);
  problem_model::UnpermuteTensors u = problem_model::make_unpermute_tensors(p);
  const PermuteData fd = p.permute_data();
  const PermuteGradData bd = p.grad_data();
  const UnpermuteData ud = problem_model::unpermute_data(p, u);
  const UnpermuteGradData ugd = problem_model::unpermute_grad_data(p, u);
  const problem_model::ProblemSpec &s = c.spec;
  // The token path's order: each operator reads what the one before it wrote.
  std::vector<Timed> ops;
  ops.reserve(4);
  ops.emplace_back(
      plan_permute(p.permute_desc(), {Backend::cpu}),
      [&](const Plan &pl, std::span<std::byte> ws) { run(pl, fd, ws); }, &res.forward,
      static_cast<double>(problem_model::permute_bytes(s)));
  ops.emplace_back(
      plan_unpermute(problem_model::unpermute_desc(p, u), {Backend::cpu}),
      [&](const Plan &pl, std::span<std::byte> ws) { run(pl, ud, ws); }, &res.unpermute,
      static_cast<double>(problem_model::unpermute_bytes(s)));
  ops.emplace_back(
      plan_unpermute_grad(problem_model::unpermute_grad_desc(p, u), {Backend::cpu}),
      [&](const Plan &pl, std::span<std::byte> ws) { run(pl, ugd, ws); }, &res.unpermute_grad,
      static_cast<double>(problem_model::unpermute_grad_bytes(s)));
  ops.emplace_back(
      plan_permute_grad(p.grad_desc(), {Backend::cpu}),
      [&](const Plan &pl, std::span<std::byte> ws) { run(pl, bd, ws); }, &res.backward,
      static_cast<double>(problem_model::permute_grad_bytes(s)));
  res.plan = ops.back().plan.to_string();

  for (int i = 0; i < o.warmup; ++i)
    for (Timed &t : ops) {
      t.run(t.plan, t.workspace);
      t.copy.time_ms(c.threads);
    }
  // Interleaved, so that each operator and its ceiling see the same machine state.
  for (int i = 0; i < o.runs; ++i)
    for (Timed &t : ops) {
      t.op_ms.push_back(time_ms([&] { t.run(t.plan, t.workspace); }));
      t.copy_ms.push_back(t.copy.time_ms(c.threads));
    }
  for (Timed &t : ops) finish(*t.result, t.op_ms, t.copy_ms);

  if (c.with_reference && o.ref_runs > 0) {
    // The reference is single-threaded by construction; its inputs are what the timed runs
    // above left (S, outIndex, permuteTokenId).
    for (Timed &t : ops) {
      const Plan ref = [&] {
        if (&t == &ops[0]) return plan_permute(p.permute_desc(), {Backend::reference});
        if (&t == &ops[1])
          return plan_unpermute(problem_model::unpermute_desc(p, u), {Backend::reference});
        if (&t == &ops[2])
          return plan_unpermute_grad(problem_model::unpermute_grad_desc(p, u),
                                     {Backend::reference});
        return plan_permute_grad(p.grad_desc(), {Backend::reference});
      }();
      std::vector<double> samples;
      for (int i = 0; i < o.ref_runs; ++i) samples.push_back(time_ms([&] { t.run(ref, {}); }));
      t.result->ref_ms = median(samples);
    }
  }
  set_num_threads(0);
  return res;
}

}  // namespace moeperm::bench
