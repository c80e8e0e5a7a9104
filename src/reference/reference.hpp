// The naive reference kernels: single-threaded, scalar, allocating as they please, and a
// literal transcription of SPEC §2-§3. Never optimised; the oracle of every test.
#pragma once

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail::ref {

Status permute(const Plan &plan, const Buffers &buffers);
Status permute_grad(const Plan &plan, const Buffers &buffers);

}  // namespace moeperm::detail::ref
