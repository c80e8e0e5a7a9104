// Plans from descriptors alone (C++ API, no data): the sizes they resolve (SPEC notation),
// the backend they pick, normalised geometry, their printable form, and the small vocabulary
// of the API (dtype/code values and names, Error).
#include <aclnn/acl_meta.h>
#include <gtest/gtest.h>

#include "core/plan.hpp"
#include "operand_args.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

PermuteDesc forward_desc(int64_t T, int64_t E, int64_t H, int64_t num_out, bool dp,
                         DType dtype = DType::f32) {
  const int64_t R = dp ? E * (num_out / E) : T * (num_out / T);
  PermuteDesc d;
  d.tokens = dense(dtype, {T, H});
  d.routing_map = dense(DType::boolean, {T, E});
  d.probs = dense(dtype, {T, E});
  d.num_out_tokens = num_out;
  d.drop_and_pad = dp;
  d.permuted_tokens = dense(dtype, {R, H});
  d.permuted_probs = dense(dtype, {R});
  d.sorted_indices = dense(DType::i32, {R});
  return d;
}

PermuteGradDesc grad_desc(int64_t T, int64_t E, int64_t H, int64_t R, bool dp,
                          DType dtype = DType::f32, DType probs = DType::f32) {
  PermuteGradDesc d;
  d.permuted_token_output_grad = dense(dtype, {R, H});
  d.permuted_probs_output_grad = dense(probs, {R});
  d.sorted_indices = dense(DType::i32, {R});
  d.routing_map = dense(DType::i8, {T, E});
  d.num_experts = E;
  d.tokens_num = T;
  d.drop_and_pad = dp;
  d.tokens_grad_out = dense(dtype, {T, H});
  d.probs_grad_out = dense(probs, {T, E});
  return d;
}

void expect_sizes(const Sizes &s, int64_t T, int64_t E, int64_t H, int64_t K, int64_t C,
                  int64_t R) {
  EXPECT_EQ(s.tokens, T);
  EXPECT_EQ(s.experts, E);
  EXPECT_EQ(s.hidden, H);
  EXPECT_EQ(s.top_k, K);
  EXPECT_EQ(s.capacity, C);
  EXPECT_EQ(s.rows, R);
}

TEST(PlanSizes, ForwardDroplessTakesKAsIntegerQuotient) {
  const Plan p = plan_permute(forward_desc(5, 3, 4, 11, false));  // K = 11 / 5 = 2
  expect_sizes(p.sizes(), 5, 3, 4, 2, 0, 10);
  EXPECT_FALSE(p.drop_and_pad());
  EXPECT_FALSE(p.is_grad());
}

TEST(PlanSizes, ForwardDropAndPadTakesCapacityAsIntegerQuotient) {
  const Plan p = plan_permute(forward_desc(5, 3, 4, 7, true));  // C = 7 / 3 = 2
  expect_sizes(p.sizes(), 5, 3, 4, 0, 2, 6);
  EXPECT_TRUE(p.drop_and_pad());
}

TEST(PlanSizes, GradDerivesKOrCapacityFromRows) {
  const Plan dl = plan_permute_grad(grad_desc(5, 3, 4, 10, false));
  expect_sizes(dl.sizes(), 5, 3, 4, 2, 0, 10);
  EXPECT_TRUE(dl.is_grad());
  const Plan dp = plan_permute_grad(grad_desc(5, 3, 4, 6, true));
  expect_sizes(dp.sizes(), 5, 3, 4, 0, 2, 6);
  EXPECT_TRUE(dp.drop_and_pad());
}

TEST(PlanSizes, ForwardRejectsRowIdsPastInt32) {
  // R = T*K = (2^22 + 1) * 512 > 2^31: sortedIndicesOut (int32) could not hold the row ids.
  // Descriptors only: nothing is allocated.
  const int64_t T = (int64_t{1} << 22) + 1;
  const PermuteDesc d = forward_desc(T, 512, 1, T * 512, false);
  try {
    (void)plan_permute(d);
    FAIL() << "planned a forward whose row ids overflow int32";
  } catch (const Error &e) {
    EXPECT_EQ(e.code(), Code::invalid_param);
    EXPECT_NE(std::string(e.what()).find("sortedIndicesOut is int32"), std::string::npos)
        << e.what();
  }
  // One row fewer than 2^31 + 1 is fine: R = 2^31 rows, ids up to 2^31 - 1.
  EXPECT_NO_THROW(
      (void)plan_permute(forward_desc(int64_t{1} << 22, 512, 1, int64_t{1} << 31, false)));
}

