// The backend interface (ggml's small vtable, oneDNN's ordered list): a backend says
// whether it supports a plan, fills its part of the plan (workspace slots), and runs it.
// The list is ordered fastest first; the naive reference is last and supports every plan.
#pragma once

#include <cstddef>
#include <span>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail {

// Receives the outcome of a device run (success, or a data error of SPEC §5.7) exactly once,
// on a driver thread, when the stream reaches the end of the run; must not call the device
// runtime.
struct DeviceErrorSink {
  void (*deliver)(void *context, Status status) = nullptr;
  void *context = nullptr;
};

// Whether a backend takes a plan, and if not why (oneDNN's `unimplemented`, with its reason):
// the registry never calls a backend that has not said `yes` (Note [Backend selection]).
enum class Support : uint8_t {
  yes,
  no_kernel,      // no kernel for the operator and mode: a pinned request is an error
  empty_problem,  // R = 0 or H = 0, left to the reference (Note [Empty problems])
};

struct BackendOps {
  const char *name;
  Backend kind;  // the public name of this backend (PlanOptions::backend)
  // Whether it takes the plan (see Support). Pure: looks at the plan only.
  Support (*supports)(const Plan &plan);
  // Adds the backend's workspace slots to plan.workspace (plan.ws_slot records their ids).
  // Fails only where sizing needs a resource that is missing (the CUDA backend: a GPU).
  Status (*prepare)(Plan &plan);
  // Runs synchronously. `workspace` is aligned to WorkspaceLayout::kAlignment and holds
  // plan.workspace.total() bytes. Must validate data-dependent rules before any write
  // (Note [Index validation]).
  Status (*run)(const Plan &plan, const Buffers &buffers, std::byte *workspace);
  // Device backends only (null for host backends): enqueues the plan on `stream` (a
  // native stream of the backend's device) and returns without waiting. Data errors found on the
  // device are delivered to `on_data_error` from a stream callback, in stream order (Note [Device
  // errors]); with no sink (deliver null) the call instead waits for the stream and returns that
  // error.
  Status (*run_on_stream)(const Plan &plan, const Buffers &buffers, std::byte *workspace,
                          void *stream, DeviceErrorSink on_data_error);
};

// The backends are defined in their own folders; registry.cpp lists them, in order.

}  // namespace moeperm::detail
