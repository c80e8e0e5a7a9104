// The two phases of one fuzz input, shared by every operator (fuzz_drive.hpp).
#include "fuzz_drive.hpp"

#include <acl/acl.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace moeperm::fuzz {
namespace {

// 561002 is an internal error, except from an operator whose spec gives it to CANN's tiling
// rejections (its message then does not say "internal error").
bool allowed_status(int64_t s, bool tiling_rejections, const std::string &msg) {
  if (s == 561002) return tiling_rejections && msg.find("internal error") == std::string::npos;
  return s == 0 || s == 161001 || s == 161002 || s == 361001 || s == 561103;
}

std::string message_of(const Phases &ph) {
  if (ph.message) return ph.message();
  const char *msg = aclGetRecentErrMsg();
  return msg ? msg : "";
}

void check_failure(const Phases &ph, const char *where, int64_t status,
                   bool tiling_rejections = false) {
  const std::string msg = message_of(ph);
  FUZZ_CHECK(allowed_status(status, tiling_rejections, msg),
             "%s returned %lld, not a SPEC §5 status (message: %s)", where,
             static_cast<long long>(status), msg.c_str());
  FUZZ_CHECK(!msg.empty(), "%s returned %lld with an empty error message", where,
             static_cast<long long>(status));
}

bool untouched(const Operand &op) {
  return !op.present || !op.runnable || moeperm::testing::untouched(op.host);
}

int64_t outside(const Operand &op) {
  return op.present && op.runnable ? moeperm::testing::bytes_written_outside_view(op.host) : 0;
}

// infer_outputs against the first phase's status s1 (Phases::infer).
void check_inferred(const Case &c, const Phases &ph, aclnnStatus s1) {
  const std::optional<Inferred> inf = ph.infer();
  if (!inf) return;
  if (inf->status != 0) {
    FUZZ_CHECK(allowed_status(inf->status, c.tiling_rejections, inf->message),
               "infer_outputs threw %d, not a SPEC §5 status (message: %s)",
               static_cast<int>(inf->status), inf->message.c_str());
    FUZZ_CHECK(!inf->message.empty(), "infer_outputs threw %d without a message",
               static_cast<int>(inf->status));
    FUZZ_CHECK(s1 != 0, "infer_outputs rejected what the first phase accepted: %s",
               inf->message.c_str());
    return;
  }
  if (s1 != 0) return;
  for (size_t i = 0; i < c.ops.size(); ++i)
    if (c.is_output[i] && c.ops[i].present && i < inf->shapes.size() && inf->shapes[i])
      FUZZ_CHECK(*inf->shapes[i] == c.ops[i].host.desc.shape,
                 "infer_outputs gave output %zu another shape than the one the first phase "
                 "accepted",
                 i);
}

// Elements of an operand's view, saturating at INT64_MAX (0 when any dimension is <= 0).
int64_t elements(const Operand &op) {
  const std::vector<int64_t> &shape = op.host.desc.shape;
  if (std::any_of(shape.begin(), shape.end(), [](int64_t d) { return d <= 0; })) return 0;
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  return n;
}

}  // namespace

Header read_header(Reader &r, uint8_t flags) {
  Header h;
  h.flags = flags;
  h.reexecute = flags & 64;
  h.T = r.size(), h.E = r.size(), h.H = r.size(), h.K = r.size(), h.C = r.size();
  const bool dp = flags & 2;
  // The consistent row count (wraps harmlessly if the sizes are huge).
  if (__builtin_mul_overflow(dp ? h.E : h.T, dp ? h.C : h.K, &h.R)) h.R = 0;
  h.attr = r.u8(), h.attr2 = r.u8();
  const uint8_t vb = r.u8();
  h.vt = vb < 240 ? std::array{DType::f32, DType::f16, DType::bf16}[vb % 3]
                  : static_cast<DType>(kDtypes[vb - 240]);
  const uint8_t pb = r.u8();
  h.pt = pb < 200   ? h.vt
         : pb < 240 ? (h.vt == DType::bf16 ? DType::f32 : h.vt)
                    : static_cast<DType>(kDtypes[pb - 240]);
  h.mt = pick_dtype(r, r.u8() % 2 ? DType::boolean : DType::i8);
  h.ws_mode = r.u8(), h.extra = r.u8();
  return h;
}

Case Header::base_case() const {
  Case c;
  c.grad = flags & 1, c.dp = flags & 2, c.probs_in = flags & 4, c.probs_out = flags & 8;
  c.map = !(flags & 16), c.stream = flags & 32;
  return c;
}

