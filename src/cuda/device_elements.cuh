// The device's names for the conversions of backend/fp_conversion.hpp, which nvcc compiles
// for the host and the device alike: one definition, so every backend produces the same bits.
#pragma once

#include "backend/fp_conversion.hpp"

namespace moeperm::cuda {

using detail::bf16_to_f32;
using detail::f16_to_f32;
using detail::f32_to_bf16;
using detail::f32_to_f16;
using DBf16 = detail::Bf16;
using DF16 = detail::F16;
using DF32 = detail::F32;

}  // namespace moeperm::cuda
