// AVX2 + F16C + FMA row kernels (8 lanes). Compiled for AVX2 through `#pragma GCC target` only
// here; called only when the CPU reports avx2, f16c and fma (isa.cpp).
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/elements.hpp"
#include "cpu/isa.hpp"

// Clang has no `#pragma GCC target`; its equivalent attaches the target to every function
// defined in the region (the fuzz preset builds the library with clang).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,f16c,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,f16c,fma")
#endif

namespace moeperm::detail::cpu {
namespace {

struct Avx2Base {
  using reg = __m256;
  static constexpr int64_t W = 8;
  static reg zero() { return _mm256_setzero_ps(); }
  static reg load_acc(const float *p) { return _mm256_load_ps(p); }
  static void store_acc(float *p, reg x) { _mm256_store_ps(p, x); }
  static reg set1(float x) { return _mm256_set1_ps(x); }
  static reg add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  static reg fma(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static float fma1(float a, float b, float c) { return std::fma(a, b, c); }
  static void prefetch(const void *p) { _mm_prefetch(static_cast<const char *>(p), _MM_HINT_T0); }
  static void store16(void *p, __m128i v, bool stream) {
    if (stream)
      _mm_stream_si128(static_cast<__m128i *>(p), v);
    else
      _mm_storeu_si128(static_cast<__m128i *>(p), v);
  }
  // A 32-byte store; `stream` promises 16-byte alignment (the callers' test for store16),
  // so a 16-byte-aligned address streams as two halves.
  static void store32(void *p, __m256i v, bool stream) {
    if (!stream) {
      _mm256_storeu_si256(static_cast<__m256i *>(p), v);
    } else if (reinterpret_cast<uintptr_t>(p) % 32 == 0) {
      _mm256_stream_si256(static_cast<__m256i *>(p), v);
    } else {
      _mm_stream_si128(static_cast<__m128i *>(p), _mm256_castsi256_si128(v));
      _mm_stream_si128(static_cast<__m128i *>(p) + 1, _mm256_extracti128_si256(v, 1));
    }
  }
};

struct Avx2Bf16 : Avx2Base {
  using Scalar = Bf16;
  using S = uint16_t;
  static reg load(const S *p) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  }
  // Round to nearest even, the bf16 in the low half of each 32-bit lane; NaN -> quiet NaN
  // with the payload's top bits (as f32_to_bf16). The NaN fix-up is a blend taken only when
  // a lane is NaN, so finite data pays one compare and a movemask for it.
  static __m256i round_lanes(reg x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    return _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb)),
                             16);
  }
  static __m256i nan_fixed(reg x, __m256i r) {
    const __m256 is_nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    if (_mm256_movemask_ps(is_nan) == 0) return r;
    const __m256i quiet =
        _mm256_or_si256(_mm256_srli_epi32(_mm256_castps_si256(x), 16), _mm256_set1_epi32(0x40));
    return _mm256_blendv_epi8(r, quiet, _mm256_castps_si256(is_nan));
  }
  static void store(S *p, reg x, bool stream) {
    const __m256i r = nan_fixed(x, round_lanes(x));
    // Values fit 16 bits: packus keeps them; the permute restores lane order.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
    store16(p, _mm256_castsi256_si128(packed), stream);
  }
};

struct Avx2F16 : Avx2Base {
  using Scalar = F16;
  using S = uint16_t;
  static reg load(const S *p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
  }
  static void store(S *p, reg x, bool stream) {
    store16(p, _mm256_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), stream);
  }
  static void store2(S *p, reg a, reg b, bool stream) {
    constexpr int kRne = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
    store32(p,
            _mm256_inserti128_si256(_mm256_castsi128_si256(_mm256_cvtps_ph(a, kRne)),
                                    _mm256_cvtps_ph(b, kRne), 1),
            stream);
  }
};

struct Avx2F32 : Avx2Base {
  using Scalar = F32;
  using S = float;
  static reg load(const S *p) { return _mm256_loadu_ps(p); }
  static void store(S *p, reg x, bool stream) {
    if (stream)
      _mm256_stream_ps(p, x);
    else
      _mm256_storeu_ps(p, x);
  }
};

#include "cpu/row_kernels-inl.hpp"

