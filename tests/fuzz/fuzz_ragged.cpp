// The ragged pair in the fuzz harness (flags bit 7 with extra bit 5; the invariants and the
// input layout are fuzz_operators.cpp's): moeperm's own operators with Megatron-LM's and
// TransformerEngine's semantics (docs/ragged.md), which have no CANN C API, so the two
// phases are the C++ API's plan_ragged_*() and run(), and a failure is a moeperm::Error.
// Extra bit 6 picks unpermute over permute, flags bit 0 the Grad. The tensor records follow
// the descriptors' field order:
//   permute          tokens, routing_map, probs, permuted_tokens, permuted_probs,
//                    sorted_indices
//   permute Grad     permuted_tokens_grad, permuted_probs_grad, sorted_indices,
//                    routing_map, tokens_grad, probs_grad
//   unpermute        permuted_tokens, sorted_indices, routing_map, probs, unpermuted_tokens
//   unpermute Grad   unpermuted_tokens_grad, sorted_indices, routing_map, permuted_tokens,
//                    probs, permuted_tokens_grad, probs_grad
// num_out_tokens (permute) and num_tokens (permute Grad) are the consistent R and T when
// attribute < 200, else a size from the input; restore_shape as for the unpermute pair.
// attribute2 bits 2-3 pick the map dtype among the header's (bool / int8), uint8 and int32.
// sorted_indices is what ragged_permute would write for the map (with, sometimes, one entry
// changed) unless extra bit 7 asks for arbitrary values. A successful run must equal the
// reference backend bit for bit on every output byte. MOEPERM_FUZZ_VERBOSE=1 prints each
// moeperm::Error (what a replayed input was refused for).
#include <moeperm/moeperm.hpp>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "fuzz_drive.hpp"
#include "fuzz_input.hpp"

