// The operators as the public API names them (Operator, Plan::op(), to_string, is_backward),
// the registry (backends()), and infer_outputs: the outputs it derives are the ones planning
// accepts, and inputs that planning rejects are rejected with the same status and message.
#include <gtest/gtest.h>

#include <string>

#include "operand_args.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

PermuteDesc forward_inputs(int64_t T, int64_t E, int64_t H, int64_t num_out, bool dp, DType dtype,
                           std::optional<DType> probs) {
  PermuteDesc d;
  d.tokens = dense(dtype, {T, H});
  d.routing_map = dense(DType::i8, {T, E});
  if (probs) d.probs = dense(*probs, {T, E});
  d.num_out_tokens = num_out;
  d.drop_and_pad = dp;
  return d;  // outputs left default: empty shapes, float32
}

PermuteGradDesc grad_inputs(int64_t T, int64_t E, int64_t H, int64_t R, bool dp, DType dtype,
                            std::optional<DType> probs) {
  PermuteGradDesc d;
  d.permuted_token_output_grad = dense(dtype, {R, H});
  if (probs) d.permuted_probs_output_grad = dense(*probs, {R});
  d.sorted_indices = dense(DType::i32, {R});
  d.routing_map = dense(DType::boolean, {T, E});
  d.num_experts = E;
  d.tokens_num = T;
  d.drop_and_pad = dp;
  return d;
}

void expect_contiguous(const TensorDesc &d, DType dtype, std::vector<int64_t> shape) {
  EXPECT_EQ(d.dtype, dtype);
  EXPECT_EQ(d.shape, shape);
  EXPECT_TRUE(d.strides.empty());
  EXPECT_EQ(d.offset, 0);
}

// Status and message of a call that must throw moeperm::Error.
template <class F>
std::pair<Code, std::string> error_of(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return {e.code(), e.what()};
  }
  ADD_FAILURE() << "no moeperm::Error thrown";
  return {Code::ok, ""};
}

TEST(Operators, NamesAndDirections) {
  EXPECT_STREQ(to_string(Operator::permute), "aclnnMoeTokenPermuteWithRoutingMap");
  EXPECT_STREQ(to_string(Operator::permute_grad), "aclnnMoeTokenPermuteWithRoutingMapGrad");
  EXPECT_FALSE(is_backward(Operator::permute));
  EXPECT_TRUE(is_backward(Operator::permute_grad));
}

TEST(Operators, PlanKnowsItsOperator) {
  const PermuteDesc f = infer_outputs(forward_inputs(5, 3, 4, 11, false, DType::f32, DType::f32));
  const Plan fwd = plan_permute(f);
  EXPECT_EQ(fwd.op(), Operator::permute);
  EXPECT_FALSE(fwd.is_grad());
  const Plan bwd =
      plan_permute_grad(infer_outputs(grad_inputs(5, 3, 4, 10, false, DType::f32, DType::f32)));
  EXPECT_EQ(bwd.op(), Operator::permute_grad);
  EXPECT_TRUE(bwd.is_grad());
}

TEST(Operators, RegistryOrderHostBackendsFirstReferenceLastAmongThem) {
  const std::vector<BackendInfo> list = backends();
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].backend, Backend::cpu);
  EXPECT_STREQ(list[0].name, "cpu");
  EXPECT_FALSE(list[0].device);
  EXPECT_TRUE(list[0].available);
  EXPECT_EQ(list[1].backend, Backend::reference);
  EXPECT_STREQ(list[1].name, "reference");
  EXPECT_FALSE(list[1].device);
  EXPECT_TRUE(list[1].available);
  EXPECT_EQ(list[2].backend, Backend::cuda);
  EXPECT_STREQ(list[2].name, "cuda");
  EXPECT_TRUE(list[2].device);
  EXPECT_EQ(list[2].available, cuda_built() && cuda_device_count() > 0);
}

TEST(InferOutputs, ForwardDroplessAndDropAndPad) {
  // Drop-less: K = 11 / 5 = 2, R = 10. Drop-and-pad: C = 11 / 3 = 3, R = 9.
  for (const bool dp : {false, true}) {
    const int64_t R = dp ? 9 : 10;
    const PermuteDesc d = infer_outputs(forward_inputs(5, 3, 7, 11, dp, DType::bf16, DType::f32));
    expect_contiguous(d.permuted_tokens, DType::bf16, {R, 7});
    ASSERT_TRUE(d.permuted_probs);
    expect_contiguous(*d.permuted_probs, DType::f32, {R});
    expect_contiguous(d.sorted_indices, DType::i32, {R});
    EXPECT_EQ(plan_permute(d).sizes().rows, R) << "dropAndPad=" << dp;
  }
}

TEST(InferOutputs, ForwardProbsOutputOnlyWithItsInputOrWhenAsked) {
  PermuteDesc d = forward_inputs(4, 2, 3, 8, false, DType::f16, std::nullopt);
  EXPECT_FALSE(infer_outputs(d).permuted_probs);
  // Asked for without probs (zero-filled): its dtype is kept, its shape inferred.
  d.permuted_probs = dense(DType::f16, {99});
  const PermuteDesc out = infer_outputs(d);
  ASSERT_TRUE(out.permuted_probs);
  expect_contiguous(*out.permuted_probs, DType::f16, {8});
  EXPECT_NO_THROW(plan_permute(out));
}

