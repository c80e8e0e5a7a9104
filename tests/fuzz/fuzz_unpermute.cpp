// The unpermute pair in the fuzz harness (flags bit 7; the invariants and the input layout
// are fuzz_operators.cpp's). Its 8 tensor records follow CANN's parameter order:
//   forward  permutedTokens, sortedIndices, routingMapOptional, probsOptional,
//            unpermutedTokens, outIndex, permuteTokenId, permuteProbs
//   Grad     unpermutedTokensGrad, outIndex, permuteTokenId, routingMapOptional,
//            permutedTokensOptional, probsOptional, permutedTokensGradOut, probsGradOutOptional
// restoreShapeOptional is {T, H} when attribute < 200, else two sizes from the input; absent
// when attribute2 % 4 == 3. The Grad's outIndex is a permutation of the rows (drop-less with
// -1 holes) unless extra bit 4 asks for arbitrary values (mostly rows named twice). A
// successful run must equal the reference backend bit for bit on every output byte.
#include <aclnnop/aclnn_moe_token_unpermute_with_routing_map.h>
#include <aclnnop/aclnn_moe_token_unpermute_with_routing_map_grad.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <vector>

#include "fuzz_drive.hpp"
#include "fuzz_input.hpp"

namespace moeperm::fuzz {
namespace {

// outIndex as a forward writes it: each row named once (drop-less: some slots -1).
void fill_row_permutation(Operand &op, Reader &r, bool dp) {
  if (!op.present || !op.runnable || op.host.desc.shape.size() != 1) return;
  const int64_t n = op.host.desc.shape[0];
  if (n <= 0 || n > (int64_t{1} << 24)) return;
  const std::vector<int32_t> rows = input_permutation(r, n);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t at = op.host.at(i);
    if (at < 0 || (at + 1) * 4 > static_cast<int64_t>(op.host.storage.size())) return;
    const int32_t v = !dp && r.data() < 40 ? -1 : rows[static_cast<size_t>(i)];
    std::memcpy(&op.host.storage[static_cast<size_t>(at * 4)], &v, 4);
  }
}

std::optional<TensorDesc> desc_of(const Case &c, const std::vector<HostTensor> &t, size_t i) {
  return c.ops[i].present ? std::optional<TensorDesc>(t[i].desc) : std::nullopt;
}

// The reference backend on the same inputs, its outputs starting from the same poison.
void check_against_reference(Case &c, const std::optional<std::vector<int64_t>> &restore) {
  std::vector<HostTensor> t(c.ops.size());
  for (size_t i = 0; i < t.size(); ++i) {
    t[i] = c.ops[i].host;
    if (c.is_output[i]) t[i].storage = c.before[i];
  }
  auto data = [&](size_t i) -> void * { return c.ops[i].present ? t[i].data() : nullptr; };
  const PlanOptions reference{Backend::reference};
  try {
    if (!c.grad) {
      UnpermuteDesc d{
          *desc_of(c, t, 0), *desc_of(c, t, 1), desc_of(c, t, 2), desc_of(c, t, 3), c.dp, restore,
          *desc_of(c, t, 4), desc_of(c, t, 5),  desc_of(c, t, 6), desc_of(c, t, 7)};
      unpermute(d, {data(0), data(1), data(2), data(3), data(4), data(5), data(6), data(7)},
                reference);
    } else {
      UnpermuteGradDesc d{*desc_of(c, t, 0),
                          *desc_of(c, t, 1),
                          *desc_of(c, t, 2),
                          desc_of(c, t, 3),
                          desc_of(c, t, 4),
                          desc_of(c, t, 5),
                          c.dp,
                          restore,
                          *desc_of(c, t, 6),
                          desc_of(c, t, 7)};
      unpermute_grad(d, {data(0), data(1), data(2), data(3), data(4), data(5), data(6), data(7)},
                     reference);
    }
  } catch (const Error &e) {
    FUZZ_CHECK(false, "the reference refused what the C API ran: %s", e.what());
  }
  for (size_t i = 0; i < t.size(); ++i)
    if (c.is_output[i] && c.ops[i].present && c.ops[i].runnable)
      FUZZ_CHECK(t[i].storage == c.ops[i].host.storage,
                 "output %zu differs from the reference backend", i);
}

}  // namespace

