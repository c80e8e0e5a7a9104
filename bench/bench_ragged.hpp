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
  // Expert parallelism's chunk sort (docs/sort_chunks.md) of the ragged permute's rows: E
  // chunks of R/E rows (+-1) as 8 ranks x E/8 local experts (1 x E when E % 8 != 0), sorted
  // by local expert; the Grad puts the problem's gradients back.
  problem_model::HostTensor sizes, order, sorted, sorted_p, back, back_p;
  SortChunksDesc sort;
  SortChunksGradDesc sort_grad;
  SortChunksData sort_data;
  SortChunksGradData sort_grad_data;
};

// Bytes one chunk sort moves: R rows read and written (and their probs), the chunk tables.
problem_model::Traffic sort_chunks_traffic(const problem_model::ProblemSpec &s);

// Outputs allocated (poisoned) from the shapes the library infers; `p` and `u` must outlive
// the path (their tensors are its inputs).
RaggedPath make_ragged_path(problem_model::Problem &p, problem_model::UnpermuteTensors &u);

}  // namespace moeperm::bench