TEST(PlanBackend, AutomaticPicksCpuAndPinningIsHonoured) {
  ScopedEnv no_override("MOEPERM_BACKEND", nullptr);
  const auto d = grad_desc(5, 3, 4, 10, false);
  EXPECT_STREQ(plan_permute_grad(d).backend_name(), "cpu");
  EXPECT_STREQ(plan_permute_grad(d, {Backend::cpu}).backend_name(), "cpu");
  EXPECT_STREQ(plan_permute_grad(d, {Backend::reference}).backend_name(), "reference");
  EXPECT_STREQ(plan_permute(forward_desc(5, 3, 4, 10, true), {Backend::reference}).backend_name(),
               "reference");
}

// Empty problems are defined by SPEC (zeroed outputs, no workspace), not by a backend: even a
// pinned CPU plan defers to the reference.
TEST(PlanBackend, EmptyProblemsGoToTheReference) {
  EXPECT_STREQ(plan_permute_grad(grad_desc(5, 3, 4, 0, false), {Backend::cpu}).backend_name(),
               "reference");
  EXPECT_STREQ(plan_permute_grad(grad_desc(5, 3, 0, 10, false), {Backend::cpu}).backend_name(),
               "reference");
  EXPECT_STREQ(plan_permute(forward_desc(5, 3, 4, 0, false), {Backend::cpu}).backend_name(),
               "reference");
}

TEST(PlanBackend, EnvironmentOverridesAutomaticOnly) {
  const auto d = grad_desc(5, 3, 4, 10, false);
  {
    ScopedEnv env("MOEPERM_BACKEND", "reference");
    EXPECT_STREQ(plan_permute_grad(d).backend_name(), "reference");
    EXPECT_STREQ(plan_permute_grad(d, {Backend::cpu}).backend_name(), "cpu");
  }
  {
    ScopedEnv env("MOEPERM_BACKEND", "ref");
    EXPECT_STREQ(plan_permute_grad(d).backend_name(), "reference");
  }
  {
    ScopedEnv env("MOEPERM_BACKEND", "auto");
    EXPECT_STREQ(plan_permute_grad(d).backend_name(), "cpu");
  }
  {
    ScopedEnv env("MOEPERM_BACKEND", "gpu");
    const Error e = capture_error([&] { (void)plan_permute_grad(d); });
    EXPECT_EQ(e.code(), Code::invalid_param);
    EXPECT_NE(std::string(e.what()).find("MOEPERM_BACKEND must be cpu, reference or auto, got "
                                         "'gpu'"),
              std::string::npos)
        << e.what();
  }
}

TEST(PlanGeometry, StridesAreNormalisedAndOffsetsKept) {
  auto d = grad_desc(5, 3, 4, 10, false);
  d.permuted_token_output_grad.strides = {1, 10};  // column-major G
  d.permuted_token_output_grad.storage_elements = 40;
  d.sorted_indices.strides = {3};
  d.sorted_indices.offset = 2;
  d.sorted_indices.storage_elements = 30;
  const Plan p = plan_permute_grad(d);
  const detail::Plan &impl = p.impl();
  EXPECT_EQ(impl.permuted().row_stride, 1);
  EXPECT_EQ(impl.permuted().col_stride, 10);
  EXPECT_EQ(impl.tokens().row_stride, 4);  // contiguous tokensGradOut: strides [H, 1]
  EXPECT_EQ(impl.tokens().col_stride, 1);
  EXPECT_EQ(impl.sorted_indices().stride, 3);
  EXPECT_EQ(impl.sorted_indices().offset, 2);
  EXPECT_EQ(impl.sorted_indices().len, 10);
}

