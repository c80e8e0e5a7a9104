// Row primitives of the CPU kernels. A "row" is H elements of one [*, H] matrix; the
// contiguous case (col_stride == 1) is written as plain loops over pointers so the
// compiler vectorises it; the strided case walks the stride.
#pragma once

#include <algorithm>
#include <cmath>
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

inline const TypedRowKernels &typed(const RowKernels &k, DType dtype) {
  return dtype == DType::bf16 ? k.bf16 : dtype == DType::f16 ? k.f16 : k.f32;
}

// The weights of a sum's source rows (SPEC-unpermute U1): none (each row as it is), fp32
// products, or products rounded to the token dtype (drop-and-pad with same-dtype probs).
struct SumWeights {
  const float *w = nullptr;  // w[i] for source i; null: unweighted
  bool round_products = false;
};

// Address of element (r, 0) of matrix g.
inline void *row_ptr(void *base, const MatrixGeom &g, int64_t r, int64_t esize) {
  return static_cast<char *>(base) + g.at(r, 0) * esize;
}
inline const void *row_ptr(const void *base, const MatrixGeom &g, int64_t r, int64_t esize) {
  return static_cast<const char *>(base) + g.at(r, 0) * esize;
}

// Generic path for strided rows: output row t of `tokens` = sum of rows row_at(i),
// i < count, of `permuted`, in ascending i, weighted by `weights`. The same arithmetic as
// the row kernels.
template <class V, class RowAt>
void sum_rows_strided(const Plan &p, const Buffers &b, int64_t t, int64_t count, RowAt row_at,
                      SumWeights weights) {
  using S = typename V::storage;
  alignas(64) float acc[kAccChunk];
  for (int64_t h0 = 0; h0 < p.H; h0 += kAccChunk) {
    const int64_t n = std::min(kAccChunk, p.H - h0);
    std::fill(acc, acc + n, 0.0f);
    for (int64_t i = 0; i < count; ++i) {
      const S *src = elem<S>(b.permuted(), p.permuted().at(row_at(i), h0));
      if (!weights.w) {
        for (int64_t h = 0; h < n; ++h) acc[h] += V::load(src[h * p.permuted().col_stride]);
        continue;
      }
      const float w = weights.w[i];
      for (int64_t h = 0; h < n; ++h) {
        float x = V::load(src[h * p.permuted().col_stride]) * w;
        if (weights.round_products) x = V::load(V::store(x));
        acc[h] += x;
      }
    }
    S *dst = elem<S>(b.tokens(), p.tokens().at(t, h0));
    for (int64_t h = 0; h < n; ++h) dst[h * p.tokens().col_stride] = V::store(acc[h]);
  }
}

// Output row t of `tokens` = sum of rows row_at(i), i < count, of `permuted` (weighted by
// `weights`): the ISA row kernel when rows are contiguous and few enough to gather, else
// the strided path.
template <class RowAt>
void sum_rows_into(const Plan &p, const Buffers &b, const RowKernels &rk, int64_t t, int64_t count,
                   RowAt row_at, SumWeights weights = {}) {
  const int64_t es = element_size(p.value_dtype);
  if (p.permuted().col_stride == 1 && p.tokens().col_stride == 1 && count <= kMaxGather) {
    const void *srcs[kMaxGather];
    for (int64_t i = 0; i < count; ++i)
      srcs[i] = row_ptr(b.permuted(), p.permuted(), row_at(i), es);
    void *dst = row_ptr(b.tokens(), p.tokens(), t, es);
    const TypedRowKernels &k = typed(rk, p.value_dtype);
    if (!weights.w)
      k.sum_rows(dst, srcs, count, p.H, p.stream_stores);
    else
      (weights.round_products ? k.sum_scaled_rounded : k.sum_scaled)(dst, srcs, weights.w, count,
                                                                     p.H, p.stream_stores);
    return;
  }
  switch (p.value_dtype) {
    case DType::bf16: sum_rows_strided<Bf16>(p, b, t, count, row_at, weights); break;
    case DType::f16: sum_rows_strided<F16>(p, b, t, count, row_at, weights); break;
    default: sum_rows_strided<F32>(p, b, t, count, row_at, weights); break;
  }
}

// Row dr of dst = round(f32(row sr of src) * w), element by element (same dtype).
inline void scale_row(void *dst, const MatrixGeom &dg, int64_t dr, const void *src,
                      const MatrixGeom &sg, int64_t sr, float w, DType dtype, const RowKernels &rk,
                      bool stream) {
  const int64_t es = element_size(dtype);
  if (dg.col_stride == 1 && sg.col_stride == 1) {
    typed(rk, dtype).scale_row(row_ptr(dst, dg, dr, es), row_ptr(src, sg, sr, es), w, dg.cols,
                               stream);
    return;
  }
  for (int64_t h = 0; h < dg.cols; ++h)
    store_value(dtype, dst, dg.at(dr, h), load_value(dtype, src, sg.at(sr, h)) * w);
}

