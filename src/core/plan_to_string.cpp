#include "backend/backend.hpp"
#include "backend/registry.hpp"
#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail {

std::string to_string(const Plan &p) {
  const char *probs = p.probs == ProbsWork::none      ? "none"
                      : p.probs == ProbsWork::compute ? "compute"
                                                      : "zero_fill";
  return cat(p.op == Op::permute ? "permute" : "permute_grad",
             p.drop_and_pad ? " drop_and_pad" : " dropless", " T=", p.T, " E=", p.E, " H=", p.H,
             " K=", p.K, " C=", p.C, " R=", p.R, " values=", moeperm::to_string(p.value_dtype),
             " probs=", probs,
             p.probs == ProbsWork::none ? std::string()
                                        : cat("(", moeperm::to_string(p.probs_dtype), "/",
                                              moeperm::to_string(p.permuted_probs_dtype), ")"),
             " backend=", backend_ops(p.backend).name, *p.variant_name ? "/" : "", p.variant_name,
             p.stream_stores ? " streaming-stores" : "", " workspace=", workspace_bytes(p));
}

}  // namespace moeperm::detail
