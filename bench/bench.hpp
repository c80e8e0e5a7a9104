// moeperm bench: timing of the operators (the permute pair and the unpermute pair) on the SPEC §7
// shapes, reported as physics — bytes moved, GB/s, and the ratio to a multi-threaded memcpy of the
// same bytes measured in the same run (the practical ceiling of a memory-bound operator).
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "problem_model.hpp"

namespace moeperm::bench {

struct Case {
  std::string name;
  problem_model::ProblemSpec spec;
  int threads = 1;
  bool with_reference = false;  // also time the single-threaded reference kernels
  // Also time each operator planned per call, as a CANN program calls it (GetWorkspaceSize,
  // a workspace from the allocator, then the run), against the plan built once.
  bool plan_per_call = false;
  // The CPU kernels' instruction set for this case (MOEPERM_CPU_ISA while it runs); empty:
  // the CPU backend's own choice.
  std::string isa;
};

// Sets MOEPERM_CPU_ISA to `isa` (nothing if empty) for its lifetime: the CPU backend reads it
// at every plan. The previous value comes back on destruction. Not thread-safe (setenv).
class ScopedCpuIsa {
 public:
  explicit ScopedCpuIsa(const std::string &isa);
  ~ScopedCpuIsa();
  ScopedCpuIsa(const ScopedCpuIsa &) = delete;
  ScopedCpuIsa &operator=(const ScopedCpuIsa &) = delete;

 private:
  bool set_ = false, had_ = false;
  std::string old_;
};

struct Options {
  int runs = 10;                    // timed runs per operator (median reported)
  int warmup = 2;                   // untimed runs first
  int ref_runs = 1;                 // timed runs of the reference kernels
  int max_threads = 0;              // 0: moeperm::get_num_threads()
  std::vector<std::string> suites;  // empty: named, sweep, threads
  std::string device = "cpu";       // cpu, or cuda (the CUDA backend, timed with CUDA events)
  bool huge_pages = false;          // advise huge pages for every buffer (problem_model.hpp)
};

struct OpResult {
  double median_ms = 0, min_ms = 0;
  double bytes = 0;          // moved per call (reads + writes)
  double gbps = 0;           // bytes / median
  double memcpy_ms = 0;      // median of the same-run memcpy moving the same bytes
  double ratio = 0;          // median_ms / memcpy_ms
  double traffic_ms = -1;    // median of the same-run stream of the operator's own reads and
                             // writes (Ceilings::traffic_ms), -1 if not timed
  double ref_ms = -1;        // single-threaded reference kernel, -1 if not timed
  double per_call_ms = -1;   // median planned per call (plan + workspace + run), -1 if not timed
  int bit_differences = -1;  // cuda: output elements differing from the CPU backend; -1 not checked
  bool measured = false;     // set by finish(); an operator a runner does not time has no row
};

struct CaseResult {
  Case c;
  std::string plan;            // the grad plan, as moeperm prints it
  OpResult forward, backward;  // the permute and its Grad
  OpResult unpermute, unpermute_grad;
  // The ragged pair (docs/ragged.md) on the same problem, where the device's backend has it.
  OpResult ragged_permute, ragged_unpermute, ragged_unpermute_grad, ragged_permute_grad;
  // The chunk sort (docs/sort_chunks.md) of the ragged permute's rows, and its Grad.
  OpResult sort_chunks, sort_chunks_grad;
};

// The standard suites: "named" (DeepSeek-like, Mixtral-like, CANN's sample),
// "sweep" (T from 512 to 16384), "threads" (1 .. max threads),
// "isa" (each vector instruction set this CPU has, on one thread and on all).
std::vector<Case> standard_cases(const Options &options);

// Plans, allocates and times one case (every operator the device's backend has) on
// options.device. On the CPU, each iteration runs the token path in order (permute,
// unpermute, unpermute Grad, permute Grad: each reads what the one before it wrote), every
// operator followed by its own same-run memcpy.
CaseResult run_case(const Case &c, const Options &options);
// The CUDA version (bench_runner_cuda.cpp): device buffers, CUDA events on one stream, the
// ceiling is a device-to-device cudaMemcpyAsync of the same bytes in the same run, and each
// output is compared once, bit for bit, with the CPU backend's. Throws Error without CUDA.
CaseResult run_case_cuda(const Case &c, const Options &options);

// Shared by both runners (bench_stats.cpp): the median of a sample, and an OpResult's
// timing fields from the operator's and the same-run ceiling's samples (r.bytes set).
double median(std::vector<double> v);
void finish(OpResult &r, const std::vector<double> &op, const std::vector<double> &copy);

void print_table(std::ostream &out, const std::vector<CaseResult> &results);
void write_json(std::ostream &out, const std::vector<CaseResult> &results, const Options &options);

}  // namespace moeperm::bench
