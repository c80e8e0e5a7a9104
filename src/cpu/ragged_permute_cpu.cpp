// ragged_permute, CPU, both modes (docs/ragged.md; core/ops/ragged_permute.cpp).
// A pair's position in its list comes from per-block counts (block_column_counts) and an
// exclusive scan, as for the permute: drop-less the list is expert-major over the whole map
// (row = position, kept while < R); drop-and-pad each expert has its own list (row = e*C +
// position, kept while position < C). Token block b walks its tokens ascending, so each
// pair's row is the same for every thread count (Note [Determinism]). Pass 1 writes each
// kept row's token; pass 2 moves every row (one thread each): a gather, balanced whichever
// tokens the rows hold.
// Bytes moved: read T*H*b (kept rows' tokens) + T*E*bm, write R*H*b + R*4 (+ R*bp probs).
#include <algorithm>

#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {
namespace {

void set_index(const Plan &p, const Buffers &b, int64_t r, int64_t t) {
  *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(r)) = static_cast<int32_t>(t);
}

// Exclusive scans of the per-block counts, in place: drop-less in expert-major order over
// the whole map (e outer, block inner), drop-and-pad per expert. On return base[b*E + e] is
// the position of block b's first pair of expert e in its list, and base[blocks*E + e] the
// length of expert e's list (drop-and-pad) or its start (drop-less); returns the pairs.
int64_t scan_positions(const Plan &p, int64_t *base) {
  const int64_t blocks = token_blocks(p.T), E = p.E;
  int64_t running = 0;
  for (int64_t e = 0; e < E; ++e) {
    if (p.drop_and_pad) running = 0;
    const int64_t start = running;
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c = base[b * E + e];
      base[b * E + e] = running;
      running += c;
    }
    base[blocks * E + e] = p.drop_and_pad ? running : start;
  }
  if (!p.drop_and_pad) return running;
  int64_t pairs = 0;
  for (int64_t e = 0; e < E; ++e) pairs += base[blocks * E + e];
  return pairs;
}

}  // namespace

Status ragged_permute(const Plan &p, const Buffers &b, std::byte *ws) {
  int64_t *base = p.workspace.at<int64_t>(ws, p.ws_slot[kSlotBlockRanks]);
  block_column_counts(p, b.routing_map(), base);
  const int64_t pairs = scan_positions(p, base);
  const int64_t blocks = token_blocks(p.T), E = p.E, C = p.C;
  const int64_t *lists = base + blocks * E;  // drop-and-pad: each expert's list's length
  const int64_t kept = std::min(pairs, p.R);
  auto empty = [&](int64_t r) {
    return p.drop_and_pad ? r % C >= std::min(lists[r / C], C) : r >= kept;
  };
  const int64_t es = element_size(p.value_dtype), ps = element_size(p.permuted_probs_dtype);
  const RowKernels &rk = kernels_of(p);
  // Row r of the kept pair (t, e): its token's row and prob.
  auto fill = [&](int64_t r, int64_t t, int64_t e) {
    copy_row(b.permuted(), p.permuted(), r, b.tokens(), p.tokens(), t, es, rk, p.stream_stores);
    if (p.probs == ProbsWork::compute)
      copy_elem(b.permuted_probs(), p.permuted_probs().at(r), b.dense_probs(),
                p.dense_probs().at(t, e), ps);
    else if (p.probs == ProbsWork::zero_fill)
      zero_elem(b.permuted_probs(), p.permuted_probs().at(r), ps);
  };
  // Pass 1, by token block: each kept pair's row gets its token. Drop-less, the block also
  // moves the rows (a token's row is read once for all its experts, while it is in cache);
  // drop-and-pad keeps the lowest tokens of each expert, which would leave the work to the
  // first blocks, so its rows move in pass 2.
#pragma omp parallel num_threads(num_threads())
  {
#pragma omp for schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      int64_t *cursor = base + blk * E;
      for (int64_t t = blk * kTokenBlock; t < std::min(p.T, (blk + 1) * kTokenBlock); ++t)
        for_each_routed(p, b.routing_map(), t, [&](int64_t e) {
          const int64_t pos = cursor[e]++;
          if (p.drop_and_pad ? pos >= C : pos >= p.R) return;  // dropped
          const int64_t r = p.drop_and_pad ? e * C + pos : pos;
          set_index(p, b, r, t);
          if (!p.drop_and_pad) fill(r, t, e);
        });
    }
    // Pass 2, by row (static: rows cost the same): +0 and -1 for the empty rows (past the
    // kept pairs drop-less, past each expert's list drop-and-pad); drop-and-pad's kept rows.
#pragma omp for schedule(static)
    for (int64_t r = 0; r < p.R; ++r) {
      if (empty(r)) {
        set_index(p, b, r, -1);
        zero_row(b.permuted(), p.permuted(), r, es);
        if (p.probs != ProbsWork::none) zero_elem(b.permuted_probs(), p.permuted_probs().at(r), ps);
      } else if (p.drop_and_pad) {
        fill(r, *elem<int32_t>(b.sorted_indices(), p.sorted_indices().at(r)), r / C);
      }
    }
    rk.store_fence();
  }
  return Status::success();
}

}  // namespace moeperm::detail::cpu
