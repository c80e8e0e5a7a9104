// bf16 rows as pairs, written once over a pair policy and instantiated per ISA by
// row_kernels_<isa>.cpp after row_kernels-inl.hpp (same rules: included inside an anonymous
// namespace, under that ISA's `#pragma GCC target`; include no headers from here).
//
// A 32-bit lane of a load holds elements 2i (low half) and 2i + 1 (high half): a shift and a
// mask widen them to fp32 in place, and the rounded results go back with a shift, a mask and
// an or, with no cross-lane shuffle anywhere. The lanes then hold elements in even/odd order;
// the products and roundings are the same element for element (so the same bits as the
// policy's Plain kernels of row_kernels-inl.hpp), and U3's partial sums are put back in
// natural order before the final reduction.
//
// Rounding needs a NaN fix-up only for a NaN whose low 16 bits are not zero (the bias would
// carry into the exponent or the sign). A NaN made from bf16 inputs never has one: x86
// propagates an input NaN's payload (quieted), a bf16 widened to fp32 has a zero low half,
// and an invalid operation (inf - inf, inf * 0) gives the default NaN 0xffc00000. Only an
// fp32 weight can bring one in, so each kernel checks its weights once per call and leaves
// the fix-up out (kNanFixup = false) when none is NaN: the same bits, fewer instructions.
//
// A pair policy P provides, for L fp32 lanes per register (L divides 16):
//   using Plain (the ISA's bf16 Vec policy, for scalar tails), V (L floats), I (the same
//   bits as integers), M (a lane mask); L;
//   V zero(), set1(float), add(V, V), mul(V, V), fma(V, V, V), store_acc(float*, V),
//   load_acc(const float*) (64-byte-aligned) and kPrefetch, as the ISA's Vec base policy
//   has them; I load(const uint16_t*) (2L elements);
//   void store(uint16_t*, I, bool stream) (stream only at a 16-byte-aligned address);
//   I bits(V); V floats(I); I set1i(uint32_t); I and_(I, I), or_(I, I), add_i(I, I);
//   I shr16(I), shl16(I) (logical, per 32-bit lane); M is_nan(V); bool any(M, M);
//   I blend(M, I a, I b) (b where the mask is set); kPrefetch (true: prefetch_ahead works).

// x + 0x7fff + lsb: the rounded bf16 in the high half of each lane (f32_to_bf16's rule).
template <class P>
typename P::I pair_biased(typename P::V x) {
  const typename P::I u = P::bits(x);
  return P::add_i(u, P::add_i(P::set1i(0x7fff), P::and_(P::shr16(u), P::set1i(1))));
}

template <class P>
typename P::V pair_even(typename P::I v) {
  return P::floats(P::shl16(v));
}

template <class P>
typename P::V pair_odd(typename P::I v) {
  return P::floats(P::and_(v, P::set1i(0xffff0000u)));
}

// The 2L bf16 of even lanes e and odd lanes o, in element order.
template <class P, bool kNanFixup>
typename P::I pair_pack(typename P::V e, typename P::V o) {
  const typename P::I hi = P::set1i(0xffff0000u);
  typename P::I re = P::shr16(pair_biased<P>(e)), ro = P::and_(pair_biased<P>(o), hi);
  if constexpr (kNanFixup) {
    const typename P::M nan_e = P::is_nan(e), nan_o = P::is_nan(o);
    if (P::any(nan_e, nan_o)) {  // quiet NaN, the payload's top bits
      re = P::blend(nan_e, re, P::or_(P::shr16(P::bits(e)), P::set1i(0x40)));
      ro = P::blend(nan_o, ro, P::or_(P::and_(P::bits(o), hi), P::set1i(0x400000)));
    }
  }
  return P::or_(re, ro);
}

// A product rounded to bf16 and widened back (Term::scaled_rounded), lane by lane.
template <class P, bool kNanFixup>
typename P::V pair_rounded(typename P::V x) {
  const typename P::I hi = P::set1i(0xffff0000u);
  typename P::I r = P::and_(pair_biased<P>(x), hi);
  if constexpr (kNanFixup) {
    const typename P::M is_nan = P::is_nan(x);
    if (P::any(is_nan, is_nan))
      r = P::blend(is_nan, r, P::or_(P::and_(P::bits(x), hi), P::set1i(0x400000)));
  }
  return P::floats(r);
}

template <class P, Term kTerm, bool kNanFixup>
typename P::V pair_term(typename P::V v, typename P::V w) {
  if constexpr (kTerm == Term::plain) {
    (void)w;
    return v;
  } else if constexpr (kTerm == Term::scaled) {
    return P::mul(v, w);
  } else {
    return pair_rounded<P, kNanFixup>(P::mul(v, w));
  }
}

