// The SPEC-unpermute U4 table of aclnnMoeTokenUnpermuteWithRoutingMapGrad (Grad rules 1-4,
// in U4's order; rule 5, the index values, is data-dependent: errors_index). See
// rule_tables.hpp. Valid arguments: T=4, E=3, H=5, R=8 drop-less (K=2) / 6 drop-and-pad
// (C=2), every optional tensor given.
#include "rule_tables.hpp"

namespace moeperm::testing {
namespace {

constexpr int32_t kNull = 161001, kInvalid = 161002, kTiling = 561002;

enum : uint32_t {
  kG = 1u << 0,
  kO = 1u << 1,
  kI = 1u << 2,
  kM = 1u << 3,
  kX = 1u << 4,
  kP = 1u << 5,
  kDX = 1u << 6,
  kPG = 1u << 7,
};
constexpr uint32_t kRows = kO | kI | kX | kDX;  // every [R]-shaped operand

void set_rows(UnpermuteGradArgs &a, int64_t n) {
  a.O = dense(DType::i32, {n});
  a.I = dense(DType::i32, {n});
  a.X = dense(DType::f32, {n, kH});
  a.DX = dense(DType::f32, {n, kH});
}

std::vector<UnpermuteGradRow> make_rows() {
  using A = UnpermuteGradArgs;
  const std::string api = "aclnnMoeTokenUnpermuteWithRoutingMapGrad: ";
  const auto B = Modes::both, DL = Modes::dropless, DP = Modes::drop_and_pad;
  // clang-format off
  return {
    // 1. required tensors; probs need the map; [moeperm] dP needs X
    {"r1_G_null", 1, B, kG, [](A &a) { a.G.reset(); }, kNull,
     {api + "unpermutedTokensGrad must not be null"}},
    {"r1_outIndex_null", 1, B, kO, [](A &a) { a.O.reset(); }, kNull,
     {api + "outIndex must not be null"}},
    {"r1_permuteTokenId_null", 1, B, kI, [](A &a) { a.I.reset(); }, kNull,
     {api + "permuteTokenId must not be null"}},
    {"r1_permutedTokensGradOut_null", 1, B, kDX, [](A &a) { a.DX.reset(); }, kNull,
     {api + "permutedTokensGradOut must not be null"}},
    {"r1_probs_without_map", 1, B, kM | kP, [](A &a) { a.M.reset(); }, kNull,
     {api + "routingMapOptional must not be null when probsOptional is given"}},
    {"r1_probsGradOut_without_X", 1, B, kX | kP | kPG, [](A &a) { a.X.reset(); }, kNull,
     {api + "permutedTokensOptional must not be null when probsGradOutOptional and "
            "probsOptional are given"}},

    // 2. dtypes: G, dX, O, I, M, P, probsGradOut, X
    {"r2_G_int32", 2, B, kG | kDX | kX | kP, [](A &a) { a.G->dtype = DType::i32; }, kInvalid,
     {api + "unpermutedTokensGrad must have dtype bfloat16, float16 or float32, got int32"}},
    {"r2_permutedTokensGradOut_not_dtype_of_G", 2, B, kDX | kG,
     [](A &a) { a.DX->dtype = DType::f16; }, kInvalid,
     {api + "permutedTokensGradOut must have dtype float32", "got float16"}},
    {"r2_outIndex_int64", 2, B, kO, [](A &a) { a.O->dtype = DType::i64; }, kInvalid,
     {api + "outIndex must have dtype int32, got int64"}},
    {"r2_permuteTokenId_int8", 2, B, kI, [](A &a) { a.I->dtype = DType::i8; }, kInvalid,
     {api + "permuteTokenId must have dtype int32, got int8"}},
    {"r2_M_uint8", 2, B, kM, [](A &a) { a.M->dtype = DType::u8; }, kInvalid,
     {api + "routingMapOptional must have dtype int8 or bool, got uint8"}},
    {"r2_P_f16_with_G_f32", 2, B, kP | kG | kPG, [](A &a) { a.P->dtype = DType::f16; }, kInvalid,
     {api + "probsOptional must have dtype float32", "got float16"}},
    {"r2_probsGradOut_not_dtype_of_P", 2, B, kPG | kP, [](A &a) { a.PG->dtype = DType::bf16; },
     kInvalid, {api + "probsGradOutOptional must have dtype float32", "got bfloat16"}},
    {"r2_X_not_dtype_of_G", 2, B, kX | kG, [](A &a) { a.X->dtype = DType::bf16; }, kInvalid,
     {api + "permutedTokensOptional must have dtype float32", "got bfloat16"}},

    // 3. CANN's tiling rejections (561002): ranks, index lengths, and with probs the limits
    {"r3_G_1d", 3, B, kG, [](A &a) { a.G = dense(DType::f32, {kT * kH}); }, kTiling,
     {api + "unpermutedTokensGrad: expected 2-D, got 1-D [20]"}},
    {"r3_outIndex_2d", 3, B, kO, [](A &a) { a.O = dense(DType::i32, {rows_for(a.drop_and_pad), 1}); },
     kTiling, {api + "outIndex: expected 1-D, got 2-D ["}},
    {"r3_permuteTokenId_2d", 3, B, kI,
     [](A &a) { a.I = dense(DType::i32, {rows_for(a.drop_and_pad), 1}); }, kTiling,
     {api + "permuteTokenId: expected 1-D, got 2-D ["}},
    {"r3_M_1d", 3, B, kM, [](A &a) { a.M = dense(DType::i8, {kT * kE}); }, kTiling,
     {api + "routingMapOptional: expected 2-D, got 1-D [12]"}},
    {"r3_X_3d", 3, B, kX, [](A &a) { a.X = dense(DType::f32, {rows_for(a.drop_and_pad), kH, 1}); },
     kTiling, {api + "permutedTokensOptional: expected 2-D, got 3-D ["}},
    {"r3_P_1d", 3, B, kP, [](A &a) { a.P = dense(DType::f32, {kT * kE}); }, kTiling,
     {api + "probsOptional: expected 2-D, got 1-D [12]"}},
    {"r3_index_lengths_differ", 3, B, kI, [](A &a) { a.I = dense(DType::i32, {3}); }, kTiling,
     {api + "outIndex and permuteTokenId must have the same length, got ", " and 3"}},
    {"r3_topK_513", 3, DL, kRows, [](A &a) { set_rows(a, 513 * kT); }, kTiling,
     {api + "topK = 513 exceeds"}},
    {"r3_topK_above_experts", 3, DL, kRows, [](A &a) { set_rows(a, 4 * kT); }, kTiling,
     {api + "topK = 4 exceeds", "experts"}},
    {"r3_capacity_above_tokens", 3, DP, kRows, [](A &a) { set_rows(a, 5 * kE); }, kTiling,
     {api + "capacity = 5 exceeds", "tokens"}},

    // 4. consistent shapes, then the views
    {"r4_rows_not_divisible_by_T", 4, DL, kRows, [](A &a) { set_rows(a, 9); }, kInvalid,
     {api + "outIndex has 9 entries, which is not divisible by T=4"}},
    {"r4_rows_not_divisible_by_E", 4, DP, kRows, [](A &a) { set_rows(a, 7); }, kInvalid,
     {api + "outIndex has 7 entries, which is not divisible by E=3"}},
    {"r4_permutedTokensGradOut_shape", 4, B, kDX,
     [](A &a) { a.DX = dense(DType::f32, {rows_for(a.drop_and_pad), 6}); }, kInvalid,
     {api + "permutedTokensGradOut has shape [", ", 6], expected ["}},
    {"r4_X_shape", 4, B, kX, [](A &a) { a.X = dense(DType::f32, {rows_for(a.drop_and_pad), 4}); },
     kInvalid, {api + "permutedTokensOptional has shape [", ", 4], expected ["}},
    {"r4_M_shape", 4, B, kM, [](A &a) { a.M = dense(DType::i8, {kT + 1, kE}); }, kInvalid,
     {api + "routingMapOptional has shape [5, 3], expected [4, 3]"}},
    // (E comes from P, so P's rows are what can disagree with G's T.)
    {"r4_P_shape", 4, B, kP, [](A &a) { a.P = dense(DType::f32, {kT + 1, kE}); }, kInvalid,
     {api + "probsOptional has shape [5, 3], expected [4, 3]"}},
    {"r4_probsGradOut_shape", 4, B, kPG, [](A &a) { a.PG = dense(DType::f32, {kT, 2}); },
     kInvalid, {api + "probsGradOutOptional has shape [4, 2], expected [4, 3]"}},
    {"r4_G_outside_storage", 4, B, kG, [](A &a) { a.G->storage_elements = 19; }, kInvalid,
     {api + "unpermutedTokensGrad: shape [4, 5]", "outside its storage of 19 elements"}},
    {"r4_permutedTokensGradOut_overlapping", 4, B, kDX, [](A &a) { a.DX->strides = {1, 1}; },
     kInvalid,
     {api + "permutedTokensGradOut: output with shape [", "writes some elements more than once"}},
  };
  // clang-format on
}

}  // namespace

const std::vector<UnpermuteGradRow> &unpermute_grad_rule_rows() {
  static const std::vector<UnpermuteGradRow> rows = make_rows();
  return rows;
}

}  // namespace moeperm::testing
