// to_string(plan): a planned plan in one line (backend layer: it names the backend).
#include "backend/backend.hpp"
#include "backend/registry.hpp"
#include "core/op_desc.hpp"

namespace moeperm::detail {

std::string to_string(const Plan &p) {
  const char *probs = p.probs == ProbsWork::none      ? "none"
                      : p.probs == ProbsWork::compute ? "compute"
                                                      : "zero_fill";
  return cat(op_desc(p.op).short_name, p.drop_and_pad ? " drop_and_pad" : " dropless", " T=", p.T,
             " E=", p.E, " H=", p.H, " K=", p.K, " C=", p.C, " R=", p.R,
             " values=", moeperm::to_string(p.value_dtype), " probs=", probs,
             p.probs == ProbsWork::none ? std::string()
                                        : cat("(", moeperm::to_string(p.probs_dtype), "/",
                                              moeperm::to_string(p.permuted_probs_dtype), ")"),
             " backend=", p.backend->name, *p.variant_name ? "/" : "", p.variant_name,
             p.stream_stores ? " streaming-stores" : "", " workspace=", workspace_bytes(p));
}

}  // namespace moeperm::detail