// sum_impl of Plain, in pairs: the same per-element sums (+0, then the terms in ascending k,
// in fp32, rounded once). A block is two loads (4L elements, four accumulator registers);
// the accumulator tile keeps the pair layout between source groups.
template <class P, Term kTerm, bool kNanFixup>
void sum_pairs_impl(void *dst_v, const void *const *srcs_v, const float *weights, int64_t nsrc,
                    int64_t n, bool stream) {
  using V = typename P::V;
  constexpr int64_t kHalf = 2 * P::L, kLoads = 32 / kHalf, kBlock = kLoads * kHalf;
  static_assert(kSumTile % kBlock == 0, "blocks tile the accumulator");
  auto *dst = static_cast<uint16_t *>(dst_v);
  const auto *const *srcs = reinterpret_cast<const uint16_t *const *>(srcs_v);
  const bool nt = stream && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  auto weight = [&](int64_t k) { return kTerm == Term::plain ? 1.0f : weights[k]; };
  alignas(64) float acc[kSumTile];
  for (int64_t h0 = 0; h0 < n; h0 += kSumTile) {
    const int64_t m = n - h0 < kSumTile ? n - h0 : kSumTile, mb = m - m % kBlock;
    int64_t g0 = 0;
    do {  // at least once: nsrc == 0 stores +0
      const int64_t g1 = g0 + kSumGroup < nsrc ? g0 + kSumGroup : nsrc;
      const bool first = g0 == 0, last = g1 == nsrc;
      for (int64_t i = 0; i < mb; i += kBlock) {
        V x[2 * kLoads];  // even and odd lanes of each load
        for (int u = 0; u < 2 * kLoads; ++u)
          x[u] = first ? P::zero() : P::load_acc(acc + i + P::L * u);
        for (int64_t k = g0; k < g1; ++k) {
          const uint16_t *src = srcs[k] + h0 + i;
          prefetch_ahead<P, 2 * kBlock, PrefetchTo::l2, kPairSumPrefetchAhead>(src);
          const V w = P::set1(weight(k));
          for (int half = 0; half < kLoads; ++half) {
            const typename P::I v = P::load(src + kHalf * half);
            x[2 * half] = P::add(x[2 * half], pair_term<P, kTerm, kNanFixup>(pair_even<P>(v), w));
            x[2 * half + 1] =
                P::add(x[2 * half + 1], pair_term<P, kTerm, kNanFixup>(pair_odd<P>(v), w));
          }
        }
        for (int half = 0; half < kLoads; ++half) {
          if (last) {
            P::store(dst + h0 + i + kHalf * half,
                     pair_pack<P, kNanFixup>(x[2 * half], x[2 * half + 1]), nt);
          } else {
            P::store_acc(acc + i + kHalf * half, x[2 * half]);
            P::store_acc(acc + i + kHalf * half + P::L, x[2 * half + 1]);
          }
        }
      }
      for (int64_t i = mb; i < m; ++i) {  // the tail in natural order, one lane at a time
        float x = first ? 0.0f : acc[i];
        for (int64_t k = g0; k < g1; ++k)
          x += term1<typename P::Plain, kTerm>(srcs[k][h0 + i], weight(k));
        if (last)
          dst[h0 + i] = Bf16::store(x);
        else
          acc[i] = x;
      }
      g0 = g1;
    } while (g0 < nsrc);
  }
}

// sum_impl in pairs, with the NaN fix-up only where a weight is NaN.
template <class P, Term kTerm>
void sum_bf16_pairs(void *dst, const void *const *srcs, const float *weights, int64_t nsrc,
                    int64_t n, bool stream) {
  bool nan_weight = false;
  for (int64_t k = 0; kTerm != Term::plain && k < nsrc; ++k)
    nan_weight = nan_weight || std::isnan(weights[k]);
  (nan_weight ? sum_pairs_impl<P, kTerm, true>
              : sum_pairs_impl<P, kTerm, false>)(dst, srcs, weights, nsrc, n, stream);
}

template <class P>
void sum_rows_bf16_pairs(void *dst, const void *const *srcs, int64_t nsrc, int64_t n, bool stream) {
  sum_pairs_impl<P, Term::plain, false>(dst, srcs, nullptr, nsrc, n, stream);
}

