// The ragged pair's drop-and-pad rule for operators that take their rows from a tensor
// (docs/ragged.md): row r belongs to expert r / C, so R must be a multiple of E, and E > 0
// when there are rows. Sets z.capacity.
#pragma once

#include "core/messages.hpp"
#include "core/op_desc.hpp"

namespace moeperm::detail {

inline Status ragged_capacity(const char *api, Sizes &z, const char *rows_from,
                              const char *experts_from) {
  if (z.experts == 0 && z.rows > 0)
    return inconsistent(api, cat(experts_from,
                                 " has 0 experts (columns); drop_and_pad=true needs "
                                 "at least one to derive capacity = rows / experts"));
  if (z.experts > 0 && z.rows % z.experts != 0)
    return inconsistent(
        api, cat(rows_from, " has ", z.rows, " rows, which is not a multiple of the ", z.experts,
                 " experts of ", experts_from, " (drop_and_pad=true: experts * capacity)"));
  z.capacity = z.experts > 0 ? z.rows / z.experts : 0;
  return Status::success();
}

}  // namespace moeperm::detail
