// What the ragged pair's CUDA kernels share on the device (docs/ragged.md): each row's
// expert. A token's rows ascend and a row's expert never decreases with the row, so in a
// token's run the rows of one (token, expert) are adjacent.
#pragma once

#include <cstdint>

#include "cuda/row_ops.cuh"

namespace moeperm::cuda {

struct RowExperts {
  const int64_t *first = nullptr;  // drop-less: expert e's first row ([E]: the routed pairs)
  int64_t E = 0, C = 0;
  bool drop_and_pad = false;

  // Row r's expert: r / C drop-and-pad; drop-less the last e with first[e] <= r (an
  // upper_bound over first[0..E]; r is below the routed pairs: check_ragged_rows).
  __device__ __forceinline__ int64_t of(int64_t r) const {
    if (drop_and_pad) return r / C;
    int64_t lo = 0, hi = E + 1;  // first[lo] <= r < first[hi], first[E + 1] taken as +inf
    while (hi - lo > 1) {
      const int64_t mid = lo + (hi - lo) / 2;
      if (first[mid] <= r)
        lo = mid;
      else
        hi = mid;
    }
    return lo;
  }
  // One past the last row of expert e.
  __device__ __forceinline__ int64_t end(int64_t e) const {
    return drop_and_pad ? (e + 1) * C : first[e + 1];
  }
};

// The probs-gradient rows of both ragged Grads, one thread per token: +0, then for each
// expert among the token's rows (ascending: a (token, expert)'s rows are adjacent) the fp32
// sum from +0 of value(r) over its rows, in ascending order, rounded once to dP's dtype.
template <class Value>
__global__ void ragged_probs_grad_kernel(DMatrix dP, DType dpdt, RowExperts experts,
                                         const int64_t *rows, const int64_t *runs, Value value,
                                         const DeviceStatus *status) {
  if (status->failed) return;
  const int64_t T = dP.rows;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; t < T;
       t += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    for (int64_t e = 0; e < dP.cols; ++e) zero_element(dP.at(t, e), dP.es);
    for (int64_t i = runs[t], end = runs[T + t]; i < end;) {
      const int64_t e = experts.of(rows[i]), stop = experts.end(e);
      float acc = 0.0f;
      for (; i < end && rows[i] < stop; ++i) acc = add_like_x86(acc, value(rows[i]));
      store_from_float(dP.at(t, e), dpdt, acc);
    }
  }
}

}  // namespace moeperm::cuda
