// The operators as data for the tests: one traits struct per operator names its CANN entry
// points, its operands in CANN parameter order (the order of SPEC §5) with the problem tensor
// that plays each, and its C++ plan function. Everything generic over operators is written
// once against these traits: the argument sets of the rule tables (Args), the C++ and the C
// drivers (operators.cpp), the device upload. Adding an operator means adding its traits here
// (and its rule table rows), not copying a driver.
#pragma once

#include <aclnn/acl_meta.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map.h>
#include <aclnnop/aclnn_moe_token_permute_with_routing_map_grad.h>
#include <aclnnop/aclnn_moe_token_unpermute_with_routing_map.h>
#include <aclnnop/aclnn_moe_token_unpermute_with_routing_map_grad.h>
#include <moeperm/moeperm.hpp>
#include "problem_model.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace moeperm::testing {

using OptDesc = std::optional<TensorDesc>;

struct PermuteOp;
struct PermuteGradOp;
struct UnpermuteOp;
struct UnpermuteGradOp;

// Operator arguments as plain, nullable descriptors (CANN parameter names in comments), so
// that one rule-table row can be driven through both APIs; `Op` names the operator's traits.
struct PermuteArgs {
  using Op = PermuteOp;
  OptDesc X;   // tokens
  OptDesc M;   // routingMap
  OptDesc PR;  // probsOptional
  OptDesc Y;   // permuteTokensOut
  OptDesc YP;  // permuteProbsOutOptional
  OptDesc S;   // sortedIndicesOut
  int64_t num_out_tokens = 0;
  bool drop_and_pad = false;
};

struct GradArgs {
  using Op = PermuteGradOp;
  OptDesc G;   // permutedTokenOutputGrad
  OptDesc P;   // permutedProbsOutputGradOptional
  OptDesc S;   // sortedIndices
  OptDesc M;   // routingMapOptional
  OptDesc TG;  // tokensGradOut
  OptDesc PG;  // probsGradOutOptional
  int64_t num_experts = 0, tokens_num = 0;
  bool drop_and_pad = false;
};

struct UnpermuteArgs {
  using Op = UnpermuteOp;
  OptDesc X;                                          // permutedTokens
  OptDesc S;                                          // sortedIndices
  OptDesc M;                                          // routingMapOptional
  OptDesc P;                                          // probsOptional
  OptDesc Y;                                          // unpermutedTokens
  OptDesc O;                                          // outIndex
  OptDesc I;                                          // permuteTokenId
  OptDesc PP;                                         // permuteProbs
  bool drop_and_pad = false;                          // paddedMode
  std::optional<std::vector<int64_t>> restore_shape;  // restoreShapeOptional
};

struct UnpermuteGradArgs {
  using Op = UnpermuteGradOp;
  OptDesc G;   // unpermutedTokensGrad
  OptDesc O;   // outIndex
  OptDesc I;   // permuteTokenId
  OptDesc M;   // routingMapOptional
  OptDesc X;   // permutedTokensOptional
  OptDesc P;   // probsOptional
  OptDesc DX;  // permutedTokensGradOut
  OptDesc PG;  // probsGradOutOptional
  bool drop_and_pad = false;
  std::optional<std::vector<int64_t>> restore_shape;  // restoreShapeOptional (not read)
};

// The sizes an operand's shape is made of (SPEC notation); `none` ends a shorter shape.
enum class Dim : char { none, T, E, H, R };

// One operand of an operator: its CANN parameter name, its field in the Args, the problem
// tensor that plays it (the permute pair's problem model; null for the unpermute pair), whether the
// C++ descriptor requires it (a required TensorDesc cannot be left out there; the C API can pass a
// null handle for any operand), and its shape and dtype in the small valid argument set of the rule
// tables (valid_args).
template <class Args>
struct Operand {
  const char *name;
  OptDesc Args::*arg;
  problem_model::HostTensor problem_model::Problem::*tensor;
  bool required;
  std::array<Dim, 2> dims;
  DType valid_dtype;
};

// The C API's view of one call: an aclTensor handle (or null) per operand in CANN order.
template <class Op>
using Handles = std::array<aclTensor *, Op::kOperands.size()>;

