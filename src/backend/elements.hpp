// Element access shared by the host backends: typed loads and stores through plan
// geometry, and moves by size. The bf16/fp16 conversions live in fp_conversion.hpp, shared
// with the device.
#pragma once

#include <moeperm/moeperm.hpp>

#include <cstdint>
#include <cstring>

#include "backend/fp_conversion.hpp"

namespace moeperm::detail {

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

// One element of a float dtype, widened to fp32 / rounded from fp32 (round-half-even).
inline float load_value(DType dtype, const void *base, int64_t offset) {
  switch (dtype) {
    case DType::bf16: return bf16_to_f32(*elem<uint16_t>(base, offset));
    case DType::f16: return f16_to_f32(*elem<uint16_t>(base, offset));
    default: return *elem<float>(base, offset);
  }
}

inline void store_value(DType dtype, void *base, int64_t offset, float v) {
  switch (dtype) {
    case DType::bf16: *elem<uint16_t>(base, offset) = f32_to_bf16(v); break;
    case DType::f16: *elem<uint16_t>(base, offset) = f32_to_f16(v); break;
    default: *elem<float>(base, offset) = v; break;
  }
}

// Whether element `offset` of a routing map routes its token: any nonzero value of the map's
// dtype (bool, int8, uint8: one byte; int32: four).
inline bool routed_at(DType map_dtype, const void *map, int64_t offset) {
  return element_size(map_dtype) == 4 ? *elem<int32_t>(map, offset) != 0
                                      : *elem<uint8_t>(map, offset) != 0;
}

}  // namespace moeperm::detail
