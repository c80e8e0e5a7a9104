// The timed product path of `moeperm run`: forward then backward through the CANN C API,
// exactly as a CANN program calls them (two phases, a created stream, device memory).
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

struct CapiTimes {
  OpTimes forward, backward;
};

// Uploads the problem to device memory, runs forward+backward `repeat` times on one stream
// (the backward consumes the sortedIndices the forward just wrote on the device), then
// downloads every output into the problem's output tensors. Throws AclError on any failed
// call; the message includes aclGetRecentErrMsg().
CapiTimes run_through_capi(problem_model::Problem &problem, int repeat);

}  // namespace moeperm::cli