void run_unpermute(Reader &r, uint8_t flags) {
  const Header hd = read_header(r, flags);
  if (hd.extra & kExtraRagged) return run_ragged(r, hd);
  Case c = hd.base_case();
  c.tiling_rejections = c.grad;  // SPEC-unpermute U4 Grad rule 3
  const int64_t T = hd.T, E = hd.E, H = hd.H, R = hd.R;
  std::optional<std::vector<int64_t>> restore;
  if (hd.attr2 % 4 != 3)
    restore = hd.attr < 200 ? std::vector<int64_t>{T, H} : std::vector<int64_t>{r.size(), r.size()};
  const DType vt = hd.vt, pt = hd.pt, mt = hd.mt, i32 = DType::i32;
  const bool map = c.map || c.probs_in;
  Budget budget;
  if (!c.grad) {
    // Moved in, never copied: each aclTensor points into its operand's storage.
    c.ops.reserve(8);
    c.ops.push_back(make_operand(r, {R, H}, vt, true, budget));
    c.ops.push_back(make_operand(r, {R}, i32, true, budget));
    c.ops.push_back(make_operand(r, {T, E}, mt, map, budget));
    c.ops.push_back(make_operand(r, {T, E}, pt, c.probs_in, budget));
    c.ops.push_back(make_operand(r, {T, H}, vt, true, budget));
    c.ops.push_back(make_operand(r, {R}, i32, c.probs_out, budget));
    c.ops.push_back(make_operand(r, {R}, i32, c.probs_out, budget));
    c.ops.push_back(make_operand(r, {R}, pt, c.probs_out, budget));
    c.is_output = {false, false, false, false, true, true, true, true};
    fill_floats(c.ops[0], r, false);
    fill_indices(c.ops[1], r, c.dp, T, R);
    fill_map(c.ops[2], r);
    fill_floats(c.ops[3], r, false);
  } else {
    // Moved in, never copied: each aclTensor points into its operand's storage.
    c.ops.reserve(8);
    c.ops.push_back(make_operand(r, {T, H}, vt, true, budget));
    c.ops.push_back(make_operand(r, {R}, i32, true, budget));
    c.ops.push_back(make_operand(r, {R}, i32, true, budget));
    c.ops.push_back(make_operand(r, {T, E}, mt, map, budget));
    c.ops.push_back(make_operand(r, {R, H}, vt, c.probs_in && c.probs_out, budget));
    c.ops.push_back(make_operand(r, {T, E}, pt, c.probs_in, budget));
    c.ops.push_back(make_operand(r, {R, H}, vt, true, budget));
    c.ops.push_back(make_operand(r, {T, E}, pt, c.probs_out, budget));
    c.is_output = {false, false, false, false, false, false, true, true};
    fill_floats(c.ops[0], r, false);
    if (hd.extra & 16)
      fill_indices(c.ops[1], r, false, T, R);
    else
      fill_row_permutation(c.ops[1], r, c.dp);
    fill_indices(c.ops[2], r, true, T, R);
    fill_map(c.ops[3], r);
    fill_floats(c.ops[4], r, false);
    fill_floats(c.ops[5], r, false);
  }
  aclIntArray *restore_arg =
      restore ? aclCreateIntArray(restore->data(), restore->size()) : nullptr;

  Phases phases;
  phases.phase1 = [&](uint64_t *ws, aclOpExecutor **ex) {
    return !c.grad ? aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(
                         c.tensor(0), c.tensor(1), c.tensor(2), c.tensor(3), c.dp, restore_arg,
                         c.tensor(4), c.tensor(5), c.tensor(6), c.tensor(7), ws, ex)
                   : aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(
                         c.tensor(0), c.tensor(1), c.tensor(2), c.tensor(3), c.tensor(4),
                         c.tensor(5), c.dp, restore_arg, c.tensor(6), c.tensor(7), ws, ex);
  };
  phases.execute = [&](void *ws, uint64_t n, aclOpExecutor *e, aclrtStream st) {
    return !c.grad ? aclnnMoeTokenUnpermuteWithRoutingMap(ws, n, e, st)
                   : aclnnMoeTokenUnpermuteWithRoutingMapGrad(ws, n, e, st);
  };
  phases.oracle = [&](Case &done) { check_against_reference(done, restore); };
  phases.infer = [&]() -> std::optional<Inferred> {
    const std::vector<Operand> &o = c.ops;
    const size_t n = o.size();
    if (!c.grad) {
      if (!o[0].present || !o[1].present) return std::nullopt;  // required inputs null
      const UnpermuteDesc d{o[0].host.desc, o[1].host.desc, opt_desc(o, 2), opt_desc(o, 3),
                            c.dp,           restore,        o[4].host.desc, opt_desc(o, 5),
                            opt_desc(o, 6), opt_desc(o, 7)};
      return inferred_by([&] {
        const UnpermuteDesc out = infer_outputs(d);
        return shapes_at(n, {{4, out.unpermuted_tokens},
                             {5, out.out_index},
                             {6, out.permute_token_id},
                             {7, out.permute_probs}});
      });
    }
    if (!o[0].present || !o[1].present || !o[2].present) return std::nullopt;
    const UnpermuteGradDesc d{o[0].host.desc, o[1].host.desc, o[2].host.desc, opt_desc(o, 3),
                              opt_desc(o, 4), opt_desc(o, 5), c.dp,           restore,
                              o[6].host.desc, opt_desc(o, 7)};
    return inferred_by([&] {
      const UnpermuteGradDesc out = infer_outputs(d);
      return shapes_at(n, {{6, out.permuted_tokens_grad_out}, {7, out.probs_grad_out}});
    });
  };
  // The reference's work is bounded by its tensors (Note [Work bounded by tensors]): a token
  // loop runs only over tokens whose rows are in memory (drop-less T <= R; drop-and-pad
  // loops over slots), so it runs on every successful input, whatever T is.
  phases.oracle_tokens = phases.oracle_experts = 0;
  drive(c, phases, hd.ws_mode, hd.extra, hd.reexecute);
  if (restore_arg) aclDestroyIntArray(restore_arg);
}

}  // namespace moeperm::fuzz
