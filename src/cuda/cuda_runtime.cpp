#include "cuda/cuda_runtime.hpp"

#include <cuda_runtime.h>

namespace moeperm::gpu {
namespace {

Status check(cudaError_t err, const char *call) {
  if (err == cudaSuccess) return Status::success();
  (void)cudaGetLastError();  // clear a sticky-free error so the next call starts clean
  return detail::fail(Code::runtime_error, detail::cat(call, " failed: ", cudaGetErrorName(err),
                                                       " (", cudaGetErrorString(err), ")"));
}

}  // namespace

Status set_device(int id) { return check(cudaSetDevice(id), "cudaSetDevice"); }

Status malloc(void **ptr, size_t bytes) { return check(cudaMalloc(ptr, bytes), "cudaMalloc"); }

Status free(void *ptr) { return check(cudaFree(ptr), "cudaFree"); }

Status memcpy(void *dst, const void *src, size_t bytes, CopyKind kind) {
  // cudaMemcpyDefault (unified addressing) also covers a CPU-device allocation on one side.
  MOEPERM_TRY(check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy"));
  // A device-to-device cudaMemcpy may return before the copy ends; aclrtMemcpy may not.
  if (kind == CopyKind::device_to_device)
    return check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  return Status::success();
}

Status memset(void *ptr, int value, size_t bytes) {
  MOEPERM_TRY(check(cudaMemset(ptr, value, bytes), "cudaMemset"));
  return check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // aclrtMemset is synchronous
}

Status stream_create(void **stream) {
  cudaStream_t s = nullptr;
  MOEPERM_TRY(check(cudaStreamCreate(&s), "cudaStreamCreate"));
  *stream = s;
  return Status::success();
}

Status stream_destroy(void *stream) {
  return check(cudaStreamDestroy(static_cast<cudaStream_t>(stream)), "cudaStreamDestroy");
}

Status stream_synchronize(void *stream) {
  return check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
}

Status device_synchronize() { return check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); }

}  // namespace moeperm::gpu
