// Built when moeperm is configured without the CUDA backend (MOEPERM_CUDA=OFF, or AUTO
// without nvcc): the registry then offers host backends only.
#include "backend/registry.hpp"

namespace moeperm::detail {

const BackendOps *cuda_backend_ops() { return nullptr; }
int cuda_device_count() { return 0; }

}  // namespace moeperm::detail
