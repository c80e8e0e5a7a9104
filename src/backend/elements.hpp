// Element access shared by the backends: bf16/fp16 <-> fp32 conversion and typed loads
// and stores through plan geometry. Conversions round to nearest, ties to even
// (SPEC §4); NaN stays NaN (quieted, payload truncated, bit-identical to the F16C and
// AVX-512 conversions the vector kernels use), infinities stay infinite.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>

namespace moeperm::detail {

inline float bf16_to_f32(uint16_t h) { return std::bit_cast<float>(uint32_t{h} << 16); }

inline uint16_t f32_to_bf16(float f) {
  uint32_t u = std::bit_cast<uint32_t>(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float f = static_cast<float>(mant) * 0x1p-24f;  // exact: mant < 2^10
    return sign ? -f : f;
  }
  return std::bit_cast<float>(sign | ((exp + 112u) << 23) | (mant << 13));
}

inline uint16_t f32_to_f16(float f) {
  constexpr uint32_t kF32Inf = 255u << 23;
  constexpr uint32_t kF16Overflow = (127u + 16u) << 23;  // 2^16
  constexpr uint32_t kDenormMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  uint32_t u = std::bit_cast<uint32_t>(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint32_t o;
  if (u > kF32Inf) {
    o = 0x7e00u | ((u >> 13) & 0x3ffu);  // quiet NaN, payload truncated (as F16C's vcvtps2ph)
  } else if (u >= kF16Overflow) {
    o = 0x7c00u;
  } else if (u < (113u << 23)) {
    // Subnormal or zero result: let the FPU round (to nearest even) at the right place.
    const float sum = std::bit_cast<float>(u) + std::bit_cast<float>(kDenormMagic);
    o = std::bit_cast<uint32_t>(sum) - kDenormMagic;
  } else {
    const uint32_t mant_odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mant_odd;
    o = u >> 13;  // a carry into exponent 31 yields infinity, as it should
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}

// Value types of G / tokens. Each maps storage to the fp32 accumulator and back.
struct Bf16 {
  using storage = uint16_t;
  static float load(storage v) { return bf16_to_f32(v); }
  static storage store(float f) { return f32_to_bf16(f); }
};
struct F16 {
  using storage = uint16_t;
  static float load(storage v) { return f16_to_f32(v); }
  static storage store(float f) { return f32_to_f16(f); }
};
struct F32 {
  using storage = float;
  static float load(storage v) { return v; }
  static storage store(float f) { return f; }
};

// Typed element pointer: base + element offset.
template <class T>
inline T *elem(void *base, int64_t offset) {
  return static_cast<T *>(base) + offset;
}
template <class T>
inline const T *elem(const void *base, int64_t offset) {
  return static_cast<const T *>(base) + offset;
}

// Element-wise data movement by size, not dtype (probabilities and forward rows are moved,
// never converted): element `doff` of dst = element `soff` of src, `esize` bytes each.
inline void copy_elem(void *dst, int64_t doff, const void *src, int64_t soff, int64_t esize) {
  std::memcpy(static_cast<char *>(dst) + doff * esize,
              static_cast<const char *>(src) + soff * esize, static_cast<size_t>(esize));
}

// Writes +0 (all-zero bits: +0 for bf16, fp16 and fp32) to element `off` of dst.
inline void zero_elem(void *dst, int64_t off, int64_t esize) {
  std::memset(static_cast<char *>(dst) + off * esize, 0, static_cast<size_t>(esize));
}

}  // namespace moeperm::detail
