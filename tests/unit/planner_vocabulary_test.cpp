// The planner's vocabulary (core/op_desc.hpp, core/rules.cpp) on a test-only description
// shaped like SPEC-unpermute's forward: a rank-error status of its own, an integer-array
// attribute with presence (restoreShape), "one of these is required", a presence rule that
// holds in one mode only, limit rules as data (a constant bound, a size bound, only with an
// operand), and several index rules (one with "no row named twice"). Each feature is seen
// to pass and to fail with its status and message. Links the layers (detail:: functions).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "core/rules.hpp"

namespace moeperm::detail {
namespace {

enum : int8_t { X, S, M, P, I, Y };  // the test operator's operands
constexpr int8_t kRestoreShape = int_array_ref(0);
constexpr const char *kApi = "aclnnTestUnpermuteLike";

Status no_attributes(const OperandSet &) { return Status::success(); }

// T from P, else from restoreShape; E from P, else M, else 1; R and H from X.
Status derive(PlanContext &c) {
  Sizes &z = c.sizes;
  const OperandSet &s = c.set;
  z.rows = s[X]->shape[0], z.hidden = s[X]->shape[1];
  z.tokens = s.given(P) ? s[P]->shape[0] : s.int_array(kRestoreShape)[0];
  z.experts = s.given(P) ? s[P]->shape[1] : s.given(M) ? s[M]->shape[1] : 1;
  if (z.tokens <= 0 || z.experts <= 0) return inconsistent(kApi, "T and E must be > 0");
  if (s.drop_and_pad)
    z.capacity = z.rows / z.experts;
  else
    z.top_k = z.rows / z.tokens;
  return Status::success();
}

Status no_rows(PlanContext &) { return Status::success(); }

constexpr OperandDesc kOperands[] = {
    {.name = "permutedTokens",
     .role = Role::permuted,
     .dir = Dir::in,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::float_value},
     .shape = {}},
    {.name = "sortedIndices",
     .role = Role::sorted_indices,
     .dir = Dir::in,
     .rank = 1,
     .required = true,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {.dims = {Sym::R}, .why = "(rows)"}},
    {.name = "routingMapOptional",
     .role = Role::routing_map,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::routing_map},
     .shape = {.dims = {Sym::T, Sym::E}, .why = "(T, E)"}},
    {.name = "probsOptional",
     .role = Role::dense_probs,
     .dir = Dir::in,
     .rank = 2,
     .required = false,
     .dtype = {.kind = DtypeKind::probs_for, .ref = X},
     .shape = {.dims = {Sym::T, Sym::E}, .why = "(T, E)"}},
    {.name = "permuteTokenId",
     .role = Role::permuted_probs,
     .dir = Dir::in,
     .rank = 1,
     .required = false,
     .dtype = {.kind = DtypeKind::int32},
     .shape = {.dims = {Sym::R}, .why = "(rows)"}},
    {.name = "unpermutedTokens",
     .role = Role::tokens,
     .dir = Dir::out,
     .rank = 2,
     .required = true,
     .dtype = {.kind = DtypeKind::same_as, .ref = X},
     .shape = {.dims = {Sym::T, Sym::H}, .why = "(T, H)"}},
};
constexpr IntArrayDesc kIntArrays[] = {{.name = "restoreShapeOptional",
                                        .length = 2,
                                        .values = {Sym::T, Sym::H},
                                        .why = "(tokens, hidden)"}};