struct PermuteOp {
  using Args = PermuteArgs;
  using Desc = PermuteDesc;
  using Data = PermuteData;
  static constexpr Operator op = Operator::permute;
  static constexpr std::array<Operand<Args>, 6> kOperands{{
      {"tokens", &Args::X, &problem_model::Problem::tokens, true, {Dim::T, Dim::H}, DType::f32},
      {"routingMap",
       &Args::M,
       &problem_model::Problem::routing_map,
       true,
       {Dim::T, Dim::E},
       DType::i8},
      {"probsOptional",
       &Args::PR,
       &problem_model::Problem::probs,
       false,
       {Dim::T, Dim::E},
       DType::f32},
      {"permuteTokensOut",
       &Args::Y,
       &problem_model::Problem::permuted_tokens,
       true,
       {Dim::R, Dim::H},
       DType::f32},
      {"permuteProbsOutOptional",
       &Args::YP,
       &problem_model::Problem::permuted_probs,
       false,
       {Dim::R},
       DType::f32},
      {"sortedIndicesOut",
       &Args::S,
       &problem_model::Problem::sorted_indices,
       true,
       {Dim::R},
       DType::i32},
  }};

  static Desc desc(const problem_model::Problem &p) { return p.permute_desc(); }
  static Data data(problem_model::Problem &p) { return p.permute_data(); }
  // Every pointer of `d` through `f` (host to device addresses; null stays null to `f`).
  template <class F>
  static Data map_data(const Data &d, F &&f) {
    return {.tokens = f(d.tokens),
            .routing_map = f(d.routing_map),
            .probs = f(d.probs),
            .permuted_tokens = f(d.permuted_tokens),
            .permuted_probs = f(d.permuted_probs),
            .sorted_indices = f(d.sorted_indices)};
  }
  static Plan plan(const Desc &d, const PlanOptions &o) { return plan_permute(d, o); }
  // The attributes of a valid argument set of sizes T, E and R rows.
  static void set_valid_attributes(Args &a, int64_t /*T*/, int64_t /*E*/, int64_t R, bool dp,
                                   int64_t /*H*/) {
    a.num_out_tokens = R, a.drop_and_pad = dp;
  }

  // Args <-> Desc; to_desc requires every required operand (expressible_in_cxx).
  static Args args(const Desc &d) {
    return {.X = d.tokens,
            .M = d.routing_map,
            .PR = d.probs,
            .Y = d.permuted_tokens,
            .YP = d.permuted_probs,
            .S = d.sorted_indices,
            .num_out_tokens = d.num_out_tokens,
            .drop_and_pad = d.drop_and_pad};
  }
  static Desc to_desc(const Args &a) {
    return {.tokens = *a.X,
            .routing_map = *a.M,
            .probs = a.PR,
            .num_out_tokens = a.num_out_tokens,
            .drop_and_pad = a.drop_and_pad,
            .permuted_tokens = *a.Y,
            .permuted_probs = a.YP,
            .sorted_indices = *a.S};
  }

  // The two CANN phases.
  static int32_t first_phase(const Handles<PermuteOp> &t, const Args &a, uint64_t *ws,
                             aclOpExecutor **exec) {
    return aclnnMoeTokenPermuteWithRoutingMapGetWorkspaceSize(
        t[0], t[1], t[2], a.num_out_tokens, a.drop_and_pad, t[3], t[4], t[5], ws, exec);
  }
  static int32_t second_phase(void *ws, uint64_t size, aclOpExecutor *exec, aclrtStream stream) {
    return aclnnMoeTokenPermuteWithRoutingMap(ws, size, exec, stream);
  }
};

struct PermuteGradOp {
  using Args = GradArgs;
  using Desc = PermuteGradDesc;
  using Data = PermuteGradData;
  static constexpr Operator op = Operator::permute_grad;
  static constexpr std::array<Operand<Args>, 6> kOperands{{
      {"permutedTokenOutputGrad",
       &Args::G,
       &problem_model::Problem::grad,
       true,
       {Dim::R, Dim::H},
       DType::f32},
      {"permutedProbsOutputGradOptional",
       &Args::P,
       &problem_model::Problem::probs_grad,
       false,
       {Dim::R},
       DType::f32},
      {"sortedIndices",
       &Args::S,
       &problem_model::Problem::sorted_indices,
       true,
       {Dim::R},
       DType::i32},
      {"routingMapOptional",
       &Args::M,
       &problem_model::Problem::routing_map,
       false,
       {Dim::T, Dim::E},
       DType::i8},
      {"tokensGradOut",
       &Args::TG,
       &problem_model::Problem::tokens_grad,
       true,
       {Dim::T, Dim::H},
       DType::f32},
      {"probsGradOutOptional",
       &Args::PG,
       &problem_model::Problem::dense_probs_grad,
       false,
       {Dim::T, Dim::E},
       DType::f32},
  }};

