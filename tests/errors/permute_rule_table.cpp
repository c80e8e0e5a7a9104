// The validation table of aclnnMoeTokenPermuteWithRoutingMap (see rule_tables.hpp).
// Valid arguments: T=4, E=3, H=5, numOutTokens = R = 8 drop-less (K=2) / 6 drop-and-pad (C=2).
#include "rule_tables.hpp"

namespace moeperm::testing {
namespace {

constexpr int32_t kNull = 161001, kInvalid = 161002, kTopK = 561103;
constexpr int64_t kHuge = int64_t{1} << 61;  // R * kHuge overflows int64, kHuge does not
// R * kBytesHuge and T * kBytesHuge fit in int64, but not as bytes (8-byte elements).
constexpr int64_t kBytesHuge = int64_t{1} << 58;

int64_t rows(const PermuteArgs &a) { return rows_for(a.drop_and_pad); }

std::vector<PermuteRow> make_rows() {
  using A = PermuteArgs;
  const std::string api = "aclnnMoeTokenPermuteWithRoutingMap: ";
  const auto B = Modes::both, DL = Modes::dropless, DP = Modes::drop_and_pad;
  // One row per entry, fields in RuleRow order.
  // clang-format off
  return {
    // 1. attributes
    {"r1_numOutTokens_negative", 1, B, kAttr, [](A &a) { a.num_out_tokens = -1; }, kInvalid,
     {api + "numOutTokens must be >= 0, got -1"}},

    // 2. required tensors
    {"r2_tokens_null", 2, B, kOpG, [](A &a) { a.X.reset(); }, kNull,
     {api + "tokens must not be null"}},
    {"r2_routingMap_null", 2, B, kOpM, [](A &a) { a.M.reset(); }, kNull,
     {api + "routingMap must not be null"}},
    {"r2_permuteTokensOut_null", 2, B, kOpTG, [](A &a) { a.Y.reset(); }, kNull,
     {api + "permuteTokensOut must not be null"}},
    {"r2_sortedIndicesOut_null", 2, B, kOpS, [](A &a) { a.S.reset(); }, kNull,
     {api + "sortedIndicesOut must not be null"}},
    {"r2_probs_without_permuteProbsOut", 2, B, kOpP | kOpPG, [](A &a) { a.YP.reset(); }, kNull,
     {api + "permuteProbsOutOptional must not be null when probsOptional is given"}},

    // 3. dtypes: tokens, routingMap, probs, permuteTokensOut, permuteProbsOut, sortedIndicesOut
    {"r3_tokens_int32", 3, B, kOpG, [](A &a) { a.X->dtype = DType::i32; }, kInvalid,
     {api + "tokens must have dtype bfloat16, float16 or float32, got int32"}},
    {"r3_routingMap_float32", 3, B, kOpM, [](A &a) { a.M->dtype = DType::f32; }, kInvalid,
     {api + "routingMap must have dtype int8 or bool, got float32"}},
    {"r3_routingMap_int32", 3, B, kOpM, [](A &a) { a.M->dtype = DType::i32; }, kInvalid,
     {api + "routingMap must have dtype int8 or bool, got int32"}},
    {"r3_probs_f16_with_tokens_f32", 3, B, kOpP | kOpG, [](A &a) { a.PR->dtype = DType::f16; },
     kInvalid, {api + "probsOptional must have dtype float32 (to match tokens), got float16"}},
    {"r3_probs_f32_with_tokens_f16", 3, B, kOpP | kOpG | kOpTG,
     [](A &a) { a.X->dtype = a.Y->dtype = DType::f16; }, kInvalid,
     {api + "probsOptional must have dtype float16 (to match tokens), got float32"}},
    {"r3_permuteTokensOut_not_dtype_of_tokens", 3, B, kOpTG | kOpG,
     [](A &a) { a.Y->dtype = DType::bf16; }, kInvalid,
     {api + "permuteTokensOut must have dtype float32 (the dtype of tokens), got bfloat16"}},
    {"r3_permuteProbsOut_not_dtype_of_probs", 3, B, kOpPG | kOpP,
     [](A &a) { a.YP->dtype = DType::f16; }, kInvalid,
     {api + "permuteProbsOutOptional must have dtype float32 (the dtype of probsOptional), "
            "got float16"}},
    {"r3_permuteProbsOut_without_probs_int8", 3, B, kOpPG | kOpP | kOpG,
     [](A &a) { a.PR.reset(); a.YP->dtype = DType::i8; }, kInvalid,
     {api + "permuteProbsOutOptional must have dtype float32 (to match tokens), got int8"}},
    {"r3_sortedIndicesOut_int64", 3, B, kOpS, [](A &a) { a.S->dtype = DType::i64; }, kInvalid,
     {api + "sortedIndicesOut must have dtype int32, got int64"}},

    // 4. ranks
    {"r4_tokens_1d", 4, B, kOpG, [](A &a) { a.X = dense(DType::f32, {kT * kH}); }, kInvalid,
     {api + "tokens: expected 2-D, got 1-D [20]"}},
    {"r4_routingMap_3d", 4, B, kOpM, [](A &a) { a.M = dense(DType::i8, {kT, kE, 1}); }, kInvalid,
     {api + "routingMap: expected 2-D, got 3-D [4, 3, 1]"}},
    {"r4_probs_1d", 4, B, kOpP, [](A &a) { a.PR = dense(DType::f32, {kT * kE}); }, kInvalid,
     {api + "probsOptional: expected 2-D, got 1-D [12]"}},
    {"r4_permuteTokensOut_1d", 4, B, kOpTG, [](A &a) { a.Y = dense(DType::f32, {rows(a) * kH}); },
     kInvalid, {api + "permuteTokensOut: expected 2-D, got 1-D ["}},
    {"r4_permuteProbsOut_2d", 4, B, kOpPG, [](A &a) { a.YP = dense(DType::f32, {rows(a), 1}); },
     kInvalid, {api + "permuteProbsOutOptional: expected 1-D, got 2-D ["}},
    {"r4_sortedIndicesOut_2d", 4, B, kOpS, [](A &a) { a.S = dense(DType::i32, {rows(a), 1}); },
     kInvalid, {api + "sortedIndicesOut: expected 1-D, got 2-D ["}},

    // 6, checked before 5 because K needs T: dimensions of tokens and routingMap
    {"r6_tokens_negative_dims", 6, B, kOpG, [](A &a) { a.X = dense(DType::f32, {-4, kH}); },
     kInvalid, {api + "tokens: dimensions must be >= 0, got [-4, 5]"}},
    {"r6_routingMap_negative_dims", 6, B, kOpM, [](A &a) { a.M = dense(DType::i8, {kT, -3}); },
     kInvalid, {api + "routingMap: dimensions must be >= 0, got [4, -3]"}},

    // 5. CANN's tiling limit
    {"r5_topK_513", 5, DL, kAttr | kOpTG | kOpPG | kOpS,
     [](A &a) {
       a.num_out_tokens = 513 * kT;
       a.Y = dense(DType::f32, {513 * kT, kH});
       a.YP = dense(DType::f32, {513 * kT});
       a.S = dense(DType::i32, {513 * kT});
     },
     kTopK, {api + "topK = 513 exceeds the supported maximum of 512 for dropAndPad=false"}},

    // 6. consistent shapes, then each view
    {"r6_routingMap_rows", 6, B, kOpM, [](A &a) { a.M = dense(DType::i8, {5, kE}); }, kInvalid,
     {api + "routingMap has shape [5, 3], expected [4, numExperts]"}},
    {"r6_probs_shape", 6, B, kOpP | kOpM, [](A &a) { a.PR = dense(DType::f32, {kT, 4}); },
     kInvalid, {api + "probsOptional has shape [4, 4], expected [4, 3]"}},
    {"r6_dropAndPad_zero_experts", 6, DP, kOpM | kOpP,
     [](A &a) { a.M = dense(DType::i8, {kT, 0}); a.PR = dense(DType::f32, {kT, 0}); }, kInvalid,
     {api + "routingMap has 0 experts (columns); dropAndPad=true needs at least one"}},
    {"r6_capacity_exceeds_tokens", 6, DP, kAttr | kOpTG | kOpPG | kOpS,
     [](A &a) {
       a.num_out_tokens = 15;
       a.Y = dense(DType::f32, {15, kH});
       a.YP = dense(DType::f32, {15});
       a.S = dense(DType::i32, {15});
     },
     kInvalid,
     {api + "capacity = numOutTokens / numExperts = 15 / 3 = 5 exceeds the 4 tokens an expert "
            "can be given"}},
    {"r6_sizes_overflow", 6, B, kOpG | kOpTG,
     [](A &a) {
       a.X = dense(DType::f32, {kT, kHuge});
       a.Y = dense(DType::f32, {rows(a), kHuge});
     },
     kInvalid, {api + "sizes overflow int64: R="}},
    {"r6_sizes_overflow_in_bytes", 6, B, kOpG | kOpTG,
     [](A &a) {
       a.X = dense(DType::f32, {kT, kBytesHuge});
       a.Y = dense(DType::f32, {rows(a), kBytesHuge});
     },
     kInvalid, {api + "sizes overflow int64: R=", "(tensor sizes in bytes must fit in int64)"}},
    {"r6_permuteTokensOut_columns_dropless", 6, DL, kOpTG | kOpG,
     [](A &a) { a.Y = dense(DType::f32, {8, 6}); }, kInvalid,
     {api + "permuteTokensOut has shape [8, 6], expected [8, 5] (tokens * topK = 4 * 2, topK = "
            "numOutTokens / tokens)"}},
    {"r6_permuteTokensOut_columns_drop_and_pad", 6, DP, kOpTG | kOpG,
     [](A &a) { a.Y = dense(DType::f32, {6, 6}); }, kInvalid,
     {api + "permuteTokensOut has shape [6, 6], expected [6, 5] (numExperts * capacity = 3 * 2)"}},
    {"r6_permuteTokensOut_rows", 6, B, kOpTG | kAttr,
     [](A &a) { a.Y = dense(DType::f32, {3, kH}); }, kInvalid,
     {api + "permuteTokensOut has shape [3, 5], expected ["}},
    {"r6_permuteProbsOut_length", 6, B, kOpPG | kAttr, [](A &a) { a.YP = dense(DType::f32, {3}); },
     kInvalid, {api + "permuteProbsOutOptional has length 3, expected "}},
    {"r6_sortedIndicesOut_length", 6, B, kOpS | kAttr, [](A &a) { a.S = dense(DType::i32, {3}); },
     kInvalid, {api + "sortedIndicesOut has length 3, expected "}},
    {"r6_tokens_outside_storage", 6, B, kOpG, [](A &a) { a.X->storage_elements = 19; }, kInvalid,
     {api + "tokens: shape [4, 5] with strides [5, 1] and offset 0 reaches element 19, outside "
            "its storage of 19 elements"}},
    {"r6_routingMap_negative_offset", 6, B, kOpM, [](A &a) { a.M->offset = -2; }, kInvalid,
     {api + "routingMap storage offset must be >= 0, got -2"}},
    {"r6_probs_outside_storage", 6, B, kOpP, [](A &a) { a.PR->offset = 1; }, kInvalid,
     {api + "probsOptional: shape [4, 3] with strides [3, 1] and offset 1 reaches element 12, "
            "outside its storage of 12 elements"}},
    {"r6_permuteTokensOut_overlapping", 6, B, kOpTG, [](A &a) { a.Y->strides = {1, 1}; },
     kInvalid,
     {api + "permuteTokensOut: output with shape [",
      "and strides [1, 1] writes some elements more than once"}},
    {"r6_permuteProbsOut_zero_stride", 6, B, kOpPG, [](A &a) { a.YP->strides = {0}; }, kInvalid,
     {api + "permuteProbsOutOptional: output with shape [",
      "and strides [0] writes some elements more than once"}},
    {"r6_sortedIndicesOut_outside_storage", 6, B, kOpS, [](A &a) { a.S->storage_elements = 2; },
     kInvalid, {api + "sortedIndicesOut: shape [", "outside its storage of 2 elements"}},
  };
  // clang-format on
}

}  // namespace

const std::vector<PermuteRow> &permute_rule_rows() {
  static const std::vector<PermuteRow> rows = make_rows();
  return rows;
}

}  // namespace moeperm::testing
