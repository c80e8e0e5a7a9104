#include "fp_reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace moeperm::testing {
namespace {

// The parameters of a binary floating-point format.
struct Format {
  int precision;  // significant bits, the implicit one included
  int min_exp;    // exponent of the smallest normal (2^min_exp)
  int max_exp;    // exponent of the largest binade (values < 2^(max_exp+1))
  int exp_bits;
  int mant_bits;  // stored mantissa bits (precision - 1)
};

Format format_of(DType d) {
  switch (d) {
    case DType::bf16: return {8, -126, 127, 8, 7};
    case DType::f16: return {11, -14, 15, 5, 10};
    default: return {24, -126, 127, 8, 23};
  }
}

double max_finite(const Format &f) {
  return std::ldexp(2.0 - std::ldexp(1.0, 1 - f.precision), f.max_exp);
}

}  // namespace

double round_to(DType dtype, double x) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  const Format f = format_of(dtype);
  int e = 0;
  std::frexp(x, &e);  // |x| in [2^(e-1), 2^e)
  // Quantum (ulp) of the binade of x; subnormals share the smallest normal's quantum.
  const int q = std::max(e - f.precision, f.min_exp - f.precision + 1);
  const double r = std::ldexp(std::nearbyint(std::ldexp(x, -q)), q);  // nearbyint: ties to even
  if (std::fabs(r) > max_finite(f))
    return std::copysign(std::numeric_limits<double>::infinity(), x);
  return r == 0 ? std::copysign(0.0, x) : r;
}

uint32_t encode(DType dtype, double x) {
  const Format f = format_of(dtype);
  const uint32_t sign = std::signbit(x) ? 1u << (f.exp_bits + f.mant_bits) : 0u;
  const uint32_t exp_all = (1u << f.exp_bits) - 1;
  if (std::isnan(x)) return sign | (exp_all << f.mant_bits) | (1u << (f.mant_bits - 1));
  const double r = std::fabs(round_to(dtype, x));
  if (std::isinf(r)) return sign | (exp_all << f.mant_bits);
  if (r == 0) return sign;
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  if (r < std::ldexp(1.0, f.min_exp)) {  // subnormal: exponent field 0
    const double m = std::ldexp(r, f.precision - 1 - f.min_exp);
    return sign | static_cast<uint32_t>(m);
  }
  int e = 0;
  const double m = std::frexp(r, &e);  // r = m * 2^e, m in [0.5, 1)
  const uint32_t exp_field = static_cast<uint32_t>(e - 1 + bias);
  const uint32_t mant = static_cast<uint32_t>(std::ldexp(m * 2 - 1, f.mant_bits));
  return sign | (exp_field << f.mant_bits) | mant;
}

double decode(DType dtype, uint32_t bits) {
  const Format f = format_of(dtype);
  const int bias = (1 << (f.exp_bits - 1)) - 1;
  const bool neg = (bits >> (f.exp_bits + f.mant_bits)) & 1u;
  const uint32_t exp_field = (bits >> f.mant_bits) & ((1u << f.exp_bits) - 1);
  const uint32_t mant = bits & ((1u << f.mant_bits) - 1);
  double v;
  if (exp_field == (1u << f.exp_bits) - 1)
    v = mant ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
  else if (exp_field == 0)
    v = std::ldexp(static_cast<double>(mant), f.min_exp - f.mant_bits);
  else
    v = std::ldexp(1.0 + std::ldexp(static_cast<double>(mant), -f.mant_bits),
                   static_cast<int>(exp_field) - bias);
  return neg ? -v : v;
}

bool is_nan_bits(DType dtype, uint32_t bits) { return std::isnan(decode(dtype, bits)); }

}  // namespace moeperm::testing
