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
  static constexpr bool kPrefetch = true;
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

// The pair policy of row_kernels_bf16_pairs-inl.hpp: 8 lanes, 16 bf16 per load.
struct Avx2Pairs : Avx2Base {
  using Plain = Avx2Bf16;
  using V = reg;
  using I = __m256i;
  using M = __m256;
  static constexpr int64_t L = 8;
  static I load(const uint16_t *p) { return _mm256_loadu_si256(reinterpret_cast<const I *>(p)); }
  static void store(uint16_t *p, I v, bool stream) { Avx2Base::store32(p, v, stream); }
  static I bits(V x) { return _mm256_castps_si256(x); }
  static V floats(I v) { return _mm256_castsi256_ps(v); }
  static I set1i(uint32_t x) { return _mm256_set1_epi32(static_cast<int32_t>(x)); }
  static I and_(I a, I b) { return _mm256_and_si256(a, b); }
  static I or_(I a, I b) { return _mm256_or_si256(a, b); }
  static I add_i(I a, I b) { return _mm256_add_epi32(a, b); }
  static I shr16(I v) { return _mm256_srli_epi32(v, 16); }
  static I shl16(I v) { return _mm256_slli_epi32(v, 16); }
  static M is_nan(V x) { return _mm256_cmp_ps(x, x, _CMP_UNORD_Q); }
  static bool any(M a, M b) { return _mm256_movemask_ps(_mm256_or_ps(a, b)) != 0; }
  static I blend(M m, I a, I b) { return _mm256_blendv_epi8(a, b, _mm256_castps_si256(m)); }
};

#include "cpu/row_kernels_bf16_pairs-inl.hpp"

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

}  // namespace

const RowKernels kRowKernelsAvx2{
    .bf16 = with_pairs<Avx2Pairs>(typed_kernels<Avx2Bf16>()),
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