void drive(Case &c, const Phases &ph, uint8_t ws_mode, uint8_t extra, bool reexecute) {
  const size_t n = c.ops.size();
  c.before.resize(n);
  for (size_t i = 0; i < n; ++i) c.before[i] = c.ops[i].host.storage;
  auto inputs_unchanged = [&] {
    for (size_t i = 0; i < n; ++i)
      if (!c.is_output[i] && c.ops[i].host.storage != c.before[i]) return false;
    return true;
  };
  auto outputs_untouched = [&] {
    for (size_t i = 0; i < n; ++i)
      if (c.is_output[i] && !untouched(c.ops[i])) return false;
    return true;
  };

  // Phase 1.
  uint64_t ws_size = 0xDEADBEEF;
  aclOpExecutor *exec = nullptr;
  // Null out-parameters are the C API's mistakes; the C++ API has none.
  uint64_t *ws_arg = (extra & 3) == 3 && ph.executor ? nullptr : &ws_size;
  aclOpExecutor **exec_arg = (extra & 12) == 12 && ph.executor ? nullptr : &exec;
  const aclnnStatus s1 = ph.phase1(ws_arg, exec_arg);
  FUZZ_CHECK(outputs_untouched() && inputs_unchanged(), "the first phase wrote a tensor");
  if (ph.infer) check_inferred(c, ph, s1);
  bool runnable = true;
  for (size_t i = 0; i < n; ++i) {
    const Operand &op = c.ops[i];
    runnable = runnable && (!op.present || op.runnable);
    if (op.present && !c.is_output[i]) runnable = runnable && elements(op) <= kMaxInputElements;
  }
  if (s1 != 0) {
    check_failure(ph, "GetWorkspaceSize", s1, c.tiling_rejections);
    ++g_outcomes.phase1_error;
    FUZZ_CHECK(exec == nullptr, "a failed first phase returned an executor");
  } else if ((!runnable || ws_size > kMaxWorkspaceBytes) && !ph.executor) {
    ++g_outcomes.too_large;  // a Plan owns nothing: there is nothing to consume
  } else if (!runnable || ws_size > kMaxWorkspaceBytes) {
    // Valid but too large for the harness: consume the executor without running it (a
    // workspace too small, or a stream that is not live, fails before any work).
    FUZZ_CHECK(exec != nullptr, "GetWorkspaceSize succeeded without an executor");
    const aclnnStatus s =
        ph.execute(nullptr, 0, exec, reinterpret_cast<aclrtStream>(uintptr_t{16}));
    FUZZ_CHECK(s != 0, "an executor ran on a stream that does not exist");
    check_failure(ph, "second phase (discard)", s);
    ++g_outcomes.too_large;
  } else {
    FUZZ_CHECK(exec != nullptr || !ph.executor, "GetWorkspaceSize succeeded without an executor");
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
    aclnnStatus s2 = ph.execute(ws, ws_pass, exec, stream);
    if (s2 == 0 && stream) s2 = aclrtSynchronizeStream(stream);
    if (!ws_ok) FUZZ_CHECK(s2 != 0, "a workspace too small or null was accepted");
    if (s2 != 0) {
      check_failure(ph, "second phase", s2);
      ++g_outcomes.phase2_error;
      FUZZ_CHECK(outputs_untouched(), "a failing second phase (%d: %s) wrote an output",
                 static_cast<int>(s2), message_of(ph).c_str());
    } else {
      for (size_t i = 0; i < n; ++i)
        if (c.is_output[i])
          FUZZ_CHECK(outside(c.ops[i]) == 0, "output %zu written outside its view", i);
      if (ph.oracle_tokens <= kMaxOracleTokens && ph.oracle_experts <= kMaxOracleTokens) {
        ph.oracle(c);
        ++g_outcomes.success;
      } else {
        for (size_t i = 0; i < n; ++i)
          if (c.is_output[i] && c.ops[i].present)
            FUZZ_CHECK(c.ops[i].host.numel() == 0,
                       "T = %lld tokens but output %zu has %lld elements",
                       static_cast<long long>(ph.oracle_tokens), i,
                       static_cast<long long>(c.ops[i].host.numel()));
        ++g_outcomes.empty_outputs;
      }
    }
    FUZZ_CHECK(inputs_unchanged(), "the second phase wrote an input");
    if (reexecute && ph.executor) {  // executors are single-use, also after a failure
      const aclnnStatus again = ph.execute(ws, ws_pass, exec, stream);
      FUZZ_CHECK(again == 161002, "re-executing an executor returned %d", static_cast<int>(again));
      check_failure(ph, "re-execute", again);
    }
    if (stream) FUZZ_CHECK(aclrtDestroyStream(stream) == ACL_SUCCESS, "aclrtDestroyStream");
  }
  for (Operand &op : c.ops)
    if (op.acl) aclDestroyTensor(op.acl), op.acl = nullptr;
}

}  // namespace moeperm::fuzz
