// `moeperm run`: generate a problem, run the token path of one MoE layer (or one operator of
// it, --op) through the CANN C API (timed), verify each operator against the reference
// backend through the C++ API on the inputs it consumed, report one line per operator.
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

int64_t host_bytes(const problem_model::Problem &p, const problem_model::UnpermuteTensors &u) {
  int64_t n = 0;
  for (const problem_model::HostTensor *t :
       {&p.tokens, &p.routing_map, &p.probs, &p.permuted_tokens, &p.permuted_probs,
        &p.sorted_indices, &p.grad, &p.probs_grad, &p.tokens_grad, &p.dense_probs_grad, &u.out_grad,
        &u.unpermuted, &u.out_index, &u.token_id, &u.permute_probs, &u.permuted_tokens_grad,
        &u.probs_grad})
    n += static_cast<int64_t>(t->storage.size());
  return n;
}

void print_problem(const RunOptions &o, const problem_model::Problem &p,
                   const problem_model::UnpermuteTensors &u, double generate_seconds) {
  const problem_model::ProblemSpec &s = p.spec;
  const long long R = p.permuted_tokens.desc.shape.at(0);  // as the library derived it
  if (o.op)
    std::printf("moeperm run: %s through the CANN C API, checked against the reference\n",
                std::string(api_name(*o.op)).c_str());
  else
    std::printf(
        "moeperm run: the token path (permute -> unpermute -> unpermute Grad -> permute Grad)\n"
        "through the CANN C API, each operator checked against the reference\n");
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
  std::printf("plans     %s\n", plan_permute(p.permute_desc()).to_string().c_str());
  std::printf("          %s\n",
              plan_unpermute(problem_model::unpermute_desc(p, u)).to_string().c_str());
  std::printf("          %s\n",
              plan_unpermute_grad(problem_model::unpermute_grad_desc(p, u)).to_string().c_str());
  std::printf("          %s\n", plan_permute_grad(p.grad_desc()).to_string().c_str());
  std::printf("inputs    seed %llu, generated in %s, %s of host tensors\n",
              static_cast<unsigned long long>(s.seed), format_seconds(generate_seconds).c_str(),
              format_bytes(static_cast<double>(host_bytes(p, u))).c_str());
  if (!o.op)
    std::printf(
        "path      experts are the identity: the unpermute reads the permute's rows, the\n"
        "          unpermute Grad reads its outIndex/permuteTokenId, and the permute Grad\n"
        "          reads the unpermute Grad's permutedTokensGradOut\n");
}

int64_t bytes_of(PathOp op, const problem_model::ProblemSpec &s) {
  switch (op) {
    case PathOp::permute: return problem_model::permute_bytes(s);
    case PathOp::unpermute: return problem_model::unpermute_bytes(s);
    case PathOp::unpermute_grad: return problem_model::unpermute_grad_bytes(s);
    case PathOp::permute_grad: return problem_model::permute_grad_bytes(s);
  }
  return 0;
}

void print_header() {
  std::printf("\n%-42s %16s %13s %10s %11s  %s\n", "CANN C API (created stream)",
              "GetWorkspaceSize", "execute+sync", "moved", "effective", "vs reference");
}

// One line per operator: its best times, traffic, and the verdict of its outputs.
void print_op_row(PathOp op, const problem_model::ProblemSpec &s, const OpTimes &t,
                  const Verification &v) {
  const double exec = min_of(t.execute_sync);
  const auto bytes = static_cast<double>(bytes_of(op, s));
  const std::string verdict = v.identical() ? "identical (" + std::to_string(v.outputs.size()) +
                                                  " output" + (v.outputs.size() > 1 ? "s)" : ")")
                                            : std::to_string(v.differing()) + " elements differ";
  std::printf("%-42s %16s %13s %10s %11s  %s\n", std::string(api_name(op)).c_str(),
              format_seconds(min_of(t.get_workspace_size)).c_str(), format_seconds(exec).c_str(),
              format_bytes(bytes).c_str(), format_gbps(bytes, exec).c_str(), verdict.c_str());
  for (const OutputComparison &c : v.outputs)
    if (c.differing != 0)
      std::printf("    %-26s %12lld elements, %lld differ\n", c.name.c_str(),
                  static_cast<long long>(c.elements), static_cast<long long>(c.differing));
}

