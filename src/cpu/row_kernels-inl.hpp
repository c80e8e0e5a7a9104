// The row kernels, written once over a vector policy and instantiated per ISA by
// row_kernels_<isa>.cpp, which include this file inside an anonymous namespace and under
// that ISA's `#pragma GCC target` (so nothing compiled with wide instructions can leak
// into baseline code through a shared inline symbol). Include no headers from here.
//
// A Vec policy provides, for one (ISA, value type):
//   using S (storage), Scalar (Bf16/F16/F32 of backend/fp_conversion.hpp), reg; W (lanes, a
//   divisor of 32); zero(), set1(float), load(const S*), load_acc(const float*),
//   store_acc(float*, reg), add(reg, reg), mul(reg, reg), fma(reg, reg, reg),
//   fma1(float, float, float) (one lane), store(S*, reg, bool stream) (stream only when the
//   address is W*sizeof(S)-aligned), kPrefetch (whether prefetch_ahead prefetches); optionally
//   store2(S*, reg, reg, bool stream): 2W elements at once, the same bits as two stores (AVX2's
//   16-bit types pack two registers into one 32-byte store).
// The including file provides std::fma (<cmath>) and the types of cpu/isa.hpp.
//
// By Note [Determinism], every output element is +0 plus its sources in ascending k, in fp32,
// rounded once; lanes are independent elements, so the vector width changes nothing. The
// CPU layer is compiled with contraction off, so a mul followed by an add stays two
// roundings (SPEC-unpermute U1); only dot_impl fuses, by U3's definition.

// Elements per tile of the fp32 accumulator (4 KiB, L1-resident); a multiple of every W.
inline constexpr int64_t kSumTile = 1024;
// Bytes ahead of the current position at which each source row is prefetched: a token's
// K source rows are K concurrent streams, more than the hardware prefetcher follows well.
// (A prefetch past the end of a row is harmless: prefetches never fault.)
inline constexpr int64_t kPrefetchAhead = 1024;
// The bf16 pair sums look twice as far (sum_pairs_impl): on the Zen 4 VM 2 KiB took the
// DeepSeek-like sums 3-9% and the Mixtral-like unpermutes 10-20% faster with two threads when
// the memory is fast, and up to 4% (one thread: up to 11%) when it is slow; the fp32
// drop-and-pad sums (one 28 KiB row per token, mostly) lost 2-8% with it, so the generic
// kernels keep 1 KiB (docs/cpu-performance.md, experiment 20).
inline constexpr int64_t kPairSumPrefetchAhead = 2048;
// Where a prefetched line goes (__builtin_prefetch's locality). The sums read K rows at once,
// and K rows' lines 1 KiB ahead are more misses than a core's L1 tracks: prefetched into L2
// they all arrive (one thread, Zen 4: permute Grad 28 -> 23 ms, unpermute 30 -> 25 ms). The
// scale_dot reads one row at a time and wants its lines in L1 when it gets there (into L2
// only: 55 -> 62 ms): it prefetches at two distances (prefetch_x_rows). docs/cpu-performance.md,
// experiments 11 and 15.
enum class PrefetchTo { l2 = 2, l1 = 3 };
// Every 64-byte line of the kBytes at p, kAhead bytes ahead. One prefetch per block
// is not enough where a block spans several lines (AVX-512, and fp32 on AVX2): the lines it
// skips arrive on demand, and a sum over K rows stalls on K streams (docs/cpu-performance.md,
// experiment 10). Nothing where the policy does not prefetch (Pol::kPrefetch: scalar).
//
// The prefetch helpers are always inlined: GCC 12's IPA mod-ref summarises a helper that only
// prefetches as free of side effects and deletes the call (experiment 15 lost every
// prefetch of scale_dot that way, silently: prefetches change no result).
template <class Pol, int64_t kBytes, PrefetchTo kTo, int64_t kAhead = kPrefetchAhead>
[[gnu::always_inline]] inline void prefetch_ahead(const void *p) {
  if constexpr (Pol::kPrefetch) {
    const char *ahead = static_cast<const char *>(p) + kAhead;
    for (int64_t off = 0; off < kBytes; off += 64)
      __builtin_prefetch(ahead + off, 0, static_cast<int>(kTo));
  }
}
// scale_dot's read of X, one row after another in the order the caller visits them: rows of
// different experts, far apart in memory, so each row starts a new stream the hardware
// prefetcher has not seen. Prefetched at two distances, into L2 far ahead and into L1 near,
// and across the end of the row into the row the caller names next, so that row's first
// lines are on their way before it starts (docs/cpu-performance.md, experiment 15).
inline constexpr int64_t kRowStreamAheadL2 = 8192;
inline constexpr int64_t kRowStreamAheadL1 = 1024;
// Every 64-byte line of the kBytes at offset `off` of `row` (row_bytes long), kAhead bytes
// ahead, continuing into `next` (nullptr: none) past the row's end. Addresses stay inside the
// two rows.
template <class Pol, int64_t kBytes, PrefetchTo kTo, int64_t kAhead>
[[gnu::always_inline]] inline void prefetch_row_stream(const char *row, const char *next,
                                                       int64_t row_bytes, int64_t off) {
  if constexpr (Pol::kPrefetch) {
    for (int64_t o = off + kAhead; o < off + kAhead + kBytes; o += 64) {
      if (o < row_bytes)
        __builtin_prefetch(row + o, 0, static_cast<int>(kTo));
      else if (next && o - row_bytes < row_bytes)
        __builtin_prefetch(next + (o - row_bytes), 0, static_cast<int>(kTo));
    }
  }
}
// Both of scale_dot's distances for the block of kBytes at offset `off`.
template <class Pol, int64_t kBytes>
[[gnu::always_inline]] inline void prefetch_x_rows(const void *row, const void *next,
                                                   int64_t row_bytes, int64_t off) {
  const auto *r = static_cast<const char *>(row), *nx = static_cast<const char *>(next);
  prefetch_row_stream<Pol, kBytes, PrefetchTo::l2, kRowStreamAheadL2>(r, nx, row_bytes, off);
  prefetch_row_stream<Pol, kBytes, PrefetchTo::l1, kRowStreamAheadL1>(r, nx, row_bytes, off);
}
// Vectors summed side by side (independent add chains).
inline constexpr int kUnroll = 4;
// Source rows added in registers before the accumulator is touched: with K <= 8 the
// accumulator never leaves registers.
inline constexpr int64_t kSumGroup = 8;

