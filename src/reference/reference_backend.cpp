// The reference backend: the naive kernels of reference.hpp, one entry per operator. It
// supports every plan of an operator it has, needs no workspace (it allocates as it
// pleases), and is last in the registry, so that every plan has a backend.
#include "backend/backend.hpp"
#include "backend/kernel_table.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail {
namespace {

using RefKernel = Status (*)(const Plan &, const Buffers &);

// Each reference kernel covers both modes.
constexpr KernelTable<RefKernel> kKernels{
    {Op::permute, {.dropless = ref::permute, .drop_and_pad = ref::permute}},
    {Op::permute_grad, {.dropless = ref::permute_grad, .drop_and_pad = ref::permute_grad}},
    {Op::unpermute, {.dropless = ref::unpermute, .drop_and_pad = ref::unpermute}},
    {Op::unpermute_grad, {.dropless = ref::unpermute_grad, .drop_and_pad = ref::unpermute_grad}},
    {Op::ragged_permute, {.dropless = ref::ragged_permute, .drop_and_pad = ref::ragged_permute}},
    {Op::ragged_unpermute,
     {.dropless = ref::ragged_unpermute, .drop_and_pad = ref::ragged_unpermute}},
    {Op::ragged_permute_grad,
     {.dropless = ref::ragged_permute_grad, .drop_and_pad = ref::ragged_permute_grad}},
    {Op::ragged_unpermute_grad,
     {.dropless = ref::ragged_unpermute_grad, .drop_and_pad = ref::ragged_unpermute_grad}},
    {Op::sort_chunks, {.dropless = ref::sort_chunks, .drop_and_pad = ref::sort_chunks}},
    {Op::sort_chunks_grad, {.dropless = ref::sort_chunks, .drop_and_pad = ref::sort_chunks}},
};
static_assert(kKernels.lists_every_op(), "the reference needs a line for every Op");

}  // namespace

extern const BackendOps kReferenceBackend{
    .name = "reference",
    .kind = Backend::reference,
    .supports = [](const Plan &p) { return kKernels.supports(p); },
    .prepare = [](Plan &) { return Status::success(); },
    .run = [](const Plan &p, const Buffers &b, std::byte *) { return kKernels.find(p)(p, b); },
    .run_on_stream = nullptr,
};

}  // namespace moeperm::detail
