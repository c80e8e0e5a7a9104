// The bf16/fp16 <-> fp32 conversions every backend uses (src/backend/elements.hpp), against
// the suite's independent rounding model (fp_reference): exhaustively over all 2^16 half
// patterns, over every rounding tie, and over a sweep of fp32 patterns. SPEC §4: round to
// nearest, ties to even; NaN stays NaN; infinities and overflow give infinities.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>

#include "backend/elements.hpp"
#include "fp_reference.hpp"

namespace moeperm::testing {
namespace {

using detail::bf16_to_f32;
using detail::f16_to_f32;
using detail::f32_to_bf16;
using detail::f32_to_f16;

uint32_t bits(float f) { return std::bit_cast<uint32_t>(f); }
float from_bits(uint32_t u) { return std::bit_cast<float>(u); }

// dtype's conversion of f agrees with the model: same bits, or both NaN.
::testing::AssertionResult RoundsLikeModel(DType dtype, float f) {
  const uint32_t got = dtype == DType::bf16 ? f32_to_bf16(f) : f32_to_f16(f);
  const uint32_t want = encode(dtype, f);
  if (std::isnan(f) ? is_nan_bits(dtype, got) : got == want) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << to_string(dtype) << "(" << f << " = 0x" << std::hex
                                       << bits(f) << ") = 0x" << got << ", want 0x" << want;
}

TEST(Bf16, DecodesEveryPatternExactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (is_nan_bits(DType::bf16, h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), decode(DType::bf16, h)) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << h;
    }
  }
}

TEST(Fp16, DecodesEveryPatternExactly) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (is_nan_bits(DType::f16, h)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
    } else {
      ASSERT_EQ(static_cast<double>(f), decode(DType::f16, h)) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (h & 0x8000u) != 0) << std::hex << h;
    }
  }
}

// Every representable value survives fp32 and back unchanged (NaNs stay NaNs).
TEST(Bf16AndFp16, RoundTripEveryPattern) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint16_t b = f32_to_bf16(bf16_to_f32(static_cast<uint16_t>(h)));
    const uint16_t f = f32_to_f16(f16_to_f32(static_cast<uint16_t>(h)));
    if (is_nan_bits(DType::bf16, h))
      ASSERT_TRUE(is_nan_bits(DType::bf16, b)) << std::hex << h;
    else
      ASSERT_EQ(b, h);
    if (is_nan_bits(DType::f16, h))
      ASSERT_TRUE(is_nan_bits(DType::f16, f)) << std::hex << h;
    else
      ASSERT_EQ(f, h);
  }
}

// Each bf16 value plus exactly half an ulp (a tie), and the fp32 neighbours either side.
TEST(Bf16, EveryTieAndItsNeighboursRoundToNearestEven) {
  for (uint32_t h = 0; h < 0x10000; ++h) {
    const uint32_t tie = (h << 16) | 0x8000u;
    for (uint32_t u : {tie - 1, tie, tie + 1})
      ASSERT_TRUE(RoundsLikeModel(DType::bf16, from_bits(u)));
  }
}

// Each finite fp16 value plus half an ulp (exact in fp32), and its fp32 neighbours.
TEST(Fp16, EveryTieAndItsNeighboursRoundToNearestEven) {
  for (uint32_t h = 0; h < 0x7c00; ++h) {
    const double v = decode(DType::f16, h);
    const double half_ulp = h < 0x0400 ? 0x1p-25 : std::ldexp(1.0, std::ilogb(v) - 11);
    for (double sign : {1.0, -1.0}) {
      const float tie = static_cast<float>(sign * (v + half_ulp));
      ASSERT_EQ(static_cast<double>(tie), sign * (v + half_ulp));  // the tie is exact in fp32
      for (float f : {std::nextafter(tie, 0.0f), tie,
                      std::nextafter(tie, static_cast<float>(sign) * INFINITY)})
        ASSERT_TRUE(RoundsLikeModel(DType::f16, f));
    }
  }
}

