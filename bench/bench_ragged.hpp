// The ragged pair (docs/ragged.md) in `moeperm bench`: the tensors of its token path on a
// case's problem (the same inputs as the CANN operators': tokens, map and probs; the
// unpermute reads the ragged permute's rows; the Grads read the problem's gradients), and
// its four calls.
#pragma once

#include <moeperm/moeperm.hpp>

#include "problem_model.hpp"

namespace moeperm::bench {

struct RaggedPath {
  problem_model::HostTensor y, yp, s, out, dx, dp, tg, pg;
  RaggedPermuteDesc permute;
  RaggedUnpermuteDesc unpermute;
  RaggedUnpermuteGradDesc unpermute_grad;
  RaggedPermuteGradDesc permute_grad;
  RaggedPermuteData permute_data;
  RaggedUnpermuteData unpermute_data;
  RaggedUnpermuteGradData unpermute_grad_data;
  RaggedPermuteGradData permute_grad_data;
};

// Outputs allocated (poisoned) from the shapes the library infers; `p` and `u` must outlive
// the path (their tensors are its inputs).
RaggedPath make_ragged_path(problem_model::Problem &p, problem_model::UnpermuteTensors &u);

}  // namespace moeperm::bench
