// `moeperm bench --device cuda` in a build without the CUDA backend.
#include "bench.hpp"

namespace moeperm::bench {

CaseResult run_case_cuda(const Case &, const Options &) {
  throw Error(Code::runtime_error,
              "moeperm bench --device cuda: this moeperm was built without CUDA (MOEPERM_CUDA=OFF, "
              "or nvcc was not found)");
}

}  // namespace moeperm::bench
