// Structural checks on one TensorDesc and its normalisation into plan geometry.
#pragma once

#include <moeperm/moeperm.hpp>

#include <string_view>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail {

// Rule 4: rank (and a strides vector of the same length, when given).
// A rank mismatch is `code` (161002, or an operator's own rank status).
Status check_rank(std::string_view api, std::string_view arg, const TensorDesc &desc, int64_t rank,
                  Code code = Code::invalid_param);

// Rule 6 tail, for a tensor whose shape is already known to be consistent:
// non-negative dims, a view whose every element lies inside its storage (offset >= 0,
// inside storage_elements when given), no int64 overflow in its extent, and, for an
// output, no two elements sharing one address.
Status check_view(std::string_view api, std::string_view arg, const TensorDesc &desc,
                  bool is_output);

int64_t element_count(const TensorDesc &desc);  // product of dims; callers checked overflow

MatrixGeom matrix_geom(const TensorDesc &desc);  // rank 2
VectorGeom vector_geom(const TensorDesc &desc);  // rank 1

}  // namespace moeperm::detail
