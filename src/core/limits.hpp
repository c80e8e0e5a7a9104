// Limits that validation and kernels share: one definition each (host and device code
// include this header).
#pragma once

#include <cstdint>

#ifndef __CUDACC__
#include "core/op_desc.hpp"
#endif

namespace moeperm::detail {

// CANN's limit on topK in drop-less mode (SPEC §5.5): a larger K is rejected at plan time
// with 561103, so kernels may size per-token arrays by it.
inline constexpr int64_t kMaxTopK = 512;

#ifndef __CUDACC__
// Rule 5 of both permute operators as a description's limit: drop-less K > 512 is 561103,
// where CANN's tiling fails.
inline constexpr LimitRule kTopKLimit{.value = Sym::K,
                                      .label = "topK",
                                      .max = kMaxTopK,
                                      .status = Code::inner_nullptr,
                                      .mode = Mode::dropless,
                                      .why = "CANN's tiling limit"};
#endif

}  // namespace moeperm::detail
