#include "cpu/isa.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>

#if defined(__x86_64__) && defined(MOEPERM_HAVE_X86_ISAS)
#include <cpuid.h>
#endif

namespace moeperm::detail::cpu {

const char *to_string(Isa isa) {
  switch (isa) {
    case Isa::scalar: return "scalar";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
  }
  return "unknown";
}

#if defined(__x86_64__) && defined(MOEPERM_HAVE_X86_ISAS)
// F16C is CPUID.1:ECX bit 29, read directly: clang 14's __builtin_cpu_supports does not
// know "f16c".
static bool has_f16c() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0;
}
#endif

bool isa_supported(Isa isa) {
#if defined(__x86_64__) && defined(MOEPERM_HAVE_X86_ISAS)
  __builtin_cpu_init();
  switch (isa) {
    case Isa::scalar: return true;
    case Isa::avx2:
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    case Isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl");
  }
  return false;
#else
  return isa == Isa::scalar;
#endif
}

Isa best_isa() {
  static const Isa best = isa_supported(Isa::avx512) ? Isa::avx512
                          : isa_supported(Isa::avx2) ? Isa::avx2
                                                     : Isa::scalar;
  return best;
}

Isa selected_isa() {
  if (const char *env = std::getenv("MOEPERM_CPU_ISA"); env && *env) {
    const std::string_view v(env);
    for (Isa isa : {Isa::scalar, Isa::avx2, Isa::avx512})
      if (v == to_string(isa) && isa_supported(isa)) return isa;
  }
  return best_isa();
}

namespace {

// The largest data cache level 3 that cpu0 shares, in bytes, as Linux's sysfs describes it
// (0 where it says nothing). Not sysconf(_SC_LEVEL3_CACHE_SIZE): on the AMD EPYC VM this
// project builds on, glibc reports the whole package's 256 MiB there, while sysfs gives the
// 32 MiB cpu0 actually shares, which is what the measured crossover follows
// (docs/cpu-performance.md, experiment 8).
int64_t shared_cache_bytes() {
  int64_t best = 0;
  for (int i = 0; i < 8; ++i) {
    const std::string dir = "/sys/devices/system/cpu/cpu0/cache/index" + std::to_string(i) + "/";
    std::string level, type, size;
    std::ifstream(dir + "level") >> level;
    std::ifstream(dir + "type") >> type;
    std::ifstream(dir + "size") >> size;
    if (level != "3" || type == "Instruction") continue;
    int64_t v = 0;
    size_t j = 0;
    for (; j < size.size() && size[j] >= '0' && size[j] <= '9'; ++j) v = v * 10 + (size[j] - '0');
    if (j < size.size()) v <<= size[j] == 'K' ? 10 : size[j] == 'M' ? 20 : size[j] == 'G' ? 30 : 0;
    best = std::max(best, v);
  }
  return best;
}

}  // namespace

int64_t streaming_store_bytes() {
  if (const char *env = std::getenv("MOEPERM_CPU_STREAMING_BYTES"); env && *env) {
    char *end = nullptr;
    const long long v = std::strtoll(env, &end, 10);
    if (*end == '\0' && v >= 0) return v;
  }
  static const int64_t from_cache = streaming_threshold_for_cache(shared_cache_bytes());
  return from_cache;
}

int64_t streaming_threshold_for_cache(int64_t l3_bytes) {
  if (l3_bytes <= 0) return int64_t{16} << 20;
  return std::clamp<int64_t>(l3_bytes / 2, int64_t{4} << 20, int64_t{32} << 20);
}

bool streams_output(int64_t output_bytes, int64_t moved_bytes, int64_t threshold) {
  return output_bytes >= threshold || moved_bytes / 2 >= threshold;
}

const RowKernels &row_kernels(Isa isa) {
#if defined(MOEPERM_HAVE_X86_ISAS)
  switch (isa) {
    case Isa::avx512: return kRowKernelsAvx512;
    case Isa::avx2: return kRowKernelsAvx2;
    case Isa::scalar: break;
  }
#else
  (void)isa;
#endif
  return kRowKernelsScalar;
}

}  // namespace moeperm::detail::cpu
