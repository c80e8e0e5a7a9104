#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "bench.hpp"
#include "bench_ragged.hpp"
#include "ceilings.hpp"

namespace moeperm::bench {
namespace {

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
  std::function<Plan(Backend)> plan_on;  // the same call planned on another backend
  OpResult *result;
  std::vector<std::byte> workspace;
  problem_model::Traffic traffic;
  std::vector<double> op_ms, copy_ms, traffic_ms, per_call_ms;

  // The call as a CANN program makes it: plan (the first phase), a workspace from the
  // allocator (uninitialised, as aclrtMalloc's), run.
  void run_planned_per_call() const {
    const Plan pl = plan_on(Backend::cpu);
    const auto ws = std::make_unique_for_overwrite<std::byte[]>(pl.workspace_bytes());
    run(pl, std::span<std::byte>(ws.get(), pl.workspace_bytes()));
  }

  Timed(std::function<Plan(Backend)> planner,
        std::function<void(const Plan &, std::span<std::byte>)> f, OpResult *r,
        problem_model::Traffic t)
      : plan(planner(Backend::cpu)),
        run(std::move(f)),
        plan_on(std::move(planner)),
        result(r),
        workspace(plan.workspace_bytes()),
        traffic(t) {
    result->bytes = static_cast<double>(t.total());
  }
};

}  // namespace

CaseResult run_case(const Case &c, const Options &o) {
  if (o.device == "cuda") return run_case_cuda(c, o);
  CaseResult res;
  res.c = c;
  const ScopedCpuIsa forced(c.isa);
  set_num_threads(c.threads);
  problem_model::Problem p = problem_model::make_problem(c.spec);
  problem_model::UnpermuteTensors u = problem_model::make_unpermute_tensors(p);
  const PermuteData fd = p.permute_data();
  const PermuteGradData bd = p.grad_data();
  const UnpermuteData ud = problem_model::unpermute_data(p, u);
  const UnpermuteGradData ugd = problem_model::unpermute_grad_data(p, u);
  const problem_model::ProblemSpec &s = c.spec;
  RaggedPath rp = make_ragged_path(p, u);
  // The token path's order: each operator reads what the one before it wrote; then the
  // ragged pair's token path on the same problem.
  std::vector<Timed> ops;
  ops.reserve(10);
  auto add = [&](auto planner, const auto &data, OpResult *result, problem_model::Traffic t) {
    ops.emplace_back([planner](Backend be) { return planner(PlanOptions{be}); },
                     [&data](const Plan &pl, std::span<std::byte> ws) { run(pl, data, ws); },
                     result, t);
  };
  const UnpermuteDesc udesc = problem_model::unpermute_desc(p, u);
  const UnpermuteGradDesc ugdesc = problem_model::unpermute_grad_desc(p, u);
  const PermuteDesc fdesc = p.permute_desc();
  const PermuteGradDesc bdesc = p.grad_desc();
  add([&](PlanOptions po) { return plan_permute(fdesc, po); }, fd, &res.forward,
      problem_model::permute_traffic(s));
  add([&](PlanOptions po) { return plan_unpermute(udesc, po); }, ud, &res.unpermute,
      problem_model::unpermute_traffic(s));
  add([&](PlanOptions po) { return plan_unpermute_grad(ugdesc, po); }, ugd, &res.unpermute_grad,
      problem_model::unpermute_grad_traffic(s));
  add([&](PlanOptions po) { return plan_permute_grad(bdesc, po); }, bd, &res.backward,
      problem_model::permute_grad_traffic(s));
  // The ragged pair moves the same tensors as its CANN counterparts.
  add([&](PlanOptions po) { return plan_ragged_permute(rp.permute, po); }, rp.permute_data,
      &res.ragged_permute, problem_model::permute_traffic(s));
  add([&](PlanOptions po) { return plan_ragged_unpermute(rp.unpermute, po); }, rp.unpermute_data,
      &res.ragged_unpermute, problem_model::unpermute_traffic(s));
  add([&](PlanOptions po) { return plan_ragged_unpermute_grad(rp.unpermute_grad, po); },
      rp.unpermute_grad_data, &res.ragged_unpermute_grad, problem_model::unpermute_grad_traffic(s));
  add([&](PlanOptions po) { return plan_ragged_permute_grad(rp.permute_grad, po); },
      rp.permute_grad_data, &res.ragged_permute_grad, problem_model::permute_grad_traffic(s));
  add([&](PlanOptions po) { return plan_sort_chunks(rp.sort, po); }, rp.sort_data, &res.sort_chunks,
      sort_chunks_traffic(s));
  add([&](PlanOptions po) { return plan_sort_chunks_grad(rp.sort_grad, po); }, rp.sort_grad_data,
      &res.sort_chunks_grad, sort_chunks_traffic(s));
  res.plan = ops[3].plan.to_string();
  double max_bytes = 0;
  for (const Timed &t : ops) max_bytes = std::max(max_bytes, t.result->bytes);
  Ceilings ceilings(max_bytes);

  for (int i = 0; i < o.warmup; ++i)
    for (Timed &t : ops) {
      t.run(t.plan, t.workspace);
      ceilings.memcpy_ms(t.result->bytes, c.threads);
      ceilings.traffic_ms(t.traffic, c.threads);
    }
  // Interleaved, so that each operator and its ceiling see the same machine state.
  for (int i = 0; i < o.runs; ++i)
    for (Timed &t : ops) {
      t.op_ms.push_back(time_ms([&] { t.run(t.plan, t.workspace); }));
      t.copy_ms.push_back(ceilings.memcpy_ms(t.result->bytes, c.threads));
      t.traffic_ms.push_back(ceilings.traffic_ms(t.traffic, c.threads));
      if (c.plan_per_call) t.per_call_ms.push_back(time_ms([&] { t.run_planned_per_call(); }));
    }
  for (Timed &t : ops) {
    finish(*t.result, t.op_ms, t.copy_ms);
    t.result->traffic_ms = median(t.traffic_ms);
    if (c.plan_per_call) t.result->per_call_ms = median(t.per_call_ms);
  }

  if (c.with_reference && o.ref_runs > 0) {
    // The reference is single-threaded by construction; its inputs are what the timed runs
    // above left (S, outIndex, permuteTokenId).
    for (Timed &t : ops) {
      const Plan ref = t.plan_on(Backend::reference);
      std::vector<double> samples;
      for (int i = 0; i < o.ref_runs; ++i) samples.push_back(time_ms([&] { t.run(ref, {}); }));
      t.result->ref_ms = median(samples);
    }
  }
  set_num_threads(0);
  return res;
}

}  // namespace moeperm::bench
