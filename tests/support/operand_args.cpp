#include "operand_args.hpp"

#include <array>

namespace moeperm::testing {

std::byte *dummy_storage() {
  alignas(256) static std::array<std::byte, 1 << 20> buffer{};
  return buffer.data();
}

TensorDesc dense(DType dtype, std::vector<int64_t> shape) {
  // Not TensorDesc::contiguous: it is not exported from libmoeperm (see
  // unit/public_symbols_test.cpp), so a test using it would not link.
  TensorDesc d;
  d.dtype = dtype;
  d.shape = std::move(shape);
  int64_t n = 1;
  for (int64_t s : d.shape)
    if (s < 0 || __builtin_mul_overflow(n, s, &n)) return d;  // storage left unknown
  d.storage_elements = n;
  return d;
}

}  // namespace moeperm::testing
