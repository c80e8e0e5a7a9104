// An independent model of bf16/fp16/fp32 rounding, used as the oracle for the library's own
// conversions (src/backend/elements.hpp) and for expected sums. It shares no code or trick
// with the library: it rounds a double with std::nearbyint (ties to even) at the quantum of
// the target format and encodes the result field by field.
#pragma once

#include <moeperm/moeperm.hpp>

#include <cstdint>

namespace moeperm::testing {

// x rounded to the nearest value of `dtype` (bf16, f16 or f32), ties to even, +-inf past the
// largest finite value, NaN kept. The result is returned as a double (exact).
double round_to(DType dtype, double x);

// The bits of round_to(dtype, x) in `dtype`'s encoding (NaN: any NaN encoding).
uint32_t encode(DType dtype, double x);

// The value of `bits` in `dtype`'s encoding, decoded field by field.
double decode(DType dtype, uint32_t bits);

// True when `bits` is a NaN in `dtype`'s encoding.
bool is_nan_bits(DType dtype, uint32_t bits);

}  // namespace moeperm::testing
