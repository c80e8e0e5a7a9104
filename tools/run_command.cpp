// `moeperm run`: generate a problem, run forward + backward through the CANN C API (timed),
// verify against the reference backend through the C++ API, report.
#include <moeperm/acl_handles.hpp>
#include <moeperm/moeperm.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <string>

#include "capi_run.hpp"
#include "cli_args.hpp"
#include "commands.hpp"
#include "problem_model.hpp"
#include "report.hpp"
#include "verify.hpp"

namespace moeperm::cli {
namespace {

// The C API has no backend or thread arguments: like any CANN program, it is steered
// through the environment, which the flags set for this process (a flag beats a variable
// inherited from the shell).
void apply_environment(const RunOptions &o) {
  if (o.backend) setenv("MOEPERM_BACKEND", std::string(backend_name(*o.backend)).c_str(), 1);
  if (o.threads) {
    setenv("MOEPERM_NUM_THREADS", std::to_string(*o.threads).c_str(), 1);
    set_num_threads(*o.threads);
  }
}

int64_t host_bytes(const problem_model::Problem &p) {
  int64_t n = 0;
  for (const problem_model::HostTensor *t :
       {&p.tokens, &p.routing_map, &p.probs, &p.permuted_tokens, &p.permuted_probs,
        &p.sorted_indices, &p.grad, &p.probs_grad, &p.tokens_grad, &p.dense_probs_grad})
    n += static_cast<int64_t>(t->storage.size());
  return n;
}

void print_problem(const problem_model::Problem &p, double generate_seconds) {
  const problem_model::ProblemSpec &s = p.spec;
  const long long R = p.permuted_tokens.desc.shape.at(0);  // as the library derived it
  std::printf(
      "moeperm run: forward + backward through the CANN C API, checked against the reference\n");
  if (s.drop_and_pad)
    std::printf("problem   T=%lld H=%lld E=%lld K=%lld drop-and-pad C=%lld: R=E*C=%lld rows\n",
                static_cast<long long>(s.T), static_cast<long long>(s.H),
                static_cast<long long>(s.E), static_cast<long long>(s.K),
                static_cast<long long>(s.capacity), R);
  else
    std::printf("problem   T=%lld H=%lld E=%lld K=%lld drop-less%s: R=T*K=%lld rows\n",
                static_cast<long long>(s.T), static_cast<long long>(s.H),
                static_cast<long long>(s.E), static_cast<long long>(s.K),
                s.ragged ? " ragged (tokens with < K experts)" : "", R);
  std::printf("dtypes    tokens/grads %s, probs %s, routingMap %s\n",
              std::string(dtype_name(s.dtype)).c_str(),
              s.with_probs ? std::string(dtype_name(s.probs_dtype)).c_str() : "none (--no-probs)",
              std::string(dtype_name(s.map_dtype)).c_str());
  std::printf("threads   %d\n", get_num_threads());
  std::printf("forward   %s\n", plan_permute(p.permute_desc()).to_string().c_str());
  std::printf("backward  %s\n", plan_permute_grad(p.grad_desc()).to_string().c_str());
  std::printf("inputs    seed %llu, generated in %s, %s of host tensors\n",
              static_cast<unsigned long long>(s.seed), format_seconds(generate_seconds).c_str(),
              format_bytes(static_cast<double>(host_bytes(p))).c_str());
}

void print_op_row(const char *name, const OpTimes &t, int64_t bytes) {
  const double exec = min_of(t.execute_sync);
  std::printf("%-40s %16s %14s %10s %11s\n", name,
              format_seconds(min_of(t.get_workspace_size)).c_str(), format_seconds(exec).c_str(),
              format_bytes(static_cast<double>(bytes)).c_str(),
              format_gbps(static_cast<double>(bytes), exec).c_str());
}

void print_times(const problem_model::ProblemSpec &s, const CapiTimes &t, int repeat) {
  std::printf("\n%-40s %16s %14s %10s %11s\n", "CANN C API (created stream)", "GetWorkspaceSize",
              "execute+sync", "moved", "effective");
  print_op_row("aclnnMoeTokenPermuteWithRoutingMap", t.forward, problem_model::permute_bytes(s));
  print_op_row("aclnnMoeTokenPermuteWithRoutingMapGrad", t.backward,
               problem_model::permute_grad_bytes(s));
  if (repeat > 1)
    std::printf("(best of %d; mean execute+sync: forward %s, backward %s)\n", repeat,
                format_seconds(mean_of(t.forward.execute_sync)).c_str(),
                format_seconds(mean_of(t.backward.execute_sync)).c_str());
}

int report_verification(const Verification &v) {
  std::printf("\nreference backend (C++ API) on the same inputs: forward %s, backward %s\n",
              format_seconds(v.forward_seconds).c_str(),
              format_seconds(v.backward_seconds).c_str());
  for (const OutputComparison &c : v.outputs) {
    const std::string verdict =
        c.differing == 0 ? "identical" : std::to_string(c.differing) + " differ";
    std::printf("  %-26s %12lld elements  %s\n", c.name.c_str(), static_cast<long long>(c.elements),
                verdict.c_str());
  }
  if (v.identical()) {
    std::printf("verified: bitwise identical to the reference\n");
    return kExitOk;
  }
  std::printf("FAILED: %lld elements differ from the reference\n",
              static_cast<long long>(v.differing()));
  std::fprintf(stderr, "moeperm: verification failed: %lld elements differ from the reference\n",
               static_cast<long long>(v.differing()));
  return kExitFailure;
}

int run(const RunOptions &o) {
  apply_environment(o);
  const auto t0 = std::chrono::steady_clock::now();
  problem_model::Problem problem = problem_model::make_problem(o.spec);
  print_problem(problem,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::fflush(stdout);
  const CapiTimes times = run_through_capi(problem, o.repeat);
  print_times(o.spec, times, o.repeat);
  std::fflush(stdout);
  return report_verification(verify_against_reference(problem));
}

}  // namespace

int run_command(std::span<const std::string_view> args) {
  RunOptions options;
  try {
    options = parse_run_args(args);
  } catch (const UsageError &e) {
    std::fprintf(stderr, "moeperm run: %s\n", e.what());
    return kExitUsage;
  }
  if (options.help) {
    std::fputs(kRunHelp, stdout);
    return kExitOk;
  }
  try {
    return run(options);
  } catch (const acl::AclError &e) {
    std::fprintf(stderr, "moeperm run: %s\n", e.what());
  } catch (const Error &e) {  // from the C++ API: planning, or the reference run
    std::fprintf(stderr, "moeperm run: %s (status %d)\n", e.what(), static_cast<int>(e.code()));
  } catch (const std::bad_alloc &) {
    std::fprintf(stderr, "moeperm run: out of host memory for this problem size\n");
  }
  return kExitFailure;
}

}  // namespace moeperm::cli
