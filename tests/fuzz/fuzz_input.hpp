// The fuzz harness's input decoding (fuzz_operators.cpp has the invariants): a Reader over
// the input bytes, and the operands, contents and indices it makes from them. The input
// layout is described at the top of fuzz_operators.cpp.
#pragma once

#include <acl/acl.h>
#include <aclnn/acl_meta.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <vector>

#include "testing.hpp"

namespace moeperm::fuzz {

using moeperm::DType;
using moeperm::element_size;
using moeperm::tools::HostTensor;
using moeperm::tools::Problem;

constexpr int64_t kI64Max = std::numeric_limits<int64_t>::max();
constexpr int64_t kI64Min = std::numeric_limits<int64_t>::min();
constexpr int64_t kI32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kI32Min = std::numeric_limits<int32_t>::min();

// Memory the harness allocates for one input. A problem that passes the first phase but
// needs more is not run (its executor is discarded): the fuzzer must not run out of memory,
// and a declared-huge problem that is invalid must already have been rejected by then.
constexpr int64_t kMaxTensorBytes = int64_t{4} << 20;
constexpr int64_t kMaxTotalBytes = int64_t{16} << 20;
constexpr uint64_t kMaxWorkspaceBytes = uint64_t{16} << 20;
// The naive oracle walks every token (and, forward, every expert); past this many it is not
// run. A valid problem with more tokens or experts than its tensors could hold in memory has
// outputs without elements (H = 0 and E = 0 or no probs; or T = 0): that is checked instead.
constexpr int64_t kMaxOracleTokens = int64_t{1} << 20;
// Elements one input view may have for the call to run. Kernels do work in proportion to
// elements (Note [Work bounded by tensors]), and a view that repeats its memory (stride 0)
// can have 2^31 of them in 4 bytes: the chunk sort's reference took 4.6 s for 2^26
// repeated split sizes under the sanitizers, so more would hang the fuzzer, not find a bug.
constexpr int64_t kMaxInputElements = int64_t{1} << 24;

#define FUZZ_CHECK(cond, ...)                                       \
  do {                                                              \
    if (!(cond)) {                                                  \
      std::fprintf(stderr, "fuzz invariant failed: %s\n  ", #cond); \
      std::fprintf(stderr, __VA_ARGS__);                            \
      std::fprintf(stderr, "\n");                                   \
      std::abort();                                                 \
    }                                                               \
  } while (0)

constexpr std::array<int64_t, 40> kSpecial = {-1,
                                              -2,
                                              kI64Min,
                                              kI64Max,
                                              kI64Max - 1,
                                              kI32Max,
                                              kI32Max + 1,
                                              kI32Min,
                                              4294967295,
                                              int64_t{1} << 32,
                                              (int64_t{1} << 31) + 1,
                                              3037000499,
                                              3037000500,
                                              int64_t{1} << 40,
                                              int64_t{1} << 62,
                                              int64_t{1} << 53,
                                              256,
                                              257,
                                              511,
                                              512,
                                              513,
                                              1000,
                                              1024,
                                              4096,
                                              7168,
                                              65536,
                                              46341,
                                              65537,
                                              -(int64_t{1} << 31),
                                              kI64Min + 1,
                                              int64_t{3} << 31,
                                              255,
                                              int64_t{1} << 20,
                                              100000,
                                              int64_t{1} << 24,
                                              -(int64_t{1} << 40),
                                              9,
                                              15,
                                              17,
                                              33};

class Reader {
 public:
  Reader(const uint8_t *data, size_t size) : p_(data), n_(size) {}
  uint8_t u8() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  int64_t i64() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= uint64_t{u8()} << (8 * i);
    return static_cast<int64_t>(v);
  }
  int64_t size() {
    const uint8_t b = u8();
    if (b < 200) return b;
    if (b < 240) return kSpecial[b - 200];
    return i64();
  }
  // The data section: the remaining input, then a xorshift stream seeded from the input.
  uint8_t data() {
    if (n_ > 0) return u8();
    state_ ^= state_ << 13, state_ ^= state_ >> 7, state_ ^= state_ << 17;
    return static_cast<uint8_t>(state_ >> 24);
  }
  void seed(uint64_t s) { state_ = s | 1; }

 private:
  const uint8_t *p_;
  size_t n_;
  uint64_t state_ = 0x9E3779B97F4A7C15ull;
};

// Dtypes an input can pick instead of the consistent one (valid, invalid and unknown values).
constexpr std::array<int32_t, 16> kDtypes = {0, 1, 27, 2, 3, 4, 9, 11, 12, 5, 99, -1, 28, 2, 3, 12};

DType pick_dtype(Reader &r, DType dflt);
int64_t bytes_per(DType d);

// One operand as the harness made it.
struct Operand {
  bool present = false;      // a tensor was passed (else nullptr)
  bool runnable = true;      // its storage was allocated in full (else a dummy pointer)
  HostTensor host;           // desc: the geometry passed (effective strides); storage
  aclTensor *acl = nullptr;  // owned; destroyed at the end of the input
  void *data = nullptr;      // the data pointer passed: storage, a dummy, or null
};

// Highest element offset + 1 of a view, or nullopt when it overflows or is negative.
std::optional<int64_t> extent_of(const moeperm::TensorDesc &d);

// How inputs ended, for the replay driver's summary (a harness that never reaches the
// kernels would still "pass"; the summary shows it does).
struct Outcomes {
  int64_t create_refused = 0, phase1_error = 0, too_large = 0, phase2_error = 0, success = 0,
          empty_outputs = 0;
};
extern Outcomes g_outcomes;

struct Budget {
  int64_t used = 0;
};

// Reads one tensor record and makes the operand. `shape` and `dtype` are the consistent
// defaults; `present` says whether the flags asked for the tensor.
Operand make_operand(Reader &r, std::vector<int64_t> shape, DType dtype, bool present,
                     Budget &budget);

// Input contents. Float values are multiples of 2^-6 in [-2, 2) (exact in every dtype, so
// the oracle's exact sums apply) or raw bits where the operator only moves them.
void fill_floats(Operand &op, Reader &r, bool raw);
// Routing-map bytes: mostly 0/1 (about 3 in 8 routed), sometimes other nonzero garbage.
void fill_map(Operand &op, Reader &r);
// sortedIndices: mostly inside the range of the mode, sometimes garbage past its edges.
void fill_indices(Operand &op, Reader &r, bool dp, int64_t T, int64_t R);
// 0 .. n-1 in an order the input chooses (Fisher-Yates, two bytes per swap): a permutation.
std::vector<int32_t> input_permutation(Reader &r, int64_t n);

}  // namespace moeperm::fuzz
