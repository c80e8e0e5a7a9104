// The CUDA backend: the BackendOps of a GPU, its workspace layout, and the hand-off of the
// device status word to the host (Note [Device errors], device_views.cuh).
//
// Where a data error surfaces:
//   * run() (the C++ API's synchronous path, and the C API's default stream): the call waits
//     for the stream and returns the error;
//   * run_on_stream() with a sink (the C API's streams): a host callback enqueued after the
//     kernels reads a pinned copy of the status word and delivers the error to the sink, so
//     it is returned by the next aclrtSynchronizeStream on that stream (capi/stream.hpp).
#include <cub/device/device_radix_sort.cuh>

#include <mutex>
#include <vector>

#include "backend/backend.hpp"
#include "backend/kernel_table.hpp"
#include "backend/registry.hpp"
#include "core/messages.hpp"
#include "cuda/launch.hpp"

namespace moeperm::cuda {

int sort_key_bits(int64_t T);  // permute_grad_cuda.cu

namespace {

enum Slot : int {
  kSlotStatus = 0,
  kSlotTileCounts,
  kSlotChunkCounts,
  kSlotExpertOffsets,
  kSlotSortKeys,
  kSlotSortValues,
  kSlotTokenRuns,
  kSlotSortTemp,
  kSlotFirstNamed,
  kSlotSlotValues,
  kSlotWinners,
  kSlotChunkStarts,
  kSlotCount,
};
static_assert(kSlotCount <= detail::WorkspaceLayout::kMaxSlots,
              "the CUDA backend's slots must fit in Plan::ws_slot");

void add_ranks(detail::Plan &p) {
  auto &w = p.workspace;
  p.ws_slot[kSlotTileCounts] =
      w.add("tile_counts", static_cast<uint64_t>(p.E * tiles_of(p.T)) * sizeof(int32_t));
  p.ws_slot[kSlotChunkCounts] =
      w.add("chunk_counts", static_cast<uint64_t>(p.T * chunks_of(p.E)) * sizeof(int32_t));
  p.ws_slot[kSlotExpertOffsets] =
      w.add("expert_offsets", static_cast<uint64_t>(p.E + 1) * sizeof(int64_t));
}

// The forward ranks the routing map in both modes.
Status prepare_permute(detail::Plan &p) {
  add_ranks(p);
  return Status::success();
}

Status add_sort(detail::Plan &p);

// The Grad ranks for drop-less probs; drop-and-pad sorts the slots by token.
Status prepare_permute_grad(detail::Plan &p) {
  if (p.probs == detail::ProbsWork::compute && !p.drop_and_pad) add_ranks(p);
  if (p.drop_and_pad && p.R > 0) return add_sort(p);
  return Status::success();
}

// Unpermute: drop-and-pad sorts the slots by token (the permute Grad's sort).
Status prepare_unpermute(detail::Plan &p) {
  if (p.drop_and_pad && p.R > 0) return add_sort(p);
  return Status::success();
}

// Unpermute Grad: outIndex's uniqueness check keeps each row's first slot; drop-and-pad dP
// keeps the slots' dot products and each entry's winning slot.
Status prepare_unpermute_grad(detail::Plan &p) {
  auto &w = p.workspace;
  if (p.R > 0)
    p.ws_slot[kSlotFirstNamed] =
        w.add("first_named", static_cast<uint64_t>(p.R) * sizeof(unsigned long long));
  if (p.drop_and_pad && p.probs == detail::ProbsWork::compute && p.R > 0) {
    p.ws_slot[kSlotSlotValues] = w.add("slot_values", static_cast<uint64_t>(p.R) * sizeof(float));
    p.ws_slot[kSlotWinners] =
        w.add("winners", static_cast<uint64_t>(p.T * p.E) * sizeof(unsigned long long));
  }
  return Status::success();
}

// sort_chunks (both directions): the chunks' starts; sorted_index's uniqueness check.
Status prepare_sort_chunks(detail::Plan &p) {
  auto &w = p.workspace;
  p.ws_slot[kSlotChunkStarts] =
      w.add("chunk_starts", static_cast<uint64_t>(2 * p.S + 1) * sizeof(int64_t));
  if (p.S > 0)
    p.ws_slot[kSlotFirstNamed] =
        w.add("first_named", static_cast<uint64_t>(p.S) * sizeof(unsigned long long));
  return Status::success();
}

// The ragged pair (docs/ragged.md). The forward ranks the map; the operators that read the
// row -> token index rank it for drop-less probs (each row's expert) and sort the rows by
// token where a token's rows are summed; slot_values holds a value per row (a weight, a dot).
Status prepare_ragged_permute(detail::Plan &p) {
  add_ranks(p);
  return Status::success();
}

Status add_row_values(detail::Plan &p) {
  if (p.R > 0)
    p.ws_slot[kSlotSlotValues] =
        p.workspace.add("row_values", static_cast<uint64_t>(p.R) * sizeof(float));
  return Status::success();
}

// need_experts: the operator reads each row's expert; sums: it groups rows by token.
Status prepare_ragged_rows(detail::Plan &p, bool need_experts, bool sums, bool row_values) {
  if (need_experts && !p.drop_and_pad) add_ranks(p);
  if (row_values) MOEPERM_TRY(add_row_values(p));
  if (sums && p.R > 0) return add_sort(p);
  return Status::success();
}

Status prepare_ragged_unpermute(detail::Plan &p) {
  const bool probs = p.has(detail::Role::dense_probs);
  return prepare_ragged_rows(p, probs, true, probs);
}

Status prepare_ragged_permute_grad(detail::Plan &p) {
  return prepare_ragged_rows(p, p.probs == detail::ProbsWork::compute, true, false);
}

Status prepare_ragged_unpermute_grad(detail::Plan &p) {
  const bool dp = p.has(detail::Role::dense_probs_grad);
  return prepare_ragged_rows(p, p.has(detail::Role::dense_probs), dp, dp);
}

using CudaKernel = Status (*)(const detail::Plan &, const detail::Buffers &, const Workspace &,
                              cudaStream_t);

// Each kernel file covers both modes.
constexpr detail::KernelTable<CudaKernel> kKernels{
    {detail::Op::permute, {prepare_permute, permute, permute}},
    {detail::Op::permute_grad, {prepare_permute_grad, permute_grad, permute_grad}},
    {detail::Op::unpermute, {prepare_unpermute, unpermute, unpermute}},
    {detail::Op::unpermute_grad, {prepare_unpermute_grad, unpermute_grad, unpermute_grad}},
    {detail::Op::ragged_permute, {prepare_ragged_permute, ragged_permute, ragged_permute}},
    {detail::Op::ragged_unpermute, {prepare_ragged_unpermute, ragged_unpermute, ragged_unpermute}},
    {detail::Op::ragged_permute_grad,
     {prepare_ragged_permute_grad, ragged_permute_grad, ragged_permute_grad}},
    {detail::Op::ragged_unpermute_grad,
     {prepare_ragged_unpermute_grad, ragged_unpermute_grad, ragged_unpermute_grad}},
    // The chunk sort: one kernel, both directions.
    {detail::Op::sort_chunks, {prepare_sort_chunks, sort_chunks, sort_chunks}},
    {detail::Op::sort_chunks_grad, {prepare_sort_chunks, sort_chunks, sort_chunks}},
};
static_assert(kKernels.lists_every_op(), "the CUDA backend needs a line for every Op");

// Pinned host copies of status words, recycled: one per run in flight.
class StatusPool {
 public:
  Status take(DeviceStatus **out) {
    for (;;) {
      {
        std::lock_guard lock(mu_);
        if (!free_.empty()) {
          *out = free_.back();
          free_.pop_back();
          return Status::success();
        }
      }
      // Outside the lock: pinning may wait for the device, whose callbacks take the lock.
      constexpr int kChunk = 64;
      void *chunk = nullptr;
      MOEPERM_TRY(
          cuda_status(cudaHostAlloc(&chunk, kChunk * sizeof(DeviceStatus), cudaHostAllocDefault),
                      "cudaHostAlloc"));
      std::lock_guard lock(mu_);
      for (int i = 0; i < kChunk; ++i) free_.push_back(static_cast<DeviceStatus *>(chunk) + i);
    }
  }
  void give_back(DeviceStatus *s) {
    std::lock_guard lock(mu_);
    free_.push_back(s);
  }

