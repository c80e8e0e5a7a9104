// The CPU backend's kernels, one file per (operator, mode). Each kernel:
//   * validates the data-dependent rules first and writes nothing on failure
//     (Note [Index validation], src/core/notes.md);
//   * splits work into blocks that depend on the problem only, each output element owned
//     by one block, so results are bitwise identical for every thread count
//     (Note [Determinism]);
//   * uses only the workspace its plan laid out (Note [Workspace layout]).
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail::cpu {

// Tokens per block of the expert-major rank computation (fixed: see Note [Determinism]).
inline constexpr int64_t kTokenBlock = 256;
inline int64_t token_blocks(int64_t T) { return (T + kTokenBlock - 1) / kTokenBlock; }

// Workspace slots (indices into Plan::ws_slot).
inline constexpr int kSlotBlockRanks = 0;  // int64 [blocks, E]: expert-major rank bases
inline constexpr int kSlotCsrOffsets = 0;  // int64 [T + 1]: drop-and-pad slots per token
inline constexpr int kSlotCsrSlots = 1;    // int64 [R]: slot ids j grouped by token, ascending
inline constexpr int kSlotCount = 2;
static_assert(kSlotCount <= WorkspaceLayout::kMaxSlots, "the CPU backend's slots must fit");

// The expert-major rank bases of SPEC §2's list f: on return ranks[b*E + e] is the position
// in f of the first (t, e) pair with t in token block b. *nnz receives the length of f.
// With max_per_row >= 0, a row selecting more experts fails (forward, drop-less).
Status expert_block_ranks(const Plan &p, const void *routing_map, int64_t *ranks, int64_t *nnz,
                          int64_t max_per_row);

// The first position of a sorted index outside the operator's range for the plan's mode
// (index_range, Note [Index validation]); -1 if none.
int64_t first_bad_index(const Plan &p, const void *sorted_indices);

Status permute_dropless(const Plan &p, const Buffers &b, std::byte *ws);
Status permute_drop_and_pad(const Plan &p, const Buffers &b, std::byte *ws);
Status permute_grad_dropless(const Plan &p, const Buffers &b, std::byte *ws);
Status permute_grad_drop_and_pad(const Plan &p, const Buffers &b, std::byte *ws);

// Writes +0 to every element of the probs output, whichever role it has (the [R] permuted
// probs of the forward, the [T, E] dense probs of the backward).
void zero_probs_output(const Plan &p, const Buffers &b);

}  // namespace moeperm::detail::cpu