// bf16 rows as pairs. A 32-bit lane of a 16-element load holds elements 2i (low half) and
// 2i + 1 (high half): a shift and a mask widen them to fp32 in place, and the rounded
// results go back with a shift, a mask and an or, with no cross-lane shuffle anywhere. The
// lanes then hold elements in even/odd order; the products and roundings are the same
// element for element (so the same bits as Avx2Bf16's), and U3's partial sums are put back
// in natural order before the final reduction.
//
// Rounding needs a NaN fix-up only for a NaN whose low 16 bits are not zero (the bias would
// carry into the exponent or the sign). A NaN made from bf16 inputs never has one: x86
// propagates an input NaN's payload (quieted), a bf16 widened to fp32 has a zero low half,
// and an invalid operation (inf - inf, inf * 0) gives the default NaN 0xffc00000. Only an
// fp32 weight can bring one in, so each kernel checks its weights once per call and leaves
// the fix-up out (kNanFixup = false) when none is NaN: the same bits, fewer instructions.
struct Bf16Pairs {
  static __m256i load(const uint16_t *p) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
  }
  static __m256 even(__m256i v) { return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16)); }
  static __m256 odd(__m256i v) {
    return _mm256_castsi256_ps(_mm256_and_si256(v, _mm256_set1_epi32(int32_t(0xffff0000u))));
  }
  // x + 0x7fff + lsb: the rounded bf16 in the high half of each lane (f32_to_bf16's rule).
  static __m256i biased(__m256 x) {
    const __m256i u = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    return _mm256_add_epi32(u, _mm256_add_epi32(_mm256_set1_epi32(0x7fff), lsb));
  }
  // The 16 bf16 of even lanes e and odd lanes o, in element order.
  template <bool kNanFixup>
  static __m256i pack(__m256 e, __m256 o) {
    const __m256i hi = _mm256_set1_epi32(int32_t(0xffff0000u));
    __m256i re = _mm256_srli_epi32(biased(e), 16), ro = _mm256_and_si256(biased(o), hi);
    if constexpr (!kNanFixup) return _mm256_or_si256(re, ro);
    const __m256 nan_e = _mm256_cmp_ps(e, e, _CMP_UNORD_Q),
                 nan_o = _mm256_cmp_ps(o, o, _CMP_UNORD_Q);
    if (_mm256_movemask_ps(_mm256_or_ps(nan_e, nan_o)) != 0) {  // quiet NaN, payload's top bits
      const __m256i ue = _mm256_castps_si256(e), uo = _mm256_castps_si256(o);
      re = _mm256_blendv_epi8(re,
                              _mm256_or_si256(_mm256_srli_epi32(ue, 16), _mm256_set1_epi32(0x40)),
                              _mm256_castps_si256(nan_e));
      ro = _mm256_blendv_epi8(
          ro, _mm256_or_si256(_mm256_and_si256(uo, hi), _mm256_set1_epi32(0x400000)),
          _mm256_castps_si256(nan_o));
    }
    return _mm256_or_si256(re, ro);
  }
};

// A product rounded to bf16 and widened back (Term::scaled_rounded), lane by lane.
template <bool kNanFixup>
__m256 rounded_bf16(__m256 x) {
  const __m256i hi = _mm256_set1_epi32(int32_t(0xffff0000u));
  __m256i r = _mm256_and_si256(Bf16Pairs::biased(x), hi);
  if constexpr (!kNanFixup) return _mm256_castsi256_ps(r);
  const __m256 is_nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
  if (_mm256_movemask_ps(is_nan) != 0)
    r = _mm256_blendv_epi8(
        r,
        _mm256_or_si256(_mm256_and_si256(_mm256_castps_si256(x), hi), _mm256_set1_epi32(0x400000)),
        _mm256_castps_si256(is_nan));
  return _mm256_castsi256_ps(r);
}

template <Term kTerm, bool kNanFixup>
__m256 pair_term(__m256 v, __m256 w) {
  if constexpr (kTerm == Term::plain) {
    (void)w;
    return v;
  } else if constexpr (kTerm == Term::scaled) {
    return _mm256_mul_ps(v, w);
  } else {
    return rounded_bf16<kNanFixup>(_mm256_mul_ps(v, w));
  }
}

