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
inline constexpr int kSlotFirstNamed = 2;  // int64 [R]: first slot naming each row (Grad)
// float [R], one value per slot: the unpermute's weights in token (CSR) order, or the
// unpermute Grad's dot products in slot order.
inline constexpr int kSlotSlotValues = 3;
// int64 [blocks * E + E + 1]: per-block column counts, then each expert's first row (the
// ragged unpermute, drop-less with probs; beside the token CSR, hence a slot of its own).
inline constexpr int kSlotExpertFirst = 4;
// int64 [2S + 1]: sort_chunks' input chunk starts [S], then the sorted chunks' starts [S + 1].
inline constexpr int kSlotChunkStarts = 0;
inline constexpr int kSlotCount = 5;
static_assert(kSlotCount <= WorkspaceLayout::kMaxSlots, "the CPU backend's slots must fit");

// The expert-major rank bases of SPEC §2's list f: on return ranks[b*E + e] is the position
// in f of the first (t, e) pair with t in token block b. *nnz receives the length of f.
// With max_per_row >= 0, a row selecting more experts fails (forward, drop-less).
Status expert_block_ranks(const Plan &p, const void *routing_map, int64_t *ranks, int64_t *nnz,
                          int64_t max_per_row);

// The first position of a sorted index outside the operator's range for the plan's mode
// (index_range, Note [Index validation]); -1 if none. The second form checks the values of
// index rule `rule` (op_desc(p.op).index_rules).
int64_t first_bad_index(const Plan &p, const void *sorted_indices);
int64_t first_bad_index(const Plan &p, int rule, const void *indices);

// Every index rule of the plan's operator and mode, in order: range, then (for a `unique`
// rule) no value twice. first_named: workspace of the largest unique rule's bound; on
// success it holds, for each value x of the last unique rule, the first position naming x
// (-1: none). The first failure is returned with the catalog's message.
Status check_index_rules(const Plan &p, const Buffers &b, int64_t *first_named);

// Routed pairs per token block and expert, for a map of any dtype (bool, int8, uint8, int32):
// counts[b*E + e] = pairs (t, e) with t in token block b. counts: [token_blocks(T), E].
void block_column_counts(const Plan &p, const void *routing_map, int64_t *counts);

// Counting sort of positions j < g.len by token id (int32 at g; -1 ids are left out): on
// return token t's positions are slots[offsets[t] .. offsets[t + 1]), ascending.
// offsets: [T + 1], slots: [len].
void build_token_csr(const Plan &p, const void *token_ids, const VectorGeom &g, int64_t *offsets,
                     int64_t *slots);

// Token t's first (at most max_n) routed experts, ascending, into experts[0..n); returns n.
int64_t experts_of(const Plan &p, const void *map, int64_t t, int64_t *experts, int64_t max_n);

// The rows of a ragged plan (docs/ragged.md) grouped by token: token t's rows are
// rows[offsets[t] .. offsets[t + 1]), ascending; -1 rows belong to none. expert(r) is row r's
// expert: r / C drop-and-pad; drop-less, from `first` (expert e's first row, first[E] = the
// routed pairs), which group_rows_by_token fills only when asked for experts.
struct RaggedRows {
  const int64_t *offsets = nullptr, *rows = nullptr, *first = nullptr;
  int64_t expert(const Plan &p, int64_t r) const;
  // One past expert e's last row: rows r < expert_end(e) of a token that holds a row of e
  // and no row before it are e's (a token's rows ascend, and so do their experts).
  int64_t expert_end(const Plan &p, int64_t e) const;
};
// Checks the index (range; with need_experts, drop-less, rows past the routed pairs must be
// -1) and groups the rows. Workspace: kSlotCsrOffsets, kSlotCsrSlots and, with need_experts
// drop-less, kSlotExpertFirst (int64 [blocks * E + E + 1]).
Status group_rows_by_token(const Plan &p, const Buffers &b, std::byte *ws, bool need_experts,
                           RaggedRows *out);

Status permute_dropless(const Plan &p, const Buffers &b, std::byte *ws);
Status permute_drop_and_pad(const Plan &p, const Buffers &b, std::byte *ws);
Status permute_grad_dropless(const Plan &p, const Buffers &b, std::byte *ws);
Status permute_grad_drop_and_pad(const Plan &p, const Buffers &b, std::byte *ws);
Status unpermute_dropless(const Plan &p, const Buffers &b, std::byte *ws);
Status unpermute_drop_and_pad(const Plan &p, const Buffers &b, std::byte *ws);
Status unpermute_grad_dropless(const Plan &p, const Buffers &b, std::byte *ws);
Status unpermute_grad_drop_and_pad(const Plan &p, const Buffers &b, std::byte *ws);
Status ragged_permute(const Plan &p, const Buffers &b, std::byte *ws);    // both modes
Status ragged_unpermute(const Plan &p, const Buffers &b, std::byte *ws);  // both modes
Status ragged_permute_grad(const Plan &p, const Buffers &b, std::byte *ws);
Status ragged_unpermute_grad(const Plan &p, const Buffers &b, std::byte *ws);
// Both directions: the plan's operator (sort_chunks or sort_chunks_grad) picks.
Status sort_chunks(const Plan &p, const Buffers &b, std::byte *ws);

// Writes +0 to every element of the probs output, whichever role it has (the [R] permuted
// probs of the forward, the [T, E] dense probs of the backward).
void zero_probs_output(const Plan &p, const Buffers &b);

}  // namespace moeperm::detail::cpu
