#include "bench_ragged.hpp"

namespace moeperm::bench {
namespace {

problem_model::HostTensor tensor_for(const TensorDesc &d) {
  return problem_model::make_tensor(d.dtype, d.shape);
}

// The chunk sort of the ragged permute's rows and its Grad (RaggedPath).
void add_sort_chunks(problem_model::Problem &p, RaggedPath &r) {
  const problem_model::ProblemSpec &s = p.spec;
  const int64_t R = r.permute.permuted_tokens.shape[0], E = s.E, ranks = E % 8 == 0 ? 8 : 1;
  r.sizes = problem_model::make_tensor(DType::i32, {E});
  r.order = problem_model::make_tensor(DType::i32, {E});
  for (int64_t c = 0; c < E; ++c) {
    r.sizes.set(c, static_cast<double>(R * (c + 1) / E - R * c / E));
    // Chunk c is (rank c / (E / ranks), local expert c % (E / ranks)); sorted by local expert.
    const int64_t local = E / ranks, j = c;
    r.order.set(j, static_cast<double>((j % ranks) * local + j / ranks));
  }
  const bool probs = s.with_probs;
  SortChunksDesc &d = r.sort;
  d.tokens = r.permute.permuted_tokens;
  d.split_sizes = r.sizes.desc;
  d.sorted_index = r.order.desc;
  if (probs) d.probs = *r.permute.permuted_probs, d.sorted_probs = d.probs;
  d = infer_outputs(d);
  r.sorted = tensor_for(d.sorted_tokens);
  if (probs) r.sorted_p = tensor_for(*d.sorted_probs);
  r.sort_data = {r.y.data(),      r.sizes.data(),
                 r.order.data(),  probs ? r.yp.data() : nullptr,
                 r.sorted.data(), probs ? r.sorted_p.data() : nullptr};
  SortChunksGradDesc &g = r.sort_grad;
  g = {p.grad.desc,    d.split_sizes,
       d.sorted_index, probs ? p.probs_grad.desc : std::optional<TensorDesc>{},
       d.tokens,       probs ? p.probs_grad.desc : std::optional<TensorDesc>{}};
  g = infer_outputs(g);
  r.back = tensor_for(g.tokens_grad);
  if (probs) r.back_p = tensor_for(*g.probs_grad);
  r.sort_grad_data = {p.grad.data(),  r.sizes.data(),
                      r.order.data(), probs ? p.probs_grad.data() : nullptr,
                      r.back.data(),  probs ? r.back_p.data() : nullptr};
}

}  // namespace

problem_model::Traffic sort_chunks_traffic(const problem_model::ProblemSpec &s) {
  const int64_t b = element_size(s.dtype), bp = element_size(s.probs_dtype), R = s.rows();
  const int64_t row_bytes = R * s.H * b + (s.with_probs ? R * bp : 0);
  return {row_bytes + 2 * 4 * s.E, row_bytes};
}

RaggedPath make_ragged_path(problem_model::Problem &p, problem_model::UnpermuteTensors &u) {
  const problem_model::ProblemSpec &s = p.spec;
  const bool probs = s.with_probs;
  RaggedPath r;
  RaggedPermuteDesc &f = r.permute;
  f.tokens = p.tokens.desc;
  f.routing_map = p.routing_map.desc;
  if (probs)
    f.probs = p.probs.desc, f.permuted_probs = TensorDesc::contiguous(p.probs.desc.dtype, {});
  f.num_out_tokens = s.num_out_tokens();
  f.drop_and_pad = s.drop_and_pad;
  f = infer_outputs(f);
  r.y = tensor_for(f.permuted_tokens);
  r.s = tensor_for(f.sorted_indices);
  if (probs) r.yp = tensor_for(*f.permuted_probs);
  r.permute_data = {
      p.tokens.data(), p.routing_map.data(),          probs ? p.probs.data() : nullptr,
      r.y.data(),      probs ? r.yp.data() : nullptr, r.s.data()};

  RaggedUnpermuteDesc &un = r.unpermute;
  un.permuted_tokens = f.permuted_tokens;
  un.sorted_indices = f.sorted_indices;
  un.drop_and_pad = s.drop_and_pad;
  if (probs) un.probs = p.probs.desc, un.routing_map = p.routing_map.desc;
  un.restore_shape = std::vector<int64_t>{s.T, s.H};
  un = infer_outputs(un);
  r.out = tensor_for(un.unpermuted_tokens);
  r.unpermute_data = {r.y.data(), r.s.data(), probs ? p.routing_map.data() : nullptr,
                      probs ? p.probs.data() : nullptr, r.out.data()};

  RaggedUnpermuteGradDesc &ug = r.unpermute_grad;
  ug.unpermuted_tokens_grad = u.out_grad.desc;
  ug.sorted_indices = f.sorted_indices;
  ug.drop_and_pad = s.drop_and_pad;
  if (probs) {
    ug.probs = p.probs.desc, ug.routing_map = p.routing_map.desc;
    ug.permuted_tokens = f.permuted_tokens;
    ug.probs_grad = TensorDesc::contiguous(p.probs.desc.dtype, {});
  }
  ug = infer_outputs(ug);
  r.dx = tensor_for(ug.permuted_tokens_grad);
  if (probs) r.dp = tensor_for(*ug.probs_grad);
  r.unpermute_grad_data = {u.out_grad.data(),
                           r.s.data(),
                           probs ? p.routing_map.data() : nullptr,
                           probs ? r.y.data() : nullptr,
                           probs ? p.probs.data() : nullptr,
                           r.dx.data(),
                           probs ? r.dp.data() : nullptr};

  RaggedPermuteGradDesc &pg = r.permute_grad;
  pg.permuted_tokens_grad = p.grad.desc;
  pg.sorted_indices = f.sorted_indices;
  pg.num_tokens = s.T;
  pg.drop_and_pad = s.drop_and_pad;
  if (probs) {
    pg.permuted_probs_grad = p.probs_grad.desc;
    pg.routing_map = p.routing_map.desc;
    pg.probs_grad = TensorDesc::contiguous(p.probs_grad.desc.dtype, {});
  }
  pg = infer_outputs(pg);
  r.tg = tensor_for(pg.tokens_grad);
  if (probs) r.pg = tensor_for(*pg.probs_grad);
  r.permute_grad_data = {p.grad.data(), probs ? p.probs_grad.data() : nullptr,
                         r.s.data(),    probs ? p.routing_map.data() : nullptr,
                         r.tg.data(),   probs ? r.pg.data() : nullptr};
  add_sort_chunks(p, r);
  return r;
}

}  // namespace moeperm::bench
