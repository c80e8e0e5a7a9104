// The other side of SPEC §5: argument sets that sit right at a rule's edge, or use an
// allowance the spec grants, must be accepted by both APIs (validation that is too strict
// breaks callers just as surely as validation that is too lax).
#include <gtest/gtest.h>

#include "rule_tables.hpp"

namespace moeperm::testing {
namespace {

template <class Args>
struct AcceptedRow {
  const char *name;
  Modes modes;
  void (*mutate)(Args &);
};

// [rows, cols] viewing every other column of a row-major [rows, 2*cols - 1] buffer
// (x[:, ::2] of an odd-width tensor): strided, and no element shares an address.
TensorDesc every_other_column(DType dtype, int64_t rows, int64_t cols) {
  TensorDesc d = dense(dtype, {rows, cols});
  d.strides = {2 * cols - 1, 2};
  d.storage_elements = rows * (2 * cols - 1);
  return d;
}

const std::vector<AcceptedRow<GradArgs>> &grad_rows() {
  using A = GradArgs;
  const auto B = Modes::both;
  static const std::vector<AcceptedRow<A>> rows = {
      {"bf16_values_f32_probs", B, [](A &a) { a.G->dtype = a.TG->dtype = DType::bf16; }},
      {"bf16_values_bf16_probs", B,
       [](A &a) { a.G->dtype = a.TG->dtype = a.P->dtype = a.PG->dtype = DType::bf16; }},
      {"f16_values_f16_probs", B,
       [](A &a) { a.G->dtype = a.TG->dtype = a.P->dtype = a.PG->dtype = DType::f16; }},
      {"bool_routing_map", B, [](A &a) { a.M->dtype = DType::boolean; }},
      {"no_probs_no_routing_map", B,
       [](A &a) {
         a.P.reset();
         a.PG.reset();
         a.M.reset();
       }},
      {"probs_grad_without_output_is_ignored", B, [](A &a) { a.PG.reset(); }},
      {"probs_output_without_input_needs_no_map", B,
       [](A &a) {
         a.P.reset();
         a.M.reset();
       }},
      {"topK_512", Modes::dropless,
       [](A &a) {
         a.G = dense(DType::f32, {512 * kT, kH});
         a.S = dense(DType::i32, {512 * kT});
         a.P = dense(DType::f32, {512 * kT});
       }},
      {"zero_rows", B,
       [](A &a) {
         a.G = dense(DType::f32, {0, kH});
         a.S = dense(DType::i32, {0});
         a.P = dense(DType::f32, {0});
       }},
      {"zero_hidden", B,
       [](A &a) {
         a.G = dense(DType::f32, {rows_for(a.drop_and_pad), 0});
         a.TG = dense(DType::f32, {kT, 0});
       }},
      {"input_with_negative_stride", B,
       [](A &a) {
         a.P->strides = {-1};
         a.P->offset = rows_for(a.drop_and_pad) - 1;
       }},
      {"inputs_in_larger_storage", B,
       [](A &a) {
         a.G->strides = {kH + 3, 1};
         a.G->offset = 2;
         a.G->storage_elements = 100;
         a.M->storage_elements = 1000;
       }},
      {"column_major_outputs", B,
       [](A &a) {
         a.TG->strides = {1, kT};
         a.PG->strides = {1, kT};
       }},
      {"tokensGradOut_every_other_column", B,
       [](A &a) { a.TG = every_other_column(DType::f32, kT, kH); }},
      {"probsGradOut_every_other_column", B,
       [](A &a) { a.PG = every_other_column(DType::f32, kT, kE); }},
  };
  return rows;
}

const std::vector<AcceptedRow<PermuteArgs>> &permute_rows() {
  using A = PermuteArgs;
  const auto B = Modes::both;
  static const std::vector<AcceptedRow<A>> rows = {
      {"numOutTokens_rounds_down", B, [](A &a) { a.num_out_tokens += 1; }},
      {"bool_routing_map", B, [](A &a) { a.M->dtype = DType::boolean; }},
      {"bf16_tokens_f32_probs", B, [](A &a) { a.X->dtype = a.Y->dtype = DType::bf16; }},
      {"f16_tokens_f16_probs", B,
       [](A &a) { a.X->dtype = a.Y->dtype = a.PR->dtype = a.YP->dtype = DType::f16; }},
      {"no_probs", B,
       [](A &a) {
         a.PR.reset();
         a.YP.reset();
       }},
      {"probs_output_without_input", B, [](A &a) { a.PR.reset(); }},
      {"topK_512", Modes::dropless,
       [](A &a) {
         a.num_out_tokens = 512 * kT;
         a.Y = dense(DType::f32, {512 * kT, kH});
         a.YP = dense(DType::f32, {512 * kT});
         a.S = dense(DType::i32, {512 * kT});
       }},
      {"capacity_equals_tokens", Modes::drop_and_pad,
       [](A &a) {
         a.num_out_tokens = kE * kT;
         a.Y = dense(DType::f32, {kE * kT, kH});
         a.YP = dense(DType::f32, {kE * kT});
         a.S = dense(DType::i32, {kE * kT});
       }},
      {"zero_tokens", Modes::dropless,
       [](A &a) {
         a.X = dense(DType::f32, {0, kH});
         a.M = dense(DType::i8, {0, kE});
         a.PR = dense(DType::f32, {0, kE});
         a.Y = dense(DType::f32, {0, kH});
         a.YP = dense(DType::f32, {0});
         a.S = dense(DType::i32, {0});
       }},
      {"zero_hidden", B,
       [](A &a) {
         a.X = dense(DType::f32, {kT, 0});
         a.Y = dense(DType::f32, {rows_for(a.drop_and_pad), 0});
       }},
      {"column_major_output", B,
       [](A &a) {
         a.Y->strides = {1, rows_for(a.drop_and_pad)};
       }},
      {"permuteTokensOut_every_other_column", B,
       [](A &a) { a.Y = every_other_column(DType::f32, rows_for(a.drop_and_pad), kH); }},
  };
  return rows;
}

template <class Args>
TableRows accepted_table(std::string table, const std::vector<AcceptedRow<Args>> &rows) {
  const std::vector<AcceptedRow<Args>> *r = &rows;
  return TableRows{
      std::move(table), rows.size(), [r](size_t i) { return std::string((*r)[i].name); },
      [r](size_t i) { return CheckInEveryMode((*r)[i].modes, (*r)[i].mutate, 0, {}); }};
}

// Every operator's accepted rows: adding an operator adds one line here.
const std::vector<TableRows> &accepted_tables() {
  static const std::vector<TableRows> tables = {accepted_table("grad", grad_rows()),
                                                accepted_table("permute", permute_rows())};
  return tables;
}

class Accepted : public ::testing::TestWithParam<RowRef> {};
TEST_P(Accepted, PlansInBothApis) { EXPECT_TRUE(GetParam().rows->check(GetParam().index)); }
INSTANTIATE_TEST_SUITE_P(Spec5, Accepted, ::testing::ValuesIn(every_row(accepted_tables())),
                         RowName);

}  // namespace
}  // namespace moeperm::testing
