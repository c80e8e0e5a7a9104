// A backend's kernels per operator and mode (Note [Operators as data]): one entry per
// operator it implements, so adding an operator to a backend is one line in its table and a
// backend that lacks an operator says so (supports() is false) instead of running another.
#pragma once

#include <array>
#include <initializer_list>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail {

template <class Run>
struct OpKernels {
  // Lays out the operator's workspace slots (plan.workspace, plan.ws_slot); null: none.
  Status (*prepare)(Plan &plan) = nullptr;
  Run dropless = nullptr;
  Run drop_and_pad = nullptr;
};

template <class Run>
class KernelTable {
 public:
  struct Entry {
    Op op;
    OpKernels<Run> kernels;
  };
  constexpr KernelTable(std::initializer_list<Entry> entries) {
    for (const Entry &e : entries) table_[static_cast<size_t>(op_index(e.op))] = e.kernels;
  }

  const OpKernels<Run> &of(Op op) const { return table_[static_cast<size_t>(op_index(op))]; }
  // The kernel for the plan's operator and mode; null when the backend has none.
  Run find(const Plan &p) const {
    return p.drop_and_pad ? of(p.op).drop_and_pad : of(p.op).dropless;
  }
  Status prepare(Plan &p) const {
    return of(p.op).prepare ? of(p.op).prepare(p) : Status::success();
  }

 private:
  std::array<OpKernels<Run>, kOpCount> table_{};
};

}  // namespace moeperm::detail
