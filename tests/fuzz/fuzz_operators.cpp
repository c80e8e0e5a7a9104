// libFuzzer harness over both operators' C API (docs/robustness.md). One input decodes into one
// call sequence: aclCreateTensor for every operand (any rank, dims, dtype, strides, offset,
// declared storage, null tensor or null data), GetWorkspaceSize with any attribute values, and,
// when that succeeds on a problem small enough to hold in memory, the second phase with an
// exact / too small / null / misaligned workspace on the default or a created stream, over
// index and routing-map contents that are valid or garbage.
//
// Invariants checked on every input (a violation aborts, which libFuzzer reports as a crash):
//  * every status is one of SPEC §5's codes, never 561002 (an internal error), and every
//    failure leaves a non-empty aclGetRecentErrMsg();
//  * the first phase writes no tensor; a failing second phase (workspace or data error)
//    writes no output byte (poison check), and no phase writes an input;
//  * a successful run equals the naive oracle (tests/support/naive.hpp) bit for bit and
//    writes no storage byte outside an output's view;
//  * an executed executor cannot be executed again (161002, no use-after-free);
//  * aclFinalize afterwards finds no live tensor, stream, allocation or executor.
// ASan/UBSan (and LSan at exit) check memory safety and leaks underneath.
//
// Input layout (bytes past the end read as 0, which always means "the consistent default",
// so short inputs are valid problems; tests/fuzz/make_seeds.py writes the seed corpus):
//   header   flags, T, E, H, K, C, attribute, attribute2, value dtype, probs dtype, map dtype
//            (2 bytes), workspace mode, extra
//   tensors  6 records (forward: tokens, routingMap, probsOptional, permuteTokensOut,
//            permuteProbsOutOptional, sortedIndicesOut; grad: G, P, S, M, tokensGradOut,
//            probsGradOutOptional), each: shape, dtype, layout, offset, storage, presence
//   data     the rest: tensor contents (continued by a PRNG seeded from the input)
// A "size" is one byte: < 200 is its value, 200..239 a special value (overflow edges,
// negatives, large powers of two), >= 240 the next 8 bytes as a raw int64.
#include <acl/acl.h>
#include <aclnn/acl_meta.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "fp_reference.hpp"
#include "naive.hpp"
#include "testing.hpp"