constexpr int8_t kOrder[] = {X, S, M, P, I, Y};
constexpr int8_t kRankOrder[] = {X, S, M, P, kRestoreShape, I, Y};
constexpr int8_t kShapeOrder[] = {S, M, P, kRestoreShape, I, Y};
constexpr OneOfRule kOneOf[] = {{P, kRestoreShape}};
constexpr PresenceRule kPresence[] = {{.needed = M, .when_given = P, .mode = Mode::dropless}};
constexpr LimitRule kLimits[] = {
    {.value = Sym::K,
     .label = "topK",
     .max = 4,
     .status = Code::inner_nullptr,
     .mode = Mode::dropless,
     .why = "test limit"},
    {.value = Sym::C,
     .label = "capacity",
     .max_sym = Sym::T,
     .max_label = "tokens",
     .status = Code::tiling_error,
     .mode = Mode::drop_and_pad,
     .only_with = P},
};
constexpr IndexRule kIndexRules[] = {
    {.role = Role::sorted_indices,
     .name = "sortedIndices",
     .dropless_bound = Sym::R,
     .drop_and_pad_bound = Sym::R,
     .unique = true},
    {.role = Role::permuted_probs,
     .name = "permuteTokenId",
     .drop_and_pad_bound = Sym::T,
     .mode = Mode::drop_and_pad},
};

const OpDesc kTestOp{
    .op = Op::permute,  // any Op: make_plan_with is given the description itself
    .api = kApi,
    .short_name = "test",
    .backward = false,
    .operands = kOperands,
    .int_arrays = kIntArrays,
    .dtype_order = kOrder,
    .rank_order = kRankOrder,
    .shape_order = kShapeOrder,
    .view_order = kOrder,
    .one_of = kOneOf,
    .presence = kPresence,
    .rank_status = Code::tiling_error,
    .limits = kLimits,
    .mode_name = "paddedMode",
    .check_attributes = no_attributes,
    .derive_sizes = derive,
    .rows = no_rows,
    .values = X,
    .index_rules = kIndexRules,
};

// A valid call: T = 4 tokens, E = 3 experts, H = 8, R = 8 rows (K = 2, or C = 2 padded).
struct Call {
  TensorDesc x = TensorDesc::contiguous(DType::f32, {8, 8});
  TensorDesc s = TensorDesc::contiguous(DType::i32, {8});
  TensorDesc m = TensorDesc::contiguous(DType::boolean, {4, 3});
  TensorDesc p = TensorDesc::contiguous(DType::f32, {4, 3});
  TensorDesc i = TensorDesc::contiguous(DType::i32, {8});
  TensorDesc y = TensorDesc::contiguous(DType::f32, {4, 8});
  std::vector<int64_t> restore{4, 8};
  bool with_m = true, with_p = true, with_i = true, with_restore = false, padded = false;

  Status plan(Plan *out = nullptr) const {
    OperandSet set{.op = Op::permute, .drop_and_pad = padded};
    set.tensors = {&x, &s, with_m ? &m : nullptr, with_p ? &p : nullptr, with_i ? &i : nullptr, &y};
    if (with_restore) set.int_arrays[0] = std::span<const int64_t>(restore);
    Plan p_;
    return make_plan_with(kTestOp, set, out ? out : &p_);
  }
};

void expect_error(const Status &s, Code code, const std::string &message) {
  EXPECT_EQ(s.code, code) << s.message;
  EXPECT_EQ(s.message, message);
}

TEST(PlannerVocabulary, AValidCallPlans) {
  Call c;
  EXPECT_TRUE(c.plan().ok()) << c.plan().message;
  c.with_p = false, c.with_restore = true;  // T from restoreShape instead
  EXPECT_TRUE(c.plan().ok()) << c.plan().message;
}

TEST(PlannerVocabulary, RankErrorsTakeTheDescriptionsStatus) {
  Call c;
  c.x = TensorDesc::contiguous(DType::f32, {8, 8, 1});
  expect_error(c.plan(), Code::tiling_error,
               "aclnnTestUnpermuteLike: permutedTokens: expected 2-D, got 3-D [8, 8, 1]");
}

TEST(PlannerVocabulary, IntegerArrayLengthIsARankRuleAndItsValuesAShapeRule) {
  Call c;
  c.with_restore = true;
  c.restore = {4};
  expect_error(c.plan(), Code::tiling_error,
               "aclnnTestUnpermuteLike: restoreShapeOptional must have 2 values, got 1 [4]");
  c.restore = {4, 9};
  expect_error(c.plan(), Code::invalid_param,
               "aclnnTestUnpermuteLike: restoreShapeOptional is [4, 9], expected [4, 8] "
               "(tokens, hidden)");
}

