// A tensor in storage of its own, poisoned before anything is written, in one of three
// layouts, and the comparisons of the random conformance suites: every storage byte of two
// runs (views and the storage around them), and elements a run left unwritten.
#pragma once

#include <gtest/gtest.h>
#include <moeperm/acl_handles.hpp>
#include <moeperm/moeperm.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <utility>
#include <vector>

#include "testing.hpp"

namespace moeperm::testing {

enum class Lay { contiguous, padded, strided };

// A tensor in its own storage, every byte poisoned before the values are written: 0xFF for
// floats (a NaN that no finite input can produce), kPoison for integers (a negative value
// no index output holds).
struct Buf {
  TensorDesc desc;
  std::vector<std::byte> bytes;
  int64_t esize = 4;
  std::byte poison = kPoison;

  Buf() = default;
  Buf(DType dtype, std::vector<int64_t> shape, Lay lay) {
    desc.dtype = dtype;
    desc.shape = shape;
    esize = element_size(dtype);
    int64_t elements = 1;
    for (int64_t d : shape) elements *= d;
    int64_t storage = elements;
    if (lay != Lay::contiguous) {
      const int64_t rows = shape[0], cols = shape.size() == 2 ? shape[1] : 1;
      desc.offset = 3;
      if (shape.size() == 1) {
        desc.strides = {2};
      } else if (lay == Lay::padded) {
        desc.strides = {cols + 5, 1};
      } else {
        desc.strides = {1, rows + 1};  // column-major with a padded column
      }
      storage = desc.offset + (shape.size() == 1
                                   ? 2 * rows
                                   : (lay == Lay::padded ? rows * (cols + 5) : cols * (rows + 1)));
      desc.storage_elements = storage;
    }
    poison = dtype == DType::bf16 || dtype == DType::f16 || dtype == DType::f32 ? std::byte{0xFF}
                                                                                : kPoison;
    bytes.assign(static_cast<size_t>(std::max<int64_t>(storage, 1) * esize), poison);
  }
  int64_t at(int64_t i, int64_t j = 0) const {
    if (desc.strides.empty()) return i * (desc.shape.size() == 2 ? desc.shape[1] : 1) + j;
    return desc.offset + i * desc.strides[0] + (desc.shape.size() == 2 ? j * desc.strides[1] : 0);
  }
  // Elements of up to 8 bytes (int64 too): the low esize bytes of a little-endian value.
  void set_bits(int64_t i, int64_t j, uint32_t bits) {
    const uint64_t wide = bits;
    std::memcpy(bytes.data() + at(i, j) * esize, &wide, static_cast<size_t>(esize));
  }
  void *data() { return bytes.data(); }
  uint32_t bits(int64_t i, int64_t j = 0) const {
    uint64_t v = 0;
    std::memcpy(&v, bytes.data() + at(i, j) * esize, static_cast<size_t>(esize));
    return static_cast<uint32_t>(v);
  }
};

// Elements of b's view whose bytes are all still poison (a comparison of two runs that
// both left an element unwritten would pass; the reference writes every element).
inline int64_t poisoned_elements(const Buf &b) {
  int64_t n = 0;
  const int64_t cols = b.desc.shape.size() == 2 ? b.desc.shape[1] : 1;
  for (int64_t i = 0; i < b.desc.shape[0]; ++i)
    for (int64_t j = 0; j < cols; ++j) {
      const std::byte *e = b.bytes.data() + b.at(i, j) * b.esize;
      n += std::all_of(e, e + b.esize, [&](std::byte x) { return x == b.poison; });
    }
  return n;
}

// The first differing element of two storages, for the failure message.
inline void expect_same_bytes(const Buf &got, const Buf &want, const char *what) {
  ASSERT_EQ(got.bytes.size(), want.bytes.size()) << what;
  if (got.bytes == want.bytes) return;
  for (size_t i = 0; i < got.bytes.size(); ++i)
    if (got.bytes[i] != want.bytes[i]) {
      ADD_FAILURE() << what << ": first difference at storage element "
                    << static_cast<int64_t>(i) / got.esize << " (byte " << i << ")";
      return;
    }
}

// Where a run's tensors live: host storage, or for a device backend a device copy of each
// whole storage (poison included), downloaded again after the run (also after a failure).
class Memory {
 public:
  explicit Memory(Backend backend) : device_(backend_info(backend).device) {}
  void *operator()(Buf &b) {
    if (!device_) return b.data();
    acl::DeviceBuffer d(b.bytes.size());
    d.upload(b.bytes);
    buffers_.push_back({&b, std::move(d)});
    return buffers_.back().second.get();
  }
  std::span<std::byte> workspace(uint64_t bytes) {
    if (!device_) {
      host_ws_.resize(bytes);
      return host_ws_;
    }
    if (bytes > 0) dev_ws_.reserve(bytes);
    return {static_cast<std::byte *>(dev_ws_.get()), static_cast<size_t>(bytes)};
  }
  ~Memory() {
    for (auto &[host, dev] : buffers_) dev.download(host->bytes);
  }

 private:
  bool device_;
  std::vector<std::pair<Buf *, acl::DeviceBuffer>> buffers_;
  std::vector<std::byte> host_ws_;
  acl::DeviceBuffer dev_ws_;
};

}  // namespace moeperm::testing