// SPEC-unpermute U3's dot product of row ar of a and row br of b (same dtype, H = a's cols).
inline float dot_rows(const void *a, const MatrixGeom &ag, int64_t ar, const void *b,
                      const MatrixGeom &bg, int64_t br, DType dtype, const RowKernels &rk) {
  const int64_t es = element_size(dtype);
  if (ag.col_stride == 1 && bg.col_stride == 1)
    return typed(rk, dtype).dot(row_ptr(a, ag, ar, es), row_ptr(b, bg, br, es), ag.cols);
  float part[32] = {};
  for (int64_t h = 0; h < ag.cols; ++h)
    part[h % 32] = std::fma(load_value(dtype, a, ag.at(ar, h)), load_value(dtype, b, bg.at(br, h)),
                            part[h % 32]);
  for (int64_t w = 16; w >= 1; w /= 2)
    for (int64_t l = 0; l < w; ++l) part[l] += part[l + w];
  return part[0];
}

// Copies row sr of src into row dr of dst (same element size, pure data movement).
inline void copy_row(void *dst, const MatrixGeom &dg, int64_t dr, const void *src,
                     const MatrixGeom &sg, int64_t sr, int64_t esize, const RowKernels &rk,
                     bool stream) {
  if (dg.cols == 0) return;  // no elements, maybe null data: no row address (see zero_row)
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

// Writes +0 (all-zero bits) to row r of g. A matrix without columns (a [T, 0] probs
// gradient at E = 0) has no elements and may have a null data pointer: no row address is
// formed then, and memset never sees null (UB even for 0 bytes; found by fuzzing).
inline void zero_row(void *base, const MatrixGeom &g, int64_t r, int64_t esize) {
  if (g.cols == 0) return;
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

// Calls f(e) for every expert e that routes token t (a nonzero element of map row t, of any
// map dtype: 1 or 4 bytes), in ascending e. A contiguous row is read 8 bytes at a time and
// an all-zero word skipped: maps are sparse (DeepSeek-like, E = 256 and K = 8: 97% zeros),
// and a test per column was about 3% of the ragged permute's CPU time (docs/cpu-performance.md,
// experiment 18). Nothing when E = 0 (the map may then be null).
template <class F>
inline void for_each_routed(const Plan &p, const void *map, int64_t t, F &&f) {
  const MatrixGeom &g = p.routing_map();
  if (p.E <= 0 || !map) return;
  const DType dt = p.routing_map_dtype;
  const int64_t first = g.at(t, 0);  // element offset of column 0
  if (g.col_stride != 1) {
    for (int64_t e = 0; e < p.E; ++e)
      if (routed_at(dt, map, g.at(t, e))) f(e);
    return;
  }
  const int64_t per_word = 8 / element_size(dt);  // columns in 8 bytes
  const auto *row = static_cast<const unsigned char *>(map) + first * element_size(dt);
  int64_t e = 0;
  for (; e + per_word <= p.E; e += per_word) {
    uint64_t word;
    std::memcpy(&word, row + e * element_size(dt), sizeof word);
    if (word == 0) continue;
    for (int64_t c = e; c < e + per_word; ++c)
      if (routed_at(dt, map, first + c)) f(c);
  }
  for (; e < p.E; ++e)
    if (routed_at(dt, map, first + e)) f(e);
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

// The unpermute Grads' rows (roles: tokens = G, permuted = dX, saved_permuted = X).
// dX[r] = G[t], or G[t] * pv with probs (U2's dX).
inline void write_row(const Plan &p, const Buffers &b, const RowKernels &rk, int64_t r, int64_t t,
                      bool probs, float pv) {
  if (probs)
    scale_row(b.permuted(), p.permuted(), r, b.tokens(), p.tokens(), t, pv, p.value_dtype, rk,
              p.stream_stores);
  else
    copy_row(b.permuted(), p.permuted(), r, b.tokens(), p.tokens(), t, element_size(p.value_dtype),
             rk, p.stream_stores);
}

// dX[r] = G[t] * pv and returns dot(X[r], G[t]): one pass when the rows are contiguous.
// r_next: the row of X this thread reads next, if known (else any value outside X's rows);
// only prefetched, so it need not have been validated.
inline float write_row_and_dot(const Plan &p, const Buffers &b, const RowKernels &rk, int64_t r,
                               int64_t t, float pv, int64_t r_next) {
  const MatrixGeom &dg = p.permuted(), &gg = p.tokens(), &xg = p.saved_permuted();
  if (dg.col_stride == 1 && gg.col_stride == 1 && xg.col_stride == 1) {
    const int64_t es = element_size(p.value_dtype);
    const void *x_next =
        r_next >= 0 && r_next < xg.rows ? row_ptr(b.saved_permuted(), xg, r_next, es) : nullptr;
    return typed(rk, p.value_dtype)
        .scale_dot(row_ptr(b.permuted(), dg, r, es), row_ptr(b.tokens(), gg, t, es), pv,
                   row_ptr(b.saved_permuted(), xg, r, es), x_next, p.H, p.stream_stores);
  }
  write_row(p, b, rk, r, t, true, pv);
  return dot_rows(b.saved_permuted(), xg, r, b.tokens(), gg, t, p.value_dtype, rk);
}

}  // namespace moeperm::detail::cpu
