// AVX-512 (F, BW, VL) row kernels (16 lanes). Compiled for AVX-512 through
// `#pragma GCC target` only here; called only when the CPU reports it (isa.cpp).
#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/elements.hpp"
#include "cpu/isa.hpp"

// Clang has no `#pragma GCC target`; its equivalent attaches the target to every function
// defined in the region (the fuzz preset builds the library with clang).
#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx2,f16c"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx2,f16c")
// GCC 12's AVX-512 intrinsics start from _mm512_undefined_*() and trip a false
// -Wmaybe-uninitialized, or -Wuninitialized at -O2 with the sanitizers (GCC bug 105593);
// nothing here reads an undefined value.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

namespace moeperm::detail::cpu {
namespace {

struct Avx512Base {
  using reg = __m512;
  static constexpr int64_t W = 16;
  static reg zero() { return _mm512_setzero_ps(); }
  static reg load_acc(const float *p) { return _mm512_load_ps(p); }
  static void store_acc(float *p, reg x) { _mm512_store_ps(p, x); }
  static reg set1(float x) { return _mm512_set1_ps(x); }
  static reg add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  static reg fma(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static float fma1(float a, float b, float c) { return std::fma(a, b, c); }
  static constexpr bool kPrefetch = true;
  static void store32(void *p, __m256i v, bool stream) {
    if (stream)
      _mm256_stream_si256(static_cast<__m256i *>(p), v);
    else
      _mm256_storeu_si256(static_cast<__m256i *>(p), v);
  }
};

struct Avx512Bf16 : Avx512Base {
  using Scalar = Bf16;
  using S = uint16_t;
  static reg load(const S *p) {
    const __m512i w =
        _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
  }
  static void store(S *p, reg x, bool stream) {
    const __m512i u = _mm512_castps_si512(x);
    const __m512i hi = _mm512_srli_epi32(u, 16);
    const __m512i lsb = _mm512_and_si512(hi, _mm512_set1_epi32(1));
    __m512i r = _mm512_srli_epi32(
        _mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
    const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(
        _mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)), _mm512_set1_epi32(0x7f800000));
    r = _mm512_mask_blend_epi32(is_nan, r, _mm512_or_si512(hi, _mm512_set1_epi32(0x40)));
    store32(p, _mm512_cvtepi32_epi16(r), stream);
  }
};

struct Avx512F16 : Avx512Base {
  using Scalar = F16;
  using S = uint16_t;
  static reg load(const S *p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
  }
  static void store(S *p, reg x, bool stream) {
    store32(p, _mm512_cvtps_ph(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), stream);
  }
};

struct Avx512F32 : Avx512Base {
  using Scalar = F32;
  using S = float;
  static reg load(const S *p) { return _mm512_loadu_ps(p); }
  static void store(S *p, reg x, bool stream) {
    if (stream)
      _mm512_stream_ps(p, x);
    else
      _mm512_storeu_ps(p, x);
  }
};

#include "cpu/row_kernels-inl.hpp"

// The pair policy of row_kernels_bf16_pairs-inl.hpp: 16 lanes, 32 bf16 per load. On the
// Intel VM of docs/cpu-performance.md, Avx512Bf16's widen (vpmovzxwd) and narrow (vpmovdw)
// made the bf16 sums slower than AVX2's pairs (experiment 10).
struct Avx512Pairs : Avx512Base {
  using Plain = Avx512Bf16;
  using V = reg;
  using I = __m512i;
  using M = __mmask16;
  static constexpr int64_t L = 16;
  static I load(const uint16_t *p) { return _mm512_loadu_si512(p); }
  // `stream` promises 16-byte alignment: a 64-byte-aligned address streams whole, any
  // other as four 16-byte halves.
  static void store(uint16_t *p, I v, bool stream) {
    if (!stream) {
      _mm512_storeu_si512(p, v);
    } else if (reinterpret_cast<uintptr_t>(p) % 64 == 0) {
      _mm512_stream_si512(reinterpret_cast<I *>(p), v);
    } else {
      auto *q = reinterpret_cast<__m128i *>(p);
      _mm_stream_si128(q, _mm512_castsi512_si128(v));
      _mm_stream_si128(q + 1, _mm512_extracti32x4_epi32(v, 1));
      _mm_stream_si128(q + 2, _mm512_extracti32x4_epi32(v, 2));
      _mm_stream_si128(q + 3, _mm512_extracti32x4_epi32(v, 3));
    }
  }
  static I bits(V x) { return _mm512_castps_si512(x); }
  static V floats(I v) { return _mm512_castsi512_ps(v); }
  static I set1i(uint32_t x) { return _mm512_set1_epi32(static_cast<int32_t>(x)); }
  static I and_(I a, I b) { return _mm512_and_si512(a, b); }
  static I or_(I a, I b) { return _mm512_or_si512(a, b); }
  static I add_i(I a, I b) { return _mm512_add_epi32(a, b); }
  static I shr16(I v) { return _mm512_srli_epi32(v, 16); }
  static I shl16(I v) { return _mm512_slli_epi32(v, 16); }
  static M is_nan(V x) { return _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q); }
  static bool any(M a, M b) { return (a | b) != 0; }
  static I blend(M m, I a, I b) { return _mm512_mask_blend_epi32(m, a, b); }
};

#include "cpu/row_kernels_bf16_pairs-inl.hpp"

void copy_avx512(void *dst_v, const void *src_v, int64_t bytes, bool stream) {
  auto *dst = static_cast<char *>(dst_v);
  const auto *src = static_cast<const char *>(src_v);
  if (!stream || bytes < 256) {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return;
  }
  const int64_t head = static_cast<int64_t>((64 - reinterpret_cast<uintptr_t>(dst) % 64) % 64);
  std::memcpy(dst, src, static_cast<size_t>(head));
  int64_t i = head;
  for (; i + 128 <= bytes; i += 128) {
    const __m512i a = _mm512_loadu_si512(src + i);
    const __m512i b = _mm512_loadu_si512(src + i + 64);
    _mm512_stream_si512(reinterpret_cast<__m512i *>(dst + i), a);
    _mm512_stream_si512(reinterpret_cast<__m512i *>(dst + i + 64), b);
  }
  std::memcpy(dst + i, src + i, static_cast<size_t>(bytes - i));
}

void fence() { _mm_sfence(); }

}  // namespace

const RowKernels kRowKernelsAvx512{
    .bf16 = with_pairs<Avx512Pairs>(typed_kernels<Avx512Bf16>()),
    .f16 = typed_kernels<Avx512F16>(),
    .f32 = typed_kernels<Avx512F32>(),
    .copy = copy_avx512,
    .store_fence = fence,
};

}  // namespace moeperm::detail::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC diagnostic pop
#pragma GCC pop_options
#endif
