#include "token_path.hpp"

namespace moeperm::bench {

std::unique_ptr<TokenPath> make_token_path(const problem_model::ProblemSpec &s, CaseResult &res) {
  auto path = std::make_unique<TokenPath>(s);
  problem_model::Problem &p = path->p;
  problem_model::UnpermuteTensors &u = path->u;
  RaggedPath &rp = path->rp;
  auto add = [&](auto desc, auto planner, OpData data, OpResult *result, problem_model::Traffic t,
                 std::vector<problem_model::HostTensor *> out) {
    result->bytes = static_cast<double>(t.total());
    path->ops.push_back({[desc, planner](Backend be) { return planner(desc, PlanOptions{be}); },
                         data, result, t, std::move(out)});
  };
  add(p.permute_desc(), [](const auto &d, PlanOptions o) { return plan_permute(d, o); },
      p.permute_data(), &res.forward, problem_model::permute_traffic(s),
      {&p.permuted_tokens, &p.permuted_probs, &p.sorted_indices});
  add(problem_model::unpermute_desc(p, u),
      [](const auto &d, PlanOptions o) { return plan_unpermute(d, o); },
      problem_model::unpermute_data(p, u), &res.unpermute, problem_model::unpermute_traffic(s),
      {&u.unpermuted, &u.out_index, &u.token_id, &u.permute_probs});
  add(problem_model::unpermute_grad_desc(p, u),
      [](const auto &d, PlanOptions o) { return plan_unpermute_grad(d, o); },
      problem_model::unpermute_grad_data(p, u), &res.unpermute_grad,
      problem_model::unpermute_grad_traffic(s), {&u.permuted_tokens_grad, &u.probs_grad});
  add(p.grad_desc(), [](const auto &d, PlanOptions o) { return plan_permute_grad(d, o); },
      p.grad_data(), &res.backward, problem_model::permute_grad_traffic(s),
      {&p.tokens_grad, &p.dense_probs_grad});
  // The ragged pair moves the same tensors as its CANN counterparts.
  add(rp.permute, [](const auto &d, PlanOptions o) { return plan_ragged_permute(d, o); },
      rp.permute_data, &res.ragged_permute, problem_model::permute_traffic(s),
      {&rp.y, &rp.yp, &rp.s});
  add(rp.unpermute, [](const auto &d, PlanOptions o) { return plan_ragged_unpermute(d, o); },
      rp.unpermute_data, &res.ragged_unpermute, problem_model::unpermute_traffic(s), {&rp.out});
  add(rp.unpermute_grad,
      [](const auto &d, PlanOptions o) { return plan_ragged_unpermute_grad(d, o); },
      rp.unpermute_grad_data, &res.ragged_unpermute_grad, problem_model::unpermute_grad_traffic(s),
      {&rp.dx, &rp.dp});
  add(rp.permute_grad, [](const auto &d, PlanOptions o) { return plan_ragged_permute_grad(d, o); },
      rp.permute_grad_data, &res.ragged_permute_grad, problem_model::permute_grad_traffic(s),
      {&rp.tg, &rp.pg});
  add(rp.sort, [](const auto &d, PlanOptions o) { return plan_sort_chunks(d, o); }, rp.sort_data,
      &res.sort_chunks, sort_chunks_traffic(s), {&rp.sorted, &rp.sorted_p});
  add(rp.sort_grad, [](const auto &d, PlanOptions o) { return plan_sort_chunks_grad(d, o); },
      rp.sort_grad_data, &res.sort_chunks_grad, sort_chunks_traffic(s), {&rp.back, &rp.back_p});
  return path;
}

std::vector<problem_model::HostTensor *> TokenPath::tensors() {
  return {&p.tokens,
          &p.routing_map,
          &p.probs,
          &p.permuted_tokens,
          &p.permuted_probs,
          &p.sorted_indices,
          &p.grad,
          &p.probs_grad,
          &p.tokens_grad,
          &p.dense_probs_grad,
          &u.out_grad,
          &u.unpermuted,
          &u.out_index,
          &u.token_id,
          &u.permute_probs,
          &u.permuted_tokens_grad,
          &u.probs_grad,
          &rp.y,
          &rp.yp,
          &rp.s,
          &rp.out,
          &rp.dx,
          &rp.dp,
          &rp.tg,
          &rp.pg,
          &rp.sizes,
          &rp.order,
          &rp.sorted,
          &rp.sorted_p,
          &rp.back,
          &rp.back_p};
}

void run_on_host(const Plan &plan, const OpData &data, std::span<std::byte> workspace) {
  std::visit([&](const auto &d) { run(plan, d, workspace); }, data);
}

}  // namespace moeperm::bench
