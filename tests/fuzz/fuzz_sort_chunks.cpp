// The chunk sort in the fuzz harness (flags bit 7, extra bit 5, attribute2 bits 4 and 5; the
// invariants and the input layout are fuzz_operators.cpp's): Megatron-LM's
// sort_chunks_by_idxs (docs/sort_chunks.md), which has no CANN C API, through the C++ API's
// plan_sort_chunks*() and run(). Flags bit 0 picks the Grad. S = E chunks. The tensor records
// follow the descriptors' field order:
//   forward  tokens, split_sizes, sorted_index, probs, sorted_tokens, sorted_probs
//   Grad     sorted_tokens_grad, split_sizes, sorted_index, sorted_probs_grad, tokens_grad,
//            probs_grad
// split_sizes split the T rows into S chunks and sorted_index is a permutation of the chunks,
// each sometimes with one entry changed, unless extra bit 7 asks for arbitrary values. A
// successful run must equal the reference backend bit for bit on every output byte.
#include <moeperm/moeperm.hpp>

#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "fuzz_drive.hpp"
#include "fuzz_input.hpp"

namespace moeperm::fuzz {
namespace {

constexpr uint8_t kExtraArbitrary = 128;
constexpr int64_t kMaxChunks = int64_t{1} << 20;

// One entry of `v` changed to a value in [-1, limit], sometimes.
void maybe_change_one(std::vector<int32_t> &v, Reader &r, int64_t limit) {
  if (v.empty() || r.data() >= 16) return;
  const size_t i = (r.data() | r.data() << 8) % v.size();
  v[i] = static_cast<int32_t>(r.data() % (limit + 2)) - 1;
}

// split_sizes: T rows in S chunks of random sizes (each may be empty), summing to T.
void fill_split_sizes(Operand &op, Reader &r, int64_t T, int64_t S, bool arbitrary) {
  if (!op.present || !op.runnable || op.host.desc.shape.size() != 1) return;
  if (arbitrary || S <= 0 || S > kMaxChunks || T < 0 || T > kI32Max)
    return fill_indices(op, r, true, T, S);
  std::vector<int32_t> sizes(static_cast<size_t>(S), 0);
  auto any_chunk = [&] { return static_cast<size_t>((r.data() | r.data() << 8) % S); };
  int64_t left = T;
  for (int64_t step = 0; left > 0 && step < 4 * S + 64; ++step) {  // small chunks first
    const int64_t take = std::min<int64_t>(left, r.data() % 8);
    sizes[any_chunk()] += static_cast<int32_t>(take);
    left -= take;
  }
  sizes[any_chunk()] += static_cast<int32_t>(left);  // the rest in one chunk
  maybe_change_one(sizes, r, T);
  write_int32s(op, sizes);
}

// sorted_index: a permutation of the S chunks.
void fill_chunk_order(Operand &op, Reader &r, int64_t S, bool arbitrary) {
  if (!op.present || !op.runnable || op.host.desc.shape.size() != 1) return;
  if (arbitrary || S <= 0 || S > kMaxChunks) return fill_indices(op, r, true, S, S);
  std::vector<int32_t> order = input_permutation(r, S);
  maybe_change_one(order, r, S);
  write_int32s(op, order);
}

using Ops = std::vector<Operand>;
using Ptrs = std::vector<void *>;

// The chunk sort and its Grad take the same six operands in the same order (rows, split
// sizes, order, probs?, output rows, output probs?): only the types and the output fields'
// names differ.
template <class Desc, class Data, auto kRowsOut, auto kProbsOut>
CxxOp chunk_sort_op(Plan (*plan)(const Desc &, const PlanOptions &)) {
  return cxx_op<Desc>(
      [](const Ops &o) {
        return Desc{o[0].host.desc, o[1].host.desc, o[2].host.desc,
                    opt_desc(o, 3), o[4].host.desc, opt_desc(o, 5)};
      },
      plan, [](const Ptrs &d) { return Data{d[0], d[1], d[2], d[3], d[4], d[5]}; },
      [](size_t n, const Desc &d) {
        return shapes_at(n, {{4, d.*kRowsOut}, {5, d.*kProbsOut}});
      });
}

CxxOp sort_chunks_op(bool grad) {
  if (!grad)
    return chunk_sort_op<SortChunksDesc, SortChunksData, &SortChunksDesc::sorted_tokens,
                         &SortChunksDesc::sorted_probs>(plan_sort_chunks);
  return chunk_sort_op<SortChunksGradDesc, SortChunksGradData, &SortChunksGradDesc::tokens_grad,
                       &SortChunksGradDesc::probs_grad>(plan_sort_chunks_grad);
}

}  // namespace

void run_sort_chunks(Reader &r, const Header &hd) {
  Case c = hd.base_case();
  const int64_t T = hd.T, S = hd.E, H = hd.H;
  const bool arbitrary = hd.extra & kExtraArbitrary;
  Budget budget;
  // Forward and Grad have the same operand shapes: rows in, chunk sizes and order, per-row
  // probs in; rows out, per-row probs out.
  const std::vector<std::pair<std::vector<int64_t>, DType>> shapes = {
      {{T, H}, hd.vt}, {{S}, DType::i32}, {{S}, DType::i32},
      {{T}, hd.pt},    {{T, H}, hd.vt},   {{T}, hd.pt}};
  const std::vector<bool> present = {true, true, true, c.probs_in, true, c.probs_out};
  c.ops.reserve(shapes.size());  // moved in, never copied: each aclTensor points into storage
  for (size_t i = 0; i < shapes.size(); ++i)
    c.ops.push_back(make_operand(r, shapes[i].first, shapes[i].second, present[i], budget));
  c.is_output = {false, false, false, false, true, true};
  fill_floats(c.ops[0], r, true);
  fill_split_sizes(c.ops[1], r, T, S, arbitrary);
  fill_chunk_order(c.ops[2], r, S, arbitrary);
  fill_floats(c.ops[3], r, true);
  drive_cxx(c, sort_chunks_op(c.grad), hd);
}

}  // namespace moeperm::fuzz
