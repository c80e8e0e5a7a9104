// Row primitives of the CPU kernels. A "row" is H elements of one [*, H] matrix; the
// contiguous case (col_stride == 1) is written as plain loops over pointers so the
// compiler vectorises it; the strided case walks the stride.
#pragma once

#include <cstdint>
#include <cstring>

#include "backend/elements.hpp"
#include "core/plan.hpp"

namespace moeperm::detail::cpu {

// Elements of fp32 accumulator kept on the stack per chunk of a row (16 KiB).
inline constexpr int64_t kAccChunk = 4096;

// acc[0..n) += row[h0 .. h0+n) of matrix g, row r.
template <class V>
inline void accumulate(float *acc, const void *base, const MatrixGeom &g, int64_t r, int64_t h0,
                       int64_t n) {
  using S = typename V::storage;
  const S *src = elem<S>(base, g.at(r, h0));
  if (g.col_stride == 1) {
    for (int64_t i = 0; i < n; ++i) acc[i] += V::load(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) acc[i] += V::load(src[i * g.col_stride]);
  }
}

// row[h0 .. h0+n) of matrix g, row r = round(acc[0..n)).
template <class V>
inline void store_row(void *base, const MatrixGeom &g, int64_t r, int64_t h0, int64_t n,
                      const float *acc) {
  using S = typename V::storage;
  S *dst = elem<S>(base, g.at(r, h0));
  if (g.col_stride == 1) {
    for (int64_t i = 0; i < n; ++i) dst[i] = V::store(acc[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i * g.col_stride] = V::store(acc[i]);
  }
}

// Copies row sr of src into row dr of dst (same element size, pure data movement).
inline void copy_row(void *dst, const MatrixGeom &dg, int64_t dr, const void *src,
                     const MatrixGeom &sg, int64_t sr, int64_t esize) {
  char *d = static_cast<char *>(dst) + dg.at(dr, 0) * esize;
  const char *s = static_cast<const char *>(src) + sg.at(sr, 0) * esize;
  if (dg.col_stride == 1 && sg.col_stride == 1) {
    std::memcpy(d, s, static_cast<size_t>(dg.cols * esize));
    return;
  }
  const int64_t ds = dg.col_stride * esize, ss = sg.col_stride * esize;
  for (int64_t h = 0; h < dg.cols; ++h) std::memcpy(d + h * ds, s + h * ss, static_cast<size_t>(esize));
}

// Writes +0 (all-zero bits) to row r of g.
inline void zero_row(void *base, const MatrixGeom &g, int64_t r, int64_t esize) {
  char *d = static_cast<char *>(base) + g.at(r, 0) * esize;
  if (g.col_stride == 1) {
    std::memset(d, 0, static_cast<size_t>(g.cols * esize));
    return;
  }
  for (int64_t h = 0; h < g.cols; ++h) std::memset(d + h * g.col_stride * esize, 0, static_cast<size_t>(esize));
}

inline void copy_elem(void *dst, int64_t doff, const void *src, int64_t soff, int64_t esize) {
  std::memcpy(static_cast<char *>(dst) + doff * esize, static_cast<const char *>(src) + soff * esize,
              static_cast<size_t>(esize));
}

inline void zero_elem(void *dst, int64_t off, int64_t esize) {
  std::memset(static_cast<char *>(dst) + off * esize, 0, static_cast<size_t>(esize));
}

inline bool routed(const Plan &p, const void *map, int64_t t, int64_t e) {
  return *elem<uint8_t>(map, p.routing_map.at(t, e)) != 0;
}

// Calls f(Value) with the value-type tag of dtype (bf16, fp16 or fp32).
template <class F>
inline auto dispatch_value(DType dtype, F &&f) {
  switch (dtype) {
    case DType::bf16: return f(Bf16{});
    case DType::f16: return f(F16{});
    default: return f(F32{});
  }
}

}  // namespace moeperm::detail::cpu