// How a source row enters a sum (SPEC-unpermute U1): as it is; times its weight (an fp32
// product); or times its weight rounded to the storage dtype (drop-and-pad with probs of
// the token dtype: CANN multiplies in that dtype).
enum class Term { plain, scaled, scaled_rounded };

template <class Vec>
typename Vec::reg round_to_storage(typename Vec::reg x) {
  if constexpr (sizeof(typename Vec::S) == sizeof(float)) {
    return x;
  } else {
    alignas(64) typename Vec::S tmp[Vec::W];
    Vec::store(tmp, x, false);
    return Vec::load(tmp);
  }
}

// Vec::store of x to p and of y to p + W, through store2 where the policy has it.
template <class Vec>
void store_pair(typename Vec::S *p, typename Vec::reg x, typename Vec::reg y, bool stream) {
  if constexpr (requires { Vec::store2(p, x, y, stream); }) {
    Vec::store2(p, x, y, stream);
  } else {
    Vec::store(p, x, stream);
    Vec::store(p + Vec::W, y, stream);
  }
}

template <class Vec, Term kTerm>
typename Vec::reg term(const typename Vec::S *src, typename Vec::reg w) {
  if constexpr (kTerm == Term::plain) {
    (void)w;
    return Vec::load(src);
  } else if constexpr (kTerm == Term::scaled) {
    return Vec::mul(Vec::load(src), w);
  } else {
    return round_to_storage<Vec>(Vec::mul(Vec::load(src), w));
  }
}

template <class Vec, Term kTerm>
float term1(typename Vec::S src, float w) {
  using Scalar = typename Vec::Scalar;
  if constexpr (kTerm == Term::plain) {
    (void)w;
    return Scalar::load(src);
  } else if constexpr (kTerm == Term::scaled) {
    return Scalar::load(src) * w;
  } else {
    return Scalar::load(Scalar::store(Scalar::load(src) * w));
  }
}

