#include "backend/backend.hpp"
#include "reference/reference.hpp"

namespace moeperm::detail {

const BackendOps kReferenceBackend{
    .name = "reference",
    .id = BackendId::reference,
    .supports = [](const Plan &) { return true; },
    .prepare =
        [](Plan &) {
          return Status::success();
        },  // allocates internally: the reference needs no workspace
    .run =
        [](const Plan &plan, const Buffers &buffers, std::byte *) {
          return plan.op == Op::permute ? ref::permute(plan, buffers)
                                        : ref::permute_grad(plan, buffers);
        },
    .run_on_stream = nullptr,
};

}  // namespace moeperm::detail
