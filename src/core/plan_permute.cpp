// Validation and planning of MoeTokenPermuteWithRoutingMap. SPEC §5 spells out the order
// for the Grad operator; the forward follows the same order rule for rule:
// attributes, required tensors, dtypes, ranks, the topK limit, consistent shapes.
#include "backend/registry.hpp"
#include "core/checked_math.hpp"
#include "core/dtype.hpp"
#include "core/messages.hpp"
#include "core/operands.hpp"
#include "core/tensor_geometry.hpp"

namespace moeperm::detail {

Status make_permute_plan(const PermuteOperands &ops, Backend backend, Plan *plan) {
  constexpr std::string_view api = "aclnnMoeTokenPermuteWithRoutingMap";
  const TensorDesc *X = ops.tokens, *M = ops.routing_map, *PR = ops.probs, *Y = ops.permuted_tokens,
                   *YP = ops.permuted_probs, *S = ops.sorted_indices;

  // 1. attributes.
  if (ops.num_out_tokens < 0)
    return invalid_attribute(api, "numOutTokens", ">= 0", ops.num_out_tokens);

  // 2. required tensors.
  if (!X) return null_argument(api, "tokens");
  if (!M) return null_argument(api, "routingMap");
  if (!Y) return null_argument(api, "permuteTokensOut");
  if (!S) return null_argument(api, "sortedIndicesOut");

  // 3. dtypes.
  if (!is_float_value(X->dtype))
    return expected_dtype(api, "tokens", "bfloat16, float16 or float32", X->dtype);
  if (!is_routing_map_dtype(M->dtype))
    return expected_dtype(api, "routingMap", "int8 or bool", M->dtype);
  const std::string probs_allowed =
      cat(to_string(X->dtype), X->dtype == DType::bf16 ? " or float32" : "", " (to match tokens)");
  if (PR && !(is_float_value(PR->dtype) && probs_dtype_matches(PR->dtype, X->dtype)))
    return expected_dtype(api, "probsOptional", probs_allowed, PR->dtype);
  if (Y->dtype != X->dtype)
    return expected_dtype(api, "permuteTokensOut",
                          cat(to_string(X->dtype), " (the dtype of tokens)"), Y->dtype);
  if (YP) {
    if (PR && YP->dtype != PR->dtype)
      return expected_dtype(api, "permuteProbsOutOptional",
                            cat(to_string(PR->dtype), " (the dtype of probsOptional)"), YP->dtype);
    if (!PR && !(is_float_value(YP->dtype) && probs_dtype_matches(YP->dtype, X->dtype)))
      return expected_dtype(api, "permuteProbsOutOptional", probs_allowed, YP->dtype);
  }
  if (S->dtype != DType::i32) return expected_dtype(api, "sortedIndicesOut", "int32", S->dtype);

  // 4. ranks.
  MOEPERM_TRY(check_rank(api, "tokens", *X, 2));
  MOEPERM_TRY(check_rank(api, "routingMap", *M, 2));
  if (PR) MOEPERM_TRY(check_rank(api, "probsOptional", *PR, 2));
  MOEPERM_TRY(check_rank(api, "permuteTokensOut", *Y, 2));
  if (YP) MOEPERM_TRY(check_rank(api, "permuteProbsOutOptional", *YP, 1));
  MOEPERM_TRY(check_rank(api, "sortedIndicesOut", *S, 1));

  const int64_t T = X->shape[0], H = X->shape[1], E = M->shape[1];
  if (T < 0 || H < 0)
    return inconsistent(api, cat("tokens: dimensions must be >= 0, got ", shape_string(X->shape)));
  if (E < 0 || M->shape[0] < 0)
    return inconsistent(api,
                        cat("routingMap: dimensions must be >= 0, got ", shape_string(M->shape)));

  // 5. CANN's tiling limit.
  const int64_t K = (!ops.drop_and_pad && T > 0) ? ops.num_out_tokens / T : 0;
  if (K > kMaxTopK) return topk_limit(api, K, kMaxTopK);

  // 6. consistent shapes.
  if (M->shape[0] != T)
    return inconsistent(
        api, cat("routingMap has shape ", shape_string(M->shape), ", expected [", T,
                 ", numExperts] (its rows are the tokens of tokens ", shape_string(X->shape), ")"));
  if (PR && (PR->shape[0] != T || PR->shape[1] != E))
    return inconsistent(api, cat("probsOptional has shape ", shape_string(PR->shape),
                                 ", expected [", T, ", ", E, "] (the shape of routingMap)"));
  int64_t C = 0, R = 0;
  if (!ops.drop_and_pad) {
    R = T * K;  // <= numOutTokens: cannot overflow
  } else {
    if (E == 0)
      return inconsistent(api,
                          "routingMap has 0 experts (columns); dropAndPad=true needs at "
                          "least one to derive capacity = numOutTokens / numExperts");
    C = ops.num_out_tokens / E;
    if (C > T)
      return inconsistent(
          api, cat("capacity = numOutTokens / numExperts = ", ops.num_out_tokens, " / ", E, " = ",
                   C, " exceeds the ", T, " tokens an expert can be given (dropAndPad=true)"));
    R = E * C;
  }
  if (!problem_bytes_fit(R, T, E, H))
    return inconsistent(api, cat("sizes overflow int64: R=", R, ", T=", T, ", E=", E, ", H=", H,
                                 " (tensor sizes in bytes must fit in int64)"));
  // sortedIndicesOut is int32: it holds row ids < R (drop-less) or token ids < T.
  constexpr int64_t kInt32Max = 2147483647;
  if (!ops.drop_and_pad ? R - 1 > kInt32Max : T - 1 > kInt32Max)
    return inconsistent(api,
                        cat("sortedIndicesOut is int32 but would have to hold ",
                            !ops.drop_and_pad ? "row ids up to R-1 = " : "token ids up to T-1 = ",
                            (!ops.drop_and_pad ? R : T) - 1, ", past 2147483647"));
  const std::string rows_why =
      ops.drop_and_pad ? cat("(numExperts * capacity = ", E, " * ", C, ")")
                       : cat("(tokens * topK = ", T, " * ", K, ", topK = numOutTokens / tokens)");
  if (Y->shape[0] != R || Y->shape[1] != H)
    return inconsistent(api, cat("permuteTokensOut has shape ", shape_string(Y->shape),
                                 ", expected [", R, ", ", H, "] ", rows_why));
  if (YP && YP->shape[0] != R)
    return inconsistent(api, cat("permuteProbsOutOptional has length ", YP->shape[0], ", expected ",
                                 R, " ", rows_why));
  if (S->shape[0] != R)
    return inconsistent(
        api, cat("sortedIndicesOut has length ", S->shape[0], ", expected ", R, " ", rows_why));

  MOEPERM_TRY(check_view(api, "tokens", *X, false));
  MOEPERM_TRY(check_view(api, "routingMap", *M, false));
  if (PR) MOEPERM_TRY(check_view(api, "probsOptional", *PR, false));
  MOEPERM_TRY(check_view(api, "permuteTokensOut", *Y, true));
  if (YP) MOEPERM_TRY(check_view(api, "permuteProbsOutOptional", *YP, true));
  MOEPERM_TRY(check_view(api, "sortedIndicesOut", *S, true));

  Plan p;
  p.op = Op::permute;
  p.drop_and_pad = ops.drop_and_pad;
  p.T = T, p.E = E, p.H = H, p.K = K, p.C = C, p.R = R;
  p.value_dtype = X->dtype;
  p.probs_dtype = PR ? PR->dtype : (YP ? YP->dtype : X->dtype);
  p.permuted_probs_dtype = YP ? YP->dtype : p.probs_dtype;
  p.has_routing_map = true;
  p.routing_map_dtype = M->dtype;
  p.probs = !YP ? ProbsWork::none : (PR ? ProbsWork::compute : ProbsWork::zero_fill);
  p.tokens = matrix_geom(*X);
  p.permuted = matrix_geom(*Y);
  p.routing_map = matrix_geom(*M);
  if (PR) p.dense_probs = matrix_geom(*PR);
  if (YP) p.permuted_probs = vector_geom(*YP);
  p.sorted_indices = vector_geom(*S);
  MOEPERM_TRY(select_backend(p, backend));
  *plan = p;
  return Status::success();
}

}  // namespace moeperm::detail