 private:
  std::mutex mu_;
  std::vector<DeviceStatus *> free_;
};

StatusPool &status_pool() {
  static StatusPool *pool = new StatusPool;  // never destroyed: callbacks may outlive main
  return *pool;
}

Status to_status(const detail::Plan &p, const DeviceStatus &s) {
  if (!s.failed) return Status::success();
  switch (s.kind) {
    case kBadSortedIndex:
      return detail::bad_sorted_index(p, static_cast<int64_t>(s.first_bad), s.bad_value);
    case kTooManyExpertsInRow:
      return detail::too_many_experts_in_row(p, static_cast<int64_t>(s.first_bad), s.bad_value);
    case kTooManyRoutedPairs: return detail::too_many_routed_pairs(p, s.routed_pairs);
    case kBadIndex:
      return detail::bad_index(p, s.rule, static_cast<int64_t>(s.first_bad), s.bad_value);
    case kRepeatedIndex:
      return detail::repeated_index(p, s.rule, static_cast<int64_t>(s.first_bad), s.bad_value,
                                    s.first_named);
    case kBadSplitSize:
      return detail::bad_split_size(p, 0, static_cast<int64_t>(s.first_bad), s.bad_value);
    case kSplitSizesTotal: return detail::split_sizes_total(p, 0, s.bad_value, p.T);
    case kRowWithoutExpert:
      return detail::row_without_expert(p, static_cast<int64_t>(s.first_bad), s.bad_value,
                                        s.routed_pairs);
    default: return detail::internal_error(p.api(), detail::cat("unknown device status ", s.kind));
  }
}

struct Pending {
  detail::Plan plan;
  DeviceStatus *host = nullptr;
  detail::DeviceErrorSink sink;
};

void CUDART_CB deliver_status(void *arg) {
  Pending *pending = static_cast<Pending *>(arg);
  pending->sink.deliver(pending->sink.context, to_status(pending->plan, *pending->host));
  status_pool().give_back(pending->host);
  delete pending;
}

Status add_sort(detail::Plan &p) {
  auto &w = p.workspace;
  {
    p.ws_slot[kSlotSortKeys] = w.add("sort_keys", static_cast<uint64_t>(2 * p.R) * sizeof(int32_t));
    p.ws_slot[kSlotSortValues] =
        w.add("sort_values", static_cast<uint64_t>(2 * p.R) * sizeof(int64_t));
    p.ws_slot[kSlotTokenRuns] =
        w.add("token_runs", static_cast<uint64_t>(2 * p.T) * sizeof(int64_t));
    // CUB sizes its temporary storage for the current device: the plan needs a GPU.
    cub::DoubleBuffer<int32_t> keys(nullptr, nullptr);
    cub::DoubleBuffer<int64_t> values(nullptr, nullptr);
    size_t temp = 0;
    const cudaError_t err =
        cub::DeviceRadixSort::SortPairs(nullptr, temp, keys, values, p.R, 0, sort_key_bits(p.T));
    if (err != cudaSuccess) {
      (void)cudaGetLastError();
      return detail::fail(Code::runtime_error,
                          detail::cat(p.api(),
                                      ": the CUDA backend cannot size its sort on this "
                                      "machine: ",
                                      cudaGetErrorName(err), " (", cudaGetErrorString(err), ")"));
    }
    p.ws_slot[kSlotSortTemp] = w.add("sort_temp", temp);
  }
  return Status::success();
}

Status cuda_prepare(detail::Plan &p) {
  p.variant_name = "sm_80+";
  p.ws_slot[kSlotStatus] = p.workspace.add("device_status", sizeof(DeviceStatus));
  MOEPERM_TRY(kKernels.prepare(p));
  p.internal_workspace = p.R == 0 || p.H == 0;
  return Status::success();
}

Workspace resolve(const detail::Plan &p, std::byte *base) {
  Workspace ws;
  auto at = [&](int slot) -> void * {
    return p.ws_slot[slot] < 0 ? nullptr : p.workspace.at<std::byte>(base, p.ws_slot[slot]);
  };
  ws.status = static_cast<DeviceStatus *>(at(kSlotStatus));
  ws.tile_counts = static_cast<int32_t *>(at(kSlotTileCounts));
  ws.chunk_counts = static_cast<int32_t *>(at(kSlotChunkCounts));
  ws.expert_offsets = static_cast<int64_t *>(at(kSlotExpertOffsets));
  ws.sort_keys = static_cast<int32_t *>(at(kSlotSortKeys));
  ws.sort_values = static_cast<int64_t *>(at(kSlotSortValues));
  ws.token_runs = static_cast<int64_t *>(at(kSlotTokenRuns));
  ws.sort_temp = at(kSlotSortTemp);
  ws.sort_temp_bytes =
      p.ws_slot[kSlotSortTemp] < 0 ? 0 : p.workspace.bytes(p.ws_slot[kSlotSortTemp]);
  ws.first_named = static_cast<unsigned long long *>(at(kSlotFirstNamed));
  ws.slot_values = static_cast<float *>(at(kSlotSlotValues));
  ws.winners = static_cast<unsigned long long *>(at(kSlotWinners));
  ws.chunk_starts = static_cast<int64_t *>(at(kSlotChunkStarts));
  return ws;
}

// Copies the status word to `host` and either enqueues its delivery to `sink` (which then
// owns `host`) or, without a sink, waits and converts it.
Status hand_off(const detail::Plan &p, const Workspace &ws, DeviceStatus *host, cudaStream_t stream,
                detail::DeviceErrorSink sink) {
  MOEPERM_TRY(cuda_status(
      cudaMemcpyAsync(host, ws.status, sizeof(DeviceStatus), cudaMemcpyDeviceToHost, stream),
      "cudaMemcpyAsync"));
  if (sink.deliver) {
    auto *pending = new Pending{p, host, sink};
    Status s =
        cuda_status(cudaLaunchHostFunc(stream, deliver_status, pending), "cudaLaunchHostFunc");
    if (!s.ok()) {
      delete pending;
      (void)cudaStreamSynchronize(stream);  // the copy into `host` must land before its reuse
    }
    return s;
  }
  MOEPERM_TRY(cuda_status(cudaStreamSynchronize(stream), "cudaStreamSynchronize"));
  return to_status(p, *host);
}

Status cuda_run_on_stream(const detail::Plan &p, const detail::Buffers &b, std::byte *base,
                          void *stream_handle, detail::DeviceErrorSink sink) {
  auto stream = static_cast<cudaStream_t>(stream_handle);
  const Workspace ws = resolve(p, base);
  // The status word starts as "no error": first_bad = kNone, everything else 0.
  MOEPERM_TRY(
      cuda_status(cudaMemsetAsync(ws.status, 0, sizeof(DeviceStatus), stream), "cudaMemsetAsync"));
  MOEPERM_TRY(cuda_status(
      cudaMemsetAsync(&ws.status->first_bad, 0xff, sizeof(ws.status->first_bad), stream),
      "cudaMemsetAsync"));
  MOEPERM_TRY(kKernels.find(p)(p, b, ws, stream));
  DeviceStatus *host = nullptr;
  MOEPERM_TRY(status_pool().take(&host));
  Status s = hand_off(p, ws, host, stream, sink);
  if (s.ok() && sink.deliver) return s;  // the callback now owns `host`
  status_pool().give_back(host);
  return s;
}

// Empty problems have a workspace of 0 (SPEC §5) but still need the status word and, in
// the forward, the ranks: the backend then allocates them itself, stream-ordered.
Status cuda_run_with_scratch(const detail::Plan &p, const detail::Buffers &b, std::byte *base,
                             void *stream_handle, detail::DeviceErrorSink sink) {
  if (!p.internal_workspace) return cuda_run_on_stream(p, b, base, stream_handle, sink);
  auto stream = static_cast<cudaStream_t>(stream_handle);
  void *scratch = nullptr;
  MOEPERM_TRY(
      cuda_status(cudaMallocAsync(&scratch, p.workspace.total(), stream), "cudaMallocAsync"));
  Status s = cuda_run_on_stream(p, b, static_cast<std::byte *>(scratch), stream_handle, sink);
  const Status f = cuda_status(cudaFreeAsync(scratch, stream), "cudaFreeAsync");
  // Once the outcome is promised to a sink, this call must report success (the sink's owner
  // frees its context in the callback); a failed free then only leaks the scratch.
  if (!s.ok() || sink.deliver) return s;
  return f;
}

Status cuda_run(const detail::Plan &p, const detail::Buffers &b, std::byte *base) {
  return cuda_run_with_scratch(p, b, base, nullptr, detail::DeviceErrorSink{});
}

}  // namespace
}  // namespace moeperm::cuda

namespace moeperm::detail {

const BackendOps kCudaBackend{
    .name = "cuda",
    .kind = Backend::cuda,
    .supports = [](const Plan &p) { return cuda::kKernels.supports(p); },
    .prepare = cuda::cuda_prepare,
    .run = cuda::cuda_run,
    .run_on_stream = cuda::cuda_run_with_scratch,
};

const BackendOps *cuda_backend() { return &kCudaBackend; }

}  // namespace moeperm::detail
