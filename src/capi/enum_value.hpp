// The value a C caller passed for a CANN enum parameter (aclDataType, aclFormat,
// aclrtMemcpyKind, aclrtMemMallocPolicy). C lets a caller pass any int there (a C enum is
// an int), and CANN programs do pass values moeperm does not know. In C++, converting an
// enum object whose value lies outside the range of its enumerators is undefined behaviour
// (UBSan's -fsanitize=enum reports the load; the fuzz harness found it): read the object's
// bytes instead, and validate the int.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace moeperm::capi {

template <class Enum>
int32_t enum_value(const Enum &e) noexcept {
  static_assert(std::is_enum_v<Enum> && sizeof(Enum) == sizeof(int32_t));
  int32_t v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

}  // namespace moeperm::capi
