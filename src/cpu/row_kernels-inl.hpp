// The row kernels, written once over a vector policy and instantiated per ISA by
// row_kernels_<isa>.cpp, which include this file inside an anonymous namespace and under
// that ISA's `#pragma GCC target` (so nothing compiled with wide instructions can leak
// into baseline code through a shared inline symbol). Include no headers from here.
//
// A Vec policy provides, for one (ISA, value type):
//   using S (storage), Scalar (Bf16/F16/F32 of backend/fp_conversion.hpp), reg; W (lanes);
//   zero(), load(const S*), load_acc(const float*), store_acc(float*, reg), add(reg, reg),
//   store(S*, reg, bool stream)   (stream only when the address is W*sizeof(S)-aligned).
//
// By Note [Determinism], every output element is +0 plus its sources in ascending k, in fp32,
// rounded once; lanes are independent elements, so the vector width changes nothing.

// Elements per tile of the fp32 accumulator (4 KiB, L1-resident); a multiple of every W.
inline constexpr int64_t kSumTile = 1024;
// Bytes ahead of the current position at which each source row is prefetched: a token's
// K source rows are K concurrent streams, more than the hardware prefetcher follows well.
// (A prefetch past the end of a row is harmless: prefetches never fault.)
inline constexpr int64_t kPrefetchAhead = 1024;
// Vectors summed side by side (independent add chains).
inline constexpr int kUnroll = 4;
// Source rows added in registers before the accumulator is touched: with K <= 8 the
// accumulator never leaves registers.
inline constexpr int64_t kSumGroup = 8;

template <class Vec>
void sum_rows_impl(void *dst_v, const void *const *srcs_v, int64_t nsrc, int64_t n, bool stream) {
  using S = typename Vec::S;
  using Scalar = typename Vec::Scalar;
  constexpr int64_t W = Vec::W;
  S *dst = static_cast<S *>(dst_v);
  const S *const *srcs = reinterpret_cast<const S *const *>(srcs_v);
  const bool nt = stream && reinterpret_cast<uintptr_t>(dst) % (W * sizeof(S)) == 0;
  alignas(64) float acc[kSumTile];
  for (int64_t h0 = 0; h0 < n; h0 += kSumTile) {
    const int64_t m = n - h0 < kSumTile ? n - h0 : kSumTile;
    const int64_t mv = m - m % W;
    int64_t g0 = 0;
    do {  // at least once: nsrc == 0 stores +0
      const int64_t g1 = g0 + kSumGroup < nsrc ? g0 + kSumGroup : nsrc;
      const bool first = g0 == 0, last = g1 == nsrc;
      // kUnroll independent accumulators: the k-chain of one vector is a serial add
      // chain, so several vectors in flight hide its latency. One prefetch per source
      // and block (kUnroll * W elements, a cache line or more).
      const int64_t mu = mv - mv % (kUnroll * W);
      for (int64_t i = 0; i < mu; i += kUnroll * W) {
        typename Vec::reg x[kUnroll];
        for (int u = 0; u < kUnroll; ++u)
          x[u] = first ? Vec::zero() : Vec::load_acc(acc + i + u * W);
        for (int64_t k = g0; k < g1; ++k) {
          const S *src = srcs[k] + h0 + i;
          Vec::prefetch(src + kPrefetchAhead / static_cast<int64_t>(sizeof(S)));
          for (int u = 0; u < kUnroll; ++u) x[u] = Vec::add(x[u], Vec::load(src + u * W));
        }
        for (int u = 0; u < kUnroll; ++u) {
          if (last)
            Vec::store(dst + h0 + i + u * W, x[u], nt);
          else
            Vec::store_acc(acc + i + u * W, x[u]);
        }
      }
      for (int64_t i = mu; i < mv; i += W) {
        typename Vec::reg x = first ? Vec::zero() : Vec::load_acc(acc + i);
        for (int64_t k = g0; k < g1; ++k) x = Vec::add(x, Vec::load(srcs[k] + h0 + i));
        if (last)
          Vec::store(dst + h0 + i, x, nt);
        else
          Vec::store_acc(acc + i, x);
      }
      for (int64_t i = mv; i < m; ++i) {
        float x = first ? 0.0f : acc[i];
        for (int64_t k = g0; k < g1; ++k) x += Scalar::load(srcs[k][h0 + i]);
        if (last)
          dst[h0 + i] = Scalar::store(x);
        else
          acc[i] = x;
      }
      g0 = g1;
    } while (g0 < nsrc);
  }
}
