// What the kernels see of a plan: strided views with their base pointers, and the status
// word through which the device reports data errors (Note [Device errors]).
#pragma once

#include <cstdint>

#include "core/plan.hpp"

namespace moeperm::cuda {

// A 2-D strided view (element strides) over `base`; `es` bytes per element.
struct DMatrix {
  char *base = nullptr;
  int64_t rows = 0, cols = 0, row_stride = 0, col_stride = 0, offset = 0;
  int es = 0;
  __device__ __forceinline__ char *row(int64_t r) const {
    return base + (offset + r * row_stride) * es;
  }
  __device__ __forceinline__ char *at(int64_t r, int64_t c) const {
    return base + (offset + r * row_stride + c * col_stride) * es;
  }
  __device__ __forceinline__ bool contiguous_rows() const { return col_stride == 1; }
};

struct DVector {
  char *base = nullptr;
  int64_t len = 0, stride = 0, offset = 0;
  int es = 0;
  __device__ __forceinline__ char *at(int64_t i) const { return base + (offset + i * stride) * es; }
};

inline DMatrix view(const detail::MatrixGeom &g, const void *base, DType dtype) {
  return DMatrix{static_cast<char *>(const_cast<void *>(base)),
                 g.rows,
                 g.cols,
                 g.row_stride,
                 g.col_stride,
                 g.offset,
                 static_cast<int>(element_size(dtype))};
}
inline DVector view(const detail::VectorGeom &g, const void *base, DType dtype) {
  return DVector{static_cast<char *>(const_cast<void *>(base)), g.len, g.stride, g.offset,
                 static_cast<int>(element_size(dtype))};
}

// The status word of Note [Device errors]: check kernels record the first offending
// position with atomicMin, a single-thread kernel fills in the value and sets `failed`,
// which every writing kernel reads on entry.
struct DeviceStatus {
  unsigned long long first_bad;  // position (S index j, or token row t); kNone when none
  long long bad_value;           // S[j], or the row's expert count
  long long routed_pairs;        // nnz of the routing map, when the plan counts it
  long long first_named;         // kRepeatedIndex: the earlier position naming bad_value
  int failed;                    // 0: outputs may be written
  int kind;                      // DeviceErrorKind
  int rule;                      // kBadIndex, kRepeatedIndex: the description's index rule
};
inline constexpr unsigned long long kNone = ~0ull;
enum DeviceErrorKind : int {
  kNoError = 0,
  kBadSortedIndex = 1,
  kTooManyExpertsInRow = 2,
  kTooManyRoutedPairs = 3,
  kBadIndex = 4,          // an index rule's value out of its range (index_checks.cu)
  kRepeatedIndex = 5,     // a `unique` index rule naming a value twice
  kBadSplitSize = 6,      // a negative split size (first_bad: its position, bad_value: it)
  kSplitSizesTotal = 7,   // split sizes whose sum (bad_value) is not the rows they split
  kRowWithoutExpert = 8,  // ragged: row first_bad past the routed_pairs names bad_value
};

}  // namespace moeperm::cuda