// dst[0..n) = round(+0 + sum over k ascending of term(srcs[k], weights[k])); weights may be
// null for Term::plain.
template <class Vec, Term kTerm>
void sum_impl(void *dst_v, const void *const *srcs_v, const float *weights, int64_t nsrc, int64_t n,
              bool stream) {
  using S = typename Vec::S;
  constexpr int64_t W = Vec::W;
  S *dst = static_cast<S *>(dst_v);
  const S *const *srcs = reinterpret_cast<const S *const *>(srcs_v);
  const bool nt = stream && reinterpret_cast<uintptr_t>(dst) % (W * sizeof(S)) == 0;
  auto weight = [&](int64_t k) { return kTerm == Term::plain ? 1.0f : weights[k]; };
  alignas(64) float acc[kSumTile];
  for (int64_t h0 = 0; h0 < n; h0 += kSumTile) {
    const int64_t m = n - h0 < kSumTile ? n - h0 : kSumTile;
    const int64_t mv = m - m % W;
    int64_t g0 = 0;
    do {  // at least once: nsrc == 0 stores +0
      const int64_t g1 = g0 + kSumGroup < nsrc ? g0 + kSumGroup : nsrc;
      const bool first = g0 == 0, last = g1 == nsrc;
      // kUnroll independent accumulators: the k-chain of one vector is a serial add
      // chain, so several vectors in flight hide its latency. Each source's block
      // (kUnroll * W elements, a cache line or more) is prefetched line by line.
      const int64_t mu = mv - mv % (kUnroll * W);
      for (int64_t i = 0; i < mu; i += kUnroll * W) {
        typename Vec::reg x[kUnroll];
        for (int u = 0; u < kUnroll; ++u)
          x[u] = first ? Vec::zero() : Vec::load_acc(acc + i + u * W);
        for (int64_t k = g0; k < g1; ++k) {
          const S *src = srcs[k] + h0 + i;
          const typename Vec::reg w = Vec::set1(weight(k));
          prefetch_ahead<Vec, kUnroll * W * sizeof(S), PrefetchTo::l2>(src);
          for (int u = 0; u < kUnroll; ++u) x[u] = Vec::add(x[u], term<Vec, kTerm>(src + u * W, w));
        }
        static_assert(kUnroll % 2 == 0, "stores go in pairs");
        for (int u = 0; u < kUnroll; u += 2) {
          if (last) {
            store_pair<Vec>(dst + h0 + i + u * W, x[u], x[u + 1], nt);
          } else {
            Vec::store_acc(acc + i + u * W, x[u]);
            Vec::store_acc(acc + i + (u + 1) * W, x[u + 1]);
          }
        }
      }
      for (int64_t i = mu; i < mv; i += W) {
        typename Vec::reg x = first ? Vec::zero() : Vec::load_acc(acc + i);
        for (int64_t k = g0; k < g1; ++k)
          x = Vec::add(x, term<Vec, kTerm>(srcs[k] + h0 + i, Vec::set1(weight(k))));
        if (last)
          Vec::store(dst + h0 + i, x, nt);
        else
          Vec::store_acc(acc + i, x);
      }
      for (int64_t i = mv; i < m; ++i) {
        float x = first ? 0.0f : acc[i];
        for (int64_t k = g0; k < g1; ++k) x += term1<Vec, kTerm>(srcs[k][h0 + i], weight(k));
        if (last)
          dst[h0 + i] = Vec::Scalar::store(x);
        else
          acc[i] = x;
      }
      g0 = g1;
    } while (g0 < nsrc);
  }
}

template <class Vec>
void sum_rows_impl(void *dst, const void *const *srcs, int64_t nsrc, int64_t n, bool stream) {
  sum_impl<Vec, Term::plain>(dst, srcs, nullptr, nsrc, n, stream);
}

// dst[0..n) = round(f32(src[h]) * w): one product, one rounding (no +0 added, so a -0
// product stays -0; SPEC-unpermute U2's dX).
template <class Vec>
void scale_row_impl(void *dst_v, const void *src_v, float w, int64_t n, bool stream) {
  using S = typename Vec::S;
  constexpr int64_t W = Vec::W;
  S *dst = static_cast<S *>(dst_v);
  const S *src = static_cast<const S *>(src_v);
  const bool nt = stream && reinterpret_cast<uintptr_t>(dst) % (W * sizeof(S)) == 0;
  const typename Vec::reg wv = Vec::set1(w);
  const int64_t nv = n - n % W, n2 = n - n % (2 * W);
  for (int64_t i = 0; i < n2; i += 2 * W) {
    prefetch_ahead<Vec, 2 * W * sizeof(S), PrefetchTo::l1>(src + i);
    store_pair<Vec>(dst + i, Vec::mul(Vec::load(src + i), wv), Vec::mul(Vec::load(src + i + W), wv),
                    nt);
  }
  for (int64_t i = n2; i < nv; i += W) Vec::store(dst + i, Vec::mul(Vec::load(src + i), wv), nt);
  for (int64_t i = nv; i < n; ++i) dst[i] = Vec::Scalar::store(Vec::Scalar::load(src[i]) * w);
}

// U3's final reduction of the 32 partial sums: part[l] += part[l + w] for w = 16, 8, 4, 2, 1.
inline float u3_reduce(float *lanes) {
  for (int64_t w = 16; w >= 1; w /= 2)
    for (int64_t l = 0; l < w; ++l) lanes[l] += lanes[l + w];
  return lanes[0];
}

