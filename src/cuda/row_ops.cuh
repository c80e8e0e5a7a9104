// Row copies and row sums. A row is H elements; when both rows are contiguous and 16-byte
// aligned the work moves in 16-byte vectors (uint4), with a scalar tail for the last
// H*es % 16 bytes; otherwise element by element through the strides. The alignment test is
// per row, so one odd row (a storage offset, an odd row stride) never slows the others.
#pragma once

#include <cstdint>

#include "cuda/device_elements.cuh"
#include "cuda/device_views.cuh"

namespace moeperm::cuda {

__device__ __forceinline__ bool aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

__device__ __forceinline__ void copy_element(char *dst, const char *src, int es) {
  if (es == 4)
    *reinterpret_cast<uint32_t *>(dst) = *reinterpret_cast<const uint32_t *>(src);
  else if (es == 2)
    *reinterpret_cast<uint16_t *>(dst) = *reinterpret_cast<const uint16_t *>(src);
  else
    *dst = *src;
}

__device__ __forceinline__ void zero_element(char *dst, int es) {
  if (es == 4)
    *reinterpret_cast<uint32_t *>(dst) = 0u;
  else if (es == 2)
    *reinterpret_cast<uint16_t *>(dst) = 0u;
  else
    *dst = 0;
}

// acc + v with the NaN result an x86 addss/vaddps gives (the host backends' bits, SPEC §4):
// the first NaN operand, quieted; inf + -inf gives the "real indefinite" 0xFFC00000. CUDA's
// add returns a canonical NaN instead. The NaN test is off the data path's critical loads.
__device__ __forceinline__ float add_like_x86(float acc, float v) {
  const float r = __fadd_rn(acc, v);
  if (!isnan(r)) return r;
  if (isnan(acc)) return __uint_as_float(__float_as_uint(acc) | 0x00400000u);
  if (isnan(v)) return __uint_as_float(__float_as_uint(v) | 0x00400000u);
  return __uint_as_float(0xffc00000u);
}

// Copies source row `sr` of `src` to destination rows dst_rows[0..n) of `dst`, all threads
// of the block cooperating (each source vector is loaded once and stored n times).
__device__ __forceinline__ void copy_row_to_rows(const DMatrix &dst, const int64_t *dst_rows,
                                                 int64_t n, const DMatrix &src, int64_t sr) {
  const int64_t H = src.cols;
  const char *s = src.row(sr);
  bool vec = src.contiguous_rows() && dst.contiguous_rows() && aligned16(s);
  for (int64_t i = 0; i < n && vec; ++i) vec = aligned16(dst.row(dst_rows[i]));
  int64_t done = 0;
  if (vec) {
    const int64_t nvec = H * src.es / 16;
    const uint4 *sv = reinterpret_cast<const uint4 *>(s);
    for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
      const uint4 x = __ldg(sv + v);
      for (int64_t i = 0; i < n; ++i) reinterpret_cast<uint4 *>(dst.row(dst_rows[i]))[v] = x;
    }
    done = nvec * 16 / src.es;
  }
  for (int64_t h = done + threadIdx.x; h < H; h += blockDim.x) {
    const char *e = src.at(sr, h);
    for (int64_t i = 0; i < n; ++i) copy_element(dst.at(dst_rows[i], h), e, src.es);
  }
}

__device__ __forceinline__ void zero_row(const DMatrix &dst, int64_t r) {
  const int64_t H = dst.cols;
  int64_t done = 0;
  if (dst.contiguous_rows() && aligned16(dst.row(r))) {
    const int64_t nvec = H * dst.es / 16;
    uint4 *dv = reinterpret_cast<uint4 *>(dst.row(r));
    for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) dv[v] = make_uint4(0, 0, 0, 0);
    done = nvec * 16 / dst.es;
  }
  for (int64_t h = done + threadIdx.x; h < H; h += blockDim.x) zero_element(dst.at(r, h), dst.es);
}

// dst row dr = sum over i = 0..n-1, in that order, of src rows src_rows[i], in fp32 from
// 0.0f, rounded once (SPEC §4: the reference's order and rounding, bit for bit). n may be 0.
// The row lists are read by every thread (shared memory, or a global array of the run).
template <class V>
__device__ __forceinline__ void sum_rows_to_row(const DMatrix &dst, int64_t dr, const DMatrix &src,
                                                const int64_t *src_rows, int64_t n) {
  using S = typename V::storage;
  constexpr int kPer = 16 / sizeof(S);  // elements per 16-byte vector
  const int64_t H = dst.cols;
  bool vec = src.contiguous_rows() && dst.contiguous_rows() && aligned16(dst.row(dr));
  for (int64_t i = 0; i < n && vec; ++i) vec = aligned16(src.row(src_rows[i]));
  int64_t done = 0;
  if (vec) {
    const int64_t nvec = H / kPer;
    for (int64_t v = threadIdx.x; v < nvec; v += blockDim.x) {
      float acc[kPer];
#pragma unroll
      for (int k = 0; k < kPer; ++k) acc[k] = 0.0f;
      int64_t i = 0;
      // Four loads in flight, then four ordered additions: the order of the sum is fixed.
      for (; i + 4 <= n; i += 4) {
        uint4 x[4];
#pragma unroll
        for (int u = 0; u < 4; ++u)
          x[u] = __ldg(reinterpret_cast<const uint4 *>(src.row(src_rows[i + u])) + v);
#pragma unroll
        for (int u = 0; u < 4; ++u) {
          const S *e = reinterpret_cast<const S *>(&x[u]);
#pragma unroll
          for (int k = 0; k < kPer; ++k) acc[k] = add_like_x86(acc[k], V::load(e[k]));
        }
      }
      for (; i < n; ++i) {
        const uint4 x = __ldg(reinterpret_cast<const uint4 *>(src.row(src_rows[i])) + v);
        const S *e = reinterpret_cast<const S *>(&x);
#pragma unroll
        for (int k = 0; k < kPer; ++k) acc[k] = add_like_x86(acc[k], V::load(e[k]));
      }
      uint4 out;
      S *o = reinterpret_cast<S *>(&out);
#pragma unroll
      for (int k = 0; k < kPer; ++k) o[k] = V::store(acc[k]);
      reinterpret_cast<uint4 *>(dst.row(dr))[v] = out;
    }
    done = nvec * kPer;
  }
  for (int64_t h = done + threadIdx.x; h < H; h += blockDim.x) {
    float acc = 0.0f;
    for (int64_t i = 0; i < n; ++i)
      acc = add_like_x86(acc, V::load(*reinterpret_cast<const S *>(src.at(src_rows[i], h))));
    *reinterpret_cast<S *>(dst.at(dr, h)) = V::store(acc);
  }
}

}  // namespace moeperm::cuda
