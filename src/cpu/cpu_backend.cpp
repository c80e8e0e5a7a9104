// The production CPU backend: multi-threaded (OpenMP), workspace-driven, no allocation on
// the run path. Empty problems (R = 0 or H = 0) go to the reference, which needs no
// workspace (SPEC §5: empty inputs succeed with a workspace of 0).
#include "backend/backend.hpp"
#include "cpu/isa.hpp"
#include "cpu/kernels.hpp"

namespace moeperm::detail {
namespace {

bool cpu_supports(const Plan &p) { return p.R > 0 && p.H > 0; }

// Outputs larger than this bypass the cache: they cannot stay in it anyway, and skipping
// the read-for-ownership of each destination line saves a third of the traffic of a copy.
constexpr int64_t kStreamingBytes = int64_t{16} << 20;

Status cpu_prepare(Plan &p) {
  const cpu::Isa isa = cpu::selected_isa();
  p.variant = static_cast<uint8_t>(isa);
  p.variant_name = cpu::to_string(isa);
  const int64_t out_rows = p.op == Op::permute ? p.R : p.T;
  p.stream_stores = out_rows * p.H * element_size(p.value_dtype) >= kStreamingBytes;
  const bool needs_ranks =
      !p.drop_and_pad && (p.op == Op::permute || p.probs == ProbsWork::compute);
  if (needs_ranks) {
    p.ws_slot[cpu::kSlotBlockRanks] =
        p.workspace.add("expert_block_ranks",
                        static_cast<uint64_t>(cpu::token_blocks(p.T) * p.E) * sizeof(int64_t));
  }
  if (p.op == Op::permute_grad && p.drop_and_pad) {
    p.ws_slot[cpu::kSlotCsrOffsets] =
        p.workspace.add("csr_offsets", static_cast<uint64_t>(p.T + 1) * sizeof(int64_t));
    p.ws_slot[cpu::kSlotCsrSlots] =
        p.workspace.add("csr_slots", static_cast<uint64_t>(p.R) * sizeof(int64_t));
  }
  return Status::success();
}

Status cpu_run(const Plan &p, const Buffers &b, std::byte *ws) {
  if (p.op == Op::permute)
    return p.drop_and_pad ? cpu::permute_drop_and_pad(p, b, ws) : cpu::permute_dropless(p, b, ws);
  return p.drop_and_pad ? cpu::permute_grad_drop_and_pad(p, b, ws)
                        : cpu::permute_grad_dropless(p, b, ws);
}

}  // namespace

const BackendOps kCpuBackend{
    .name = "cpu",
    .id = BackendId::cpu,
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .run = cpu_run,
    .run_on_stream = nullptr,
};

}  // namespace moeperm::detail
