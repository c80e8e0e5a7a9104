// Scalar element helpers of the reference kernels.
#pragma once

#include <moeperm/moeperm.hpp>

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

}  // namespace moeperm::detail::ref