TEST(PlanToString, NamesOpModeSizesDtypesBackendAndWorkspace) {
  const Plan g = plan_permute_grad(grad_desc(4, 3, 5, 6, true, DType::bf16, DType::f32));
  const std::string s = g.to_string();
  EXPECT_NE(s.find("permute_grad drop_and_pad T=4 E=3 H=5 K=0 C=2 R=6 values=bfloat16 "
                   "probs=compute(float32/float32) backend=cpu"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find(" workspace=" + std::to_string(g.workspace_bytes())), std::string::npos) << s;
  auto d = forward_desc(4, 3, 5, 8, false);
  d.probs.reset();  // output without input: zero fill
  const std::string f = plan_permute(d, {Backend::reference}).to_string();
  EXPECT_NE(f.find("permute dropless T=4 E=3 H=5 K=2 C=0 R=8 values=float32 probs=zero_fill"),
            std::string::npos)
      << f;
  EXPECT_NE(f.find("backend=reference workspace=0"), std::string::npos) << f;
}

TEST(PlanValue, CopiesShareTheSameResolvedPlan) {
  const Plan a = plan_permute_grad(grad_desc(5, 3, 4, 10, false));
  const Plan b = a;  // NOLINT(performance-unnecessary-copy-initialization): copy is the point
  EXPECT_EQ(&a.impl(), &b.impl());
  EXPECT_EQ(a.to_string(), b.to_string());
}

TEST(Vocabulary, DTypeValuesAreCannsDataTypes) {
  EXPECT_EQ(static_cast<int>(DType::f32), ACL_FLOAT);
  EXPECT_EQ(static_cast<int>(DType::f16), ACL_FLOAT16);
  EXPECT_EQ(static_cast<int>(DType::i8), ACL_INT8);
  EXPECT_EQ(static_cast<int>(DType::i32), ACL_INT32);
  EXPECT_EQ(static_cast<int>(DType::u8), ACL_UINT8);
  EXPECT_EQ(static_cast<int>(DType::i64), ACL_INT64);
  EXPECT_EQ(static_cast<int>(DType::f64), ACL_DOUBLE);
  EXPECT_EQ(static_cast<int>(DType::boolean), ACL_BOOL);
  EXPECT_EQ(static_cast<int>(DType::bf16), ACL_BF16);
  EXPECT_EQ(element_size(DType::bf16), 2);
  EXPECT_EQ(element_size(DType::f64), 8);
  EXPECT_EQ(element_size(DType::boolean), 1);
  EXPECT_EQ(element_size(static_cast<DType>(6)), 0);
  EXPECT_STREQ(to_string(DType::bf16), "bfloat16");
  EXPECT_STREQ(to_string(DType::boolean), "bool");
}

TEST(Vocabulary, CodeValuesAreCannsStatusCodes) {
  EXPECT_EQ(static_cast<int>(Code::ok), ACLNN_SUCCESS);
  EXPECT_EQ(static_cast<int>(Code::null_pointer), ACLNN_ERR_PARAM_NULLPTR);
  EXPECT_EQ(static_cast<int>(Code::invalid_param), ACLNN_ERR_PARAM_INVALID);
  EXPECT_EQ(static_cast<int>(Code::runtime_error), ACLNN_ERR_RUNTIME_ERROR);
  EXPECT_EQ(static_cast<int>(Code::tiling_error), ACLNN_ERR_INNER_TILING_ERROR);
  EXPECT_EQ(static_cast<int>(Code::inner_nullptr), ACLNN_ERR_INNER_NULLPTR);
  EXPECT_EQ(ACLNN_ERR_PARAM_NULLPTR, 161001);
  EXPECT_EQ(ACLNN_ERR_PARAM_INVALID, 161002);
  EXPECT_EQ(ACLNN_ERR_INNER_NULLPTR, 561103);
  EXPECT_STREQ(to_string(Code::invalid_param), "ACLNN_ERR_PARAM_INVALID");
  const Error e(Code::inner_nullptr, "limit");
  EXPECT_EQ(e.code(), Code::inner_nullptr);
  EXPECT_STREQ(e.what(), "limit");
}

}  // namespace
}  // namespace moeperm::testing

namespace moeperm::testing {
namespace {

// Plan::variant(): the CPU backend's instruction set as chosen at plan time (forced ones
// included), nothing for the reference.
TEST(PlanVariant, NamesTheCpuInstructionSetAndFollowsAForcedOne) {
  const PermuteDesc d = forward_desc(5, 3, 4, 10, false);
  const std::string chosen = plan_permute(d, {.backend = Backend::cpu}).variant();
  EXPECT_TRUE(chosen == "avx512" || chosen == "avx2" || chosen == "scalar") << chosen;
  EXPECT_STREQ(plan_permute(d, {.backend = Backend::reference}).variant(), "");
  const ScopedEnv forced("MOEPERM_CPU_ISA", "scalar");
  EXPECT_STREQ(plan_permute(d, {.backend = Backend::cpu}).variant(), "scalar");
}

}  // namespace
}  // namespace moeperm::testing