TEST(PlannerVocabulary, OneOfTwoIsRequired) {
  Call c;
  c.with_p = false, c.with_restore = false;
  expect_error(c.plan(), Code::null_pointer,
               "aclnnTestUnpermuteLike: probsOptional and restoreShapeOptional must not both be "
               "null");
}

TEST(PlannerVocabulary, PresenceCanHoldInOneModeOnly) {
  Call c;
  c.with_m = false;
  expect_error(c.plan(), Code::null_pointer,
               "aclnnTestUnpermuteLike: routingMapOptional must not be null when probsOptional "
               "is given (paddedMode=false)");
  c.padded = true;  // not required in this mode
  c.x = TensorDesc::contiguous(DType::f32, {6, 8});
  c.s = c.i = TensorDesc::contiguous(DType::i32, {6});
  EXPECT_TRUE(c.plan().ok()) << c.plan().message;
}

TEST(PlannerVocabulary, LimitsAreData) {
  Call c;  // K = 20 / 4 = 5 > 4, drop-less
  c.x = TensorDesc::contiguous(DType::f32, {20, 8});
  c.s = c.i = TensorDesc::contiguous(DType::i32, {20});
  expect_error(c.plan(), Code::inner_nullptr,
               "aclnnTestUnpermuteLike: topK = 5 exceeds the supported maximum of 4 for "
               "paddedMode=false (test limit)");
  c.padded = true;  // C = 20 / 3 = 6 > T = 4, with P
  expect_error(c.plan(), Code::tiling_error,
               "aclnnTestUnpermuteLike: capacity = 6 exceeds tokens = 4 for paddedMode=true");
  c.with_p = false, c.with_restore = true;  // only with P: E = 3 from M, the limit is off
  c.restore = {4, 8};
  EXPECT_TRUE(c.plan().ok()) << c.plan().message;
}

TEST(PlannerVocabulary, SeveralIndexRulesEachWithItsRangeAndUniqueness) {
  Call c;
  Plan dropless;
  ASSERT_TRUE(c.plan(&dropless).ok());
  const IndexRange s = index_range(kTestOp, dropless, 0);
  EXPECT_EQ(s.bound, 8);
  EXPECT_TRUE(s.allows_minus_one);
  EXPECT_TRUE(s.unique);
  EXPECT_FALSE(s.contains(8));
  EXPECT_TRUE(s.contains(-1));
  c.padded = true;
  Plan padded;
  ASSERT_TRUE(c.plan(&padded).ok());
  const IndexRange id = index_range(kTestOp, padded, 1);
  EXPECT_EQ(id.bound, 4);  // token ids: [0, T)
  EXPECT_FALSE(id.allows_minus_one);
  EXPECT_FALSE(id.unique);
  EXPECT_EQ(kIndexRules[1].mode, Mode::drop_and_pad);
  EXPECT_FALSE(applies(kIndexRules[1].mode, false));
}

TEST(PlannerVocabulary, PermutesDescriptionsSayTheirRulesInTheVocabulary) {
  // The permute Grad's P-without-M rule is a presence rule, its index rule a list of one,
  // and both operators' topK limit a LimitRule (their rule tables check the messages).
  const OpDesc &grad = op_desc(Op::permute_grad);
  ASSERT_EQ(grad.presence.size(), 1u);
  EXPECT_STREQ(ref_name(grad, grad.presence[0].needed), "routingMapOptional");
  ASSERT_EQ(grad.index_rules.size(), 1u);
  EXPECT_STREQ(grad.index_rules[0].name, "sortedIndices");
  EXPECT_TRUE(op_desc(Op::permute).index_rules.empty());
  for (Op op : {Op::permute, Op::permute_grad}) {
    ASSERT_EQ(op_desc(op).limits.size(), 1u);
    EXPECT_STREQ(op_desc(op).limits[0].label, "topK");
    EXPECT_EQ(op_desc(op).limits[0].status, Code::inner_nullptr);
  }
}

}  // namespace
}  // namespace moeperm::detail
