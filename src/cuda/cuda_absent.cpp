// Built when moeperm is configured without the CUDA backend (MOEPERM_CUDA=OFF, or AUTO
// without nvcc): the registry offers host backends only, and the GPU runtime calls report
// that this build has no CUDA (the C API never reaches them: aclrtSetDevice keeps the CPU).
#include "backend/registry.hpp"
#include "cuda/cuda_runtime.hpp"

namespace moeperm::detail {

const BackendOps *cuda_backend() { return nullptr; }
int cuda_device_count() { return 0; }

}  // namespace moeperm::detail

namespace moeperm::gpu {
namespace {

Status absent(const char *what) {
  return detail::fail(Code::runtime_error,
                      detail::cat(what,
                                  ": this moeperm was built without CUDA (MOEPERM_CUDA=OFF, "
                                  "or nvcc was not found)"));
}

}  // namespace

Status set_device(int) { return absent("cudaSetDevice"); }
Status malloc(void **, size_t) { return absent("cudaMalloc"); }
Status free(void *) { return absent("cudaFree"); }
Status memcpy(void *, const void *, size_t, CopyKind) { return absent("cudaMemcpy"); }
Status memset(void *, int, size_t) { return absent("cudaMemset"); }
Status stream_create(void **) { return absent("cudaStreamCreate"); }
Status stream_destroy(void *) { return absent("cudaStreamDestroy"); }
Status stream_synchronize(void *) { return absent("cudaStreamSynchronize"); }
Status device_synchronize() { return absent("cudaDeviceSynchronize"); }

}  // namespace moeperm::gpu