namespace moeperm::fuzz {

// Storage element of view element (i, j) when it lies inside the storage (wrapping, never
// overflowing, on absurd strides), else -1.
int64_t element_at(const Operand &op, int64_t i, int64_t j) {
  const TensorDesc &d = op.host.desc;
  uint64_t at = static_cast<uint64_t>(d.offset) +
                static_cast<uint64_t>(i) * static_cast<uint64_t>(d.strides[0]);
  if (d.shape.size() == 2) at += static_cast<uint64_t>(j) * static_cast<uint64_t>(d.strides[1]);
  const auto e = static_cast<int64_t>(at), es = bytes_per(d.dtype);
  const auto n = static_cast<int64_t>(op.host.storage.size()) / es;
  return e >= 0 && e < n ? e : -1;
}

void write_int32s(Operand &op, const std::vector<int32_t> &values) {
  if (!op.present || !op.runnable || op.host.desc.shape.size() != 1) return;
  for (size_t i = 0; i < values.size(); ++i) {
    const int64_t at = element_at(op, static_cast<int64_t>(i), 0);  // of a dtype maybe not 4 B
    if (at < 0 || (at + 1) * 4 > static_cast<int64_t>(op.host.storage.size())) return;
    std::memcpy(&op.host.storage[static_cast<size_t>(at * 4)], &values[i], 4);
  }
}

namespace {

constexpr uint8_t kExtraUnpermute = 64, kExtraArbitraryIndex = 128;
constexpr int64_t kMaxIndexedElements = int64_t{1} << 22;

bool usable(const Operand &op, size_t rank) {
  return op.present && op.runnable && op.host.desc.shape.size() == rank;
}

// The rows ragged_permute writes for this map (-1: an empty row), or nullopt when the map is
// absent, misshapen or outside its storage.
std::optional<std::vector<int32_t>> rows_of_map(const Operand &map, bool dp, int64_t T, int64_t E,
                                                int64_t R) {
  if (!usable(map, 2) || map.host.desc.shape != std::vector<int64_t>{T, E}) return std::nullopt;
  if (T < 0 || E < 0 || R < 0 || R > kMaxIndexedElements || (E > 0 && T > kMaxIndexedElements / E))
    return std::nullopt;
  std::vector<int32_t> rows(static_cast<size_t>(R), -1);
  const int64_t es = bytes_per(map.host.desc.dtype), C = dp && E > 0 ? R / E : 0;
  int64_t j = 0;
  for (int64_t e = 0; e < E && T > 0; ++e) {  // at T = 0, E may be anything
    int64_t c = 0;
    for (int64_t t = 0; t < T; ++t) {
      const int64_t at = element_at(map, t, e);
      if (at < 0) return std::nullopt;
      bool routed = false;
      for (int64_t b = 0; b < es; ++b)
        routed = routed || map.host.storage[static_cast<size_t>(at * es + b)] != std::byte{0};
      if (!routed) continue;
      if (!dp && j < R) rows[static_cast<size_t>(j++)] = static_cast<int32_t>(t);
      if (dp && c < C) rows[static_cast<size_t>(e * C + c++)] = static_cast<int32_t>(t);
    }
  }
  return rows;
}

// sorted_indices: the map's rows, sometimes with one entry changed; arbitrary values when the
// input asks for them or the map cannot give rows (then any token, or -1, is valid without
// probs, and the rest is garbage for the checks to reject).
void fill_ragged_index(Operand &idx, const Operand &map, Reader &r, bool dp, int64_t T, int64_t E,
                       bool arbitrary) {
  if (!usable(idx, 1)) return;
  const int64_t R = idx.host.desc.shape[0];
  std::optional<std::vector<int32_t>> rows;
  if (!arbitrary) rows = rows_of_map(map, dp, T, E, R);
  if (!rows) return fill_indices(idx, r, true, T, R);
  if (R > 0 && r.data() < 40) {
    const int64_t i = (r.data() | r.data() << 8) % R;
    (*rows)[static_cast<size_t>(i)] = static_cast<int32_t>(r.data() % (T + 2)) - 1;
  }
  write_int32s(idx, *rows);
}

using Ops = std::vector<Operand>;
using Ptrs = std::vector<void *>;

CxxOp permute_op(int64_t num_out_tokens, bool dp) {
  return cxx_op<RaggedPermuteDesc>(
      [=](const Ops &o) {
        return RaggedPermuteDesc{.tokens = o[0].host.desc,
                                 .routing_map = o[1].host.desc,
                                 .probs = opt_desc(o, 2),
                                 .num_out_tokens = num_out_tokens,
                                 .drop_and_pad = dp,
                                 .permuted_tokens = o[3].host.desc,
                                 .permuted_probs = opt_desc(o, 4),
                                 .sorted_indices = o[5].host.desc};
      },
      plan_ragged_permute,
      [](const Ptrs &d) { return RaggedPermuteData{d[0], d[1], d[2], d[3], d[4], d[5]}; },
      [](size_t n, const RaggedPermuteDesc &d) {
        return shapes_at(n, {{3, d.permuted_tokens}, {4, d.permuted_probs}, {5, d.sorted_indices}});
      });
}

CxxOp permute_grad_op(int64_t num_tokens, bool dp) {
  return cxx_op<RaggedPermuteGradDesc>(
      [=](const Ops &o) {
        return RaggedPermuteGradDesc{.permuted_tokens_grad = o[0].host.desc,
                                     .permuted_probs_grad = opt_desc(o, 1),
                                     .sorted_indices = o[2].host.desc,
                                     .routing_map = opt_desc(o, 3),
                                     .num_tokens = num_tokens,
                                     .drop_and_pad = dp,
                                     .tokens_grad = o[4].host.desc,
                                     .probs_grad = opt_desc(o, 5)};
      },
      plan_ragged_permute_grad,
      [](const Ptrs &d) { return RaggedPermuteGradData{d[0], d[1], d[2], d[3], d[4], d[5]}; },
      [](size_t n, const RaggedPermuteGradDesc &d) {
        return shapes_at(n, {{4, d.tokens_grad}, {5, d.probs_grad}});
      });
}

CxxOp unpermute_op(std::optional<std::vector<int64_t>> restore, bool dp) {
  return cxx_op<RaggedUnpermuteDesc>(
      [=](const Ops &o) {
        return RaggedUnpermuteDesc{.permuted_tokens = o[0].host.desc,
                                   .sorted_indices = o[1].host.desc,
                                   .routing_map = opt_desc(o, 2),
                                   .probs = opt_desc(o, 3),
                                   .drop_and_pad = dp,
                                   .restore_shape = restore,
                                   .unpermuted_tokens = o[4].host.desc};
      },
      plan_ragged_unpermute,
      [](const Ptrs &d) {
        return RaggedUnpermuteData{d[0], d[1], d[2], d[3], d[4]};
      },
      [](size_t n, const RaggedUnpermuteDesc &d) {
        return shapes_at(n, {{4, d.unpermuted_tokens}});
      });
}

CxxOp unpermute_grad_op(bool dp) {
  return cxx_op<RaggedUnpermuteGradDesc>(
      [=](const Ops &o) {
        return RaggedUnpermuteGradDesc{.unpermuted_tokens_grad = o[0].host.desc,
                                       .sorted_indices = o[1].host.desc,
                                       .routing_map = opt_desc(o, 2),
                                       .permuted_tokens = opt_desc(o, 3),
                                       .probs = opt_desc(o, 4),
                                       .drop_and_pad = dp,
                                       .permuted_tokens_grad = o[5].host.desc,
                                       .probs_grad = opt_desc(o, 6)};
      },
      plan_ragged_unpermute_grad,
      [](const Ptrs &d) {
        return RaggedUnpermuteGradData{d[0], d[1], d[2], d[3], d[4], d[5], d[6]};
      },
      [](size_t n, const RaggedUnpermuteGradDesc &d) {
        return shapes_at(n, {{5, d.permuted_tokens_grad}, {6, d.probs_grad}});
      });
}

// The reference backend on the same inputs, its outputs starting from the same poison.
void check_against_reference(Case &c, const CxxOp &op) {
  std::vector<Operand> t(c.ops.size());
  std::vector<void *> data(c.ops.size());
  for (size_t i = 0; i < t.size(); ++i) {
    t[i].present = c.ops[i].present, t[i].host = c.ops[i].host;
    if (c.is_output[i]) t[i].host.storage = c.before[i];
    data[i] = c.ops[i].data == c.ops[i].host.storage.data() ? t[i].host.data() : c.ops[i].data;
  }
  try {
    const Plan plan = op.plan(t, {Backend::reference});
    std::vector<std::byte> ws(plan.workspace_bytes());
    op.run(plan, data, ws);
  } catch (const Error &e) {
    FUZZ_CHECK(false, "the reference refused what the CPU backend ran: %s", e.what());
  }
  for (size_t i = 0; i < t.size(); ++i) {
    if (!c.is_output[i] || !c.ops[i].present || !c.ops[i].runnable) continue;
    const auto &want = t[i].host.storage, &got = c.ops[i].host.storage;
    size_t at = 0;
    while (at < want.size() && at < got.size() && want[at] == got[at]) ++at;
    if (want != got && std::getenv("MOEPERM_FUZZ_VERBOSE")) {
      const TensorDesc &d = c.ops[i].host.desc;
      std::fprintf(stderr, "output %zu: dtype %d offset %lld shape/strides", i,
                   static_cast<int>(d.dtype), static_cast<long long>(d.offset));
      for (size_t k = 0; k < d.shape.size(); ++k)
        std::fprintf(stderr, " %lld/%lld", static_cast<long long>(d.shape[k]),
                     static_cast<long long>(d.strides[k]));
      std::fprintf(stderr, "\n");
      for (size_t k = 0; k < c.ops.size(); ++k) {
        std::fprintf(stderr, "operand %zu (%s):", k, c.ops[k].present ? "present" : "absent");
        for (size_t b = 0; b < c.ops[k].host.storage.size() && b < 96; ++b)
          std::fprintf(stderr, "%s%02x", b % 4 ? "" : " ",
                       static_cast<unsigned>(c.ops[k].host.storage[b]));
        std::fprintf(stderr, "\n");
      }
      std::fprintf(stderr, "reference %zu:", i);
      for (size_t b = 0; b < want.size() && b < 96; ++b)
        std::fprintf(stderr, "%s%02x", b % 4 ? "" : " ", static_cast<unsigned>(want[b]));
      std::fprintf(stderr, "\n");
    }
    FUZZ_CHECK(want == got,
               "output %zu differs from the reference backend at byte %zu: %02x, reference %02x", i,
               at, at < got.size() ? static_cast<unsigned>(got[at]) : 0u,
               at < want.size() ? static_cast<unsigned>(want[at]) : 0u);
  }
}

// Makes the operands of the operator the input picks; returns the operator.
CxxOp make_case(Reader &r, const Header &hd, Case &c) {
  const int64_t T = hd.T, E = hd.E, H = hd.H, R = hd.R;
  const DType vt = hd.vt, pt = hd.pt, i32 = DType::i32;
  const DType mt = std::array{hd.mt, DType::u8, DType::i32, hd.mt}[(hd.attr2 >> 2) & 3];
  const bool unpermute = hd.extra & kExtraUnpermute, arbitrary = hd.extra & kExtraArbitraryIndex;
  const bool map = c.map || c.probs_in;
  Budget budget;
  auto add = [&](std::vector<int64_t> shape, DType dtype, bool present, bool output) {
    c.ops.push_back(make_operand(r, std::move(shape), dtype, present, budget));
    c.is_output.push_back(output);
  };
  c.ops.reserve(7);  // moved in, never copied: each aclTensor points into its storage
  if (!unpermute && !c.grad) {
    add({T, H}, vt, true, false), add({T, E}, mt, true, false), add({T, E}, pt, c.probs_in, false);
    add({R, H}, vt, true, true), add({R}, pt, c.probs_out, true), add({R}, i32, true, true);
    fill_floats(c.ops[0], r, true), fill_map(c.ops[1], r), fill_floats(c.ops[2], r, true);
    return permute_op(hd.attr < 200 ? R : r.size(), c.dp);
  }
  if (!unpermute) {
    add({R, H}, vt, true, false), add({R}, pt, c.probs_in, false), add({R}, i32, true, false);
    add({T, E}, mt, map, false), add({T, H}, vt, true, true), add({T, E}, pt, c.probs_out, true);
    // permuted_probs_grad is summed (two rows of one (token, expert) with arbitrary indices):
    // finite values, as for every sum (which of two NaNs a sum keeps is the compiler's).
    fill_floats(c.ops[0], r, false), fill_floats(c.ops[1], r, false), fill_map(c.ops[3], r);
    fill_ragged_index(c.ops[2], c.ops[3], r, c.dp, T, E, arbitrary);
    return permute_grad_op(hd.attr < 200 ? T : r.size(), c.dp);
  }
  if (!c.grad) {
    std::optional<std::vector<int64_t>> restore;
    if (hd.attr2 % 4 != 3)
      restore =
          hd.attr < 200 ? std::vector<int64_t>{T, H} : std::vector<int64_t>{r.size(), r.size()};
    add({R, H}, vt, true, false), add({R}, i32, true, false), add({T, E}, mt, map, false);
    add({T, E}, pt, c.probs_in, false), add({T, H}, vt, true, true);
    fill_floats(c.ops[0], r, false), fill_map(c.ops[2], r), fill_floats(c.ops[3], r, false);
    fill_ragged_index(c.ops[1], c.ops[2], r, c.dp, T, E, arbitrary);
    return unpermute_op(restore, c.dp);
  }
  add({T, H}, vt, true, false), add({R}, i32, true, false), add({T, E}, mt, map, false);
  add({R, H}, vt, c.probs_in && c.probs_out, false), add({T, E}, pt, c.probs_in, false);
  add({R, H}, vt, true, true), add({T, E}, pt, c.probs_out, true);
  fill_floats(c.ops[0], r, false), fill_map(c.ops[2], r);
  fill_floats(c.ops[3], r, false), fill_floats(c.ops[4], r, false);
  fill_ragged_index(c.ops[1], c.ops[2], r, c.dp, T, E, arbitrary);
  return unpermute_grad_op(c.dp);
}

}  // namespace

void run_ragged(Reader &r, const Header &hd) {
  if ((hd.attr2 & kAttr2SortChunks) == kAttr2SortChunks) return run_sort_chunks(r, hd);
  Case c = hd.base_case();
  const CxxOp op = make_case(r, hd, c);
  drive_cxx(c, op, hd);
}

void drive_cxx(Case &c, const CxxOp &op, const Header &hd) {
  c.stream = false;  // the C++ API's streams are CUDA streams; this plan runs on the CPU
  std::optional<Plan> plan;
  std::string message;
  auto failed = [&](const Error &e) {
    message = e.what();
    if (std::getenv("MOEPERM_FUZZ_VERBOSE")) std::fprintf(stderr, "error: %s\n", e.what());
    return static_cast<aclnnStatus>(e.code());
  };
  std::vector<void *> data;
  for (const Operand &o : c.ops) data.push_back(o.present ? o.data : nullptr);

  Phases phases;
  phases.executor = false;
  phases.message = [&] { return message; };
  phases.phase1 = [&](uint64_t *ws, aclOpExecutor **) -> aclnnStatus {
    try {
      plan = op.plan(c.ops, {Backend::cpu});
      *ws = plan->workspace_bytes();
      return 0;
    } catch (const Error &e) {
      return failed(e);
    }
  };
  phases.execute = [&](void *ws, uint64_t n, aclOpExecutor *, aclrtStream) -> aclnnStatus {
    try {  // a null workspace is an empty span here: std::span cannot be null with a size
      op.run(*plan, data, {static_cast<std::byte *>(ws), ws ? static_cast<size_t>(n) : 0});
      return 0;
    } catch (const Error &e) {
      return failed(e);
    }
  };
  phases.oracle = [&](Case &done) { check_against_reference(done, op); };
  phases.infer = [&] {
    return std::optional<Inferred>(inferred_by([&] { return op.infer(c.ops); }));
  };
  phases.oracle_tokens = phases.oracle_experts = 0;  // the reference is bounded by its tensors
  drive(c, phases, hd.ws_mode, hd.extra, false);
}

}  // namespace moeperm::fuzz
