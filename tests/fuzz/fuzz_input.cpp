// Input decoding of the fuzz harness (fuzz_input.hpp).
#include "fuzz_input.hpp"

#include <aclnn/acl_meta.h>

#include <algorithm>
#include <cstring>
#include <numeric>

#include "fp_reference.hpp"

namespace moeperm::fuzz {

DType pick_dtype(Reader &r, DType dflt) {
  const uint8_t b = r.u8();
  return b < 240 ? dflt : static_cast<DType>(kDtypes[b - 240]);
}

int64_t bytes_per(DType d) { return std::max<int64_t>(element_size(d), 1); }

// The dummy storage of a tensor too large to allocate: never touched by a correct library
// (its problem is never run), and any access past its 64 bytes is an ASan global overflow.
alignas(64) std::byte g_dummy[64];

// Highest element offset + 1 of a view, or nullopt when it overflows or is negative.
std::optional<int64_t> extent_of(const moeperm::TensorDesc &d) {
  int64_t hi = d.offset;
  for (size_t i = 0; i < d.shape.size(); ++i) {
    if (d.shape[i] <= 0) return d.offset >= 0 ? std::optional<int64_t>(d.offset) : std::nullopt;
    int64_t span;
    if (__builtin_mul_overflow(d.shape[i] - 1, d.strides[i], &span)) return std::nullopt;
    if (span > 0 && __builtin_add_overflow(hi, span, &hi)) return std::nullopt;
  }
  if (hi < 0 || hi == kI64Max) return std::nullopt;
  return hi + 1;
}

Outcomes g_outcomes;

// Two's-complement wrapping arithmetic: the harness wants arbitrary (even absurd) strides,
// and must not itself overflow a signed int while making them (UB).
int64_t wrap(uint64_t v) { return static_cast<int64_t>(v); }
int64_t wrap_mul_add(int64_t a, int64_t b, int64_t c) {
  return wrap(static_cast<uint64_t>(a) * static_cast<uint64_t>(b) + static_cast<uint64_t>(c));
}

// Reads one tensor record and makes the operand. `shape` and `dtype` are the consistent
// defaults; `present` says whether the flags asked for the tensor.
Operand make_operand(Reader &r, std::vector<int64_t> shape, DType dtype, bool present,
                     Budget &budget) {
  Operand op;
  const uint8_t m = r.u8();
  if (m >= 220 && m < 236 && !shape.empty())
    shape[m % shape.size()] = r.size();
  else if (m >= 236 && m < 244 && !shape.empty())
    shape.pop_back();
  else if (m >= 244 && m < 252)
    shape.push_back(r.size());
  else if (m >= 252)
    shape.clear();
  dtype = pick_dtype(r, dtype);
  const size_t rank = shape.size();

  // Strides: contiguous by default (explicit, or null for "row-major"), else padded,
  // column-major, zero, negative, random or special.
  std::vector<int64_t> strides(rank, 1);
  for (size_t i = rank; i-- > 1;) {
    int64_t s;
    strides[i - 1] = __builtin_mul_overflow(strides[i], std::max<int64_t>(shape[i], 1), &s) ? 1 : s;
  }
  bool null_strides = false;
  int64_t auto_offset = 0;
  const uint8_t layout = r.u8();
  if (layout < 128) {
    null_strides = layout % 2 == 1;
  } else if (layout < 160) {
    const int64_t step = 1 + r.u8() % 3, pad = r.u8() % 5;
    if (rank == 1) strides[0] = step + pad;
    if (rank == 2) strides = {wrap_mul_add(shape[1], step, pad), step};
  } else if (layout < 176) {
    if (rank == 2) strides = {1, wrap_mul_add(std::max<int64_t>(shape[0], 1), 1, r.u8() % 3)};
  } else if (layout < 192) {
    if (rank > 0) strides[r.u8() % rank] = 0;
  } else if (layout < 208) {
    if (rank > 0) {
      const size_t d = r.u8() % rank;
      strides[d] = -strides[d];
      int64_t comp;  // offset that brings the lowest element to 0
      if (shape[d] > 0 && !__builtin_mul_overflow(shape[d] - 1, -strides[d], &comp))
        auto_offset = comp;
    }
  } else if (layout < 224) {
    for (auto &s : strides) s = static_cast<int8_t>(r.u8());
  } else {
    if (rank > 0) strides[r.u8() % rank] = r.size();
  }

  const uint8_t off = r.u8();
  const int64_t offset = off == 0    ? auto_offset
                         : off < 200 ? wrap_mul_add(auto_offset, 1, off % 8)
                                     : r.size();

  moeperm::TensorDesc d;
  d.dtype = dtype, d.shape = shape, d.strides = strides, d.offset = offset;
  const std::optional<int64_t> extent = extent_of(d);
  // Declared storage: exactly the extent by default, else none, one too few, more, special.
  const uint8_t st = r.u8();
  std::optional<int64_t> declared;
  if (st < 200)
    declared = extent;
  else if (st < 220)
    declared = std::nullopt;
  else if (st < 240)
    declared = extent ? std::optional<int64_t>(*extent - 1) : std::nullopt;
  else if (st < 248)
    declared = extent ? std::optional<int64_t>(wrap_mul_add(*extent, 1, st % 8)) : std::nullopt;
  else
    declared = r.size();

  const uint8_t presence = r.u8();
  op.present = present != (presence >= 240 && presence < 248);
  const bool null_data = presence >= 248;
  if (!op.present) return op;

  // Storage: what was declared (a correct library rejects a view outside it), else the
  // extent (the library cannot check an undeclared storage: the caller's word is its size).
  const std::optional<int64_t> elements = declared && *declared >= 0 ? declared : extent;
  int64_t bytes = -1;
  if (elements && !__builtin_mul_overflow(*elements, bytes_per(dtype), &bytes) &&
      bytes <= kMaxTensorBytes && budget.used + bytes <= kMaxTotalBytes) {
    budget.used += bytes;
    op.host.storage.assign(static_cast<size_t>(bytes), moeperm::testing::kPoison);
  } else {
    op.runnable = false;
  }
  op.host.desc = d;
  op.host.desc.storage_elements = declared;
  // A vector's buffer survives the move into Case::ops, so this pointer stays valid.
  op.data = null_data ? nullptr : op.runnable ? op.host.storage.data() : g_dummy;
  const int64_t storage_dims[1] = {declared.value_or(0)};
  op.acl = aclCreateTensor(shape.data(), rank, static_cast<aclDataType>(dtype),
                           null_strides ? nullptr : strides.data(), offset, ACL_FORMAT_ND,
                           storage_dims, declared ? 1 : 0, op.data);
  if (!op.acl) {  // refused (a negative or overflowing storage size): the tensor is absent
    const char *msg = aclGetRecentErrMsg();
    FUZZ_CHECK(msg && *msg, "aclCreateTensor returned null without a message");
    op.present = false;
    ++g_outcomes.create_refused;
  }
  return op;
}

// Input contents. Float values are multiples of 2^-6 in [-2, 2) (exact in every dtype, so
// the oracle's exact sums apply) or raw bits where the operator only moves them.
void fill_floats(Operand &op, Reader &r, bool raw) {
  if (!op.present || !op.runnable) return;
  const DType d = op.host.desc.dtype;
  const int64_t es = bytes_per(d);
  const bool is_float = d == DType::f32 || d == DType::f16 || d == DType::bf16;
  auto &s = op.host.storage;
  for (size_t i = 0; i + static_cast<size_t>(es) <= s.size(); i += static_cast<size_t>(es)) {
    uint64_t bits = 0;
    if (raw || !is_float) {
      for (int64_t b = 0; b < es; ++b) bits |= uint64_t{r.data()} << (8 * b);
    } else {
      bits = moeperm::testing::encode(d, static_cast<int8_t>(r.data()) / 64.0);
    }
    std::memcpy(&s[i], &bits, static_cast<size_t>(es));
  }
}

// Routing-map bytes: mostly 0/1 (about 3 in 8 routed), sometimes other nonzero garbage.
void fill_map(Operand &op, Reader &r) {
  if (!op.present || !op.runnable) return;
  const int64_t es = bytes_per(op.host.desc.dtype);
  for (size_t i = 0; i < op.host.storage.size(); ++i) {
    const uint8_t b = r.data();
    op.host.storage[i] = std::byte(b < 160 ? 0 : b < 250 ? 1 : b);
    if (es > 1 && i % static_cast<size_t>(es) != 0) op.host.storage[i] = std::byte{0};
  }
}

// sortedIndices: mostly inside the range of the mode, sometimes garbage past its edges.
void fill_indices(Operand &op, Reader &r, bool dp, int64_t T, int64_t R) {
  if (!op.present || !op.runnable) return;
  auto &s = op.host.storage;
  // T and R come from the input as they are (any int64): wrap, never overflow or divide by 0.
  const int64_t rows_and_minus_one = wrap_mul_add(R, 1, 1);
  const std::array<int64_t, 8> garbage = {
      kI32Min, kI32Max, R, T, -2, -1, rows_and_minus_one, wrap_mul_add(T, 1, -1)};
  for (size_t i = 0; i + 4 <= s.size(); i += 4) {
    const uint8_t b = r.data();
    int64_t v;
    const int64_t x = b + 256 * r.data();
    if (b < 250)
      v = dp ? (T > 0 ? x % T : 0) : (rows_and_minus_one > 0 ? x % rows_and_minus_one - 1 : -1);
    else
      v = garbage[r.data() % garbage.size()];
    const auto v32 = static_cast<int32_t>(static_cast<uint32_t>(v));
    std::memcpy(&s[i], &v32, 4);
  }
}

std::vector<int32_t> input_permutation(Reader &r, int64_t n) {
  std::vector<int32_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  for (int64_t i = n - 1; i > 0; --i)
    std::swap(order[static_cast<size_t>(i)], order[(r.data() | r.data() << 8) % (i + 1)]);
  return order;
}

}  // namespace moeperm::fuzz
