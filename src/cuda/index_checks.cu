// The index rules of an operator's description (core/op_desc.hpp IndexRule), checked on the
// device in the rules' order before any output is written (Note [Device errors], Note [Index
// validation]): per rule, the range (the first position outside it), then for a `unique`
// rule the first position naming a value an earlier position named. Each step is gated on
// the status word, so the first failing rule wins, as on the host. Atomics here only pick
// positions (atomicMin): no value is summed.
#include "cuda/launch.hpp"
#include "cuda/row_ops.cuh"

namespace moeperm::cuda {
namespace {

__global__ void range_kernel(DVector v, int64_t bound, bool minus_one, DeviceStatus *st) {
  if (st->failed) return;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < v.len;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t x = index_at(v, j);
    if (!((x >= 0 && x < bound) || (minus_one && x == -1)))
      atomicMin(&st->first_bad, static_cast<unsigned long long>(j));
  }
}

// first[x] = the first position naming x (kNone: none); values are in range here.
__global__ void first_named_kernel(DVector v, unsigned long long *first, const DeviceStatus *st) {
  if (st->failed) return;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < v.len;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t x = index_at(v, j);
    if (x >= 0) atomicMin(first + x, static_cast<unsigned long long>(j));
  }
}

__global__ void repeated_kernel(DVector v, const unsigned long long *first, DeviceStatus *st) {
  if (st->failed) return;
  for (int64_t j = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; j < v.len;
       j += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t x = index_at(v, j);
    if (x >= 0 && first[x] != static_cast<unsigned long long>(j))
      atomicMin(&st->first_bad, static_cast<unsigned long long>(j));
  }
}

__global__ void finalize_kernel(DeviceStatus *st, DVector v, int rule, int kind,
                                const unsigned long long *first) {
  if (st->failed || st->first_bad == kNone) return;
  const auto pos = static_cast<int64_t>(st->first_bad);
  st->bad_value = index_at(v, pos);
  if (kind == kRepeatedIndex) st->first_named = static_cast<long long>(first[st->bad_value]);
  st->rule = rule;
  st->kind = kind;
  st->failed = 1;
}

}  // namespace

Status check_index_rules(const detail::Plan &p, const detail::Buffers &b, const Workspace &ws,
                         cudaStream_t stream) {
  const detail::OpDesc &d = detail::op_desc(p.op);
  for (size_t i = 0; i < d.index_rules.size(); ++i) {
    const detail::IndexRule &rule = d.index_rules[i];
    if (!detail::applies(rule.mode, p.drop_and_pad)) continue;
    const DVector v = view(p.vector(rule.role), b[rule.role], DType::i32);
    if (v.len == 0) continue;
    const detail::IndexRange range = detail::index_range(d, p, static_cast<int>(i));
    range_kernel<<<blocks_for(v.len), 256, 0, stream>>>(v, range.bound, range.allows_minus_one,
                                                        ws.status);
    MOEPERM_TRY(launched("check_index_range"));
    finalize_kernel<<<1, 1, 0, stream>>>(ws.status, v, static_cast<int>(i), kBadIndex, nullptr);
    MOEPERM_TRY(launched("finalize_index_range"));
    if (!range.unique || range.bound == 0) continue;
    MOEPERM_TRY(
        cuda_status(cudaMemsetAsync(ws.first_named, 0xff,
                                    static_cast<size_t>(range.bound) * sizeof(uint64_t), stream),
                    "cudaMemsetAsync"));
    first_named_kernel<<<blocks_for(v.len), 256, 0, stream>>>(v, ws.first_named, ws.status);
    MOEPERM_TRY(launched("first_named"));
    repeated_kernel<<<blocks_for(v.len), 256, 0, stream>>>(v, ws.first_named, ws.status);
    MOEPERM_TRY(launched("repeated_index"));
    finalize_kernel<<<1, 1, 0, stream>>>(ws.status, v, static_cast<int>(i), kRepeatedIndex,
                                         ws.first_named);
    MOEPERM_TRY(launched("finalize_repeated_index"));
  }
  return Status::success();
}

}  // namespace moeperm::cuda