// Avx2Bf16's sum_impl, in pairs: the same per-element sums (+0, then the terms in ascending
// k, in fp32, rounded once); the accumulator tile keeps the pair layout between groups.
template <Term kTerm, bool kNanFixup>
void sum_pairs_impl(void *dst_v, const void *const *srcs_v, const float *weights, int64_t nsrc,
                    int64_t n, bool stream) {
  auto *dst = static_cast<uint16_t *>(dst_v);
  const auto *const *srcs = reinterpret_cast<const uint16_t *const *>(srcs_v);
  const bool nt = stream && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  auto weight = [&](int64_t k) { return kTerm == Term::plain ? 1.0f : weights[k]; };
  alignas(64) float acc[kSumTile];
  for (int64_t h0 = 0; h0 < n; h0 += kSumTile) {
    const int64_t m = n - h0 < kSumTile ? n - h0 : kSumTile, m32 = m - m % 32;
    int64_t g0 = 0;
    do {  // at least once: nsrc == 0 stores +0
      const int64_t g1 = g0 + kSumGroup < nsrc ? g0 + kSumGroup : nsrc;
      const bool first = g0 == 0, last = g1 == nsrc;
      for (int64_t i = 0; i < m32; i += 32) {
        __m256 x[4];
        for (int u = 0; u < 4; ++u)
          x[u] = first ? _mm256_setzero_ps() : _mm256_load_ps(acc + i + 8 * u);
        for (int64_t k = g0; k < g1; ++k) {
          const uint16_t *src = srcs[k] + h0 + i;
          Avx2Base::prefetch(src + kPrefetchAhead / 2);
          const __m256 w = _mm256_set1_ps(weight(k));
          for (int half = 0; half < 2; ++half) {
            const __m256i v = Bf16Pairs::load(src + 16 * half);
            x[2 * half] =
                _mm256_add_ps(x[2 * half], pair_term<kTerm, kNanFixup>(Bf16Pairs::even(v), w));
            x[2 * half + 1] =
                _mm256_add_ps(x[2 * half + 1], pair_term<kTerm, kNanFixup>(Bf16Pairs::odd(v), w));
          }
        }
        for (int half = 0; half < 2; ++half) {
          if (last) {
            Avx2Base::store32(dst + h0 + i + 16 * half,
                              Bf16Pairs::pack<kNanFixup>(x[2 * half], x[2 * half + 1]), nt);
          } else {
            _mm256_store_ps(acc + i + 16 * half, x[2 * half]);
            _mm256_store_ps(acc + i + 16 * half + 8, x[2 * half + 1]);
          }
        }
      }
      for (int64_t i = m32; i < m; ++i) {  // the tail in natural order, one lane at a time
        float x = first ? 0.0f : acc[i];
        for (int64_t k = g0; k < g1; ++k) x += term1<Avx2Bf16, kTerm>(srcs[k][h0 + i], weight(k));
        if (last)
          dst[h0 + i] = Bf16::store(x);
        else
          acc[i] = x;
      }
      g0 = g1;
    } while (g0 < nsrc);
  }
}

// Avx2Bf16's sum_impl, in pairs, with the NaN fix-up only where a weight is NaN.
template <Term kTerm>
void sum_bf16_pairs(void *dst, const void *const *srcs, const float *weights, int64_t nsrc,
                    int64_t n, bool stream) {
  bool nan_weight = false;
  for (int64_t k = 0; kTerm != Term::plain && k < nsrc; ++k)
    nan_weight = nan_weight || std::isnan(weights[k]);
  (nan_weight ? sum_pairs_impl<kTerm, true> : sum_pairs_impl<kTerm, false>)(dst, srcs, weights,
                                                                            nsrc, n, stream);
}

void sum_rows_bf16_pairs(void *dst, const void *const *srcs, int64_t nsrc, int64_t n, bool stream) {
  sum_pairs_impl<Term::plain, false>(dst, srcs, nullptr, nsrc, n, stream);
}

// Avx2Bf16's scale_row_impl, in pairs.
template <bool kNanFixup>
void scale_row_pairs_impl(void *dst_v, const void *src_v, float w, int64_t n, bool stream) {
  auto *dst = static_cast<uint16_t *>(dst_v);
  const auto *src = static_cast<const uint16_t *>(src_v);
  const bool nt = stream && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  const __m256 wv = _mm256_set1_ps(w);
  const int64_t n16 = n - n % 16;
  for (int64_t i = 0; i < n16; i += 16) {
    Avx2Base::prefetch(src + i + kPrefetchAhead / 2);
    const __m256i v = Bf16Pairs::load(src + i);
    Avx2Base::store32(dst + i,
                      Bf16Pairs::pack<kNanFixup>(_mm256_mul_ps(Bf16Pairs::even(v), wv),
                                                 _mm256_mul_ps(Bf16Pairs::odd(v), wv)),
                      nt);
  }
  for (int64_t i = n16; i < n; ++i) dst[i] = Bf16::store(Bf16::load(src[i]) * w);
}