// A stride through all 2^32 fp32 patterns: normals, subnormals, huge values, NaNs.
TEST(Bf16AndFp16, SweepOfFp32PatternsMatchesModel) {
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 4093) {
    const float f = from_bits(static_cast<uint32_t>(u));
    ASSERT_TRUE(RoundsLikeModel(DType::bf16, f));
    ASSERT_TRUE(RoundsLikeModel(DType::f16, f));
  }
}

TEST(Bf16, SpecialValues) {
  EXPECT_EQ(f32_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(f32_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-8f), 0x3f80);            // tie, even below
  EXPECT_EQ(f32_to_bf16(1.0f + 0x1p-7f + 0x1p-8f), 0x3f82);  // tie, even above
  EXPECT_EQ(f32_to_bf16(INFINITY), 0x7f80);
  EXPECT_EQ(f32_to_bf16(-INFINITY), 0xff80);
  EXPECT_EQ(f32_to_bf16(from_bits(0x7f7fffffu)), 0x7f80);  // fp32 max rounds to infinity
  EXPECT_EQ(f32_to_bf16(from_bits(0x00000001u)), 0x0000);  // smallest fp32 subnormal
  EXPECT_EQ(f32_to_bf16(from_bits(0x00018000u)), 0x0002);  // subnormal tie, even above
  // A signalling NaN whose payload sits in the low half must not become infinity.
  EXPECT_TRUE(is_nan_bits(DType::bf16, f32_to_bf16(from_bits(0x7f800001u))));
  EXPECT_TRUE(is_nan_bits(DType::bf16, f32_to_bf16(from_bits(0xff800001u))));
}

TEST(Fp16, SpecialValues) {
  EXPECT_EQ(f32_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65519.996f), 0x7bff);  // below the tie: largest finite
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);    // the tie rounds to even: infinity
  EXPECT_EQ(f32_to_f16(-65520.0f), 0xfc00);
  EXPECT_EQ(f32_to_f16(1e10f), 0x7c00);
  EXPECT_EQ(f32_to_f16(0x1p-24f), 0x0001);    // smallest subnormal
  EXPECT_EQ(f32_to_f16(0x1p-25f), 0x0000);    // half of it: tie to even zero
  EXPECT_EQ(f32_to_f16(0x1.8p-24f), 0x0002);  // 1.5 subnormal ulps: tie, even above
  EXPECT_EQ(f32_to_f16(0x1p-14f - 0x1p-25f),
            0x0400);  // tie between largest subnormal and min normal
  EXPECT_EQ(f32_to_f16(INFINITY), 0x7c00);
  EXPECT_TRUE(is_nan_bits(DType::f16, f32_to_f16(NAN)));
  EXPECT_TRUE(is_nan_bits(DType::f16, f32_to_f16(from_bits(0x7f800001u))));
}

// The oracle itself, on values worked out by hand, so that agreement above means something.
TEST(FpReference, ModelAgreesWithHandWorkedValues) {
  EXPECT_EQ(encode(DType::bf16, 1.0), 0x3f80u);
  EXPECT_EQ(encode(DType::bf16, 1.0 + 0x1p-8), 0x3f80u);
  EXPECT_EQ(encode(DType::bf16, 1.0 + 0x1p-8 + 0x1p-20), 0x3f81u);
  EXPECT_EQ(encode(DType::f16, 1.0), 0x3c00u);
  EXPECT_EQ(encode(DType::f16, 65504.0), 0x7bffu);
  EXPECT_EQ(encode(DType::f16, 65520.0), 0x7c00u);
  EXPECT_EQ(encode(DType::f16, -0x1p-24), 0x8001u);
  EXPECT_EQ(encode(DType::f16, 0x1p-14), 0x0400u);
  EXPECT_EQ(encode(DType::f32, 0x1p24 + 1), bits(0x1p24f));
  EXPECT_EQ(decode(DType::f16, 0x3555), 0x1.554p-2);
  EXPECT_EQ(decode(DType::bf16, 0xc0a0), -5.0);
}

}  // namespace
}  // namespace moeperm::testing
