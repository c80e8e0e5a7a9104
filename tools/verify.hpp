// Verification of `moeperm run`: recompute both operators with the reference backend
// through the C++ API on the same inputs and compare every output bit for bit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "problem_model.hpp"

namespace moeperm::cli {

struct OutputComparison {
  std::string name;  // the CANN parameter name of the output
  int64_t elements = 0;
  int64_t differing = 0;  // elements whose bytes differ from the reference
};

struct Verification {
  std::vector<OutputComparison> outputs;
  double forward_seconds = 0, backward_seconds = 0;  // reference run times
  int64_t differing() const;
  bool identical() const { return differing() == 0; }
};

// `problem` holds the inputs and, in its output tensors, the results under test. The
// reference backward consumes the sortedIndices under test (the ones the backward under
// test consumed), so a forward mismatch does not hide or fake a backward one.
Verification verify_against_reference(const problem_model::Problem &problem);

}  // namespace moeperm::cli