  static Desc desc(const problem_model::Problem &p) { return p.grad_desc(); }
  static Data data(problem_model::Problem &p) { return p.grad_data(); }
  template <class F>
  static Data map_data(const Data &d, F &&f) {
    return {.permuted_token_output_grad = f(d.permuted_token_output_grad),
            .permuted_probs_output_grad = f(d.permuted_probs_output_grad),
            .sorted_indices = f(d.sorted_indices),
            .routing_map = f(d.routing_map),
            .tokens_grad_out = f(d.tokens_grad_out),
            .probs_grad_out = f(d.probs_grad_out)};
  }
  static Plan plan(const Desc &d, const PlanOptions &o) { return plan_permute_grad(d, o); }
  static void set_valid_attributes(Args &a, int64_t T, int64_t E, int64_t /*R*/, bool dp,
                                   int64_t /*H*/) {
    a.num_experts = E, a.tokens_num = T, a.drop_and_pad = dp;
  }

  static Args args(const Desc &d) {
    return {.G = d.permuted_token_output_grad,
            .P = d.permuted_probs_output_grad,
            .S = d.sorted_indices,
            .M = d.routing_map,
            .TG = d.tokens_grad_out,
            .PG = d.probs_grad_out,
            .num_experts = d.num_experts,
            .tokens_num = d.tokens_num,
            .drop_and_pad = d.drop_and_pad};
  }
  static Desc to_desc(const Args &a) {
    return {.permuted_token_output_grad = *a.G,
            .permuted_probs_output_grad = a.P,
            .sorted_indices = *a.S,
            .routing_map = a.M,
            .num_experts = a.num_experts,
            .tokens_num = a.tokens_num,
            .drop_and_pad = a.drop_and_pad,
            .tokens_grad_out = *a.TG,
            .probs_grad_out = a.PG};
  }

  static int32_t first_phase(const Handles<PermuteGradOp> &t, const Args &a, uint64_t *ws,
                             aclOpExecutor **exec) {
    return aclnnMoeTokenPermuteWithRoutingMapGradGetWorkspaceSize(
        t[0], t[1], t[2], t[3], a.num_experts, a.tokens_num, a.drop_and_pad, t[4], t[5], ws, exec);
  }
  static int32_t second_phase(void *ws, uint64_t size, aclOpExecutor *exec, aclrtStream stream) {
    return aclnnMoeTokenPermuteWithRoutingMapGrad(ws, size, exec, stream);
  }
};

// An aclIntArray for an optional integer-array argument (null when not given).
struct IntArrayArg {
  aclIntArray *handle = nullptr;
  explicit IntArrayArg(const std::optional<std::vector<int64_t>> &v)
      : handle(v ? aclCreateIntArray(v->data(), v->size()) : nullptr) {}
  ~IntArrayArg() {
    if (handle) aclDestroyIntArray(handle);
  }
  IntArrayArg(const IntArrayArg &) = delete;
  IntArrayArg &operator=(const IntArrayArg &) = delete;
};

template <class Args>
constexpr Operand<Args> unpermute_operand(const char *name, OptDesc Args::*arg, bool required,
                                          std::array<Dim, 2> dims, DType dtype) {
  return {name, arg, nullptr, required, dims, dtype};
}

struct UnpermuteOp {
  using Args = UnpermuteArgs;
  using Desc = UnpermuteDesc;
  using Data = UnpermuteData;
  static constexpr Operator op = Operator::unpermute;
  static constexpr std::array<Operand<Args>, 8> kOperands{{
      unpermute_operand("permutedTokens", &Args::X, true, {Dim::R, Dim::H}, DType::f32),
      unpermute_operand("sortedIndices", &Args::S, true, {Dim::R}, DType::i32),
      unpermute_operand("routingMapOptional", &Args::M, false, {Dim::T, Dim::E}, DType::i8),
      unpermute_operand("probsOptional", &Args::P, false, {Dim::T, Dim::E}, DType::f32),
      unpermute_operand("unpermutedTokens", &Args::Y, true, {Dim::T, Dim::H}, DType::f32),
      unpermute_operand("outIndex", &Args::O, false, {Dim::R}, DType::i32),
      unpermute_operand("permuteTokenId", &Args::I, false, {Dim::R}, DType::i32),
      unpermute_operand("permuteProbs", &Args::PP, false, {Dim::R}, DType::f32),
  }};

