// Built when moeperm is configured without the CUDA backend (MOEPERM_CUDA=OFF, or AUTO
// without nvcc): the registry's CUDA line then has neither a backend nor a device, so the
// runtime keeps the host device and a request for CUDA says this build has none.
#include "backend/backend.hpp"
#include "device/device.hpp"

namespace moeperm::detail {

const BackendOps *cuda_backend() { return nullptr; }
const DeviceOps *cuda_device() { return nullptr; }

}  // namespace moeperm::detail
