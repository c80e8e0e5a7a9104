// The token path `moeperm bench` times on every device (bench/token_path.hpp): each operator
// of the tree once, in the path's order, each with its own result slot, and run on the CPU
// backend it writes every output it lists, bit for bit as the reference backend does (the
// CUDA runner compares its outputs with exactly these).
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <set>
#include <string>
#include <vector>

#include "bench.hpp"
#include "token_path.hpp"

namespace moeperm::bench {
namespace {

problem_model::ProblemSpec small(bool drop_and_pad) {
  problem_model::ProblemSpec s;
  s.T = 37, s.H = 20, s.E = 8, s.K = 3, s.capacity = 5;
  s.drop_and_pad = drop_and_pad;
  s.dtype = DType::bf16, s.probs_dtype = DType::f32;
  return s;
}

void run_path(TokenPath &path, Backend backend) {
  for (const PathOp &op : path.ops) {
    const Plan plan = op.plan_on(backend);
    std::vector<std::byte> ws(plan.workspace_bytes());
    run_on_host(plan, op.data, ws);
  }
}

// The operator's name, as its plan prints it first.
std::string op_name(const PathOp &op) {
  const std::string s = op.plan_on(Backend::cpu).to_string();
  return s.substr(0, s.find(' '));
}

TEST(BenchTokenPath, EveryOperatorOnceWithItsOwnResult) {
  CaseResult res;
  const auto path = make_token_path(small(false), res);
  ASSERT_EQ(path->ops.size(), std::variant_size_v<OpData>);
  std::set<size_t> kinds;
  std::set<const OpResult *> results;
  std::set<std::string> names;
  for (const PathOp &op : path->ops) {
    kinds.insert(op.data.index());
    results.insert(op.result);
    names.insert(op_name(op));
    EXPECT_GT(op.result->bytes, 0) << op_name(op);
    EXPECT_EQ(op.result->bytes, static_cast<double>(op.traffic.total())) << op_name(op);
    EXPECT_FALSE(op.outputs.empty()) << op_name(op);
  }
  EXPECT_EQ(kinds.size(), path->ops.size()) << "each data struct (operator) once";
  EXPECT_EQ(results.size(), path->ops.size()) << "each operator its own result";
  EXPECT_EQ(names.size(), path->ops.size()) << "each plan a different operator";
  EXPECT_EQ(path->ops[0].result, &res.forward);
  EXPECT_EQ(path->ops[3].result, &res.backward) << "the permute Grad's plan is the case's";
}

TEST(BenchTokenPath, TheCpuBackendWritesEveryOutputAsTheReference) {
  for (bool drop_and_pad : {false, true}) {
    SCOPED_TRACE(drop_and_pad ? "drop-and-pad" : "drop-less");
    CaseResult a, b, c;
    const auto cpu = make_token_path(small(drop_and_pad), a);
    const auto ref = make_token_path(small(drop_and_pad), b);
    const auto untouched = make_token_path(small(drop_and_pad), c);
    run_path(*cpu, Backend::cpu);
    run_path(*ref, Backend::reference);
    for (size_t i = 0; i < cpu->ops.size(); ++i) {
      SCOPED_TRACE(op_name(cpu->ops[i]));
      for (size_t k = 0; k < cpu->ops[i].outputs.size(); ++k) {
        const problem_model::HostTensor &got = *cpu->ops[i].outputs[k];
        EXPECT_EQ(problem_model::count_bit_differences(got, *ref->ops[i].outputs[k]), 0)
            << "output " << k;
      }
      // Its first output (the rows or tokens) was written: it differs from its poison.
      EXPECT_GT(problem_model::count_bit_differences(*cpu->ops[i].outputs[0],
                                                     *untouched->ops[i].outputs[0]),
                0);
    }
  }
}

// A call's data struct as its fields (each a tensor pointer).
std::vector<const void *> fields(const OpData &data) {
  return std::visit(
      [](const auto &d) {
        const auto a = std::bit_cast<std::array<const void *, sizeof(d) / sizeof(void *)>>(d);
        return std::vector<const void *>(a.begin(), a.end());
      },
      data);
}

// The CUDA runner's translation to device copies: every tensor pointer of every call, and
// only those, goes through `where`, in its own field; absent tensors stay null.
TEST(BenchTokenPath, TranslatedReplacesEveryTensorPointer) {
  CaseResult res;
  const auto path = make_token_path(small(true), res);
  std::set<const void *> tensors;
  for (problem_model::HostTensor *t : path->tensors())
    if (!t->storage.empty()) tensors.insert(t->data());
  for (const PathOp &op : path->ops) {
    SCOPED_TRACE(op_name(op));
    const OpData moved = translated(op.data, [&](const void *p) {
      EXPECT_TRUE(tensors.count(p)) << "not a tensor of the path";
      return static_cast<const char *>(p) + 1;  // another address for each tensor
    });
    ASSERT_EQ(moved.index(), op.data.index());
    const std::vector<const void *> before = fields(op.data), after = fields(moved);
    ASSERT_EQ(after.size(), before.size());
    int named = 0;
    for (size_t i = 0; i < before.size(); ++i) {
      named += before[i] != nullptr;
      EXPECT_EQ(after[i], before[i] ? static_cast<const char *>(before[i]) + 1 : nullptr)
          << "field " << i;
    }
    EXPECT_GE(named, 2) << "a call reads one tensor and writes another at least";
  }
}

}  // namespace
}  // namespace moeperm::bench
