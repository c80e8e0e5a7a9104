// The SPEC §5 table of aclnnMoeTokenPermuteWithRoutingMapGrad (see rule_tables.hpp).
// Valid arguments: T=4, E=3, H=5, R=8 drop-less (K=2) / 6 drop-and-pad (C=2).
#include "rule_tables.hpp"

namespace moeperm::testing {
namespace {

constexpr int32_t kNull = 161001, kInvalid = 161002, kTopK = 561103;
constexpr int64_t kHuge = int64_t{1} << 61;  // R * kHuge overflows int64, kHuge does not
// R * kBytesHuge and T * kBytesHuge fit in int64, but not as bytes (8-byte elements).
constexpr int64_t kBytesHuge = int64_t{1} << 58;

int64_t rows(const GradArgs &a) { return rows_for(a.drop_and_pad); }

std::vector<GradRow> make_rows() {
  using A = GradArgs;
  const std::string api = "aclnnMoeTokenPermuteWithRoutingMapGrad: ";
  const auto B = Modes::both, DL = Modes::dropless, DP = Modes::drop_and_pad;
  // One row per entry, fields in RuleRow order.
  // clang-format off
  return {
    // 1. attributes
    {"r1_numExperts_zero", 1, B, kAttr, [](A &a) { a.num_experts = 0; }, kInvalid,
     {api + "numExperts must be > 0, got 0"}},
    {"r1_numExperts_negative", 1, B, kAttr, [](A &a) { a.num_experts = -3; }, kInvalid,
     {api + "numExperts must be > 0, got -3"}},
    {"r1_tokensNum_zero", 1, B, kAttrT, [](A &a) { a.tokens_num = 0; }, kInvalid,
     {api + "tokensNum must be > 0, got 0"}},
    {"r1_tokensNum_negative", 1, B, kAttrT, [](A &a) { a.tokens_num = -1; }, kInvalid,
     {api + "tokensNum must be > 0, got -1"}},

    // 2. required tensors: G, S, tokensGradOut; M whenever P is given
    {"r2_G_null", 2, B, kOpG, [](A &a) { a.G.reset(); }, kNull,
     {api + "permutedTokenOutputGrad must not be null"}},
    {"r2_S_null", 2, B, kOpS, [](A &a) { a.S.reset(); }, kNull,
     {api + "sortedIndices must not be null"}},
    {"r2_tokensGradOut_null", 2, B, kOpTG, [](A &a) { a.TG.reset(); }, kNull,
     {api + "tokensGradOut must not be null"}},
    {"r2_P_without_M", 2, B, kOpM | kOpP, [](A &a) { a.M.reset(); }, kNull,
     {api + "routingMapOptional must not be null when permutedProbsOutputGradOptional is given"}},

    // 3. dtypes: G, tokensGradOut, P, probsGradOut, M, S
    {"r3_G_int32", 3, B, kOpG, [](A &a) { a.G->dtype = DType::i32; }, kInvalid,
     {api + "permutedTokenOutputGrad must have dtype bfloat16, float16 or float32, got int32"}},
    {"r3_G_float64", 3, B, kOpG, [](A &a) { a.G->dtype = DType::f64; }, kInvalid,
     {api + "permutedTokenOutputGrad must have dtype bfloat16, float16 or float32, got float64"}},
    {"r3_G_int16_not_a_moeperm_dtype", 3, B, kOpG,
     [](A &a) { a.G->dtype = static_cast<DType>(6); }, kInvalid,  // ACL_INT16
     {api + "permutedTokenOutputGrad must have dtype bfloat16, float16 or float32, got "}},
    {"r3_tokensGradOut_not_dtype_of_G", 3, B, kOpTG | kOpG,
     [](A &a) { a.TG->dtype = DType::f16; }, kInvalid,
     {api + "tokensGradOut must have dtype float32 (the dtype of permutedTokenOutputGrad), "
            "got float16"}},
    {"r3_P_f16_with_G_f32", 3, B, kOpP | kOpG, [](A &a) { a.P->dtype = DType::f16; }, kInvalid,
     {api + "permutedProbsOutputGradOptional must have dtype float32 (to match "
            "permutedTokenOutputGrad), got float16"}},
    {"r3_P_f32_with_G_f16", 3, B, kOpP | kOpG | kOpTG,
     [](A &a) { a.G->dtype = a.TG->dtype = DType::f16; }, kInvalid,
     {api + "permutedProbsOutputGradOptional must have dtype float16 (to match "
            "permutedTokenOutputGrad), got float32"}},
    {"r3_P_f16_with_G_bf16", 3, B, kOpP | kOpG | kOpTG | kOpPG,
     [](A &a) { a.G->dtype = a.TG->dtype = DType::bf16; a.P->dtype = a.PG->dtype = DType::f16; },
     kInvalid,
     {api + "permutedProbsOutputGradOptional must have dtype bfloat16 or float32 (to match "
            "permutedTokenOutputGrad), got float16"}},
    {"r3_P_int8", 3, B, kOpP | kOpG, [](A &a) { a.P->dtype = DType::i8; }, kInvalid,
     {api + "permutedProbsOutputGradOptional must have dtype float32", "got int8"}},
    {"r3_probsGradOut_not_dtype_of_P", 3, B, kOpPG | kOpP, [](A &a) { a.PG->dtype = DType::f16; },
     kInvalid,
     {api + "probsGradOutOptional must have dtype float32 (the dtype of "
            "permutedProbsOutputGradOptional), got float16"}},
    {"r3_probsGradOut_without_P_int32", 3, B, kOpPG | kOpP | kOpG,
     [](A &a) { a.P.reset(); a.PG->dtype = DType::i32; }, kInvalid,
     {api + "probsGradOutOptional must have dtype float32, got int32"}},
    {"r3_M_float32", 3, B, kOpM, [](A &a) { a.M->dtype = DType::f32; }, kInvalid,
     {api + "routingMapOptional must have dtype int8 or bool, got float32"}},
    {"r3_M_uint8", 3, B, kOpM, [](A &a) { a.M->dtype = DType::u8; }, kInvalid,
     {api + "routingMapOptional must have dtype int8 or bool, got uint8"}},
    {"r3_S_int64", 3, B, kOpS, [](A &a) { a.S->dtype = DType::i64; }, kInvalid,
     {api + "sortedIndices must have dtype int32, got int64"}},

    // 4. ranks: G, S, P, M, tokensGradOut, probsGradOut
    {"r4_G_1d", 4, B, kOpG, [](A &a) { a.G = dense(DType::f32, {rows(a) * kH}); }, kInvalid,
     {api + "permutedTokenOutputGrad: expected 2-D, got 1-D ["}},
    {"r4_G_3d", 4, B, kOpG, [](A &a) { a.G = dense(DType::f32, {rows(a), kH, 1}); }, kInvalid,
     {api + "permutedTokenOutputGrad: expected 2-D, got 3-D [", ", 5, 1]"}},
    {"r4_S_2d", 4, B, kOpS, [](A &a) { a.S = dense(DType::i32, {rows(a), 1}); }, kInvalid,
     {api + "sortedIndices: expected 1-D, got 2-D ["}},
    {"r4_S_0d", 4, B, kOpS, [](A &a) { a.S = dense(DType::i32, {}); }, kInvalid,
     {api + "sortedIndices: expected 1-D, got 0-D []"}},
    {"r4_P_2d", 4, B, kOpP, [](A &a) { a.P = dense(DType::f32, {rows(a), 1}); }, kInvalid,
     {api + "permutedProbsOutputGradOptional: expected 1-D, got 2-D ["}},
    {"r4_M_1d", 4, B, kOpM, [](A &a) { a.M = dense(DType::i8, {kT * kE}); }, kInvalid,
     {api + "routingMapOptional: expected 2-D, got 1-D [12]"}},
    {"r4_tokensGradOut_3d", 4, B, kOpTG, [](A &a) { a.TG = dense(DType::f32, {kT, kH, 1}); },
     kInvalid, {api + "tokensGradOut: expected 2-D, got 3-D [4, 5, 1]"}},
    {"r4_tokensGradOut_one_stride_for_2d", 4, B, kOpTG, [](A &a) { a.TG->strides = {kH}; },
     kInvalid, {api + "tokensGradOut: strides has 1 entries for a 2-D shape [4, 5]"}},
    {"r4_probsGradOut_1d", 4, B, kOpPG, [](A &a) { a.PG = dense(DType::f32, {kT * kE}); },
     kInvalid, {api + "probsGradOutOptional: expected 2-D, got 1-D [12]"}},

    // 5. CANN's tiling limit: drop-less K = R / T > 512
    {"r5_topK_513", 5, DL, kOpG | kOpS | kOpP,
     [](A &a) {
       a.G = dense(DType::f32, {513 * kT, kH});
       a.S = dense(DType::i32, {513 * kT});
       a.P = dense(DType::f32, {513 * kT});
     },
     kTopK, {api + "topK = 513 exceeds the supported maximum of 512 for dropAndPad=false"}},

    // 6. consistent shapes, in the order of the spec's list, then each view
    {"r6_G_negative_rows", 6, B, kOpG, [](A &a) { a.G = dense(DType::f32, {-8, kH}); }, kInvalid,
     {api + "permutedTokenOutputGrad: dimensions must be >= 0, got [-8, 5]"}},
    {"r6_rows_not_divisible_by_tokensNum", 6, DL, kOpG | kOpS | kOpP | kAttrT,
     [](A &a) {
       a.G = dense(DType::f32, {9, kH});
       a.S = dense(DType::i32, {9});
       a.P = dense(DType::f32, {9});
     },
     kInvalid,
     {api + "permutedTokenOutputGrad has 9 rows, which is not divisible by tokensNum=4 "
            "(dropAndPad=false"}},
    {"r6_rows_not_divisible_by_numExperts", 6, DP, kOpG | kOpS | kOpP | kAttr,
     [](A &a) {
       a.G = dense(DType::f32, {7, kH});
       a.S = dense(DType::i32, {7});
       a.P = dense(DType::f32, {7});
     },
     kInvalid,
     {api + "permutedTokenOutputGrad has 7 rows, which is not divisible by numExperts=3 "
            "(dropAndPad=true"}},
    {"r6_S_length", 6, B, kOpS, [](A &a) { a.S = dense(DType::i32, {3}); }, kInvalid,
     {api + "sortedIndices has length 3, expected "}},
    {"r6_P_length", 6, B, kOpP, [](A &a) { a.P = dense(DType::f32, {3}); }, kInvalid,
     {api + "permutedProbsOutputGradOptional has length 3, expected "}},
    {"r6_M_columns", 6, B, kOpM | kAttr, [](A &a) { a.M = dense(DType::i8, {kT, 4}); }, kInvalid,
     {api + "routingMapOptional has shape [4, 4], expected [4, 3]"}},
    {"r6_M_rows", 6, B, kOpM | kAttrT, [](A &a) { a.M = dense(DType::i8, {5, kE}); }, kInvalid,
     {api + "routingMapOptional has shape [5, 3], expected [4, 3]"}},
    {"r6_tokensGradOut_columns", 6, B, kOpTG, [](A &a) { a.TG = dense(DType::f32, {kT, 6}); },
     kInvalid, {api + "tokensGradOut has shape [4, 6], expected [4, 5]"}},
    {"r6_tokensGradOut_rows", 6, B, kOpTG | kAttrT, [](A &a) { a.TG = dense(DType::f32, {5, kH}); },
     kInvalid, {api + "tokensGradOut has shape [5, 5], expected [4, 5]"}},
    {"r6_probsGradOut_shape", 6, B, kOpPG | kAttr, [](A &a) { a.PG = dense(DType::f32, {kT, 2}); },
     kInvalid, {api + "probsGradOutOptional has shape [4, 2], expected [4, 3]"}},
    {"r6_sizes_overflow", 6, B, kOpG | kOpTG,
     [](A &a) {
       a.G = dense(DType::f32, {rows(a), kHuge});
       a.TG = dense(DType::f32, {kT, kHuge});
     },
     kInvalid, {api + "sizes overflow int64: R="}},
    {"r6_sizes_overflow_in_bytes", 6, B, kOpG | kOpTG,
     [](A &a) {
       a.G = dense(DType::f32, {rows(a), kBytesHuge});
       a.TG = dense(DType::f32, {kT, kBytesHuge});
     },
     kInvalid, {api + "sizes overflow int64: R=", "(tensor sizes in bytes must fit in int64)"}},
    {"r6_G_outside_storage", 6, B, kOpG, [](A &a) { a.G->storage_elements = 7; }, kInvalid,
     {api + "permutedTokenOutputGrad: shape [", "outside its storage of 7 elements"}},
    {"r6_G_extent_overflow", 6, B, kOpG,
     [](A &a) { a.G->strides = {kHuge * 2, 1}; a.G->storage_elements.reset(); }, kInvalid,
     {api + "permutedTokenOutputGrad: the extent of shape [", "overflows int64"}},
    {"r6_G_extent_overflow_in_bytes", 6, B, kOpG,
     [](A &a) { a.G->strides = {kHuge / 2, 1}; a.G->storage_elements.reset(); }, kInvalid,
     {api + "permutedTokenOutputGrad: the extent of shape [", "overflows int64 in bytes"}},
    {"r6_P_before_storage", 6, B, kOpP, [](A &a) { a.P->strides = {-1}; }, kInvalid,
     {api + "permutedProbsOutputGradOptional: shape [",
      "with strides [-1] and offset 0 reaches element -", "before the start of its storage"}},
    {"r6_S_negative_offset", 6, B, kOpS, [](A &a) { a.S->offset = -1; }, kInvalid,
     {api + "sortedIndices storage offset must be >= 0, got -1"}},
    {"r6_M_outside_storage", 6, B, kOpM, [](A &a) { a.M->storage_elements = 11; }, kInvalid,
     {api + "routingMapOptional: shape [4, 3] with strides [3, 1] and offset 0 reaches element "
            "11, outside its storage of 11 elements"}},
    {"r6_tokensGradOut_outside_storage", 6, B, kOpTG, [](A &a) { a.TG->offset = 1; }, kInvalid,
     {api + "tokensGradOut: shape [4, 5] with strides [5, 1] and offset 1 reaches element 20, "
            "outside its storage of 20 elements"}},
    {"r6_tokensGradOut_overlapping", 6, B, kOpTG, [](A &a) { a.TG->strides = {1, 1}; }, kInvalid,
     {api + "tokensGradOut: output with shape [4, 5] and strides [1, 1] writes some elements "
            "more than once"}},
    {"r6_tokensGradOut_zero_row_stride", 6, B, kOpTG, [](A &a) { a.TG->strides = {0, 1}; },
     kInvalid,
     {api + "tokensGradOut: output with shape [4, 5] and strides [0, 1] writes some elements "
            "more than once"}},
    {"r6_probsGradOut_overlapping", 6, B, kOpPG, [](A &a) { a.PG->strides = {1, 2}; }, kInvalid,
     {api + "probsGradOutOptional: output with shape [4, 3] and strides [1, 2] writes some "
            "elements more than once"}},
    {"r6_probsGradOut_outside_storage", 6, B, kOpPG, [](A &a) { a.PG->storage_elements = 11; },
     kInvalid, {api + "probsGradOutOptional: shape [4, 3]", "outside its storage of 11 elements"}},
  };
  // clang-format on
}

}  // namespace

const std::vector<GradRow> &grad_rule_rows() {
  static const std::vector<GradRow> rows = make_rows();
  return rows;
}

}  // namespace moeperm::testing
