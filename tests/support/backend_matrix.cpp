#include "backend_matrix.hpp"

#include <acl/acl.h>

#include "operand_args.hpp"

#if defined(__x86_64__)
#include <cpuid.h>
#endif

namespace moeperm::testing {
namespace {

bool cpu_has(const std::string &isa) {
#if defined(__x86_64__)
  __builtin_cpu_init();
  // clang's __builtin_cpu_supports does not know "f16c": ask CPUID leaf 1 (ECX bit 29).
  unsigned a = 0, b = 0, c = 0, d = 0;
  const bool f16c = __get_cpuid(1, &a, &b, &c, &d) && (c & (1u << 29)) != 0;
  if (isa == "avx2") return __builtin_cpu_supports("avx2") && f16c;
  if (isa == "avx512")
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl");
#endif
  return isa == "scalar";
}

// The CPU backend is the one with variants and a thread count (MOEPERM_CPU_ISA and
// set_num_threads act on it alone).
bool is_threaded(const BackendInfo &b) { return std::string(b.name) == "cpu"; }

}  // namespace

std::vector<std::string> supported_isas() {
  std::vector<std::string> v;
  for (const char *isa : {"scalar", "avx2", "avx512"})
    if (cpu_has(isa)) v.push_back(isa);
  return v;
}

std::vector<BackendConfig> backend_configs(Matrix matrix, Include include) {
  std::vector<BackendConfig> v;
  for (const BackendInfo &b : backends()) {
    if (b.backend == Backend::reference && !include.reference) continue;
    if (b.device && !include.devices) continue;
    if (!is_threaded(b) || matrix == Matrix::one) {
      v.push_back({b, "", Threads::unset});
      continue;
    }
    for (const std::string &isa : supported_isas()) {
      if (matrix == Matrix::isas) {
        v.push_back({b, isa, Threads::unset});
      } else {
        v.push_back({b, isa, Threads::one});
        v.push_back({b, isa, Threads::all});
      }
    }
  }
  return v;
}

std::vector<BackendConfig> threaded_configs(Matrix matrix) {
  std::vector<BackendConfig> v;
  for (const BackendConfig &c : backend_configs(matrix, {.reference = false, .devices = false}))
    if (is_threaded(c.info)) v.push_back(c);
  return v;
}

std::string config_name(const BackendConfig &c) {
  std::string s = c.info.name;
  if (!c.isa.empty()) s += "_" + c.isa;
  if (c.threads == Threads::one) s += "_1thread";
  if (c.threads == Threads::all) s += "_allthreads";
  return s;
}

ScopedConfig::ScopedConfig(const BackendConfig &c) {
  if (!c.isa.empty()) isa_.emplace("MOEPERM_CPU_ISA", c.isa.c_str());
  if (c.threads != Threads::unset) {
    num_threads_.emplace("MOEPERM_NUM_THREADS", nullptr);  // it would win over the API
    set_num_threads(c.threads == Threads::one ? 1 : 0);
    threads_set_ = true;
  }
  device_.emplace("MOEPERM_DEVICE", c.info.device ? c.info.name : "cpu");
  if (!c.info.device) backend_.emplace("MOEPERM_BACKEND", c.info.name);
  EXPECT_EQ(aclrtSetDevice(0), ACL_SUCCESS) << aclGetRecentErrMsg();
  // The configuration really is in force: the plan names the forced variant.
  if (!c.isa.empty()) {
    PermuteDesc d;
    d.tokens = dense(DType::f32, {1, 1});
    d.routing_map = dense(DType::i8, {1, 1});
    d.num_out_tokens = 1;
    d.permuted_tokens = dense(DType::f32, {1, 1});
    d.sorted_indices = dense(DType::i32, {1});
    const Plan plan = plan_permute(d, {c.backend()});
    EXPECT_NE(plan.to_string().find(std::string("backend=") + c.info.name + "/" + c.isa),
              std::string::npos)
        << plan.to_string();
  }
  if (c.threads == Threads::one) {
    EXPECT_EQ(get_num_threads(), 1);
  }
}

ScopedConfig::~ScopedConfig() {
  if (threads_set_) set_num_threads(0);
}

}  // namespace moeperm::testing
