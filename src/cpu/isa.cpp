#include "cpu/isa.hpp"

#include <cstdlib>
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