namespace {

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

constexpr std::array<int32_t, 16> kDtypes = {0, 1, 27, 2, 3, 4, 9, 11, 12, 5, 99, -1, 28, 2, 3, 12};

DType pick_dtype(Reader &r, DType dflt) {
  const uint8_t b = r.u8();
  return b < 240 ? dflt : static_cast<DType>(kDtypes[b - 240]);
}

int64_t bytes_per(DType d) { return std::max<int64_t>(element_size(d), 1); }

// One operand as the harness made it.
struct Operand {
  bool present = false;      // a tensor was passed (else nullptr)
  bool runnable = true;      // its storage was allocated in full (else a dummy pointer)
  HostTensor host;           // desc: the geometry passed (effective strides); storage
  aclTensor *acl = nullptr;  // owned; destroyed at the end of the input
};

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

// How inputs ended, for the replay driver's summary (a harness that never reaches the
// kernels would still "pass"; the summary shows it does).
struct Outcomes {
  int64_t create_refused = 0, phase1_error = 0, too_large = 0, phase2_error = 0, success = 0,
          empty_outputs = 0;
} g_outcomes;

struct Budget {
  int64_t used = 0;
};

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
  void *data = null_data ? nullptr : op.runnable ? op.host.storage.data() : g_dummy;
  const int64_t storage_dims[1] = {declared.value_or(0)};
  op.acl = aclCreateTensor(shape.data(), rank, static_cast<aclDataType>(dtype),
                           null_strides ? nullptr : strides.data(), offset, ACL_FORMAT_ND,
                           storage_dims, declared ? 1 : 0, data);
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

bool allowed_status(int64_t s) {
  return s == 0 || s == 161001 || s == 161002 || s == 361001 || s == 561103;
}

void check_failure(const char *where, int64_t status) {
  FUZZ_CHECK(allowed_status(status), "%s returned %lld, not a SPEC §5 status (message: %s)", where,
             static_cast<long long>(status), aclGetRecentErrMsg());
  const char *msg = aclGetRecentErrMsg();
  FUZZ_CHECK(msg && *msg, "%s returned %lld with an empty aclGetRecentErrMsg()", where,
             static_cast<long long>(status));
}

bool untouched(const Operand &op) {
  return !op.present || !op.runnable || moeperm::testing::untouched(op.host);
}

int64_t outside(const Operand &op) {
  return op.present && op.runnable ? moeperm::testing::bytes_written_outside_view(op.host) : 0;
}

struct Case {
  bool grad = false, dp = false, probs_in = false, probs_out = false, map = true;
  bool stream = false;
  std::array<Operand, 6> ops;  // in the record order of the file comment
  std::array<bool, 6> is_output{};
};

void destroy(Case &c) {
  for (Operand &op : c.ops)
    if (op.acl) aclDestroyTensor(op.acl), op.acl = nullptr;
}

// The oracle's view of a successful run. Only called after both phases succeeded, so every
// shape is consistent and every view lies inside its storage.
void check_against_oracle(Case &c, int64_t num_out_tokens, int64_t num_experts,
                          int64_t tokens_num) {
  using namespace moeperm::testing;
  Problem p;
  auto take = [&](int i) -> HostTensor & { return c.ops[static_cast<size_t>(i)].host; };
  if (!c.grad) {
    p.tokens = take(0), p.routing_map = take(1), p.probs = take(2);
    p.permuted_tokens = take(3), p.permuted_probs = take(4), p.sorted_indices = take(5);
    p.spec.T = p.tokens.desc.shape[0], p.spec.H = p.tokens.desc.shape[1];
    p.spec.E = p.routing_map.desc.shape[1];
    p.spec.drop_and_pad = c.dp;
    p.spec.K = !c.dp && p.spec.T > 0 ? num_out_tokens / p.spec.T : 0;
    p.spec.capacity = c.dp && p.spec.E > 0 ? num_out_tokens / p.spec.E : 0;
    p.spec.with_probs = c.ops[2].present && c.ops[4].present;
    const auto ok = ForwardMatchesSpec(p);
    FUZZ_CHECK(ok, "forward differs from the naive oracle: %s", ok.message());
    if (c.ops[4].present && !c.ops[2].present) {
      const auto zero = AllZero(p.permuted_probs);
      FUZZ_CHECK(zero, "permuteProbsOutOptional without probs must be zeros: %s", zero.message());
    }
  } else {
    p.grad = take(0), p.probs_grad = take(1), p.sorted_indices = take(2), p.routing_map = take(3);
    p.tokens_grad = take(4), p.dense_probs_grad = take(5);
    p.spec.T = tokens_num, p.spec.E = num_experts, p.spec.H = p.grad.desc.shape[1];
    p.spec.drop_and_pad = c.dp;
    p.spec.with_probs = c.ops[1].present && c.ops[5].present;
    const auto ok = BackwardMatchesSpec(p);
    FUZZ_CHECK(ok, "backward differs from the naive oracle: %s", ok.message());
    if (c.ops[5].present && !c.ops[1].present) {
      const auto zero = AllZero(p.dense_probs_grad);
      FUZZ_CHECK(zero, "probsGradOutOptional without P must be zeros: %s", zero.message());
    }
  }
}

void run_one(const uint8_t *data, size_t size) {
  Reader r(data, size);
  uint64_t h = 1469598103934665603ull;  // FNV-1a of the input seeds the data PRNG
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  r.seed(h);

  Case c;
  const uint8_t flags = r.u8();
  c.grad = flags & 1, c.dp = flags & 2, c.probs_in = flags & 4, c.probs_out = flags & 8;
  c.map = !(flags & 16), c.stream = flags & 32;
  const bool reexecute = flags & 64;
  const int64_t T = r.size(), E = r.size(), H = r.size(), K = r.size(), C = r.size();
  int64_t R = 0;  // the consistent row count (wraps harmlessly if the sizes are huge)
  if (__builtin_mul_overflow(c.dp ? E : T, c.dp ? C : K, &R)) R = 0;
  const uint8_t attr = r.u8(), attr2 = r.u8();
  const int64_t num_out_tokens = attr < 200 ? R : r.size();
  const int64_t num_experts = attr < 200 ? E : r.size();
  const int64_t tokens_num = attr2 < 200 ? T : r.size();
  const uint8_t vb = r.u8();
  const DType vt = vb < 240 ? std::array{DType::f32, DType::f16, DType::bf16}[vb % 3]
                            : static_cast<DType>(kDtypes[vb - 240]);
  const uint8_t pb = r.u8();
  const DType pt = pb < 200   ? vt
                   : pb < 240 ? (vt == DType::bf16 ? DType::f32 : vt)
                              : static_cast<DType>(kDtypes[pb - 240]);
  const DType mt = pick_dtype(r, r.u8() % 2 ? DType::boolean : DType::i8);
  const uint8_t ws_mode = r.u8(), extra = r.u8();

  Budget budget;
  if (!c.grad) {
    c.ops[0] = make_operand(r, {T, H}, vt, true, budget);
    c.ops[1] = make_operand(r, {T, E}, mt, true, budget);
    c.ops[2] = make_operand(r, {T, E}, pt, c.probs_in, budget);
    c.ops[3] = make_operand(r, {R, H}, vt, true, budget);
    c.ops[4] = make_operand(r, {R}, pt, c.probs_out, budget);
    c.ops[5] = make_operand(r, {R}, DType::i32, true, budget);
    c.is_output = {false, false, false, true, true, true};
    fill_floats(c.ops[0], r, true);
    fill_map(c.ops[1], r);
    fill_floats(c.ops[2], r, true);
  } else {
    c.ops[0] = make_operand(r, {R, H}, vt, true, budget);
    c.ops[1] = make_operand(r, {R}, pt, c.probs_in, budget);
    c.ops[2] = make_operand(r, {R}, DType::i32, true, budget);
    c.ops[3] = make_operand(r, {T, E}, mt, c.map || c.probs_in, budget);
    c.ops[4] = make_operand(r, {T, H}, vt, true, budget);
    c.ops[5] = make_operand(r, {T, E}, pt, c.probs_out, budget);
    c.is_output = {false, false, false, false, true, true};
    fill_floats(c.ops[0], r, false);
    fill_floats(c.ops[1], r, true);
    fill_indices(c.ops[2], r, c.dp, tokens_num, R);
    fill_map(c.ops[3], r);
  }
  std::array<std::vector<std::byte>, 6> inputs_before;
  for (size_t i = 0; i < 6; ++i)
    if (!c.is_output[i]) inputs_before[i] = c.ops[i].host.storage;
  auto inputs_unchanged = [&] {
    for (size_t i = 0; i < 6; ++i)
      if (!c.is_output[i] && c.ops[i].host.storage != inputs_before[i]) return false;
    return true;
  };
  auto outputs_untouched = [&] {
    for (size_t i = 0; i < 6; ++i)
      if (c.is_output[i] && !untouched(c.ops[i])) return false;
    return true;
  };

  // Phase 1.
  uint64_t ws_size = 0xDEADBEEF;
  aclOpExecutor *exec = nullptr;
  uint64_t *ws_arg = (extra & 3) == 3 ? nullptr : &ws_size;
  aclOpExecutor **exec_arg = (extra & 12) == 12 ? nullptr : &exec;
  auto tensor = [&](int i) { return c.ops[static_cast<size_t>(i)].acl; };
  const aclnnStatus s1 = !c.grad ? aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                                       tensor(0), tensor(1), tensor(2), num_out_tokens, c.dp,
                                       tensor(3), tensor(4), tensor(5), ws_arg, exec_arg)
                                 : aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
                                       tensor(0), tensor(1), tensor(2), tensor(3), num_experts,
                                       tokens_num, c.dp, tensor(4), tensor(5), ws_arg, exec_arg);
  FUZZ_CHECK(outputs_untouched() && inputs_unchanged(), "the first phase wrote a tensor");
  auto execute = [&](void *ws, uint64_t n, aclOpExecutor *e, aclrtStream st) {
    return !c.grad ? aclnnMoeTokenPermuteWithRoutingMap(ws, n, e, st)
                   : aclnnMoeTokenPermuteWithRoutingMapGrad(ws, n, e, st);
  };
  bool runnable = true;
  for (const Operand &op : c.ops) runnable = runnable && (!op.present || op.runnable);
  if (s1 != 0) {
    check_failure("GetWorkspaceSize", s1);
    ++g_outcomes.phase1_error;
    FUZZ_CHECK(exec == nullptr, "a failed first phase returned an executor");
  } else if (!runnable || ws_size > kMaxWorkspaceBytes) {
    // Valid but too large for the harness: consume the executor without running it (a
    // workspace too small, or a stream that is not live, fails before any work).
    FUZZ_CHECK(exec != nullptr, "GetWorkspaceSize succeeded without an executor");
    const aclnnStatus s = execute(nullptr, 0, exec, reinterpret_cast<aclrtStream>(uintptr_t{16}));
    FUZZ_CHECK(s != 0, "an executor ran on a stream that does not exist");
    check_failure("second phase (discard)", s);
    ++g_outcomes.too_large;
  } else {
    FUZZ_CHECK(exec != nullptr, "GetWorkspaceSize succeeded without an executor");
    // Workspace: exact and misaligned by default; too small, null with size > 0, or larger.
    std::vector<std::byte> ws_buf(static_cast<size_t>(ws_size) + 1064);
    void *ws = ws_buf.data() + (ws_mode & 63);
    uint64_t ws_pass = ws_size;
    bool ws_ok = true;
    if (ws_mode >= 200 && ws_mode < 220 && ws_size > 0) ws_pass = ws_size - 1, ws_ok = false;
    if (ws_mode >= 220 && ws_mode < 240 && ws_size > 0) ws = nullptr, ws_ok = false;
    if (ws_mode >= 240) ws_pass = ws_size + 1000;
    aclrtStream stream = nullptr;
    if (c.stream) FUZZ_CHECK(aclrtCreateStream(&stream) == ACL_SUCCESS, "aclrtCreateStream");
    aclnnStatus s2 = execute(ws, ws_pass, exec, stream);
    if (s2 == 0 && stream) s2 = aclrtSynchronizeStream(stream);
    if (!ws_ok) FUZZ_CHECK(s2 != 0, "a workspace too small or null was accepted");
    if (s2 != 0) {
      check_failure("second phase", s2);
      ++g_outcomes.phase2_error;
      FUZZ_CHECK(outputs_untouched(), "a failing second phase (%d: %s) wrote an output",
                 static_cast<int>(s2), aclGetRecentErrMsg());
    } else {
      for (size_t i = 0; i < 6; ++i)
        if (c.is_output[i])
          FUZZ_CHECK(outside(c.ops[i]) == 0, "output %zu written outside its view", i);
      // The oracle walks T tokens and, forward, E experts (its routing map's columns).
      const int64_t tokens = c.grad ? tokens_num : c.ops[0].host.desc.shape[0];
      const int64_t experts = c.grad ? 0 : c.ops[1].host.desc.shape[1];
      if (tokens <= kMaxOracleTokens && experts <= kMaxOracleTokens) {
        check_against_oracle(c, num_out_tokens, num_experts, tokens_num);
        ++g_outcomes.success;
      } else {
        for (size_t i = 0; i < 6; ++i)
          if (c.is_output[i] && c.ops[i].present)
            FUZZ_CHECK(
                c.ops[i].host.numel() == 0, "T = %lld tokens but output %zu has %lld elements",
                static_cast<long long>(tokens), i, static_cast<long long>(c.ops[i].host.numel()));
        ++g_outcomes.empty_outputs;
      }
    }
    FUZZ_CHECK(inputs_unchanged(), "the second phase wrote an input");
    if (reexecute) {  // executors are single-use, also after a failure
      const aclnnStatus again = execute(ws, ws_pass, exec, stream);
      FUZZ_CHECK(again == 161002, "re-executing an executor returned %d", static_cast<int>(again));
      check_failure("re-execute", again);
    }
    if (stream) FUZZ_CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS, "aclrtDestroyStream");
  }
  destroy(c);
}

}  // namespace

// For the replay driver: "<n> ok, <n> second-phase errors, ...".
std::string fuzz_outcome_summary() {
  const Outcomes &o = g_outcomes;
  return std::to_string(o.success) + " ran and matched the oracle, " +
         std::to_string(o.empty_outputs) +
         " ran with more tokens than the oracle walks (outputs without elements), " +
         std::to_string(o.phase2_error) + " second-phase errors (nothing written), " +
         std::to_string(o.phase1_error) + " first-phase errors, " + std::to_string(o.too_large) +
         " valid but too large to run, " + std::to_string(o.create_refused) +
         " tensors refused by aclCreateTensor";
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  (void)aclInit(nullptr);  // may say "already initialised": the previous input finalised
  run_one(data, size);
  const aclError fin = aclFinalize();
  FUZZ_CHECK(fin == ACL_SUCCESS, "aclFinalize found live objects: %s", aclGetRecentErrMsg());
  return 0;
}