// scale_row_impl of Plain, in pairs.
template <class P, bool kNanFixup>
void scale_row_pairs_impl(void *dst_v, const void *src_v, float w, int64_t n, bool stream) {
  constexpr int64_t kStep = 2 * P::L;
  auto *dst = static_cast<uint16_t *>(dst_v);
  const auto *src = static_cast<const uint16_t *>(src_v);
  const bool nt = stream && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  const typename P::V wv = P::set1(w);
  const int64_t nb = n - n % kStep;
  for (int64_t i = 0; i < nb; i += kStep) {
    prefetch_ahead<P, 2 * kStep, PrefetchTo::l1>(src + i);
    const typename P::I v = P::load(src + i);
    P::store(dst + i,
             pair_pack<P, kNanFixup>(P::mul(pair_even<P>(v), wv), P::mul(pair_odd<P>(v), wv)), nt);
  }
  for (int64_t i = nb; i < n; ++i) dst[i] = Bf16::store(Bf16::load(src[i]) * w);
}

template <class P>
void scale_row_bf16_pairs(void *dst, const void *src, float w, int64_t n, bool stream) {
  (std::isnan(w) ? scale_row_pairs_impl<P, true> : scale_row_pairs_impl<P, false>)(dst, src, w, n,
                                                                                   stream);
}

// scale_dot_impl of Plain, in pairs. A block of 32 elements is 32 / 2L loads; load q's even
// lanes hold U3's partial sums l = 2Lq + 2i (part[2q]) and its odd lanes l = 2Lq + 2i + 1
// (part[2q + 1]), each an fma chain over the blocks as U3 defines it.
template <class P, bool kNanFixup>
float scale_dot_pairs_impl(void *dst_v, const void *g_v, float w, const void *x_v,
                           const void *x_next, int64_t n, bool stream) {
  using V = typename P::V;
  constexpr int64_t kStep = 2 * P::L, kLoads = 32 / kStep;
  static_assert(32 % kStep == 0, "loads tile U3's 32 partial sums");
  auto *dst = static_cast<uint16_t *>(dst_v);
  const auto *g = static_cast<const uint16_t *>(g_v);
  const auto *x = static_cast<const uint16_t *>(x_v);
  const bool nt = stream && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  const V wv = P::set1(w);
  V part[2 * kLoads];
  for (auto &p : part) p = P::zero();
  int64_t h0 = 0;
  for (; h0 + 32 <= n; h0 += 32) {
    prefetch_x_rows<P, 64>(x, x_next, 2 * n, 2 * h0);
    for (int64_t q = 0; q < kLoads; ++q) {
      const typename P::I gv = P::load(g + h0 + kStep * q), xv = P::load(x + h0 + kStep * q);
      const V ge = pair_even<P>(gv), go = pair_odd<P>(gv);
      part[2 * q] = P::fma(pair_even<P>(xv), ge, part[2 * q]);
      part[2 * q + 1] = P::fma(pair_odd<P>(xv), go, part[2 * q + 1]);
      P::store(dst + h0 + kStep * q, pair_pack<P, kNanFixup>(P::mul(ge, wv), P::mul(go, wv)), nt);
    }
  }
  alignas(64) float pairs[2 * kLoads][P::L];
  for (int64_t j = 0; j < 2 * kLoads; ++j) P::store_acc(pairs[j], part[j]);
  float lanes[32];
  for (int64_t q = 0; q < kLoads; ++q)
    for (int64_t i = 0; i < P::L; ++i) {
      lanes[kStep * q + 2 * i] = pairs[2 * q][i];
      lanes[kStep * q + 2 * i + 1] = pairs[2 * q + 1][i];
    }
  return scale_dot_tail<typename P::Plain>(lanes, dst, g, x, w, h0, n);
}

template <class P>
float scale_dot_bf16_pairs(void *dst, const void *g, float w, const void *x, const void *x_next,
                           int64_t n, bool stream) {
  return (std::isnan(w) ? scale_dot_pairs_impl<P, true>
                        : scale_dot_pairs_impl<P, false>)(dst, g, w, x, x_next, n, stream);
}

// The bf16 table with the pair kernels where they replace the generic ones.
template <class P>
constexpr TypedRowKernels with_pairs(TypedRowKernels k) {
  k.sum_rows = sum_rows_bf16_pairs<P>;
  k.sum_scaled = sum_bf16_pairs<P, Term::scaled>;
  k.sum_scaled_rounded = sum_bf16_pairs<P, Term::scaled_rounded>;
  k.scale_row = scale_row_bf16_pairs<P>;
  k.scale_dot = scale_dot_bf16_pairs<P>;
  return k;
}
