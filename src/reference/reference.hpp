// The naive reference kernels: single-threaded, scalar, allocating as they please, and a
// literal transcription of SPEC §2-§3 and SPEC-unpermute U1-U3. Never optimised; the oracle of
// every test.
#pragma once

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail::ref {

Status permute(const Plan &plan, const Buffers &buffers);
Status permute_grad(const Plan &plan, const Buffers &buffers);
Status unpermute(const Plan &plan, const Buffers &buffers);         // SPEC-unpermute U1
Status unpermute_grad(const Plan &plan, const Buffers &buffers);    // SPEC-unpermute U2
Status ragged_permute(const Plan &plan, const Buffers &buffers);    // docs/ragged.md
Status ragged_unpermute(const Plan &plan, const Buffers &buffers);  // docs/ragged.md
Status ragged_permute_grad(const Plan &plan, const Buffers &buffers);
Status ragged_unpermute_grad(const Plan &plan, const Buffers &buffers);
// Both directions: the plan's operator (sort_chunks or sort_chunks_grad) picks.
Status sort_chunks(const Plan &plan, const Buffers &buffers);  // core/ops/sort_chunks.cpp

}  // namespace moeperm::detail::ref
