// Expert-major ranks (SPEC §2's list f) computed block-parallel, plus the shared helpers
// of the CPU kernels.
#include <algorithm>
#include <limits>

#include "core/messages.hpp"
#include "core/op_desc.hpp"
#include "cpu/kernels.hpp"
#include "cpu/row_ops.hpp"
#include "cpu/threading.hpp"

namespace moeperm::detail::cpu {

Status expert_block_ranks(const Plan &p, const void *map, int64_t *ranks, int64_t *nnz,
                          int64_t max_per_row) {
  const int64_t blocks = token_blocks(p.T), E = p.E;
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  int64_t first_bad_row = kNone;
#pragma omp parallel for num_threads(num_threads()) schedule(static) reduction(min : first_bad_row)
  for (int64_t b = 0; b < blocks; ++b) {
    int64_t *counts = ranks + b * E;
    std::fill(counts, counts + E, int64_t{0});
    for (int64_t t = b * kTokenBlock; t < std::min(p.T, (b + 1) * kTokenBlock); ++t) {
      int64_t row = 0;
      for_each_routed(p, map, t, [&](int64_t e) { ++counts[e], ++row; });
      if (max_per_row >= 0 && row > max_per_row) first_bad_row = std::min(first_bad_row, t);
    }
  }
  if (first_bad_row != kNone) {
    int64_t n = 0;
    for (int64_t e = 0; e < E; ++e) n += routed(p, map, first_bad_row, e);
    return too_many_experts_in_row(p, first_bad_row, n);
  }
  // Exclusive scan in expert-major order: e outer, block inner.
  int64_t running = 0;
  for (int64_t e = 0; e < E; ++e)
    for (int64_t b = 0; b < blocks; ++b) {
      const int64_t c = ranks[b * E + e];
      ranks[b * E + e] = running;
      running += c;
    }
  *nnz = running;
  return Status::success();
}

int64_t first_bad_index(const Plan &p, const void *sorted_indices) {
  return first_bad_index(p, 0, sorted_indices);
}

int64_t first_bad_index(const Plan &p, int rule, const void *indices) {
  const OpDesc &d = op_desc(p.op);
  const IndexRange range = index_range(d, p, rule);
  constexpr int64_t kNone = std::numeric_limits<int64_t>::max();
  int64_t first = kNone;
  const VectorGeom g = p.vector(d.index_rules[static_cast<size_t>(rule)].role);
#pragma omp parallel for num_threads(num_threads()) schedule(static) reduction(min : first)
  for (int64_t j = 0; j < g.len; ++j) {
    const int64_t s = *elem<int32_t>(indices, g.at(j));
    if (!range.contains(s)) first = std::min(first, j);
  }
  return first == kNone ? -1 : first;
}

Status check_index_rules(const Plan &p, const Buffers &b, int64_t *first_named) {
  const OpDesc &d = op_desc(p.op);
  for (size_t rule = 0; rule < d.index_rules.size(); ++rule) {
    const IndexRule &r = d.index_rules[rule];
    if (!applies(r.mode, p.drop_and_pad)) continue;
    const int i = static_cast<int>(rule);
    const VectorGeom g = p.vector(r.role);
    auto at = [&](int64_t j) { return int64_t{*elem<int32_t>(b[r.role], g.at(j))}; };
    if (const int64_t j = first_bad_index(p, i, b[r.role]); j >= 0)
      return bad_index(p, i, j, at(j));
    const IndexRange range = index_range(d, p, i);
    if (!range.unique) continue;
    // Serial and in ascending j, so the message names the first repeat (R reads: cheap
    // next to the rows the kernel then moves).
    std::fill(first_named, first_named + range.bound, int64_t{-1});
    for (int64_t j = 0; j < g.len; ++j) {
      const int64_t x = at(j);
      if (x < 0) continue;
      if (first_named[x] >= 0) return repeated_index(p, i, j, x, first_named[x]);
      first_named[x] = j;
    }
  }
  return Status::success();
}

void block_column_counts(const Plan &p, const void *map, int64_t *counts) {
  const int64_t E = p.E;
#pragma omp parallel for num_threads(num_threads()) schedule(static)
  for (int64_t b = 0; b < token_blocks(p.T); ++b) {
    int64_t *c = counts + b * E;
    std::fill(c, c + E, int64_t{0});
    for (int64_t t = b * kTokenBlock; t < std::min(p.T, (b + 1) * kTokenBlock); ++t)
      for_each_routed(p, map, t, [c](int64_t e) { ++c[e]; });
  }
}

void build_token_csr(const Plan &p, const void *token_ids, const VectorGeom &g, int64_t *offsets,
                     int64_t *slots) {
  auto id = [&](int64_t j) { return int64_t{*elem<int32_t>(token_ids, g.at(j))}; };
  std::fill(offsets, offsets + p.T + 1, int64_t{0});
  for (int64_t j = 0; j < g.len; ++j)
    if (id(j) >= 0) ++offsets[id(j) + 1];
  for (int64_t t = 0; t < p.T; ++t) offsets[t + 1] += offsets[t];
  // Fill using offsets[t] as a cursor, then shift back so offsets[t] is token t's start.
  for (int64_t j = 0; j < g.len; ++j)
    if (id(j) >= 0) slots[offsets[id(j)]++] = j;
  for (int64_t t = p.T; t > 0; --t) offsets[t] = offsets[t - 1];
  offsets[0] = 0;
}

int64_t experts_of(const Plan &p, const void *map, int64_t t, int64_t *experts, int64_t max_n) {
  int64_t n = 0;
  for_each_routed(p, map, t, [&](int64_t e) {
    if (n < max_n) experts[n++] = e;
  });
  return n;
}

void zero_probs_output(const Plan &p, const Buffers &b) {
  if (probs_output_role(p) == Role::permuted_probs) {
    const int64_t es = element_size(p.permuted_probs_dtype);
    for (int64_t j = 0; j < p.R; ++j) zero_elem(b.permuted_probs(), p.permuted_probs().at(j), es);
    return;
  }
  const int64_t es = element_size(p.probs_dtype);
#pragma omp parallel for num_threads(num_threads()) schedule(static)
  for (int64_t t = 0; t < p.T; ++t) zero_row(b.dense_probs(), p.dense_probs(), t, es);
}

}  // namespace moeperm::detail::cpu
