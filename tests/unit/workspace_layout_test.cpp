// Tests of Note [Workspace layout]: one WorkspaceLayout sizes the workspace at plan time and carves
// it at run time. Here: the layout arithmetic itself, and the layouts the plans actually build
// (which slots, how large), so that the size the first phase reports is explained.
#include <gtest/gtest.h>

#include "core/plan.hpp"
#include "core/workspace_layout.hpp"
#include "operand_args.hpp"
#include "testing.hpp"

namespace moeperm::testing {
namespace {

using detail::WorkspaceLayout;

TEST(WorkspaceLayout, SlotsStartOnTheAlignmentAndEmptySlotsTakeNoSpace) {
  WorkspaceLayout w;
  EXPECT_EQ(w.total(), 0u);
  EXPECT_EQ(w.required_with_slack(), 0u);
  const int a = w.add("a", 1), b = w.add("b", 0), c = w.add("c", 300), d = w.add("d", 256);
  EXPECT_EQ(w.count(), 4);
  std::vector<std::byte> buffer(w.total());
  std::byte *base = buffer.data();
  EXPECT_EQ(w.at<std::byte>(base, a) - base, 0);
  EXPECT_EQ(w.at<std::byte>(base, b) - base, 256);
  EXPECT_EQ(w.at<std::byte>(base, c) - base, 256);
  EXPECT_EQ(w.at<std::byte>(base, d) - base, 768);
  EXPECT_EQ(w.total(), 1024u);
  // A caller may hand any base address: the slack lets it be realigned to 256.
  EXPECT_EQ(w.required_with_slack(), 1024u + WorkspaceLayout::kAlignment - 1);
  EXPECT_STREQ(w.name(c), "c");
  EXPECT_EQ(w.bytes(c), 300u);
}

// A total that would pass 2^63 bytes is never reported wrapped (a small workspace for large
// slots): the layout names the first slot that did not fit, and planning turns it into an error.
TEST(WorkspaceLayout, TotalsPast2To63BytesAreNamedNotWrapped) {
  WorkspaceLayout w;
  w.add("small", 100);
  EXPECT_EQ(w.too_large(), nullptr);
  w.add("huge", (uint64_t{1} << 63) - 100);  // 256 + this, rounded up, passes 2^63
  w.add("wrapping", ~uint64_t{0});
  EXPECT_STREQ(w.too_large(), "huge");
  EXPECT_EQ(w.total(), 256u);
  WorkspaceLayout exact;
  exact.add("all", uint64_t{1} << 63);
  EXPECT_EQ(exact.too_large(), nullptr);
  EXPECT_EQ(exact.total(), uint64_t{1} << 63);
}

ProblemSpec spec(int64_t T, int64_t E, int64_t K, int64_t C, bool dp, bool probs) {
  ProblemSpec s;
  s.T = T, s.H = 7, s.E = E, s.K = K, s.capacity = C;
  s.drop_and_pad = dp, s.with_probs = probs;
  s.dtype = s.probs_dtype = DType::f32;
  return s;
}

// The slots a CPU plan lays out, by name and size.
std::vector<std::pair<std::string, uint64_t>> slots(const Plan &plan) {
  std::vector<std::pair<std::string, uint64_t>> v;
  const WorkspaceLayout &w = plan.impl().workspace;
  for (int i = 0; i < w.count(); ++i) v.emplace_back(w.name(i), w.bytes(i));
  return v;
}

uint64_t with_slack(uint64_t bytes) { return (bytes + 255) / 256 * 256 + 255; }
using Slots = std::vector<std::pair<std::string, uint64_t>>;

TEST(PlanWorkspace, CpuForwardDroplessKeepsRankBasesPerTokenBlock) {
  // 600 tokens: 3 blocks of 256; 5 experts; int64 per (block, expert).
  const auto p = tools::make_problem(spec(600, 5, 2, 0, false, true));
  const Plan plan = plan_permute(p.permute_desc(), {Backend::cpu});
  EXPECT_EQ(slots(plan), (Slots{{"expert_block_ranks", 3 * 5 * 8}}));
  EXPECT_EQ(plan.workspace_bytes(), with_slack(3 * 5 * 8));
}

TEST(PlanWorkspace, CpuGradDropAndPadKeepsACsrOfSlotsByToken) {
  const auto p = tools::make_problem(spec(10, 4, 0, 3, true, true));  // R = 12
  const Plan plan = plan_permute_grad(p.grad_desc(), {Backend::cpu});
  EXPECT_EQ(slots(plan), (Slots{{"csr_offsets", 11 * 8}, {"csr_slots", 12 * 8}}));
  EXPECT_EQ(plan.workspace_bytes(), 256u + 256u + 255u);
}

TEST(PlanWorkspace, CpuGradDroplessNeedsRanksOnlyForProbs) {
  const auto with = tools::make_problem(spec(300, 6, 2, 0, false, true));
  EXPECT_EQ(slots(plan_permute_grad(with.grad_desc(), {Backend::cpu})),
            (Slots{{"expert_block_ranks", 2 * 6 * 8}}));
  const auto without = tools::make_problem(spec(300, 6, 2, 0, false, false));
  EXPECT_EQ(plan_permute_grad(without.grad_desc(), {Backend::cpu}).workspace_bytes(), 0u);
}

TEST(PlanWorkspace, CpuForwardDropAndPadAndTheReferenceNeedNone) {
  const auto p = tools::make_problem(spec(9, 4, 2, 3, true, true));
  EXPECT_EQ(plan_permute(p.permute_desc(), {Backend::cpu}).workspace_bytes(), 0u);
  const auto q = tools::make_problem(spec(9, 4, 2, 3, false, true));
  EXPECT_EQ(plan_permute(q.permute_desc(), {Backend::reference}).workspace_bytes(), 0u);
  EXPECT_EQ(plan_permute_grad(q.grad_desc(), {Backend::reference}).workspace_bytes(), 0u);
}

TEST(PlanWorkspace, EmptyProblemsNeedNone) {
  const auto p = tools::make_problem(spec(9, 4, 0, 0, false, true));  // K = 0: R = 0
  EXPECT_EQ(plan_permute(p.permute_desc(), {Backend::cpu}).workspace_bytes(), 0u);
  EXPECT_EQ(plan_permute_grad(p.grad_desc(), {Backend::cpu}).workspace_bytes(), 0u);
  const auto q = tools::make_problem(spec(9, 4, 0, 0, true, true));  // C = 0: R = 0
  EXPECT_EQ(plan_permute_grad(q.grad_desc(), {Backend::cpu}).workspace_bytes(), 0u);
}

}  // namespace
}  // namespace moeperm::testing
