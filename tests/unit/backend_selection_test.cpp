// Note [Backend selection], [Empty problems] and the workspace slot cap, on the library's
// internals: every Op has a description and a reference kernel; a backend that has no kernel
// for a plan is never prepared or run (a test-only device backend and a test-only pinned host
// backend show the error instead of a call); kernel tables know when a line is missing; a
// backend that lays out one workspace slot too many gets an error, not a write past the
// slots. This binary links the library's layers directly (it needs detail:: functions that
// the shared library does not export), not libmoeperm.
#include <gtest/gtest.h>

#include <string>

#include "backend/backend.hpp"
#include "backend/kernel_table.hpp"
#include "backend/registry.hpp"
#include "core/op_desc.hpp"
#include "device/device.hpp"

namespace moeperm::detail {
namespace {

Plan plan_of(Op op, bool drop_and_pad, int64_t R = 8, int64_t H = 4) {
  Plan p;
  p.op = op;
  p.drop_and_pad = drop_and_pad;
  p.T = 4, p.E = 4, p.K = 2, p.R = R, p.H = H;
  return p;
}

// The Ops there are, by index: the loop a new Op joins without a change here.
std::vector<Op> all_ops() {
  std::vector<Op> ops;
  for (int i = 0; i < kOpCount; ++i) ops.push_back(static_cast<Op>(i));
  return ops;
}

TEST(BackendSelection, EveryOpHasADescriptionAndAReferenceKernel) {
  const BackendOps *reference = find_backend(Backend::reference);
  ASSERT_NE(reference, nullptr);
  for (Op op : all_ops()) {
    const OpDesc &d = op_desc(op);
    EXPECT_EQ(d.op, op) << "kOps lists the descriptions in Op order";
    EXPECT_NE(std::string(d.api), "");
    EXPECT_FALSE(d.operands.empty()) << d.api;
    for (bool dp : {false, true})
      EXPECT_EQ(reference->supports(plan_of(op, dp)), Support::yes)
          << d.api << " dropAndPad=" << dp << ": the reference must have a kernel";
  }
}

// A test-only backend: a kernel for the forward only, and it records any call.
struct Calls {
  int prepare = 0, run = 0;
};
Calls g_calls;

using FakeKernel = Status (*)(const Plan &);
Status fake_kernel(const Plan &) {
  ++g_calls.run;
  return Status::success();
}
constexpr KernelTable<FakeKernel> kFakeKernels{
    {Op::permute, {nullptr, fake_kernel, fake_kernel}},
    {Op::permute_grad, kNotImplemented},
    {Op::unpermute, kNotImplemented},
    {Op::unpermute_grad, kNotImplemented},
    {Op::ragged_permute, kNotImplemented},
    {Op::ragged_unpermute, kNotImplemented},
    {Op::ragged_permute_grad, kNotImplemented},
    {Op::ragged_unpermute_grad, kNotImplemented},
    {Op::sort_chunks, kNotImplemented},
    {Op::sort_chunks_grad, kNotImplemented},
};
static_assert(kFakeKernels.lists_every_op());

const BackendOps kFakeBackend{
    .name = "fake",
    .kind = Backend::cuda,
    .supports = [](const Plan &p) { return kFakeKernels.supports(p); },
    .prepare =
        [](Plan &) {
          ++g_calls.prepare;
          return Status::success();
        },
    .run = [](const Plan &p, const Buffers &, std::byte *) { return kFakeKernels.find(p)(p); },
    .run_on_stream = nullptr,
};

class BackendSelectionFake : public ::testing::Test {
 protected:
  void SetUp() override { g_calls = {}; }
};

TEST_F(BackendSelectionFake, DeviceBackendWithoutAKernelIsAnErrorNotACall) {
  const RegistryEntry list[] = {
      {find_backend(Backend::reference), &kHostDevice, "reference", Backend::reference, false,
       "reference", ""},
      {&kFakeBackend, &kHostDevice, "fake", Backend::cuda, true, "test device", ""},
  };
  for (bool dp : {false, true}) {
    Plan grad = plan_of(Op::permute_grad, dp);
    const Status s = select_backend_in(list, grad, Backend::cuda);
    EXPECT_EQ(s.code, Code::invalid_param);
    EXPECT_EQ(s.message, std::string("aclnnMoeTokenPermuteWithRoutingMapGrad: permute_grad "
                                     "(dropAndPad=") +
                             (dp ? "true" : "false") +
                             ") is not implemented on the test device backend");
    EXPECT_EQ(grad.backend, nullptr);
  }
  EXPECT_EQ(g_calls.prepare, 0);
  EXPECT_EQ(g_calls.run, 0);
  // The operator it has: chosen, prepared, and run through its own kernel.
  Plan fwd = plan_of(Op::permute, false);
  ASSERT_TRUE(select_backend_in(list, fwd, Backend::cuda).ok());
  EXPECT_EQ(fwd.backend, &kFakeBackend);
  EXPECT_EQ(g_calls.prepare, 1);
  EXPECT_TRUE(fwd.backend->run(fwd, Buffers{}, nullptr).ok());
  EXPECT_EQ(g_calls.run, 1);
}

TEST_F(BackendSelectionFake, PinnedHostBackendWithoutAKernelIsAnErrorAutomaticSkipsIt) {
  const RegistryEntry list[] = {
      {&kFakeBackend, &kHostDevice, "fake", Backend::cpu, false, "test host", ""},
      {find_backend(Backend::reference), &kHostDevice, "reference", Backend::reference, false,
       "reference", ""},
  };
  Plan pinned = plan_of(Op::permute_grad, false);
  const Status s = select_backend_in(list, pinned, Backend::cpu);
  EXPECT_EQ(s.code, Code::invalid_param);
  EXPECT_EQ(s.message,
            "aclnnMoeTokenPermuteWithRoutingMapGrad: permute_grad (dropAndPad=false) is not "
            "implemented on the test host backend");
  EXPECT_EQ(g_calls.prepare, 0);
  // Automatic selection passes it by for the next backend that has the kernel.
  Plan automatic = plan_of(Op::permute_grad, false);
  ASSERT_TRUE(select_backend_in(list, automatic, Backend::automatic).ok());
  EXPECT_EQ(automatic.backend, find_backend(Backend::reference));
  EXPECT_EQ(g_calls.prepare, 0);
}

TEST(BackendSelection, EmptyProblemsAreTheOneDeferralToTheReference) {
  // The CPU backend, pinned, hands R = 0 and H = 0 to the reference (Note [Empty problems]).
  for (auto [R, H] : {std::pair<int64_t, int64_t>{0, 4}, {8, 0}}) {
    Plan p = plan_of(Op::permute_grad, false, R, H);
    EXPECT_EQ(find_backend(Backend::cpu)->supports(p), Support::empty_problem);
    ASSERT_TRUE(select_backend(p, Backend::cpu).ok());
    EXPECT_EQ(p.backend, find_backend(Backend::reference));
  }
  Plan p = plan_of(Op::permute_grad, false);
  ASSERT_TRUE(select_backend(p, Backend::cpu).ok());
  EXPECT_EQ(p.backend, find_backend(Backend::cpu));
}

TEST(KernelTable, KnowsWhenALineIsMissingOrTwice) {
  constexpr KernelTable<FakeKernel> missing{{Op::permute, {nullptr, fake_kernel, fake_kernel}}};
  static_assert(!missing.lists_every_op());
  constexpr KernelTable<FakeKernel> twice{
      {Op::permute, kNotImplemented},   {Op::permute_grad, kNotImplemented},
      {Op::unpermute, kNotImplemented}, {Op::unpermute_grad, kNotImplemented},
      {Op::permute, kNotImplemented},
  };
  static_assert(!twice.lists_every_op());
  EXPECT_EQ(twice.supports(plan_of(Op::permute, false)), Support::no_kernel);
}

TEST(WorkspaceSlots, OneSlotTooManyIsRefusedAndRecorded) {
  WorkspaceLayout w;
  for (int i = 0; i < WorkspaceLayout::kMaxSlots; ++i) EXPECT_EQ(w.add("fits", 16), i);
  EXPECT_EQ(w.overflowed(), nullptr);
  const uint64_t total = w.total();
  EXPECT_EQ(w.add("one_too_many", 16), WorkspaceLayout::kNoSlot);
  EXPECT_STREQ(w.overflowed(), "one_too_many");
  EXPECT_EQ(w.count(), WorkspaceLayout::kMaxSlots);
  EXPECT_EQ(w.total(), total) << "a refused slot reserves nothing";
  EXPECT_EQ(w.add("later", 16), WorkspaceLayout::kNoSlot);
  EXPECT_STREQ(w.overflowed(), "one_too_many") << "the first refusal is the one reported";
}

TEST(WorkspaceSlots, PlanSlotIdsStartEmptyForEverySlot) {
  const Plan p;
  ASSERT_EQ(p.ws_slot.size(), static_cast<size_t>(WorkspaceLayout::kMaxSlots));
  for (int id : p.ws_slot) EXPECT_EQ(id, WorkspaceLayout::kNoSlot);
}

const BackendOps kGreedyBackend{
    .name = "greedy",
    .kind = Backend::cpu,
    .supports = [](const Plan &) { return Support::yes; },
    .prepare =
        [](Plan &p) {
          for (int i = 0; i <= WorkspaceLayout::kMaxSlots; ++i)
            (void)p.workspace.add(i == WorkspaceLayout::kMaxSlots ? "slot_17" : "slot", 64);
          return Status::success();
        },
    .run = [](const Plan &, const Buffers &, std::byte *) { return Status::success(); },
    .run_on_stream = nullptr,
};

TEST(WorkspaceSlots, ABackendThatLaysOutTooManySlotsGetsAnError) {
  const RegistryEntry list[] = {
      {&kGreedyBackend, &kHostDevice, "greedy", Backend::cpu, false, "greedy", ""}};
  Plan p = plan_of(Op::permute, false);
  const Status s = select_backend_in(list, p, Backend::cpu);
  EXPECT_EQ(s.code, Code::tiling_error);
  EXPECT_EQ(s.message,
            "aclnnMoeTokenPermuteWithRoutingMap: internal error, please report: the greedy "
            "backend lays out more than 16 workspace slots (no room for 'slot_17')");
}

}  // namespace
}  // namespace moeperm::detail
