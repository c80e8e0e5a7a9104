// Verification of `moeperm run`: each operator of the token path recomputed with the reference
// backend through the C++ API, on the very inputs the operator under test consumed (the
// outputs under test of the operators before it), and every output compared bit for bit. So
// a mismatch in one operator neither hides nor fakes one in the next.
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
  double seconds = 0;  // the reference run
  int64_t differing() const;
  bool identical() const { return differing() == 0; }
};

// (The unpermute pair's take the tensors mutable only because their data structs do; inputs
// and outputs under test are not written.)
Verification verify_permute(const problem_model::Problem &p);
Verification verify_unpermute(problem_model::Problem &p, problem_model::UnpermuteTensors &u);
Verification verify_unpermute_grad(problem_model::Problem &p, problem_model::UnpermuteTensors &u);
Verification verify_permute_grad(const problem_model::Problem &p,
                                 const problem_model::HostTensor &grad);

// The reference run of an operator into the problem's own outputs: the inputs of a later
// operator when `moeperm run --op` leaves this one out.
void reference_permute(problem_model::Problem &p);
void reference_unpermute(problem_model::Problem &p, problem_model::UnpermuteTensors &u);
void reference_unpermute_grad(problem_model::Problem &p, problem_model::UnpermuteTensors &u);

}  // namespace moeperm::cli