// Avx2Bf16's scale_dot_impl, in pairs: part registers pe0/po0 hold U3's
// partial sums l = 0, 2, .., 14 / 1, 3, .., 15 and pe1/po1 l = 16, 18, .., 30 / 17, .., 31.
template <bool kNanFixup>
float scale_dot_pairs_impl(void *dst_v, const void *g_v, float w, const void *x_v, int64_t n,
                           bool stream) {
  auto *dst = static_cast<uint16_t *>(dst_v);
  const auto *g = static_cast<const uint16_t *>(g_v);
  const auto *x = static_cast<const uint16_t *>(x_v);
  const bool nt = stream && reinterpret_cast<uintptr_t>(dst) % 16 == 0;
  const __m256 wv = _mm256_set1_ps(w);
  __m256 part[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                    _mm256_setzero_ps()};
  int64_t h0 = 0;
  for (; h0 + 32 <= n; h0 += 32) {
    Avx2Base::prefetch(x + h0 + kPrefetchAhead / 2);
    for (int half = 0; half < 2; ++half) {
      const __m256i gv = Bf16Pairs::load(g + h0 + 16 * half);
      const __m256i xv = Bf16Pairs::load(x + h0 + 16 * half);
      const __m256 ge = Bf16Pairs::even(gv), go = Bf16Pairs::odd(gv);
      part[2 * half] = _mm256_fmadd_ps(Bf16Pairs::even(xv), ge, part[2 * half]);
      part[2 * half + 1] = _mm256_fmadd_ps(Bf16Pairs::odd(xv), go, part[2 * half + 1]);
      Avx2Base::store32(dst + h0 + 16 * half,
                        Bf16Pairs::pack<kNanFixup>(_mm256_mul_ps(ge, wv), _mm256_mul_ps(go, wv)),
                        nt);
    }
  }
  alignas(32) float pairs[4][8];
  for (int j = 0; j < 4; ++j) _mm256_store_ps(pairs[j], part[j]);
  float lanes[32];
  for (int half = 0; half < 2; ++half)
    for (int i = 0; i < 8; ++i) {
      lanes[16 * half + 2 * i] = pairs[2 * half][i];
      lanes[16 * half + 2 * i + 1] = pairs[2 * half + 1][i];
    }
  return scale_dot_tail<Avx2Bf16>(lanes, dst, g, x, w, h0, n);
}

// Non-temporal copy: the destination bypasses the cache (no read-for-ownership), which is
// what makes a large permute cost one write instead of a read plus a write.
void copy_avx2(void *dst_v, const void *src_v, int64_t bytes, bool stream) {
  auto *dst = static_cast<char *>(dst_v);
  const auto *src = static_cast<const char *>(src_v);
  if (!stream || bytes < 256) {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return;
  }
  const int64_t head = static_cast<int64_t>((32 - reinterpret_cast<uintptr_t>(dst) % 32) % 32);
  std::memcpy(dst, src, static_cast<size_t>(head));
  int64_t i = head;
  for (; i + 128 <= bytes; i += 128) {
    const __m256i a = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + i));
    const __m256i b = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + i + 32));
    const __m256i c = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + i + 64));
    const __m256i d = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(src + i + 96));
    _mm256_stream_si256(reinterpret_cast<__m256i *>(dst + i), a);
    _mm256_stream_si256(reinterpret_cast<__m256i *>(dst + i + 32), b);
    _mm256_stream_si256(reinterpret_cast<__m256i *>(dst + i + 64), c);
    _mm256_stream_si256(reinterpret_cast<__m256i *>(dst + i + 96), d);
  }
  std::memcpy(dst + i, src + i, static_cast<size_t>(bytes - i));
}

void fence() { _mm_sfence(); }

void scale_row_bf16_pairs(void *dst, const void *src, float w, int64_t n, bool stream) {
  (std::isnan(w) ? scale_row_pairs_impl<true> : scale_row_pairs_impl<false>)(dst, src, w, n,
                                                                             stream);
}

float scale_dot_bf16_pairs(void *dst, const void *g, float w, const void *x, int64_t n,
                           bool stream) {
  return (std::isnan(w) ? scale_dot_pairs_impl<true> : scale_dot_pairs_impl<false>)(dst, g, w, x, n,
                                                                                    stream);
}

// The bf16 table with the pair kernels where they replace the generic ones.
constexpr TypedRowKernels with_pairs(TypedRowKernels k) {
  k.sum_rows = sum_rows_bf16_pairs;
  k.sum_scaled = sum_bf16_pairs<Term::scaled>;
  k.sum_scaled_rounded = sum_bf16_pairs<Term::scaled_rounded>;
  k.scale_row = scale_row_bf16_pairs;
  k.scale_dot = scale_dot_bf16_pairs;
  return k;
}

}  // namespace

const RowKernels kRowKernelsAvx2{
    .bf16 = with_pairs(typed_kernels<Avx2Bf16>()),
    .f16 = typed_kernels<Avx2F16>(),
    .f32 = typed_kernels<Avx2F32>(),
    .copy = copy_avx2,
    .store_fence = fence,
};

}  // namespace moeperm::detail::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif
