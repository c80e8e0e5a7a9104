// sort_chunks and sort_chunks_grad on the GPU (core/ops/sort_chunks.cpp), bitwise equal to
// the reference (pure copies):
//   check   one thread scans split_sizes in order (each >= 0, their sum T; the host's first
//           failure), then the generic index checks (sorted_index in [0, S), no chunk
//           twice: index_checks.cu), then one thread writes each sorted chunk's first row.
//           S is a chunk per (rank, local expert): a serial scan of it costs less than a
//           launch. Nothing is written on failure (Note [Device errors]).
//   move    one block per sorted row r (grid-stride): the chunk j holding r by binary search
//           over the sorted chunks' first rows, the input row start(sorted_index[j]) + (r -
//           first[j]); the forward copies that row to row r, the backward row r back to it.
// Every output row is written by one block, so no write races and no atomics.
#include "cuda/launch.hpp"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

constexpr int kRowThreads = 256;

// start[c] = first input row of chunk c; split_sizes' data rules into the status word.
__global__ void split_kernel(DVector sizes, int64_t T, int64_t *start, DeviceStatus *st) {
  if (st->failed) return;
  int64_t sum = 0;
  for (int64_t c = 0; c < sizes.len; ++c) {
    const int64_t n = index_at(sizes, c);
    if (n < 0) {
      st->first_bad = static_cast<unsigned long long>(c);
      st->bad_value = n;
      st->kind = kBadSplitSize;
      st->failed = 1;
      return;
    }
    start[c] = sum;
    sum += n;
  }
  if (sum != T) {
    st->bad_value = sum;
    st->kind = kSplitSizesTotal;
    st->failed = 1;
  }
}

// first[j] = first row of sorted chunk j, first[S] = T (sorted_index is a permutation here).
__global__ void sorted_starts_kernel(DVector sizes, DVector order, int64_t *first,
                                     const DeviceStatus *st) {
  if (st->failed) return;
  first[0] = 0;
  for (int64_t j = 0; j < order.len; ++j)
    first[j + 1] = first[j] + index_at(sizes, index_at(order, j));
}

struct Args {
  DMatrix tokens, sorted;  // the rows in input order and in sorted order
  DVector row_probs, sorted_probs;
  DVector order;
  const int64_t *start, *first;
  int64_t S;
  bool forward, probs, zero_probs;
};

__global__ void move_kernel(Args a, const DeviceStatus *st) {
  if (st->failed) return;
  for (int64_t r = blockIdx.x; r < a.sorted.rows; r += gridDim.x) {
    // The last sorted chunk starting at or before r (empty chunks share a start).
    int64_t lo = 0, hi = a.S;  // first[lo] <= r < first[hi]
    while (hi - lo > 1) {
      const int64_t mid = (lo + hi) / 2;
      if (a.first[mid] <= r)
        lo = mid;
      else
        hi = mid;
    }
    const int64_t original = a.start[index_at(a.order, lo)] + (r - a.first[lo]);
    if (a.forward)
      copy_row_to_rows(a.sorted, &r, 1, a.tokens, original);
    else
      copy_row_to_rows(a.tokens, &original, 1, a.sorted, r);
    if (threadIdx.x != 0 || !(a.probs || a.zero_probs)) continue;
    char *out = a.forward ? a.sorted_probs.at(r) : a.row_probs.at(original);
    if (a.zero_probs)
      zero_element(out, a.forward ? a.sorted_probs.es : a.row_probs.es);
    else
      copy_element(out, a.forward ? a.row_probs.at(original) : a.sorted_probs.at(r),
                   a.row_probs.es);
  }
}

}  // namespace

Status sort_chunks(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                   cudaStream_t stream) {
  using detail::Role;
  const DVector sizes = view(p.split_sizes(), b.split_sizes(), DType::i32);
  const DVector order = view(p.chunk_order(), b.chunk_order(), DType::i32);
  int64_t *start = ws.chunk_starts, *first = ws.chunk_starts + p.S;
  split_kernel<<<1, 1, 0, stream>>>(sizes, p.T, start, ws.status);
  MOEPERM_TRY(launched("sort_chunks_split"));
  MOEPERM_TRY(check_index_rules(p, b, ws, stream));
  sorted_starts_kernel<<<1, 1, 0, stream>>>(sizes, order, first, ws.status);
  MOEPERM_TRY(launched("sort_chunks_starts"));
  if (p.T == 0) return Status::success();
  const bool has_probs = p.probs != detail::ProbsWork::none;
  const Args a{
      view(p.tokens(), b.tokens(), p.value_dtype),
      view(p.permuted(), b.permuted(), p.value_dtype),
      view(p.row_probs(), b.row_probs(), has_probs ? p.dtype(Role::row_probs) : DType::f32),
      view(p.permuted_probs(), b.permuted_probs(),
           has_probs ? p.dtype(Role::permuted_probs) : DType::f32),
      order,
      start,
      first,
      p.S,
      p.op == detail::Op::sort_chunks,
      p.probs == detail::ProbsWork::compute,
      p.probs == detail::ProbsWork::zero_fill};
  move_kernel<<<grid_of(p.T), kRowThreads, 0, stream>>>(a, ws.status);
  return launched("sort_chunks_move");
}

}  // namespace moeperm::cuda
