// The backend interface (ggml's small vtable, oneDNN's ordered list): a backend says
// whether it supports a plan, fills its part of the plan (workspace slots), and runs it.
// The list is ordered fastest first; the naive reference is last and supports every plan.
#pragma once

#include <cstddef>
#include <span>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail {

struct BackendOps {
  const char *name;
  BackendId id;
  bool (*supports)(const Plan &plan);
  // Adds the backend's workspace slots to plan.workspace (plan.ws_slot records their ids).
  void (*prepare)(Plan &plan);
  // Runs synchronously. `workspace` is aligned to WorkspaceLayout::kAlignment and holds
  // plan.workspace.total() bytes. Must validate data-dependent rules before any write
  // (Note [Index validation]).
  Status (*run)(const Plan &plan, const Buffers &buffers, std::byte *workspace);
};

// The backends, defined in their own folders; registry.cpp orders them.
extern const BackendOps kCpuBackend;
extern const BackendOps kReferenceBackend;

}  // namespace moeperm::detail