TEST(InferOutputs, GradOutputs) {
  for (const bool dp : {false, true}) {
    const PermuteGradDesc d =
        infer_outputs(grad_inputs(4, 3, 6, dp ? 6 : 8, dp, DType::bf16, DType::f32));
    expect_contiguous(d.tokens_grad_out, DType::bf16, {4, 6});
    ASSERT_TRUE(d.probs_grad_out);
    expect_contiguous(*d.probs_grad_out, DType::f32, {4, 3});
    EXPECT_NO_THROW(plan_permute_grad(d)) << "dropAndPad=" << dp;
  }
  const PermuteGradDesc no_probs =
      infer_outputs(grad_inputs(4, 3, 6, 8, false, DType::f32, std::nullopt));
  EXPECT_FALSE(no_probs.probs_grad_out);
}

// Without probs and map the unpermute Grad takes E from probsGradOut itself. infer_outputs
// ignores the outputs' shapes, so a placeholder of any rank must not be read past its shape
// (a rank-0 one was: out of bounds); a 2-D one keeps its columns, as planning would.
TEST(InferOutputs, UnpermuteGradProbsGradWithoutProbsOrMap) {
  UnpermuteGradDesc d;
  d.unpermuted_tokens_grad = dense(DType::bf16, {4, 5});
  d.out_index = dense(DType::i32, {8});
  d.permute_token_id = dense(DType::i32, {8});
  for (const std::vector<int64_t> &placeholder : {std::vector<int64_t>{}, {7}, {4, 3}}) {
    TensorDesc pg;
    pg.dtype = DType::bf16, pg.shape = placeholder;
    d.probs_grad_out = pg;
    const UnpermuteGradDesc out = infer_outputs(d);
    expect_contiguous(out.permuted_tokens_grad_out, DType::bf16, {8, 5});
    ASSERT_TRUE(out.probs_grad_out);
    const int64_t E = placeholder.size() == 2 ? 3 : 0;
    expect_contiguous(*out.probs_grad_out, DType::bf16, {4, E});
    EXPECT_NO_THROW(plan_unpermute_grad(out)) << "placeholder rank " << placeholder.size();
  }
}

// Inputs that planning rejects: infer_outputs reports the same rule with the same words,
// whatever the (ignored) output descriptors were.
TEST(InferOutputs, RejectsWhatPlanningRejectsWithTheSameMessage) {
  struct Case {
    const char *name;
    void (*mutate)(PermuteDesc &);
  };
  const Case cases[] = {
      {"numOutTokens negative", [](PermuteDesc &d) { d.num_out_tokens = -1; }},
      {"tokens int32", [](PermuteDesc &d) { d.tokens.dtype = DType::i32; }},
      {"routingMap float", [](PermuteDesc &d) { d.routing_map.dtype = DType::f32; }},
      {"probs f16 for f32 tokens", [](PermuteDesc &d) { d.probs->dtype = DType::f16; }},
      {"tokens 1-D", [](PermuteDesc &d) { d.tokens = dense(DType::f32, {20}); }},
      {"routingMap rows",
       [](PermuteDesc &d) {
         d.routing_map = dense(DType::i8, {5, 3});
       }},
      {"topK 513", [](PermuteDesc &d) { d.num_out_tokens = 513 * 4; }},
      {"tokens outside storage", [](PermuteDesc &d) { d.tokens.storage_elements = 3; }},
  };
  for (const Case &c : cases) {
    PermuteDesc d = forward_inputs(4, 3, 5, 8, false, DType::f32, DType::f32);
    c.mutate(d);
    const auto inferred = error_of([&] { (void)infer_outputs(d); });
    // Planning with outputs that fit the inputs as far as they can be read.
    PermuteDesc planned = d;
    planned.permuted_tokens = dense(DType::f32, {8, 5});
    planned.permuted_probs = dense(DType::f32, {8});
    planned.sorted_indices = dense(DType::i32, {8});
    const auto plan = error_of([&] { (void)plan_permute(planned); });
    EXPECT_EQ(inferred.first, plan.first) << c.name;
    EXPECT_EQ(inferred.second, plan.second) << c.name;
    EXPECT_NE(inferred.first, Code::ok) << c.name;
  }
  // The grad: attributes and shapes derived from G.
  PermuteGradDesc g = grad_inputs(4, 3, 5, 9, false, DType::f32, DType::f32);
  const auto inferred = error_of([&] { (void)infer_outputs(g); });
  EXPECT_EQ(inferred.first, Code::invalid_param);
  EXPECT_NE(inferred.second.find("permutedTokenOutputGrad has 9 rows, which is not divisible by "
                                 "tokensNum=4"),
            std::string::npos)
      << inferred.second;
}

}  // namespace
}  // namespace moeperm::testing