// scale_dot's elements past the last whole block of 32, h0 <= h < n, one at a time: the dot
// into lanes[h - h0], dst[h] = round(g[h] * w); then U3's reduction.
template <class Vec>
float scale_dot_tail(float *lanes, typename Vec::S *dst, const typename Vec::S *g,
                     const typename Vec::S *x, float w, int64_t h0, int64_t n) {
  using Scalar = typename Vec::Scalar;
  for (int64_t h = h0; h < n; ++h) {
    const float gh = Scalar::load(g[h]);
    lanes[h - h0] = Vec::fma1(Scalar::load(x[h]), gh, lanes[h - h0]);
    dst[h] = Scalar::store(gh * w);
  }
  return u3_reduce(lanes);
}

// SPEC-unpermute U3's dot product: part[l] = fma over h = l, l + 32, ... ascending from +0,
// then part[l] += part[l + w] for w = 16, 8, 4, 2, 1; part[0]. 32 / W registers hold the
// 32 partial sums, lane for lane, so every ISA gives the same bits.
template <class Vec>
float dot_impl(const void *a_v, const void *b_v, int64_t n) {
  using S = typename Vec::S;
  using Scalar = typename Vec::Scalar;
  constexpr int64_t W = Vec::W, kRegs = 32 / W;
  static_assert(32 % W == 0, "the 32 partial sums must fill whole registers");
  const S *a = static_cast<const S *>(a_v);
  const S *b = static_cast<const S *>(b_v);
  typename Vec::reg part[kRegs];
  for (int64_t j = 0; j < kRegs; ++j) part[j] = Vec::zero();
  int64_t h0 = 0;
  for (; h0 + 32 <= n; h0 += 32)
    for (int64_t j = 0; j < kRegs; ++j)
      part[j] = Vec::fma(Vec::load(a + h0 + j * W), Vec::load(b + h0 + j * W), part[j]);
  alignas(64) float lanes[32];
  for (int64_t j = 0; j < kRegs; ++j) Vec::store_acc(lanes + j * W, part[j]);
  for (int64_t h = h0; h < n; ++h)
    lanes[h - h0] = Vec::fma1(Scalar::load(a[h]), Scalar::load(b[h]), lanes[h - h0]);
  return u3_reduce(lanes);
}

// dst = round(g * w) as scale_row_impl, and U3's dot(x, g) as dot_impl, in one pass over
// the rows: the Grad's dX row is written while X's row is read, so the read and the write
// streams overlap instead of following each other.
template <class Vec>
float scale_dot_impl(void *dst_v, const void *g_v, float w, const void *x_v, const void *x_next,
                     int64_t n, bool stream) {
  using S = typename Vec::S;
  constexpr int64_t W = Vec::W, kRegs = 32 / W;
  S *dst = static_cast<S *>(dst_v);
  const S *g = static_cast<const S *>(g_v);
  const S *x = static_cast<const S *>(x_v);
  const bool nt = stream && reinterpret_cast<uintptr_t>(dst) % (W * sizeof(S)) == 0;
  const typename Vec::reg wv = Vec::set1(w);
  typename Vec::reg part[kRegs];
  for (int64_t j = 0; j < kRegs; ++j) part[j] = Vec::zero();
  int64_t h0 = 0;
  for (; h0 + 32 <= n; h0 += 32) {
    prefetch_x_rows<Vec, 32 * sizeof(S)>(x, x_next, n * int64_t{sizeof(S)},
                                         h0 * int64_t{sizeof(S)});
    static_assert(kRegs % 2 == 0, "stores go in pairs");
    for (int64_t j = 0; j < kRegs; j += 2) {
      const typename Vec::reg g0 = Vec::load(g + h0 + j * W), g1 = Vec::load(g + h0 + (j + 1) * W);
      part[j] = Vec::fma(Vec::load(x + h0 + j * W), g0, part[j]);
      part[j + 1] = Vec::fma(Vec::load(x + h0 + (j + 1) * W), g1, part[j + 1]);
      store_pair<Vec>(dst + h0 + j * W, Vec::mul(g0, wv), Vec::mul(g1, wv), nt);
    }
  }
  alignas(64) float lanes[32];
  for (int64_t j = 0; j < kRegs; ++j) Vec::store_acc(lanes + j * W, part[j]);
  return scale_dot_tail<Vec>(lanes, dst, g, x, w, h0, n);
}

// The kernels of one value type, for the ISA's table.
template <class Vec>
constexpr TypedRowKernels typed_kernels() {
  return {.sum_rows = sum_rows_impl<Vec>,
          .sum_scaled = sum_impl<Vec, Term::scaled>,
          .sum_scaled_rounded = sum_impl<Vec, Term::scaled_rounded>,
          .scale_row = scale_row_impl<Vec>,
          .dot = dot_impl<Vec>,
          .scale_dot = scale_dot_impl<Vec>};
}
