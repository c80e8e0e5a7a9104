// A backend's kernels per operator and mode (Note [Operators as data]): one line per
// operator, so adding an operator to a backend is one line in its table, and a backend that
// lacks an operator says so (kNotImplemented: supports() answers no_kernel) instead of
// running another. Next to each table, `static_assert(kKernels.lists_every_op())`: a new Op
// does not compile until every table has its line (as ggml asserts GGML_OP_COUNT next to
// its per-op tables).
#pragma once

#include <array>
#include <initializer_list>

#include "backend/backend.hpp"
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

// The explicit line of an operator a backend does not implement: {Op::<name>, kNotImplemented}.
inline constexpr struct NotImplemented {
  template <class Run>
  constexpr operator OpKernels<Run>() const {  // NOLINT: converts by design
    return {};
  }
} kNotImplemented{};

template <class Run>
class KernelTable {
 public:
  struct Entry {
    Op op;
    OpKernels<Run> kernels;
  };
  constexpr KernelTable(std::initializer_list<Entry> entries) {
    for (const Entry &e : entries) {
      const auto i = static_cast<size_t>(op_index(e.op));
      if (i < listed_.size()) duplicate_ = duplicate_ || listed_[i];
      if (i < listed_.size()) listed_[i] = true;
      if (i < table_.size()) table_[i] = e.kernels;
    }
  }
  // Every Op has exactly one line (its kernels or kNotImplemented).
  constexpr bool lists_every_op() const {
    for (bool listed : listed_)
      if (!listed) return false;
    return !duplicate_;
  }

  const OpKernels<Run> &of(Op op) const { return table_[static_cast<size_t>(op_index(op))]; }
  // The kernel for the plan's operator and mode; null when the backend has none.
  Run find(const Plan &p) const {
    return p.drop_and_pad ? of(p.op).drop_and_pad : of(p.op).dropless;
  }
  // `yes` when there is a kernel for the plan's operator and mode, else `no_kernel`.
  Support supports(const Plan &p) const { return find(p) ? Support::yes : Support::no_kernel; }
  Status prepare(Plan &p) const {
    return of(p.op).prepare ? of(p.op).prepare(p) : Status::success();
  }

 private:
  std::array<OpKernels<Run>, kOpCount> table_{};
  std::array<bool, kOpCount> listed_{};
  bool duplicate_ = false;
};

}  // namespace moeperm::detail
