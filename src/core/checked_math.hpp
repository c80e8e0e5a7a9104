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

// Whether every tensor and workspace array of a problem fits in int64 *bytes*: [R, H] and
// [T, H] values, [T, E] maps and probs, [R] and [T + 1] index arrays, all counted with the
// widest element any of them has (8 bytes: int64 workspace entries). The kernels form byte
// offsets as element offset * element size; this bound keeps every one of them in range.
inline bool problem_bytes_fit(int64_t R, int64_t T, int64_t E, int64_t H) {
  constexpr int64_t kWidestElement = 8;
  auto fits = [](int64_t a, int64_t b) {
    const std::optional<int64_t> n = checked_mul(a, b);
    return n && checked_mul(*n, kWidestElement);
  };
  return fits(R, H) && fits(T, H) && fits(T, E) && fits(R, 1) && fits(T, 2);
}

}  // namespace moeperm::detail
