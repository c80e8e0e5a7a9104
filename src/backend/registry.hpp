// The backend layer's entry points: the ordered registry of backends (registry.cpp), planning
// a call on one of them, and running a plan after the checks that need its pointers.
#pragma once

#include <moeperm/moeperm.hpp>

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "core/op_desc.hpp"
#include "device/device.hpp"

namespace moeperm::detail {

// The plan's backend (set by select_backend; never null on a planned plan).
inline const BackendOps &backend_ops(const Plan &plan) { return *plan.backend; }

// Plans a call: the core validates and derives (make_plan), then select_backend.
Status plan_call(const OperandSet &set, Backend requested, Plan *plan);

// Picks the backend (the requested one, MOEPERM_BACKEND when `automatic`, else the first
// host backend that takes the plan) and lets it lay out its workspace
// (Note [Backend selection]).
Status select_backend(Plan &plan, Backend requested);

// One line of the ordered registry (registry.cpp lists them).
struct RegistryEntry {
  const BackendOps *ops;    // null: not built in
  const DeviceOps *memory;  // the device of its pointers and streams; null: not built in
  const char *name;
  Backend kind;
  bool device;          // a device backend (else a host backend, on kHostDevice)
  const char *title;    // in messages
  const char *missing;  // why it can be missing, for the error when it is requested
};
// select_backend over a given list (the registry's, or a test's): `requested` is already
// resolved from the environment. A backend that does not answer Support::yes is never
// prepared or run; a pinned one without a kernel is an error (not_implemented).
Status select_backend_in(std::span<const RegistryEntry> list, Plan &plan, Backend requested);

// The registry as the public API shows it (moeperm::backends()).
std::vector<BackendInfo> registered_backends();
// The backend registered under `kind`; null when it is not built in.
const BackendOps *find_backend(Backend kind);

// Whether the plan's backend runs on a device (its pointers and workspace are device
// memory, and it can enqueue on a stream) rather than on the host.
inline bool runs_on_device(const Plan &plan) { return plan.backend->run_on_stream != nullptr; }

// Runs a host plan: check_buffers, check_workspace, then the backend (Note [Phase 2 checks]).
Status execute(const Plan &plan, const Buffers &buffers, void *workspace, uint64_t workspace_bytes);

// Null data pointers of tensors that have elements (SPEC §5.2 applied to data).
Status check_buffers(const Plan &plan, const Buffers &buffers);

// The workspace is large enough and non-null when it must be.
Status check_workspace(const Plan &plan, const void *workspace, uint64_t workspace_bytes);

// Runs a plan on a device stream (as void*): a device backend enqueues and, without a sink,
// waits for the stream and reports device-side data errors; a host plan ignores the stream.
Status execute_on_stream(const Plan &plan, const Buffers &buffers, void *workspace,
                         uint64_t workspace_bytes, void *stream, DeviceErrorSink sink = {});

// A one-line description of a planned plan (op, mode, sizes, dtypes, backend, workspace).
std::string to_string(const Plan &plan);

// The devices of the registry, in order: the host device, then each device backend's device
// (ops null where that backend is not built in). MOEPERM_DEVICE names one of them.
struct DeviceEntry {
  const DeviceOps *ops;  // null: not built in
  const char *name;      // MOEPERM_DEVICE's value
  Backend backend;       // what the C API plans for while it is current (host: automatic)
  const char *title;     // of its backend, in messages ("built without <title>")
  const char *missing;   // why it can be missing
};
std::vector<DeviceEntry> registered_devices();
// The device whose memory and streams the plan's backend uses (the host device for host
// backends).
const DeviceOps &device_of(const Plan &plan);
// Devices present for the backend registered under `kind` (0 when it is not built in).
int device_count(Backend kind);

}  // namespace moeperm::detail
