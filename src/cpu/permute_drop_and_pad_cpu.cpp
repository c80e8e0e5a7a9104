// MoeTokenPermuteWithRoutingMap, drop-and-pad, CPU (SPEC §2).
//   C = numOutTokens / E, R = E*C. Expert e's C slots hold its routed tokens in ascending
//   id, then its unrouted tokens in ascending id, truncated to C (a stable descending sort
//   of routingMap.T[e], without sorting: two ascending walks of column e).
//   permuteTokensOut[j] = tokens[S[j]], permuteProbsOut[j] = probs[S[j], j / C].
// One thread per expert; no workspace. Bytes moved: read E*C*H*b + T*E, write R*H*b + R*4.
#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {

Status permute_drop_and_pad(const Plan &p, const Buffers &b, std::byte *) {
  const int64_t es = element_size(p.value_dtype), ps = element_size(p.permuted_probs_dtype);
  const int64_t C = p.C;
  const RowKernels &rk = kernels_of(p);
#pragma omp parallel num_threads(num_threads())
  {
#pragma omp for schedule(static)
    for (int64_t e = 0; e < p.E; ++e) {
      int64_t c = 0;
      auto place = [&](int64_t t) {
        const int64_t j = e * C + c++;
        *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(j)) = static_cast<int32_t>(t);
        copy_row(b.permuted(), p.permuted(), j, b.tokens(), p.tokens(), t, es, rk, p.stream_stores);
        if (p.probs == ProbsWork::compute)
          copy_elem(b.permuted_probs(), p.permuted_probs().at(j), b.dense_probs(),
                    p.dense_probs().at(t, e), ps);
        else if (p.probs == ProbsWork::zero_fill)
          zero_elem(b.permuted_probs(), p.permuted_probs().at(j), ps);
      };
      for (int64_t t = 0; t < p.T && c < C; ++t)
        if (routed(p, b.routing_map(), t, e)) place(t);
      for (int64_t t = 0; t < p.T && c < C; ++t)
        if (!routed(p, b.routing_map(), t, e)) place(t);
    }
    rk.store_fence();
  }
  return Status::success();
}

}  // namespace moeperm::detail::cpu
