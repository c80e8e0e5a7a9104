// moeperm_testing: what every test binary shares. Running a problem through one backend
// with a workspace of exactly the size the plan asked for (CUB's launch-helper rule),
// copying tensors into other layouts, and bitwise assertions with useful diagnostics.
//
// Conventions: outputs are allocated poisoned (every storage byte 0xA5, see
// problem_model::make_tensor), so an element a kernel forgot to write shows up as a bit
// difference, and a byte written outside a view shows up in bytes_written_outside_view().
#pragma once

#include <gtest/gtest.h>
#include <moeperm/moeperm.hpp>
#include "problem_model.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace moeperm::testing {

using problem_model::HostTensor;
using problem_model::Layout;
using problem_model::Problem;
using problem_model::ProblemSpec;

inline constexpr std::byte kPoison{0xA5};

// The registry entry of `backend` (moeperm::backends()); `automatic` is a host backend.
BackendInfo backend_info(Backend backend);

// Expects (gtest) that `plan` runs on `backend`, the backend under test, and not on another
// that stood in for it (Note [Backend selection]); the one exception is Note [Empty problems].
void expect_planned_on(const Plan &plan, Backend backend);

// Plans and runs the forward of `p` on `backend`; the workspace is a fresh buffer of exactly
// plan.workspace_bytes() bytes. Throws moeperm::Error like run() does. On a device backend
// the problem goes to device memory and back (device_memory.hpp), also when the run throws.
void run_forward(Problem &p, Backend backend);
// Plans and runs the backward of `p` (S is p.sorted_indices, as the forward left it).
void run_backward(Problem &p, Backend backend);
// Forward, then backward.
void run_both(Problem &p, Backend backend);
// The same with a descriptor and data that the test changed (e.g. an optional tensor left
// out): every data pointer is null or points into one of p's tensors (on a device backend
// it is translated to that tensor's device copy).
void run_with(Problem &p, Backend backend, const PermuteDesc &desc, const PermuteData &data);
void run_with(Problem &p, Backend backend, const PermuteGradDesc &desc,
              const PermuteGradData &data);

// A copy of `src`'s values (bit for bit) in a new layout; storage outside the view is poison.
HostTensor relayout(const HostTensor &src, const Layout &layout);
// A poisoned tensor with the shape and dtype of `like`, in `layout`.
HostTensor poisoned_like(const HostTensor &like, const Layout &layout = {});

// Storage bytes that do not belong to any element of the view and differ from kPoison:
// an output must never write there.
int64_t bytes_written_outside_view(const HostTensor &t);
// True when every storage byte is still kPoison (nothing was written).
bool untouched(const HostTensor &t);

// Raw bits of one element (zero-extended), for exact expectations and diagnostics.
uint64_t bits_at(const HostTensor &t, int64_t i, int64_t j = 0);
void set_bits(HostTensor &t, int64_t i, int64_t j, uint64_t bits);

// The int32 values of a 1-D index tensor.
std::vector<int32_t> read_indices(const HostTensor &t);
void write_indices(HostTensor &t, const std::vector<int32_t> &values);

// got and want have the same shape and dtype and every element has the same bits. On failure
// the message gives the number of differing elements and the first few with their bits.
::testing::AssertionResult BitwiseEqual(const HostTensor &got, const HostTensor &want);

// Every element is +0 (all-zero bits).
::testing::AssertionResult AllZero(const HostTensor &t);

// The problem's outputs (forward and backward) are bitwise equal to `want`'s.
::testing::AssertionResult SameOutputs(const Problem &got, const Problem &want);

// "T=.. H=.. E=.. K=.. C=.. dp=.. dtype=.." for SCOPED_TRACE.
std::string describe(const ProblemSpec &s);

// Returns the moeperm::Error that `f` throws; fails the test (and returns a default error
// with Code::ok) when it throws nothing or something else.
template <class F>
Error capture_error(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return e;
  } catch (const std::exception &e) {
    ADD_FAILURE() << "expected moeperm::Error, got std::exception: " << e.what();
    return Error(Code::ok, "");
  }
  ADD_FAILURE() << "expected moeperm::Error, nothing was thrown";
  return Error(Code::ok, "");
}

// What a call that may fail did: the moeperm::Error's code and message, or {ok, ""} when it
// threw nothing (for tests where both outcomes are expected).
struct Failure {
  Code code = Code::ok;
  std::string message;
};
template <class F>
Failure failure_of(F &&f) {
  try {
    f();
  } catch (const Error &e) {
    return {e.code(), e.what()};
  }
  return {};
}

// Sets an environment variable for the lifetime of the object, restoring the old value.
class ScopedEnv {
 public:
  ScopedEnv(const char *name, const char *value);
  ~ScopedEnv();
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

 private:
  std::string name_, old_;
  bool had_old_ = false;
};

// Sets moeperm::set_num_threads for the lifetime of the object (restores the default).
class ScopedThreads {
 public:
  explicit ScopedThreads(int n) { set_num_threads(n); }
  ~ScopedThreads() { set_num_threads(0); }
  ScopedThreads(const ScopedThreads &) = delete;
  ScopedThreads &operator=(const ScopedThreads &) = delete;
};

}  // namespace moeperm::testing
