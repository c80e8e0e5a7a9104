// DType predicates used by validation and dispatch.
#pragma once

#include <moeperm/moeperm.hpp>

namespace moeperm::detail {

inline bool is_float_value(DType d) {
  return d == DType::bf16 || d == DType::f16 || d == DType::f32;
}
inline bool is_routing_map_dtype(DType d) { return d == DType::i8 || d == DType::boolean; }
// The ragged operators also take Megatron's and TransformerEngine's map dtypes.
inline bool is_any_routing_map_dtype(DType d) {
  return is_routing_map_dtype(d) || d == DType::u8 || d == DType::i32;
}

// The probs dtype rule of SPEC §2/§3: the value dtype, or fp32 alongside bf16 values.
inline bool probs_dtype_matches(DType probs, DType values) {
  return probs == values || (probs == DType::f32 && values == DType::bf16);
}

}  // namespace moeperm::detail
