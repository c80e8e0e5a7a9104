// Validation and planning of MoeTokenPermuteWithRoutingMapGrad. Each block below is one
// SPEC §5 rule, in the spec's order, so "first failure wins" holds by construction.
#include "backend/registry.hpp"
#include "core/checked_math.hpp"
#include "core/dtype.hpp"
#include "core/messages.hpp"
#include "core/operands.hpp"
#include "core/tensor_geometry.hpp"

namespace moeperm::detail {

Status make_permute_grad_plan(const PermuteGradOperands &ops, Backend backend, Plan *plan) {
  constexpr std::string_view api = "aclnnMoeTokenPermuteWithRoutingMapGrad";
  const TensorDesc *G = ops.grad, *P = ops.probs_grad, *S = ops.sorted_indices,
                   *M = ops.routing_map, *TG = ops.tokens_grad, *PG = ops.dense_probs_grad;

  // §5.1 attributes.
  if (ops.num_experts <= 0) return invalid_attribute(api, "numExperts", "> 0", ops.num_experts);
  if (ops.tokens_num <= 0) return invalid_attribute(api, "tokensNum", "> 0", ops.tokens_num);

  // §5.2 required tensors.
  if (!G) return null_argument(api, "permutedTokenOutputGrad");
  if (!S) return null_argument(api, "sortedIndices");
  if (!TG) return null_argument(api, "tokensGradOut");
  if (P && !M)
    return null_argument_because(api, "routingMapOptional",
                                 "permutedProbsOutputGradOptional is given");

  // §5.3 dtypes.
  if (!is_float_value(G->dtype))
    return expected_dtype(api, "permutedTokenOutputGrad", "bfloat16, float16 or float32", G->dtype);
  if (TG->dtype != G->dtype)
    return expected_dtype(api, "tokensGradOut",
                          cat(to_string(G->dtype), " (the dtype of permutedTokenOutputGrad)"),
                          TG->dtype);
  if (P && !(is_float_value(P->dtype) && probs_dtype_matches(P->dtype, G->dtype)))
    return expected_dtype(api, "permutedProbsOutputGradOptional",
                          cat(to_string(G->dtype), G->dtype == DType::bf16 ? " or float32" : "",
                              " (to match permutedTokenOutputGrad)"),
                          P->dtype);
  if (PG) {
    if (P && PG->dtype != P->dtype)
      return expected_dtype(
          api, "probsGradOutOptional",
          cat(to_string(P->dtype), " (the dtype of permutedProbsOutputGradOptional)"), PG->dtype);
    if (!P && !(is_float_value(PG->dtype) && probs_dtype_matches(PG->dtype, G->dtype)))
      return expected_dtype(api, "probsGradOutOptional",
                            cat(to_string(G->dtype), G->dtype == DType::bf16 ? " or float32" : ""),
                            PG->dtype);
  }
  if (M && !is_routing_map_dtype(M->dtype))
    return expected_dtype(api, "routingMapOptional", "int8 or bool", M->dtype);
  if (S->dtype != DType::i32) return expected_dtype(api, "sortedIndices", "int32", S->dtype);

  // §5.4 ranks.
  MOEPERM_TRY(check_rank(api, "permutedTokenOutputGrad", *G, 2));
  MOEPERM_TRY(check_rank(api, "sortedIndices", *S, 1));
  if (P) MOEPERM_TRY(check_rank(api, "permutedProbsOutputGradOptional", *P, 1));
  if (M) MOEPERM_TRY(check_rank(api, "routingMapOptional", *M, 2));
  MOEPERM_TRY(check_rank(api, "tokensGradOut", *TG, 2));
  if (PG) MOEPERM_TRY(check_rank(api, "probsGradOutOptional", *PG, 2));

  const int64_t T = ops.tokens_num, E = ops.num_experts;
  const int64_t R = G->shape[0], H = G->shape[1];

  // §5.5 CANN's tiling limit (K is known from the shapes alone).
  if (!ops.drop_and_pad && R >= 0 && R / T > kMaxTopK) return topk_limit(api, R / T, kMaxTopK);

  // §5.6 consistent shapes (moeperm's stricter rule).
  if (R < 0 || H < 0)
    return inconsistent(
        api, cat("permutedTokenOutputGrad: dimensions must be >= 0, got ", shape_string(G->shape)));
  int64_t K = 0, C = 0;
  if (!ops.drop_and_pad) {
    if (R % T != 0)
      return inconsistent(api, cat("permutedTokenOutputGrad has ", R,
                                   " rows, which is not divisible by tokensNum=", T,
                                   " (dropAndPad=false, rows = tokensNum * topK)"));
    K = R / T;
  } else {
    if (R % E != 0)
      return inconsistent(api, cat("permutedTokenOutputGrad has ", R,
                                   " rows, which is not divisible by numExperts=", E,
                                   " (dropAndPad=true, rows = numExperts * capacity)"));
    C = R / E;
  }
  auto expect_len = [&](const TensorDesc &d, std::string_view arg) -> Status {
    if (d.shape[0] != R)
      return inconsistent(api, cat(arg, " has length ", d.shape[0], ", expected ", R,
                                   " (the rows of permutedTokenOutputGrad)"));
    return Status::success();
  };
  auto expect_shape = [&](const TensorDesc &d, std::string_view arg, int64_t rows, int64_t cols,
                          std::string_view why) -> Status {
    if (d.shape[0] != rows || d.shape[1] != cols)
      return inconsistent(api, cat(arg, " has shape ", shape_string(d.shape), ", expected [", rows,
                                   ", ", cols, "] ", why));
    return Status::success();
  };
  MOEPERM_TRY(expect_len(*S, "sortedIndices"));
  if (P) MOEPERM_TRY(expect_len(*P, "permutedProbsOutputGradOptional"));
  if (M) MOEPERM_TRY(expect_shape(*M, "routingMapOptional", T, E, "(tokensNum, numExperts)"));
  MOEPERM_TRY(expect_shape(*TG, "tokensGradOut", T, H,
                           "(tokensNum, hidden size of permutedTokenOutputGrad)"));
  if (PG) MOEPERM_TRY(expect_shape(*PG, "probsGradOutOptional", T, E, "(tokensNum, numExperts)"));
  if (!problem_bytes_fit(R, T, E, H))
    return inconsistent(api, cat("sizes overflow int64: R=", R, ", T=", T, ", E=", E, ", H=", H,
                                 " (tensor sizes in bytes must fit in int64)"));

  MOEPERM_TRY(check_view(api, "permutedTokenOutputGrad", *G, false));
  if (P) MOEPERM_TRY(check_view(api, "permutedProbsOutputGradOptional", *P, false));
  MOEPERM_TRY(check_view(api, "sortedIndices", *S, false));
  if (M) MOEPERM_TRY(check_view(api, "routingMapOptional", *M, false));
  MOEPERM_TRY(check_view(api, "tokensGradOut", *TG, true));
  if (PG) MOEPERM_TRY(check_view(api, "probsGradOutOptional", *PG, true));

  Plan p;
  p.op = Op::permute_grad;
  p.drop_and_pad = ops.drop_and_pad;
  p.T = T, p.E = E, p.H = H, p.K = K, p.C = C, p.R = R;
  p.value_dtype = G->dtype;
  p.permuted_probs_dtype = P ? P->dtype : (PG ? PG->dtype : G->dtype);
  p.probs_dtype = PG ? PG->dtype : p.permuted_probs_dtype;
  p.has_routing_map = M != nullptr;
  if (M) p.routing_map_dtype = M->dtype, p.routing_map = matrix_geom(*M);
  p.probs = !PG ? ProbsWork::none : (P ? ProbsWork::compute : ProbsWork::zero_fill);
  p.tokens = matrix_geom(*TG);
  p.permuted = matrix_geom(*G);
  if (PG) p.dense_probs = matrix_geom(*PG);
  if (P) p.permuted_probs = vector_geom(*P);
  p.sorted_indices = vector_geom(*S);
  MOEPERM_TRY(select_backend(p, backend));
  *plan = p;
  return Status::success();
}

}  // namespace moeperm::detail