  static Plan plan(const Desc &d, const PlanOptions &o) { return plan_unpermute(d, o); }
  static void set_valid_attributes(Args &a, int64_t T, int64_t /*E*/, int64_t /*R*/, bool dp,
                                   int64_t H) {
    a.drop_and_pad = dp, a.restore_shape = std::vector<int64_t>{T, H};
  }
  static Desc to_desc(const Args &a) {
    return {.permuted_tokens = *a.X,
            .sorted_indices = *a.S,
            .routing_map = a.M,
            .probs = a.P,
            .padded_mode = a.drop_and_pad,
            .restore_shape = a.restore_shape,
            .unpermuted_tokens = *a.Y,
            .out_index = a.O,
            .permute_token_id = a.I,
            .permute_probs = a.PP};
  }
  static int32_t first_phase(const Handles<UnpermuteOp> &t, const Args &a, uint64_t *ws,
                             aclOpExecutor **exec) {
    const IntArrayArg restore(a.restore_shape);
    return aclnnMoeTokenUnpermuteWithRoutingMapGetWorkspaceSize(
        t[0], t[1], t[2], t[3], a.drop_and_pad, restore.handle, t[4], t[5], t[6], t[7], ws, exec);
  }
  static int32_t second_phase(void *ws, uint64_t size, aclOpExecutor *exec, aclrtStream stream) {
    return aclnnMoeTokenUnpermuteWithRoutingMap(ws, size, exec, stream);
  }
};

struct UnpermuteGradOp {
  using Args = UnpermuteGradArgs;
  using Desc = UnpermuteGradDesc;
  using Data = UnpermuteGradData;
  static constexpr Operator op = Operator::unpermute_grad;
  static constexpr std::array<Operand<Args>, 8> kOperands{{
      unpermute_operand("unpermutedTokensGrad", &Args::G, true, {Dim::T, Dim::H}, DType::f32),
      unpermute_operand("outIndex", &Args::O, true, {Dim::R}, DType::i32),
      unpermute_operand("permuteTokenId", &Args::I, true, {Dim::R}, DType::i32),
      unpermute_operand("routingMapOptional", &Args::M, false, {Dim::T, Dim::E}, DType::i8),
      unpermute_operand("permutedTokensOptional", &Args::X, false, {Dim::R, Dim::H}, DType::f32),
      unpermute_operand("probsOptional", &Args::P, false, {Dim::T, Dim::E}, DType::f32),
      unpermute_operand("permutedTokensGradOut", &Args::DX, true, {Dim::R, Dim::H}, DType::f32),
      unpermute_operand("probsGradOutOptional", &Args::PG, false, {Dim::T, Dim::E}, DType::f32),
  }};

  static Plan plan(const Desc &d, const PlanOptions &o) { return plan_unpermute_grad(d, o); }
  static void set_valid_attributes(Args &a, int64_t T, int64_t /*E*/, int64_t /*R*/, bool dp,
                                   int64_t H) {
    a.drop_and_pad = dp, a.restore_shape = std::vector<int64_t>{T, H};
  }
  static Desc to_desc(const Args &a) {
    return {.unpermuted_tokens_grad = *a.G,
            .out_index = *a.O,
            .permute_token_id = *a.I,
            .routing_map = a.M,
            .permuted_tokens = a.X,
            .probs = a.P,
            .drop_and_pad = a.drop_and_pad,
            .restore_shape = a.restore_shape,
            .permuted_tokens_grad_out = *a.DX,
            .probs_grad_out = a.PG};
  }
  static int32_t first_phase(const Handles<UnpermuteGradOp> &t, const Args &a, uint64_t *ws,
                             aclOpExecutor **exec) {
    const IntArrayArg restore(a.restore_shape);
    return aclnnMoeTokenUnpermuteWithRoutingMapGradGetWorkspaceSize(
        t[0], t[1], t[2], t[3], t[4], t[5], a.drop_and_pad, restore.handle, t[6], t[7], ws, exec);
  }
  static int32_t second_phase(void *ws, uint64_t size, aclOpExecutor *exec, aclrtStream stream) {
    return aclnnMoeTokenUnpermuteWithRoutingMapGrad(ws, size, exec, stream);
  }
};

}  // namespace moeperm::testing
