// The SPEC-unpermute U4 table of aclnnMoeTokenUnpermuteWithRoutingMap (forward rules 1-5, in
// U4's order; rule 6, the index values, is data-dependent: errors_index). See rule_tables.hpp.
// Valid arguments: T=4, E=3, H=5, R=8 drop-less (K=2) / 6 drop-and-pad (C=2), every optional
// tensor given, restoreShape {4, 5}.
#include "rule_tables.hpp"

namespace moeperm::testing {
namespace {

constexpr int32_t kNull = 161001, kInvalid = 161002, kTopK = 561103;

// What a row touches (rule_tables.hpp: two rows with disjoint sets combine).
enum : uint32_t {
  kX = 1u << 0,
  kS = 1u << 1,
  kM = 1u << 2,
  kP = 1u << 3,
  kY = 1u << 4,
  kO = 1u << 5,
  kI = 1u << 6,
  kPP = 1u << 7,
  kRS = 1u << 8,
};
constexpr uint32_t kRows = kX | kS | kO | kI | kPP;  // every [R]-shaped operand

// Every [R]-shaped operand with n rows.
void set_rows(UnpermuteArgs &a, int64_t n) {
  a.X = dense(DType::f32, {n, kH});
  a.S = dense(DType::i32, {n});
  a.O = dense(DType::i32, {n});
  a.I = dense(DType::i32, {n});
  a.PP = dense(DType::f32, {n});
}

std::vector<UnpermuteRow> make_rows() {
  using A = UnpermuteArgs;
  const std::string api = "aclnnMoeTokenUnpermuteWithRoutingMap: ";
  const auto B = Modes::both, DL = Modes::dropless, DP = Modes::drop_and_pad;
  // clang-format off
  return {
    // 1. required tensors; probs or restoreShape; [moeperm] drop-less probs need the map
    {"r1_X_null", 1, B, kX, [](A &a) { a.X.reset(); }, kNull,
     {api + "permutedTokens must not be null"}},
    {"r1_S_null", 1, B, kS, [](A &a) { a.S.reset(); }, kNull,
     {api + "sortedIndices must not be null"}},
    {"r1_unpermutedTokens_null", 1, B, kY, [](A &a) { a.Y.reset(); }, kNull,
     {api + "unpermutedTokens must not be null"}},
    {"r1_probs_and_restoreShape_null", 1, B, kP | kRS | kPP,
     [](A &a) { a.P.reset(); a.restore_shape.reset(); }, kNull,
     {api + "probsOptional and restoreShapeOptional must not both be null"}},
    {"r1_probs_without_map", 1, DL, kM | kP, [](A &a) { a.M.reset(); }, kNull,
     {api + "routingMapOptional must not be null when probsOptional is given (paddedMode=false)"}},

    // 2. dtypes: X, S, P, unpermutedTokens, outIndex, permuteTokenId, permuteProbs, M
    {"r2_X_int32", 2, B, kX | kY | kP, [](A &a) { a.X->dtype = DType::i32; }, kInvalid,
     {api + "permutedTokens must have dtype bfloat16, float16 or float32, got int32"}},
    {"r2_S_int64", 2, B, kS, [](A &a) { a.S->dtype = DType::i64; }, kInvalid,
     {api + "sortedIndices must have dtype int32, got int64"}},
    {"r2_P_f16_with_X_f32", 2, B, kP | kX | kPP, [](A &a) { a.P->dtype = DType::f16; }, kInvalid,
     {api + "probsOptional must have dtype float32", "got float16"}},
    {"r2_P_f32_with_X_f16", 2, B, kP | kX | kY,
     [](A &a) { a.X->dtype = a.Y->dtype = DType::f16; }, kInvalid,
     {api + "probsOptional must have dtype float16", "got float32"}},
    {"r2_unpermutedTokens_not_dtype_of_X", 2, B, kY | kX, [](A &a) { a.Y->dtype = DType::bf16; },
     kInvalid, {api + "unpermutedTokens must have dtype float32", "got bfloat16"}},
    {"r2_outIndex_int64", 2, B, kO, [](A &a) { a.O->dtype = DType::i64; }, kInvalid,
     {api + "outIndex must have dtype int32, got int64"}},
    {"r2_permuteTokenId_float32", 2, B, kI, [](A &a) { a.I->dtype = DType::f32; }, kInvalid,
     {api + "permuteTokenId must have dtype int32, got float32"}},
    {"r2_permuteProbs_not_dtype_of_P", 2, B, kPP | kP, [](A &a) { a.PP->dtype = DType::bf16; },
     kInvalid, {api + "permuteProbs must have dtype float32", "got bfloat16"}},
    {"r2_permuteProbs_without_P_int32", 2, B, kPP | kP | kM,
     [](A &a) { a.P.reset(); a.PP->dtype = DType::i32; }, kInvalid,
     {api + "permuteProbs must have dtype", "got int32"}},
    {"r2_M_float32", 2, B, kM, [](A &a) { a.M->dtype = DType::f32; }, kInvalid,
     {api + "routingMapOptional must have dtype int8 or bool, got float32"}},

    // 3. ranks: X, S, unpermutedTokens, P, restoreShape
    {"r3_X_1d", 3, B, kX, [](A &a) { a.X = dense(DType::f32, {rows_for(a.drop_and_pad) * kH}); },
     kInvalid, {api + "permutedTokens: expected 2-D, got 1-D ["}},
    {"r3_S_2d", 3, B, kS, [](A &a) { a.S = dense(DType::i32, {rows_for(a.drop_and_pad), 1}); },
     kInvalid, {api + "sortedIndices: expected 1-D, got 2-D ["}},
    {"r3_unpermutedTokens_3d", 3, B, kY, [](A &a) { a.Y = dense(DType::f32, {kT, kH, 1}); },
     kInvalid, {api + "unpermutedTokens: expected 2-D, got 3-D [4, 5, 1]"}},
    {"r3_P_1d", 3, B, kP, [](A &a) { a.P = dense(DType::f32, {kT * kE}); }, kInvalid,
     {api + "probsOptional: expected 2-D, got 1-D [12]"}},
    {"r3_restoreShape_3_values", 3, B, kRS,
     [](A &a) { a.restore_shape = std::vector<int64_t>{kT, kH, 1}; }, kInvalid,
     {api + "restoreShapeOptional must have 2 values, got 3 [4, 5, 1]"}},

    // 4. CANN's limit: drop-less K = R / T > 512
    {"r4_topK_513", 4, DL, kRows, [](A &a) { set_rows(a, 513 * kT); }, kTopK,
     {api + "topK = 513 exceeds the supported maximum of 512"}},

    // 5. consistent shapes, then the views
    {"r5_rows_not_divisible_by_T", 5, DL, kRows, [](A &a) { set_rows(a, 9); }, kInvalid,
     {api + "permutedTokens has 9 rows, which is not divisible by T=4"}},
    {"r5_rows_not_divisible_by_E", 5, DP, kRows, [](A &a) { set_rows(a, 7); }, kInvalid,
     {api + "permutedTokens has 7 rows, which is not divisible by E=3"}},
    {"r5_restoreShape_hidden", 5, B, kRS,
     [](A &a) { a.restore_shape = std::vector<int64_t>{kT, kH + 1}; }, kInvalid,
     {api + "restoreShapeOptional is [4, 6], expected [4, 5]"}},
    {"r5_unpermutedTokens_shape", 5, B, kY, [](A &a) { a.Y = dense(DType::f32, {kT, 6}); },
     kInvalid, {api + "unpermutedTokens has shape [4, 6], expected [4, 5]"}},
    {"r5_S_length", 5, B, kS, [](A &a) { a.S = dense(DType::i32, {3}); }, kInvalid,
     {api + "sortedIndices has length 3, expected "}},
    {"r5_M_shape", 5, B, kM, [](A &a) { a.M = dense(DType::i8, {kT, 4}); }, kInvalid,
     {api + "routingMapOptional has shape [4, 4], expected [4, 3]"}},
    {"r5_outIndex_length", 5, B, kO, [](A &a) { a.O = dense(DType::i32, {3}); }, kInvalid,
     {api + "outIndex has length 3, expected "}},
    {"r5_permuteTokenId_length", 5, B, kI, [](A &a) { a.I = dense(DType::i32, {3}); }, kInvalid,
     {api + "permuteTokenId has length 3, expected "}},
    {"r5_permuteProbs_length", 5, B, kPP, [](A &a) { a.PP = dense(DType::f32, {3}); }, kInvalid,
     {api + "permuteProbs has length 3, expected "}},
    {"r5_X_outside_storage", 5, B, kX, [](A &a) { a.X->storage_elements = 7; }, kInvalid,
     {api + "permutedTokens: shape [", "outside its storage of 7 elements"}},
    {"r5_unpermutedTokens_overlapping", 5, B, kY, [](A &a) { a.Y->strides = {1, 1}; }, kInvalid,
     {api + "unpermutedTokens: output with shape [4, 5] and strides [1, 1] writes some elements "
            "more than once"}},
    {"r5_outIndex_overlapping", 5, B, kO, [](A &a) { a.O->strides = {0}; }, kInvalid,
     {api + "outIndex: output with shape [", "writes some elements more than once"}},
  };
  // clang-format on
}

}  // namespace

const std::vector<UnpermuteRow> &unpermute_rule_rows() {
  static const std::vector<UnpermuteRow> rows = make_rows();
  return rows;
}

}  // namespace moeperm::testing