// Runs one operator: through the C API when selected (timed, then verified), else with the
// reference when a selected operator after it needs its outputs, else not at all.
struct PathRun {
  const RunOptions &o;
  problem_model::Problem &p;
  problem_model::UnpermuteTensors &u;
  void *stream;
  int64_t differing = 0, operators = 0;
  double reference_seconds = 0;

  bool selected(PathOp op) const { return !o.op || *o.op == op; }
  // Needed as the input of the selected operator (the path's order is kPathOps).
  bool needed(PathOp op) const {
    if (selected(op)) return true;
    switch (*o.op) {
      case PathOp::permute: return false;
      case PathOp::unpermute: return op == PathOp::permute;
      case PathOp::unpermute_grad: return op == PathOp::permute || op == PathOp::unpermute;
      case PathOp::permute_grad: return op == PathOp::permute;
    }
    return false;
  }
  // The permute Grad's G: the unpermute Grad's dX on the whole path, else the problem's.
  const problem_model::HostTensor &permute_grad_input() const {
    return o.op ? p.grad : u.permuted_tokens_grad;
  }

  void step(PathOp op) {
    if (!needed(op)) return;
    if (!selected(op)) {
      reference(op);
      std::printf("%-42s %s\n", std::string(api_name(op)).c_str(),
                  "(inputs of the selected operator: run by the reference backend)");
      return;
    }
    const OpTimes t = through_capi(op);
    const Verification v = verify(op);
    print_op_row(op, p.spec, t, v);
    std::fflush(stdout);
    differing += v.differing();
    reference_seconds += v.seconds;
    ++operators;
  }
  OpTimes through_capi(PathOp op) {
    switch (op) {
      case PathOp::permute: return capi_permute(p, stream, o.repeat);
      case PathOp::unpermute: return capi_unpermute(p, u, stream, o.repeat);
      case PathOp::unpermute_grad: return capi_unpermute_grad(p, u, stream, o.repeat);
      case PathOp::permute_grad:
        return capi_permute_grad(p, permute_grad_input(), stream, o.repeat);
    }
    return {};
  }
  Verification verify(PathOp op) {
    switch (op) {
      case PathOp::permute: return verify_permute(p);
      case PathOp::unpermute: return verify_unpermute(p, u);
      case PathOp::unpermute_grad: return verify_unpermute_grad(p, u);
      case PathOp::permute_grad: return verify_permute_grad(p, permute_grad_input());
    }
    return {};
  }
  void reference(PathOp op) {
    switch (op) {
      case PathOp::permute: reference_permute(p); break;
      case PathOp::unpermute: reference_unpermute(p, u); break;
      case PathOp::unpermute_grad: reference_unpermute_grad(p, u); break;
      case PathOp::permute_grad: break;  // nothing runs after it
    }
  }
};

int report(const PathRun &r, int repeat) {
  if (repeat > 1) std::printf("(best of %d runs each)\n", repeat);
  std::printf("\nreference backend (C++ API) on the inputs each operator consumed: %s in all\n",
              format_seconds(r.reference_seconds).c_str());
  if (r.differing == 0) {
    std::printf("verified: bitwise identical to the reference (%lld operator%s, every output)\n",
                static_cast<long long>(r.operators), r.operators > 1 ? "s" : "");
    return kExitOk;
  }
  std::printf("FAILED: %lld elements differ from the reference\n",
              static_cast<long long>(r.differing));
  std::fprintf(stderr, "moeperm: verification failed: %lld elements differ from the reference\n",
               static_cast<long long>(r.differing));
  return kExitFailure;
}

int run(const RunOptions &o) {
  apply_environment(o);
  const auto t0 = std::chrono::steady_clock::now();
  problem_model::Problem problem = problem_model::make_problem(o.spec);
  problem_model::UnpermuteTensors unpermute = problem_model::make_unpermute_tensors(problem);
  print_problem(o, problem, unpermute,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  acl::Runtime runtime;  // first in, last out: every resource below is released before it
  const acl::StreamPtr stream = acl::create_stream();
  print_header();
  PathRun r{o, problem, unpermute, stream.get()};
  for (PathOp op : kPathOps) r.step(op);
  return report(r, o.repeat);
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
