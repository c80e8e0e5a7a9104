// int64 arithmetic that reports overflow instead of wrapping. Every size the plan derives
// from user input goes through these (SPEC §5.6: products that overflow are rejected).
#pragma once

#include <cstdint>
#include <optional>

namespace moeperm::detail {

inline std::optional<int64_t> checked_mul(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}

inline std::optional<int64_t> checked_add(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

}  // namespace moeperm::detail
