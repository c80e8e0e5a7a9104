// `moeperm bench --suite isa`: one case per vector ISA the CPU backend takes (avx2, avx512),
// on one thread and on all, each forcing its ISA only while it runs (ScopedCpuIsa).
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "bench.hpp"

namespace moeperm::bench {
namespace {

std::string env_isa() {
  const char *v = std::getenv("MOEPERM_CPU_ISA");
  return v ? v : "(unset)";
}

TEST(BenchCases, IsaSuiteHasOneCasePerVectorIsaAndThreadCount) {
  Options o;
  o.suites = {"isa"};
  o.max_threads = 2;
  const std::vector<Case> cases = standard_cases(o);
  ASSERT_EQ(cases.size() % 2, 0u);
  for (const Case &c : cases) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(c.isa == "avx2" || c.isa == "avx512");
    EXPECT_EQ(c.name, "isa-" + c.isa + "-" + std::to_string(c.threads));
    EXPECT_EQ(c.spec.T, 4096);
  }
#if defined(__x86_64__)
  // Every x86-64 host this project runs on has AVX2 (docs/cpu-performance.md, Hosts).
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_GE(cases.size(), 2u);
  }
#endif
}

TEST(BenchCases, IsaIsNotInTheDefaultSuites) {
  for (const Case &c : standard_cases(Options{})) EXPECT_TRUE(c.isa.empty()) << c.name;
}

TEST(BenchCases, ScopedCpuIsaRestoresTheEnvironment) {
  unsetenv("MOEPERM_CPU_ISA");
  {
    const ScopedCpuIsa forced("avx2");
    EXPECT_EQ(env_isa(), "avx2");
  }
  EXPECT_EQ(env_isa(), "(unset)");
  setenv("MOEPERM_CPU_ISA", "scalar", 1);
  {
    const ScopedCpuIsa forced("avx512");
    EXPECT_EQ(env_isa(), "avx512");
    const ScopedCpuIsa none("");
    EXPECT_EQ(env_isa(), "avx512");
  }
  EXPECT_EQ(env_isa(), "scalar");
  unsetenv("MOEPERM_CPU_ISA");
}

}  // namespace
}  // namespace moeperm::bench
