// Row primitives of the CPU kernels. A "row" is H elements of one [*, H] matrix; the
// contiguous case (col_stride == 1) is written as plain loops over pointers so the
// compiler vectorises it; the strided case walks the stride.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>

#include "backend/elements.hpp"
#include "core/plan.hpp"
#include "cpu/isa.hpp"

namespace moeperm::detail::cpu {

// Elements of the fp32 accumulator kept on the stack per chunk of a strided row (16 KiB).
inline constexpr int64_t kAccChunk = 4096;
// Source rows one contiguous sum gathers through a pointer array on the stack.
inline constexpr int64_t kMaxGather = 512;

inline const RowKernels &kernels_of(const Plan &p) {
  return row_kernels(static_cast<Isa>(p.variant));
}

inline SumRowsFn sum_rows_fn(const RowKernels &k, DType dtype) {
  return dtype == DType::bf16  ? k.sum_rows_bf16
         : dtype == DType::f16 ? k.sum_rows_f16
                               : k.sum_rows_f32;
}

// Address of element (r, 0) of matrix g.
inline void *row_ptr(void *base, const MatrixGeom &g, int64_t r, int64_t esize) {
  return static_cast<char *>(base) + g.at(r, 0) * esize;
}

// Generic path for strided rows: output row t of `tokens` = sum of rows row_at(i),
// i < count, of `permuted`, in ascending i. The same arithmetic as the row kernels.
template <class V, class RowAt>
void sum_rows_strided(const Plan &p, const Buffers &b, int64_t t, int64_t count, RowAt row_at) {
  using S = typename V::storage;
  alignas(64) float acc[kAccChunk];
  for (int64_t h0 = 0; h0 < p.H; h0 += kAccChunk) {
    const int64_t n = std::min(kAccChunk, p.H - h0);
    std::fill(acc, acc + n, 0.0f);
    for (int64_t i = 0; i < count; ++i) {
      const S *src = elem<S>(b.permuted(), p.permuted().at(row_at(i), h0));
      for (int64_t h = 0; h < n; ++h) acc[h] += V::load(src[h * p.permuted().col_stride]);
    }
    S *dst = elem<S>(b.tokens(), p.tokens().at(t, h0));
    for (int64_t h = 0; h < n; ++h) dst[h * p.tokens().col_stride] = V::store(acc[h]);
  }
}

// Output row t of `tokens` = sum of rows row_at(i), i < count, of `permuted`: the ISA row
// kernel when rows are contiguous and few enough to gather, else the strided path.
template <class RowAt>
void sum_rows_into(const Plan &p, const Buffers &b, const RowKernels &rk, int64_t t, int64_t count,
                   RowAt row_at) {
  const int64_t es = element_size(p.value_dtype);
  if (p.permuted().col_stride == 1 && p.tokens().col_stride == 1 && count <= kMaxGather) {
    const void *srcs[kMaxGather];
    for (int64_t i = 0; i < count; ++i)
      srcs[i] = row_ptr(b.permuted(), p.permuted(), row_at(i), es);
    sum_rows_fn(rk, p.value_dtype)(row_ptr(b.tokens(), p.tokens(), t, es), srcs, count, p.H,
                                   p.stream_stores);
    return;
  }
  switch (p.value_dtype) {
    case DType::bf16: sum_rows_strided<Bf16>(p, b, t, count, row_at); break;
    case DType::f16: sum_rows_strided<F16>(p, b, t, count, row_at); break;
    default: sum_rows_strided<F32>(p, b, t, count, row_at); break;
  }
}

// Copies row sr of src into row dr of dst (same element size, pure data movement).
inline void copy_row(void *dst, const MatrixGeom &dg, int64_t dr, const void *src,
                     const MatrixGeom &sg, int64_t sr, int64_t esize, const RowKernels &rk,
                     bool stream) {
  char *d = static_cast<char *>(dst) + dg.at(dr, 0) * esize;
  const char *s = static_cast<const char *>(src) + sg.at(sr, 0) * esize;
  if (dg.col_stride == 1 && sg.col_stride == 1) {
    rk.copy(d, s, dg.cols * esize, stream);
    return;
  }
  const int64_t ds = dg.col_stride * esize, ss = sg.col_stride * esize;
  for (int64_t h = 0; h < dg.cols; ++h)
    std::memcpy(d + h * ds, s + h * ss, static_cast<size_t>(esize));
}

// Writes +0 (all-zero bits) to row r of g.
inline void zero_row(void *base, const MatrixGeom &g, int64_t r, int64_t esize) {
  char *d = static_cast<char *>(base) + g.at(r, 0) * esize;
  if (g.col_stride == 1) {
    std::memset(d, 0, static_cast<size_t>(g.cols * esize));
    return;
  }
  for (int64_t h = 0; h < g.cols; ++h)
    std::memset(d + h * g.col_stride * esize, 0, static_cast<size_t>(esize));
}

inline bool routed(const Plan &p, const void *map, int64_t t, int64_t e) {
  return *elem<uint8_t>(map, p.routing_map().at(t, e)) != 0;
}

// Row t of the routing map as bytes; element e is at [e * p.routing_map().col_stride].
// A map with no columns (E = 0) has no elements and may have a null data pointer; no row
// address may be formed from null (UB, found by fuzzing), and no caller reads one then.
inline const uint8_t *map_row(const Plan &p, const void *map, int64_t t) {
  return map ? elem<uint8_t>(map, p.routing_map().at(t, 0)) : nullptr;
}

// Calls f(T{}) with the unsigned integer type of an element of `esize` bytes (2 or 4):
// probabilities are moved, never converted, so their type is just their size.
template <class F>
inline void with_element_bits(int64_t esize, F &&f) {
  if (esize == 2)
    f(uint16_t{});
  else
    f(uint32_t{});
}

}  // namespace moeperm::detail::cpu
