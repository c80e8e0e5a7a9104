// Row copies and row sums. A row is H elements; when both rows are contiguous and 16-byte
// aligned the work moves in 16-byte vectors (uint4), with a scalar tail for the last
// H*es % 16 bytes; otherwise element by element through the strides. The alignment test is
// per row, so one odd row (a storage offset, an odd row stride) never slows the others.
#pragma once

#include <cstdint>

#include "cuda/device_elements.cuh"
#include "cuda/device_views.cuh"

namespace moeperm::cuda {

// Element i of an int32 index vector.
__device__ __forceinline__ int64_t index_at(const DVector &v, int64_t i) {
  return *reinterpret_cast<const int32_t *>(v.at(i));
}

// One element of a float dtype known at run time (probabilities), as fp32 / from fp32.
__device__ __forceinline__ float load_as_float(const char *p, DType dt) {
  if (dt == DType::bf16) return bf16_to_f32(*reinterpret_cast<const uint16_t *>(p));
  if (dt == DType::f16) return f16_to_f32(*reinterpret_cast<const uint16_t *>(p));
  return *reinterpret_cast<const float *>(p);
}

__device__ __forceinline__ void store_from_float(char *p, DType dt, float v) {
  if (dt == DType::bf16)
    *reinterpret_cast<uint16_t *>(p) = f32_to_bf16(v);
  else if (dt == DType::f16)
    *reinterpret_cast<uint16_t *>(p) = f32_to_f16(v);
  else
    *reinterpret_cast<float *>(p) = v;
}

__device__ __forceinline__ bool aligned16(const void *p) {
  return (reinterpret_cast<uintptr_t>(p) & 15u) == 0;
}

// A routing map element routes when it is nonzero (1-byte maps, or int32: all four bytes).
__device__ __forceinline__ bool routed_element(const char *p, int es) {
  return es == 4 ? *reinterpret_cast<const int32_t *>(p) != 0 : *p != 0;
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

// The NaN an x86 add, multiply or fma returns when its result is NaN (the host backends'
// bits, SPEC §4): the first NaN operand, quieted; with none (inf - inf, inf * 0) the "real
// indefinite" 0xFFC00000. CUDA's arithmetic returns a canonical NaN instead. (With several NaN
// operands x86 takes one by its instruction's operand order, which the compiler picks: no
// specification fixes that payload, and the tests give each sum or dot at most one NaN.)
__device__ __forceinline__ float x86_nan(float a, float b, float c) {
  if (isnan(a)) return __uint_as_float(__float_as_uint(a) | 0x00400000u);
  if (isnan(b)) return __uint_as_float(__float_as_uint(b) | 0x00400000u);
  if (isnan(c)) return __uint_as_float(__float_as_uint(c) | 0x00400000u);
  return __uint_as_float(0xffc00000u);
}

// acc + v as x86 addss/vaddps gives it. The NaN test is off the data path's critical loads.
__device__ __forceinline__ float add_like_x86(float acc, float v) {
  const float r = __fadd_rn(acc, v);
  return isnan(r) ? x86_nan(acc, v, 0.0f) : r;
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

// a * b as x86 mulss/vmulps gives it. __fmul_rn is never contracted into an fma, so the
// product is rounded to fp32 before it is added (SPEC-unpermute U1).
__device__ __forceinline__ float mul_like_x86(float a, float b) {
  const float r = __fmul_rn(a, b);
  return isnan(r) ? x86_nan(a, b, 0.0f) : r;
}

// fma(a, b, c) as x86 vfmadd gives it (one rounding; U3's dot products).
__device__ __forceinline__ float fma_like_x86(float a, float b, float c) {
  const float r = __fmaf_rn(a, b, c);
  return isnan(r) ? x86_nan(a, b, c) : r;
}

// The weight of source row i of a sum: none, fp32 products, or products rounded to the
// storage dtype (SPEC-unpermute U1; drop-and-pad with probs of the token dtype).
struct NoWeights {
  static constexpr bool kWeighted = false;
  __device__ __forceinline__ float operator()(int64_t) const { return 1.0f; }
};
struct SharedWeights {  // w[i], one per source row
  static constexpr bool kWeighted = true;
  const float *w;
  bool round_products;
  __device__ __forceinline__ float operator()(int64_t i) const { return w[i]; }
};

template <class V, class W>
__device__ __forceinline__ float weighted(float x, const W &weights, float w) {
  if constexpr (!W::kWeighted) {
    return x;
  } else {
    const float prod = mul_like_x86(x, w);
    return weights.round_products ? V::load(V::store(prod)) : prod;
  }
}

// dst row dr = round(+0 + sum over i ascending of src row src_rows[i] (times weights(i))),
// fp32 products and sums, one rounding: sum_rows_to_row with weights. A thread owns whole
// elements, so each element's sum runs in the reference's order.
template <class V, class W>
__device__ __forceinline__ void weighted_sum_to_row(const DMatrix &dst, int64_t dr,
                                                    const DMatrix &src, const int64_t *src_rows,
                                                    int64_t n, const W &weights) {
  using S = typename V::storage;
  constexpr int kPer = 16 / sizeof(S);
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
      for (int64_t i = 0; i < n; ++i) {
        const uint4 x = __ldg(reinterpret_cast<const uint4 *>(src.row(src_rows[i])) + v);
        const S *e = reinterpret_cast<const S *>(&x);
        const float w = weights(i);
#pragma unroll
        for (int k = 0; k < kPer; ++k)
          acc[k] = add_like_x86(acc[k], weighted<V>(V::load(e[k]), weights, w));
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
    for (int64_t i = 0; i < n; ++i) {
      const float x = V::load(*reinterpret_cast<const S *>(src.at(src_rows[i], h)));
      acc = add_like_x86(acc, weighted<V>(x, weights, weights(i)));
    }
    *reinterpret_cast<S *>(dst.at(dr, h)) = V::store(acc);
  }
}

// dst row dr = round(src row sr * w), element by element (no +0 added: a -0 product stays
// -0; SPEC-unpermute U2's dX). All threads of the block cooperate.
template <class V>
__device__ __forceinline__ void scale_row_to_row(const DMatrix &dst, int64_t dr, const DMatrix &src,
                                                 int64_t sr, float w) {
  using S = typename V::storage;
  for (int64_t h = threadIdx.x; h < dst.cols; h += blockDim.x) {
    const float x = V::load(*reinterpret_cast<const S *>(src.at(sr, h)));
    *reinterpret_cast<S *>(dst.at(dr, h)) = V::store(mul_like_x86(x, w));
  }
}

// SPEC-unpermute U3's dot product of row ar of a and row br of b, by one warp: lane l holds
// part[l], the fma over h = l, l + 32, ... ascending from +0; then part[l] += part[l + w] for
// w = 16, 8, 4, 2, 1 (__shfl_down_sync adds exactly part[l + w] to lane l), with x86's NaN
// rules throughout (a NaN in a row gives the host backends' dP bits). Lane 0 returns part[0];
// the other lanes return partial values.
template <class V>
__device__ __forceinline__ float warp_dot(const DMatrix &a, int64_t ar, const DMatrix &b,
                                          int64_t br) {
  using S = typename V::storage;
  const int lane = static_cast<int>(threadIdx.x & 31u);
  float part = 0.0f;
  for (int64_t h = lane; h < a.cols; h += 32)
    part = fma_like_x86(V::load(*reinterpret_cast<const S *>(a.at(ar, h))),
                        V::load(*reinterpret_cast<const S *>(b.at(br, h))), part);
  for (int w = 16; w >= 1; w /= 2)
    part = add_like_x86(part, __shfl_down_sync(0xffffffffu, part, w));
  return part;
}

}  // namespace moeperm::cuda
