// The production CPU backend: multi-threaded (OpenMP), workspace-driven, no allocation on
// the run path. Empty problems (R = 0 or H = 0) go to the reference, which needs no
// workspace (SPEC §5: empty inputs succeed with a workspace of 0; Note [Empty problems]).
#include "backend/backend.hpp"
#include "backend/kernel_table.hpp"
#include "cpu/isa.hpp"
#include "cpu/kernels.hpp"

namespace moeperm::detail {
namespace {

// Outputs that cannot stay in the cache bypass it: skipping the read-for-ownership of each
// destination line saves a third of the traffic of a copy. Too large, or written while the
// call reads more than the cache holds (cpu::streams_output). input_rows: the rows of H
// elements the call reads.
bool streams(const Plan &p, int64_t output_rows, int64_t input_rows) {
  const int64_t row = p.H * element_size(p.value_dtype);
  return cpu::streams_output(output_rows * row, (output_rows + input_rows) * row,
                             cpu::streaming_store_bytes());
}

// The rows an unpermute Grad reads: dY's T, and X's R where it takes the probs gradient.
int64_t unpermute_grad_rows_read(const Plan &p) {
  return p.T + (p.has(Role::saved_permuted) ? p.R : 0);
}

void add_block_ranks(Plan &p) {
  p.ws_slot[cpu::kSlotBlockRanks] = p.workspace.add(
      "expert_block_ranks", static_cast<uint64_t>(cpu::token_blocks(p.T) * p.E) * sizeof(int64_t));
}

void add_token_csr(Plan &p) {
  p.ws_slot[cpu::kSlotCsrOffsets] =
      p.workspace.add("csr_offsets", static_cast<uint64_t>(p.T + 1) * sizeof(int64_t));
  p.ws_slot[cpu::kSlotCsrSlots] =
      p.workspace.add("csr_slots", static_cast<uint64_t>(p.R) * sizeof(int64_t));
}

void add_slot_values(Plan &p) {
  p.ws_slot[cpu::kSlotSlotValues] =
      p.workspace.add("slot_values", static_cast<uint64_t>(p.R) * sizeof(float));
}

// Forward: writes [R, H]; drop-less needs the expert-major ranks.
Status prepare_permute(Plan &p) {
  p.stream_stores = streams(p, p.R, p.T);
  if (!p.drop_and_pad) add_block_ranks(p);
  return Status::success();
}

// Grad: writes [T, H]; drop-less probs need the ranks, drop-and-pad groups slots by token.
Status prepare_permute_grad(Plan &p) {
  p.stream_stores = streams(p, p.T, p.R);
  if (!p.drop_and_pad && p.probs == ProbsWork::compute) add_block_ranks(p);
  if (p.drop_and_pad) add_token_csr(p);
  return Status::success();
}

// Unpermute: writes [T, H]; drop-and-pad groups slots by token and keeps their weights.
Status prepare_unpermute(Plan &p) {
  p.stream_stores = streams(p, p.T, p.R);
  if (p.drop_and_pad) {
    add_token_csr(p);
    add_slot_values(p);
  }
  return Status::success();
}

// Unpermute Grad: writes [R, H]; outIndex's uniqueness check records each row's first
// slot; drop-and-pad dP keeps its dot products in slot order.
Status prepare_unpermute_grad(Plan &p) {
  p.stream_stores = streams(p, p.R, unpermute_grad_rows_read(p));
  p.ws_slot[cpu::kSlotFirstNamed] =
      p.workspace.add("first_named", static_cast<uint64_t>(p.R) * sizeof(int64_t));
  if (p.drop_and_pad && p.probs == ProbsWork::compute) add_slot_values(p);
  return Status::success();
}

// Ragged permute: writes [R, H]; per-block counts and each expert's list length.
Status prepare_ragged_permute(Plan &p) {
  p.stream_stores = streams(p, p.R, p.T);
  p.ws_slot[cpu::kSlotBlockRanks] =
      p.workspace.add("block_positions",
                      static_cast<uint64_t>((cpu::token_blocks(p.T) + 1) * p.E) * sizeof(int64_t));
  return Status::success();
}

// The ragged pair's row groups (cpu::group_rows_by_token): the token CSR, and drop-less
// with experts the map's per-block counts and each expert's first row.
void add_ragged_rows(Plan &p, bool need_experts) {
  add_token_csr(p);
  if (need_experts && !p.drop_and_pad)
    p.ws_slot[cpu::kSlotExpertFirst] = p.workspace.add(
        "expert_first_rows",
        static_cast<uint64_t>(cpu::token_blocks(p.T) * p.E + p.E + 1) * sizeof(int64_t));
}

// Ragged unpermute: writes [T, H]; with probs, each row's weight in token order.
Status prepare_ragged_unpermute(Plan &p) {
  p.stream_stores = streams(p, p.T, p.R);
  add_ragged_rows(p, p.has(Role::dense_probs));
  if (p.has(Role::dense_probs)) add_slot_values(p);
  return Status::success();
}

// Ragged permute Grad: writes [T, H].
Status prepare_ragged_permute_grad(Plan &p) {
  p.stream_stores = streams(p, p.T, p.R);
  add_ragged_rows(p, p.probs == ProbsWork::compute);
  return Status::success();
}

// Ragged unpermute Grad: writes [R, H].
Status prepare_ragged_unpermute_grad(Plan &p) {
  p.stream_stores = streams(p, p.R, unpermute_grad_rows_read(p));
  add_ragged_rows(p, p.has(Role::dense_probs));
  return Status::success();
}

// sort_chunks (both directions): writes [T, H]; the chunks' starts and sorted_index's
// uniqueness check.
Status prepare_sort_chunks(Plan &p) {
  p.stream_stores = streams(p, p.T, p.T);
  p.ws_slot[cpu::kSlotChunkStarts] =
      p.workspace.add("chunk_starts", static_cast<uint64_t>(2 * p.S + 1) * sizeof(int64_t));
  p.ws_slot[cpu::kSlotFirstNamed] =
      p.workspace.add("first_named", static_cast<uint64_t>(p.S) * sizeof(int64_t));
  return Status::success();
}

using CpuKernel = Status (*)(const Plan &, const Buffers &, std::byte *);

constexpr KernelTable<CpuKernel> kKernels{
    {Op::permute, {prepare_permute, cpu::permute_dropless, cpu::permute_drop_and_pad}},
    {Op::permute_grad,
     {prepare_permute_grad, cpu::permute_grad_dropless, cpu::permute_grad_drop_and_pad}},
    {Op::unpermute, {prepare_unpermute, cpu::unpermute_dropless, cpu::unpermute_drop_and_pad}},
    {Op::unpermute_grad,
     {prepare_unpermute_grad, cpu::unpermute_grad_dropless, cpu::unpermute_grad_drop_and_pad}},
    {Op::ragged_permute, {prepare_ragged_permute, cpu::ragged_permute, cpu::ragged_permute}},
    {Op::ragged_unpermute,
     {prepare_ragged_unpermute, cpu::ragged_unpermute, cpu::ragged_unpermute}},
    {Op::ragged_permute_grad,
     {prepare_ragged_permute_grad, cpu::ragged_permute_grad, cpu::ragged_permute_grad}},
    {Op::ragged_unpermute_grad,
     {prepare_ragged_unpermute_grad, cpu::ragged_unpermute_grad, cpu::ragged_unpermute_grad}},
    {Op::sort_chunks, {prepare_sort_chunks, cpu::sort_chunks, cpu::sort_chunks}},
    {Op::sort_chunks_grad, {prepare_sort_chunks, cpu::sort_chunks, cpu::sort_chunks}},
};
static_assert(kKernels.lists_every_op(), "the CPU backend needs a line for every Op");

// R = 0 or H = 0 goes to the reference, which needs no workspace (Note [Empty problems]).
Support cpu_supports(const Plan &p) {
  if (kKernels.supports(p) != Support::yes) return Support::no_kernel;
  return p.R > 0 && p.H > 0 ? Support::yes : Support::empty_problem;
}

Status cpu_prepare(Plan &p) {
  const cpu::Isa isa = cpu::selected_isa();
  p.variant = static_cast<uint8_t>(isa);
  p.variant_name = cpu::to_string(isa);
  return kKernels.prepare(p);
}

Status cpu_run(const Plan &p, const Buffers &b, std::byte *ws) {
  return kKernels.find(p)(p, b, ws);
}

}  // namespace

extern const BackendOps kCpuBackend{
    .name = "cpu",
    .kind = Backend::cpu,
    .supports = cpu_supports,
    .prepare = cpu_prepare,
    .run = cpu_run,
    .run_on_stream = nullptr,
};

}  // namespace moeperm::detail
