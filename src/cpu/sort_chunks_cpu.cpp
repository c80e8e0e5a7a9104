// sort_chunks and sort_chunks_grad, CPU (core/ops/sort_chunks.cpp). One kernel for both:
// the sorted rows are cut into blocks of kTokenBlock rows (boundaries that depend on T
// only), and each block finds the chunk of its first row by binary search over the sorted
// chunks' first rows and walks on from there. Sorted row r of chunk j is input row
// start(sorted_index[j]) + (r - its first row); the forward copies that input row to row r, the
// backward row r back to it. Rows and probs are pure copies, so every thread count gives the same
// bytes (Note [Determinism]). Bytes moved: read T*H*b (+ T*bp probs) + 8*S, write T*H*b (+ T*bp).
#include <algorithm>

#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {
namespace {

int64_t value_at(const void *base, const VectorGeom &g, int64_t i) {
  return *elem<int32_t>(base, g.at(i));
}

// split_sizes (each >= 0, summing to T), then sorted_index (index_rules: in [0, S), no chunk
// twice); fills start[c] (input chunk c's first row) and first[j] (sorted chunk j's first
// row; first[S] = T). Serial: S values, next to the T rows the kernel moves.
Status check_and_scan(const Plan &p, const Buffers &b, int64_t *start, int64_t *first,
                      int64_t *first_named) {
  int64_t sum = 0;
  for (int64_t c = 0; c < p.S; ++c) {
    const int64_t n = value_at(b.split_sizes(), p.split_sizes(), c);
    if (n < 0) return bad_split_size(p, 0, c, n);
    start[c] = sum;
    sum += n;
  }
  if (sum != p.T) return split_sizes_total(p, 0, sum, p.T);
  MOEPERM_TRY(check_index_rules(p, b, first_named));
  first[0] = 0;
  for (int64_t j = 0; j < p.S; ++j)
    first[j + 1] = first[j] + value_at(b.split_sizes(), p.split_sizes(),
                                       value_at(b.chunk_order(), p.chunk_order(), j));
  return Status::success();
}

}  // namespace

Status sort_chunks(const Plan &p, const Buffers &b, std::byte *ws) {
  int64_t *start = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotChunkStarts]);
  int64_t *first = start + p.S;
  MOEPERM_TRY(
      check_and_scan(p, b, start, first, p.workspace.at<int64_t>(ws, p.ws_slot[kSlotFirstNamed])));
  const bool forward = p.op == Op::sort_chunks;
  const int64_t es = element_size(p.value_dtype);
  const Role probs_out = forward ? Role::permuted_probs : Role::row_probs;
  const int64_t ps = element_size(p.dtype(probs_out));
  const RowKernels &rk = kernels_of(p);
  auto move = [&](int64_t r, int64_t original) {
    if (forward)
      copy_row(b.permuted(), p.permuted(), r, b.tokens(), p.tokens(), original, es, rk,
               p.stream_stores);
    else
      copy_row(b.tokens(), p.tokens(), original, b.permuted(), p.permuted(), r, es, rk,
               p.stream_stores);
    const int64_t sorted_at = p.permuted_probs().at(r), original_at = p.row_probs().at(original);
    const int64_t out_at = forward ? sorted_at : original_at;
    if (p.probs == ProbsWork::zero_fill) zero_elem(b[probs_out], out_at, ps);
    if (p.probs != ProbsWork::compute) return;
    if (forward)
      copy_elem(b.permuted_probs(), sorted_at, b.row_probs(), original_at, ps);
    else
      copy_elem(b.row_probs(), original_at, b.permuted_probs(), sorted_at, ps);
  };
#pragma omp parallel num_threads(num_threads())
  {
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < token_blocks(p.T); ++blk) {
      const int64_t lo = blk * kTokenBlock, hi = std::min(p.T, lo + kTokenBlock);
      // The last sorted chunk that starts at or before lo (empty chunks share a start).
      int64_t j = std::upper_bound(first, first + p.S + 1, lo) - first - 1;
      for (int64_t r = lo; r < hi; ++r) {
        while (first[j + 1] <= r) ++j;
        const int64_t c = value_at(b.chunk_order(), p.chunk_order(), j);
        move(r, start[c] + (r - first[j]));
      }
    }
    rk.store_fence();
  }
  return Status::success();
}

}  // namespace moeperm::detail::cpu
