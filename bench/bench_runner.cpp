#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "bench.hpp"
#include "ceilings.hpp"
#include "token_path.hpp"

namespace moeperm::bench {
namespace {

template <class Fn>
double time_ms(Fn &&fn) {
  const double t0 = now_ms();
  fn();
  return now_ms() - t0;
}

// One operator of a case: its plan and workspace on the CPU backend, and its samples.
struct Timed {
  const PathOp &op;
  Plan plan;
  std::vector<std::byte> workspace;
  std::vector<double> op_ms, copy_ms, traffic_ms, per_call_ms;

  explicit Timed(const PathOp &o)
      : op(o), plan(o.plan_on(Backend::cpu)), workspace(plan.workspace_bytes()) {}
  void run() { run_on_host(plan, op.data, workspace); }
  // The call as a CANN program makes it: plan (the first phase), a workspace from the
  // allocator (uninitialised, as aclrtMalloc's), run.
  void run_planned_per_call() const {
    const Plan pl = op.plan_on(Backend::cpu);
    const auto ws = std::make_unique_for_overwrite<std::byte[]>(pl.workspace_bytes());
    run_on_host(pl, op.data, std::span<std::byte>(ws.get(), pl.workspace_bytes()));
  }
};

}  // namespace

CaseResult run_case(const Case &c, const Options &o) {
  if (o.device == "cuda") return run_case_cuda(c, o);
  CaseResult res;
  res.c = c;
  const ScopedCpuIsa forced(c.isa);
  set_num_threads(c.threads);
  // The token path's order: each operator reads what the one before it wrote.
  const std::unique_ptr<TokenPath> path = make_token_path(c.spec, res);
  std::vector<Timed> ops;
  ops.reserve(path->ops.size());
  for (const PathOp &op : path->ops) ops.emplace_back(op);
  res.plan = ops[3].plan.to_string();
  double max_bytes = 0;
  for (const Timed &t : ops) max_bytes = std::max(max_bytes, t.op.result->bytes);
  Ceilings ceilings(max_bytes);

  for (int i = 0; i < o.warmup; ++i)
    for (Timed &t : ops) {
      t.run();
      ceilings.memcpy_ms(t.op.result->bytes, c.threads);
      ceilings.traffic_ms(t.op.traffic, c.threads);
    }
  // Interleaved, so that each operator and its ceiling see the same machine state. With
  // plan_per_call, passes alternate between the plan built once and the plan per call, so
  // that both follow the same thing (the previous operator's ceilings). Timed one right after
  // the other, the second found caches the first had left, or the ceilings' in the other
  // order: the plan/call column read -13% to +22% for a first phase of 1-2 us
  // (docs/cpu-performance.md, experiment 6).
  const int passes = c.plan_per_call ? 2 : 1;
  for (int i = 0; i < o.runs * passes; ++i)
    for (Timed &t : ops) {
      if (c.plan_per_call && i % 2 == 1)
        t.per_call_ms.push_back(time_ms([&] { t.run_planned_per_call(); }));
      else
        t.op_ms.push_back(time_ms([&] { t.run(); }));
      t.copy_ms.push_back(ceilings.memcpy_ms(t.op.result->bytes, c.threads));
      t.traffic_ms.push_back(ceilings.traffic_ms(t.op.traffic, c.threads));
    }
  for (Timed &t : ops) {
    finish(*t.op.result, t.op_ms, t.copy_ms);
    t.op.result->traffic_ms = median(t.traffic_ms);
    if (c.plan_per_call) t.op.result->per_call_ms = median(t.per_call_ms);
  }

  if (c.with_reference && o.ref_runs > 0) {
    // The reference is single-threaded by construction; its inputs are what the timed runs
    // above left (S, outIndex, permuteTokenId).
    for (Timed &t : ops) {
      const Plan ref = t.op.plan_on(Backend::reference);
      std::vector<double> samples;
      for (int i = 0; i < o.ref_runs; ++i)
        samples.push_back(time_ms([&] { run_on_host(ref, t.op.data, {}); }));
      t.op.result->ref_ms = median(samples);
    }
  }
  set_num_threads(0);
  return res;
}

}  // namespace moeperm::bench
