// The operators `moeperm bench` times on one case, in the token path's order (each reads
// what the one before it wrote): permute, unpermute (identity experts, with probs),
// unpermute Grad, permute Grad; then the ragged pair's path on the same problem and the
// chunk sort of its rows and its Grad. Shared by the CPU runner (bench_runner.cpp) and the
// CUDA runner (bench_runner_cuda.cpp), so both time the same calls on the same tensors.
#pragma once

#include <moeperm/moeperm.hpp>

#include <array>
#include <bit>
#include <functional>
#include <memory>
#include <span>
#include <type_traits>
#include <variant>
#include <vector>

#include "bench.hpp"
#include "bench_ragged.hpp"
#include "problem_model.hpp"

namespace moeperm::bench {

// A call's tensors: its operator's data struct (each an aggregate of tensor pointers only).
using OpData = std::variant<PermuteData, UnpermuteData, UnpermuteGradData, PermuteGradData,
                            RaggedPermuteData, RaggedUnpermuteData, RaggedUnpermuteGradData,
                            RaggedPermuteGradData, SortChunksData, SortChunksGradData>;

struct PathOp {
  std::function<Plan(Backend)> plan_on;              // the call, planned on a backend
  OpData data;                                       // host tensors
  OpResult *result;                                  // where its figures go (result->bytes set)
  problem_model::Traffic traffic;                    // the bytes it must read and write at least
  std::vector<problem_model::HostTensor *> outputs;  // what it writes
};

struct TokenPath {
  // Built in place (the data structs point at the tensors); the ops are added by
  // make_token_path.
  explicit TokenPath(const problem_model::ProblemSpec &spec)
      : p(problem_model::make_problem(spec)),
        u(problem_model::make_unpermute_tensors(p)),
        rp(make_ragged_path(p, u)) {}
  TokenPath(const TokenPath &) = delete;
  TokenPath &operator=(const TokenPath &) = delete;

  problem_model::Problem p;
  problem_model::UnpermuteTensors u;
  RaggedPath rp;
  std::vector<PathOp> ops;  // point into p, u and rp: a path is never moved
  // Every tensor the calls read or write.
  std::vector<problem_model::HostTensor *> tensors();
};

// The path of a case's problem (inputs random from its seed, outputs poisoned), its results
// going to `res`.
std::unique_ptr<TokenPath> make_token_path(const problem_model::ProblemSpec &spec, CaseResult &res);

// The same call with every tensor pointer p replaced by where(p) (nullptr stays nullptr):
// every data struct of the API is an aggregate of tensor pointers only (const void * or
// void *), so its pointers are translated in place, whatever the operator. The CUDA runner
// gives each call its tensors' device copies this way.
template <class Where>
OpData translated(const OpData &data, Where &&where) {
  return std::visit(
      [&](const auto &d) -> OpData {
        using D = std::decay_t<decltype(d)>;
        static_assert(sizeof(D) % sizeof(void *) == 0 && alignof(D) == alignof(void *));
        auto pointers = std::bit_cast<std::array<const void *, sizeof(D) / sizeof(void *)>>(d);
        for (const void *&p : pointers)
          if (p != nullptr) p = where(p);
        return std::bit_cast<D>(pointers);
      },
      data);
}

// moeperm::run of the call with its host tensors.
void run_on_host(const Plan &plan, const OpData &data, std::span<std::byte> workspace);

}  // namespace moeperm::bench
