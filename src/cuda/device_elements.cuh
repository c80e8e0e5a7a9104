// Device twins of backend/elements.hpp: the same bf16/fp16 <-> fp32 conversions, bit for
// bit (round to nearest even; NaN quieted with its payload truncated, as the host and the
// F16C/AVX-512 kernels do). Not CUDA's __float2bfloat16_rn / __float2half_rn, whose NaN
// results differ from the host's: every backend must produce the same bits (SPEC §4).
#pragma once

#include <cstdint>

namespace moeperm::cuda {

__device__ __forceinline__ float bf16_to_f32(uint16_t h) {
  return __uint_as_float(static_cast<uint32_t>(h) << 16);
}

__device__ __forceinline__ uint16_t f32_to_bf16(float f) {
  uint32_t u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

__device__ __forceinline__ float f16_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  if (exp == 0) {
    const float f = __fmul_rn(static_cast<float>(mant), 0x1p-24f);  // exact: mant < 2^10
    return sign ? -f : f;
  }
  return __uint_as_float(sign | ((exp + 112u) << 23) | (mant << 13));
}

__device__ __forceinline__ uint16_t f32_to_f16(float f) {
  constexpr uint32_t kF32Inf = 255u << 23;
  constexpr uint32_t kF16Overflow = (127u + 16u) << 23;
  constexpr uint32_t kDenormMagic = ((127u - 15u) + (23u - 10u) + 1u) << 23;
  uint32_t u = __float_as_uint(f);
  const uint32_t sign = u & 0x80000000u;
  u ^= sign;
  uint32_t o;
  if (u > kF32Inf) {
    o = 0x7e00u | ((u >> 13) & 0x3ffu);
  } else if (u >= kF16Overflow) {
    o = 0x7c00u;
  } else if (u < (113u << 23)) {
    // __fadd_rn: never contracted, rounds to nearest even (denormals are kept: no -ftz).
    const float sum = __fadd_rn(__uint_as_float(u), __uint_as_float(kDenormMagic));
    o = __float_as_uint(sum) - kDenormMagic;
  } else {
    const uint32_t mant_odd = (u >> 13) & 1u;
    u += (static_cast<uint32_t>(15 - 127) << 23) + 0xfffu + mant_odd;
    o = u >> 13;
  }
  return static_cast<uint16_t>(o | (sign >> 16));
}

// Value types: storage <-> the fp32 accumulator.
struct DBf16 {
  using storage = uint16_t;
  static __device__ __forceinline__ float load(storage v) { return bf16_to_f32(v); }
  static __device__ __forceinline__ storage store(float f) { return f32_to_bf16(f); }
};
struct DF16 {
  using storage = uint16_t;
  static __device__ __forceinline__ float load(storage v) { return f16_to_f32(v); }
  static __device__ __forceinline__ storage store(float f) { return f32_to_f16(f); }
};
struct DF32 {
  using storage = float;
  static __device__ __forceinline__ float load(storage v) { return v; }
  static __device__ __forceinline__ storage store(float f) { return f; }
};

}  // namespace moeperm::cuda
