// The CUDA GPUs as a device of the device interface (device/device.hpp): what the CANN
// runtime subset does while aclrtSetDevice has chosen a GPU (Note [Devices]).
#include <cuda_runtime.h>

#include "core/status.hpp"
#include "device/device.hpp"

namespace moeperm::cuda {
namespace {

using detail::Status;

Status check(cudaError_t err, const char *call) {
  if (err == cudaSuccess) return Status::success();
  (void)cudaGetLastError();  // clear a sticky-free error so the next call starts clean
  return detail::fail(Code::runtime_error, detail::cat(call, " failed: ", cudaGetErrorName(err),
                                                       " (", cudaGetErrorString(err), ")"));
}

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

Status memcpy(void *dst, const void *src, size_t bytes, detail::CopyKind kind) {
  // cudaMemcpyDefault (unified addressing) also covers a host-device allocation on one side.
  MOEPERM_TRY(check(cudaMemcpy(dst, src, bytes, cudaMemcpyDefault), "cudaMemcpy"));
  // A device-to-device cudaMemcpy may return before the copy ends; aclrtMemcpy may not.
  if (kind == detail::CopyKind::device_to_device)
    return check(cudaStreamSynchronize(nullptr), "cudaStreamSynchronize");
  return Status::success();
}

Status memset(void *ptr, int value, size_t bytes) {
  MOEPERM_TRY(check(cudaMemset(ptr, value, bytes), "cudaMemset"));
  return check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");  // aclrtMemset is synchronous
}

Status stream_create(void **stream) {
  cudaStream_t s = nullptr;
  MOEPERM_TRY(check(cudaStreamCreate(&s), "cudaStreamCreate"));  // blocking
  *stream = s;
  return Status::success();
}

}  // namespace
}  // namespace moeperm::cuda

namespace moeperm::detail {

const DeviceOps kCudaDevice{
    .name = "cuda",
    .noun = "the GPU",
    .memory = "GPU memory",
    .units = "the CUDA GPUs",
    .none_present = "the CUDA driver reports no GPU",
    .count = cuda::device_count,
    .activate = [](int id) { return cuda::check(cudaSetDevice(id), "cudaSetDevice"); },
    // cudaMalloc aligns to at least 256 bytes.
    // cudaMalloc maps large blocks in 2 MiB pages itself: no choice to pass on.
    .malloc = [](void **p, size_t n, Pages) { return cuda::check(cudaMalloc(p, n), "cudaMalloc"); },
    .free = [](void *p) { return cuda::check(cudaFree(p), "cudaFree"); },  // waits first
    .memcpy = cuda::memcpy,
    .memset = cuda::memset,
    .stream_create = cuda::stream_create,
    .stream_destroy =
        [](void *s) {
          return cuda::check(cudaStreamDestroy(static_cast<cudaStream_t>(s)), "cudaStreamDestroy");
        },
    .stream_synchronize =
        [](void *s) {
          return cuda::check(cudaStreamSynchronize(static_cast<cudaStream_t>(s)),
                             "cudaStreamSynchronize");
        },
    .synchronize = [] { return cuda::check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); },
};

const DeviceOps *cuda_device() { return &kCudaDevice; }

}  // namespace moeperm::detail
