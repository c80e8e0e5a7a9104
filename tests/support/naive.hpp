// The test suite's own oracle for SPEC §2-§3, written from the spec text and independent of
// src/reference: the drop-less forward is computed by counting ranks (not by an argsort),
// the backward sums exactly in fp64 and rounds once with fp_reference's rounding.
// Conformance tests check the reference backend against this, and every backend against
// the reference bit for bit.
#pragma once

#include "testing.hpp"

#include <cstdint>
#include <vector>

namespace moeperm::testing {

// A routing map read out of a tensor: routed(t, e) is "the byte is nonzero".
struct Routing {
  int64_t T = 0, E = 0;
  std::vector<uint8_t> bits;  // [T * E]
  bool routed(int64_t t, int64_t e) const { return bits[static_cast<size_t>(t * E + e)] != 0; }
};
Routing read_routing(const HostTensor &m);

// What the forward must produce (SPEC §2), as index data.
struct ForwardExpect {
  std::vector<int32_t> sorted_indices;  // [R]
  std::vector<int64_t> row_token;       // [R]: token copied into row j; -1 for a zero row
  std::vector<int64_t> row_expert;      // [R]: expert of row j; -1 for a zero row
};

// num_out_tokens as the operator takes it: K = num_out_tokens / T (drop-less) or
// C = num_out_tokens / E (drop-and-pad).
ForwardExpect expected_forward(const Routing &m, int64_t num_out_tokens, bool drop_and_pad);

// p's forward outputs equal SPEC §2 bit for bit: sortedIndicesOut, every permuted row (a
// copy of its token or +0), every permuted prob (a copy or +0).
::testing::AssertionResult ForwardMatchesSpec(const Problem &p);

// p's backward outputs equal SPEC §3 bit for bit, given p.sorted_indices as S:
// tokensGrad is the exact (fp64) sum rounded once to the value dtype, probsGrad the
// masked scatter (drop-less) or the assignment (drop-and-pad). Exactness needs inputs whose
// fp32 running sums are exact (multiples of 2^-6 with small magnitude, as fill_random
// makes them): this is checked and reported as a failure when violated.
::testing::AssertionResult BackwardMatchesSpec(const Problem &p);

// SPEC §3's second statement of the drop-less probs gradient, for S from the forward:
// probsGrad[t, e_r] = P[S[t*K + r]] for token t's r-th expert e_r (and 0 where M is 0). It
// must agree with the masked-scatter statement BackwardMatchesSpec checks.
::testing::AssertionResult ProbsGradMatchesSlotFormula(const Problem &p);

}  // namespace moeperm::testing
