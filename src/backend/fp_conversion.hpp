// bf16/fp16 <-> fp32 conversion, one definition for the host and the device (nvcc compiles
// these functions for both). Round to nearest, ties to even (SPEC §4); NaN stays NaN
// (quieted, payload truncated, bit-identical to the F16C and AVX-512 conversions the CPU
// vector kernels use), infinities stay infinite. Not CUDA's __float2bfloat16_rn /
// __float2half_rn, whose NaN results differ: every backend produces the same bits
// (Note [Determinism]).
#pragma once

#include <cstdint>
#ifndef __CUDA_ARCH__
#include <bit>
#endif

#if defined(__CUDACC__)
#define MOEPERM_HOST_DEVICE __host__ __device__ __forceinline__
#else
#define MOEPERM_HOST_DEVICE inline
#endif

namespace moeperm::detail {

MOEPERM_HOST_DEVICE uint32_t bits_of(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  return std::bit_cast<uint32_t>(f);
#endif
}

MOEPERM_HOST_DEVICE float float_of(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  return std::bit_cast<float>(u);
#endif
}

// One rounding each, never contracted into an FMA (the device intrinsics guarantee it; on
// the host a lone operation has nothing to contract with).
MOEPERM_HOST_DEVICE float add_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
MOEPERM_HOST_DEVICE float mul_rn(float a, float b) {
#ifdef __CUDA_ARCH__
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}

MOEPERM_HOST_DEVICE float bf16_to_f32(uint16_t h) { return float_of(uint32_t{h} << 16); }

MOEPERM_HOST_DEVICE uint16_t f32_to_bf16(float f) {
  uint32_t u = bits_of(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

MOEPERM_HOST_DEVICE float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return float_of(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float f = mul_rn(static_cast<float>(mant), 0x1p-24f);  // exact: mant < 2^10
    return sign ? -f : f;
  }
  return float_of(sign | ((exp + 112u) << 23) | (mant << 13));
}

MOEPERM_HOST_DEVICE uint16_t f32_to_f16(float f) {
  constexpr uint32_t kF32Inf = 255u << 23;
  constexpr uint32_t kF16Overflow = (127u + 16u) << 23;  // 2^16
  constexpr uint32_t kDenormMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  uint32_t u = bits_of(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint32_t o;
  if (u > kF32Inf) {
    o = 0x7e00u | ((u >> 13) & 0x3ffu);  // quiet NaN, payload truncated (as F16C's vcvtps2ph)
  } else if (u >= kF16Overflow) {
    o = 0x7c00u;
  } else if (u < (113u << 23)) {
    // Subnormal or zero result: let the FPU round (to nearest even) at the right place
    // (denormals are kept: no flush to zero on either side).
    const float sum = add_rn(float_of(u), float_of(kDenormMagic));
    o = bits_of(sum) - kDenormMagic;
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
  static MOEPERM_HOST_DEVICE float load(storage v) { return bf16_to_f32(v); }
  static MOEPERM_HOST_DEVICE storage store(float f) { return f32_to_bf16(f); }
};
struct F16 {
  using storage = uint16_t;
  static MOEPERM_HOST_DEVICE float load(storage v) { return f16_to_f32(v); }
  static MOEPERM_HOST_DEVICE storage store(float f) { return f32_to_f16(f); }
};
struct F32 {
  using storage = float;
  static MOEPERM_HOST_DEVICE float load(storage v) { return v; }
  static MOEPERM_HOST_DEVICE storage store(float f) { return f; }
};

}  // namespace moeperm::detail
