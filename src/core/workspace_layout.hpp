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
  // Slots one plan can hold. The CUDA backend's permute Grad uses 8 today; the unpermute
  // pair's backends need up to 8 more. A backend's slot enum static_asserts against it.
  static constexpr int kMaxSlots = 16;
  static constexpr int kNoSlot = -1;

  // Reserves `bytes` (may be 0) and returns the slot id to pass to at(). Past kMaxSlots it
  // reserves nothing, returns kNoSlot and remembers the first name that had no room: the
  // backend layer turns that into an error before the plan can run (overflowed()).
  int add(const char *name, uint64_t bytes) {
    if (count_ == kMaxSlots) {
      if (!overflow_) overflow_ = name;
      return kNoSlot;
    }
    const int id = count_++;
    slots_[static_cast<size_t>(id)] = Slot{name, total_, bytes};
    // A total past 2^63 bytes cannot be allocated; reporting it wrapped would hand the
    // kernels a workspace smaller than the slots they index (too_large() makes it an error).
    constexpr uint64_t kLimit = uint64_t{1} << 63;
    const uint64_t rounded =
        bytes > kLimit ? 0 : (bytes + kAlignment - 1) / kAlignment * kAlignment;
    if (bytes > kLimit || total_ + rounded > kLimit) {
      if (!too_large_) too_large_ = name;
      return id;
    }
    total_ += rounded;
    return id;
  }
  // The first slot that made the total pass 2^63 bytes (null when none did).
  const char *too_large() const { return too_large_; }
  uint64_t total() const { return total_; }
  int count() const { return count_; }
  // The first slot that did not fit (null when every slot fit).
  const char *overflowed() const { return overflow_; }
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
  const char *overflow_ = nullptr;
  const char *too_large_ = nullptr;
};

// A backend's slot ids by its own slot enum (Plan::ws_slot); kNoSlot where it laid out none.
using SlotIds = std::array<int, WorkspaceLayout::kMaxSlots>;
inline constexpr SlotIds no_slots() {
  SlotIds ids{};
  ids.fill(WorkspaceLayout::kNoSlot);
  return ids;
}

}  // namespace moeperm::detail
