#include "backend/backend.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail {

const BackendOps kReferenceBackend{
    .name = "reference",
    .id = BackendId::reference,
    .supports = [](const Plan &) { return true; },
    // The reference allocates internally: it needs no workspace.
    .prepare = [](Plan &) { return Status::success(); },
    .run =
        [](const Plan &plan, const Buffers &buffers, std::byte *) {
          return plan.op == Op::permute ? ref::permute(plan, buffers)
                                        : ref::permute_grad(plan, buffers);
        },
    .run_on_stream = nullptr,
};

}  // namespace moeperm::detail
