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
#include "fuzz_input.hpp"
#include "naive.hpp"
#include "testing.hpp"

namespace {

using namespace moeperm::fuzz;

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
