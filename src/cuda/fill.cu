// Zero fills of strided outputs, gated like every writer (Note [Device errors]).
#include <cstdlib>

#include "core/messages.hpp"
#include "cuda/launch.hpp"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

__global__ void zero_matrix_kernel(DMatrix m, const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t r = blockIdx.x; r < m.rows; r += gridDim.x) zero_row(m, r);
}

__global__ void zero_vector_kernel(DVector v, const DeviceStatus *status) {
  if (status->failed) return;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < v.len;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x)
    zero_element(v.at(i), v.es);
}

}  // namespace

Status zero_matrix(const DMatrix &m, const DeviceStatus *status, cudaStream_t stream) {
  if (m.rows == 0 || m.cols == 0) return Status::success();
  zero_matrix_kernel<<<grid_of(m.rows), 256, 0, stream>>>(m, status);
  return launched("zero_matrix");
}

Status zero_vector(const DVector &v, const DeviceStatus *status, cudaStream_t stream) {
  if (v.len == 0) return Status::success();
  zero_vector_kernel<<<grid_of((v.len + 255) / 256), 256, 0, stream>>>(v, status);
  return launched("zero_vector");
}

int64_t max_grid_blocks() {
  static const int64_t cap = grid_cap_from(std::getenv("MOEPERM_CUDA_MAX_BLOCKS"));
  return cap;
}

Status cuda_status(cudaError_t err, const char *what) {
  if (err == cudaSuccess) return Status::success();
  return detail::fail(Code::runtime_error, detail::cat(what, " failed: ", cudaGetErrorName(err),
                                                       " (", cudaGetErrorString(err), ")"));
}

}  // namespace moeperm::cuda
