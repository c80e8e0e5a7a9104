// Every operator's operands (one header per operator in core/ops/): what the API layers
// fill and hand to plan_call(to_set(...)).
#pragma once

#include "core/ops/permute.hpp"
#include "core/ops/permute_grad.hpp"
#include "core/ops/unpermute.hpp"
#include "core/ops/unpermute_grad.hpp"
#include "core/ops/ragged_permute.hpp"
#include "core/ops/ragged_unpermute.hpp"
#include "core/ops/ragged_permute_grad.hpp"
#include "core/ops/ragged_unpermute_grad.hpp"
#include "core/ops/sort_chunks.hpp"
