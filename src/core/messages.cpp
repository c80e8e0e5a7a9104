#include "core/messages.hpp"
#include "core/op_desc.hpp"

namespace moeperm::detail {

std::string shape_string(std::span<const int64_t> shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

Status null_argument(std::string_view api, std::string_view arg) {
  return fail(Code::null_pointer, cat(api, ": ", arg, " must not be null"));
}

Status null_argument_because(std::string_view api, std::string_view arg, std::string_view because) {
  return fail(Code::null_pointer, cat(api, ": ", arg, " must not be null when ", because));
}

Status null_arguments_both(std::string_view api, std::string_view a, std::string_view b) {
  return fail(Code::null_pointer, cat(api, ": ", a, " and ", b, " must not both be null"));
}

Status null_data(std::string_view api, std::string_view arg, int64_t elements) {
  return fail(Code::null_pointer,
              cat(api, ": ", arg, " has ", elements, " elements but its data pointer is null"));
}

Status invalid_attribute(std::string_view api, std::string_view attr, std::string_view expected,
                         int64_t got) {
  return fail(Code::invalid_param, cat(api, ": ", attr, " must be ", expected, ", got ", got));
}

Status expected_dtype(std::string_view api, std::string_view arg, std::string_view expected,
                      DType got) {
  return fail(Code::invalid_param,
              cat(api, ": ", arg, " must have dtype ", expected, ", got ", to_string(got)));
}

Status expected_rank(std::string_view api, std::string_view arg, int64_t expected,
                     std::span<const int64_t> shape, Code code) {
  return fail(code, cat(api, ": ", arg, ": expected ", expected, "-D, got ", shape.size(), "-D ",
                        shape_string(shape)));
}

Status inconsistent(std::string_view api, const std::string &what) {
  return fail(Code::invalid_param, cat(api, ": ", what));
}

Status index_out_of_range(std::string_view api, std::string_view arg, int64_t position,
                          int64_t value, const std::string &allowed) {
  return fail(Code::invalid_param, cat(api, ": ", arg, "[", position, "] = ", value, " is outside ",
                                       allowed, "; nothing was written"));
}

Status bad_sorted_index(const Plan &p, int64_t position, int64_t value) {
  const IndexRange range = index_range(p);
  const std::string allowed =
      p.drop_and_pad ? cat("[0, ", range.bound, ") (dropAndPad=true, tokensNum=", p.T, ")")
                     : cat("[0, ", range.bound, ") or -1 (dropAndPad=false, R=", p.R, ")");
  return index_out_of_range(p.api(), op_desc(p.op).index_rules[0].name, position, value, allowed);
}

Status bad_index(const Plan &p, int rule, int64_t position, int64_t value) {
  const OpDesc &d = op_desc(p.op);
  const IndexRule &r = d.index_rules[static_cast<size_t>(rule)];
  const IndexRange range = index_range(d, p, rule);
  const Sym bound = p.drop_and_pad ? r.drop_and_pad_bound : r.dropless_bound;
  const char *label = bound == Sym::R   ? "R"
                      : bound == Sym::T ? "T"
                      : bound == Sym::S ? "S"
                                        : "the bound";
  // An operator without a mode attribute (mode_name "") has one range.
  const std::string mode =
      *d.mode_name ? cat(d.mode_name, "=", p.drop_and_pad ? "true" : "false", ", ") : "";
  return index_out_of_range(p.api(), r.name, position, value,
                            cat("[0, ", range.bound, ")", range.allows_minus_one ? " or -1" : "",
                                " (", mode, label, "=", range.bound, ")"));
}

Status bad_split_size(const Plan &p, int rule, int64_t position, int64_t value) {
  const SplitRule &r = op_desc(p.op).split_rules[static_cast<size_t>(rule)];
  return inconsistent(p.api(), cat(r.name, "[", position, "] = ", value,
                                   " is negative (a chunk has >= 0 rows); nothing was written"));
}

Status split_sizes_total(const Plan &p, int rule, int64_t sum, int64_t total) {
  const SplitRule &r = op_desc(p.op).split_rules[static_cast<size_t>(rule)];
  return inconsistent(p.api(),
                      cat(r.name, " sums to ", sum, ", but ", r.total_name, " has ", total,
                          " rows (the chunks must cover them exactly)", "; nothing was written"));
}

Status row_without_expert(const Plan &p, int64_t row, int64_t token, int64_t pairs) {
  return inconsistent(p.api(),
                      cat("sorted_indices[", row, "] = ", token, " names a token, but row ", row,
                          " lies past the ", pairs,
                          " (token, expert) pairs routing_map routes, so it has "
                          "no expert to take its prob from (with probs, those rows must be -1)"));
}

Status repeated_index(const Plan &p, int rule, int64_t position, int64_t value, int64_t first) {
  const IndexRule &r = op_desc(p.op).index_rules[static_cast<size_t>(rule)];
  return inconsistent(p.api(), cat(r.name, "[", position, "] = ", value, " names the same ",
                                   r.names, " as ", r.name, "[", first, "] (each ", r.names,
                                   " may be named once); nothing was written"));
}

Status too_many_experts_in_row(const Plan &p, int64_t row, int64_t experts) {
  return inconsistent(p.api(), cat("routingMap row ", row, " selects ", experts,
                                   " experts, more than topK = numOutTokens / tokens = ", p.K,
                                   " (dropAndPad=false); nothing was written"));
}

Status too_many_routed_pairs(const Plan &p, int64_t pairs) {
  return inconsistent(
      p.api(), cat("routingMapOptional selects ", pairs, " (token, expert) pairs, more than the ",
                   p.R, " rows of permutedProbsOutputGradOptional; nothing was written"));
}

Status not_implemented(const Plan &p, std::string_view backend_title) {
  return inconsistent(
      p.api(), cat(op_desc(p.op).short_name, " (dropAndPad=", p.drop_and_pad ? "true" : "false",
                   ") is not implemented on the ", backend_title, " backend"));
}

Status out_of_memory(std::string_view api) {
  return fail(Code::runtime_error, cat(api, ": out of host memory (std::bad_alloc)"));
}

Status internal_error(std::string_view api, const std::string &what) {
  return fail(Code::tiling_error, cat(api, ": internal error, please report: ", what));
}

}  // namespace moeperm::detail
