#include <algorithm>
#include <cstdlib>

#include "bench.hpp"
#include "host_info.hpp"

namespace moeperm::bench {
namespace {

problem_model::ProblemSpec deepseek() {  // SPEC §7: T=4096, H=7168, E=256, K=8, bf16, drop-less
  problem_model::ProblemSpec s;
  s.T = 4096, s.H = 7168, s.E = 256, s.K = 8;
  s.dtype = s.probs_dtype = DType::bf16;
  return s;
}

bool wanted(const Options &o, const char *suite) {
  return o.suites.empty() || std::find(o.suites.begin(), o.suites.end(), suite) != o.suites.end();
}

bool asked_for(const Options &o, const char *suite) {
  return std::find(o.suites.begin(), o.suites.end(), suite) != o.suites.end();
}

// Whether the CPU backend takes `isa` when asked (an unsupported request falls back).
bool cpu_has(const std::string &isa) {
  const ScopedCpuIsa forced(isa);
  return cpu_variant() == isa;
}

}  // namespace

ScopedCpuIsa::ScopedCpuIsa(const std::string &isa) : set_(!isa.empty()) {
  if (!set_) return;
  if (const char *v = std::getenv("MOEPERM_CPU_ISA")) had_ = true, old_ = v;
  setenv("MOEPERM_CPU_ISA", isa.c_str(), 1);
}

ScopedCpuIsa::~ScopedCpuIsa() {
  if (!set_) return;
  if (had_)
    setenv("MOEPERM_CPU_ISA", old_.c_str(), 1);
  else
    unsetenv("MOEPERM_CPU_ISA");
}

std::vector<Case> standard_cases(const Options &o) {
  const int n = o.max_threads > 0 ? o.max_threads : get_num_threads();
  std::vector<Case> cases;
  if (wanted(o, "named")) {
    cases.push_back({"deepseek", deepseek(), n, true, true, ""});
    problem_model::ProblemSpec mixtral;  // T=8192, H=4096, E=8, K=2, bf16, drop-less
    mixtral.T = 8192, mixtral.H = 4096, mixtral.E = 8, mixtral.K = 2;
    mixtral.dtype = mixtral.probs_dtype = DType::bf16;
    cases.push_back({"mixtral", mixtral, n, true, true, ""});
    problem_model::ProblemSpec
        cann;  // CANN's sample: T=4096, H=7168, E=256, C=16, fp32, drop-and-pad
    cann.T = 4096, cann.H = 7168, cann.E = 256, cann.capacity = 16, cann.drop_and_pad = true;
    cann.dtype = cann.probs_dtype = DType::f32;
    cases.push_back({"cann-sample", cann, n, true, true, ""});
  }
  if (asked_for(o, "smoke")) {
    // Only when asked for: the named cases' kinds at odd, small sizes, every operator and
    // column in well under a second. It checks the bench itself (CI runs it); its times mean
    // nothing.
    problem_model::ProblemSpec small = deepseek();
    small.T = 257, small.H = 96, small.E = 16, small.K = 4;
    cases.push_back({"smoke-dropless", small, n, true, true, ""});
    problem_model::ProblemSpec padded = small;
    padded.capacity = 9, padded.drop_and_pad = true;
    padded.dtype = padded.probs_dtype = DType::f32;
    cases.push_back({"smoke-padded", padded, n, true, true, ""});
  }
  if (wanted(o, "sweep"))
    for (int64_t T = 512; T <= 16384; T *= 2) {
      problem_model::ProblemSpec s = deepseek();
      s.T = T;
      cases.push_back({"sweep-T" + std::to_string(T), s, n, false, false, ""});
    }
  if (wanted(o, "threads") && o.device != "cuda")  // host threads do not apply to a GPU
    for (int t = 1; t <= n; ++t)
      cases.push_back({"threads-" + std::to_string(t), deepseek(), t, false, false, ""});
  // Only when asked for: the vector ISAs side by side in one process (one memory speed, see
  // docs/cpu-performance.md), as MOEPERM_CPU_ISA would force them one run at a time.
  if (asked_for(o, "isa") && o.device != "cuda")
    for (const char *isa : {"avx2", "avx512"})
      if (cpu_has(isa))
        for (int t : {1, n}) {
          cases.push_back({"isa-" + std::string(isa) + "-" + std::to_string(t), deepseek(), t,
                           false, false, isa});
          if (n == 1) break;
        }
  return cases;
}

}  // namespace moeperm::bench
