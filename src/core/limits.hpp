// Limits that validation and kernels share: one definition each (host and device code
// include this header).
#pragma once

#include <cstdint>

namespace moeperm::detail {

// CANN's limit on topK in drop-less mode (SPEC §5.5): a larger K is rejected at plan time
// with 561103, so kernels may size per-token arrays by it.
inline constexpr int64_t kMaxTopK = 512;

}  // namespace moeperm::detail
