// The message catalog: every user-visible error wording is built here, so messages stay
// uniform ("<api>: <argument> <expectation>, got <value>") and tests can match stable
// substrings. docs/errors.md lists them with examples.
#pragma once

#include <moeperm/moeperm.hpp>

#include <span>
#include <string>
#include <string_view>

#include "core/plan.hpp"
#include "core/status.hpp"

namespace moeperm::detail {

std::string shape_string(std::span<const int64_t> shape);  // "[4, 5, 6]"

// 161001: a required tensor (or one required by another) is missing.
Status null_argument(std::string_view api, std::string_view arg);
Status null_argument_because(std::string_view api, std::string_view arg, std::string_view because);
// 161001: two arguments of which one is required are both null ("one of these is required").
Status null_arguments_both(std::string_view api, std::string_view a, std::string_view b);
// 161001: a tensor with elements whose data pointer is null.
Status null_data(std::string_view api, std::string_view arg, int64_t elements);
// 161002: an integer attribute outside its range.
Status invalid_attribute(std::string_view api, std::string_view attr, std::string_view expected,
                         int64_t got);
// 161002: a dtype outside the allowed set.
Status expected_dtype(std::string_view api, std::string_view arg, std::string_view expected,
                      DType got);
// 161002: a rank mismatch; shows the whole shape.
Status expected_rank(std::string_view api, std::string_view arg, int64_t expected,
                     std::span<const int64_t> shape, Code code = Code::invalid_param);
// 161002: shapes that disagree with each other or with an attribute (free text after api).
Status inconsistent(std::string_view api, const std::string &what);
// 161002: a data-dependent index error (SPEC §5.7), naming the first bad position.
Status index_out_of_range(std::string_view api, std::string_view arg, int64_t position,
                          int64_t value, const std::string &allowed);
// The data-dependent errors of Note [Index validation], shared by every backend so that
// all report the same words:
//   sortedIndices[j] outside its range for the plan's mode;
Status bad_sorted_index(const Plan &plan, int64_t position, int64_t value);
//   index rule `rule` of the plan's operator broken at `position` (outside its range, or a
//   value named twice where the rule says unique: `first` is then the earlier position);
Status bad_index(const Plan &plan, int rule, int64_t position, int64_t value);
Status repeated_index(const Plan &plan, int rule, int64_t position, int64_t value, int64_t first);
//   split rule `rule` broken: a negative size at `position`, or sizes whose sum is not the
//   rows they split (sort_chunks);
Status bad_split_size(const Plan &plan, int rule, int64_t position, int64_t value);
Status split_sizes_total(const Plan &plan, int rule, int64_t sum, int64_t total);
//   a forward drop-less routing-map row selecting more than K experts;
Status too_many_experts_in_row(const Plan &plan, int64_t row, int64_t experts);
//   a routing map selecting more (token, expert) pairs than P has rows (grad, drop-less).
Status too_many_routed_pairs(const Plan &plan, int64_t pairs);
//   a row that names a token but lies past the routing map's routed pairs, so that it has no
//   expert to take a prob from (ragged_unpermute with probs, drop-less).
Status row_without_expert(const Plan &plan, int64_t row, int64_t token, int64_t pairs);
// 161002: the requested backend has no kernel for the plan's operator and mode
// (Note [Backend selection]): "<api>: permute_grad (dropAndPad=true) is not implemented on
// the <title> backend".
Status not_implemented(const Plan &plan, std::string_view backend_title);
// 361001: host memory ran out (std::bad_alloc) inside an entry point; nothing was kept.
Status out_of_memory(std::string_view api);
// 561002: an internal invariant failed; a bug in moeperm.
Status internal_error(std::string_view api, const std::string &what);

}  // namespace moeperm::detail
