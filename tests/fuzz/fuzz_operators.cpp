// libFuzzer harness over the four operators' C API (docs/robustness.md). One input decodes into one
// call sequence: aclCreateTensor for every operand (any rank, dims, dtype, strides, offset,
// declared storage, null tensor or null data), GetWorkspaceSize with any attribute values, and,
// when that succeeds on a problem small enough to hold in memory, the second phase with an
// exact / too small / null / misaligned workspace on the default or a created stream, over
// index and routing-map contents that are valid or garbage.
//
// Invariants checked on every input (a violation aborts, which libFuzzer reports as a crash):
//  * every status is one of SPEC §5's codes, never 561002 as an internal error (the unpermute
//    Grad returns it for CANN's tiling limits, SPEC-unpermute U4), and every failure leaves a
//    non-empty aclGetRecentErrMsg();
//  * the first phase writes no tensor; a failing second phase (workspace or data error)
//    writes no output byte (poison check), and no phase writes an input;
//  * a successful run equals the naive oracle (tests/support/naive.hpp; for the unpermute
//    pair the reference backend) bit for bit and writes no storage byte outside an output's
//    view;
//  * an executed executor cannot be executed again (161002, no use-after-free);
//  * aclFinalize afterwards finds no live tensor, stream, allocation or executor.
// ASan/UBSan (and LSan at exit) check memory safety and leaks underneath.
//
// Input layout (bytes past the end read as 0, which always means "the consistent default",
// so short inputs are valid problems; tests/fuzz/make_seeds.py writes the seed corpus):
//   header   flags, T, E, H, K, C, attribute, attribute2, value dtype, probs dtype, map dtype
//            (2 bytes), workspace mode, extra. Flags bit 7 selects the unpermute pair
//            (fuzz_unpermute.cpp), bit 0 the Grad of either pair.
//   tensors  6 records (forward: tokens, routingMap, probsOptional, permuteTokensOut,
//            permuteProbsOutOptional, sortedIndicesOut; grad: G, P, S, M, tokensGradOut,
//            probsGradOutOptional), each: shape, dtype, layout, offset, storage, presence;
//            8 for the unpermute pair (its parameters in CANN's order)
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
#include "fuzz_drive.hpp"
#include "fuzz_input.hpp"
#include "naive.hpp"
#include "testing.hpp"

namespace {

using namespace moeperm::fuzz;

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
  const uint8_t flags = r.u8();
  if (flags & kFlagUnpermute) return run_unpermute(r, flags);

  const Header hd = read_header(r, flags);
  const int64_t T = hd.T, E = hd.E, H = hd.H, R = hd.R;
  const int64_t num_out_tokens = hd.attr < 200 ? R : r.size();
  const int64_t num_experts = hd.attr < 200 ? E : r.size();
  const int64_t tokens_num = hd.attr2 < 200 ? T : r.size();
  Case c = hd.base_case();
  const DType vt = hd.vt, pt = hd.pt, mt = hd.mt;
  Budget budget;
  if (!c.grad) {
    // Moved in, never copied: each aclTensor points into its operand's storage.
    c.ops.reserve(6);
    c.ops.push_back(make_operand(r, {T, H}, vt, true, budget));
    c.ops.push_back(make_operand(r, {T, E}, mt, true, budget));
    c.ops.push_back(make_operand(r, {T, E}, pt, c.probs_in, budget));
    c.ops.push_back(make_operand(r, {R, H}, vt, true, budget));
    c.ops.push_back(make_operand(r, {R}, pt, c.probs_out, budget));
    c.ops.push_back(make_operand(r, {R}, DType::i32, true, budget));
    c.is_output = {false, false, false, true, true, true};
    fill_floats(c.ops[0], r, true);
    fill_map(c.ops[1], r);
    fill_floats(c.ops[2], r, true);
  } else {
    // Moved in, never copied: each aclTensor points into its operand's storage.
    c.ops.reserve(6);
    c.ops.push_back(make_operand(r, {R, H}, vt, true, budget));
    c.ops.push_back(make_operand(r, {R}, pt, c.probs_in, budget));
    c.ops.push_back(make_operand(r, {R}, DType::i32, true, budget));
    c.ops.push_back(make_operand(r, {T, E}, mt, c.map || c.probs_in, budget));
    c.ops.push_back(make_operand(r, {T, H}, vt, true, budget));
    c.ops.push_back(make_operand(r, {T, E}, pt, c.probs_out, budget));
    c.is_output = {false, false, false, false, true, true};
    fill_floats(c.ops[0], r, false);
    fill_floats(c.ops[1], r, true);
    fill_indices(c.ops[2], r, c.dp, tokens_num, R);
    fill_map(c.ops[3], r);
  }

  Phases phases;
  phases.phase1 = [&](uint64_t *ws_arg, aclOpExecutor **exec_arg) {
    return !c.grad ? aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
                         c.tensor(0), c.tensor(1), c.tensor(2), num_out_tokens, c.dp, c.tensor(3),
                         c.tensor(4), c.tensor(5), ws_arg, exec_arg)
                   : aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
                         c.tensor(0), c.tensor(1), c.tensor(2), c.tensor(3), num_experts,
                         tokens_num, c.dp, c.tensor(4), c.tensor(5), ws_arg, exec_arg);
  };
  phases.execute = [&](void *ws, uint64_t n, aclOpExecutor *e, aclrtStream st) {
    return !c.grad ? aclnnMoeTokenPermuteWithRoutingMap(ws, n, e, st)
                   : aclnnMoeTokenPermuteWithRoutingMapGrad(ws, n, e, st);
  };
  phases.oracle = [&](Case &done) {
    check_against_oracle(done, num_out_tokens, num_experts, tokens_num);
  };
  phases.infer = [&]() -> std::optional<Inferred> {
    const std::vector<Operand> &o = c.ops;
    const size_t n = o.size();
    if (!c.grad) {
      if (!o[0].present || !o[1].present) return std::nullopt;  // required inputs null
      const moeperm::PermuteDesc d{o[0].host.desc, o[1].host.desc, opt_desc(o, 2), num_out_tokens,
                                   c.dp,           o[3].host.desc, opt_desc(o, 4), o[5].host.desc};
      return inferred_by([&] {
        const moeperm::PermuteDesc out = infer_outputs(d);
        return shapes_at(
            n, {{3, out.permuted_tokens}, {4, out.permuted_probs}, {5, out.sorted_indices}});
      });
    }
    if (!o[0].present || !o[2].present) return std::nullopt;
    const moeperm::PermuteGradDesc d{o[0].host.desc, opt_desc(o, 1), o[2].host.desc,
                                     opt_desc(o, 3), num_experts,    tokens_num,
                                     c.dp,           o[4].host.desc, opt_desc(o, 5)};
    return inferred_by([&] {
      const moeperm::PermuteGradDesc out = infer_outputs(d);
      return shapes_at(n, {{4, out.tokens_grad_out}, {5, out.probs_grad_out}});
    });
  };
  // The oracle walks T tokens and, forward, E experts (its routing map's columns).
  phases.oracle_tokens = c.grad ? tokens_num : dim_of(c.ops[0], 0);
  phases.oracle_experts = c.grad ? 0 : dim_of(c.ops[1], 1);
  drive(c, phases, hd.ws_mode, hd.extra, hd.reexecute);
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
