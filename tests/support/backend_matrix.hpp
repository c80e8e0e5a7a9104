// The conformance matrix: the registered backends (moeperm::backends(), in registry order),
// and for the CPU backend its instruction-set variants (forced through MOEPERM_CPU_ISA, the
// ones this CPU supports) and thread counts (moeperm::set_num_threads). A test suite takes a
// BackendConfig as (the last element of) its parameter and derives its fixture from
// BackendCase, which applies the configuration around each test and skips a device backend
// that is not available ("no CUDA GPU").
//
// Parameter names: the backend's name, then the forced variant and thread count where the
// matrix sets them: "cpu", "cpu_avx2", "cpu_scalar_1thread", "cpu_avx512_allthreads",
// "reference", "cuda". A device backend's name ends every test name of its cases, which is how
// tests/CMakeLists.txt registers them under the label `gpu` (a gtest filter).
//
// Which matrix a suite runs is chosen by its cost (each entry is a test process):
//   Matrix::one    every backend once at its defaults (best variant, all threads);
//   Matrix::isas   the CPU backend once per variant (its row kernels differ per variant);
//   Matrix::full   the CPU backend per variant x {1 thread, all threads}.
// Threads only change the work split of problems that span several token blocks (architecture
// §6.6), so small problems gain nothing from the thread dimension.
#pragma once

#include <gtest/gtest.h>
#include <moeperm/moeperm.hpp>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "testing.hpp"

namespace moeperm::testing {

enum class Threads { unset, one, all };

struct BackendConfig {
  BackendInfo info;
  std::string isa;                   // forced MOEPERM_CPU_ISA variant; empty: the backend's choice
  Threads threads = Threads::unset;  // unset: the default (all hardware threads)
  Backend backend() const { return info.backend; }
};

enum class Matrix { one, isas, full };

// Which backends a suite runs on besides the fast host ones.
struct Include {
  bool reference = false;  // the reference itself (for suites that do not compare against it)
  bool devices = true;     // device backends (suites whose runs all go through run_* / c_*)
};

std::vector<BackendConfig> backend_configs(Matrix matrix, Include include = {});
// Only the configurations of backends with a thread count and variants (the CPU backend).
std::vector<BackendConfig> threaded_configs(Matrix matrix);
std::string config_name(const BackendConfig &c);

// The CPU variants MOEPERM_CPU_ISA can force on this machine, slowest first.
std::vector<std::string> supported_isas();

// Applies a configuration for its lifetime: MOEPERM_CPU_ISA and the thread count; the C
// runtime's current device (aclrtSetDevice under MOEPERM_DEVICE = the backend's device or
// cpu), so that the C API runs where the config's memory is; and for a host backend
// MOEPERM_BACKEND = its name, so that the C API's automatic host choice is this backend.
class ScopedConfig {
 public:
  explicit ScopedConfig(const BackendConfig &c);
  ~ScopedConfig();
  ScopedConfig(const ScopedConfig &) = delete;
  ScopedConfig &operator=(const ScopedConfig &) = delete;

 private:
  std::optional<ScopedEnv> isa_, num_threads_, device_, backend_;
  bool threads_set_ = false;
};

inline const BackendConfig &config_of(const BackendConfig &c) { return c; }
template <class... T>
const BackendConfig &config_of(const std::tuple<T...> &t) {
  return std::get<sizeof...(T) - 1>(t);
}

// The fixture of a suite over (..., BackendConfig). A derived SetUp calls BackendCase::SetUp()
// first and returns when IsSkipped().
template <class Param = BackendConfig>
class BackendCase : public ::testing::TestWithParam<Param> {
 protected:
  void SetUp() override {
    const BackendInfo &info = config().info;
    if (!info.available) {
      if (std::string(info.name) == "cuda")
        GTEST_SKIP() << (cuda_built() ? "no CUDA GPU: the CUDA driver reports none"
                                      : "no CUDA GPU: this moeperm was built without CUDA");
      GTEST_SKIP() << "backend " << info.name << " is not available here";
    }
    scoped_.emplace(config());
  }
  void TearDown() override { scoped_.reset(); }
  const BackendConfig &config() const { return config_of(this->GetParam()); }
  Backend backend() const { return config().backend(); }
  // The memory the C API's tensors live in for this configuration (c_forward / c_backward).
  Backend memory() const { return config().backend(); }

 private:
  std::optional<ScopedConfig> scoped_;
};

// Name generator for a plain BackendConfig parameter.
inline std::string ConfigName(const ::testing::TestParamInfo<BackendConfig> &info) {
  return config_name(info.param);
}

}  // namespace moeperm::testing
