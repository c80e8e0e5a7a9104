// The timed product path of `moeperm run`: each operator of the token path through the CANN
// C API, exactly as a CANN program calls it (two phases, a created stream, device memory).
#pragma once

#include <cstdint>
#include <vector>

#include "problem_model.hpp"

namespace moeperm::cli {

// Wall-clock seconds of each phase, one entry per repetition.
struct OpTimes {
  std::vector<double> get_workspace_size;  // aclnn...GetWorkspaceSize
  std::vector<double> execute_sync;        // aclnn...(...) + aclrtSynchronizeStream
  uint64_t workspace_bytes = 0;
};

// Each call uploads the operator's inputs and (poisoned) outputs to device memory, runs it
// `repeat` times on `stream`, and downloads its outputs into the host tensors. Throws
// AclError on any failed call; the message includes aclGetRecentErrMsg(). The caller holds
// the runtime (acl::Runtime) and the stream.
OpTimes capi_permute(problem_model::Problem &p, void *stream, int repeat);
OpTimes capi_unpermute(problem_model::Problem &p, problem_model::UnpermuteTensors &u, void *stream,
                       int repeat);
OpTimes capi_unpermute_grad(problem_model::Problem &p, problem_model::UnpermuteTensors &u,
                            void *stream, int repeat);
// The permute Grad of G = `grad` (the unpermute Grad's dX on the token path, else the
// problem's random gradient).
OpTimes capi_permute_grad(problem_model::Problem &p, const problem_model::HostTensor &grad,
                          void *stream, int repeat);

}  // namespace moeperm::cli
