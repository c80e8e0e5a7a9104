// Baseline row kernels: one lane, no vector instructions beyond the build's baseline.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "backend/elements.hpp"
#include "cpu/isa.hpp"

namespace moeperm::detail::cpu {
namespace {

template <class T>
struct ScalarVec {
  using Scalar = T;
  using S = typename T::storage;
  using reg = float;
  static constexpr int64_t W = 1;
  static reg zero() { return 0.0f; }
  static reg load(const S *p) { return T::load(*p); }
  static reg load_acc(const float *p) { return *p; }
  static void store_acc(float *p, reg x) { *p = x; }
  static reg set1(float x) { return x; }
  static reg add(reg a, reg b) { return a + b; }
  static reg mul(reg a, reg b) { return a * b; }
  static reg fma(reg a, reg b, reg c) { return std::fma(a, b, c); }
  static float fma1(float a, float b, float c) { return std::fma(a, b, c); }
  static constexpr bool kPrefetch = false;
  static void store(S *p, reg x, bool) { *p = T::store(x); }
};

#include "cpu/row_kernels-inl.hpp"

void copy_plain(void *dst, const void *src, int64_t bytes, bool) {
  std::memcpy(dst, src, static_cast<size_t>(bytes));
}
void no_fence() {}

}  // namespace

const RowKernels kRowKernelsScalar{
    .bf16 = typed_kernels<ScalarVec<Bf16>>(),
    .f16 = typed_kernels<ScalarVec<F16>>(),
    .f32 = typed_kernels<ScalarVec<F32>>(),
    .copy = copy_plain,
    .store_fence = no_fence,
};

}  // namespace moeperm::detail::cpu
