// The object of Note [Workspace layout]: the workspace size reported by the first phase and the
// sub-buffer offsets used by the second come from this one object, built at plan time
// (CUB's alias_temporaries). There is no second code path that could disagree.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace moeperm::detail {

class WorkspaceLayout {
 public:
  static constexpr uint64_t kAlignment = 256;
  static constexpr int kMaxSlots = 8;

  // Reserves `bytes` (may be 0) and returns the slot id to pass to at().
  int add(const char *name, uint64_t bytes) {
    const int id = count_++;
    slots_[static_cast<size_t>(id)] = Slot{name, total_, bytes};
    total_ += (bytes + kAlignment - 1) / kAlignment * kAlignment;
    return id;
  }
  uint64_t total() const { return total_; }
  int count() const { return count_; }
  const char *name(int id) const { return slots_[static_cast<size_t>(id)].name; }
  uint64_t bytes(int id) const { return slots_[static_cast<size_t>(id)].bytes; }

  // The base must be kAlignment-aligned for the typed views to be aligned; callers that
  // receive a user workspace realign it first (see aligned_workspace()).
  template <class T>
  T *at(std::byte *base, int id) const {
    return reinterpret_cast<T *>(base + slots_[static_cast<size_t>(id)].offset);
  }

  // Bytes a caller must provide so that an unaligned base can be realigned.
  uint64_t required_with_slack() const { return total_ == 0 ? 0 : total_ + kAlignment - 1; }

 private:
  struct Slot {
    const char *name = "";
    uint64_t offset = 0;
    uint64_t bytes = 0;
  };
  std::array<Slot, kMaxSlots> slots_{};
  int count_ = 0;
  uint64_t total_ = 0;
};

}  // namespace moeperm::detail
