#pragma once

#include <moeperm/moeperm.hpp>

#include <cstdint>
#include <span>

#include "backend/backend.hpp"

namespace moeperm::detail {

const BackendOps &backend_ops(BackendId id);

// Picks the backend (the requested one, MOEPERM_BACKEND when `automatic`, else the first
// that supports the plan) and lets it lay out its workspace.
Status select_backend(Plan &plan, Backend requested);

// Checks the data pointers and the workspace, realigns it and runs the plan's backend.
Status execute(const Plan &plan, const Buffers &buffers, void *workspace, uint64_t workspace_bytes);

// Whether the plan's backend runs on a device (its pointers and workspace are device
// memory, and it can enqueue on a stream) rather than on the host.
inline bool runs_on_device(const Plan &plan) {
  return backend_ops(plan.backend).run_on_stream != nullptr;
}

// Null data pointers of tensors that have elements (SPEC §5.2 applied to data).
Status check_buffers(const Plan &plan, const Buffers &buffers);

// The workspace is large enough and non-null when it must be.
Status check_workspace(const Plan &plan, const void *workspace, uint64_t workspace_bytes);

// Runs a plan on a CUDA stream (cudaStream_t as void*): the CUDA backend enqueues, waits for
// the stream and reports device-side data errors; a host plan ignores the stream.
Status execute_on_stream(const Plan &plan, const Buffers &buffers, void *workspace,
                         uint64_t workspace_bytes, void *stream, DeviceErrorSink sink = {});

// The CUDA backend, or null when moeperm was built without it.
const BackendOps *cuda_backend_ops();
inline bool cuda_backend_built() { return cuda_backend_ops() != nullptr; }
// GPUs the CUDA driver reports; 0 without the CUDA backend, a driver or a GPU.
int cuda_device_count();

// Bytes the caller must provide: the layout plus slack to realign any base address.
inline uint64_t workspace_bytes(const Plan &plan) {
  return plan.internal_workspace ? 0 : plan.workspace.required_with_slack();
}

}  // namespace moeperm::detail
