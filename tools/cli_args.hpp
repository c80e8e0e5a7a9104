// Command-line parsing for the moeperm command: turns argv into RunOptions, or throws
// UsageError with a one-line message (the caller prints it and exits with status 2).
#pragma once

#include <moeperm/moeperm.hpp>

#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>

#include "bench.hpp"
#include "problem_model.hpp"

namespace moeperm::cli {

// A malformed command line: unknown flag, missing or malformed value, value out of range,
// or flags that contradict each other.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The operators of one MoE layer's token path, in the order `moeperm run` runs them: the
// forward pair, then the backward pair in reverse.
enum class PathOp { permute, unpermute, unpermute_grad, permute_grad };
inline constexpr PathOp kPathOps[] = {PathOp::permute, PathOp::unpermute, PathOp::unpermute_grad,
                                      PathOp::permute_grad};
// The CANN API name and the --op name of each.
std::string_view api_name(PathOp op);
std::string_view op_flag_name(PathOp op);

// Everything `moeperm run` can be told.
struct RunOptions {
  problem_model::ProblemSpec spec;  // defaults: the DeepSeek-V3-like layer of SPEC §7
  std::optional<int> threads;       // unset: MOEPERM_NUM_THREADS or all hardware threads
  std::optional<Backend> backend;   // unset: MOEPERM_BACKEND or the automatic choice
  std::optional<PathOp> op;         // --op: one operator; unset: the whole token path
  int repeat = 1;                   // timed iterations of each operator
  bool help = false;                // print `moeperm run --help` and stop
};

// Parses the arguments after `run`. Throws UsageError.
RunOptions parse_run_args(std::span<const std::string_view> args);

// Everything `moeperm bench` can be told.
struct BenchCommandOptions {
  bench::Options bench;   // suites, runs, warm-up, thread ceiling
  std::string json_path;  // --json FILE: also write the figures as JSON ("-": stdout)
  bool help = false;
};

// Parses the arguments after `bench`. Throws UsageError.
BenchCommandOptions parse_bench_args(std::span<const std::string_view> args);

// Names the CLI accepts and prints for dtypes and backends.
std::string_view dtype_name(DType dtype);
std::string_view backend_name(Backend backend);

}  // namespace moeperm::cli
