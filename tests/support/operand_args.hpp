// Operator arguments as plain, nullable descriptors, so that one table row can be driven
// through both APIs: the C++ plan functions (moeperm::Error) and the CANN first phase
// (status + aclGetRecentErrMsg). Used by the SPEC §5 rule tables.
#pragma once

#include <moeperm/moeperm.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace moeperm::testing {

using OptDesc = std::optional<TensorDesc>;

// CANN parameter names in comments.
struct GradArgs {
  OptDesc G;   // permutedTokenOutputGrad
  OptDesc P;   // permutedProbsOutputGradOptional
  OptDesc S;   // sortedIndices
  OptDesc M;   // routingMapOptional
  OptDesc TG;  // tokensGradOut
  OptDesc PG;  // probsGradOutOptional
  int64_t num_experts = 0, tokens_num = 0;
  bool drop_and_pad = false;
};

struct PermuteArgs {
  OptDesc X;   // tokens
  OptDesc M;   // routingMap
  OptDesc PR;  // probsOptional
  OptDesc Y;   // permuteTokensOut
  OptDesc YP;  // permuteProbsOutOptional
  OptDesc S;   // sortedIndicesOut
  int64_t num_out_tokens = 0;
  bool drop_and_pad = false;
};

// Small valid problems: T=4, E=3, H=5 and K=2 (R=8) or C=2 (R=6); fp32 values and probs,
// an int8 routing map, every optional tensor present, contiguous with known storage.
inline constexpr int64_t kT = 4, kE = 3, kH = 5;
GradArgs valid_grad_args(bool drop_and_pad);
PermuteArgs valid_permute_args(bool drop_and_pad);
inline int64_t rows_for(bool drop_and_pad) { return drop_and_pad ? 6 : 8; }

// A contiguous descriptor whose storage is exactly its elements (unknown when that
// overflows int64).
TensorDesc dense(DType dtype, std::vector<int64_t> shape);

// The result of one first phase: the status code (0 on success) and the message.
struct Outcome {
  int32_t code = 0;
  std::string message;
};

// Whether each API can express the arguments at all: the C++ descriptors cannot leave a
// required tensor out, and aclCreateTensor takes exactly one stride per dimension.
bool expressible_in_cxx(const GradArgs &a);
bool expressible_in_cxx(const PermuteArgs &a);
bool expressible_in_c(const GradArgs &a);
bool expressible_in_c(const PermuteArgs &a);

// plan_permute_grad / plan_permute; Outcome{0, ""} when a plan is made.
Outcome plan_cxx(const GradArgs &a);
Outcome plan_cxx(const PermuteArgs &a);
// The CANN first phase over a dummy (zeroed, never written) buffer. An executor it creates is
// freed again without running.
Outcome first_phase_c(const GradArgs &a);
Outcome first_phase_c(const PermuteArgs &a);

}  // namespace moeperm::testing
