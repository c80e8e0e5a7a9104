// Scalar element helpers of the reference kernels.
#pragma once

#include <moeperm/moeperm.hpp>

#include <array>
#include <cmath>

#include "backend/elements.hpp"
#include "core/plan.hpp"

namespace moeperm::detail::ref {

// Stores +0 of a float dtype (all-zero bits for bf16, fp16 and fp32).
inline void store_zero(DType dtype, void *base, int64_t offset) {
  zero_elem(base, offset, element_size(dtype));
}

inline void copy_value(DType dtype, void *dst, int64_t dst_off, const void *src, int64_t src_off) {
  copy_elem(dst, dst_off, src, src_off, element_size(dtype));
}

// int8 and bool routing maps: any nonzero byte means "routed".
inline bool routed(const Plan &plan, const void *map, int64_t t, int64_t e) {
  return *elem<uint8_t>(map, plan.routing_map().at(t, e)) != 0;
}

// SPEC-unpermute U3's dot product of row r of saved_permuted (X) and row t of tokens (G):
// 32 partial sums of fma over h = l, l + 32, ...; then halving; part[0].
inline float u3_dot(const Plan &p, const Buffers &b, int64_t r, int64_t t) {
  std::array<float, 32> part{};
  for (int64_t h = 0; h < p.H; ++h) {
    const float x = load_value(p.value_dtype, b.saved_permuted(), p.saved_permuted().at(r, h));
    const float g = load_value(p.value_dtype, b.tokens(), p.tokens().at(t, h));
    part[static_cast<size_t>(h % 32)] = std::fma(x, g, part[static_cast<size_t>(h % 32)]);
  }
  for (size_t w = 16; w >= 1; w /= 2)
    for (size_t l = 0; l < w; ++l) part[l] += part[l + w];
  return part[0];
}

}  // namespace moeperm::detail::ref
